"""nerfstudio integration without a training run: plugins, config conversion, CLI flags, the callback on a stub."""

from __future__ import annotations

import importlib.metadata
import math
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from tests.utils.extras import need

pytestmark = pytest.mark.nerfstudio

ns = need("nerfstudio", "nerfstudio")

import scenemetrics as sm  # noqa: E402
from scenemetrics.callbacks.pictures import draw_map  # noqa: E402
from scenemetrics.viz import DisplayRange, apply_colormap  # noqa: E402
from tests.utils.display_range import first_range  # noqa: E402
from tests.utils.standin_metrics import PRISMDistance  # noqa: E402


def _installed() -> bool:
    try:
        importlib.metadata.distribution("scenemetrics")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.slow  # a fresh interpreter imports nerfstudio
@pytest.mark.skipif(not _installed(), reason="entry points exist only when scenemetrics is pip-installed")
def test_entry_points_register_both_methods() -> None:
    from nerfstudio.plugins.types import MethodSpecification

    eps = importlib.metadata.entry_points(group="nerfstudio.method_configs")
    assert {"nerfacto-scenemetrics", "splatfacto-scenemetrics"} <= set(eps.names)
    for name in ("nerfacto-scenemetrics", "splatfacto-scenemetrics"):
        spec = eps[name].load()
        assert isinstance(spec, MethodSpecification)
        assert spec.config.method_name == name
        assert type(spec.config.pipeline).__name__ == "SceneMetricsPipelineConfig"
    # importing the public module first must not break nerfstudio's own discovery (import-order cycle)
    code = (
        "import scenemetrics.callbacks.nerfstudio\n"
        "from nerfstudio.configs.method_configs import all_methods, method_configs\n"
        "assert 'nerfacto-scenemetrics' in all_methods and 'splatfacto-scenemetrics' in all_methods\n"
        "assert type(method_configs['nerfacto'].pipeline).__name__ == 'VanillaPipelineConfig'\n"
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)


def test_add_scenemetrics_converts_a_copy() -> None:
    from nerfstudio.configs.method_configs import method_configs

    from scenemetrics.callbacks.nerfstudio import SceneMetricsPipelineConfig, add_scenemetrics

    base = method_configs["nerfacto"]
    cfg = add_scenemetrics(base, metrics=("puzzlesim", "osim"), every_n_steps=10, puzzlesim_weights="w.pth")
    assert isinstance(cfg.pipeline, SceneMetricsPipelineConfig)
    assert type(base.pipeline).__name__ == "VanillaPipelineConfig"  # the original is untouched
    assert cfg.pipeline.model == base.pipeline.model and cfg.pipeline.datamanager == base.pipeline.datamanager
    assert cfg.pipeline.model is not base.pipeline.model
    assert cfg.pipeline.scenemetrics.metrics == ("puzzlesim", "osim") and cfg.pipeline.scenemetrics.every_n_steps == 10
    again = add_scenemetrics(cfg, every_n_steps=20)
    assert again.pipeline.scenemetrics.every_n_steps == 20 and again.pipeline.scenemetrics.metrics == (
        "puzzlesim",
        "osim",
    )
    with pytest.raises(TypeError, match="every_n_step"):
        add_scenemetrics(base, every_n_step=10)
    with pytest.raises(TypeError, match="DynamicBatchPipelineConfig"):
        add_scenemetrics(method_configs["instant-ngp"])
    with pytest.raises(ValueError, match="metrics"):
        add_scenemetrics(base, metrics=("nosuch",))
    with pytest.raises(ValueError, match="every_n_steps"):
        add_scenemetrics(base, every_n_steps=0)


