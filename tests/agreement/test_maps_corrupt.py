"""Map agreement (PuzzleSim protocol) and the wireframe Pool-2 corruptions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scenemetrics.agreement import (
    CORRUPTION_KINDS,
    CORRUPTION_LEVELS,
    CORRUPTION_PARAMS,
    corrupt,
    corruption_pool,
    human_map_from_masks,
    map_agreement,
)
from scenemetrics.wireframe import corner_prf, edge_prf, synthetic_house, synthetic_houses, validate_wireframe


def _human(n: int = 2, h: int = 24, w: int = 32) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.exp(-((xx - w / 3) ** 2 + (yy - h / 2) ** 2) / 60.0)
    base = np.round(base * 64) / 64  # a coarse grid keeps affine maps of it exactly tie-preserving in float64
    return np.stack([base, base[::-1]][:n])


def test_human_map_from_masks() -> None:
    masks = np.zeros((1, 4, 2, 2), dtype=bool)
    masks[0, :3, 0, 0] = True
    masks[0, 0, 1, 1] = True
    np.testing.assert_allclose(human_map_from_masks(masks), [[[0.75, 0], [0, 0.25]]])
    with pytest.raises(ValueError, match="masks must be binary"):
        human_map_from_masks(np.full((1, 2, 2, 2), 0.5))


@pytest.mark.parametrize("pred_is_quality", [True, False])
def test_affine_maps_give_perfect_agreement(pred_is_quality: bool) -> None:
    human = _human()
    pred = (1 - 3 * human) if pred_is_quality else (2 * human + 0.5)
    res = map_agreement(list(pred), human, pred_is_quality=pred_is_quality)
    assert res.plcc == pytest.approx(1, abs=1e-9) and res.srcc == pytest.approx(1, abs=1e-9)
    # the wrong orientation is seen by the rank statistic (the fit cannot rescue SRCC)
    flipped = map_agreement(list(pred), human, pred_is_quality=not pred_is_quality)
    assert flipped.srcc == pytest.approx(-1, abs=1e-9)


def test_resized_ramp_keeps_rank_agreement_and_uses_bilinear() -> None:
    human = np.linspace(0, 1, 96 * 128).reshape(1, 96, 128)
    small = torch.nn.functional.interpolate(torch.from_numpy(human)[None], size=(24, 32), mode="area")[0, 0].numpy()
    res = map_agreement([small], human, pred_is_quality=False, fit="none")
    assert res.srcc > 0.99
    with pytest.raises(ValueError, match="resize='bilinear'"):
        map_agreement([small], human, pred_is_quality=False, resize="none")


def test_groups_means_and_stds() -> None:
    rng = np.random.default_rng(0)
    human = np.clip(rng.random((4, 16, 16)), 0, 1)
    pred = [-(human[k] + rng.normal(0, 0.2 * (k + 1), (16, 16))) for k in range(4)]
    res = map_agreement(pred, human, groups=["a", "a", "b", "b"], fit="none")
    p = [r["plcc"] for r in res.per_image]
    assert res.per_group["a"]["plcc"] == pytest.approx((p[0] + p[1]) / 2)
    assert res.plcc == pytest.approx(np.mean(p)) and res.plcc_std == pytest.approx(np.std(p))
    ga, gb = (p[0] + p[1]) / 2, (p[2] + p[3]) / 2
    assert res.plcc_group_std == pytest.approx(np.std([ga, gb]))
    assert all("krcc" in r for r in res.per_image) and res.n_valid == 4


def test_constant_human_map_is_nan_and_skipped() -> None:
    human = _human()
    human[1] = 0.0
    with pytest.warns(UserWarning, match=r"images \[1\]"):
        res = map_agreement(list(-human), human, fit="none")
    assert math.isnan(res.per_image[1]["plcc"]) and res.n_valid == 1
    assert res.plcc == pytest.approx(res.per_image[0]["plcc"])


def test_map_errors() -> None:
    human = _human()
    with pytest.raises(ValueError, match="same number of maps"):
        map_agreement([human[0]], human)
    with pytest.raises(ValueError, match=r"artifact probabilities in \[0, 1\]"):
        map_agreement(list(human), human * 2)
    with pytest.raises(ValueError, match=r"pred_maps\[0\] must be a 2-D map"):
        map_agreement([human[0][None], human[1]], human)
    with pytest.raises(ValueError, match=r"pred_maps\[0\]\[0, 0\] = nan"):
        bad = human.copy()
        bad[0, 0, 0] = np.nan
        map_agreement(list(bad), human)
    with pytest.raises(ValueError, match="groups must have one label per map"):
        map_agreement(list(human), human, groups=["a"])


# ---------------------------------------------------------------------------------------------- corruptions


def test_counts_follow_the_parameter_table() -> None:
    gt = synthetic_house(0)
    v, e = len(gt.vertices), len(gt.edges)
    for level in CORRUPTION_LEVELS:
        p = {k: CORRUPTION_PARAMS[k][level] for k in CORRUPTION_KINDS}
        add = corrupt(gt, "add", level, seed=1)
        assert len(add.vertices) == v and len(add.edges) == e + math.ceil(p["add"]["f"] * e)
        rem = corrupt(gt, "remove", level, seed=1)
        assert len(rem.vertices) == v - math.ceil(p["remove"]["f"] * v)
        d = corrupt(gt, "deform", level, seed=1)
        split = math.ceil(p["deform"]["f"] * e) * (p["deform"]["k"] - 1)
        assert (len(d.vertices), len(d.edges)) == (v + split, e + split)
        pert = corrupt(gt, "perturb", level, seed=1)
        assert len(pert.edges) == e  # edges are only reassigned
        assert v <= len(pert.vertices) <= v + math.ceil(p["perturb"]["f"] * v) * (p["perturb"]["c"] - 1)


def test_corruptions_are_valid_deterministic_and_keep_recall_or_precision() -> None:
    gt = synthetic_house(3)
    for kind in CORRUPTION_KINDS:
        for level in (*CORRUPTION_LEVELS, "med"):
            a, b = corrupt(gt, kind, level, seed=5), corrupt(gt, kind, level, seed=5)
            np.testing.assert_array_equal(a.vertices, b.vertices)
            np.testing.assert_array_equal(a.edges, b.edges)
            validate_wireframe(a.vertices, a.edges)
    add = corrupt(gt, "add", "high", seed=0)
    assert edge_prf(add.vertices, add.edges, gt.vertices, gt.edges, threshold=0.01).recall == 1.0
    assert corner_prf(add.vertices, gt.vertices, threshold=0.01).recall == 1.0
    rem = corrupt(gt, "remove", "high", seed=0)
    assert edge_prf(rem.vertices, rem.edges, gt.vertices, gt.edges, threshold=0.01).precision == 1.0
    assert corner_prf(rem.vertices, gt.vertices, threshold=0.01).precision == 1.0
    assert corrupt(gt, "add", "low", seed=0).edges.tolist() != corrupt(gt, "add", "low", seed=1).edges.tolist()


def test_severity_is_monotone_on_32_houses() -> None:
    houses = synthetic_houses(32, seed=0)
    for kind in CORRUPTION_KINDS:
        means = []
        for level in CORRUPTION_LEVELS:
            cf, ef = [], []
            for k, gt in enumerate(houses):
                w = corrupt(gt, kind, level, seed=k)
                cf.append(corner_prf(w.vertices, gt.vertices, threshold=0.5).f1)
                ef.append(edge_prf(w.vertices, w.edges, gt.vertices, gt.edges, threshold=0.5).f1)
            means.append((np.mean(cf), np.mean(ef)))
        m = np.array(means)
        assert np.all(np.diff(m[:, 0]) <= 1e-12) and np.all(np.diff(m[:, 1]) <= 1e-12), (kind, m)


def test_pool_and_overrides() -> None:
    gt = synthetic_house(1)
    pool = corruption_pool(gt, seed=2)
    assert sorted(pool) == sorted(f"{k}_{lv}" for k in CORRUPTION_KINDS for lv in CORRUPTION_LEVELS)
    k = CORRUPTION_KINDS.index("remove") * 3 + CORRUPTION_LEVELS.index("high")
    direct = corrupt(gt, "remove", "high", np.random.default_rng([2, k]))
    np.testing.assert_array_equal(pool["remove_high"].edges, direct.edges)
    more = corrupt(gt, "add", "low", seed=0, params={"f": 0.5})
    assert len(more.edges) == len(gt.edges) + math.ceil(0.5 * len(gt.edges))
    with pytest.raises(TypeError):
        CORRUPTION_PARAMS["add"]["low"]["f"] = 0.9  # read-only


def test_corruption_errors() -> None:
    gt = synthetic_house(0)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        corrupt(gt, "twist", "low")
    with pytest.raises(ValueError, match="level must be one of"):
        corrupt(gt, "add", "extreme")
    with pytest.raises(ValueError, match="unknown"):
        corrupt(gt, "add", "low", params={"sigma": 1.0})
    with pytest.raises(ValueError, match="needs at least 3 vertices so that 2 remain"):
        corrupt(([[0, 0, 0], [1, 0, 0]], [[0, 1]]), "remove", "low")
    with pytest.raises(ValueError, match=r"self-loop|itself|loop"):
        corrupt(([[0, 0, 0], [1, 0, 0]], [[0, 0]]), "add", "low")
    with pytest.warns(UserWarning, match="non-adjacent vertex pairs left"):
        full = corrupt(([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1], [1, 2]]), "add", "low", params={"f": 1.0})
    assert len(full.edges) == 3
