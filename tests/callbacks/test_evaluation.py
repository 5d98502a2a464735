"""Framework-neutral pieces: view checks, update dispatch (PuzzleSim, PRISM, OSIM stand-ins), scalars and images."""

from __future__ import annotations

import math
import subprocess
import sys
import types
import warnings

import pytest
import torch
import torchmetrics

import scenemetrics as sm
from scenemetrics.callbacks import RenderedView
from scenemetrics.callbacks.evaluation import MetricRunner, evenly_spaced, scalars_from_value
from scenemetrics.callbacks.pictures import draw_map
from scenemetrics.callbacks.views import as_rendered_view, prepare_view
from scenemetrics.registry import MetricConfig, metric_kind
from scenemetrics.viz import DisplayRange, apply_colormap, to_uint8
from tests.utils.display_range import first_range
from tests.utils.standin_metrics import OSIM, PRISMMMD, MeanRender, PRISMDistance


@pytest.fixture
def weights(tmp_path):
    return sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")


def _views(n: int = 3, size: tuple[int, int] = (24, 32), seed: int = 0) -> list[RenderedView]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        render = torch.rand(3, *size, generator=g)
        target = (render + 0.1 * torch.randn(3, *size, generator=g)).clamp(0, 1)
        extras = {"source": torch.rand(3, *size, generator=g), "pose": torch.tensor([10.0, 30.0, 0.0])}
        out.append(RenderedView(render, target, extras))
    return out


def _run(runner: MetricRunner, views: list[RenderedView], collect: bool = True):
    runner.begin(collect_images=collect)
    for i, v in enumerate(views):
        runner.update(i, prepare_view(v, "test", i))
    return runner.finish()


def test_dispatch_scalars_and_images(weights, monkeypatch) -> None:
    drawn = []

    def fake_draw(image, result, *, image_index=0, threshold=None, title=None):
        drawn.append((image.clone(), result, image_index, threshold, title))
        return types.SimpleNamespace(image=torch.full((3, *image.shape[-2:]), 7, dtype=torch.uint8))

    monkeypatch.setattr(sm.osim, "low_objects_picture", fake_draw, raising=False)
    views = _views(3, size=(24, 24))  # square: the PRISM stand-ins are declared square, as PRISM is
    refs = torch.rand(5, 3, 24, 32, generator=torch.Generator().manual_seed(9))
    metrics = {
        "puzzlesim": sm.PuzzleSim(refs, weights_path=weights),
        "prism_mmd": PRISMMMD(),
        "prism": PRISMDistance(),
        "osim": OSIM(),
        "psnr": torchmetrics.image.PeakSignalNoiseRatio(data_range=1.0),
    }
    assert [metric_kind(m) for m in metrics.values()] == [
        "references",
        "prism_mmd",
        "prism_distance",
        "paired",
        "paired",
    ]
    runner = MetricRunner(metrics, max_logged_images=2)
    result = _run(runner, views)

    # PRISM stand-ins got (source, pred[, target], pose) with the (3,H,W) source unsqueezed to a batch
    assert metrics["prism_mmd"].calls == [((1, 3, 24, 24), (1, 3, 24, 24), (3,))] * 3
    assert metrics["prism"].calls == [((1, 3, 24, 24), (1, 3, 24, 24), (1, 3, 24, 24), (3,))] * 3
    renders = torch.stack([v.render for v in views])
    targets = torch.stack([v.target for v in views])
    mse = ((renders.double() - targets.double()) ** 2).mean()
    assert result.scalars["scenemetrics/psnr"] == pytest.approx(10 * math.log10(1 / float(mse)), rel=1e-4)
    l1 = (renders.double() - targets.double()).abs().mean(dim=(1, 2, 3)).mean()
    assert result.scalars["scenemetrics/prism/mean"] == pytest.approx(float(l1), rel=1e-5)
    assert result.scalars["scenemetrics/prism/nested/double"] == pytest.approx(2 * float(l1), rel=1e-5)
    assert result.scalars["scenemetrics/osim"] == pytest.approx(1 - float(l1), rel=1e-5)
    assert result.scalars["scenemetrics/osim/class/potted_plant"] == pytest.approx(1 - float(l1), rel=1e-5)
    assert result.scalars["scenemetrics/osim/class/cup"] == pytest.approx((1 - float(l1)) / 2, rel=1e-5)
    expected_mmd = float(renders.mean(dim=(2, 3)).mean() - torch.stack([v.extras["source"] for v in views]).mean())
    assert result.scalars["scenemetrics/prism_mmd"] == pytest.approx(expected_mmd, abs=1e-6)
    independent = sm.PuzzleSim(refs, weights_path=weights)
    independent.update(renders)
    assert result.scalars["scenemetrics/puzzlesim"] == pytest.approx(float(independent.compute()), abs=1e-6)

    # images: PuzzleSim maps and render | target | error panels of views 0 and 1 (max_logged_images=2), the panel of
    # view 0 over time, OSIM overlays drawn after compute
    assert sorted(result.images) == [
        "scenemetrics/osim/overlay/0",
        "scenemetrics/osim/overlay/1",
        "scenemetrics/panel/0",
        "scenemetrics/panel/1",
        "scenemetrics/panel_over_time/0",
        "scenemetrics/puzzlesim/map/0",
        "scenemetrics/puzzlesim/map/1",
    ]
    single = sm.PuzzleSim(refs, weights_path=weights)
    single.update(views[1].render)
    # the logged map is the picture for people: the map on its 2nd-98th percentile widened to include 1 (a
    # similarity), title and colour bar
    values = single.last_maps[0]
    expected = first_range(values, higher_is_better=True)
    assert result.display_ranges["scenemetrics/puzzlesim/map/1"] == pytest.approx(expected, abs=1e-7)
    rng = DisplayRange(*expected)
    picture = draw_map(values, "puzzlesim", 1, step=None, display_range=rng, colormap="jet_r")
    logged = result.images["scenemetrics/puzzlesim/map/1"]
    assert logged.shape[2] == picture.image.shape[2]  # the notes under the map may wrap differently
    x0, y0, x1, y1 = picture.tiles[0]["box"]
    s = picture.tiles[0]["scale"]
    expected_map = apply_colormap(values, "jet_r", *expected)
    assert torch.equal(logged[:, y0:y1:s, x0:x1:s], expected_map)
    assert [d[2] for d in drawn] == [0, 0]
    assert all(d[3] == pytest.approx(result.scalars["scenemetrics/osim"]) for d in drawn)
    assert "objects below the scene score" in drawn[0][4]
    assert torch.equal(drawn[0][0], views[0].render)
    assert torch.equal(result.images["scenemetrics/osim/overlay/0"], torch.full((3, 24, 24), 7, dtype=torch.uint8))