def test_cli_flags_parse() -> None:
    import tyro
    from nerfstudio.configs.method_configs import method_configs

    from scenemetrics.callbacks.nerfstudio import add_scenemetrics, metric_configs

    cfg = add_scenemetrics(method_configs["nerfacto"])
    args = [
        "--pipeline.scenemetrics.metrics", "puzzlesim", "prism",
        "--pipeline.scenemetrics.every-n-steps", "10",
        "--pipeline.scenemetrics.num-eval-views", "1",
        "--pipeline.scenemetrics.puzzlesim-weights", "/w/sq.pth",
        "--pipeline.scenemetrics.puzzlesim-layers", "2", "3",
        "--pipeline.scenemetrics.osim-conf", "0.3",
        "--pipeline.scenemetrics.prism-head", "/w/head.safetensors",
        "--pipeline.scenemetrics.prism-center-crop", "True",
        "--pipeline.scenemetrics.metric-options", "puzzlesim.layer_weights=[0.5,0.5]",
    ]  # fmt: skip
    parsed = tyro.cli(tyro.conf.FlagConversionOff[type(cfg)], default=cfg, args=args)  # as ns-train parses
    opts = parsed.pipeline.scenemetrics
    assert opts.metrics == ("puzzlesim", "prism") and opts.every_n_steps == 10 and opts.num_eval_views == 1
    assert str(opts.puzzlesim_weights) == "/w/sq.pth" and str(opts.prism_head) == "/w/head.safetensors"
    assert opts.prism_center_crop is True and opts.puzzlesim_layers == (2, 3) and opts.osim_conf == 0.3
    configs = metric_configs(opts)
    assert configs["puzzlesim"].options == {
        "weights": "/w/sq.pth", "layers": [2, 3], "layer_weights": [0.5, 0.5]
    }  # fmt: skip
    assert configs["prism"].options["center_crop"] is True and "osim" not in configs
    assert configs["prism"].flag("head") == "--pipeline.scenemetrics.prism-head"


def test_bad_metric_options_name_the_metric_the_key_and_the_valid_keys() -> None:
    from scenemetrics.callbacks.nerfstudio import SceneMetricsNerfstudioConfig, build_metrics

    with pytest.raises(ValueError, match="metric 'puzzlesim' has no option 'screening'; its options: backbone"):
        build_metrics(SceneMetricsNerfstudioConfig(metric_options=("puzzlesim.screening=on",)))
    with pytest.raises(ValueError, match=r"`osim.conf` must be a finite number in \[0, 1\]; received 2.0"):
        build_metrics(SceneMetricsNerfstudioConfig(metrics=("osim",), osim_conf=2.0))
    with pytest.raises(ValueError, match=r"`metric_options`: a metric option must look like METRIC\.KEY=VALUE"):
        build_metrics(SceneMetricsNerfstudioConfig(metric_options=("puzzlesim",)))


# -- the callback on a stub pipeline (no nerfstudio model, no training) -------------------------------------------


class _Cameras:
    def __init__(self, c2w: torch.Tensor) -> None:
        self.camera_to_worlds = c2w

    def __getitem__(self, index):
        return _Cameras(self.camera_to_worlds[index])

    def to(self, device):
        return self


class _Dataset:
    def __init__(self, images: torch.Tensor, c2w: torch.Tensor) -> None:
        self.images, self.cameras = images, _Cameras(c2w)

    def __len__(self) -> int:
        return len(self.images)

    def get_image_float32(self, index: int) -> torch.Tensor:
        return self.images[index]


def _c2w(x: float, y: float, z: float) -> torch.Tensor:
    m = torch.zeros(3, 4)
    m[:, :3] = torch.eye(3)
    m[:, 3] = torch.tensor([x, y, z])
    return m


class _Model(torch.nn.Module):
    def __init__(self, size) -> None:
        super().__init__()
        self.size = size
        self.calls = []
        self.seed_offset = 0  # another offset: other renders (a model that trained on)

    def get_outputs_for_camera(self, camera):
        self.calls.append((self.training, camera.camera_to_worlds.clone()))
        centre = camera.camera_to_worlds[0, :, 3]
        g = torch.Generator().manual_seed(int(1000 * float(centre.abs().sum())) + self.seed_offset)
        return {"rgb": 1.2 * torch.rand(*self.size, 3, generator=g), "background": torch.tensor([0.0, 0.0, 1.0])}


class _Pipeline(torch.nn.Module):
    def __init__(self, size=(24, 32), target_size=None) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.device = torch.device("cpu")
        self.model = _Model(size)
        train_c2w = torch.stack([_c2w(3 * math.cos(a), 3 * math.sin(a), 1.0) for a in torch.linspace(0, 6, 6)])
        eval_c2w = torch.stack([_c2w(3 * math.cos(a), 3 * math.sin(a), 1.2) for a in (0.1, 2.0, 4.0)])
        tsize = target_size or size
        self.datamanager = SimpleNamespace(
            train_dataset=_Dataset(torch.rand(6, *size, 3, generator=g), train_c2w),
            eval_dataset=_Dataset(torch.rand(3, *tsize, 4, generator=g), eval_c2w),
        )


