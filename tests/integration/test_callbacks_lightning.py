"""SceneMetricsCallback in real Lightning fits (CPU): TensorBoard / W&B read-back, DDP, resume, modes, references."""

from __future__ import annotations

import datetime
import glob
import io
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

pl = pytest.importorskip("lightning.pytorch")
pytest.importorskip("tensorboard")

from examples.callbacks_lightning_tiny_splat import TinySplatModule  # noqa: E402
from PIL import Image  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import scenemetrics as sm  # noqa: E402
from scenemetrics.callbacks import RenderedView, SceneMetricsCallback  # noqa: E402
from scenemetrics.callbacks.pictures import draw_map, draw_panel  # noqa: E402
from scenemetrics.tiny_splat import make_splat_scene  # noqa: E402
from scenemetrics.viz import DisplayRange, apply_colormap, to_uint8  # noqa: E402
from tests.utils.standin_metrics import OSIM, PRISMDistance  # noqa: E402

SIZE = (24, 32)  # non-square on purpose: a CHW/HWC mix-up cannot go unnoticed


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))


@pytest.fixture
def weights(tmp_path) -> Path:
    return sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "squeezenet1_1.pth")


@pytest.fixture(scope="module")
def scene():
    return make_splat_scene(num_gaussians=48, num_train=6, num_eval=2, size=SIZE, seed=3)


def _model(scene, **kwargs) -> TinySplatModule:
    torch.manual_seed(0)
    return TinySplatModule(scene, num_gaussians=kwargs.pop("num_gaussians", 48), lr=0.02, **kwargs)


def _trainer(tmp_path: Path, **kwargs) -> pl.Trainer:
    kwargs.setdefault("logger", False)
    kwargs.setdefault("enable_checkpointing", False)
    return pl.Trainer(
        accelerator="cpu",
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=kwargs.pop("num_sanity_val_steps", 0),
        **kwargs,
    )