def test_second_evaluation_resets_and_no_images_when_not_collecting(weights) -> None:
    metric = MeanRender()
    runner = MetricRunner({"mean": metric}, log_renders=True, max_logged_images=1, panel_map=None)
    views = _views(2)
    first = _run(runner, views)
    assert list(first.images) == ["scenemetrics/render/0"]
    assert torch.equal(first.images["scenemetrics/render/0"], to_uint8(views[0].render))
    second = _run(runner, views[:1], collect=False)
    assert second.images == {}
    assert second.scalars["scenemetrics/mean"] == pytest.approx(float(views[0].render.mean()), rel=1e-6)


def test_missing_target_skips_and_warns_once() -> None:
    psnr = torchmetrics.image.PeakSignalNoiseRatio(data_range=1.0)
    mean = MeanRender()
    runner = MetricRunner({"psnr": psnr, "mean": mean}, update_fns={"mean": lambda m, r, t, e: m.update(r)})
    views = [RenderedView(v.render) for v in _views(2)]
    with pytest.warns(UserWarning) as record:
        result = _run(runner, views)
    messages = [str(w.message) for w in record]
    assert sum("needs a target" in m for m in messages) == 1
    assert sum("got no view" in m for m in messages) == 1
    assert "scenemetrics/psnr" not in result.scalars
    assert result.scalars["scenemetrics/mean"] == pytest.approx(float(torch.stack([v.render for v in views]).mean()))


