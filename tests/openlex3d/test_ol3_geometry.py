"""Voxel downsampling and GT -> prediction matching (spec §4.1, §12.1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import downsample_predictions
from scenemetrics.openlex3d.geometry import nearest_prediction

from .ol3_reference import downsample as ref_downsample


def test_worked_example_12_1():
    pts = np.array(
        [
            [0.01, 0.01, 0.01],
            [0.03, 0.02, 0.01],
            [0.04, 0.04, 0.01],
            [0.06, 0.01, 0.01],
            [-0.01, 0.02, 0.01],
            [0.001, 0.101, 0.001],
            [0.049, 0.149, 0.001],
            [0.025, 0.125, -0.001],
        ]
    )
    centroids, rows = downsample_predictions(pts, voxel_size=0.05)
    assert centroids.dtype == torch.float64 and rows.dtype == torch.int64
    expected = [
        [-0.01, 0.02, 0.01],
        [0.08 / 3, 0.07 / 3, 0.01],
        [0.025, 0.125, -0.001],
        [0.025, 0.125, 0.001],
        [0.06, 0.01, 0.01],
    ]
    np.testing.assert_allclose(centroids.numpy(), expected, atol=1e-12)
    assert rows.tolist() == [4, 1, 7, 7, 3]


def test_negative_keys_use_floor_and_a_global_grid():
    # x keys: -0.01, -0.045, -0.02 -> -1 (floor); 0.0 -> 0; 0.051, 0.099, 0.06 -> 1 (grid from 0, not the minimum)
    pts = np.array([[x, 0.0, 0.0] for x in (-0.01, 0.0, 0.051, 0.099, -0.045, -0.02, 0.06)])
    centroids, rows = downsample_predictions(pts, torch.arange(10, 17), voxel_size=0.05)
    np.testing.assert_allclose(centroids[:, 0].numpy(), [-0.025, 0.0, 0.07], atol=1e-15)
    assert rows.tolist() == [15, 11, 16]


def test_nearest_original_point_may_lie_in_a_neighbouring_voxel():
    pts = np.array([[0.001, 0.0, 0.0], [0.049, 0.0, 0.0], [0.0255, 0.0, 0.001]])
    # voxel 0 holds all three; its centroid (0.0252, 0, 0.00033) is nearest to point 2
    _, rows = downsample_predictions(pts, np.array([5, 6, 7]), voxel_size=0.05)
    assert rows.tolist() == [7]
    pts = np.array([[0.001, 0.0, 0.0], [0.049, 0.0, 0.0], [0.026, 0.0, -0.0001]])
    _, rows = downsample_predictions(pts, np.array([5, 6, 7]), voxel_size=0.05)
    # point 2 has z-key -1: voxel (0,0,0) = {0, 1} with centroid 0.025, whose nearest point is point 2 next door
    assert rows.tolist() == [7, 7]


def test_exact_duplicates_tie_to_the_lowest_index():
    pts = np.array([[0.02, 0.02, 0.02], [0.02, 0.02, 0.02], [0.02, 0.02, 0.02]])
    _, rows = downsample_predictions(pts, np.array([9, 4, 7]), voxel_size=0.05)
    assert rows.tolist() == [9]
    # points symmetric about the centroid (binary-exact distances): lowest index wins
    pts = np.array([[0.375, 0.0, 0.0], [0.125, 0.0, 0.0], [0.125, 0.0, 0.0], [0.375, 0.0, 0.0]])
    _, rows = downsample_predictions(pts, np.array([5, 6, 2, 3]), voxel_size=0.5)
    assert rows.tolist() == [5]
    pts = np.array([[0.125, 0.0, 0.0], [0.375, 0.0, 0.0]])
    _, rows = downsample_predictions(pts, np.array([1, 2]), voxel_size=0.5)
    assert rows.tolist() == [1]


def test_no_downsampling():
    pts = np.random.default_rng(0).random((5, 3)).astype(np.float32)
    for voxel in (None, 0, 0.0):
        centroids, rows = downsample_predictions(pts, np.array([4, 3, 2, 1, 0]), voxel_size=voxel)
        assert centroids.dtype == torch.float64
        np.testing.assert_array_equal(centroids.numpy(), pts.astype(np.float64))
        assert rows.tolist() == [4, 3, 2, 1, 0]


def test_identity_index_and_empty_cloud():
    _, rows = downsample_predictions(np.array([[0.0, 0, 0], [1.0, 0, 0]]))
    assert rows.tolist() == [0, 1]
    centroids, rows = downsample_predictions(np.zeros((0, 3)))
    assert centroids.shape == (0, 3) and rows.shape == (0,)


def test_independent_of_input_order_and_equal_to_reference():
    rng = np.random.default_rng(1)
    pts = rng.uniform(-0.3, 0.3, size=(300, 3))
    # keep away from voxel faces (1e-3 voxel) so the summation order cannot move a point
    frac = pts / 0.05 - np.floor(pts / 0.05)
    pts = pts[((frac > 1e-3) & (frac < 1 - 1e-3)).all(axis=1)]
    # a two-point voxel's centroid is equidistant to both points (a tie decided by rounding): drop one of them
    _, first, inverse, counts = np.unique(
        np.floor(pts / 0.05), axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    pts = pts[(counts[inverse.ravel()] != 2) | np.isin(np.arange(len(pts)), first)]
    rows = rng.permutation(len(pts))
    c1, r1 = downsample_predictions(pts, rows, voxel_size=0.05)
    perm = rng.permutation(len(pts))
    c2, r2 = downsample_predictions(pts[perm], rows[perm], voxel_size=0.05)
    np.testing.assert_allclose(c1.numpy(), c2.numpy(), atol=1e-15)
    assert r1.tolist() == r2.tolist()
    ref_pts, ref_rows = ref_downsample(pts, rows, 0.05)
    np.testing.assert_allclose(c1.numpy(), np.array(ref_pts), atol=1e-15)
    assert r1.tolist() == ref_rows


def test_keys_fall_back_to_row_unique_for_huge_extents():
    pts = np.array([[0.0, 0, 0], [4e7, 4e7, 4e7], [-4e7, 0, 1.0], [0.01, 0, 0]])
    centroids, rows = downsample_predictions(pts, voxel_size=0.05)
    assert rows.tolist() == [2, 0, 1]
    np.testing.assert_allclose(centroids[1].numpy(), [0.005, 0, 0])


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"`pred_points` must have shape \(N, 3\)"):
        downsample_predictions(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="`pred_points` must contain finite"):
        downsample_predictions(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(ValueError, match="`pred_index` must have length 2"):
        downsample_predictions(np.zeros((2, 3)), np.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="`pred_index` must be an integer array"):
        downsample_predictions(np.zeros((2, 3)), np.zeros(2))
    for bad in (-0.1, float("nan"), float("inf"), "5cm", True):
        with pytest.raises(ValueError, match="`voxel_size`"):
            downsample_predictions(np.zeros((2, 3)), voxel_size=bad)
    with pytest.raises(ValueError, match="too small"):
        downsample_predictions(np.array([[1e6, 0, 0]]), voxel_size=1e-12)


def test_nearest_prediction():
    d, i = nearest_prediction(np.array([[0.0, 0, 0], [2.0, 0, 0]]), np.array([[0.5, 0, 0], [1.8, 0, 0]]))
    np.testing.assert_allclose(d, [0.5, 0.2])
    assert i.tolist() == [0, 1]
    d, i = nearest_prediction(np.zeros((2, 3)), np.zeros((0, 3)))
    assert np.isinf(d).all() and i.tolist() == [-1, -1]
