"""Hand-computed corner P/R/F1, corner offset, segment Hausdorff and edge P/R/F1 (spec 5.1-5.3)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from scenemetrics.wireframe import PRF, corner_offset, corner_prf, edge_prf, segment_hausdorff_matrix

SQUARE = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
SQUARE_E = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])


def test_cost_optimal_assignment_is_not_max_cardinality():
    gt = [(2, 1, 0), (0, 2.5, 0)]
    pred = [(2, 2, 0), (3, 2.5, 0)]
    # the assignment p1-g2, p2-g1 costs 2.0616 + 1.8028 < 1.0 + 3.0, so no pair is within 1.0
    assert corner_prf(pred, gt, threshold=1.0) == PRF(0.0, 0.0, 0.0, 0, 2, 2)
    # with a threshold covering the assigned pairs both count
    assert corner_prf(pred, gt, threshold=2.1).tp == 2


def test_threshold_is_inclusive():
    assert corner_prf([[0.0, 0, 0]], [[0.0, 0, 0.5]], threshold=0.5).tp == 1
    assert corner_prf([[0.0, 0, 0]], [[0.0, 0, 0.5]], threshold=np.nextafter(0.5, 0)).tp == 0


def test_square_vs_shifted_square_at_two_thresholds():
    shifted = SQUARE + np.array([0.25, 0.0, 0.0])  # dyadic, so every distance is exactly 0.25
    assert corner_prf(shifted, SQUARE, threshold=0.2) == PRF(0.0, 0.0, 0.0, 0, 4, 4)
    assert corner_prf(shifted, SQUARE, threshold=0.25) == PRF(1.0, 1.0, 1.0, 4, 4, 4)
    # three of the four predicted corners, one extra far away
    pred = np.vstack([shifted[:3], [[10.0, 10, 10]]])
    p = corner_prf(pred, SQUARE, threshold=0.35)
    assert (p.tp, p.precision, p.recall) == (3, 0.75, 0.75)
    assert p.f1 == 2 * 0.75 * 0.75 / 1.5


def test_unequal_sizes_and_empty_prediction():
    p = corner_prf(SQUARE[:1], SQUARE, threshold=0.1)
    assert (p.precision, p.recall, p.f1) == (1.0, 0.25, 2 * 1.0 * 0.25 / 1.25)
    assert corner_prf(np.zeros((0, 3)), SQUARE, threshold=0.1) == PRF(0.0, 0.0, 0.0, 0, 0, 4)


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, None, "half a metre"])
def test_bad_threshold(bad):
    with pytest.raises(ValueError, match="threshold"):
        corner_prf(SQUARE, SQUARE, threshold=bad)
    with pytest.raises(ValueError, match="threshold"):
        edge_prf(SQUARE, SQUARE_E, SQUARE, SQUARE_E, threshold=bad)
    with pytest.raises(ValueError, match="threshold"):
        corner_offset(SQUARE, SQUARE, threshold=bad)


def test_corner_offset_two_points():
    gt = [[0.0, 0, 0], [10, 0, 0]]
    pred = [[0.0, 0.3, 0.4], [10, 0, 0.2]]  # offsets 0.5 and 0.2
    assert corner_offset(pred, gt, threshold=1.0) == pytest.approx(0.35, abs=1e-15)
    assert corner_offset(pred, gt, threshold=0.3) == pytest.approx(0.2, abs=1e-15)  # only the second is a TP


def test_corner_offset_without_true_positive_is_nan_with_warning():
    with pytest.warns(UserWarning, match="no true-positive"):
        assert math.isnan(corner_offset([[5.0, 5, 5]], SQUARE, threshold=0.1))
    with pytest.warns(UserWarning):
        assert math.isnan(corner_offset(np.zeros((0, 3)), SQUARE, threshold=0.1))


def _seg(a, b, c, d, samples=None):
    v = np.array([a, b, c, d], dtype=float)
    return segment_hausdorff_matrix(v[:2], [[0, 1]], v[2:], [[0, 1]], samples=samples)[0, 0]


def test_exact_segment_hausdorff_hand_cases():
    # perpendicular: [0,2]x{0} vs {1}x[1,3] in the xy plane
    # d(a0,B)=sqrt(2), d(a1,B)=sqrt(2), d(b0,A)=1, d(b1,A)=3 -> 3
    assert _seg((0, 0, 0), (2, 0, 0), (1, 1, 0), (1, 3, 0)) == 3.0
    # parallel unit edges 0.5 apart
    assert _seg((0, 0, 0), (1, 0, 0), (0, 0.5, 0), (1, 0.5, 0)) == 0.5
    # collinear overlapping: [0,4] vs [1,3] -> max(1, 1, 0, 0) = 1; [0,4] vs [1,6] -> 2
    assert _seg((0, 0, 0), (4, 0, 0), (1, 0, 0), (3, 0, 0)) == 1.0
    assert _seg((0, 0, 0), (4, 0, 0), (1, 0, 0), (6, 0, 0)) == 2.0
    # a zero-length segment is a point
    assert _seg((0, 0, 0), (0, 0, 0), (3, 4, 0), (3, 4, 0)) == 5.0
    # symmetric and orientation-free
    assert _seg((1, 1, 0), (1, 3, 0), (2, 0, 0), (0, 0, 0)) == 3.0


def test_sampled_hausdorff_is_never_below_exact_and_close_to_it():
    rng = np.random.default_rng(3)
    for _ in range(40):
        pts = rng.normal(size=(4, 3)) * 3
        exact = _seg(*pts)
        longest = max(np.linalg.norm(pts[1] - pts[0]), np.linalg.norm(pts[3] - pts[2]))
        for k in (2, 5, 20):
            approx = _seg(*pts, samples=k)
            assert approx >= exact - 1e-12
            assert approx <= exact + longest / (k - 1) + 1e-12


def test_bad_samples():
    with pytest.raises(ValueError, match="hausdorff_samples"):
        edge_prf(SQUARE, SQUARE_E, SQUARE, SQUARE_E, threshold=0.1, hausdorff_samples=1)
    with pytest.raises(ValueError, match="matching"):
        edge_prf(SQUARE, SQUARE_E, SQUARE, SQUARE_E, threshold=0.1, matching="corners")
    with pytest.raises(ValueError, match="hausdorff_samples only"):
        edge_prf(SQUARE, SQUARE_E, SQUARE, SQUARE_E, threshold=0.1, matching="endpoint", hausdorff_samples=20)


def test_edge_prf_hausdorff_hand_case():
    # prediction: the square's bottom edge shifted by 0.05, the right edge, and a diagonal
    pv = np.array([[0.0, 0.05, 0], [1, 0.05, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0]])
    pe = [[0, 1], [2, 3], [4, 3]]
    p = edge_prf(pv, pe, SQUARE, SQUARE_E, threshold=0.1)
    assert p == PRF(2 / 3, 0.5, 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5), 2, 3, 4)
    # endpoint variant: the optimal corner assignment (total 0.95) is pred4->g0, pred2->g1, pred3->g2 (all 0) and
    # pred0->g3 (0.95 > threshold); pred1 is unassigned. Only (2, 3) -> {g1, g2} is a GT edge; (4, 3) -> {g0, g2}
    # is not and (0, 1) has ends outside the threshold.
    q = edge_prf(pv, pe, SQUARE, SQUARE_E, threshold=0.1, matching="endpoint")
    assert (q.tp, q.n_pred, q.n_gt) == (1, 3, 4)


def test_edge_prf_empty_prediction_and_disconnect_insensitivity():
    assert edge_prf(SQUARE, [], SQUARE, SQUARE_E, threshold=0.1) == PRF(0.0, 0.0, 0.0, 0, 0, 4)
    # re-attach edge (2, 3) to a new vertex 1e-3 away from vertex 3: same geometry for the Hausdorff matching
    pv = np.vstack([SQUARE, SQUARE[3] + [0, 0, 1e-3]])
    pe = np.array([[0, 1], [1, 2], [2, 4], [3, 0]])
    assert edge_prf(pv, pe, SQUARE, SQUARE_E, threshold=0.01).f1 == 1.0
    # the endpoint variant loses that edge: vertex 4 is left out of the corner assignment
    assert edge_prf(pv, pe, SQUARE, SQUARE_E, threshold=0.01, matching="endpoint").tp == 3


def test_edge_prf_sampled_matches_exact_on_axis_aligned_shift():
    shifted = SQUARE + np.array([0, 0, 0.05])
    for k in (None, 2, 20):
        # sampled points (1 - t) a + t b are exact only up to rounding, hence the 1e-9 margin
        assert edge_prf(shifted, SQUARE_E, SQUARE, SQUARE_E, threshold=0.05 + 1e-9, hausdorff_samples=k).f1 == 1.0
        assert edge_prf(shifted, SQUARE_E, SQUARE, SQUARE_E, threshold=0.049, hausdorff_samples=k).f1 == 0.0


def test_no_warning_for_regular_calls():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        corner_prf(SQUARE, SQUARE, threshold=0.1)
        edge_prf(SQUARE, SQUARE_E, SQUARE, SQUARE_E, threshold=0.1)