def _events(logdir: Path) -> EventAccumulator:
    files = glob.glob(str(logdir / "**" / "events.out.tfevents.*"), recursive=True)
    assert len(files) == 1, files
    acc = EventAccumulator(files[0], size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    return acc


def _scalars(acc: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _decode(event) -> torch.Tensor:
    img = Image.open(io.BytesIO(event.encoded_image_string))
    assert img.mode == "RGB"
    return torch.from_numpy(np.array(img)).permute(2, 0, 1)


def _final_puzzlesim(model: TinySplatModule, scene, weights) -> tuple[float, torch.Tensor]:
    """Independent recomputation: PuzzleSim of the model's eval renders against all training views."""
    # the callback's metric embeds with batch_size=8: the same passes here, so the maps agree to the bit (a
    # convolution's last bit may depend on the batch, which would move a pixel of the rendered picture)
    metric = sm.PuzzleSim(scene.train_images, weights_path=weights, batch_size=8)
    with torch.no_grad():
        renders = torch.stack([model.render(v).clamp(0, 1) for v in scene.eval_viewmats])
    metric.update(renders[:1])
    first_map = metric.last_maps[0]
    metric.update(renders[1:])
    return float(metric.compute()), first_map


def test_tensorboard_readback_references_once_and_monitoring(tmp_path, weights, scene) -> None:
    model = _model(scene)
    # batch_size=8: all 6 references in one pass (the CPU default is one image per pass), so "embedded once" is one call
    metric = sm.PuzzleSim(weights_path=weights, batch_size=8)
    net = sm.puzzlesim.load_backbone("squeezenet1_1", weights, "cpu")  # the cached instance the metric uses
    batch_sizes: list[int] = []
    # real passes only: the memory infers feature sizes by running the backbone on meta tensors (no compute)
    hook = net.register_forward_hook(
        lambda mod, args, out: batch_sizes.append(args[0].shape[0]) if args[0].device.type != "meta" else None
    )
    cb = SceneMetricsCallback({"puzzlesim": metric}, every_n_steps=5, max_logged_images=1, log_renders=True)
    tb = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    csv = pl.loggers.CSVLogger(tmp_path, name="csv", version=0)
    best = pl.callbacks.ModelCheckpoint(
        dirpath=tmp_path / "ckpt", monitor="scenemetrics/puzzlesim", mode="max", every_n_train_steps=5, save_top_k=1
    )
    try:
        _trainer(tmp_path, max_steps=20, logger=[tb, csv], callbacks=[cb, best], enable_checkpointing=True).fit(model)
    finally:
        hook.remove()

    # the 6 references were embedded in one backbone pass, never again over 4 evaluations (eval renders are B=1)
    assert batch_sizes.count(6) == 1 and set(batch_sizes) == {1, 6} and batch_sizes.count(1) == 8
    acc = _events(tmp_path / "tb" / "version_0")
    values = _scalars(acc, "scenemetrics/puzzlesim")
    assert [s for s, _ in values] == [5, 10, 15, 20]
    assert all(0.0 <= v <= 1.0 for _, v in values)
    expected, first_map = _final_puzzlesim(model, scene, weights)
    assert values[-1][1] == pytest.approx(expected, abs=1e-6)
    assert float(model.trainer.callback_metrics["scenemetrics/puzzlesim"]) == pytest.approx(expected, abs=1e-6)
    assert float(best.best_model_score) == pytest.approx(max(v for _, v in values), abs=1e-6)
    seconds = _scalars(acc, "scenemetrics/eval_seconds")
    assert [s for s, _ in seconds] == [5, 10, 15, 20] and all(math.isfinite(v) and v > 0 for _, v in seconds)

    images = acc.Images("scenemetrics/puzzlesim/map/0")
    assert [e.step for e in images] == [5, 10, 15, 20]
    # map + title + colour bar of real values, on the range fixed at step 5 (kept in the callback's state)
    vmin, vmax, fixed_at, what, _ = cb.state_dict()["pictures"]["ranges"]["scenemetrics/puzzlesim/map/0"]
    assert (fixed_at, what, vmax) == (5, "puzzlesim", 1.0)
    picture = draw_map(first_map, "puzzlesim", 0, step=20, display_range=DisplayRange(vmin, vmax))
    x0, y0, x1, y1 = picture.tiles[0]["box"]
    s = picture.tiles[0]["scale"]
    assert torch.equal(_decode(images[-1])[:, y0:y1:s, x0:x1:s], apply_colormap(first_map, "jet_r", vmin, vmax))
    with torch.no_grad():
        render0 = model.render(scene.eval_viewmats[0]).clamp(0, 1)
    assert torch.equal(_decode(acc.Images("scenemetrics/render/0")[-1]), to_uint8(render0))
    assert "scenemetrics/puzzlesim/map/1" not in acc.Tags()["images"]  # max_logged_images=1
    csv_text = (tmp_path / "csv" / "version_0" / "metrics.csv").read_text()
    assert "scenemetrics/puzzlesim" in csv_text.splitlines()[0]


def _panel_layout(size: tuple[int, int], step: int, index: int = 0):
    """Where ``draw_panel`` puts the tiles and the colour bar of a view of ``size`` (the layout depends on the size
    and the title, not on the pixels)."""
    h, w = size
    zeros = torch.zeros(3, h, w)
    return draw_panel(zeros, zeros, torch.zeros(h, w), index=index, step=step, panel_map="abs",
                      display_range=DisplayRange(0.0, 1.0), colormap="jet", higher_is_better=False)  # fmt: skip


def _colorbar_block(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    x0, y0, _, y1 = _panel_layout(size, step=10).colorbar.box
    return image[:, y0 - 2 : y1 + 2, x0:]


def test_panels_read_back_tags_steps_tiles_and_one_range_per_view(tmp_path, scene) -> None:
    from tests.utils.standin_metrics import MeanRender

    model = _model(scene)
    cb = SceneMetricsCallback({"mean": MeanRender()}, every_n_steps=5)  # panel_map="abs", map_range="first"
    tb = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    _trainer(tmp_path, max_steps=20, logger=tb, callbacks=[cb]).fit(model)
    acc = _events(tmp_path / "tb" / "version_0")
    assert sorted(acc.Tags()["images"]) == [
        "scenemetrics/panel/0",
        "scenemetrics/panel/1",
        "scenemetrics/panel_over_time/0",
    ]
    layout = _panel_layout(SIZE, step=20)
    for i in (0, 1):
        events = acc.Images(f"scenemetrics/panel/{i}")
        assert [e.step for e in events] == [5, 10, 15, 20]
        images = [_decode(e) for e in events]
        # the same size at every step (the lines under the tiles wrap by their text, so only the width is the layout's)
        assert len({tuple(im.shape) for im in images}) == 1 and images[0].shape[2] == layout.image.shape[2]
        # one display range at every step: the colour bar and its tick labels are the same pixels
        assert len({tuple(_colorbar_block(im, SIZE).flatten().tolist()) for im in images}) == 1
        # the tiles are the view at its own resolution: the last render and target, pixel for pixel
        with torch.no_grad():
            render = model.render(scene.eval_viewmats[i]).clamp(0, 1)
        boxes = [t["box"] for t in layout.tiles]
        assert [(x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes] == [(SIZE[1], SIZE[0])] * 3
        x0, y0, x1, y1 = boxes[0]
        assert torch.equal(images[-1][:, y0:y1, x0:x1], to_uint8(render))
        x0, y0, x1, y1 = boxes[1]
        assert torch.equal(images[-1][:, y0:y1, x0:x1], to_uint8(scene.eval_images[i]))
        # the error tile at step 20 is |render - target| coloured on the range fixed at step 5
        vmin, vmax, fixed_at, what, _ = cb.state_dict()["pictures"]["ranges"][f"scenemetrics/panel/{i}"]
        assert (fixed_at, what, vmin) == (5, "abs_error", 0.0)
        error = (render - scene.eval_images[i]).abs().mean(dim=0)
        x0, y0, x1, y1 = boxes[2]
        assert torch.equal(images[-1][:, y0:y1, x0:x1], apply_colormap(error, "jet", vmin, vmax))
    strip = acc.Images("scenemetrics/panel_over_time/0")
    assert [e.step for e in strip] == [5, 10, 15, 20]
    widths = [e.width for e in strip]
    assert widths == sorted(widths) and len(set(widths)) == 4  # one more step side by side at each log


def test_wandb_offline_readback(tmp_path, weights, scene) -> None:
    wandb = pytest.importorskip("wandb")
    from tests.utils.wandb_reader import read_history, record_types, wait_for_exit_record

    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=5, max_logged_images=1)
    logger = pl.loggers.WandbLogger(offline=True, save_dir=str(tmp_path), project="scenemetrics-test")
    try:
        _trainer(tmp_path, max_steps=20, logger=logger, callbacks=[cb]).fit(_model(scene))
    finally:
        wandb.finish()
    runs = glob.glob(str(tmp_path / "wandb" / "offline-run-*"))
    assert len(runs) == 1
    run_file = glob.glob(os.path.join(runs[0], "run-*.wandb"))[0]
    assert wait_for_exit_record(run_file), record_types(run_file)
    rows = read_history(run_file)
    scalar_rows = [r for r in rows if "scenemetrics/puzzlesim" in r]
    assert [r["trainer/global_step"] for r in scalar_rows] == [5, 10, 15, 20], (record_types(run_file), rows[:3])
    assert all(0.0 <= r["scenemetrics/puzzlesim"] <= 1.0 for r in scalar_rows)
    tag = "scenemetrics/puzzlesim/map/0"
    image_rows = [r for r in rows if tag in r or f"{tag}/_type" in r]
    assert [r["trainer/global_step"] for r in image_rows] == [5, 10, 15, 20]
    kinds = {r[tag]["_type"] if tag in r else r[f"{tag}/_type"] for r in image_rows}
    assert kinds <= {"images/separated", "image-file"}
    pngs = glob.glob(os.path.join(runs[0], "files", "media", "images", "scenemetrics", "puzzlesim", "map", "*.png"))
    assert len(pngs) == 4
    # the picture for people: the 24x32 map enlarged (integer factor, >= 160 px high), a title and a colour bar
    width, height = Image.open(pngs[0]).size
    assert height > 160 and width > 160 * SIZE[1] / SIZE[0]


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True])
def test_ddp_two_processes_log_once_with_synced_values(tmp_path, weights, scene, background) -> None:
    model = _model(scene)
    # background: the worker syncs on a gloo group of its own while DDP all-reduces the gradients on the default one
    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=5, background=background)
    tb = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    # ddp_spawn (gloo) with a finite process-group timeout: a collective that never completes fails, not hangs
    ddp = pl.strategies.DDPStrategy(start_method="spawn", timeout=datetime.timedelta(seconds=120))
    trainer = _trainer(tmp_path, max_steps=10, logger=tb, callbacks=[cb], devices=2, strategy=ddp)
    trainer.fit(model)  # ddp_spawn copies rank 0's final weights back into `model`
    acc = _events(tmp_path / "tb")  # exactly one event file: only rank 0 wrote
    values = _scalars(acc, "scenemetrics/puzzlesim")
    assert [s for s, _ in values] == [5, 10]
    expected, _ = _final_puzzlesim(model, scene, weights)  # both views; rank 0 rendered view 0, rank 1 view 1
    assert values[-1][1] == pytest.approx(expected, abs=1e-6)
    single = sm.PuzzleSim(scene.train_images, weights_path=weights)
    with torch.no_grad():
        single.update(model.render(scene.eval_viewmats[0]).clamp(0, 1))
    assert abs(float(single.compute()) - expected) > 1e-4  # the logged value is not rank 0's view alone
    tags = acc.Tags()["images"]
    assert "scenemetrics/puzzlesim/map/0" in tags and "scenemetrics/puzzlesim/map/1" not in tags