@pytest.fixture
def written(monkeypatch):
    # nerfstudio's own import cycle: `nerfstudio.utils.writer` imported first fails (base_config needs it complete),
    # so load the configs first; with xdist a worker may start with a test that uses this fixture
    importlib.import_module("nerfstudio.configs.base_config")
    from nerfstudio.utils import writer

    out = {"scalars": [], "images": []}
    monkeypatch.setattr(writer, "put_scalar", lambda name, scalar, step: out["scalars"].append((name, scalar, step)))
    monkeypatch.setattr(writer, "put_image", lambda name, image, step: out["images"].append((name, image, step)))
    return out


def test_callback_on_stub_pipeline(tmp_path, written) -> None:
    from nerfstudio.engine.callbacks import TrainingCallbackLocation

    from scenemetrics.callbacks.nerfstudio import SceneMetricsNerfstudioConfig, SceneMetricsTrainingCallback

    w = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    pipeline = _Pipeline()
    cfg = SceneMetricsNerfstudioConfig(
        every_n_steps=10, num_eval_views=2, max_reference_views=3, puzzlesim_weights=w, max_logged_images=1
    )
    cb = SceneMetricsTrainingCallback(pipeline, cfg)
    assert cb.where_to_run == [TrainingCallbackLocation.AFTER_TRAIN_ITERATION] and cb.update_every_num_iters == 10
    cb.run_callback_at_location(0, TrainingCallbackLocation.AFTER_TRAIN_ITERATION)  # step 0 is skipped
    cb.run_callback_at_location(5, TrainingCallbackLocation.AFTER_TRAIN_ITERATION)  # off schedule
    assert written["scalars"] == [] and pipeline.model.calls == []
    pipeline.train()
    cb.run_callback_at_location(10, TrainingCallbackLocation.AFTER_TRAIN_ITERATION)
    assert pipeline.training and pipeline.model.training
    # the two evenly spaced eval views 0 and 2 were rendered in eval mode
    assert [c[0] for c in pipeline.model.calls] == [False, False]
    xs = [float(c[1][0, 0, 3]) for c in pipeline.model.calls]
    assert xs == pytest.approx([3 * math.cos(0.1), 3 * math.cos(4.0)], rel=1e-6)
    scalars = {name: (value, step) for name, value, step in written["scalars"]}
    assert set(scalars) == {"scenemetrics/puzzlesim", "scenemetrics/eval_seconds"}

    # independent recomputation: references = train images round(j*5/2) = 0, 2 (2.5 ties to even), 5; renders clamped
    train = pipeline.datamanager.train_dataset.images
    refs = train[[0, 2, 5]].permute(0, 3, 1, 2)
    metric = sm.PuzzleSim(refs, weights_path=w)
    cams = pipeline.datamanager.eval_dataset.cameras.camera_to_worlds
    renders = [pipeline.model.get_outputs_for_camera(_Cameras(cams[i : i + 1]))["rgb"] for i in (0, 2)]
    metric.update(torch.stack([r.clamp(0, 1).permute(2, 0, 1) for r in renders]))
    assert scalars["scenemetrics/puzzlesim"][0] == pytest.approx(float(metric.compute()), abs=1e-6)
    assert scalars["scenemetrics/puzzlesim"][1] == 10
    names = [(name, step) for name, _, step in written["images"]]
    assert names == [
        ("scenemetrics/puzzlesim/map/0", 10),
        ("scenemetrics/panel/0", 10),  # render | target | abs error (the default panel_map)
        ("scenemetrics/panel_over_time/0", 10),
    ]
    image = written["images"][0][1]
    assert image.dtype == torch.float32 and 0 <= float(image.min()) <= 1 and image.shape[2] == 3
    single = sm.PuzzleSim(refs, weights_path=w)
    single.update(renders[0].clamp(0, 1).permute(2, 0, 1)[None])
    # the 24x32 map as a titled picture with colour bar, on its 2nd-98th percentile widened to 1 (first step)
    values = single.last_maps[0]
    rng = DisplayRange(*first_range(values, higher_is_better=True))
    assert cb.runner.pictures.ranges["scenemetrics/puzzlesim/map/0"][:3] == pytest.approx((rng.vmin, rng.vmax, 10))
    box = draw_map(values, "puzzlesim", 0, step=10, display_range=rng).tiles[0]
    x0, y0, x1, y1 = box["box"]
    got = (image * 255).round().to(torch.uint8).permute(2, 0, 1)[:, y0 : y1 : box["scale"], x0 : x1 : box["scale"]]
    assert torch.equal(got, apply_colormap(values, "jet_r", rng.vmin, rng.vmax))
    # the pipeline's state module now holds the fixed ranges (what nerfstudio's checkpoint saves)
    assert cb._state is None  # the stub pipeline has no scenemetrics_state module


