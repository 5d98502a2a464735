"""OpenLex3D file formats: prompt lists, query mappings, PCD/PLY point clouds, prediction folders, GT clouds.

Point clouds are read without Open3D: PCD v0.7 (``ascii``, ``binary``, ``binary_compressed`` with the
``[openlex3d]`` extra's LZF codec) and PLY (``ascii``,
``binary_little_endian``, ``binary_big_endian``); only the ``x y z`` coordinates are returned.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.openlex3d import load_prompt_list
    >>> path = os.path.join(tempfile.mkdtemp(), "prompt_list.txt")
    >>> _ = open(path, "w").write("arm chair\\nsofa\\n")
    >>> load_prompt_list(path)
    ['arm chair', 'sofa']
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import BinaryIO

import numpy as np
from scipy.spatial import cKDTree

from scenemetrics.checks import check_positive
from scenemetrics.fileio import check_count, load_npy, load_npz
from scenemetrics.types import TensorOrArray

from ._checks import check_int_array, check_points
from .retrieval import RetrievalQuery

__all__ = [
    "load_gt_cloud",
    "load_prediction_folder",
    "load_prompt_list",
    "load_query_mapping",
    "read_point_cloud",
    "transfer_labels",
]

_PCD_TYPES = {("F", 4): "f4", ("F", 8): "f8", ("I", 1): "i1", ("I", 2): "i2", ("I", 4): "i4", ("I", 8): "i8",
              ("U", 1): "u1", ("U", 2): "u2", ("U", 4): "u4", ("U", 8): "u8"}  # fmt: skip
_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2", "ushort": "u2",
    "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4", "float": "f4", "float32": "f4",
    "double": "f8", "float64": "f8",
}  # fmt: skip


def load_prompt_list(path: str | os.PathLike) -> list[str]:
    """Read ``prompt_list.txt``: one label per line, each ``strip()``-ed (a final newline adds no entry).

    Empty lines inside the file are kept as empty prompts (toolkit behaviour) with a ``UserWarning``.

    Raises:
        ValueError: the file holds no prompt.
    """
    with open(path, encoding="utf-8") as f:
        prompts = [line.strip() for line in f]
    if not prompts:
        raise ValueError(f"{os.fspath(path)}: the prompt list is empty")
    empty = [i for i, p in enumerate(prompts) if not p]
    if empty:
        warnings.warn(
            f"{os.fspath(path)}: {len(empty)} empty prompt line(s) kept as empty prompts (first at line "
            f"{empty[0] + 1})",
            UserWarning,
            stacklevel=2,
        )
    return prompts


def load_query_mapping(path: str | os.PathLike) -> list[RetrievalQuery]:
    """Read ``gt_categories_query_to_object_mapping_<level>.json`` (``{"level0": {text: [ids]}, ...}``).

    Queries come in file order (levels, then texts); ``query_id = f"{level}_{text}"``; ids as in the file.

    Raises:
        ValueError: malformed file (not a dict of dicts of integer lists); the message names the file.
    """
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{os.fspath(path)}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{os.fspath(path)}: expected an object {{level: {{query text: [object ids]}}}}")
    queries = []
    for level, mapping in data.items():
        if not isinstance(mapping, dict):
            raise ValueError(f"{os.fspath(path)}: `{level}` must map query texts to lists of object ids")
        for text, ids in mapping.items():
            if not isinstance(ids, list) or any(isinstance(o, bool) or not isinstance(o, int) for o in ids):
                raise ValueError(f"{os.fspath(path)}: `{level}`/{text!r} must be a list of integer object ids")
            queries.append(RetrievalQuery(f"{level}_{text}", text, tuple(ids)))
    return queries


def _read_header(f: BinaryIO, end: tuple[str, ...], path: Path) -> list[str]:
    lines = []
    while True:
        raw = f.readline()
        if not raw:
            raise ValueError(f"{path}: truncated header (no {' / '.join(end)} line)")
        line = raw.decode("ascii", errors="replace").strip()
        lines.append(line)
        if line.split(" ", 1)[0] in end:
            return lines


def _xyz(arr: np.ndarray, fields: dict[str, np.dtype], path: Path) -> np.ndarray:
    missing = [c for c in "xyz" if c not in fields]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} field in the point cloud")
    dtype = np.result_type(*(fields[c] for c in "xyz"))
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    return np.stack([arr[c] for c in "xyz"], axis=1).astype(dtype.newbyteorder("="), copy=False)


def _read_pcd(f: BinaryIO, path: Path, size: int) -> np.ndarray:
    header: dict[str, list[str]] = {}
    for line in _read_header(f, ("DATA",), path):
        if line and not line.startswith("#"):
            key, *entries = line.split()
            header[key.upper()] = entries
    names = header.get("FIELDS", [])
    sizes = [int(s) for s in header.get("SIZE", [])]
    types = header.get("TYPE", [])
    counts = [int(c) for c in header.get("COUNT", ["1"] * len(names))]
    if not names or not (len(names) == len(sizes) == len(types) == len(counts)):
        raise ValueError(f"{path}: PCD header needs FIELDS, SIZE, TYPE (and COUNT) of equal length")
    declared = (
        header.get("POINTS", ["0"])[0]
        if "POINTS" in header
        else int(header["WIDTH"][0]) * int(header.get("HEIGHT", ["1"])[0])
    )
    mode = header["DATA"][0].lower()
    try:
        dtypes = [np.dtype("<" + _PCD_TYPES[(t.upper(), s)]) for t, s in zip(types, sizes, strict=True)]
    except KeyError as err:
        raise ValueError(f"{path}: unsupported PCD field type/size {err.args[0]}") from None
    if any(c < 1 for c in counts):
        raise ValueError(f"{path}: PCD COUNT values must be >= 1; received {counts}")
    fields = dict(zip(names, dtypes, strict=True))
    available = size - f.tell()
    width = sum(counts)
    # the fewest bytes one point takes: its binary record, or one digit and a separator per ASCII value
    per_point = 2 * width if mode == "ascii" else sum(dt.itemsize * c for dt, c in zip(dtypes, counts, strict=True))
    compressed = mode == "binary_compressed"
    n = check_count(declared, path=path, what="points", min_bytes=0 if compressed else per_point, available=available)
    if compressed:
        return _xyz(_pcd_compressed_columns(f, names, dtypes, counts, n, path, available), fields, path)  # type: ignore[arg-type]
    if mode == "ascii":
        tokens = f.read().decode("ascii", errors="replace").split()
        values = np.array(tokens[: n * width], dtype=np.float64)
        if values.size != n * width:
            raise ValueError(f"{path}: expected {n} points of {width} values, found {values.size} values")
        values = values.reshape(n, width)
        starts = np.cumsum([0, *counts[:-1]])
        cols = {name: values[:, st] for name, st in zip(names, starts, strict=True)}
        return _xyz(cols, fields, path)  # type: ignore[arg-type]
    if mode != "binary":
        raise ValueError(f"{path}: unknown PCD DATA mode {mode!r}")
    record = np.dtype(
        [(name, dt, (c,)) if c > 1 else (name, dt) for name, dt, c in zip(names, dtypes, counts, strict=True)]
    )
    data = f.read(n * record.itemsize)
    if len(data) < n * record.itemsize:
        raise ValueError(f"{path}: truncated binary PCD ({len(data)} of {n * record.itemsize} bytes)")
    return _xyz(np.frombuffer(data, dtype=record, count=n), fields, path)  # type: ignore[arg-type]


_LZF_MAX_RATIO = 100
"""LZF expands at most about 88 times (a 3-byte back-reference copies at most 264 bytes): a bound on a body's size."""