def test_resume_keeps_the_schedule(tmp_path, weights, scene) -> None:
    def callbacks():
        cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=5)
        # a second callback with the same prefix: panels from one of them only (the tags would be the same)
        other = SceneMetricsCallback(
            {"mean_render": sm.PuzzleSim(weights_path=weights)}, every_n_steps=7, panel_map=None
        )
        return cb, other

    cb, other = callbacks()
    ckpt = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=12, save_top_k=-1)
    tb = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    _trainer(tmp_path, max_steps=12, logger=tb, callbacks=[cb, other, ckpt], enable_checkpointing=True).fit(
        _model(scene)
    )
    assert [s for s, _ in _scalars(_events(tmp_path / "tb" / "version_0"), "scenemetrics/puzzlesim")] == [5, 10]
    path = next((tmp_path / "ckpt").glob("*step=12*.ckpt"))
    state = torch.load(path, weights_only=False)["callbacks"]
    saved = state[cb.state_key]
    assert (saved["last_eval_step"], saved["num_evaluations"]) == (10, 2)
    assert (state[other.state_key]["last_eval_step"], state[other.state_key]["num_evaluations"]) == (7, 1)
    # the display ranges of both views' maps and panels, fixed at step 5, travel in the checkpoint
    ranges = saved["pictures"]["ranges"]
    assert sorted(ranges) == [f"scenemetrics/{kind}/{i}" for kind in ("panel", "puzzlesim/map") for i in (0, 1)]
    assert {r[2] for r in ranges.values()} == {5}
    assert not any("puzzlesim" in k or "backbone" in k for k in torch.load(path, weights_only=False)["state_dict"])

    cb2, other2 = callbacks()
    tb2 = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=1)
    _trainer(tmp_path, max_steps=20, logger=tb2, callbacks=[cb2, other2]).fit(_model(scene), ckpt_path=path)
    assert [s for s, _ in _scalars(_events(tmp_path / "tb" / "version_1"), "scenemetrics/puzzlesim")] == [15, 20]
    assert (cb2.num_evaluations, cb2.last_eval_step) == (4, 20)
    # after the resume the panels keep the colours of steps 5 and 10: the colour bars are the same pictures
    before, after = _events(tmp_path / "tb" / "version_0"), _events(tmp_path / "tb" / "version_1")
    for i in (0, 1):
        tag = f"scenemetrics/panel/{i}"
        images = [_decode(e) for e in before.Images(tag)] + [_decode(e) for e in after.Images(tag)]
        assert [e.step for e in [*before.Images(tag), *after.Images(tag)]] == [5, 10, 15, 20]
        bars = {tuple(_colorbar_block(im, SIZE).flatten().tolist()) for im in images}
        assert len(bars) == 1
    assert cb2.state_dict()["pictures"]["ranges"] == ranges
    assert (other2.num_evaluations, other2.last_eval_step) == (2, 14)