def test_callback_prism_wiring_with_standins(tmp_path, written, monkeypatch) -> None:
    import scenemetrics.callbacks.nerfstudio as nsmod

    prism = PRISMDistance()
    monkeypatch.setattr(nsmod, "build_metrics", lambda cfg, device: {"prism": prism})
    pipeline = _Pipeline(size=(24, 32), target_size=(12, 16))
    cfg = nsmod.SceneMetricsNerfstudioConfig(metrics=("prism",), every_n_steps=5, num_eval_views=3)
    cb = nsmod.SceneMetricsTrainingCallback(pipeline, cfg)
    with pytest.warns(UserWarning) as record:
        cb.evaluate(5)
    messages = " ".join(str(r.message) for r in record)
    assert "resized to the render size" in messages and "metric 'prism' needs square views" in messages
    assert "(--pipeline.scenemetrics.prism-center-crop crops the views" in messages
    assert prism.calls == [] and [name for name, _, _ in written["scalars"]] == ["scenemetrics/eval_seconds"]

    crop = nsmod.SceneMetricsTrainingCallback(pipeline, nsmod.SceneMetricsNerfstudioConfig(
        metrics=("prism",), every_n_steps=5, num_eval_views=3, prism_center_crop=True
    ))  # fmt: skip
    with pytest.warns(UserWarning, match="resized to the render size"):
        crop.evaluate(10)
    assert [c[:3] for c in prism.calls] == [((1, 3, 24, 24), (1, 3, 24, 24), (1, 3, 24, 24))] * 3
    # eval view 0 sits at angle 0.1: its nearest training camera is camera 0 (angle 0); pose = eval - source, from the
    # cameras' spherical coordinates (z up)
    dm = pipeline.datamanager
    source, pred, target, pose = prism.inputs[0]
    full = torch.eye(4)
    full[:3] = dm.eval_dataset.cameras.camera_to_worlds[0]
    src = torch.eye(4)
    src[:3] = dm.train_dataset.cameras.camera_to_worlds[0]
    expected = sm.prism.relative_pose(sm.prism.spherical_from_c2w(src), sm.prism.spherical_from_c2w(full))
    assert torch.allclose(pose, expected.reshape(1, 3))
    assert torch.equal(source[0], dm.train_dataset.images[0].permute(2, 0, 1)[:, :, 4:28])
    rgb = pipeline.model.get_outputs_for_camera(_Cameras(dm.eval_dataset.cameras.camera_to_worlds[0:1]))["rgb"]
    assert torch.equal(pred[0], rgb.clamp(0, 1).permute(2, 0, 1)[:, :, 4:28])
    assert target.shape == (1, 3, 24, 24) and float(target.min()) >= 0 and float(target.max()) <= 1
    tags = [name for name, _, step in written["scalars"] if step == 10]
    assert sorted(tags) == ["scenemetrics/eval_seconds", "scenemetrics/prism/mean", "scenemetrics/prism/nested/double"]
    mean = sum(float((p - t).abs().mean()) for _, p, t, _ in prism.inputs) / 3
    assert dict((n, v) for n, v, _ in written["scalars"])["scenemetrics/prism/mean"] == pytest.approx(mean, rel=1e-5)


def test_rgba_targets_are_composited_on_the_model_background() -> None:
    from scenemetrics.callbacks.nerfstudio import _hwc_to_batch

    rgba = torch.tensor([[[1.0, 0.0, 0.0, 0.25]]])
    out = _hwc_to_batch(rgba, torch.tensor([0.0, 0.0, 1.0]))
    assert torch.allclose(out.flatten(), torch.tensor([0.25, 0.0, 0.75]))
    assert torch.allclose(_hwc_to_batch(rgba).flatten(), torch.tensor([1.0, 0.75, 0.75]))