def test_update_fn_gets_device_tensors_and_false_means_skipped() -> None:
    seen = []

    def fn(metric, render, target, extras):
        seen.append((render.shape, target.shape, render.device == metric.device, sorted(extras)))
        return False

    runner = MetricRunner({"mean": MeanRender()}, update_fns={"mean": fn})
    with pytest.warns(UserWarning, match="got no view"):
        result = _run(runner, _views(2))
    assert "scenemetrics/mean" not in result.scalars
    assert seen == [(torch.Size([1, 3, 24, 32]), torch.Size([1, 3, 24, 32]), True, ["pose", "source"])] * 2


def test_square_metrics_skip_or_crop_non_square_views_and_take_cameras() -> None:
    views = _views(2)  # 24 x 32
    prism = PRISMDistance()
    runner = MetricRunner({"prism": prism})
    with pytest.warns(UserWarning) as record:
        result = _run(runner, views)
    messages = [str(w.message) for w in record]
    assert sum("metric 'prism' needs square views; view '0' is 32x24 (option 'center_crop'" in m for m in messages) == 1
    assert prism.calls == [] and "scenemetrics/prism/mean" not in result.scalars
    # with the center_crop option (as eval and the nerfstudio callback pass it) every image is cropped, pose kept
    crop = MetricRunner({"prism": prism}, configs={"prism": MetricConfig("prism", {"center_crop": True}, None)})
    _run(crop, views)
    assert prism.calls == [((1, 3, 24, 24), (1, 3, 24, 24), (1, 3, 24, 24), (3,))] * 2
    source, pred = prism.inputs[0][:2]
    assert torch.equal(pred[0], views[0].render[:, :, 4:28]) and torch.equal(
        source[0], views[0].extras["source"][:, :, 4:28]
    )
    # cameras instead of a pose: the adapter turns them into the pose (the prism package's camera_pose)
    cams = (torch.eye(4), torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 1, 0], [0, 0, 0, 1]]))
    square = [
        RenderedView(v.render[..., :24], v.target[..., :24], {"source": v.extras["source"][..., :24], "cameras": cams})
        for v in views
    ]
    prism.calls.clear()
    prism.inputs.clear()
    _run(MetricRunner({"prism": prism}), square)
    assert torch.equal(prism.inputs[0][3], sm.prism.camera_pose(*cams))


def test_missing_extras_key_names_metric_and_key() -> None:
    runner = MetricRunner({"prism": PRISMDistance()})
    runner.begin(collect_images=False)
    view = RenderedView(torch.rand(1, 3, 8, 8), torch.rand(1, 3, 8, 8), {"source": torch.rand(1, 3, 8, 8)})
    with pytest.raises(KeyError, match=r"'prism'.*'pose'"):
        runner.update(0, prepare_view(view, "test", 0))


def test_scalars_from_value_rules() -> None:
    class Result:
        score = torch.tensor(0.25)

    assert scalars_from_value("p/x", Result(), "x") == {"p/x": 0.25}
    assert scalars_from_value("p/x", 3, "x") == {"p/x": 3.0}
    assert scalars_from_value("p/x", {"a": torch.tensor([1.5]), "b": {"c": 2.0}}, "x") == {"p/x/a": 1.5, "p/x/b/c": 2.0}
    with pytest.raises(ValueError, match=r"'x'.*shape \(3,\).*update_fns"):
        scalars_from_value("p/x", torch.zeros(3), "x")
    with pytest.raises(ValueError, match="returned str"):
        scalars_from_value("p/x", "nope", "x")


def test_non_scalar_compute_raises_at_evaluation() -> None:
    class PerChannel(MeanRender):
        def compute(self) -> torch.Tensor:
            return torch.zeros(3)

    runner = MetricRunner({"per_channel": PerChannel()})
    with pytest.raises(ValueError, match=r"'per_channel'.*shape \(3,\)"):
        _run(runner, _views(1))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metrics": {}}, "non-empty"),
        ({"metrics": [MeanRender()]}, "mapping"),
        ({"metrics": {"a": torch.nn.Linear(1, 1)}}, r"metrics\['a'\].*torchmetrics.Metric"),
        ({"metrics": {"a": MeanRender()}, "update_fns": {"b": print}}, "update_fns"),
        ({"metrics": {"a": MeanRender()}, "max_logged_images": -1}, "max_logged_images"),
        ({"metrics": {"a": MeanRender()}, "map_colormap": "no_such_map"}, "map_colormap"),
    ],
)
def test_runner_argument_errors(kwargs, match) -> None:
    metrics = kwargs.pop("metrics")
    with pytest.raises(ValueError, match=match):
        MetricRunner(metrics, **kwargs)