class _ValidatedSplat(TinySplatModule):
    """Adds a validation loop (for the sanity check) and a frozen submodule (for mode restoration)."""

    def __init__(self, scene, **kwargs) -> None:
        super().__init__(scene, num_gaussians=48, lr=0.02, **kwargs)
        self.frozen = torch.nn.Linear(1, 1)

    def on_train_start(self) -> None:
        self.frozen.eval()

    def validation_step(self, batch, batch_idx):
        return None

    def val_dataloader(self):
        return torch.utils.data.DataLoader(torch.arange(2), batch_size=1)


def test_sanity_check_and_eval_at_start(tmp_path, weights, scene) -> None:
    seen: list[tuple[int, bool]] = []

    def render_fn(module, view):
        seen.append((module.trainer.global_step, module.trainer.sanity_checking))
        return module.render_view(view)

    cb = SceneMetricsCallback(
        {"puzzlesim": sm.PuzzleSim(weights_path=weights)},
        every_n_steps=4,
        eval_at_start=True,
        render_fn=render_fn,
        references=lambda trainer, module: module.train_images,
        max_reference_views=3,
    )
    trainer = _trainer(tmp_path, max_steps=4, callbacks=[cb], num_sanity_val_steps=2, val_check_interval=2)
    trainer.fit(_ValidatedSplat(scene))
    assert seen == [(0, False), (0, False), (4, False), (4, False)]
    assert cb.metrics["puzzlesim"].memory.num_references == 3


