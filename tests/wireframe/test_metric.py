"""WireframeMetrics: macro/micro averages against direct calls, NaN skipping, state sync, reset, errors."""

from __future__ import annotations

import math
import warnings
from unittest import mock

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

import scenemetrics as sm
from scenemetrics.wireframe import (
    METRIC_NAMES,
    Wireframe,
    WireframeMetrics,
    corner_offset,
    corner_prf,
    edge_prf,
    make_metric,
    synthetic_houses,
    wed,
)


@pytest.fixture(scope="module")
def pairs():
    gts = synthetic_houses(3, seed=1)
    rng = np.random.default_rng(0)
    preds = []
    for k, (v, e) in enumerate(gts):
        pv = v + rng.normal(0.0, 0.3, v.shape)
        preds.append(Wireframe(pv[: len(v) - k], e[(e < len(v) - k).all(axis=1)][: 20 + 3 * k]))
    return preds, gts


def test_top_level_name():
    assert sm.WireframeMetrics is WireframeMetrics
    m = WireframeMetrics(threshold=0.5)
    assert m.metric_names == (
        "corner_precision",
        "corner_recall",
        "corner_f1",
        "edge_precision",
        "edge_recall",
        "edge_f1",
        "wed",
    )
    assert m.is_differentiable is False and m.full_state_update is False


def test_macro_average_matches_direct_calls(pairs):
    preds, gts = pairs
    m = WireframeMetrics(threshold=0.5)
    for p, g in zip(preds, gts, strict=True):
        m.update(p, g)
    out = m.compute()
    corners = [corner_prf(p.vertices, g.vertices, 0.5) for p, g in zip(preds, gts, strict=True)]
    edges = [edge_prf(*p, *g, 0.5) for p, g in zip(preds, gts, strict=True)]
    weds = [wed(*p, *g) for p, g in zip(preds, gts, strict=True)]
    for field in ("precision", "recall", "f1"):
        assert out[f"corner_{field}"].item() == pytest.approx(np.mean([getattr(c, field) for c in corners]), abs=1e-15)
        assert out[f"edge_{field}"].item() == pytest.approx(np.mean([getattr(c, field) for c in edges]), abs=1e-15)
    assert out["wed"].item() == pytest.approx(np.mean(weds), abs=1e-15)
    assert all(v.dtype == torch.float64 and v.ndim == 0 for v in out.values())
    assert len(m.last_values) == 1 and m.last_values[0]["wed"] == weds[-1]


def test_micro_average_sums_counts(pairs):
    preds, gts = pairs
    m = WireframeMetrics(("corner_f1", "edge_precision", "edge_recall", "wed"), threshold=0.5, average="micro")
    m.update(list(preds), list(gts))  # one batched update
    out = m.compute()
    corners = [corner_prf(p.vertices, g.vertices, 0.5) for p, g in zip(preds, gts, strict=True)]
    edges = [edge_prf(*p, *g, 0.5) for p, g in zip(preds, gts, strict=True)]
    tp, npred, ngt = (sum(getattr(c, k) for c in corners) for k in ("tp", "n_pred", "n_gt"))
    prec, rec = tp / npred, tp / ngt
    assert out["corner_f1"].item() == pytest.approx(2 * prec * rec / (prec + rec), abs=1e-15)
    etp, enp, eng = (sum(getattr(c, k) for c in edges) for k in ("tp", "n_pred", "n_gt"))
    assert out["edge_precision"].item() == pytest.approx(etp / enp, abs=1e-15)
    assert out["edge_recall"].item() == pytest.approx(etp / eng, abs=1e-15)
    assert out["wed"].item() == pytest.approx(np.mean([wed(*p, *g) for p, g in zip(preds, gts, strict=True)]))
    assert len(m.last_values) == 3


def test_shared_function_is_called_once_per_house(pairs):
    preds, gts = pairs
    m = WireframeMetrics(("corner_precision", "corner_recall", "corner_f1", "edge_f1"), threshold=0.5)
    lsa = mock.Mock(wraps=linear_sum_assignment)
    with (
        mock.patch("scenemetrics.wireframe.corners.linear_sum_assignment", lsa),
        mock.patch("scenemetrics.wireframe.edges.linear_sum_assignment", lsa),
    ):
        m.update(preds[0], gts[0])
    assert lsa.call_count == 2  # one corner assignment + one edge assignment


def test_nan_values_are_skipped_and_counted(pairs):
    preds, gts = pairs
    far = Wireframe(preds[0].vertices + 100.0, preds[0].edges)
    m = WireframeMetrics(("corner_offset", "hausdorff"), threshold=0.5)
    with pytest.warns(UserWarning):
        m.update([far, Wireframe(preds[1].vertices, np.zeros((0, 2), int)), preds[2]], list(gts))
    assert math.isnan(m.last_values[0]["corner_offset"]) and math.isnan(m.last_values[1]["hausdorff"])
    with pytest.warns(UserWarning, match=r"NaN values were skipped.*corner_offset: 1.*hausdorff: 1"):
        out = m.compute()
    expected = np.mean([corner_offset(p.vertices, g.vertices, 0.5) for p, g in zip(preds[1:], gts[1:], strict=True)])
    assert out["corner_offset"].item() == pytest.approx(expected, abs=1e-15)
    assert m.nan_corner_offset.item() == 1 and m.count_corner_offset.item() == 2


def test_compute_before_update_is_nan_with_warning():
    m = WireframeMetrics(("wed", "edge_f1"), threshold=0.5, average="micro")
    with pytest.warns(UserWarning):
        out = m.compute()
    assert all(math.isnan(v.item()) for v in out.values())


