"""Background evaluation (``background=True``) of ``SceneMetricsMonitor``: the same results as the synchronous mode,
failures at the next call, nothing lost at ``close()``, the ``max_pending`` bound, who writes which logger, DDP."""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch
import torchmetrics
from torchmetrics import Metric

import scenemetrics as sm
from scenemetrics.callbacks import BackgroundEvaluationError, SceneMetricsMonitor
from scenemetrics.callbacks.background import BackgroundWorker, copy_nbytes

ROOT = Path(__file__).resolve().parents[2]


class Gate(Metric):
    """Counts the views it sees; each ``update`` first waits until ``gate`` is open (to hold the worker back)."""

    full_state_update = False

    def __init__(self, gate: threading.Event, **kwargs) -> None:
        super().__init__(**kwargs)
        self.gate = gate
        self.add_state("n", torch.tensor(0.0), dist_reduce_fx="sum")
        self.threads: list[str] = []

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        assert self.gate.wait(20), "the test never opened the gate"
        self.threads.append(threading.current_thread().name)
        self.n += preds.shape[0]

    def compute(self) -> torch.Tensor:
        return self.n


class FailsAt(torchmetrics.MeanSquaredError):
    """Mean squared error whose ``update`` raises ``ValueError("boom")`` at the ``k``-th call (1-based)."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k, self.calls = k, 0

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        self.calls += 1
        if self.calls == self.k:
            raise ValueError("boom")
        super().update(preds, target)


class Recorder:
    """A callable logger: what was logged, at which step, from which thread."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict, dict, dict, str]] = []

    def __call__(self, result, step) -> None:
        thread = threading.current_thread().name
        self.rows.append((step, dict(result.scalars), dict(result.images), dict(result.display_ranges), thread))

    @property
    def steps(self) -> list[int]:
        return [row[0] for row in self.rows]


def _scene(n_views: int = 3, size: int = 24):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n_views, 3, size, size, generator=g), torch.rand(n_views, 3, size, size, generator=g)


def _metrics(weights, gate: threading.Event | None = None) -> dict[str, Metric]:
    refs = torch.rand(4, 3, 24, 24, generator=torch.Generator().manual_seed(1))
    metrics: dict[str, Metric] = {}
    if gate is not None:
        metrics["gate"] = Gate(gate)  # first: holds the worker before any other metric sees a view
    metrics["mse"] = torchmetrics.MeanSquaredError()
    metrics["psnr"] = torchmetrics.image.PeakSignalNoiseRatio(data_range=1.0)
    metrics["puzzlesim"] = sm.PuzzleSim(refs, weights_path=weights)
    return metrics


def _train(monitor: SceneMetricsMonitor, steps: int) -> tuple[list, list]:
    """A loop whose "model" changes in place at every step; render_fn returns views OF the parameter (no copy), so a
    background evaluation that did not copy would score later weights."""
    param, targets = _scene()
    param.mul_(0.5)
    returned, calls = [], []

    def render_fn(v):
        calls.append(v)
        return param[v] * 1.5, targets[v]  # a new tensor, but targets[v] is a view of the data set

    for step in range(1, steps + 1):
        param.add_(0.05).clamp_(0, 1)  # the optimizer step, in place
        targets.mul_(0.999)  # even the "data set" drifts: the copies must be taken at the due step
        returned.append(monitor.maybe_log(step, render_fn, views=[0, 1, 2]))
    return returned, calls


