"""Geometry of the OpenLex3D segmentation metrics: voxel downsampling and GT -> prediction matching.

Everything runs on the CPU in float64 with numpy and scipy's ``cKDTree`` (no Open3D).

Example:
    >>> import numpy as np
    >>> from scenemetrics.openlex3d import downsample_predictions
    >>> points = np.array([[0.01, 0.01, 0.0], [0.03, 0.02, 0.0], [0.02, 0.01, 0.0], [0.07, 0.01, 0.0]])
    >>> centroids, rows = downsample_predictions(points, voxel_size=0.05)
    >>> centroids.round(decimals=4).tolist(), rows.tolist()
    ([[0.02, 0.0133, 0.0], [0.07, 0.01, 0.0]], [2, 3])
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import cKDTree
from torch import Tensor

from scenemetrics.types import TensorOrArray

from ._checks import check_int_array, check_points, check_voxel_size

__all__ = ["downsample_predictions", "nearest_prediction"]

_MAX_PACKED = 2**62


def _voxel_groups(points: np.ndarray, voxel_size: float) -> tuple[np.ndarray, int]:
    """Voxel of every point: (inverse index into the voxels sorted lexicographically by key, number of voxels)."""
    scaled = points / voxel_size
    if np.abs(scaled).max() >= 2.0**52:
        raise ValueError(
            f"`voxel_size`={voxel_size} is too small for coordinates up to {np.abs(points).max():g}: voxel keys "
            "would overflow"
        )
    keys = np.floor(scaled).astype(np.int64)
    kmin = keys.min(axis=0)
    extent = [int(e) for e in keys.max(axis=0) - kmin + 1]
    if extent[0] * extent[1] * extent[2] < _MAX_PACKED:
        # one int64 per point keeps the lexicographic order of (kx, ky, kz): a 1-D unique is much faster
        shifted = keys - kmin
        packed = (shifted[:, 0] * extent[1] + shifted[:, 1]) * extent[2] + shifted[:, 2]
        uniq, inverse = np.unique(packed, return_inverse=True)
    else:
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1), len(uniq)


def _nearest_lowest_index(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Index of the nearest point of ``points`` for every query; exact distance ties go to the lowest index."""
    tree = cKDTree(points)
    if len(points) == 1:
        return np.zeros(len(queries), dtype=np.int64)
    dist, nn = tree.query(queries, k=2, workers=-1)
    out = nn[:, 0].astype(np.int64)
    tie = np.flatnonzero(dist[:, 1] == dist[:, 0])
    if tie.size:
        radius = dist[tie, 0] * (1 + 1e-9) + 1e-300
        found = tree.query_ball_point(queries[tie], radius, workers=-1)
        lengths = np.fromiter((len(f) for f in found), dtype=np.int64, count=len(found))
        flat = np.concatenate([np.asarray(f, dtype=np.int64) for f in found])
        owner = np.repeat(np.arange(tie.size), lengths)
        d2 = ((points[flat] - queries[tie][owner]) ** 2).sum(axis=1)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        best = np.minimum.reduceat(d2, starts)
        candidate = np.where(d2 == best[owner], flat, np.iinfo(np.int64).max)
        out[tie] = np.minimum.reduceat(candidate, starts)
    return out


def _downsample(points: np.ndarray, index: np.ndarray, voxel_size: float | None) -> tuple[np.ndarray, np.ndarray]:
    if voxel_size is None or len(points) == 0:
        return points.astype(np.float64, copy=True), index.astype(np.int64, copy=True)
    inverse, n_voxels = _voxel_groups(points, voxel_size)
    counts = np.bincount(inverse, minlength=n_voxels).astype(np.float64)
    centroids = np.empty((n_voxels, 3), dtype=np.float64)
    for d in range(3):
        centroids[:, d] = np.bincount(inverse, weights=points[:, d], minlength=n_voxels) / counts
    nearest = _nearest_lowest_index(points, centroids)
    return centroids, index[nearest]


def downsample_predictions(
    pred_points: TensorOrArray, pred_index: TensorOrArray | None = None, voxel_size: float | None = 0.05
) -> tuple[Tensor, Tensor]:
    """Voxel-downsample a predicted cloud the way the OpenLex3D toolkit does (Open3D >= 0.18 semantics).

    Each non-empty voxel (key ``floor(p / voxel_size)``, global grid with origin 0) becomes one point at the mean
    of its points; its feature row is ``pred_index[j]`` of the original point ``j`` nearest to that mean, searched
    among *all* original points (it may lie in a neighbouring voxel; exact ties go to the lowest ``j``). Output
    voxels are sorted lexicographically by key.

    Args:
        pred_points: ``(P, 3)`` predicted points.
        pred_index: ``(P,)`` feature row of every point, or ``None`` for the identity (dense features).
        voxel_size: voxel edge in metres; ``None`` or ``0`` returns the input unchanged (as float64).

    Returns:
        ``(centroids (P', 3) float64, rows (P',) int64)`` CPU tensors.

    Raises:
        ValueError: ``pred_points`` not ``(P, 3)`` or non-finite; ``pred_index`` not 1-D of length ``P``;
            bad ``voxel_size``.
        TypeError: ``pred_index`` is not an integer array.

    Example:
        >>> import torch
        >>> pts = torch.tensor([[0.0, 0.0, 0.0], [0.03, 0.0, 0.0], [0.02, 0.0, 0.0], [0.2, 0.0, 0.0]])
        >>> downsample_predictions(pts, torch.tensor([5, 6, 7, 8]))[1].tolist()
        [7, 8]
    """
    points = check_points(pred_points, "pred_points")
    index = (
        np.arange(len(points), dtype=np.int64)
        if pred_index is None
        else check_int_array(pred_index, "pred_index", len(points))
    )
    centroids, rows = _downsample(points, index, check_voxel_size(voxel_size))
    return torch.from_numpy(centroids), torch.from_numpy(rows)


def nearest_prediction(gt_points: np.ndarray, pred_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest predicted point of every GT point: ``(distance (G,) float64, index (G,) int64)``.

    With no predicted point the distances are ``inf`` and the indices ``-1``. Exact distance ties may pick
    either point (the toolkit's BallTree order is unspecified too).

    Example:
        >>> import numpy as np
        >>> d, i = nearest_prediction(np.zeros((1, 3)), np.array([[1.0, 0, 0], [0.5, 0, 0]]))
        >>> d.tolist(), i.tolist()
        ([0.5], [1])
    """
    gt = np.asarray(gt_points, dtype=np.float64)
    pred = np.asarray(pred_points, dtype=np.float64)
    if len(pred) == 0 or len(gt) == 0:
        return np.full(len(gt), np.inf), np.full(len(gt), -1, dtype=np.int64)
    dist, nn = cKDTree(pred).query(gt, k=1, workers=-1)
    return dist.astype(np.float64, copy=False), nn.astype(np.int64, copy=False)
