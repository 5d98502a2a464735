"""Lightning ``SceneMetricsCallback``: evaluate scenemetrics on held-out views while a 3DGS / NeRF model trains.

Needs the ``[lightning]`` extra (``lightning`` and ``tensorboard``); W&B logging needs ``[wandb]``.
See ``docs/callbacks.md`` for the schedule, DDP behaviour, logged tags and cost levers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from time import perf_counter
from typing import Any

import torch
from torch import Tensor, nn
from torchmetrics import Metric

try:
    from lightning.pytorch import Callback, LightningModule, Trainer
except ImportError as err:
    raise ImportError(
        'scenemetrics.callbacks.SceneMetricsCallback needs Lightning: pip install "scenemetrics[lightning]"'
    ) from err

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
from scenemetrics.callbacks.logging import log_to_lightning, thread_safe_lightning_loggers
from scenemetrics.callbacks.pictures import DEFAULT_PANEL_MAP, DEFAULT_STRIP_STEPS
from scenemetrics.callbacks.views import (
    RenderedView,
    as_rendered_view,
    check_view,
    is_one_shot,
    normalize_view,
    prepare_view,
)

__all__ = ["SceneMetricsCallback"]

DEFAULT_EVERY_N_STEPS = 500

References = Tensor | Sequence[Tensor] | Callable[[Trainer, LightningModule], Any]
EvalViews = Iterable[Any] | Callable[[Trainer, LightningModule], Iterable[RenderedView | tuple]]


class SceneMetricsCallback(Callback):
    """Periodically render held-out views, score them with scenemetrics / torchmetrics metrics, log scalars and maps.

    Every ``every_n_steps`` optimizer steps (default 500) or ``every_n_epochs`` epochs, the callback renders the
    evaluation views with the model being trained (``pl_module.eval()`` under ``torch.no_grad()``; the previous
    train/eval flags are restored afterwards, also on error), updates each metric (dispatch in
    :mod:`scenemetrics.callbacks.evaluation`), computes it, and logs on rank 0:

    * ``{prefix}{name}`` (or ``{prefix}{name}/{key}`` for dict results, ``{prefix}{name}/class/{class}`` for
      metrics with ``class_scores()``, e.g. OSIM) and ``{prefix}eval_seconds``, at ``step = trainer.global_step``;
    * for views ``i < max_logged_images``, to TensorBoard and W&B loggers (other loggers get scalars only):
      render | target | error map panels ``{prefix}panel/{i}`` (views with a target; ``panel_map``), the panel of
      the first such view over time ``{prefix}panel_over_time/{i}``, colormapped ``last_maps`` (PuzzleSim,
      ``ssim_map``, ...) as ``{prefix}{name}/map/{i}``, OSIM overlays as ``{prefix}{name}/overlay/{i}``, renders as
      ``{prefix}render/{i}`` (``log_renders=True``). Colours keep their meaning across steps (``map_range``).

    Cross-reference metrics (anything with ``set_references``, e.g. :class:`scenemetrics.PuzzleSim`) get their
    references once per fit, at the first evaluation: from ``references`` or else ``pl_module.reference_views()``.
    The metrics belong to the callback: they are moved to the model's device, kept out of the model checkpoint, and
    ``reset()`` at the start of every evaluation. Scalars also go to ``trainer.callback_metrics`` for
    ``ModelCheckpoint`` / ``EarlyStopping`` that run after this callback.

    Under DDP every rank renders its share of the views (``i % world_size == rank``), every rank calls ``compute()``
    (synced by torchmetrics) and only rank 0 logs.

    With ``background=True`` the training thread only renders the due views and hands detached copies to a worker
    thread, which scores, draws and writes the TensorBoard loggers; the other loggers and ``trainer.callback_metrics``
    get each result in the training thread at the next batch after it finished (at the latest at the end of
    training, or before a checkpoint, which waits for pending evaluations), always at the step of the evaluation.

    Args:
        metrics: name -> ``torchmetrics.Metric`` (names may not contain ``"."``).
        eval_views: an iterable of views (indices, cameras, ...; re-iterable, not a one-shot generator) rendered with
            ``render_fn`` or ``pl_module.render_view``; or a callable ``(trainer, pl_module) -> iterable of rendered
            items`` doing its own rendering and sharding; or ``None`` for ``pl_module.eval_views()``.
        every_n_steps: evaluate when ``global_step % every_n_steps == 0`` (default 500 when both are ``None``).
        every_n_epochs: evaluate at the end of every ``every_n_epochs``-th epoch instead.
        references: ``(N, 3, H, W)`` tensor in [0, 1], a list of ``(3, H, W)`` tensors, or a callable
            ``(trainer, pl_module) -> references``; default ``pl_module.reference_views()`` when present.
        max_reference_views: use at most this many references, evenly spaced.
        render_fn: ``(pl_module, view) -> RenderedView | (render, target) | (render, target, extras)``.
        update_fns: name -> ``fn(metric, render, target, extras)`` replacing the default update of that metric.
        log_maps: log metric maps (``last_maps``) and OSIM overlays.
        log_renders: log the renders too.
        max_logged_images: views with index ``< max_logged_images`` get images (first image of a batched view).
        map_colormap: colormap of similarity maps (``"jet_r"``: PuzzleSim artifacts warm); error maps (LPIPS, abs
            error) get its reversal, so warm always means bad.
        prefix: prefix of every tag.
        eval_at_start: also evaluate once before the first step of a fresh run.
        clamp_renders: clamp renders to [0, 1] before the metrics (targets are validated, never clamped).
        panel_map: the map of the render | target | map panels: ``"abs"`` (default: the absolute error, no network
            needed), ``"ssim"``, ``"lpips"`` (weights through the scenemetrics hub; to choose them, put an
            ``sm.fullref.LPIPSMap(weights_path=...)`` in ``metrics``: its maps are reused) or ``None`` (no panels).
        map_range: display range of maps and panels: ``"first"`` (default: fixed per tag at its first logged step,
            kept in the checkpoint), ``"per-map"`` or ``(vmin, vmax)``.
        strip_steps: steps shown by the panel over time (the first and the latest); 0: none.
        background: evaluate in a worker thread (see above); :meth:`evaluate` then returns a
            ``concurrent.futures.Future``. The same values at the same steps, the same images as without.
        max_pending: with ``background``, evaluations in flight at most; when one more is due the training thread
            waits (one warning). Each holds a copy of its rendered views.

    Raises:
        ValueError: invalid arguments (named in the message).
        TypeError: a one-shot iterator as ``eval_views``, or ``references`` of another type.

    Example:
        >>> import os, tempfile, torch
        >>> import scenemetrics as sm
        >>> from scenemetrics.callbacks import SceneMetricsCallback
        >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> cb = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=w)}, eval_views=[0, 1],
        ...                           every_n_steps=100, references=torch.rand(4, 3, 32, 32))
        >>> cb.state_dict()
        {'last_eval_step': -1, 'num_evaluations': 0, 'pictures': {'ranges': {}, 'strip': {}}}
    """

    def __init__(
        self,
        metrics: Mapping[str, Metric],
        *,
        eval_views: EvalViews | None = None,
        every_n_steps: int | None = None,
        every_n_epochs: int | None = None,
        references: References | None = None,
        max_reference_views: int | None = None,
        render_fn: Callable[[LightningModule, Any], RenderedView | tuple] | None = None,
        update_fns: Mapping[str, UpdateFn] | None = None,
        log_maps: bool = True,
        log_renders: bool = False,
        max_logged_images: int = 4,
        map_colormap: str = "jet_r",
        prefix: str = "scenemetrics/",
        eval_at_start: bool = False,
        clamp_renders: bool = True,
        panel_map: str | None = DEFAULT_PANEL_MAP,
        map_range: str | tuple[float, float] = "first",
        strip_steps: int = DEFAULT_STRIP_STEPS,
        background: bool = False,
        max_pending: int = 1,
    ) -> None:
        super().__init__()
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
        bad = [name for name in self._runner.metrics if "." in name]
        if bad:
            raise ValueError(f"`metrics` names may not contain '.'; received {bad}")
        self.metrics = nn.ModuleDict(self._runner.metrics)
        if every_n_steps is not None and every_n_epochs is not None:
            raise ValueError("give either `every_n_steps` or `every_n_epochs`, not both")
        self.every_n_steps = check_schedule(every_n_steps, "every_n_steps")
        self.every_n_epochs = check_schedule(every_n_epochs, "every_n_epochs")
        if self.every_n_steps is None and self.every_n_epochs is None:
            self.every_n_steps = DEFAULT_EVERY_N_STEPS
        if eval_views is not None:
            if is_one_shot(eval_views):
                raise TypeError(
                    f"`eval_views` is a one-shot iterator ({type(eval_views).__name__}); it would be empty at the "
                    "second evaluation. Pass a list, a tuple, a DataLoader or a callable (trainer, pl_module) -> views."
                )
            if not isinstance(eval_views, Iterable) and not callable(eval_views):
                raise TypeError(
                    f"`eval_views` must be an iterable of views or a callable; received {type(eval_views).__name__}"
                )
        self.eval_views = eval_views
        self.references = check_references_arg(references, "(trainer, pl_module) -> references")
        self.max_reference_views = check_max_views(max_reference_views)
        if render_fn is not None and not callable(render_fn):
            raise ValueError(f"`render_fn` must be callable; received {type(render_fn).__name__}")
        self.render_fn = render_fn
        self.prefix = prefix
        self.eval_at_start = bool(eval_at_start)
        self.clamp_renders = bool(clamp_renders)
        self.last_eval_step = -1
        self.num_evaluations = 0
        self._references_ready = False
        self.background = bool(background)
        self.max_pending = check_max_pending(max_pending)
        self._worker = BackgroundWorker("SceneMetricsCallback", self.max_pending) if self.background else None
        self._group: Any = None  # the evaluations' own process group (background under DDP)
        self._group_ready = False

    # -- checkpoint state -------------------------------------------------------------------------------------------
    @property
    def state_key(self) -> str:
        return self._generate_state_key(prefix=self.prefix, metrics=sorted(self._runner.metrics))

    def state_dict(self) -> dict[str, Any]:
        """The schedule and the pictures' display ranges (``map_range="first"``), saved in Lightning checkpoints.

        In the background mode it first waits for the pending evaluations (and hands them back), so a checkpoint
        covers every evaluation its ``num_evaluations`` counts."""
        if self._worker is not None:
            self._worker.drain()
        return {
            "last_eval_step": self.last_eval_step,
            "num_evaluations": self.num_evaluations,
            "pictures": self._runner.state_dict(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.last_eval_step = int(state_dict["last_eval_step"])
        self.num_evaluations = int(state_dict["num_evaluations"])
        self._runner.load_state_dict(state_dict.get("pictures") or {})

    # -- hooks -----------------------------------------------------------------------------------------------------
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if self._worker is not None:
            self._worker.drain()  # nothing may use the metrics while they move
        self.metrics.to(trainer.strategy.root_device)
        self._references_ready = False
        if stage != "fit":
            return
        if self.eval_views is None and not callable(getattr(pl_module, "eval_views", None)):
            raise ValueError(
                f"SceneMetricsCallback: `eval_views` is None and {type(pl_module).__name__} has no eval_views() "
                "method; pass eval_views=[...] or implement eval_views()"
            )
        renders_itself = self.eval_views is not None and not isinstance(self.eval_views, Iterable)
        if not renders_itself and self.render_fn is None and not callable(getattr(pl_module, "render_view", None)):
            raise TypeError(
                f"SceneMetricsCallback: {type(pl_module).__name__} has no render_view(view) method; implement it "
                "(scenemetrics.callbacks.SceneRenderable) or pass render_fn=(pl_module, view) -> (render, target)"
            )
        if trainer.world_size > 1:
            for name, metric in self._runner.metrics.items():
                if not getattr(metric, "sync_on_compute", True):
                    warnings.warn(
                        f"SceneMetricsCallback: metric {name!r} has sync_on_compute=False, so rank 0 logs its own "
                        f"views only (world_size={trainer.world_size})",
                        UserWarning,
                        stacklevel=2,
                    )

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.eval_at_start and not trainer.sanity_checking and trainer.global_step == 0:
            self._evaluate(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._worker is not None:
            self._worker.poll()  # finished evaluations to the other loggers; a failure in the worker raised here
        if trainer.sanity_checking or self.every_n_steps is None:
            return
        if is_due(trainer.global_step, self.every_n_steps, self.last_eval_step):
            self._evaluate(trainer, pl_module)

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._worker is not None:
            self._worker.poll()
        if trainer.sanity_checking or self.every_n_epochs is None:
            return
        if (trainer.current_epoch + 1) % self.every_n_epochs == 0 and trainer.global_step != self.last_eval_step:
            self._evaluate(trainer, pl_module)

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._worker is not None:
            self._worker.close()  # the last evaluations are logged before the loggers are finalised

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        if self._worker is not None:
            self._worker.close(raise_errors=False)  # log what finished; the training's own error propagates

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if self._worker is not None:
            self._worker.close(raise_errors=False)

    # -- evaluation ------------------------------------------------------------------------------------------------
    def evaluate(self, trainer: Trainer, pl_module: LightningModule) -> EvaluationResult | Future[EvaluationResult]:
        """Run one evaluation now and log it at ``trainer.global_step`` (the scheduled hooks call this too); in the
        background mode render now and return the future of the result."""
        return self._evaluate(trainer, pl_module)

    def _evaluate(self, trainer: Trainer, pl_module: LightningModule) -> EvaluationResult | Future[EvaluationResult]:
        if self._worker is not None:
            return self._evaluate_in_background(trainer, pl_module)
        step = trainer.global_step
        self.metrics.to(pl_module.device)
        modes = [(module, module.training) for module in pl_module.modules()]
        start = perf_counter()
        try:
            pl_module.eval()
            with torch.no_grad():
                self._ensure_references(trainer, pl_module)
                start = perf_counter()  # the one-time reference embedding is not part of the evaluation cost
                self._runner.begin(collect_images=trainer.is_global_zero, step=step)
                for index, producer, item in self._rendered_views(trainer, pl_module):
                    self._runner.update(index, prepare_view(item, producer, index, clamp=self.clamp_renders))
                counts = self._runner.local_counts()
                if trainer.world_size > 1:
                    counts = trainer.strategy.reduce(counts.to(trainer.strategy.root_device), reduce_op="sum").cpu()
                result = self._runner.finish(counts)
        finally:
            for module, training in modes:
                module.train(training)
        for tag, value in result.scalars.items():
            trainer.callback_metrics[tag] = torch.tensor(value)
        result.scalars[f"{self.prefix}eval_seconds"] = perf_counter() - start
        self.last_eval_step = step
        self.num_evaluations += 1
        if trainer.is_global_zero:
            log_to_lightning(trainer.loggers, result, step)
        return result

    def _evaluate_in_background(self, trainer: Trainer, pl_module: LightningModule) -> Future[EvaluationResult]:
        worker = self._worker
        assert worker is not None
        step = trainer.global_step
        worker.wait_for_slot(step)
        if any(metric.device != pl_module.device for metric in self._runner.metrics.values()):
            worker.drain()  # nothing may use the metrics while they move
            self.metrics.to(pl_module.device)
        modes = [(module, module.training) for module in pl_module.modules()]
        try:
            pl_module.eval()
            with torch.no_grad():
                self._ensure_references(trainer, pl_module)
                if not self._group_ready:
                    self._group = side_process_group(self._runner.metrics, "SceneMetricsCallback")
                    self._group_ready = True
                start = perf_counter()
                rendered = [
                    (index, producer, normalize_view(item, producer, index))
                    for index, producer, item in self._rendered_views(trainer, pl_module)
                ]
                render_seconds = perf_counter() - start
        finally:
            for module, training in modes:
                module.train(training)
        runner, clamp, group, prefix = self._runner, self.clamp_renders, self._group, self.prefix
        is_zero, world = trainer.is_global_zero, trainer.world_size
        loggers = list(trainer.loggers) if is_zero else []
        in_worker = thread_safe_lightning_loggers(loggers)  # TensorBoard: its SummaryWriter is thread-safe
        others = [logger for logger in loggers if logger not in in_worker]

        def work(copies: list[tuple[int, str, RenderedView]]) -> EvaluationResult:
            began = perf_counter()
            with torch.no_grad():
                runner.begin(collect_images=is_zero, step=step)
                for index, producer, view in copies:
                    runner.activity = f"checking view {index}"
                    runner.update(index, check_view(view, producer, index, clamp=clamp))
                counts = runner.local_counts()
                if world > 1:
                    runner.activity = "summing the metrics' view counts over the processes"
                    torch.distributed.all_reduce(counts, group=group)
                result = runner.finish(counts)
            result.scalars[f"{prefix}eval_seconds"] = render_seconds + perf_counter() - began
            if in_worker:
                runner.activity = "writing to the TensorBoard logger"
                log_to_lightning(in_worker, result, step)
                runner.activity = ""
            return result

        def hand_back(result: EvaluationResult, at: int) -> None:
            for tag, value in result.scalars.items():
                if tag != f"{prefix}eval_seconds":
                    trainer.callback_metrics[tag] = torch.tensor(value)
            if others:
                log_to_lightning(others, result, at)

        future = worker.submit(
            step, rendered, work, hand_back=hand_back, describe=lambda: runner.activity, device=pl_module.device
        )
        self.last_eval_step = step
        self.num_evaluations += 1
        return future

    def _rendered_views(self, trainer: Trainer, pl_module: LightningModule) -> Iterator[tuple[int, str, RenderedView]]:
        """``(index, producer, view)`` of this rank's views, rendered one at a time."""
        module: Any = pl_module  # a SceneRenderable; its optional methods are checked in setup()
        if self.eval_views is not None and not isinstance(self.eval_views, Iterable):
            producer = "eval_views(trainer, pl_module)"
            for index, item in enumerate(self.eval_views(trainer, pl_module)):
                yield index, producer, as_rendered_view(item, producer)
            return
        views = list(self.eval_views if self.eval_views is not None else module.eval_views())
        indices = shard_indices(len(views), trainer.global_rank, trainer.world_size)
        if self.render_fn is not None:
            producer = "render_fn"
            render = self.render_fn
        else:
            producer = f"{type(pl_module).__name__}.render_view"
            render = lambda _module, view: module.render_view(view)  # noqa: E731
        for index in indices:
            yield index, producer, as_rendered_view(render(pl_module, views[index]), producer)

    def _ensure_references(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._references_ready:
            return
        if self._runner.needs_references():
            refs: Any = None
            if self.references is not None:
                refs = self.references
                if callable(refs) and not isinstance(refs, Tensor):
                    refs = refs(trainer, pl_module)
            elif callable(getattr(pl_module, "reference_views", None)):
                refs = pl_module.reference_views()  # type: ignore[operator]
            try:
                self._runner.set_references(
                    refs,
                    self.max_reference_views,
                    missing_hint="Pass references=<(N, 3, H, W) tensor or callable> to the callback, or implement "
                    f"{type(pl_module).__name__}.reference_views() returning the training images.",
                )
            except ValueError as err:
                raise ValueError(f"SceneMetricsCallback: {err}") from None
        self._references_ready = True