def _same(a, b) -> bool:
    """Equal nested data, tensors compared exactly."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("max_pending", [1, 4])
def test_background_results_equal_synchronous_ones(tmp_path, max_pending) -> None:
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    sync_log, bg_log = Recorder(), Recorder()
    sync = SceneMetricsMonitor(_metrics(weights), every_n_steps=2, logger=sync_log, max_logged_images=2)
    sync_returned, _ = _train(sync, steps=8)

    gate = threading.Event()  # the worker waits until the loop is over: every evaluation is scored late
    background = SceneMetricsMonitor(_metrics(weights, gate), every_n_steps=2, logger=bg_log, max_logged_images=2,
                                     background=True, max_pending=max_pending)  # fmt: skip
    if max_pending == 1:  # the loop waits for the worker at step 4 (tested below): let the worker run along
        gate.set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the max_pending=1 loop waits for the worker (tested below)
        bg_returned, _ = _train(background, steps=8)
    gate.set()
    background.close()

    assert [r is None for r in bg_returned] == [r is None for r in sync_returned]
    futures = [r for r in bg_returned if r is not None]
    assert all(isinstance(f, Future) and f.done() for f in futures)
    assert sync_log.steps == bg_log.steps == [2, 4, 6, 8]
    for (step, s_scalars, s_images, s_ranges, _), (_, b_scalars, b_images, b_ranges, _) in zip(
        sync_log.rows, bg_log.rows, strict=True
    ):
        s_scalars.pop("scenemetrics/eval_seconds"), b_scalars.pop("scenemetrics/eval_seconds")
        assert b_scalars.pop("scenemetrics/gate") == 3.0
        assert b_scalars == s_scalars, step  # exactly: the same computation on the same values
        assert list(b_images) == list(s_images) and all(torch.equal(b_images[t], s_images[t]) for t in s_images)
        assert b_ranges == s_ranges
    assert {t for t in sync_log.rows[-1][2]} >= {"scenemetrics/panel/0", "scenemetrics/panel_over_time/0",
                                                  "scenemetrics/puzzlesim/map/1"}  # fmt: skip
    # the futures hold the results that were logged
    assert [f.result().scalars["scenemetrics/mse"] for f in futures] == [r[1]["scenemetrics/mse"] for r in bg_log.rows]
    assert _same(background.state_dict()["pictures"], sync.state_dict()["pictures"])  # ranges, tiles over time
    assert (background.num_evaluations, background.last_eval_step) == (sync.num_evaluations, sync.last_eval_step)
    # the metrics ran in the worker thread; the callable logger was called from this (the training) thread
    threads = background.metrics["gate"].threads
    assert len(threads) == 12 and all(name.startswith("scenemetrics-eval") for name in threads)
    assert {row[4] for row in bg_log.rows} == {threading.current_thread().name}


def test_a_failing_metric_surfaces_at_the_next_call_naming_the_step_and_the_metric() -> None:
    renders, targets = _scene()
    log = Recorder()
    monitor = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError(), "bad": FailsAt(k=4)}, every_n_steps=2,
                                  logger=log, background=True, panel_map=None)  # fmt: skip

    def render_fn(v):
        return renders[v], targets[v]

    monitor.maybe_log(2, render_fn, views=[0, 1, 2]).result()  # calls 1-3 of 'bad'
    failed = monitor.maybe_log(4, render_fn, views=[0, 1, 2])  # call 4 raises in the worker
    assert isinstance(failed.exception(timeout=20), BackgroundEvaluationError)
    with pytest.raises(BackgroundEvaluationError, match=r"step 4 failed while updating metric 'bad' with view 0") as e:
        monitor.maybe_log(5, render_fn, views=[0, 1, 2])
    assert isinstance(e.value.__cause__, ValueError) and str(e.value.__cause__) == "boom"
    assert (e.value.step, e.value.activity) == (4, "updating metric 'bad' with view 0")
    assert log.steps == [2]  # step 4 was not logged
    # raised once: the loop may go on (as after a synchronous failure), later evaluations run and log once
    assert monitor.maybe_log(5, render_fn, views=[0, 1, 2]) is None
    monitor.maybe_log(6, render_fn, views=[0, 1, 2])
    monitor.close()
    assert log.steps == [2, 6]
    monitor.close()  # nothing left: no second report, no second log
    assert log.steps == [2, 6]


def test_value_errors_surface_later_shape_errors_at_once() -> None:
    monitor = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=1, background=True,
                                  panel_map=None)  # fmt: skip
    zeros, nan = torch.zeros(1, 3, 8, 8), torch.full((1, 3, 8, 8), float("nan"))
    failed = monitor.maybe_log(1, lambda: [(zeros, zeros), (nan, zeros)])  # reading values would wait for a GPU
    failed.exception(timeout=20)
    with pytest.raises(BackgroundEvaluationError, match=r"step 1 failed while checking view 1: ValueError: "
                       r"render_fn\(\) \(view 1\) returned a render with NaN or infinite values"):  # fmt: skip
        monitor.maybe_log(2, lambda: [(zeros, zeros)])
    with pytest.raises(ValueError, match=r"render_fn\(\) \(view 0\) returned a render of shape \(2, 8, 8\)"):
        monitor.maybe_log(3, lambda: [(torch.zeros(2, 8, 8), None)])
    monitor.close()


def test_close_raises_a_pending_failure_and_skips_what_was_queued_after_it() -> None:
    renders, targets = _scene()
    gate = threading.Event()
    log = Recorder()
    monitor = SceneMetricsMonitor({"gate": Gate(gate), "bad": FailsAt(k=1)}, every_n_steps=1, logger=log,
                                  background=True, max_pending=3, panel_map=None)  # fmt: skip
    first = monitor.maybe_log(1, lambda: [(renders[0], targets[0])])
    second = monitor.maybe_log(2, lambda: [(renders[1], targets[1])])  # queued behind the failing one
    gate.set()
    with pytest.raises(BackgroundEvaluationError, match=r"step 1 failed while updating metric 'bad'"):
        monitor.close()
    assert isinstance(first.exception(), BackgroundEvaluationError) and not first.exception().skipped
    skipped = second.exception()
    assert isinstance(skipped, BackgroundEvaluationError) and skipped.skipped and "not run" in str(skipped)
    assert log.steps == []
    monitor.close()  # reported once


def test_close_and_state_dict_lose_nothing(tmp_path) -> None:
    renders, targets = _scene()
    gate = threading.Event()
    log = Recorder()
    monitor = SceneMetricsMonitor({"gate": Gate(gate), "mse": torchmetrics.MeanSquaredError()}, every_n_steps=1,
                                  logger=log, background=True, max_pending=10)  # fmt: skip
    futures = [monitor.maybe_log(step, lambda: [(renders[0], targets[0])]) for step in range(1, 6)]
    assert log.steps == [] and not any(f.done() for f in futures)
    threading.Timer(0.2, gate.set).start()
    state = monitor.state_dict()  # a checkpoint waits for the pending evaluations: its state covers them all
    assert log.steps == [1, 2, 3, 4, 5] and all(f.done() for f in futures)
    assert (state["num_evaluations"], state["last_eval_step"]) == (5, 5)
    assert state["pictures"]["ranges"]["scenemetrics/panel/0"][2] == 1  # fixed at the first evaluation
    assert set(state["pictures"]["strip"]["steps"]) == {1, 2, 3, 4, 5}
    monitor.maybe_log(6, lambda: [(renders[0], targets[0])])
    monitor.close()
    assert log.steps == [1, 2, 3, 4, 5, 6]  # each once, in step order


def test_max_pending_bound_the_training_thread_waits_and_is_told_once() -> None:
    renders, targets = _scene()
    gate = threading.Event()
    seen: list[tuple[int, bool]] = []
    monitor = SceneMetricsMonitor({"gate": Gate(gate)}, every_n_steps=1, background=True, max_pending=2,
                                  panel_map=None)  # fmt: skip

    def render_fn(step):
        def fn():
            seen.append((step, gate.is_set()))
            return [(renders[0], targets[0])]

        return fn

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        monitor.maybe_log(1, render_fn(1))
        monitor.maybe_log(2, render_fn(2))  # two in flight: the bound, no wait yet
        assert monitor._worker.pending == 2 and caught == []
        threading.Timer(0.3, gate.set).start()
        start = time.perf_counter()
        monitor.maybe_log(3, render_fn(3))  # waits for step 1 before it renders
        waited = time.perf_counter() - start
    assert waited >= 0.25 and seen == [(1, False), (2, False), (3, True)]
    assert [str(w.message).split(";")[0] for w in caught] == [
        "SceneMetricsMonitor: an evaluation is due at step 3 while 2 evaluation(s) still run in the background "
        "(max_pending=2)"
    ]
    assert caught[0].filename == __file__  # the warning points at the loop's maybe_log
    monitor.state_dict()  # waits for steps 2 and 3
    gate.clear()
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        monitor.maybe_log(4, render_fn(4))
        monitor.maybe_log(5, render_fn(5))
        threading.Timer(0.2, gate.set).start()
        monitor.maybe_log(6, render_fn(6))  # waits again, says nothing
    assert again == []
    monitor.close()
    with pytest.raises(ValueError, match="`max_pending` must be an int >= 1; received 0"):
        SceneMetricsMonitor({"gate": Gate(gate)}, background=True, max_pending=0)


def test_writer_in_the_worker_wandb_run_in_the_training_thread_with_its_step_as_a_column() -> None:
    wandb = pytest.importorskip("wandb")
    renders, targets = _scene()

    class Writer:  # a SummaryWriter's interface (torch's is thread-safe: its event queue has a lock)
        def __init__(self):
            self.calls: list[tuple[str, int, str]] = []

        def add_scalar(self, tag, value, global_step=None):
            self.calls.append((tag, global_step, threading.current_thread().name))

        def add_image(self, tag, image, global_step=None, dataformats="CHW"):
            self.calls.append((tag, global_step, threading.current_thread().name))

    class Run:  # a wandb run: rows logged with step= below W&B's current step would be dropped
        def __init__(self):
            self.rows, self.axes = [], []

        def log(self, row, step=None):
            self.rows.append((step, row, threading.current_thread().name))

        def define_metric(self, name, step_metric=None):
            self.axes.append((name, step_metric))

    Run.__module__ = "wandb.sdk.wandb_run"
    writer, run = Writer(), Run()
    for logger in (writer, run):
        with SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=2, logger=logger,
                                 background=True, max_pending=2) as monitor:  # fmt: skip
            for step in range(1, 5):
                monitor.maybe_log(step, lambda: [(renders[0], targets[0])])
    main = threading.current_thread().name
    assert {step for _, step, _ in writer.calls} == {2, 4}
    assert {thread for _, _, thread in writer.calls} != {main}  # the worker wrote it
    columns = [(step, row["scenemetrics/step"], thread) for step, row, thread in run.rows]
    assert columns == [(None, 2, main), (None, 4, main)]
    assert isinstance(run.rows[0][1]["scenemetrics/panel/0"], wandb.Image)
    assert run.axes == [("scenemetrics/step", None), ("scenemetrics/*", "scenemetrics/step")]


def test_copies_are_what_the_worker_holds() -> None:
    worker = BackgroundWorker("test", max_pending=1)
    render = torch.zeros(1, 3, 8, 8)
    target = torch.zeros(1, 3, 8, 8, dtype=torch.float64)
    seen = []
    worker.submit(3, [(0, render, target)], lambda copies: seen.append(copies) or sm.callbacks.EvaluationResult())
    render += 1
    worker.close()
    (copies,) = seen
    assert float(copies[0][1].sum()) == 0.0 and copies[0][1].data_ptr() != render.data_ptr()
    assert worker.copy_bytes == copy_nbytes([(0, render, target)]) == 3 * 64 * (4 + 8)


def _ddp_worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import datetime

    torch.distributed.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        renders, targets = _scene(n_views=5)
        logged: dict[str, list] = {"sync": [], "background": []}
        for mode in ("sync", "background"):
            monitor = SceneMetricsMonitor(
                {"mse": torchmetrics.MeanSquaredError(), "psnr": torchmetrics.image.PeakSignalNoiseRatio(1.0)},
                every_n_steps=1,
                logger=lambda result, step, mode=mode: logged[mode].append((step, result.scalars["scenemetrics/mse"])),
                background=mode == "background",
                max_pending=2,
            )
            grads = torch.ones(1000)
            for step in range(1, 6):
                scale = 1.0 + 0.1 * step
                monitor.maybe_log(step, lambda v, s=scale: ((renders[v] * s).clamp(0, 1), targets[v]),
                                  views=list(range(5)))  # fmt: skip
                for _ in range(5):  # the training thread's own collectives (DDP's gradient all-reduce) meanwhile
                    torch.distributed.all_reduce(grads)
            monitor.close()
            if mode == "background":
                group = monitor.metrics["mse"].process_group
                logged["own_group"] = group is not None and group is not torch.distributed.group.WORLD
        try:
            SceneMetricsMonitor({"m": torchmetrics.MeanSquaredError(process_group=torch.distributed.group.WORLD)},
                                every_n_steps=1, background=True).maybe_log(1, lambda: [])  # fmt: skip
        except ValueError as err:
            logged["error"] = str(err)
        torch.save(logged, Path(out) / f"rank{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_processes_background_syncs_on_its_own_group_with_the_synchronous_values(tmp_path) -> None:
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sys.path.insert(0, str(ROOT))
    mp.spawn(_ddp_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True)
    r0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    r1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    renders, targets = _scene(n_views=5)
    expected = [
        (step, float(torch.stack([(((r * (1 + 0.1 * step)).clamp(0, 1) - t) ** 2).mean()
                                  for r, t in zip(renders, targets, strict=True)]).mean()))
        for step in range(1, 6)
    ]  # fmt: skip
    assert [s for s, _ in r0["sync"]] == [1, 2, 3, 4, 5]
    assert r0["sync"] == [(s, pytest.approx(v, rel=1e-6)) for s, v in expected]
    assert r0["background"] == r0["sync"]  # the same synced values at the same steps
    assert r1["sync"] == r1["background"] == []  # rank 0 logs
    assert r0["own_group"] and r1["own_group"]
    assert "metric 'm' has its own process_group" in r0["error"] and "background=False" in r0["error"]


@pytest.mark.gpu
def test_cuda_background_equals_synchronous_and_keeps_the_training_stream_free(tmp_path) -> None:
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    logs = {}
    for mode in ("sync", "background"):
        log = Recorder()
        monitor = SceneMetricsMonitor(
            {k: m for k, m in _metrics(weights).items()}, every_n_steps=2, logger=log, background=mode == "background"
        ).to("cuda")
        param, targets = (t.cuda() for t in _scene())
        for step in range(1, 9):
            param.mul_(0.9).add_(0.05)
            monitor.maybe_log(step, lambda v, p=param, t=targets: (p[v], t[v]), views=[0, 1, 2])
        monitor.close()
        logs[mode] = log
    assert logs["sync"].steps == logs["background"].steps == [2, 4, 6, 8]
    for s_row, b_row in zip(logs["sync"].rows, logs["background"].rows, strict=True):
        s_row[1].pop("scenemetrics/eval_seconds"), b_row[1].pop("scenemetrics/eval_seconds")
        assert s_row[1] == b_row[1]
        assert all(torch.equal(s_row[2][t], b_row[2][t]) for t in s_row[2])
        assert s_row[3] == b_row[3]