def test_model_modes_restored_after_a_failing_evaluation(tmp_path, weights, scene) -> None:
    def render_fn(module, view):
        assert not module.training and not module.frozen.training
        raise RuntimeError("render failed")

    model = _ValidatedSplat(scene)
    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=2, render_fn=render_fn)
    with pytest.raises(RuntimeError, match="render failed"):
        _trainer(tmp_path, max_steps=4, callbacks=[cb], limit_val_batches=0).fit(model)
    assert model.training and not model.frozen.training


def test_missing_references_and_renderer_errors(tmp_path, weights, scene) -> None:
    class NoRefs(TinySplatModule):
        reference_views = None

    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=2)
    with pytest.raises(ValueError, match=r"'puzzlesim'.*references=.*reference_views\(\)"):
        _trainer(tmp_path, max_steps=2, callbacks=[cb]).fit(NoRefs(scene, num_gaussians=8))

    class NoRender(TinySplatModule):
        render_view = None

    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, eval_views=[0], every_n_steps=2)
    with pytest.raises(TypeError, match="render_view"):
        _trainer(tmp_path, max_steps=2, callbacks=[cb]).fit(NoRender(scene, num_gaussians=8))

    class NoViews(TinySplatModule):
        eval_views = None

    cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=2)
    with pytest.raises(ValueError, match="eval_views"):
        _trainer(tmp_path, max_steps=2, callbacks=[cb]).fit(NoViews(scene, num_gaussians=8))