def test_reset(pairs):
    preds, gts = pairs
    m = WireframeMetrics(("wed",))
    m.update(preds[0], gts[0])
    m.reset()
    assert m.count_wed.item() == 0 and m.last_values == []
    m.update(preds[1], gts[1])
    assert m.compute()["wed"].item() == pytest.approx(wed(*preds[1], *gts[1]))


def test_state_sync_of_two_simulated_processes(pairs):
    preds, gts = pairs
    names = ("corner_f1", "edge_recall", "wed", "spectral_l1")
    other = WireframeMetrics(names, threshold=0.5, average="micro")  # "rank 1"

    def all_gather(tensor, group=None):  # what torch.distributed would return on rank 0
        key = next(k for k in rank0._defaults if getattr(rank0, k) is tensor)
        return [tensor.clone(), getattr(other, key).clone()]

    rank0 = WireframeMetrics(
        names, threshold=0.5, average="micro", dist_sync_fn=all_gather, distributed_available_fn=lambda: True
    )
    rank0.update(preds[0], gts[0])
    other.update(list(preds[1:]), list(gts[1:]))
    synced = rank0.compute()
    assert rank0.count_wed.item() == 1  # the local state is restored after compute
    single = WireframeMetrics(names, threshold=0.5, average="micro")
    single.update(list(preds), list(gts))
    reference = single.compute()
    for k in names:
        assert synced[k].item() == pytest.approx(reference[k].item(), abs=1e-15), k
    local = WireframeMetrics(names, threshold=0.5, average="micro")
    local.update(preds[0], gts[0])
    assert local.compute()["wed"].item() != pytest.approx(reference["wed"].item())  # the sync did something


def test_constructor_errors():
    with pytest.raises(ValueError, match="needs the option"):
        WireframeMetrics()  # corner/edge defaults need threshold
    with pytest.raises(ValueError, match="radius"):
        WireframeMetrics(("iou",))
    with pytest.raises(ValueError, match="unknown wireframe metric"):
        WireframeMetrics(("f1",), threshold=1.0)
    with pytest.raises(ValueError, match="duplicate"):
        WireframeMetrics(("wed", "wed"))
    with pytest.raises(ValueError, match="average"):
        WireframeMetrics(("wed",), average="weighted")
    with pytest.raises(ValueError, match="not requested"):
        WireframeMetrics(("wed",), metric_options={"edge_f1": {"matching": "endpoint"}})
    with pytest.raises(TypeError, match="takes no option"):
        WireframeMetrics(("wed",), metric_options={"wed": {"threshold": 1.0}})
    assert set(
        WireframeMetrics(tuple(n for n in METRIC_NAMES if n != "hss"), threshold=0.5, radius=0.5).metric_names
    ) == set(METRIC_NAMES) - {"hss"}


def test_metric_options_and_input_forms(pairs):
    preds, gts = pairs
    p, g = preds[0], gts[0]
    m = WireframeMetrics(
        ("edge_f1", "wed"), threshold=0.5, metric_options={"edge_f1": {"matching": "endpoint"}, "wed": {"cv_ins": 2.0}}
    )
    m.update(
        {"wf_vertices": torch.tensor(p.vertices), "wf_edges": torch.tensor(p.edges)},
        (g.vertices.tolist(), g.edges.tolist()),
    )
    out = m.compute()
    assert out["edge_f1"].item() == edge_prf(*p, *g, 0.5, matching="endpoint").f1
    assert out["wed"].item() == pytest.approx(wed(*p, *g, cv_ins=2.0), abs=1e-15)


def test_update_errors(pairs):
    preds, gts = pairs
    m = WireframeMetrics(("wed",))
    with pytest.raises(ValueError, match="preds has 2 houses but targets has 3"):
        m.update(list(preds[:2]), list(gts))
    bad = Wireframe(np.vstack([preds[0].vertices[:-1], [[np.nan, 0, 0]]]), preds[0].edges)
    with pytest.raises(ValueError, match=r"house 1: pred_vertices\[\d+\]"):
        m.update([preds[0], bad], list(gts[:2]))
    with pytest.raises(TypeError, match="preds must be"):
        m.update(np.zeros((3, 3)), gts[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.update(preds[0], gts[0])


def test_forward_returns_the_batch_value_and_accumulates(pairs):
    preds, gts = pairs
    m = WireframeMetrics(("wed",))
    batch = m(preds[0], gts[0])
    assert batch["wed"].item() == pytest.approx(wed(*preds[0], *gts[0]))
    m(preds[1], gts[1])
    expected = (wed(*preds[0], *gts[0]) + wed(*preds[1], *gts[1])) / 2
    assert m.compute()["wed"].item() == pytest.approx(expected)


def test_plot(pairs):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    preds, gts = pairs
    m = WireframeMetrics(("corner_f1", "wed"), threshold=0.5)
    m.update(preds[0], gts[0])
    fig, ax = m.plot()
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure) and isinstance(ax, Axes) and ax.figure is fig
    assert ax.lines or ax.collections or ax.patches or ax.texts  # something was drawn


def test_metrics_with_fixed_options_do_not_share_a_call(pairs):
    preds, gts = pairs
    names = ("wed", "wed_prereg", "wed_mnn", "wed_nearest", "wed_ap", "spectral_l1", "spectral_l2", "iou",
             "jaccard_distance")  # fmt: skip
    m = WireframeMetrics(names, radius=0.5, metric_options={"iou": {"resolution": 2},
                                                            "jaccard_distance": {"resolution": 2}})  # fmt: skip
    m.update(preds[0], gts[0])
    got = {k: v.item() for k, v in m.compute().items()}
    for name in names:
        opts = {"radius": 0.5, "resolution": 2} if name in ("iou", "jaccard_distance") else {}
        assert got[name] == make_metric(name, **opts)(*preds[0], *gts[0]), name
    assert len(m._groups) == 8  # iou and jaccard_distance share one call
