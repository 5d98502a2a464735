"""The scalar-metric registry (spec 4) and the synthetic house generator (spec 9)."""

from __future__ import annotations

import numpy as np
import pytest

import scenemetrics.wireframe as W
from scenemetrics.wireframe import (
    METRIC_NAMES,
    TABLE2_COLUMNS,
    make_metric,
    synthetic_house,
    synthetic_houses,
    validate_wireframe,
)


def test_registry_names_and_table2_columns():
    assert len(METRIC_NAMES) == 22 and len(set(METRIC_NAMES)) == 22
    assert [n for n, _ in TABLE2_COLUMNS] == [
        "corner_precision", "corner_recall", "corner_f1", "corner_offset", "edge_precision", "edge_recall",
        "edge_f1", "wed_prereg", "wed_mnn", "wed_nearest", "wed_ap", "spectral_l1", "spectral_l2", "iou",
        "hausdorff", "chamfer",
    ]  # fmt: skip
    assert dict(TABLE2_COLUMNS)["iou"] == "IoU Jaccard"
    assert set(dict(TABLE2_COLUMNS)) <= set(METRIC_NAMES)


def test_every_registry_metric_matches_its_function():
    gv, ge = synthetic_houses(1, seed=4)[0]
    pv = gv + np.random.default_rng(0).normal(0, 0.2, gv.shape)
    pe = ge[:-3]
    direct = {
        "corner_precision": W.corner_prf(pv, gv, 0.5).precision,
        "corner_recall": W.corner_prf(pv, gv, 0.5).recall,
        "corner_f1": W.corner_prf(pv, gv, 0.5).f1,
        "corner_offset": W.corner_offset(pv, gv, 0.5),
        "edge_precision": W.edge_prf(pv, pe, gv, ge, 0.5).precision,
        "edge_recall": W.edge_prf(pv, pe, gv, ge, 0.5).recall,
        "edge_f1": W.edge_prf(pv, pe, gv, ge, 0.5).f1,
        "wed": W.wed(pv, pe, gv, ge),
        "wed_prereg": W.wed(pv, pe, gv, ge, variant="s23dr2024"),
        "wed_mnn": W.wed(pv, pe, gv, ge, variant="mnn"),
        "wed_nearest": W.wed(pv, pe, gv, ge, variant="nearest"),
        "wed_ap": W.wed(pv, pe, gv, ge, variant="ap"),
        "spectral_l1": W.spectral_distance(pv, pe, gv, ge, p=1),
        "spectral_l2": W.spectral_distance(pv, pe, gv, ge, p=2),
        "iou": W.iou(pv, pe, gv, ge, 0.5, resolution=2),
        "jaccard_distance": W.jaccard_distance(pv, pe, gv, ge, 0.5, resolution=2),
        "hausdorff": W.hausdorff_distance(pv, pe, gv, ge),
        "chamfer": W.chamfer_distance(pv, pe, gv, ge),
        "hss": W.hss(pv, pe, gv, ge, iou_mode="voxel").hss,
        "corner_chamfer": W.corner_chamfer(pv, gv),
        "corner_matching": W.corner_matching_distance(pv, gv),
        "edge_matching": W.edge_matching_distance(pv, pe, gv, ge),
    }
    assert set(direct) == set(METRIC_NAMES)
    lower = {"corner_offset", "wed", "wed_prereg", "wed_mnn", "wed_nearest", "wed_ap", "spectral_l1",
             "spectral_l2", "jaccard_distance", "hausdorff", "chamfer", "corner_chamfer", "corner_matching",
             "edge_matching"}  # fmt: skip
    for name, value in direct.items():
        opts = {}
        if name.startswith(("corner", "edge")) and name not in ("corner_chamfer", "corner_matching", "edge_matching"):
            opts["threshold"] = 0.5
        if name in ("iou", "jaccard_distance"):
            opts.update(radius=0.5, resolution=2)
        if name == "hss":
            opts["iou_mode"] = "voxel"
        m = make_metric(name, **opts)
        assert m(pv, pe, gv, ge) == value, name
        assert m.name == name and m.higher_is_better == (name not in lower)
        assert isinstance(m(pv, pe, gv, ge), float)


