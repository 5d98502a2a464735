"""The wireframe challenges' own file formats: Building3D OBJ (+ its normalisation) and S23DR submissions.

- **Building3D**: a wireframe is an OBJ file with ``v x y z`` vertex lines and ``l i j`` edge lines (1-based
  indices); the roof point cloud is an ``.xyz`` text file (``x y z`` then optional colour/intensity columns). The
  Building3D loader stores each undirected edge once: :func:`read_obj_wireframe` does the same and says so with a
  ``UserWarning`` when a file lists an edge twice. With the Building3D normalisation (:func:`building3d_normalize`),
  the point cloud's centroid is moved to the origin and its largest distance from it scaled to 1, and the
  wireframe gets the same transform, so the challenge's thresholds (e.g. 0.1) mean what they mean there.
- **S23DR**: a submission (and the ground truth) is a table of records ``order_id``, ``wf_vertices``, ``wf_edges``,
  as JSON lines (``.jsonl`` / ``.json`` with one object per line, or one JSON list) or Parquet (``.parquet``, with
  the ``[wireframe]`` extra's pyarrow). :func:`read_s23dr` returns ``{order_id: Wireframe}``;
  :func:`match_by_order_id` pairs a submission with the ground truth.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.wireframe import read_obj_wireframe
    >>> path = os.path.join(tempfile.mkdtemp(), "roof.obj")
    >>> _ = open(path, "w").write("v 0 0 0\\nv 1 0 0\\nv 1 1 0\\nl 1 2\\nl 2 3\\n")
    >>> w = read_obj_wireframe(path)
    >>> w.vertices.shape, w.edges.tolist()
    ((3, 3), [[0, 1], [1, 2]])
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .types import Wireframe, as_wireframe, validate_wireframe

__all__ = [
    "building3d_normalize",
    "match_by_order_id",
    "read_obj_wireframe",
    "read_s23dr",
    "read_xyz_points",
]


def read_obj_wireframe(path: str | os.PathLike, *, name: str = "pred") -> Wireframe:
    """Read a Building3D wireframe OBJ: ``v x y z`` vertices and ``l i j`` edges (1-based), ``#`` comments.

    An edge listed twice (either orientation) is kept once, as the Building3D loader does, with a ``UserWarning``.

    Raises:
        ValueError: a line that is neither ``v``, ``l``, a comment nor blank; an ``l`` line without exactly two
            indices; an index outside ``1..V``; a self-loop; the message names the file and line.
    """
    p = Path(path)
    vertices: list[list[float]] = []
    edges: list[tuple[int, int]] = []
    with open(p, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, start=1):
            parts = raw.split()
            if not parts or parts[0].startswith("#"):
                continue
            try:
                if parts[0] == "v" and len(parts) in (4, 5):  # a 4th coordinate (w) is allowed by OBJ and ignored
                    vertices.append([float(x) for x in parts[1:4]])
                    continue
                if parts[0] == "l" and len(parts) == 3:
                    edges.append((int(parts[1]), int(parts[2])))
                    continue
            except ValueError:
                pass
            raise ValueError(
                f"{p}:{lineno}: expected 'v x y z' or 'l i j' (1-based vertex indices); found {raw.strip()!r}"
            )
    if not vertices:
        raise ValueError(f"{p}: no 'v x y z' vertex line")
    too_big = next((edge for edge in edges if max(map(abs, edge)) > len(vertices)), None)
    if too_big is not None:  # before int64: an index of 100 digits is still a bad index, not an OverflowError
        raise ValueError(f"{p}: edge {too_big} names a vertex outside 1..{len(vertices)}")
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2) - 1
    bad = (e < 0) | (e >= len(vertices))
    if bad.any():
        k = int(np.nonzero(bad.any(axis=1))[0][0])
        raise ValueError(f"{p}: edge {edges[k]} names a vertex outside 1..{len(vertices)}")
    if (e[:, 0] == e[:, 1]).any():
        k = int(np.nonzero(e[:, 0] == e[:, 1])[0][0])
        raise ValueError(f"{p}: edge {edges[k]} joins a vertex to itself")
    _, first = np.unique(np.sort(e, axis=1), axis=0, return_index=True)
    if len(first) < len(e):
        warnings.warn(
            f"{p}: {len(e) - len(first)} edge(s) listed twice were kept once (as the Building3D loader does)",
            UserWarning,
            stacklevel=2,
        )
        e = e[np.sort(first)]
    return validate_wireframe(np.asarray(vertices, dtype=np.float64), e, name=name)


def read_xyz_points(path: str | os.PathLike) -> np.ndarray:
    """The ``(N, 3)`` coordinates of a Building3D ``.xyz`` point cloud (the first three columns, float64).

    Raises:
        ValueError: the file is not a numeric table of at least three columns (the message names the file).
    """
    try:
        table = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise ValueError(f"{os.fspath(path)}: not a numeric .xyz table ({err})") from None
    if table.shape[1] < 3 or len(table) == 0:
        raise ValueError(f"{os.fspath(path)}: expected rows of at least 'x y z'; found shape {table.shape}")
    return table[:, :3].copy()


def building3d_normalize(wireframe: Wireframe, points: np.ndarray) -> Wireframe:
    """The Building3D normalisation: ``(v - centroid) / max_distance`` with both taken from the point cloud.

    ``centroid`` is the mean of ``points`` and ``max_distance`` the largest distance of a point from it.

    Example:
        >>> import numpy as np
        >>> w = Wireframe(np.array([[2.0, 0, 0], [4.0, 0, 0]]), np.array([[0, 1]]))
        >>> building3d_normalize(w, np.array([[2.0, 0, 0], [4.0, 0, 0]])).vertices[:, 0].tolist()
        [-1.0, 1.0]

    Raises:
        ValueError: ``points`` is not ``(N, 3)`` with N >= 1, or all points coincide (no scale).
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) == 0:
        raise ValueError(f"points must be a non-empty (N, 3) array; received shape {pts.shape}")
    centroid = pts.mean(axis=0)
    scale = float(np.max(np.linalg.norm(pts - centroid, axis=1)))
    if scale == 0.0:
        raise ValueError("points: all points coincide, so the Building3D normalisation has no scale")
    return Wireframe((wireframe.vertices - centroid) / scale, wireframe.edges)