def _pcd_compressed_columns(
    f: BinaryIO, names: list[str], dtypes: list[np.dtype], counts: list[int], n: int, path: Path, available: int
) -> dict[str, np.ndarray]:
    """The fields of a ``DATA binary_compressed`` body: two uint32 sizes, then LZF data stored field by field."""
    try:
        import lzf
    except ImportError as err:
        raise ImportError(
            f'{path}: reading binary_compressed PCD needs the LZF codec: pip install "scenemetrics[openlex3d]" ({err})'
        ) from err
    sizes = f.read(8)
    if len(sizes) < 8:
        raise ValueError(f"{path}: truncated binary_compressed PCD (no size header after DATA)")
    compressed_size, size = (int(v) for v in np.frombuffer(sizes, dtype="<u4"))
    expected = n * sum(dt.itemsize * c for dt, c in zip(dtypes, counts, strict=True))
    if size != expected:
        raise ValueError(f"{path}: binary_compressed PCD declares {size} bytes of data; {n} points need {expected}")
    if compressed_size > available - 8:
        raise ValueError(
            f"{path}: truncated binary_compressed PCD ({max(available - 8, 0)} of the {compressed_size} compressed "
            "bytes it declares)"
        )
    if size > _LZF_MAX_RATIO * compressed_size + 64:
        raise ValueError(
            f"{path}: binary_compressed PCD declares {n} points ({size} bytes) in {compressed_size} compressed bytes, "
            f"more than LZF can expand to (at most about {_LZF_MAX_RATIO} times)"
        )
    payload = f.read(compressed_size)
    if len(payload) < compressed_size:
        raise ValueError(f"{path}: truncated binary_compressed PCD ({len(payload)} of {compressed_size} bytes)")
    raw = lzf.decompress(payload, size) if size else b""
    if raw is None or len(raw) != size:
        raise ValueError(f"{path}: corrupt binary_compressed PCD (LZF data does not expand to {size} bytes)")
    columns, start = {}, 0
    for name, dt, c in zip(names, dtypes, counts, strict=True):
        values = np.frombuffer(raw, dtype=dt, count=n * c, offset=start).reshape(n, c)
        columns[name] = values[:, 0]
        start += n * c * dt.itemsize
    return columns


