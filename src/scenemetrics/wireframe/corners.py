"""Corner metrics: precision, recall and F1 of the Hungarian corner assignment, and the mean corner offset.

Example:
    >>> from scenemetrics.wireframe import corner_prf
    >>> corner_prf([[0, 0, 0], [5, 0, 0]], [[0, 0, 0.1]], threshold=0.5).f1
    0.6666666666666666
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.options import (
    check_corner_options,
)
from scenemetrics.wireframe.types import (
    PRF,
    _gt_vertices,
    validate_vertices,
)

__all__ = ["corner_offset", "corner_prf"]


def _prf(tp: int, n_pred: int, n_gt: int) -> PRF:
    # exactly the float operations of the 2025 HSS code's compute_ap_metrics (parity at 1e-12)
    precision = tp / n_pred if n_pred > 0 else 0.0
    recall = tp / n_gt if n_gt > 0 else 0.0
    denom = precision + recall
    f1 = 2 * precision * recall / denom if denom > 0 else 0.0
    return PRF(float(precision), float(recall), float(f1), int(tp), int(n_pred), int(n_gt))


def _corner_pairs(p: np.ndarray, g: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hungarian assignment on the full distance matrix, then the pairs within ``threshold`` (inclusive)."""
    if len(p) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    d = cdist(p, g)
    r, c = linear_sum_assignment(d)
    dist = d[r, c]
    keep = dist <= threshold
    return r[keep], c[keep], dist[keep]


def corner_prf(pred_vertices: ArrayLike, gt_vertices: ArrayLike, threshold: float) -> PRF:
    """Corner precision, recall and F1 (the 2025 HSS code's ``compute_ap_metrics``; Building3D's rule).

    ``D = cdist(pred, gt)``; ``(r, c) = linear_sum_assignment(D)`` (minimum total distance, ``min(N_pred, N_gt)``
    pairs, no threshold inside the matching); ``tp = #(D[r, c] <= threshold)``. This is not the largest number of
    pairs within the threshold: the cost-optimal assignment may contain fewer.

    Args:
        pred_vertices: ``(N_pred, 3)`` predicted corners (may be empty: P = R = F1 = 0).
        gt_vertices: ``(N_gt, 3)`` GT corners, ``N_gt >= 1``.
        threshold: inclusive match distance, finite and ``>= 0``, in the coordinates' unit (no default).

    Returns:
        :class:`PRF` (``n_pred``/``n_gt`` count corners).

    Example:
        >>> corner_prf([[0, 0, 0], [5, 0, 0]], [[0, 0, 0.1]], threshold=0.5)
        PRF(precision=0.5, recall=1.0, f1=0.6666666666666666, tp=1, n_pred=2, n_gt=1)
    """
    p = validate_vertices(pred_vertices, arg="pred_vertices")
    g = _gt_vertices(gt_vertices)
    t = check_corner_options(threshold)
    r, _, _ = _corner_pairs(p, g, t)
    return _prf(len(r), len(p), len(g))


def corner_offset(pred_vertices: ArrayLike, gt_vertices: ArrayLike, threshold: float) -> float:
    """Mean distance between the true-positive corner pairs of :func:`corner_prf` (lower is better).

    Building3D's "average corner offset" (the paper's exact definition is unavailable; Decision). No true positive,
    including an empty prediction, gives ``nan`` and a ``UserWarning``.

    Args:
        pred_vertices: ``(N_pred, 3)`` predicted corners.
        gt_vertices: ``(N_gt, 3)`` GT corners, ``N_gt >= 1``.
        threshold: inclusive match distance (finite, ``>= 0``).

    Returns:
        The mean offset in the coordinates' unit, or ``nan``.

    Example:
        >>> corner_offset([[0, 0, 0.1], [3, 0, 0]], [[0, 0, 0], [3, 0, 0.3]], threshold=0.5)
        0.2
    """
    p = validate_vertices(pred_vertices, arg="pred_vertices")
    g = _gt_vertices(gt_vertices)
    t = check_corner_options(threshold)
    _, _, dist = _corner_pairs(p, g, t)
    if len(dist) == 0:
        warnings.warn("corner_offset: no true-positive corner within the threshold; returning nan.", stacklevel=2)
        return float("nan")
    return float(np.mean(dist))
