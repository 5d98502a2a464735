"""One-to-one (Hungarian) corner/edge distances against brute-force definitions, next to the Chamfer forms."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import scenemetrics.wireframe.matching as matching_module
from scenemetrics.cli import main
from scenemetrics.wireframe import (
    WireframeMetrics,
    chamfer_distance,
    corner_chamfer,
    corner_matching_distance,
    edge_matching_distance,
    make_metric,
    matched_distances,
    sample_edges,
    synthetic_houses,
)


def _dist(p, q) -> float:
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(p, q, strict=True)))


def _brute_force(a: np.ndarray, b: np.ndarray, direction: str = "symmetric") -> float:
    """The definition, by enumerating every injective map of the smaller set into the larger one."""
    a_l, b_l = a.tolist(), b.tolist()
    swap = len(a_l) > len(b_l)
    small, large = (b_l, a_l) if swap else (a_l, b_l)
    best, best_map = math.inf, None
    for perm in itertools.permutations(range(len(large)), len(small)):
        cost = sum(_dist(small[i], large[j]) for i, j in enumerate(perm))
        if cost < best:
            best, best_map = cost, perm
    small_charge = [_dist(small[i], large[j]) for i, j in enumerate(best_map)]
    partner = {j: i for i, j in enumerate(best_map)}
    large_charge = [
        _dist(large[j], small[partner[j]]) if j in partner else min(_dist(large[j], s) for s in small)
        for j in range(len(large))
    ]
    charge_a, charge_b = (large_charge, small_charge) if swap else (small_charge, large_charge)
    mean_a, mean_b = sum(charge_a) / len(charge_a), sum(charge_b) / len(charge_b)
    return {"pred_to_gt": mean_a, "gt_to_pred": mean_b, "symmetric": 0.5 * (mean_a + mean_b)}[direction]


def _chamfer_loop(a: np.ndarray, b: np.ndarray) -> float:
    d_a = [min(_dist(p, q) for q in b.tolist()) for p in a.tolist()]
    d_b = [min(_dist(q, p) for p in a.tolist()) for q in b.tolist()]
    return 0.5 * (sum(d_a) / len(d_a) + sum(d_b) / len(d_b))


@pytest.mark.parametrize("n_pred, n_gt", [(1, 1), (1, 4), (4, 1), (3, 3), (5, 3), (3, 5), (5, 5), (2, 6)])
@pytest.mark.parametrize("seed", range(4))
def test_corner_matching_equals_the_brute_force_definition(n_pred, n_gt, seed):
    rng = np.random.default_rng([seed, n_pred, n_gt])
    pred, gt = rng.uniform(0, 1, (n_pred, 3)), rng.uniform(0, 1, (n_gt, 3))
    for direction in ("symmetric", "pred_to_gt", "gt_to_pred"):
        got = corner_matching_distance(pred, gt, direction=direction)
        assert got == pytest.approx(_brute_force(pred, gt, direction), rel=1e-12, abs=1e-15)
    assert corner_chamfer(pred, gt) == pytest.approx(_chamfer_loop(pred, gt), rel=1e-12)
    # every charge is at least the nearest-neighbour distance
    assert corner_matching_distance(pred, gt) >= corner_chamfer(pred, gt) - 1e-15


def test_hand_computed_corner_example():
    # both predicted corners sit near GT corner 0; Chamfer lets both use it, the matching sends one to GT corner 1
    pred, gt = [[0, 0, 0], [0.1, 0, 0]], [[0, 0, 0], [1, 0, 0]]
    assert corner_chamfer(pred, gt) == pytest.approx(0.5 * (0.05 + 0.45))
    assert corner_matching_distance(pred, gt) == pytest.approx(0.45)  # pairs (0, 0) and (0.1, 1): mean 0.45
    d_a, d_b = matched_distances(pred, gt)
    np.testing.assert_allclose(d_a, [0.0, 0.9])
    np.testing.assert_allclose(d_b, [0.0, 0.9])


def test_unmatched_surplus_point_pays_its_nearest_neighbour_distance():
    # 3 predicted corners, 2 GT corners: (0,0,0)-(0,0,0) and (1,0,0)-(1.1,0,0) are matched, (5,0,0) is left over and
    # pays 3.9 (to (1.1,0,0))
    pred, gt = [[0, 0, 0], [1, 0, 0], [5, 0, 0]], [[0, 0, 0], [1.1, 0, 0]]
    d_a, d_b = matched_distances(pred, gt)
    np.testing.assert_allclose(d_a, [0.0, 0.1, 3.9])
    np.testing.assert_allclose(d_b, [0.0, 0.1])
    assert corner_matching_distance(pred, gt) == pytest.approx(0.5 * (4.0 / 3 + 0.05))


def test_equal_sizes_give_the_mean_assignment_distance_and_nn_one_to_one_gives_chamfer():
    gv, _ = synthetic_houses(1, seed=2)[0]
    rng = np.random.default_rng(0)
    pv = gv + rng.normal(0, 0.01, gv.shape)  # tiny noise: the nearest-neighbour map is a bijection
    d = np.linalg.norm(pv - gv, axis=1)
    assert corner_matching_distance(pv, gv) == pytest.approx(d.mean(), rel=1e-12)
    assert corner_matching_distance(pv, gv) == pytest.approx(corner_chamfer(pv, gv), rel=1e-12)
    # a relabelled copy is exactly 0 for both forms
    perm = rng.permutation(len(gv))
    assert corner_matching_distance(gv[perm], gv) == 0.0
    assert corner_chamfer(gv[perm], gv) == 0.0


def test_symmetry_swaps_the_directions():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0, 1, (6, 3)), rng.uniform(0, 1, (4, 3))
    for fn in (corner_matching_distance, corner_chamfer):
        assert fn(a, b) == pytest.approx(fn(b, a), rel=1e-12)
        assert fn(a, b, direction="pred_to_gt") == pytest.approx(fn(b, a, direction="gt_to_pred"), rel=1e-12)


def test_edge_matching_brute_force_on_endpoint_samples():
    # a spacing longer than every edge samples each edge at its two ends only: tiny sets for the brute force
    pv, pe = [[0, 0, 0], [1, 0.2, 0], [1, 1, 0.1]], [[0, 1], [1, 2]]
    gv, ge = [[0, 0.1, 0], [1, 0, 0], [0.9, 1.1, 0], [2, 0, 0]], [[0, 1], [1, 2], [1, 3]]
    a = sample_edges(pv, pe, spacing=10.0)
    b = sample_edges(gv, ge, spacing=10.0)
    assert len(a) == 4 and len(b) == 6
    got = edge_matching_distance(pv, pe, gv, ge, spacing=10.0)
    assert got == pytest.approx(_brute_force(a, b), rel=1e-12)
    assert chamfer_distance(pv, pe, gv, ge, spacing=10.0) == pytest.approx(_chamfer_loop(a, b), rel=1e-12)


def test_edge_matching_sees_a_half_prediction_that_chamfer_forgives():
    # GT: one edge of length 2 on the x axis; prediction: its first half. On a line with equal counts the optimal
    # assignment is the sorted one (an independent 1-D computation).
    gv, ge = [[0, 0, 0], [2, 0, 0]], [[0, 1]]
    pv, pe = [[0, 0, 0], [1, 0, 0]], [[0, 1]]
    a = sample_edges(pv, pe, points_per_wireframe=200)
    b = sample_edges(gv, ge, points_per_wireframe=200)
    assert len(a) == len(b)
    sorted_mean = float(np.mean(np.abs(np.sort(a[:, 0]) - np.sort(b[:, 0]))))
    got = edge_matching_distance(pv, pe, gv, ge, points_per_wireframe=200)
    assert got == pytest.approx(sorted_mean, rel=1e-9)
    assert got == pytest.approx(0.5, rel=1e-9)  # sample k at 0.005 k vs 0.01 k
    cham = chamfer_distance(pv, pe, gv, ge, points_per_wireframe=200)
    assert cham < 0.3 * got  # Chamfer: pred->GT about 0.0025, GT->pred about 0.25
    assert edge_matching_distance(pv, pe, gv, ge, points_per_wireframe=200, direction="pred_to_gt") > 0.4
    # every predicted sample lies within half a GT spacing of a GT sample
    assert chamfer_distance(pv, pe, gv, ge, points_per_wireframe=200, direction="pred_to_gt") <= 0.005 + 1e-12


def test_edge_matching_parallel_edges_and_relabelled_copy():
    assert edge_matching_distance(
        [[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0.5, 0], [1, 0.5, 0]], [[0, 1]]
    ) == pytest.approx(0.5, rel=1e-12)
    gv, ge = synthetic_houses(1, seed=1)[0]
    perm = np.random.default_rng(3).permutation(len(gv))
    inv = np.argsort(perm)
    flipped = inv[ge][:, ::-1]
    assert edge_matching_distance(gv[perm], flipped, gv, ge, points_per_wireframe=300) == 0.0
    rng = np.random.default_rng(4)
    pv = gv + rng.normal(0, 0.3, gv.shape)
    m = edge_matching_distance(pv, ge[:-5], gv, ge, points_per_wireframe=300)
    assert m == pytest.approx(edge_matching_distance(gv, ge, pv, ge[:-5], points_per_wireframe=300), rel=1e-12)
    assert m >= chamfer_distance(pv, ge[:-5], gv, ge, points_per_wireframe=300)


def test_degenerate_inputs():
    with pytest.warns(UserWarning, match="no vertex"):
        assert math.isnan(corner_matching_distance(np.zeros((0, 3)), [[0, 0, 0]]))
    with pytest.warns(UserWarning, match="no vertex"):
        assert math.isnan(corner_chamfer([], [[0, 0, 0]]))
    with pytest.raises(ValueError, match="gt_vertices is empty"):
        corner_matching_distance([[0, 0, 0]], np.zeros((0, 3)))
    with pytest.warns(UserWarning, match="no edge"):
        assert math.isnan(edge_matching_distance([[0, 0, 0]], [], [[0, 0, 0], [1, 0, 0]], [[0, 1]]))
    with pytest.raises(ValueError, match="gt_edges is empty"):
        edge_matching_distance([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0, 0]], [])
    with pytest.raises(ValueError, match="direction"):
        corner_matching_distance([[0, 0, 0]], [[0, 0, 0]], direction="both")
    with pytest.raises(ValueError, match="spacing"):
        edge_matching_distance([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0, 0], [1, 0, 0]], [[0, 1]], spacing=-1.0)
    with pytest.raises(ValueError, match="non-empty"):
        matched_distances(np.zeros((0, 3)), [[0, 0, 0]])
    with pytest.raises(ValueError, match="pred_vertices"):
        corner_matching_distance([[0, 0]], [[0, 0, 0]])


def test_too_many_samples_raise(monkeypatch):
    monkeypatch.setattr(matching_module, "MAX_MATRIX_ENTRIES", 100)
    v, e = [[0, 0, 0], [1, 0, 0]], [[0, 1]]
    with pytest.raises(ValueError, match="larger `spacing`"):
        edge_matching_distance(v, e, v, e, points_per_wireframe=20)


def test_registry_metric_class_and_cli(tmp_path, capsys):
    houses = synthetic_houses(2, seed=7)
    rng = np.random.default_rng(2)
    preds = [(v + rng.normal(0, 0.2, v.shape), e[:-2]) for v, e in houses]
    direct = {
        "corner_chamfer": [corner_chamfer(p[0], g[0]) for p, g in zip(preds, houses, strict=True)],
        "corner_matching": [corner_matching_distance(p[0], g[0]) for p, g in zip(preds, houses, strict=True)],
        "edge_matching": [edge_matching_distance(*p, *g) for p, g in zip(preds, houses, strict=True)],
    }
    for name, values in direct.items():
        metric = make_metric(name)
        assert metric.higher_is_better is False
        assert [metric(*p, *g) for p, g in zip(preds, houses, strict=True)] == values
    wm = WireframeMetrics(tuple(direct))
    wm.update(preds, houses)
    out = wm.compute()
    for name, values in direct.items():
        assert float(out[name]) == pytest.approx(np.mean(values), rel=1e-12)

    def dump(path, items):
        path.write_text(json.dumps([{"vertices": np.asarray(v).tolist(), "edges": np.asarray(e).tolist()}
                                    for v, e in items]))  # fmt: skip
        return str(path)

    code = main(["wireframe", "eval", "--pred", dump(tmp_path / "p.json", preds), "--gt",
                 dump(tmp_path / "g.json", houses), "--metrics", *direct, "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "o" / "wireframe_eval.json").read_text())
    for name, values in direct.items():
        assert [row[name] for row in doc["per_house"]] == pytest.approx(values, rel=1e-12)
    with pytest.raises(TypeError, match="takes no option"):
        make_metric("corner_matching", threshold=0.5)