def test_make_metric_errors_and_options():
    with pytest.raises(ValueError, match="unknown wireframe metric"):
        make_metric("edge_iou")
    with pytest.raises(ValueError, match="needs the option"):
        make_metric("edge_f1")
    with pytest.raises(ValueError, match="needs the option"):
        make_metric("iou")
    with pytest.raises(TypeError, match="takes no option"):
        make_metric("wed", threshold=0.5)
    with pytest.raises(TypeError, match="takes no option"):
        make_metric("wed_prereg", variant="corrected")  # fixed by the name
    with pytest.raises(TypeError, match="takes no option"):
        make_metric("spectral_l1", p=2)
    m = make_metric("edge_f1", threshold=0.5, matching="endpoint")
    assert m.options == {"threshold": 0.5, "matching": "endpoint"}
    assert "matching='endpoint'" in repr(m)
    assert make_metric("corner_f1", threshold=1).group_key == make_metric("corner_recall", threshold=1).group_key


@pytest.mark.parametrize("roof", ["gable", "hip"])
def test_synthetic_house_structure(roof):
    for seed in range(5):
        v, e = synthetic_house(seed, roof=roof)
        assert v.shape == (18, 3) and e.shape == (29, 2)
        validate_wireframe(v, e)
        assert np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1).min() > 0.3
        d = np.linalg.norm(v[:, None] - v[None], axis=-1) + np.eye(18) * 1e9
        assert d.min() > 0.3  # no duplicate vertices
        ridge = v[8:10]
        assert np.allclose(ridge[0, 2], ridge[1, 2])
        assert ridge[0, 2] > v[:8, 2].max() + 1.4
        gable_vertical = np.isclose(np.linalg.norm((ridge[0] - v[4])[:2]), np.linalg.norm((v[7] - v[4])[:2]) / 2)
        assert gable_vertical == (roof == "gable")
    v, e = synthetic_house(0, roof=roof, annex=False)
    assert v.shape == (10, 3) and e.shape == (17, 2)


def test_synthetic_house_ranges_and_scale():
    v, _ = synthetic_house(3, annex=False)
    # rotation about z keeps heights and footprint; wall height in [2.5, 6] over the base
    base = v[:4, 2]
    assert np.allclose(base, base[0]) and 0.0 <= base[0] <= 2.0
    assert 2.5 <= v[4, 2] - base[0] <= 6.0
    w = np.linalg.norm(v[1] - v[0])
    d = np.linalg.norm(v[3] - v[0])
    assert 8.0 <= w <= 14.0 and 6.0 <= d <= min(10.0, w - 1.0)
    v100, _ = synthetic_house(3, annex=False, scale=100.0)
    assert np.allclose(v100, 100.0 * v)


def test_synthetic_houses_seeding_and_errors():
    a = synthetic_houses(3, seed=2)
    b = synthetic_houses(3, seed=2)
    assert all(np.array_equal(x.vertices, y.vertices) for x, y in zip(a, b, strict=True))
    assert np.array_equal(a[1].vertices, synthetic_house(np.random.default_rng([2, 1])).vertices)
    assert not np.array_equal(a[0].vertices, synthetic_houses(1, seed=3)[0].vertices)
    rng = np.random.default_rng(0)
    assert not np.array_equal(synthetic_house(rng).vertices, synthetic_house(rng).vertices)
    with pytest.raises(ValueError, match="roof"):
        synthetic_house(0, roof="flat")
    with pytest.raises(ValueError, match="scale"):
        synthetic_house(0, scale=0)
    with pytest.raises(ValueError, match="`n` must be"):
        synthetic_houses(-1)