def read_s23dr(path: str | os.PathLike, *, name: str = "pred") -> dict[str, Wireframe]:
    """Read S23DR records (``order_id``, ``wf_vertices``, ``wf_edges``) from JSON lines, a JSON list or Parquet.

    Returns:
        ``{order_id: Wireframe}`` in file order (order ids as strings).

    Raises:
        ValueError: a record without one of the three fields, a repeated ``order_id``, an invalid wireframe;
            the message names the file and the record.
        ImportError: a Parquet file without pyarrow (``pip install "scenemetrics[wireframe]"``).
    """
    p = Path(path)
    records = _parquet_records(p) if p.suffix.lower() == ".parquet" else _json_records(p)
    houses: dict[str, Wireframe] = {}
    for k, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"{p}: record {k} is a {type(rec).__name__}, not an object")
        missing = [f for f in ("order_id", "wf_vertices", "wf_edges") if f not in rec]
        if missing:
            raise ValueError(f"{p}: record {k} has no {', '.join(missing)} (it has {', '.join(map(str, rec))})")
        oid = str(rec["order_id"])
        if oid in houses:
            raise ValueError(f"{p}: order_id {oid!r} appears twice")
        try:
            vertices = np.asarray(rec["wf_vertices"], dtype=np.float64).reshape(-1, 3)
            edges = np.asarray(rec["wf_edges"], dtype=np.int64).reshape(-1, 2)
            houses[oid] = as_wireframe((vertices, edges), name=name)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{p}: order_id {oid!r}: {err}") from None
    return houses


def _json_records(p: Path) -> list:
    text = p.read_text(encoding="utf-8")
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            return json.loads(stripped)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (json.JSONDecodeError, RecursionError) as err:  # RecursionError: nesting deeper than Python's stack
        raise ValueError(f"{p}: not JSON lines or a JSON list of records ({type(err).__name__}: {err})") from None


def _parquet_records(p: Path) -> list:
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError(f'{p}: reading Parquet needs pyarrow: pip install "scenemetrics[wireframe]" ({err})') from err
    try:
        table = pq.read_table(p, columns=["order_id", "wf_vertices", "wf_edges"])
    except Exception as err:  # pyarrow raises its own error types for a missing column or a damaged file
        raise ValueError(f"{p}: not a Parquet table with order_id, wf_vertices, wf_edges ({err})") from None
    return table.to_pylist()


def match_by_order_id(
    preds: Mapping[str, Wireframe], gts: Mapping[str, Wireframe]
) -> tuple[list[str], list[Wireframe], list[Wireframe]]:
    """Pair a submission with the ground truth by ``order_id`` (GT order).

    A GT house without a prediction is scored against an empty prediction (no vertex, no edge), as a missing
    answer is; predictions whose ``order_id`` is not in the GT are not scored. Both cases are reported with a
    ``UserWarning`` that counts them.

    Returns:
        ``(order_ids, predictions, ground_truths)`` aligned lists.
    """
    missing = [oid for oid in gts if oid not in preds]
    extra = [oid for oid in preds if oid not in gts]
    if missing:
        warnings.warn(
            f"{len(missing)} ground-truth house(s) have no prediction and are scored as empty predictions "
            f"(first: {missing[0]!r})",
            UserWarning,
            stacklevel=2,
        )
    if extra:
        warnings.warn(
            f"{len(extra)} prediction(s) name an order_id absent from the ground truth and are not scored "
            f"(first: {extra[0]!r})",
            UserWarning,
            stacklevel=2,
        )
    empty = Wireframe(np.zeros((0, 3)), np.zeros((0, 2), dtype=np.int64))
    ids = list(gts)
    return ids, [preds.get(oid, empty) for oid in ids], [gts[oid] for oid in ids]