def test_build_metrics_passes_weights_and_disables_sync(tmp_path) -> None:
    from scenemetrics.callbacks.nerfstudio import SceneMetricsNerfstudioConfig, build_metrics

    w = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    metric = build_metrics(SceneMetricsNerfstudioConfig(puzzlesim_weights=w))["puzzlesim"]
    assert metric.weights_path == str(w) and metric.sync_on_compute is False


@pytest.mark.slow  # a fresh interpreter imports nerfstudio
def test_log_to_nerfstudio_works_as_the_first_nerfstudio_import() -> None:
    # nerfstudio's writer module cannot be the first nerfstudio module imported (its own import cycle)
    code = (
        "import torch\n"
        "from scenemetrics.callbacks.evaluation import EvaluationResult\n"
        "from scenemetrics.callbacks.logging import log_to_nerfstudio\n"
        "log_to_nerfstudio(EvaluationResult({'scenemetrics/x': 1.0}, {'scenemetrics/m': torch.rand(3, 4, 4)}), 3)\n"
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)


def test_display_ranges_travel_in_the_pipeline_state_through_a_checkpoint(tmp_path, written) -> None:
    from nerfstudio.engine.callbacks import TrainingCallbackLocation
    from nerfstudio.pipelines.base_pipeline import Pipeline

    from scenemetrics.callbacks.nerfstudio import (
        CallbackState,
        SceneMetricsNerfstudioConfig,
        SceneMetricsTrainingCallback,
    )

    class StatePipeline(_Pipeline):
        def __init__(self) -> None:
            super().__init__()
            self.scenemetrics_state = CallbackState()  # as SceneMetricsPipeline has

    w = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    cfg = SceneMetricsNerfstudioConfig(every_n_steps=10, num_eval_views=2, max_reference_views=3, puzzlesim_weights=w)
    pipeline = StatePipeline()
    cb = SceneMetricsTrainingCallback(pipeline, cfg)
    result = cb.evaluate(10)
    assert set(result.display_ranges) == {
        "scenemetrics/puzzlesim/map/0", "scenemetrics/puzzlesim/map/1", "scenemetrics/panel/0",
        "scenemetrics/panel/1", "scenemetrics/panel_over_time/0",
    }  # fmt: skip
    torch.save(pipeline.state_dict(), tmp_path / "pipeline.pt")  # what nerfstudio's trainer saves
    state = torch.load(tmp_path / "pipeline.pt", weights_only=True)  # what it loads (torch's default since 2.6)
    assert "scenemetrics_state._extra_state" in state

    # nerfstudio's own Pipeline.load_state_dict hands the extra state to the module (model keys aside)
    class NsPipeline(Pipeline):
        def __init__(self) -> None:
            torch.nn.Module.__init__(self)
            self._model = torch.nn.Linear(1, 1)
            self.scenemetrics_state = CallbackState()

    loaded = NsPipeline()
    loaded.load_state_dict({**state, "_model.weight": torch.ones(1, 1), "_model.bias": torch.zeros(1)})
    assert loaded.scenemetrics_state.state["ranges"] == pipeline.scenemetrics_state.state["ranges"]

    # a resumed run: a new pipeline gets the checkpoint before its callback exists (nerfstudio's order)
    resumed = StatePipeline()
    resumed.load_state_dict(state)
    resumed.model.seed_offset = 7
    cb2 = SceneMetricsTrainingCallback(resumed, cfg)
    later = cb2.evaluate(20)
    fixed = {tag: r for tag, r in result.display_ranges.items() if "over_time" not in tag}
    assert {tag: later.display_ranges[tag] for tag in fixed} == fixed
    fresh = StatePipeline()  # the same renders without the checkpoint: ranges of their own
    fresh.model.seed_offset = 7
    own = SceneMetricsTrainingCallback(fresh, cfg).evaluate(20).display_ranges
    assert all(own[f"scenemetrics/panel/{i}"] != fixed[f"scenemetrics/panel/{i}"] for i in (0, 1))
    assert cb2.runner.pictures.strip["steps"] == [10, 20]
    cb.run_callback_at_location(20, TrainingCallbackLocation.AFTER_TRAIN_ITERATION)  # the old one runs on unaffected