def _read_ply(f: BinaryIO, path: Path, size: int) -> np.ndarray:
    lines = _read_header(f, ("end_header",), path)
    if lines[0] != "ply":
        raise ValueError(f"{path}: not a PLY file (first line {lines[0]!r})")
    fmt = None
    elements: list[tuple[str, str, list[tuple[str, str | None]]]] = []  # name, count, [(prop, type|None=list)]
    list_sizes: dict[tuple[str, str], int] = {}  # (element, list property) -> bytes of its length field
    for line in lines[1:]:
        parts = line.split()
        if not parts or parts[0] in ("comment", "obj_info", "end_header"):
            continue
        if parts[0] == "format":
            fmt = parts[1]
        elif parts[0] == "element":
            elements.append((parts[1], parts[2], []))
        elif parts[0] == "property":
            if not elements:
                raise ValueError(f"{path}: property before any element")
            if parts[1] == "list":
                if len(parts) != 5 or parts[2] not in _PLY_TYPES:
                    raise ValueError(f"{path}: malformed list property {line!r}")
                list_sizes[(elements[-1][0], parts[-1])] = np.dtype(_PLY_TYPES[parts[2]]).itemsize
                elements[-1][2].append((parts[-1], None))
            else:
                if parts[1] not in _PLY_TYPES:
                    raise ValueError(f"{path}: unknown PLY property type {parts[1]!r}")
                elements[-1][2].append((parts[2], _PLY_TYPES[parts[1]]))
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise ValueError(f"{path}: unsupported PLY format {fmt!r}")
    endian = "<" if fmt == "binary_little_endian" else ">"
    for name, declared, props in elements:
        has_list = any(t is None for _, t in props)
        # the fewest bytes one row takes: one digit and a separator per ASCII value (a list at least its length),
        # or the binary record (a list at least its length field)
        if fmt == "ascii":
            row = 2 * max(len(props), 1)
        else:
            row = sum(np.dtype(t).itemsize if t is not None else list_sizes[(name, p)] for p, t in props)
        count = check_count(declared, path=path, what=f"{name!r} elements", min_bytes=row, available=size - f.tell())
        if name == "vertex":
            if has_list:
                raise ValueError(f"{path}: list properties on the vertex element are not supported")
            fields = {p: np.dtype(endian + t) for p, t in props}  # type: ignore[operator]
            if fmt == "ascii":
                rows = [f.readline() for _ in range(count)]
                values = np.array(b" ".join(rows).split(), dtype=np.float64)
                if values.size != count * len(props):
                    raise ValueError(f"{path}: expected {count} vertices of {len(props)} values")
                values = values.reshape(count, len(props))
                return _xyz({p: values[:, i] for i, (p, _) in enumerate(props)}, fields, path)  # type: ignore[arg-type]
            record = np.dtype([(p, dt) for p, dt in fields.items()])
            data = f.read(count * record.itemsize)
            if len(data) < count * record.itemsize:
                raise ValueError(f"{path}: truncated binary PLY vertex data")
            return _xyz(np.frombuffer(data, dtype=record, count=count), fields, path)  # type: ignore[arg-type]
        # an element before the vertices: skip it
        if fmt == "ascii":
            for _ in range(count):
                f.readline()
        elif has_list:
            raise ValueError(f"{path}: cannot skip element {name!r} with list properties before the vertices")
        else:
            f.read(count * sum(np.dtype(t).itemsize for _, t in props))  # type: ignore[misc]
    raise ValueError(f"{path}: no vertex element")


