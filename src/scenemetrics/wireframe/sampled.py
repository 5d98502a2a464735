"""Distances between points sampled along the edges: Hausdorff and Chamfer, and the deterministic sampling itself.

Example:
    >>> from scenemetrics.wireframe import sample_edges
    >>> sample_edges([[0, 0, 0], [1, 0, 0]], [[0, 1]], spacing=0.5)[:, 0]
    array([0. , 0.5, 1. ])
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.options import (
    check_chamfer_options,
    check_sampling,
)
from scenemetrics.wireframe.segments import _canonical_segments
from scenemetrics.wireframe.types import (
    Wireframe,
    _pair,
    _validate_pair,
)

__all__ = ["chamfer_distance", "hausdorff_distance", "sample_edges"]


def _sample(wf: Wireframe, spacing: float | None, points_per_wireframe: int) -> np.ndarray:
    if len(wf.edges) == 0:
        return np.zeros((0, 3))
    a, b = _canonical_segments(wf.vertices, wf.edges)
    length = np.linalg.norm(b - a, axis=1)
    if spacing is None:
        # sorted before summing, so the spacing does not depend on the edge order
        spacing = float(np.sum(np.sort(length))) / points_per_wireframe
    if spacing > 0:
        n = np.maximum(2, np.ceil(length / spacing).astype(np.int64) + 1)
    else:  # every edge has zero length
        n = np.full(len(length), 2, dtype=np.int64)
    t = np.concatenate([np.linspace(0.0, 1.0, k) for k in n])[:, None]
    seg = np.repeat(np.arange(len(n)), n)
    return (1.0 - t) * a[seg] + t * b[seg]


def sample_edges(
    vertices: ArrayLike, edges: ArrayLike, *, spacing: float | None = None, points_per_wireframe: int = 1000
) -> np.ndarray:
    """Deterministic points along the edges (Decision): ``max(2, ceil(L / spacing) + 1)`` per edge, ends included.

    Each edge is sampled in its canonical orientation at ``linspace(0, 1, n)``; ``spacing=None`` uses the
    wireframe's own total edge length divided by ``points_per_wireframe``. Isolated vertices are not sampled.

    Args:
        vertices: ``(N, 3)`` vertices.
        edges: ``(M, 2)`` edges.
        spacing: sample spacing (``> 0``) or ``None``.
        points_per_wireframe: target number of samples when ``spacing`` is ``None``.

    Returns:
        ``(K, 3)`` float64 points.

    Example:
        >>> sample_edges([[0, 0, 0], [1, 0, 0]], [[0, 1]], spacing=0.5)[:, 0]
        array([0. , 0.5, 1. ])
    """
    sp = check_sampling(spacing, points_per_wireframe)
    return _sample(_validate_pair(vertices, edges, "vertices", "edges"), sp, int(points_per_wireframe))


def _sampled_distances(
    pred_vertices: Any,
    pred_edges: Any,
    gt_vertices: Any,
    gt_edges: Any,
    spacing: float | None,
    points_per_wireframe: int,
    fn: str,
) -> tuple[np.ndarray, np.ndarray] | None:
    sp = check_sampling(spacing, points_per_wireframe)
    p, g = _pair(pred_vertices, pred_edges, gt_vertices, gt_edges)
    if len(p.edges) == 0:
        warnings.warn(f"{fn}: the prediction has no edge; returning nan.", stacklevel=3)
        return None
    sp_pts = _sample(p, sp, int(points_per_wireframe))
    sg_pts = _sample(g, sp, int(points_per_wireframe))
    d_a, _ = cKDTree(sg_pts).query(sp_pts)
    d_b, _ = cKDTree(sp_pts).query(sg_pts)
    return d_a, d_b


def hausdorff_distance(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    *,
    spacing: float | None = None,
    points_per_wireframe: int = 1000,
) -> float:
    """Symmetric Hausdorff distance between the edge samples of :func:`sample_edges` (paper Eq. 1; lower is better).

    ``max(max d_A, max d_B)`` with ``d_A`` the nearest-GT-sample distances of the predicted samples and ``d_B`` the
    reverse (exact nearest neighbours, ``scipy.spatial.cKDTree``). No predicted edge: ``nan`` and a warning.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        pred_edges: ``(M, 2)`` predicted edges.
        gt_vertices: ``(N', 3)`` GT vertices.
        gt_edges: ``(M', 2)`` GT edges, ``M' >= 1``.
        spacing: common sample spacing, or ``None`` (each wireframe: total length / ``points_per_wireframe``).
        points_per_wireframe: see ``spacing``.

    Returns:
        The distance in length units.

    Example:
        >>> hausdorff_distance([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0.5, 0], [1, 0.5, 0]], [[0, 1]])
        0.5
    """
    d = _sampled_distances(
        pred_vertices, pred_edges, gt_vertices, gt_edges, spacing, points_per_wireframe, "hausdorff_distance"
    )
    if d is None:
        return float("nan")
    return float(max(d[0].max(), d[1].max()))


def chamfer_distance(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    *,
    spacing: float | None = None,
    points_per_wireframe: int = 1000,
    squared: bool = False,
    direction: str = "symmetric",
) -> float:
    """Chamfer distance between the edge samples of :func:`sample_edges` (paper Eq. 1; lower is better).

    ``0.5 (mean d_A + mean d_B)`` (see :func:`hausdorff_distance`); ``direction="pred_to_gt"``/``"gt_to_pred"``
    return one term, ``squared=True`` squares the distances before averaging. No predicted edge: ``nan`` and a
    warning.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        pred_edges: ``(M, 2)`` predicted edges.
        gt_vertices: ``(N', 3)`` GT vertices.
        gt_edges: ``(M', 2)`` GT edges, ``M' >= 1``.
        spacing: common sample spacing, or ``None`` (each wireframe its own).
        points_per_wireframe: see ``spacing``.
        squared: average squared distances.
        direction: ``"symmetric"``, ``"pred_to_gt"`` or ``"gt_to_pred"``.

    Returns:
        The distance (squared length if ``squared``).

    Example:
        >>> chamfer_distance([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0.5, 0], [1, 0.5, 0]], [[0, 1]])
        0.5
    """
    check_chamfer_options(spacing, points_per_wireframe, squared, direction)
    d = _sampled_distances(
        pred_vertices, pred_edges, gt_vertices, gt_edges, spacing, points_per_wireframe, "chamfer_distance"
    )
    if d is None:
        return float("nan")
    d_a, d_b = (d[0] ** 2, d[1] ** 2) if squared else d
    if direction == "pred_to_gt":
        return float(np.mean(d_a))
    if direction == "gt_to_pred":
        return float(np.mean(d_b))
    return float(0.5 * (np.mean(d_a) + np.mean(d_b)))
