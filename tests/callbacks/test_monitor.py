"""``SceneMetricsMonitor``: the callbacks' evaluation in a plain training loop (schedule, loggers, DDP, example)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch
import torchmetrics

from scenemetrics.callbacks import SceneMetricsMonitor

ROOT = Path(__file__).resolve().parents[2]


def _views(n=3, size=8):
    g = torch.Generator().manual_seed(0)
    renders = torch.rand(n, 1, 3, size, size, generator=g)
    targets = torch.rand(n, 1, 3, size, size, generator=g)
    return renders, targets


def test_renders_only_on_schedule_and_resumes(tmp_path):
    renders, targets = _views()
    calls, logged = [], []

    def render_fn(v):
        calls.append(v)
        return renders[v], targets[v]

    monitor = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=3,
                                  logger=lambda result, step: logged.append((step, dict(result.scalars))))  # fmt: skip
    for step in range(8):
        monitor.maybe_log(step, render_fn, views=[0, 1, 2])
    assert [s for s, _ in logged] == [3, 6] and calls == [0, 1, 2, 0, 1, 2]
    expected = torch.stack([((r - t) ** 2).mean() for r, t in zip(renders, targets, strict=True)]).mean()
    assert logged[0][1]["scenemetrics/mse"] == pytest.approx(float(expected), rel=1e-6)
    assert "scenemetrics/eval_seconds" in logged[0][1]
    state = monitor.state_dict()
    assert (state["last_eval_step"], state["num_evaluations"]) == (6, 2)
    # the panels' display ranges were fixed at step 3 and travel with the state
    assert {tag: r[2] for tag, r in state["pictures"]["ranges"].items()} == {
        f"scenemetrics/panel/{i}": 3 for i in range(3)
    }
    resumed = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=3)
    resumed.load_state_dict(state)
    assert not resumed.should_log(6) and resumed.should_log(9)


def test_render_fn_without_views_and_target_free_metrics(tmp_path):
    pytest.importorskip("torchvision")
    import scenemetrics as sm

    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    refs = torch.rand(3, 3, 32, 32)
    monitor = SceneMetricsMonitor({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, references=lambda: refs,
                                  every_n_steps=1, max_logged_images=1)  # fmt: skip
    result = monitor.maybe_log(1, lambda: [(torch.rand(1, 3, 32, 32), None), (torch.rand(3, 32, 32), None)])
    assert set(result.scalars) == {"scenemetrics/puzzlesim", "scenemetrics/eval_seconds"}
    image = result.images["scenemetrics/puzzlesim/map/0"]
    assert image.dtype == torch.uint8 and image.shape[0] == 3 and image.shape[1] >= 32
    assert list(result.images) == ["scenemetrics/puzzlesim/map/0"]  # only views < max_logged_images


def test_missing_references_and_bad_arguments(tmp_path):
    import scenemetrics as sm

    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    monitor = SceneMetricsMonitor({"p": sm.PuzzleSim(weights_path=weights)}, every_n_steps=1)
    with pytest.raises(ValueError, match="SceneMetricsMonitor: metric 'p' needs reference images"):
        monitor.maybe_log(1, lambda: [(torch.rand(1, 3, 16, 16), None)])
    metric = {"mse": torchmetrics.MeanSquaredError()}
    with pytest.raises(TypeError, match=r"logger must be a torch\.utils\.tensorboard\.SummaryWriter"):
        SceneMetricsMonitor(metric, logger=42)
    with pytest.raises(ValueError, match="`every_n_steps` must be an int >= 1"):
        SceneMetricsMonitor(metric, every_n_steps=0)
    with pytest.raises(TypeError, match="`references` must be a tensor"):
        SceneMetricsMonitor(metric, references="train/")
    with pytest.raises(TypeError, match="one-shot iterator"):
        SceneMetricsMonitor(metric, every_n_steps=1).evaluate(1, lambda v: v, views=iter([1]))


def test_wandb_run_gets_one_row_per_evaluation():
    wandb = pytest.importorskip("wandb")

    class Run:  # what SceneMetricsMonitor needs of a wandb run: `log(row, step=...)`
        def __init__(self):
            self.rows = []

        def log(self, row, step=None):
            self.rows.append((step, row))

    Run.__module__ = "wandb.sdk.wandb_run"
    run = Run()
    monitor = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=2, logger=run,
                                  log_renders=True)  # fmt: skip
    monitor.maybe_log(2, lambda: [(torch.zeros(1, 3, 4, 4), torch.ones(1, 3, 4, 4))])
    ((step, row),) = run.rows
    assert step == 2 and row["scenemetrics/mse"] == 1.0
    assert isinstance(row["scenemetrics/render/0"], wandb.Image)


def _load_example():
    path = ROOT / "examples" / "monitor_tiny_splat.py"
    spec = importlib.util.spec_from_file_location("monitor_tiny_splat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("background", [False, True])
def test_example_loop_writes_tensorboard_events(tmp_path, background):
    # background: the SummaryWriter is written by the worker thread; the same tags at the same steps
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    example = _load_example()
    monitor = example.main(
        [
            "--steps",
            "4",
            "--every-n-steps",
            "2",
            "--gaussians",
            "24",
            "--size",
            "24",
            "--train-views",
            "3",
            "--eval-views",
            "2",
            "--random-weights",
            "--out",
            str(tmp_path),
            *(["--background"] if background else []),
        ]
    )
    assert monitor.num_evaluations == 2 and monitor.background is background
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"scenemetrics/puzzlesim", "scenemetrics/psnr", "train/l1"} <= set(tags["scalars"])
    assert [e.step for e in acc.Scalars("scenemetrics/puzzlesim")] == [2, 4]
    assert all(0.0 <= e.value <= 1.0 for e in acc.Scalars("scenemetrics/puzzlesim"))
    assert {"scenemetrics/puzzlesim/map/0", "scenemetrics/puzzlesim/map/1"} <= set(tags["images"])
    # render | target | abs error panels of both views at both steps, and view 0's error over time
    for tag in ("scenemetrics/panel/0", "scenemetrics/panel/1", "scenemetrics/panel_over_time/0"):
        assert [e.step for e in acc.Images(tag)] == [2, 4], tag
    assert set(monitor.state_dict()["pictures"]["ranges"]) == {
        "scenemetrics/panel/0", "scenemetrics/panel/1", "scenemetrics/puzzlesim/map/0", "scenemetrics/puzzlesim/map/1"
    }  # fmt: skip


def _ddp_worker(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    try:
        renders, targets = _views(n=5)
        logged = []
        monitor = SceneMetricsMonitor(
            {"mse": torchmetrics.MeanSquaredError()},
            every_n_steps=1,
            logger=lambda result, step: logged.append(result.scalars["scenemetrics/mse"]),
        )
        monitor.maybe_log(1, lambda v: (renders[v], targets[v]), views=list(range(5)))
        torch.save({"rank": rank, "logged": logged}, Path(out) / f"rank{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_processes_log_once_with_the_value_of_one(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sys.path.insert(0, str(ROOT))
    mp.spawn(_ddp_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True)
    r0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    r1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    renders, targets = _views(n=5)
    single = float(torch.stack([((r - t) ** 2).mean() for r, t in zip(renders, targets, strict=True)]).mean())
    assert r1["logged"] == [] and r0["logged"] == [pytest.approx(single, rel=1e-6)]
