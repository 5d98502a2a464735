"""Segment geometry shared by the wireframe metrics: edge lengths, segments in their canonical orientation
(lexicographically smaller endpoint first), exact point-to-segment distances and the segment Hausdorff matrix.

Example:
    >>> from scenemetrics.wireframe.segments import segment_hausdorff_matrix
    >>> segment_hausdorff_matrix([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0, 1], [1, 0, 1]], [[1, 0]])
    array([[1.]])
"""

from __future__ import annotations

import numpy as np

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.options import (
    check_hausdorff_samples,
)
from scenemetrics.wireframe.types import (
    Wireframe,
    validate_wireframe,
)

__all__ = ["segment_hausdorff_matrix"]


def _edge_lengths(v: np.ndarray, e: np.ndarray) -> np.ndarray:
    if len(e) == 0:
        return np.zeros(0)
    return np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)


def _canonical_segments(v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Endpoints ``(a, b)`` of every edge with ``a`` the lexicographically smaller one (by x, then y, then z)."""
    a, b = v[e[:, 0]], v[e[:, 1]]
    swap = (b[:, 0] < a[:, 0]) | (
        (b[:, 0] == a[:, 0]) & ((b[:, 1] < a[:, 1]) | ((b[:, 1] == a[:, 1]) & (b[:, 2] < a[:, 2])))
    )
    a2 = np.where(swap[:, None], b, a)
    b2 = np.where(swap[:, None], a, b)
    return a2, b2


def _point_segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance from points ``p`` to segments ``[a, b]`` (broadcast over leading axes, coordinates last).

    Written component by component so that every (point, segment) pair is computed by the same float operations
    whatever the array layout: this keeps exact symmetries exact.
    """
    dx, dy, dz = b[..., 0] - a[..., 0], b[..., 1] - a[..., 1], b[..., 2] - a[..., 2]
    wx, wy, wz = p[..., 0] - a[..., 0], p[..., 1] - a[..., 1], p[..., 2] - a[..., 2]
    ll = dx * dx + dy * dy + dz * dz
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (wx * dx + wy * dy + wz * dz) / ll
    t = np.where(ll > 0, np.clip(t, 0.0, 1.0), 0.0)
    s = 1.0 - t
    # (1 - t) a + t b hits both endpoints exactly at t = 0 and t = 1
    qx = p[..., 0] - (s * a[..., 0] + t * b[..., 0])
    qy = p[..., 1] - (s * a[..., 1] + t * b[..., 1])
    qz = p[..., 2] - (s * a[..., 2] + t * b[..., 2])
    return np.sqrt(qx * qx + qy * qy + qz * qz)


def _sample_segments(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, k)[None, :, None]
    return (1.0 - t) * a[:, None, :] + t * b[:, None, :]


def segment_hausdorff_matrix(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    *,
    samples: int | None = None,
) -> np.ndarray:
    """Symmetric Hausdorff distance between every predicted and every GT segment.

    With ``samples=None`` the distance is exact: the maximum of the four endpoint-to-other-segment distances
    (the distance to a segment is convex along the other segment, so its maximum sits at an endpoint). With
    ``samples=k`` (``k >= 2``) both segments are sampled at ``k`` equally spaced points including the endpoints
    and the discrete symmetric Hausdorff distance is returned (Building3D uses ``k = 20``); it is never below the
    exact value.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        pred_edges: ``(M, 2)`` predicted edges.
        gt_vertices: ``(N', 3)`` GT vertices.
        gt_edges: ``(M', 2)`` GT edges.
        samples: ``None`` (exact) or the number of samples per segment.

    Returns:
        ``(M, M')`` float64 matrix.

    Example:
        >>> segment_hausdorff_matrix([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0, 1], [1, 0, 1]], [[1, 0]])
        array([[1.]])
    """
    p = validate_wireframe(pred_vertices, pred_edges, name="pred")
    g = validate_wireframe(gt_vertices, gt_edges, name="gt")
    return _segment_hausdorff(p, g, samples)


def _segment_hausdorff(p: Wireframe, g: Wireframe, samples: int | None) -> np.ndarray:
    check_hausdorff_samples(samples)
    mp, mg = len(p.edges), len(g.edges)
    if mp == 0 or mg == 0:
        return np.zeros((mp, mg))
    pa, pb = _canonical_segments(p.vertices, p.edges)
    ga, gb = _canonical_segments(g.vertices, g.edges)
    if samples is None:
        P_a, P_b = pa[:, None, :], pb[:, None, :]
        G_a, G_b = ga[None, :, :], gb[None, :, :]
        return np.maximum(
            np.maximum(_point_segment_distance(P_a, G_a, G_b), _point_segment_distance(P_b, G_a, G_b)),
            np.maximum(_point_segment_distance(G_a, P_a, P_b), _point_segment_distance(G_b, P_a, P_b)),
        )
    k = int(samples)
    sp = _sample_segments(pa, pb, k)  # (mp, k, 3)
    sg = _sample_segments(ga, gb, k)  # (mg, k, 3)
    out = np.empty((mp, mg))
    block = max(1, 4_000_000 // (mg * k * k))  # bound the (block, mg, k, k) temporaries
    for s in range(0, mp, block):
        x = sp[s : s + block, None, :, None, :]
        y = sg[None, :, None, :, :]
        dx, dy, dz = x[..., 0] - y[..., 0], x[..., 1] - y[..., 1], x[..., 2] - y[..., 2]
        d = np.sqrt(dx * dx + dy * dy + dz * dz)  # (block, mg, k_pred, k_gt)
        out[s : s + block] = np.maximum(d.min(axis=3).max(axis=2), d.min(axis=2).max(axis=2))
    return out
