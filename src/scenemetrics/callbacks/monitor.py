"""``SceneMetricsMonitor``: the training callbacks' evaluation for any training loop (no Lightning, no nerfstudio).

For loops such as gsplat's ``examples/simple_trainer.py`` or the original 3DGS ``train.py``: two lines, one to
build the monitor and one per step::

    monitor = SceneMetricsMonitor({"puzzlesim": sm.PuzzleSim()}, references=train_images,
                                  every_n_steps=500, logger=SummaryWriter("runs/scene"))
    ...
    monitor.maybe_log(step, render_fn)      # renders only when it will log

It shares the Lightning callback's machinery (the same :class:`~scenemetrics.callbacks.evaluation.MetricRunner`
update dispatch, schedule, reference handling, map pictures and tags): ``every_n_steps`` means the same, the same
``scenemetrics/...`` scalars and ``.../map/<i>`` images are written. Under ``torch.distributed`` every process
renders its share of the views (``views=`` given) or whatever ``render_fn()`` yields, every process computes (metric
states are synced by torchmetrics) and only rank 0 logs.

With ``background=True`` the loop only renders: scoring, drawing and logging run in a worker thread
(:mod:`scenemetrics.callbacks.background`); call :meth:`SceneMetricsMonitor.close` after training (or use the
monitor as a context manager) so that the last evaluations are logged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from time import perf_counter
from types import TracebackType
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.callbacks.background import BackgroundWorker, check_max_pending, side_process_group
from scenemetrics.callbacks.evaluation import (
    EvaluationResult,
    MetricRunner,
    UpdateFn,
    check_max_views,
    check_references_arg,
    check_schedule,
    is_due,
    shard_indices,
)
from scenemetrics.callbacks.logging import log_result, logger_kind
from scenemetrics.callbacks.pictures import DEFAULT_PANEL_MAP, DEFAULT_STRIP_STEPS
from scenemetrics.callbacks.views import (
    RenderedView,
    as_rendered_view,
    check_view,
    is_one_shot,
    normalize_view,
    prepare_view,
)

__all__ = ["SceneMetricsMonitor"]

DEFAULT_EVERY_N_STEPS = 500


def _dist() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class SceneMetricsMonitor:
    """Score rendered views every ``every_n_steps`` steps of a plain training loop and log scalars and maps.

    Args:
        metrics: name -> ``torchmetrics.Metric`` (e.g. ``{"puzzlesim": sm.PuzzleSim(), "psnr": PSNR(1.0)}``).
        references: training views for cross-reference metrics (PuzzleSim): ``(N, 3, H, W)`` in [0, 1], a list of
            ``(3, H, W)`` tensors, or a zero-argument callable returning either (called once, at the first log).
        every_n_steps: log when ``step > 0`` and ``step % every_n_steps == 0`` (default 500).
        logger: a ``torch.utils.tensorboard.SummaryWriter``, a ``wandb`` run, a callable ``fn(result, step)``, or
            ``None`` (results are only returned).
        max_reference_views: use at most this many references, evenly spaced.
        update_fns: name -> ``fn(metric, render, target, extras)`` replacing the default update of that metric.
        log_maps: log metric maps (``last_maps``) and OSIM overlays.
        log_renders: log the renders too.
        max_logged_images: views with index ``< max_logged_images`` get images.
        map_colormap: colormap of similarity maps (error maps get its reversal: warm always means bad).
        prefix: prefix of every tag.
        clamp_renders: clamp renders to [0, 1] before the metrics (targets are validated, never clamped).
        panel_map: the map of the render | target | map panels ``{prefix}panel/{i}`` of views with a target:
            ``"abs"`` (default), ``"ssim"``, ``"lpips"`` or ``None`` (as :class:`~scenemetrics.callbacks.
            SceneMetricsCallback`).
        map_range: display range of maps and panels: ``"first"`` (default: fixed per tag at its first logged step;
            in :meth:`state_dict`), ``"per-map"`` or ``(vmin, vmax)``.
        strip_steps: steps shown by the panel over time ``{prefix}panel_over_time/{i}``; 0: none.
        background: score, draw and log in a worker thread; the training thread only renders the due views and
            hands over detached copies (:meth:`maybe_log` then returns a ``concurrent.futures.Future``). The same
            scalars at the same steps, the same images and display ranges as without. A ``SummaryWriter`` is
            written by the worker; a wandb run or a callable logger by the training thread, at its next
            :meth:`maybe_log` (or :meth:`close`) after the evaluation finished, with the step of the evaluation.
        max_pending: with ``background``, evaluations in flight at most; when one more is due the training thread
            waits (one warning). Each holds a copy of its rendered views (renders, targets, extras).

    Raises:
        ValueError: invalid arguments (named in the message).
        TypeError: ``references`` or ``logger`` of an unsupported type.

    Example:
        >>> import torch, torchmetrics
        >>> from scenemetrics.callbacks import SceneMetricsMonitor
        >>> logged = []
        >>> monitor = SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=2,
        ...                               logger=lambda result, step: logged.append((step, result.scalars)))
        >>> render = lambda: [(torch.ones(1, 3, 8, 8), torch.zeros(1, 3, 8, 8))]
        >>> [monitor.maybe_log(step, render) is not None for step in range(4)]
        [False, False, True, False]
        >>> logged[0][0], logged[0][1]["scenemetrics/mse"]
        (2, 1.0)

        In the background (the loop goes on while the worker scores; ``close()`` waits and logs what is left):

        >>> logged.clear()
        >>> with SceneMetricsMonitor({"mse": torchmetrics.MeanSquaredError()}, every_n_steps=2, background=True,
        ...                          max_pending=2,
        ...                          logger=lambda result, step: logged.append((step, result.scalars))) as monitor:
        ...     futures = [monitor.maybe_log(step, render) for step in range(5)]
        >>> [step for step, _ in logged], futures[2].result().scalars["scenemetrics/mse"]
        ([2, 4], 1.0)
    """

    def __init__(
        self,
        metrics: Mapping[str, Metric],
        *,
        references: Tensor | Sequence[Tensor] | Callable[[], Any] | None = None,
        every_n_steps: int = DEFAULT_EVERY_N_STEPS,
        logger: Any = None,
        max_reference_views: int | None = None,
        update_fns: Mapping[str, UpdateFn] | None = None,
        log_maps: bool = True,
        log_renders: bool = False,
        max_logged_images: int = 4,
        map_colormap: str = "jet_r",
        prefix: str = "scenemetrics/",
        clamp_renders: bool = True,
        panel_map: str | None = DEFAULT_PANEL_MAP,
        map_range: str | tuple[float, float] = "first",
        strip_steps: int = DEFAULT_STRIP_STEPS,
        background: bool = False,
        max_pending: int = 1,
    ) -> None:
        self._runner = MetricRunner(
            metrics,
            update_fns=update_fns,
            log_maps=log_maps,
            log_renders=log_renders,
            max_logged_images=max_logged_images,
            map_colormap=map_colormap,
            prefix=prefix,
            panel_map=panel_map,
            map_range=map_range,
            strip_steps=strip_steps,
        )
        self.metrics = self._runner.metrics
        every = check_schedule(every_n_steps, "every_n_steps")
        if every is None:
            raise ValueError("`every_n_steps` must be an int >= 1; received None")
        self.every_n_steps = every
        self.references = check_references_arg(references, "() -> references")
        self.max_reference_views = check_max_views(max_reference_views)
        if logger is not None:
            logger_kind(logger)  # a TypeError now, naming the type, rather than at the first log
        self.logger = logger
        self.prefix = prefix
        self.clamp_renders = bool(clamp_renders)
        self.last_eval_step = -1
        self.num_evaluations = 0
        self._references_ready = False
        self.background = bool(background)
        self.max_pending = check_max_pending(max_pending)
        self._worker = BackgroundWorker("SceneMetricsMonitor", self.max_pending) if self.background else None
        self._group: Any = None  # the evaluations' own process group (background, torch.distributed)
        self._group_ready = False
        self._wandb_axis = False

    def to(self, device: torch.device | str) -> SceneMetricsMonitor:
        """Move every metric to ``device`` (renders are moved to each metric's device anyway); in the background
        mode after the pending evaluations."""
        if self._worker is not None:
            self._worker.drain()
        for metric in self.metrics.values():
            metric.to(device)
        return self

    # -- checkpoint state (resume keeps the schedule) --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"last_eval_step", "num_evaluations", "pictures"}``: save it with your checkpoint to resume the schedule
        and keep the pictures' display ranges (plain data and ``uint8`` tensors: ``torch.load(...,
        weights_only=True)`` reads it back). In the background mode it first waits for the pending evaluations
        (and logs them), so the state covers every evaluation it counts."""
        if self._worker is not None:
            self._worker.drain()
        return {
            "last_eval_step": self.last_eval_step,
            "num_evaluations": self.num_evaluations,
            "pictures": self._runner.state_dict(),
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.last_eval_step = int(state_dict["last_eval_step"])
        self.num_evaluations = int(state_dict["num_evaluations"])
        self._runner.load_state_dict(state_dict.get("pictures") or {})

    # -- the loop's entry points -----------------------------------------------------------------------------------
    def should_log(self, step: int) -> bool:
        """Whether :meth:`maybe_log` at ``step`` evaluates (the Lightning callback's step schedule)."""
        return is_due(int(step), self.every_n_steps, self.last_eval_step)

    def maybe_log(
        self, step: int, render_fn: Callable[..., Any], views: Sequence[Any] | None = None
    ) -> EvaluationResult | Future[EvaluationResult] | None:
        """Evaluate and log at ``step`` if it is due; ``render_fn`` is not called otherwise.

        In the background mode every call first hands back the evaluations that finished (the training thread logs
        them to a wandb run or a callable logger) and raises the failure of one, if any.

        Args:
            step: the training step.
            render_fn: with ``views``: ``render_fn(view) -> RenderedView | (render, target) | (render, target,
                extras)`` for each view of this process; without: ``render_fn() -> iterable`` of such items.
            views: the evaluation views (indices, cameras, ...); under ``torch.distributed`` each process renders
                ``views[i]`` for ``i % world_size == rank``.

        Returns:
            ``None`` when nothing is due; else the :class:`~scenemetrics.callbacks.evaluation.EvaluationResult`, or in
            the background mode a ``concurrent.futures.Future`` of it.

        Raises:
            BackgroundEvaluationError: an earlier background evaluation failed (the message names its step and what
                failed, e.g. the metric; the original exception is its ``__cause__``).
        """
        if self._worker is not None:
            self._worker.poll()
        if not self.should_log(step):
            return None
        return self.evaluate(step, render_fn, views)

    def evaluate(
        self, step: int, render_fn: Callable[..., Any], views: Sequence[Any] | None = None
    ) -> EvaluationResult | Future[EvaluationResult]:
        """Evaluate now (under ``torch.no_grad()``) and log at ``step`` on rank 0 (in the background mode: render now,
        return the future of the result)."""
        if views is not None and is_one_shot(views):
            raise TypeError(f"`views` is a one-shot iterator ({type(views).__name__}); pass a list or a tuple")
        if self._worker is not None:
            return self._evaluate_in_background(int(step), render_fn, views)
        rank, world = _dist()
        with torch.no_grad():
            self._ensure_references()
            start = perf_counter()
            views_done = (
                (index, prepare_view(item, producer, index, clamp=self.clamp_renders))
                for index, producer, item in self._rendered_views(render_fn, views, rank, world)
            )
            result = self._score(int(step), views_done, rank, world, None)
        result.scalars[f"{self.prefix}eval_seconds"] = perf_counter() - start
        self.last_eval_step = int(step)
        self.num_evaluations += 1
        if rank == 0 and self.logger is not None:
            log_result(self.logger, result, int(step))
        return result

    def close(self) -> None:
        """Background mode: wait for the pending evaluations and log them (call it after training, before closing
        the logger); the failure of one is raised here. Nothing to do in the synchronous mode.

        Raises:
            BackgroundEvaluationError: a background evaluation failed (naming its step and what failed).
        """
        if self._worker is not None:
            self._worker.close()

    def __enter__(self) -> SceneMetricsMonitor:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._worker is not None:
            self._worker.close(raise_errors=exc is None)

    # -- internals -------------------------------------------------------------------------------------------------
    def _score(
        self, step: int, views: Iterable[tuple[int, RenderedView]], rank: int, world: int, group: Any
    ) -> EvaluationResult:
        """Update every metric with prepared views, sum the counts over the processes, compute and draw."""
        self._runner.begin(collect_images=rank == 0, step=step)
        for index, view in views:
            self._runner.update(index, view)
        counts = self._runner.local_counts()
        if world > 1:
            self._runner.activity = "summing the metrics' view counts over the processes"
            if group is None:
                counts = counts.to(self._collective_device())
            torch.distributed.all_reduce(counts, group=group)
            counts = counts.cpu()
        return self._runner.finish(counts)

    def _evaluate_in_background(
        self, step: int, render_fn: Callable[..., Any], views: Sequence[Any] | None
    ) -> Future[EvaluationResult]:
        worker = self._worker
        assert worker is not None
        worker.wait_for_slot(step, stacklevel=4)  # the warning points at the loop's maybe_log
        rank, world = _dist()
        with torch.no_grad():
            self._ensure_references()
            if not self._group_ready:
                self._group = side_process_group(self.metrics, "SceneMetricsMonitor")
                self._group_ready = True
            start = perf_counter()
            rendered = [
                (index, producer, normalize_view(item, producer, index))
                for index, producer, item in self._rendered_views(render_fn, views, rank, world)
            ]
        render_seconds = perf_counter() - start
        clamp, group, logger = self.clamp_renders, self._group, self.logger
        in_worker = logger is not None and logger_kind(logger) == "summary_writer"  # thread-safe: written at once

        def checked(copies: list[tuple[int, str, RenderedView]]) -> Iterable[tuple[int, RenderedView]]:
            for index, producer, view in copies:
                self._runner.activity = f"checking view {index}"
                yield index, check_view(view, producer, index, clamp=clamp)

        def work(copies: list[tuple[int, str, RenderedView]]) -> EvaluationResult:
            began = perf_counter()
            with torch.no_grad():
                result = self._score(step, checked(copies), rank, world, group)
            result.scalars[f"{self.prefix}eval_seconds"] = render_seconds + perf_counter() - began
            if in_worker and rank == 0:
                self._runner.activity = "writing to the logger"
                log_result(logger, result, step)
                self._runner.activity = ""
            return result

        def hand_back(result: EvaluationResult, at: int) -> None:
            if logger is None or in_worker or rank != 0:
                return
            column = None
            if logger_kind(logger) == "wandb":
                # a late row logged with step= below W&B's current step would be dropped: the step is a column
                column = f"{self.prefix}step"
                if not self._wandb_axis:
                    logger.define_metric(column)
                    logger.define_metric(f"{self.prefix}*", step_metric=column)
                    self._wandb_axis = True
            log_result(logger, result, at, wandb_step_column=column)

        future = worker.submit(
            step,
            rendered,
            work,
            hand_back=hand_back,
            describe=lambda: self._runner.activity,
            device=next(iter(self.metrics.values())).device,
        )
        self.last_eval_step = step
        self.num_evaluations += 1
        return future

    def _collective_device(self) -> torch.device:
        backend = torch.distributed.get_backend()
        if backend == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    @staticmethod
    def _rendered_views(
        render_fn: Callable[..., Any], views: Sequence[Any] | None, rank: int, world: int
    ) -> Iterable[tuple[int, str, RenderedView]]:
        """``(index, producer, view)`` of this process's views, rendered one at a time."""
        if views is None:
            producer = "render_fn()"
            for index, item in enumerate(render_fn()):
                yield index, producer, as_rendered_view(item, producer)
            return
        views = list(views)
        producer = "render_fn(view)"
        for index in shard_indices(len(views), rank, world):
            yield index, producer, as_rendered_view(render_fn(views[index]), producer)

    def _ensure_references(self) -> None:
        if self._references_ready:
            return
        if self._runner.needs_references():
            refs = self.references
            if callable(refs) and not isinstance(refs, Tensor):
                refs = refs()
            try:
                self._runner.set_references(
                    refs,
                    self.max_reference_views,
                    missing_hint="Pass references=<(N, 3, H, W) training views or a callable> to SceneMetricsMonitor.",
                )
            except ValueError as err:
                raise ValueError(f"SceneMetricsMonitor: {err}") from None
        self._references_ready = True
