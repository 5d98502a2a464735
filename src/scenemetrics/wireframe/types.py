"""Wireframe containers, result tuples and input validation.

A wireframe is ``vertices`` ``(N, 3)`` float and ``edges`` ``(M, 2)`` int (0-based, undirected). Every metric of this
room runs its inputs through :func:`validate_wireframe` (or :func:`as_wireframe`), which converts numpy arrays,
nested lists and torch tensors (any device, any float dtype; ``.detach().cpu()``) to float64 / int64 numpy arrays and
rejects malformed input with an error that names the argument.

Example:
    >>> import numpy as np
    >>> wf = validate_wireframe([[0, 0, 0], [1, 0, 0]], [[0, 1]])
    >>> wf.vertices.dtype, wf.edges.tolist()
    (dtype('float64'), [[0, 1]])
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.types import ArrayLike

__all__ = [
    "PRF",
    "HSSResult",
    "Wireframe",
    "as_wireframe",
    "clean_wireframe",
    "validate_vertices",
    "validate_wireframe",
]


class Wireframe(NamedTuple):
    """A validated wireframe: ``vertices`` ``(N, 3)`` float64 and ``edges`` ``(M, 2)`` int64 (undirected)."""

    vertices: np.ndarray
    edges: np.ndarray


class PRF(NamedTuple):
    """Precision, recall and F1 with the counts they come from (``n_pred``/``n_gt`` count corners or edges)."""

    precision: float
    recall: float
    f1: float
    tp: int
    n_pred: int
    n_gt: int


class HSSResult(NamedTuple):
    """The S23DR-2025 score of one house: harmonic mean ``hss`` of corner ``f1`` and tube ``iou``."""

    hss: float
    f1: float
    iou: float


def _to_numpy(x: Any, arg: str) -> np.ndarray:
    """Torch tensors (any device/dtype), numpy arrays and nested sequences to a numpy array."""
    torch = sys.modules.get("torch")  # a tensor implies torch is imported; never import it just to check
    if torch is not None and isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise ValueError(f"{arg} is on the meta device (it holds no data); pass a tensor on the CPU or a GPU.")
        x = x.detach().cpu()
        if x.is_floating_point():  # bfloat16/float16 have no (exact) numpy twin
            x = x.to(torch.float64)
        return x.numpy()
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{arg} could not be read as an array ({err}); pass a rectangular array.") from None


def _fmt(row: np.ndarray) -> str:
    return "(" + ", ".join(repr(v.item()) for v in row) + ")"


def validate_vertices(vertices: ArrayLike, *, arg: str = "pred_vertices") -> np.ndarray:
    """Check and convert one vertex array to ``(N, 3)`` float64.

    Args:
        vertices: ``(N, 3)`` array-like of finite numbers; anything with 0 elements is read as ``(0, 3)``.
        arg: the argument name used in error messages.

    Returns:
        A new float64 array of shape ``(N, 3)``.

    Raises:
        ValueError: wrong shape or a non-finite coordinate.
        TypeError: boolean or non-numeric dtype.

    Example:
        >>> validate_vertices([[0, 1, 2]]).shape
        (1, 3)
    """
    v = _to_numpy(vertices, arg)
    if v.size == 0:
        return np.zeros((0, 3), dtype=np.float64)
    if v.dtype.kind not in "iuf":  # bool, complex, strings and objects are not coordinates
        raise TypeError(f"{arg} must hold real numbers (int or float), got dtype {v.dtype}.")
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"{arg} must have shape (N, 3), got {tuple(v.shape)}.")
    v = np.array(v, dtype=np.float64)
    finite = np.isfinite(v).all(axis=1)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{arg}[{i}] = {_fmt(v[i])} is not finite; every coordinate must be a finite number "
            f"({int((~finite).sum())} bad vertices)."
        )
    return v


def _validate_edges(edges: Any, n_vertices: int, arg: str, varg: str) -> np.ndarray:
    e = _to_numpy(edges, arg)
    if e.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if e.dtype.kind not in "iu":
        raise TypeError(f"{arg} must be integer indices into {varg}, got dtype {e.dtype}; cast with .astype(int).")
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"{arg} must have shape (M, 2), got {tuple(e.shape)}.")
    bad = ((e < 0) | (e >= n_vertices)).any(axis=1)  # compared in the input dtype: no wrap-around of uint64
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        valid = f"0..{n_vertices - 1}" if n_vertices else "none, it is empty"
        raise ValueError(
            f"{arg}[{i}] = {_fmt(e[i])} indexes a vertex that does not exist ({varg} has {n_vertices} vertices, "
            f"valid indices: {valid})."
        )
    return np.array(e, dtype=np.int64)


def edge_codes(edges: np.ndarray, n_vertices: int) -> np.ndarray:
    """One int64 per undirected edge: ``min(i, j) * n_vertices + max(i, j)`` (equal codes = the same edge)."""
    return np.minimum(edges[:, 0], edges[:, 1]) * max(n_vertices, 1) + np.maximum(edges[:, 0], edges[:, 1])


def _check_simple(e: np.ndarray, n_vertices: int, arg: str, varg: str) -> None:
    loops = e[:, 0] == e[:, 1]
    if loops.any():
        i = int(np.flatnonzero(loops)[0])
        raise ValueError(
            f"{arg}[{i}] = {_fmt(e[i])} is a self-loop; remove it or normalise the wireframe with "
            f"scenemetrics.wireframe.clean_wireframe({varg}, {arg})."
        )
    if len(e) < 2:
        return
    codes = edge_codes(e, n_vertices)
    order = np.argsort(codes, kind="stable")
    same = codes[order[1:]] == codes[order[:-1]]
    if same.any():
        # the first duplicate in input order, and the earlier edge it repeats
        later = order[1:][same]
        i = int(later.min())
        j = int(np.flatnonzero(codes == codes[i])[0])
        raise ValueError(
            f"{arg}[{i}] = {_fmt(e[i])} duplicates {arg}[{j}] = {_fmt(e[j])} (edges are undirected); drop duplicates "
            f"with scenemetrics.wireframe.clean_wireframe(vertices, edges)."
        )


def validate_wireframe(vertices: ArrayLike, edges: ArrayLike, *, name: str = "pred") -> Wireframe:
    """Check one wireframe and convert it to float64/int64 numpy arrays.

    Rules: ``vertices`` ``(N, 3)`` finite numbers (0 elements read as ``(0, 3)``); ``edges`` ``(M, 2)`` integer
    indices in ``[0, N)`` (0 elements read as ``(0, 2)``); no self-loop; no duplicate undirected edge. Coincident
    vertices, zero-length edges and isolated vertices are valid.

    Args:
        vertices: ``(N, 3)`` array-like or tensor.
        edges: ``(M, 2)`` array-like or tensor of integer indices.
        name: prefix of the argument names in error messages (``pred`` -> ``pred_vertices``/``pred_edges``).

    Returns:
        A :class:`Wireframe` holding new arrays.

    Raises:
        ValueError: wrong shape, non-finite coordinate, index out of range, self-loop, duplicate edge.
        TypeError: boolean/non-numeric vertices, non-integer edges.

    Example:
        >>> validate_wireframe([[0, 0, 0], [0, 0, 1]], [[1, 0]]).edges.tolist()
        [[1, 0]]
    """
    return _validate_pair(vertices, edges, f"{name}_vertices", f"{name}_edges")


def _validate_pair(vertices: Any, edges: Any, varg: str, earg: str) -> Wireframe:
    """:func:`validate_wireframe` with the argument names used in messages given in full."""
    v = validate_vertices(vertices, arg=varg)
    e = _validate_edges(edges, len(v), earg, varg)
    _check_simple(e, len(v), earg, varg)
    return Wireframe(v, e)


def _gt_vertices(gt_vertices: Any) -> np.ndarray:
    g = validate_vertices(gt_vertices, arg="gt_vertices")
    if len(g) == 0:
        raise ValueError("gt_vertices is empty; the ground truth needs at least one vertex.")
    return g


def _pair(
    pred_vertices: Any, pred_edges: Any, gt_vertices: Any, gt_edges: Any, *, need_gt_edges: bool = True
) -> tuple[Wireframe, Wireframe]:
    p = validate_wireframe(pred_vertices, pred_edges, name="pred")
    g = validate_wireframe(gt_vertices, gt_edges, name="gt")
    if len(g.vertices) == 0:
        raise ValueError("gt_vertices is empty; the ground truth needs at least one vertex.")
    if need_gt_edges and len(g.edges) == 0:
        raise ValueError("gt_edges is empty; this metric needs a ground truth with at least one edge.")
    return p, g


def as_wireframe(obj: Any, *, name: str = "pred") -> Wireframe:
    """Read a wireframe from a :class:`Wireframe`, a ``(vertices, edges)`` pair or a mapping, and validate it.

    Mappings may use ``"vertices"``/``"edges"`` or HoHo's ``"wf_vertices"``/``"wf_edges"`` keys.

    Args:
        obj: the wireframe.
        name: prefix of argument names in error messages.

    Returns:
        The validated :class:`Wireframe`.

    Raises:
        TypeError: ``obj`` is none of the accepted forms.

    Example:
        >>> as_wireframe({"wf_vertices": [[0, 0, 0], [1, 1, 1]], "wf_edges": [[0, 1]]}).vertices.shape
        (2, 3)
    """
    if isinstance(obj, Mapping):
        for kv, ke in (("vertices", "edges"), ("wf_vertices", "wf_edges")):
            if kv in obj and ke in obj:
                return validate_wireframe(obj[kv], obj[ke], name=name)
        raise TypeError(
            f"{name}: a mapping must hold 'vertices' and 'edges' (or HoHo's 'wf_vertices' and 'wf_edges'), "
            f"got keys {sorted(map(str, obj))}."
        )
    if isinstance(obj, (tuple, list)) and len(obj) == 2:
        return validate_wireframe(obj[0], obj[1], name=name)
    raise TypeError(
        f"{name} must be a Wireframe, a (vertices, edges) pair or a mapping with 'vertices'/'edges', "
        f"got {type(obj).__name__}."
    )


def clean_wireframe(vertices: ArrayLike, edges: ArrayLike, *, merge_distance: float | None = None) -> Wireframe:
    """Normalise a wireframe: optionally merge close vertices, then drop self-loops and duplicate edges.

    With ``merge_distance`` vertices closer than it (strictly) are merged by single linkage; a merged vertex is the
    mean of its group and the new vertices are numbered in order of first appearance. Then self-loops are dropped
    and, for every undirected edge, the first occurrence (with its orientation) is kept.

    Args:
        vertices: ``(N, 3)`` array-like.
        edges: ``(M, 2)`` integer array-like (indices must be in range).
        merge_distance: merge radius in the vertices' unit (finite, ``>= 0``), or ``None`` to merge nothing.

    Returns:
        A valid :class:`Wireframe`.

    Raises:
        ValueError: invalid shapes/indices/coordinates, or a negative/non-finite ``merge_distance``.

    Example:
        >>> wf = clean_wireframe([[0, 0, 0], [1, 0, 0], [1, 0, 1e-9]], [[0, 1], [1, 0], [0, 2], [1, 2]],
        ...                      merge_distance=1e-6)
        >>> wf.vertices.shape, wf.edges.tolist()
        ((2, 3), [[0, 1]])
    """
    v = validate_vertices(vertices, arg="vertices")
    e = _validate_edges(edges, len(v), "edges", "vertices")
    if merge_distance is not None:
        md = float(merge_distance)
        if not np.isfinite(md) or md < 0:
            raise ValueError(f"merge_distance must be a finite number >= 0, got {merge_distance!r}.")
        if len(v) > 1 and md > 0:
            from scipy.sparse import coo_matrix
            from scipy.sparse.csgraph import connected_components
            from scipy.spatial import cKDTree

            pairs = cKDTree(v).query_pairs(md, output_type="ndarray")
            if len(pairs):
                d = np.sqrt(((v[pairs[:, 0]] - v[pairs[:, 1]]) ** 2).sum(axis=1))
                pairs = pairs[d < md]
            graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(v), len(v)))
            _, label = connected_components(graph, directed=False)
            # renumber components in order of first appearance
            _, first = np.unique(label, return_index=True)
            order = np.argsort(first)
            new_id = np.empty(len(order), dtype=np.int64)
            new_id[order] = np.arange(len(order))
            label = new_id[label]
            n_new = len(order)
            sums = np.zeros((n_new, 3))
            np.add.at(sums, label, v)
            counts = np.bincount(label, minlength=n_new).astype(np.float64)
            v = sums / counts[:, None]
            e = label[e] if len(e) else e
    if len(e):
        e = e[e[:, 0] != e[:, 1]]
    if len(e):
        _, first = np.unique(np.sort(e, axis=1), axis=0, return_index=True)
        e = e[np.sort(first)]
    return Wireframe(v, e.reshape(-1, 2).astype(np.int64))