def test_panel_options_are_fields_and_flags() -> None:
    import tyro
    from nerfstudio.configs.method_configs import method_configs

    from scenemetrics.callbacks.nerfstudio import SceneMetricsNerfstudioConfig, _map_range, add_scenemetrics

    cfg = add_scenemetrics(method_configs["nerfacto"])
    assert (cfg.pipeline.scenemetrics.panel_map, cfg.pipeline.scenemetrics.map_range) == ("abs", "first")
    args = [
        "--pipeline.scenemetrics.panel-map", "ssim", "--pipeline.scenemetrics.map-range", "0,0.5",
        "--pipeline.scenemetrics.strip-steps", "4", "--pipeline.scenemetrics.lpips-weights", "/w/alexnet.pth",
    ]  # fmt: skip
    opts = tyro.cli(tyro.conf.FlagConversionOff[type(cfg)], default=cfg, args=args).pipeline.scenemetrics
    assert (opts.panel_map, _map_range(opts), opts.strip_steps) == ("ssim", (0.0, 0.5), 4)
    none = tyro.cli(
        tyro.conf.FlagConversionOff[type(cfg)], default=cfg, args=["--pipeline.scenemetrics.panel-map", "None"]
    )
    assert none.pipeline.scenemetrics.panel_map is None
    with pytest.raises(ValueError, match="map_range"):
        add_scenemetrics(method_configs["nerfacto"], map_range="last")
    with pytest.raises(ValueError, match="panel_map"):
        add_scenemetrics(method_configs["nerfacto"], panel_map="l1")
    with pytest.raises(ValueError, match="strip_steps"):
        add_scenemetrics(method_configs["nerfacto"], strip_steps=-2)
    assert SceneMetricsNerfstudioConfig().panel_map == "abs"


def test_background_callback_logs_what_the_synchronous_one_logs(tmp_path, written) -> None:
    from nerfstudio.engine.callbacks import TrainingCallbackLocation

    from scenemetrics.callbacks.nerfstudio import (
        CallbackState,
        SceneMetricsNerfstudioConfig,
        SceneMetricsTrainingCallback,
    )

    class StatePipeline(_Pipeline):
        def __init__(self) -> None:
            super().__init__()
            self.scenemetrics_state = CallbackState()

    w = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    runs = {}
    for background in (False, True):
        written["scalars"].clear()
        written["images"].clear()
        pipeline = StatePipeline()
        cfg = SceneMetricsNerfstudioConfig(every_n_steps=10, num_eval_views=2, max_reference_views=3,
                                           puzzlesim_weights=w, background=background)  # fmt: skip
        cb = SceneMetricsTrainingCallback(pipeline, cfg)
        for step in range(31):
            pipeline.model.seed_offset = step  # the model trains on: a render belongs to its step
            cb.run_callback_at_location(step, TrainingCallbackLocation.AFTER_TRAIN_ITERATION)
            if step == 20:  # a checkpoint (nerfstudio saves pipeline.state_dict()) waits for the pending evaluation
                state = pipeline.state_dict()["scenemetrics_state._extra_state"]
                assert state["strip"]["steps"] == [10, 20]
                assert sorted({s for _, _, s in written["scalars"]}) == [10, 20]
        cb.run_callback_at_location(30, TrainingCallbackLocation.AFTER_TRAIN)  # nerfstudio's end of training
        assert pipeline.training and pipeline.model.training
        runs[background] = (list(written["scalars"]), list(written["images"]), pipeline.scenemetrics_state.state)
    (sync_scalars, sync_images, sync_state), (bg_scalars, bg_images, bg_state) = runs[False], runs[True]
    assert [(n, s) for n, _, s in bg_scalars] == [(n, s) for n, _, s in sync_scalars]
    assert sorted({s for _, _, s in sync_scalars}) == [10, 20, 30]
    same = [(n, v, s) for n, v, s in sync_scalars if n != "scenemetrics/eval_seconds"]
    assert [(n, v, s) for n, v, s in bg_scalars if n != "scenemetrics/eval_seconds"] == same
    assert [(n, s) for n, _, s in bg_images] == [(n, s) for n, _, s in sync_images]
    assert all(torch.equal(a, b) for (_, a, _), (_, b, _) in zip(sync_images, bg_images, strict=True))
    assert bg_state["ranges"] == sync_state["ranges"] and bg_state["strip"]["steps"] == [10, 20, 30]
    with pytest.raises(ValueError, match="`max_pending` must be an int >= 1"):
        SceneMetricsTrainingCallback(StatePipeline(), SceneMetricsNerfstudioConfig(background=True, max_pending=0))