def test_standins_dataloader_views_and_epoch_schedule(tmp_path, scene, monkeypatch) -> None:
    """OSIM / PRISM contracts through Lightning: class scores, overlays, dict results, extras from render_fn."""
    from types import SimpleNamespace

    # the stand-in OSIM result has no boxes: the overlay picture is stubbed (its drawing has its own tests)
    monkeypatch.setattr(
        sm.osim,
        "low_objects_picture",
        lambda image, result, *, image_index=0, threshold=None, title=None: SimpleNamespace(
            image=torch.zeros(3, *image.shape[-2:], dtype=torch.uint8)
        ),
        raising=False,
    )

    side = min(SIZE)

    def render_fn(module, batch):
        # PRISM takes square views (its adapter skips others, with a warning): this producer crops them
        idx = int(batch[0])
        render = module.render(module.eval_viewmats[idx])[..., :side, :side]
        extras = {"source": module.train_images[idx][..., :side, :side], "pose": torch.tensor([0.0, 30.0 * idx, 0.0])}
        return render, module.eval_images[idx][..., :side, :side], extras

    osim, prism = OSIM(), PRISMDistance()
    cb = SceneMetricsCallback(
        {"osim": osim, "prism": prism},
        eval_views=torch.utils.data.DataLoader(torch.arange(2), batch_size=1),
        every_n_epochs=2,
        render_fn=render_fn,
    )
    tb = pl.loggers.TensorBoardLogger(tmp_path, name="tb", version=0)
    _trainer(tmp_path, max_epochs=4, limit_train_batches=3, logger=tb, callbacks=[cb]).fit(_model(scene))
    acc = _events(tmp_path / "tb")
    for tag in ("scenemetrics/osim", "scenemetrics/osim/class/potted_plant", "scenemetrics/prism/mean"):
        assert [s for s, _ in _scalars(acc, tag)] == [6, 12], tag
    assert "scenemetrics/prism/nested/double" in acc.Tags()["scalars"]
    assert [e.step for e in acc.Images("scenemetrics/osim/overlay/0")] == [6, 12]
    assert [e.step for e in acc.Images("scenemetrics/osim/overlay/1")] == [6, 12]
    assert prism.calls[0] == ((1, 3, side, side), (1, 3, side, side), (1, 3, side, side), (3,))


def test_callable_eval_views(tmp_path, scene) -> None:
    from tests.utils.standin_metrics import MeanRender

    def views(trainer, module):
        assert trainer.world_size == 1 and not module.training
        return [RenderedView(module.render(v)) for v in module.eval_viewmats]

    cb = SceneMetricsCallback(
        {"mean": MeanRender()}, eval_views=views, every_n_steps=3, update_fns={"mean": lambda m, r, t, e: m.update(r)}
    )
    model = _model(scene)
    _trainer(tmp_path, max_steps=3, callbacks=[cb]).fit(model)
    with torch.no_grad():
        expected = torch.stack([model.render(v).clamp(0, 1) for v in scene.eval_viewmats]).mean()
    assert float(model.trainer.callback_metrics["scenemetrics/mean"]) == pytest.approx(float(expected), rel=1e-6)


def _read_csv(path: Path, column: str) -> list[tuple[int, float]]:
    import csv

    with open(path, newline="") as f:
        return [(int(row["step"]), float(row[column])) for row in csv.DictReader(f) if row.get(column)]