def test_as_rendered_view_accepts_tuples_and_rejects_others() -> None:
    r = torch.rand(3, 4, 4)
    assert as_rendered_view((r, None), "p").target is None
    assert as_rendered_view((r, r, {"k": 1}), "p").extras == {"k": 1}
    with pytest.raises(TypeError, match=r"render_fn.*Tensor"):
        as_rendered_view(r, "render_fn")
    with pytest.raises(TypeError, match=r"p .*tuple of length 4"):
        as_rendered_view((r, r, {}, 1), "p")
    with pytest.raises(TypeError, match="extras"):
        as_rendered_view((r, r, [1]), "p")


def test_prepare_view_checks_and_clamps() -> None:
    over = torch.full((3, 4, 4), 1.3)
    view = prepare_view(RenderedView(over, torch.ones(3, 4, 4)), "p", 0)
    assert view.render.shape == (1, 3, 4, 4) and float(view.render.max()) == 1.0
    assert float(prepare_view(RenderedView(over), "p", 0, clamp=False).render.max()) == pytest.approx(1.3)
    with pytest.raises(ValueError, match=r"p \(view 2\).*shape \(4, 4\)"):
        prepare_view(RenderedView(torch.rand(4, 4)), "p", 2)
    with pytest.raises(ValueError, match=r"p \(view 1\).*dtype torch.uint8"):
        prepare_view(RenderedView(torch.zeros(3, 4, 4, dtype=torch.uint8)), "p", 1)
    with pytest.raises(ValueError, match="NaN"):
        prepare_view(RenderedView(torch.full((3, 4, 4), float("nan"))), "p", 0)
    with pytest.raises(ValueError, match=r"target of p \(view 0\)"):
        prepare_view(RenderedView(torch.rand(3, 4, 4), torch.full((3, 4, 4), 1.5)), "p", 0)
    with pytest.raises(ValueError, match=r"target of p.*shape"):
        prepare_view(RenderedView(torch.rand(3, 4, 4), torch.rand(3, 4, 5)), "p", 0)


def test_evenly_spaced() -> None:
    assert evenly_spaced(10, 4) == [0, 3, 6, 9]
    assert evenly_spaced(4, 3) == [0, 2, 3]  # round(1.5) == 2
    # spec 1.4: idx = round(j*(N-1)/(k-1)) with Python's round (ties to even): 2.5 -> 2, 4.5 -> 4
    assert evenly_spaced(6, 3) == [0, 2, 5]
    assert evenly_spaced(10, 3) == [0, 4, 9]
    assert evenly_spaced(5, 1) == [0]
    assert evenly_spaced(3, 8) == [0, 1, 2]
    assert evenly_spaced(3, None) == [0, 1, 2]


def test_import_is_lazy() -> None:
    code = (
        "import sys, scenemetrics.callbacks as cb\n"
        "cb.RenderedView\n"
        "heavy = ('lightning', 'pytorch_lightning', 'nerfstudio', 'wandb', 'tensorboard')\n"
        "bad = [m for m in heavy if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=None)


def test_no_warnings_for_a_normal_evaluation(weights) -> None:
    runner = MetricRunner({"puzzlesim": sm.PuzzleSim(torch.rand(2, 3, 24, 32), weights_path=weights)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run(runner, _views(2))


@pytest.mark.parametrize(
    ("blocked", "module", "extra"),
    [
        ("lightning", "scenemetrics.callbacks.lightning", "lightning"),
        ("nerfstudio", "scenemetrics.callbacks.nerfstudio", "nerfstudio"),
    ],
)
def test_missing_extra_names_the_pip_install(monkeypatch, blocked, module, extra) -> None:
    import importlib

    # a None entry makes `import <name>` fail like a missing package; submodules already imported by other tests
    # would otherwise still resolve from sys.modules
    for name in [blocked, *(m for m in list(sys.modules) if m.startswith(blocked + "."))]:
        monkeypatch.setitem(sys.modules, name, None)
    if module in sys.modules:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ImportError, match=rf'pip install "scenemetrics\[{extra}\]"'):
        importlib.import_module(module)
