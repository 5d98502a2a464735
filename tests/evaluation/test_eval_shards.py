"""One unit's views split between processes (parts) and merged on rank 0: the same payload as one process.

The parts are evaluated here one after another, each with its own metric instances (as separate processes have),
so the merging is tested without starting processes; ``test_eval_distributed.py`` runs it through Fabric.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchmetrics import Metric

from scenemetrics import viz
from scenemetrics.evaluation import EvalConfig, discover_units
from scenemetrics.evaluation.shards import merge_parts, split_units
from scenemetrics.evaluation.unit import UnitMetrics, evaluate_unit, view_block
from scenemetrics.registry import get_metric, load_plugins, register_metric, unregister_metric

from .conftest import PLUGIN

NUM_VIEWS = 7
METRICS = ("psnr", "ssim_map", "abs_error", "standin", "standin_scene", "t_ordered")


class _Ordered(Metric):
    """A list state concatenated across processes whose value depends on the order of the views:
    ``sum_i (i + 1) x_i`` over the views' mean intensities ``x_i`` in the order seen."""

    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("means", default=[], dist_reduce_fx="cat")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        self.means.append(preds.double().mean(dim=(1, 2, 3)))

    def compute(self) -> torch.Tensor:
        x = torch.cat(self.means) if isinstance(self.means, list) else self.means
        return (x * torch.arange(1, x.numel() + 1, dtype=x.dtype)).sum()


@pytest.fixture(scope="module")
def unit(tmp_path_factory: pytest.TempPathFactory):
    """One unit of 7 views of different sizes of content (renders = noisy ground truth)."""
    root = tmp_path_factory.mktemp("shards") / "root"
    g = torch.Generator().manual_seed(0)
    for i in range(NUM_VIEWS):
        gt = torch.nn.functional.interpolate(torch.rand(1, 3, 6, 8, generator=g), size=(40, 48), mode="bilinear")[0]
        render = (gt + (0.02 + 0.02 * i) * torch.randn(gt.shape, generator=g)).clamp(0, 1)
        viz.save_png(gt, root / "m" / "s" / "gt" / f"v{i}.png")
        viz.save_png(render, root / "m" / "s" / "renders" / f"v{i}.png")
    (u,) = discover_units(root)
    return u


@pytest.fixture(scope="module")
def setup(unit, tmp_path_factory: pytest.TempPathFactory):
    load_plugins([str(PLUGIN)])
    register_metric("t_ordered", _Ordered, inputs=("gt",), update="paired", per_view=False, replace=True)
    work = tmp_path_factory.mktemp("work")
    config = EvalConfig(root=unit.folder, out=work / "out", metrics=METRICS, max_thumbnails=3, max_panels=2)
    adapters = [get_metric(name) for name in METRICS]
    try:
        yield config, adapters, work
    finally:
        unregister_metric("t_ordered")


def _evaluate(unit, setup, part=None):
    config, adapters, work = setup
    return evaluate_unit(unit, adapters, UnitMetrics(config, torch.device("cpu"), work), config, False, part)


def _merge(unit, setup, parts):
    config, adapters, work = setup
    metrics = UnitMetrics(config, torch.device("cpu"), work)
    return merge_parts(parts, {a.name: a for a in adapters}, metrics, unit.warnings, config.max_panels)


def _pixels(items):
    return [(x[0], np.asarray(x[1]), *x[2:]) for x in items]


@pytest.mark.parametrize("count", [2, 3, 10])  # 10 processes for 7 views: three parts are empty
def test_merged_parts_equal_one_process(unit, setup, count):
    whole = _evaluate(unit, setup)
    parts = [_evaluate(unit, setup, (k, count)) for k in range(count)]
    assert [len(p["metrics"]["psnr"].get("per_view", {})) for p in parts] == [len(view_block(7, k, count))
                                                                             for k in range(count)]  # fmt: skip
    assert all("values" not in p["metrics"]["psnr"] for p in parts)  # parts carry states, not values
    merged = _merge(unit, setup, parts)
    assert merged["processes"] == count
    for name in METRICS:
        got, want = merged["metrics"][name], whole["metrics"][name]
        assert got["status"] == want["status"] == "ok", (name, got)
        assert got.get("per_view") == want.get("per_view")  # each view computed exactly as in one process
        for key, value in want["values"].items():
            assert got["values"][key] == pytest.approx(value, rel=1e-6, abs=1e-9), (name, key)
    # the order-dependent value is exact: the parts' list states are concatenated in view order
    assert merged["metrics"]["t_ordered"]["values"] == whole["metrics"]["t_ordered"]["values"]
    assert torch.equal(merged["states"]["t_ordered"]["means"][0], torch.cat(whole["states"]["t_ordered"]["means"]))
    torch.testing.assert_close(merged["states"]["standin"]["abs_sum"], whole["states"]["standin"]["abs_sum"])
    assert int(merged["states"]["standin"]["count"]) == NUM_VIEWS
    # the unit's first views' thumbnails, the worst views' panels and every object record, as one process
    for name in ("ssim_map", "abs_error"):
        assert [v for v, _ in merged["thumbs"][name]] == ["v0", "v1", "v2"]
        for (va, a), (vb, b) in zip(merged["thumbs"][name], whole["thumbs"][name], strict=True):
            assert va == vb and torch.equal(torch.as_tensor(np.asarray(a)), torch.as_tensor(np.asarray(b)))
        got, want = merged["panels"][name], whole["panels"][name]
        assert [(v, value) for v, _, value in got] == [(v, value) for v, _, value in want] and len(got) == 2
        assert all(np.array_equal(np.asarray(a), np.asarray(b)) for (_, a, _), (_, b, _) in zip(got, want, strict=True))
    assert merged["objects"] == whole["objects"] and len(merged["objects"]["standin"]) == 4 * NUM_VIEWS


def test_a_failed_part_fails_its_metric_only(unit, setup):
    parts = [_evaluate(unit, setup, (k, 2)) for k in range(2)]
    parts[1]["metrics"]["psnr"] = {"status": "error", "error": "ValueError: broken view"}
    merged = _merge(unit, setup, parts)
    assert merged["metrics"]["psnr"] == {"status": "error", "error": "ValueError: broken view"}
    assert "psnr" not in merged["states"] and merged["metrics"]["standin"]["status"] == "ok"


def test_units_left_over_are_shared():
    assert [split_units(n, 2) for n in range(5)] == [0, 0, 2, 2, 4]  # the odd unit out is shared
    assert split_units(1, 8) == 0 and split_units(16, 8) == 16 and split_units(5, 1) == 5
    blocks = [view_block(10, k, 4) for k in range(4)]
    assert [list(b) for b in blocks] == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]  # contiguous, in order, all views