def read_point_cloud(path: str | os.PathLike) -> np.ndarray:
    """Read the ``x y z`` coordinates of a PCD or PLY file as ``(P, 3)`` (float32 or float64 as stored).

    Raises:
        ValueError: unknown extension, list properties on the PLY vertex element, malformed or truncated file; the
            message names the file.
        ImportError: a ``binary_compressed`` PCD without the LZF codec (``pip install "scenemetrics[openlex3d]"``).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".pcd", ".ply"):
        raise ValueError(f"{p}: unknown point cloud extension {suffix!r} (expected .pcd or .ply)")
    size = p.stat().st_size
    with open(p, "rb") as f:
        try:
            return _read_pcd(f, p, size) if suffix == ".pcd" else _read_ply(f, p, size)
        except (ValueError, IndexError, KeyError) as err:
            if str(p) in str(err):
                raise
            raise ValueError(f"{p}: malformed {suffix[1:].upper()} file ({type(err).__name__}: {err})") from err


def _prediction_cloud(folder: Path) -> Path:
    for name in ("point_cloud.pcd", "point_cloud.ply", "input.ply"):
        if (folder / name).is_file():
            return folder / name
    candidates = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".pcd", ".ply") and p.is_file())
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise FileNotFoundError(f"{folder}: no point cloud (point_cloud.pcd, point_cloud.ply, input.ply or *.pcd/ply)")
    raise ValueError(
        f"{folder}: several point clouds ({', '.join(p.name for p in candidates)}) and none named point_cloud.pcd, "
        "point_cloud.ply or input.ply; keep one"
    )


def load_prediction_folder(folder: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a toolkit-layout prediction folder: ``(points (P, 3), embeddings (K, D), index (P,))``.

    The cloud is ``point_cloud.pcd``, else ``point_cloud.ply``, else ``input.ply``, else the only ``*.pcd`` /
    ``*.ply`` file. ``embeddings.npy`` and ``index.npy`` are required.

    Raises:
        FileNotFoundError: a required file is missing (named in the message).
        ValueError: several candidate clouds, or ``len(index) != P``.
    """
    d = Path(folder)
    for name in ("embeddings.npy", "index.npy"):
        if not (d / name).is_file():
            raise FileNotFoundError(f"{d / name}: missing prediction file")
    points = read_point_cloud(_prediction_cloud(d))
    features = load_npy(d / "embeddings.npy")
    index = load_npy(d / "index.npy")
    if index.ndim != 1 or len(index) != len(points):
        raise ValueError(f"{d / 'index.npy'}: must hold one index per point ({len(points)}); received {index.shape}")
    return points, features, index


def load_gt_cloud(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read ``gt_cloud.npz`` with arrays ``points`` ``(G, 3)`` and ``object_ids`` ``(G,)``.

    Raises:
        ValueError: missing arrays or wrong shapes/dtypes; the message names the file.
    """
    data = load_npz(path)
    missing = [k for k in ("points", "object_ids") if k not in data]
    if missing:
        raise ValueError(f"{os.fspath(path)}: missing array(s) {missing} (expected points and object_ids)")
    points, ids = data["points"], data["object_ids"]
    try:
        check_points(points, "points")
        check_int_array(ids, "object_ids", len(points))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{os.fspath(path)}: {err}") from None
    return points, ids


def transfer_labels(
    visible_points: TensorOrArray, points: TensorOrArray, ids: TensorOrArray, max_distance: float = 0.05
) -> np.ndarray:
    """Give every visible point the id of its nearest GT point if closer than ``max_distance`` (strict), else -1.

    Reproduces the toolkit's transfer of GT ids to ``gt_visible_cloud.pcd``.

    Example:
        >>> import numpy as np
        >>> transfer_labels(np.array([[0.0, 0, 0.049], [0, 0, 0.05]]), np.zeros((1, 3)), np.array([7])).tolist()
        [7, -1]
    """
    vis = check_points(visible_points, "visible_points")
    pts = check_points(points, "points")
    labels = check_int_array(ids, "ids", len(pts))
    max_distance = check_positive(max_distance, "max_distance")
    if len(pts) == 0:
        return np.full(len(vis), -1, dtype=np.int64)
    dist, nn = cKDTree(pts).query(vis, k=1, workers=-1)
    return np.where(dist < max_distance, labels[nn] if len(vis) else labels[:0], -1).astype(np.int64)
