"""Spectral distance, voxel IoU, sampled Hausdorff/Chamfer, HSS, and the paper's Fig. 1 split case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from scenemetrics.wireframe import (
    chamfer_distance,
    corner_prf,
    edge_prf,
    hausdorff_distance,
    hss,
    iou,
    jaccard_distance,
    laplacian_spectrum,
    sample_edges,
    spectral_distance,
    synthetic_house,
    wed,
)

from ._helpers import cube_wireframe, split_every_edge

ONE = (np.array([[0.0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
PATH = (np.array([[0.0, 0, 0], [1, 0, 0], [3, 0, 0]]), np.array([[0, 1], [1, 2]]))


# ------------------------------------------------------------------------------------------------ spectral


def test_laplacian_spectrum_hand_cases():
    assert np.allclose(laplacian_spectrum(*ONE), [0.0, 2.0])
    assert np.allclose(laplacian_spectrum(*PATH), [0.0, 3 - math.sqrt(3), 3 + math.sqrt(3)], atol=1e-12)
    # isolated vertices add zeros; empty input gives an empty spectrum
    v = np.vstack([ONE[0], [[5.0, 5, 5]]])
    assert np.allclose(laplacian_spectrum(v, ONE[1]), [0.0, 0.0, 2.0])
    assert laplacian_spectrum([], []).shape == (0,)


def test_spectral_example_of_the_spec():
    assert spectral_distance(*ONE, *PATH, p=1) == pytest.approx(4 / 3, abs=1e-14)
    assert spectral_distance(*ONE, *PATH, p=2) == pytest.approx(1.7389457313484, abs=1e-12)
    assert spectral_distance(*ONE, *PATH) == spectral_distance(*ONE, *PATH, p=2)


def test_spectral_empty_prediction_and_edgeless_gt():
    # the empty prediction is compared with zeros: W1 = mean of the GT spectrum
    lam = laplacian_spectrum(*PATH)
    assert spectral_distance(np.zeros((0, 3)), [], *PATH, p=1) == pytest.approx(lam.mean(), abs=1e-14)
    assert spectral_distance(*PATH, PATH[0], [], p=1) == pytest.approx(lam.mean(), abs=1e-14)
    with pytest.warns(UserWarning, match="empty prediction"):
        assert math.isnan(spectral_distance(np.zeros((0, 3)), [], *PATH, padding="empirical"))


def test_spectral_empirical_padding_matches_scipy_for_p1_and_a_naive_w2():
    rng = np.random.default_rng(5)
    for n_pred in (2, 3, 5, 7):
        pv = rng.normal(size=(n_pred, 3))
        pe = np.array([(i, i + 1) for i in range(n_pred - 1)])
        a, b = laplacian_spectrum(pv, pe), laplacian_spectrum(*PATH)
        got = spectral_distance(pv, pe, *PATH, p=1, padding="empirical")
        assert got == pytest.approx(wasserstein_distance(a, b), abs=1e-12)
        # naive W2 on a fine common quantile grid (midpoints of lcm(n, m) equal pieces)
        n, m = len(a), len(b)
        k = n * m
        q = (np.arange(k) + 0.5) / k
        naive = math.sqrt(np.mean((np.sort(a)[(q * n).astype(int)] - np.sort(b)[(q * m).astype(int)]) ** 2))
        assert spectral_distance(pv, pe, *PATH, p=2, padding="empirical") == pytest.approx(naive, abs=1e-12)


def test_spectral_errors():
    with pytest.raises(ValueError, match="`p` must be one of 1, 2"):
        spectral_distance(*ONE, *PATH, p=3)
    with pytest.raises(ValueError, match="padding"):
        spectral_distance(*ONE, *PATH, padding="ones")


@pytest.mark.parametrize("fn", [laplacian_spectrum, sample_edges])
def test_single_wireframe_functions_name_their_own_arguments_in_errors(fn):
    # spec 3: the message names the argument; these functions take `vertices` and `edges`
    with pytest.raises(ValueError, match=r"^edges\[0\] = \(0, 5\) indexes a vertex .*vertices has 2 vertices"):
        fn(ONE[0], [[0, 5]])
    with pytest.raises(ValueError, match=r"^edges\[1\] = \(1, 0\) duplicates edges\[0\]"):
        fn(ONE[0], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"^edges\[0\] = \(1, 1\) is a self-loop.*clean_wireframe\(vertices, edges\)"):
        fn(ONE[0], [[1, 1]])
    with pytest.raises(ValueError, match=r"^vertices must have shape \(N, 3\)"):
        fn([[0.0, 0.0]], [])
    with pytest.raises(TypeError, match=r"^edges must be integer indices into vertices"):
        fn(*ONE[:1], [[0.0, 1.0]])


# ------------------------------------------------------------------------------------------------ IoU


def test_voxel_iou_identity_disjoint_and_empty():
    assert iou(*ONE, *ONE, radius=0.1) == 1.0
    far = (ONE[0] + [0, 5, 0], ONE[1])
    assert iou(*far, *ONE, radius=0.1) == 0.0
    assert iou(ONE[0], [], *ONE, radius=0.1) == 0.0
    assert jaccard_distance(*ONE, *ONE, radius=0.1) == 0.0
    assert jaccard_distance(*far, *ONE, radius=0.1) == 1.0


def test_voxel_iou_parallel_capsules_against_a_naive_lattice_count():
    a = (np.array([[0.0, 0, 0], [2, 0, 0]]), np.array([[0, 1]]))
    b = (np.array([[0.0, 0.3, 0], [2, 0.3, 0.1]]), np.array([[1, 0]]))
    r, res = 0.25, 4
    h = r / res
    ends = np.vstack([a[0], b[0]])
    lo = ends.min(0) - r
    hi = ends.max(0) + r
    axes = [lo[k] + (np.arange(int(np.floor((hi[k] - lo[k]) / h - 0.5)) + 1) + 0.5) * h for k in range(3)]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)

    def inside(v):
        p0, p1 = v[0], v[1]
        d = p1 - p0
        t = np.clip((pts - p0) @ d / (d @ d), 0, 1)
        return np.linalg.norm(pts - (p0 + t[:, None] * d), axis=1) <= r

    ia, ib = inside(a[0]), inside(b[0][::-1])
    naive = (ia & ib).sum() / (ia | ib).sum()
    assert iou(*a, *b, radius=r, resolution=res) == pytest.approx(naive, abs=2e-3)


def test_voxel_iou_of_nested_capsules_matches_the_analytic_volume_ratio():
    r = 0.5
    exact = (math.pi * r * r * 1 + 4 / 3 * math.pi * r**3) / (math.pi * r * r * 3 + 4 / 3 * math.pi * r**3)
    rng = np.random.default_rng(1)
    for _ in range(3):
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        o = rng.uniform(-5, 5, 3)
        small, big = np.array([o, o + d]), np.array([o, o + 3 * d])
        assert iou(small, [[0, 1]], big, [[0, 1]], radius=r) == pytest.approx(exact, abs=0.006)


def test_voxel_iou_resolution_4_is_close_to_a_finer_lattice():
    v, e = synthetic_house(3, annex=False)
    pv = v + np.random.default_rng(0).normal(0, 0.2, v.shape)
    coarse = iou(pv, e, v, e, radius=0.5, resolution=4)
    fine = iou(pv, e, v, e, radius=0.5, resolution=12)
    assert 0.3 < coarse < 0.9
    assert coarse == pytest.approx(fine, abs=0.006)


def test_voxel_iou_translation_invariance_with_dyadic_values():
    rng = np.random.default_rng(2)
    pv = np.round(rng.uniform(0, 4, (6, 3)) * 64) / 64
    gv = pv + np.round(rng.normal(0, 0.2, (6, 3)) * 64) / 64
    e = np.array([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)])
    base = iou(pv, e, gv, e, radius=0.25, resolution=2)
    assert iou(pv + 16.0, e, gv + 16.0, e, radius=0.25, resolution=2) == base
    shift = np.array([3.3, -7.1, 0.7])
    assert iou(pv + shift, e, gv + shift, e, radius=0.25, resolution=2) == pytest.approx(base, abs=2e-3)


def test_iou_errors():
    with pytest.raises(ValueError, match="radius"):
        iou(*ONE, *ONE, radius=0.0)
    with pytest.raises(ValueError, match="radius"):
        iou(*ONE, *ONE, radius=math.nan)
    with pytest.raises(ValueError, match="`radius` is required"):
        iou(*ONE, *ONE, radius=None)
    with pytest.raises(ValueError, match="resolution"):
        iou(*ONE, *ONE, radius=0.1, resolution=0)
    with pytest.raises(ValueError, match="mode"):
        iou(*ONE, *ONE, radius=0.1, mode="mesh")
    with pytest.raises(ValueError, match="gt_edges is empty"):
        iou(*ONE, ONE[0], [], radius=0.1)


def test_hss_with_voxel_iou_combines_f1_and_iou():
    pv = ONE[0] + [0, 0, 0.3]
    res = hss(pv, ONE[1], *ONE, vert_thresh=0.5, edge_thresh=0.5, iou_mode="voxel")
    f1 = corner_prf(pv, ONE[0], 0.5).f1
    j = iou(pv, ONE[1], *ONE, radius=0.5)
    assert res.f1 == f1 == 1.0
    assert res.iou == j and 0 < j < 1
    assert res.hss == pytest.approx(2 * f1 * j / (f1 + j), abs=1e-15)
    assert hss(pv + 10, ONE[1], *ONE, iou_mode="voxel").hss == 0.0


# ------------------------------------------------------------------------------------------------ sampled


def test_sample_edges_is_deterministic_with_ends_included():
    v, e = cube_wireframe()
    pts = sample_edges(v, e)  # spacing = 1200 / 1000 -> 85 points per edge of 100
    assert pts.shape == (12 * 85, 3)
    pts2 = sample_edges(v, e[:, ::-1][::-1])  # flipped and reordered edges: same set of points
    assert np.array_equal(np.unique(pts, axis=0), np.unique(pts2, axis=0))
    assert sample_edges(v, e, spacing=1000.0).shape == (24, 3)  # at least both endpoints
    assert sample_edges(v, []).shape == (0, 3)
    with pytest.raises(ValueError, match="spacing"):
        sample_edges(v, e, spacing=0.0)
    with pytest.raises(ValueError, match="points_per_wireframe"):
        sample_edges(v, e, points_per_wireframe=0)


def test_parallel_unit_edges_half_apart():
    other = (ONE[0] + [0, 0.5, 0], ONE[1])
    assert hausdorff_distance(*ONE, *other) == 0.5
    assert chamfer_distance(*ONE, *other) == 0.5
    assert chamfer_distance(*ONE, *other, squared=True) == 0.25


def test_chamfer_directions_hand_case():
    long = (np.array([[0.0, 0, 0], [2, 0, 0]]), np.array([[0, 1]]))
    # pred = the first half of the GT edge, sampled at spacing 0.5: pred->gt is 0, gt->pred mean over
    # GT samples x = 0, 0.5, 1, 1.5, 2 of the distance to pred samples {0, 0.5, 1} = (0 + 0 + 0 + 0.5 + 1) / 5
    half = (np.array([[0.0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
    assert chamfer_distance(*half, *long, spacing=0.5, direction="pred_to_gt") == 0.0
    assert chamfer_distance(*half, *long, spacing=0.5, direction="gt_to_pred") == pytest.approx(0.3)
    assert chamfer_distance(*half, *long, spacing=0.5) == pytest.approx(0.15)
    assert hausdorff_distance(*half, *long, spacing=0.5) == 1.0
    with pytest.raises(ValueError, match="direction"):
        chamfer_distance(*half, *long, direction="both")


def test_no_predicted_edge_gives_nan_with_warning():
    with pytest.warns(UserWarning, match="no edge"):
        assert math.isnan(hausdorff_distance(ONE[0], [], *ONE))
    with pytest.warns(UserWarning, match="no edge"):
        assert math.isnan(chamfer_distance(ONE[0], [], *ONE))


# ------------------------------------------------------------------------------------------------ Fig. 1


def test_fig1_split_cube_numbers():
    v, e = cube_wireframe()
    sv, se, added = split_every_edge(v, e, [[0.5]] * 12)
    p = corner_prf(sv, v, threshold=5)
    assert (p.precision, p.recall) == (0.4, 1.0)
    assert p.f1 == pytest.approx(0.5714285714285714, abs=1e-15)
    for matching in ("hausdorff", "endpoint"):
        assert edge_prf(sv, se, v, e, threshold=5, matching=matching).f1 == 0.0
    for radius in (1.0, 10.0, 30.0):
        assert iou(sv, se, v, e, radius=radius) == 1.0
    assert hausdorff_distance(sv, se, v, e) < 1e-12
    assert chamfer_distance(sv, se, v, e) < 1e-12
    assert added == 12


def test_fig1_split_synthetic_house_into_two_or_three_collinear_pieces():
    house = synthetic_house(7)
    v, e = house
    # cut at sample positions of the deterministic sampling (k / c of the edge, c = its number of intervals), so
    # the pieces are sampled at the very same points as the whole edge (spec 5.8)
    lengths = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    spacing = np.sort(lengths).sum() / 1000
    rng = np.random.default_rng(0)
    cuts = []
    for length in lengths:
        c = int(np.ceil(length / spacing))
        ks = np.sort(rng.choice(np.arange(1, c), size=int(rng.integers(1, 3)), replace=False))
        cuts.append(list(ks / c))
    sv, se, added = split_every_edge(v, e, cuts)
    n = len(v)
    scale = float(np.ptp(v, axis=0).max())
    p = corner_prf(sv, v, threshold=0.05)
    assert p.recall == 1.0
    assert p.precision == n / (n + added)
    for matching in ("hausdorff", "endpoint"):
        assert edge_prf(sv, se, v, e, threshold=0.05, matching=matching).f1 == 0.0
    assert iou(sv, se, v, e, radius=0.5) == pytest.approx(1.0, abs=1e-6)
    assert hausdorff_distance(sv, se, v, e) < 1e-9 * scale
    assert chamfer_distance(sv, se, v, e) < 1e-9 * scale
    assert wed(sv, se, v, e) > 0
    assert spectral_distance(sv, se, v, e) > 0
    assert spectral_distance(sv, se, v, e, p=1) > 0