def test_background_logs_the_same_tags_steps_values_and_images(tmp_path, weights, scene) -> None:
    from tests.utils.standin_metrics import MeanRender

    runs = {}
    for mode in ("sync", "background"):
        metrics = {"puzzlesim": sm.PuzzleSim(weights_path=weights, batch_size=8), "mean": MeanRender()}
        cb = SceneMetricsCallback(metrics, every_n_steps=5, log_renders=True, background=mode == "background")
        tb = pl.loggers.TensorBoardLogger(tmp_path, name=mode, version=0)
        csv = pl.loggers.CSVLogger(tmp_path, name=f"csv_{mode}", version=0)  # written by the training thread
        ckpt = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / f"ckpt_{mode}", every_n_train_steps=10, save_top_k=-1)
        model = _model(scene)
        _trainer(tmp_path, max_steps=20, logger=[tb, csv], callbacks=[cb, ckpt], enable_checkpointing=True).fit(model)
        runs[mode] = (cb, model, _events(tmp_path / mode / "version_0"))
    (sync_cb, sync_model, sync_acc), (bg_cb, bg_model, bg_acc) = runs["sync"], runs["background"]
    assert bg_acc.Tags()["scalars"] == sync_acc.Tags()["scalars"]
    assert sorted(bg_acc.Tags()["images"]) == sorted(sync_acc.Tags()["images"])
    assert {"scenemetrics/panel/1", "scenemetrics/puzzlesim/map/1", "scenemetrics/render/0"} <= set(
        bg_acc.Tags()["images"]
    )
    for tag in sync_acc.Tags()["scalars"]:
        if tag == "scenemetrics/eval_seconds":  # a wall time: same steps only
            assert [s for s, _ in _scalars(bg_acc, tag)] == [s for s, _ in _scalars(sync_acc, tag)] == [5, 10, 15, 20]
        else:
            assert _scalars(bg_acc, tag) == _scalars(sync_acc, tag), tag
    for tag in sync_acc.Tags()["images"]:
        sync_images, bg_images = sync_acc.Images(tag), bg_acc.Images(tag)
        assert [e.step for e in bg_images] == [e.step for e in sync_images] == [5, 10, 15, 20], tag
        assert all(torch.equal(_decode(a), _decode(b)) for a, b in zip(sync_images, bg_images, strict=True)), tag
    for tag in ("scenemetrics/puzzlesim", "scenemetrics/mean"):
        assert float(bg_model.trainer.callback_metrics[tag]) == float(sync_model.trainer.callback_metrics[tag])
        sync_csv = _read_csv(tmp_path / "csv_sync" / "version_0" / "metrics.csv", tag)
        assert _read_csv(tmp_path / "csv_background" / "version_0" / "metrics.csv", tag) == sync_csv
        assert [s for s, _ in sync_csv] == [5, 10, 15, 20]
    # a checkpoint taken while the step-10 evaluation was pending waited for it: the same state as synchronously
    for step in (10, 20):
        states = [
            torch.load(next((tmp_path / f"ckpt_{m}").glob(f"*step={step}*.ckpt")), weights_only=False)["callbacks"]
            for m in ("sync", "background")
        ]
        saved = [state[cb.state_key] for state, cb in zip(states, (sync_cb, bg_cb), strict=True)]
        assert saved[0]["num_evaluations"] == saved[1]["num_evaluations"] == step // 5
        assert saved[0]["pictures"]["ranges"] == saved[1]["pictures"]["ranges"]
        assert saved[0]["pictures"]["strip"]["steps"] == saved[1]["pictures"]["strip"]["steps"]


def test_background_failure_stops_the_fit_naming_the_step_and_the_metric(tmp_path, scene) -> None:
    import torchmetrics

    from scenemetrics.callbacks import BackgroundEvaluationError

    class Fails(torchmetrics.MeanSquaredError):
        def update(self, preds, target):
            raise ValueError("boom")

    model = _model(scene)
    cb = SceneMetricsCallback({"bad": Fails()}, every_n_steps=2, eval_views=[0], background=True, panel_map=None)
    with pytest.raises(BackgroundEvaluationError, match=r"step 2 failed while updating metric 'bad' with view 0"):
        _trainer(tmp_path, max_steps=6, callbacks=[cb]).fit(model)
    assert model.training  # rendering restored the modes; the error came later, from the worker
