"""Edge metrics: precision, recall and F1 of edges matched by segment Hausdorff distance or by their endpoints.

Example:
    >>> from scenemetrics.wireframe import edge_prf
    >>> v = [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    >>> edge_prf(v, [[0, 1]], v, [[0, 1], [1, 2]], threshold=0.1).recall
    0.5
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.corners import _corner_pairs, _prf
from scenemetrics.wireframe.options import (
    check_edge_options,
)
from scenemetrics.wireframe.segments import _segment_hausdorff
from scenemetrics.wireframe.types import (
    PRF,
    _pair,
    edge_codes,
)

__all__ = ["edge_prf"]


def _member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)`` for int64 codes, via a sorted search (much less overhead on small arrays)."""
    if len(pool) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    pool = np.sort(pool)
    return pool[np.minimum(np.searchsorted(pool, values), len(pool) - 1)] == values


def edge_prf(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    threshold: float,
    *,
    matching: str = "hausdorff",
    hausdorff_samples: int | None = None,
) -> PRF:
    """Edge precision, recall and F1.

    * ``matching="hausdorff"`` (default; Decision): Hungarian assignment on the symmetric segment Hausdorff
      distances (:func:`segment_hausdorff_matrix`, exact unless ``hausdorff_samples`` is given), true positive iff
      the assigned distance is ``<= threshold``. Insensitive to an edge re-attached to a new vertex at nearly the
      same place (paper Table 2, "disconnect edges").
    * ``matching="endpoint"``: the corner assignment of :func:`corner_prf` with the same threshold; a predicted edge
      ``(a, b)`` is a true positive iff both endpoints are matched, to ``ga`` and ``gb``, and ``{ga, gb}`` is a GT
      edge (the older Building3D/S23DR "corner mapping" variant).

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        pred_edges: ``(M, 2)`` predicted edges (may be empty: P = R = F1 = 0).
        gt_vertices: ``(N', 3)`` GT vertices.
        gt_edges: ``(M', 2)`` GT edges, ``M' >= 1``.
        threshold: inclusive distance, finite and ``>= 0``.
        matching: ``"hausdorff"`` or ``"endpoint"``.
        hausdorff_samples: ``None`` (exact segment Hausdorff) or ``k >= 2`` samples per segment (Building3D: 20).

    Returns:
        :class:`PRF` (``n_pred``/``n_gt`` count edges).

    Example:
        >>> v = [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
        >>> edge_prf(v, [[0, 1]], v, [[0, 1], [1, 2]], threshold=0.1)
        PRF(precision=1.0, recall=0.5, f1=0.6666666666666666, tp=1, n_pred=1, n_gt=2)
    """
    t = check_edge_options(threshold, matching, hausdorff_samples)
    p, g = _pair(pred_vertices, pred_edges, gt_vertices, gt_edges)
    mp, mg = len(p.edges), len(g.edges)
    if matching == "hausdorff":
        d = _segment_hausdorff(p, g, hausdorff_samples)
        if mp == 0:
            return _prf(0, 0, mg)
        r, c = linear_sum_assignment(d)
        return _prf(int((d[r, c] <= t).sum()), mp, mg)
    if mp == 0:
        return _prf(0, 0, mg)
    r, c, _ = _corner_pairs(p.vertices, g.vertices, t)
    ng = len(g.vertices)
    gmap = np.full(len(p.vertices), -1, dtype=np.int64)
    gmap[r] = c
    ua, ub = gmap[p.edges[:, 0]], gmap[p.edges[:, 1]]
    both = (ua >= 0) & (ub >= 0)
    codes = edge_codes(np.column_stack((ua, ub)), ng)
    tp = int((both & _member(codes, edge_codes(g.edges, ng))).sum())
    return _prf(tp, mp, mg)
