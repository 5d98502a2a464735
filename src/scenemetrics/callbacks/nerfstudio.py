"""nerfstudio integration: a ``TrainingCallback``, a pipeline that adds it, and ``add_scenemetrics`` for scripts.

Needs the ``[nerfstudio]`` extra. The method plugins ``nerfacto-scenemetrics`` and ``splatfacto-scenemetrics``
(module :mod:`scenemetrics.callbacks.nerfstudio_methods`, registered through the ``nerfstudio.method_configs``
entry point) are ``add_scenemetrics`` applied to nerfstudio's own configs, so every option below is a CLI flag::

    ns-train nerfacto-scenemetrics --pipeline.scenemetrics.metrics puzzlesim osim \\
        --pipeline.scenemetrics.every-n-steps 1000 blender-data --data path/to/scene

The options of the metrics are fields too, derived from the metric adapters' option schemas
(:func:`scenemetrics.registry.option_flags`): ``<family>_<key>`` for every option of a built-in metric
(``--pipeline.scenemetrics.puzzlesim-weights``, ``--pipeline.scenemetrics.prism-center-crop``, ...), and
``metric_options`` (``METRIC.KEY=VALUE``) for any metric, plugins included. An unknown key, a wrong type or a value
out of range is a ``ValueError`` naming the metric, the key and the valid keys.

This module never imports ``nerfstudio.configs.method_configs`` (nerfstudio discovers plugins while that module is
still being imported); metric backbones load at the first evaluation.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Annotated, Any, Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import Metric

try:
    import tyro
    from nerfstudio.engine.callbacks import TrainingCallback, TrainingCallbackAttributes, TrainingCallbackLocation
    from nerfstudio.engine.trainer import TrainerConfig
    from nerfstudio.pipelines.base_pipeline import VanillaPipeline, VanillaPipelineConfig
    from nerfstudio.utils import comms
except ImportError as err:
    raise ImportError(
        'scenemetrics.callbacks.nerfstudio needs nerfstudio: pip install "scenemetrics[nerfstudio]"'
    ) from err

from scenemetrics.callbacks.background import BackgroundWorker, check_max_pending
from scenemetrics.callbacks.evaluation import EvaluationResult, MetricRunner, check_colormap, evenly_spaced
from scenemetrics.callbacks.logging import log_to_nerfstudio
from scenemetrics.callbacks.pictures import (
    DEFAULT_PANEL_MAP,
    DEFAULT_STRIP_STEPS,
    PANEL_MAPS,
    PanelMap,
    check_map_range,
    check_panel_map,
    check_strip_steps,
    parse_map_range,
)
from scenemetrics.callbacks.views import RenderedView, prepare_view
from scenemetrics.registry import (
    MetricConfig,
    Option,
    OptionFlag,
    get_metric,
    load_plugins,
    metric_names,
    option_flags,
    parse_metric_option,
)

__all__ = [
    "CallbackState",
    "SceneMetricsNerfstudioConfig",
    "SceneMetricsPipeline",
    "SceneMetricsPipelineConfig",
    "SceneMetricsTrainingCallback",
    "add_scenemetrics",
    "build_metrics",
    "metric_configs",
]

_FLAG_PREFIX = "--pipeline.scenemetrics."


@dataclass
class _CallbackOptions:
    """The callback's own options (the metric options are added from the registry below)."""

    metrics: tuple[str, ...] = ("puzzlesim",)
    """Metrics to run, by registry name: puzzlesim (no ground truth needed), osim (vs the eval image), prism
    (object-centric scenes), psnr/ssim/lpips, or a plugin's (a ``scenemetrics.evaluation`` entry point)."""
    every_n_steps: int = 500
    """Evaluate every this many iterations (never at iteration 0 unless eval_at_start)."""
    num_eval_views: int = 2
    """Evenly spaced views of the eval split, fixed for the run."""
    max_reference_views: int = 32
    """Evenly spaced training images embedded once as PuzzleSim references."""
    max_image_side: int | None = None
    """Downscale (area) renders, targets and references whose long side exceeds this."""
    log_maps: bool = True
    """Log colormapped PuzzleSim maps and OSIM overlays."""
    max_logged_images: int = 2
    """Only the first this many eval views get images."""
    map_colormap: str = "jet_r"
    """Colormap of similarity maps (jet_r shows PuzzleSim artifacts warm); error maps get its reversal."""
    panel_map: PanelMap | None = DEFAULT_PANEL_MAP
    """Map of the render | target | map panels (panel/<i>): abs (absolute error, no weights needed), ssim, lpips
    (its backbone from the lpips-weights field), or None (no panels)."""
    map_range: str = "first"
    """Display range of maps and panels: first (fixed per view at its first logged step, kept in checkpoints),
    per-map, or VMIN,VMAX."""
    strip_steps: int = DEFAULT_STRIP_STEPS
    """Steps shown by the panel over time (panel_over_time/<i>), the first and the latest; 0: none."""
    prefix: str = "scenemetrics/"
    """Prefix of every logged tag."""
    eval_at_start: bool = False
    """Also evaluate at iteration 0."""
    background: bool = False
    """Score, draw and log in a worker thread: the training loop only renders the eval views (the same values at the
    same iterations; results reach nerfstudio's writer at the iteration after they finish)."""
    max_pending: int = 1
    """With background: evaluations in flight at most; when one more is due, training waits (one warning)."""
    metric_options: tuple[str, ...] = ()
    """Options of any metric as METRIC.KEY=VALUE (plugins' too), e.g. puzzlesim.layers=[2,3]; they win over the
    metric's own fields."""


def _field_type(opt: Option) -> Any:
    """The dataclass (and tyro) type of an option's field: optional, ``list[T]`` as ``tuple[T, ...]``."""
    if opt.is_flag:
        return bool
    members = [tuple[typing.get_args(m)[0], ...] if typing.get_origin(m) is list else m for m in opt.alternatives]
    return Optional[Union[tuple(members)]]  # noqa: UP007, UP045 (a type built at run time from the schema)


def _option_field(flag: OptionFlag) -> tuple[str, Any, Any]:
    opt = flag.option
    text = opt.help + (f" (default: {opt.default})" if opt.default is not None and not opt.is_flag else "")
    if len(flag.metrics) > 1:
        text += f" [{', '.join(flag.metrics)}]"
    default = bool(opt.default) if opt.is_flag else None
    return flag.name, Annotated[_field_type(opt), tyro.conf.arg(help=text)], field(default=default)


SceneMetricsNerfstudioConfig = dataclasses.make_dataclass(
    "SceneMetricsNerfstudioConfig",
    [_option_field(flag) for flag in option_flags()],
    bases=(_CallbackOptions,),
)
SceneMetricsNerfstudioConfig.__module__ = __name__
SceneMetricsNerfstudioConfig.__doc__ = """Options of the nerfstudio callback (``--pipeline.scenemetrics.<option>``).

The callback's own fields (``metrics``, ``every_n_steps``, ...), then one field ``<family>_<key>`` per option of the
built-in metrics (``puzzlesim_weights``, ``osim_conf``, ``prism_head``, ``prism_center_crop``, ...; ``None``: the
metric's default), derived from the metric adapters' option schemas, and ``metric_options`` for any metric.
"""


def _check_config(cfg: Any) -> dict[str, MetricConfig]:
    """Check the callback's options and every selected metric's options; the metrics' configurations."""
    metrics = tuple(cfg.metrics)
    load_plugins()
    known = metric_names()
    if not metrics or any(m not in known for m in metrics) or len(set(metrics)) != len(metrics):
        raise ValueError(f"`metrics` must be a non-empty tuple of distinct names from {tuple(known)}; got {metrics}")
    for name in ("every_n_steps", "num_eval_views", "max_reference_views"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be an int >= 1; received {value!r}")
    if cfg.max_image_side is not None and (not isinstance(cfg.max_image_side, int) or cfg.max_image_side < 1):
        raise ValueError(f"`max_image_side` must be an int >= 1 or None; received {cfg.max_image_side!r}")
    check_max_pending(cfg.max_pending)
    if not isinstance(cfg.max_logged_images, int) or cfg.max_logged_images < 0:
        raise ValueError(f"`max_logged_images` must be an int >= 0; received {cfg.max_logged_images!r}")
    check_colormap(cfg.map_colormap)
    check_panel_map(cfg.panel_map)
    _map_range(cfg)
    check_strip_steps(cfg.strip_steps)
    return metric_configs(cfg)


def _map_range(cfg: Any) -> str | tuple[float, float]:
    value = cfg.map_range
    return parse_map_range(value) if isinstance(value, str) else check_map_range(value)


def _panel_config(cfg: Any, device: torch.device | str | None) -> MetricConfig | None:
    """The configuration of the metric behind ``cfg.panel_map`` (its options from the same fields as the metrics')."""
    if cfg.panel_map is None:
        return None
    name = PANEL_MAPS[cfg.panel_map]
    return metric_configs(cfg, device, names=(name,))[name]


def metric_configs(
    cfg: Any, device: torch.device | str | None = None, names: tuple[str, ...] | None = None
) -> dict[str, MetricConfig]:
    """The configuration of each metric of ``cfg.metrics`` (or of ``names``): its options from the
    ``<family>_<key>`` fields and ``metric_options`` (which wins), checked against its schema, with the flags that
    set them in messages.

    Raises:
        ValueError: a malformed ``metric_options`` entry, or an option the metric's schema rejects (naming the
            metric, the key and the valid keys).
    """
    names = tuple(cfg.metrics) if names is None else tuple(names)
    options: dict[str, dict[str, Any]] = {name: {} for name in names}
    flags: dict[str, dict[str, str]] = {name: {} for name in names}
    for flag in option_flags():
        value = getattr(cfg, flag.name, None)
        for name in flag.metrics:
            if name in options:
                flags[name][flag.key] = _FLAG_PREFIX + flag.name.replace("_", "-")
                if value is not None:
                    options[name][flag.key] = str(value) if isinstance(value, Path) else value
    for text in cfg.metric_options:
        try:
            name, key, value = parse_metric_option(text)
        except ValueError as err:
            raise ValueError(f"`metric_options`: {err}") from None
        if name in options:
            options[name][key] = value
            flags[name][key] = f"{_FLAG_PREFIX}metric-options {name}.{key}=..."
    dev = None if device is None else torch.device(device)
    return {
        name: get_metric(name).configure(MetricConfig(name, options[name], dev, flags=flags[name])) for name in names
    }


def build_metrics(cfg: Any, device: torch.device | str = "cpu") -> dict[str, Metric]:
    """The metrics named in ``cfg.metrics``, with ``sync_on_compute=False`` (rank 0 evaluates alone), on ``device``.

    Example:
        >>> import os, tempfile
        >>> import scenemetrics as sm
        >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> cfg = SceneMetricsNerfstudioConfig(puzzlesim_weights=w)
        >>> type(build_metrics(cfg)["puzzlesim"]).__name__
        'PuzzleSim'
    """
    _check_config(cfg)
    out: dict[str, Metric] = {}
    for name, config in metric_configs(cfg, device).items():
        entry = get_metric(name)
        reason = entry.unavailable_reason(config.options, flags=config.flags)
        if reason is not None:
            raise ValueError(f"scenemetrics nerfstudio callback: metric {name!r} cannot run: {reason}")
        metric = entry.build(config)
        metric.sync_on_compute = False
        out[name] = metric
    return {name: metric.to(device) for name, metric in out.items()}


def _hwc_to_batch(image: Tensor, background: Tensor | None = None) -> Tensor:
    """``(H, W, C)`` float image -> ``(1, 3, H, W)``; 4 channels are composited onto ``background`` (white)."""
    image = image.float()
    if image.shape[-1] == 4:
        bg = torch.ones(3, dtype=image.dtype, device=image.device) if background is None else background
        alpha = image[..., 3:]
        image = image[..., :3] * alpha + bg.to(image).reshape(1, 1, 3) * (1 - alpha)
    return image[..., :3].permute(2, 0, 1).unsqueeze(0).contiguous()


def _limit_side(image: Tensor, max_side: int | None) -> Tensor:
    h, w = image.shape[-2:]
    if max_side is None or max(h, w) <= max_side:
        return image
    scale = max_side / max(h, w)
    size = (max(1, round(h * scale)), max(1, round(w * scale)))
    return F.interpolate(image, size=size, mode="area")


def _resize_to(image: Tensor, size: tuple[int, int]) -> Tensor:
    return F.interpolate(image, size=size, mode="bilinear", antialias=True, align_corners=False).clamp(0, 1)


class SceneMetricsTrainingCallback(TrainingCallback):
    """nerfstudio ``TrainingCallback`` that renders eval views every ``config.every_n_steps`` iterations and logs.

    Runs after the training iteration (``AFTER_TRAIN_ITERATION``), on the main process only; values go through
    ``nerfstudio.utils.writer`` at the iteration ``step`` (TensorBoard, W&B, Comet, whatever ``--vis`` selects):
    ``{prefix}puzzlesim`` / ``osim`` / ``prism`` scalars, ``{prefix}osim/class/<name>``, ``{prefix}eval_seconds``,
    render | target | error map panels ``{prefix}panel/{i}`` and their map over time ``{prefix}panel_over_time/{i}``,
    colormapped ``{prefix}puzzlesim/map/{i}`` and ``{prefix}osim/overlay/{i}`` images.

    The display ranges of the pictures (``map_range="first"``: fixed at the first logged step) live in the
    pipeline's ``scenemetrics_state`` module when the pipeline has one (:class:`SceneMetricsPipeline` does), so they
    are saved in nerfstudio's checkpoints and a resumed run (``--load-dir``) keeps its colours; in another pipeline
    they last for the run.

    With ``config.background`` the iteration only renders the eval views (``get_outputs_for_camera``) and hands
    detached copies of ``rgb`` (and ``background``) to a worker thread, which loads the targets, scores and draws;
    the results go to nerfstudio's writer (not thread-safe: one list of events) in the training thread, at the first
    iteration after they finished, with the iteration of the evaluation. Pending evaluations are waited for when
    the pipeline's state is saved (nerfstudio's checkpoints, also the one at the end of training) and at the end
    of training.

    Args:
        pipeline: the training pipeline (a ``VanillaPipeline``; its model renders with ``get_outputs_for_camera``).
        config: the options.

    Example:
        In a custom pipeline::

            def get_training_callbacks(self, attrs):
                return super().get_training_callbacks(attrs) + [SceneMetricsTrainingCallback(self, cfg)]
    """

    def __init__(self, pipeline: VanillaPipeline, config: Any) -> None:
        _check_config(config)
        super().__init__(
            where_to_run=[TrainingCallbackLocation.AFTER_TRAIN_ITERATION],
            func=self.evaluate,
            update_every_num_iters=config.every_n_steps,
        )
        self.pipeline = pipeline
        self.config = config
        self.runner: MetricRunner | None = None
        self._views: list[dict[str, Any]] = []
        self._warned: set[str] = set()
        holder = getattr(pipeline, "scenemetrics_state", None)
        self._state = holder if isinstance(holder, CallbackState) else None
        self._worker: BackgroundWorker | None = None
        if config.background:
            self._worker = BackgroundWorker("scenemetrics nerfstudio callback", config.max_pending)
            if self._state is not None:
                self._state.before_save = self._worker.drain  # a checkpoint holds every evaluation it counts

    def run_callback_at_location(self, step: int, location: TrainingCallbackLocation) -> None:
        """nerfstudio calls this at every location of every iteration; in the background mode it also hands the
        finished evaluations to the writer after each iteration and waits for the pending ones after training."""
        if self._worker is not None:
            if location == getattr(TrainingCallbackLocation, "AFTER_TRAIN", None):
                self.close()
                return
            if location == TrainingCallbackLocation.AFTER_TRAIN_ITERATION:
                self._worker.poll()
        super().run_callback_at_location(step, location)

    def close(self) -> None:
        """Background mode: wait for the pending evaluations and write them out (nerfstudio's end of training does
        this through ``AFTER_TRAIN``; call it yourself after a loop of your own). Nothing to do otherwise.

        Raises:
            BackgroundEvaluationError: a background evaluation failed (naming its iteration and what failed).
        """
        if self._worker is None:
            return
        self._worker.close()
        if comms.is_main_process():
            import nerfstudio.configs.base_config  # noqa: F401  (the writer cannot be nerfstudio's first import)
            from nerfstudio.utils import writer

            writer.write_out_storage()  # the trainer wrote out its events before AFTER_TRAIN

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, UserWarning, stacklevel=3)

    def evaluate(self, step: int) -> EvaluationResult | Future[EvaluationResult] | None:
        """Evaluate and log at iteration ``step``; returns the result (``None`` when skipped; in the background mode
        the future of the result)."""
        if (step == 0 and not self.config.eval_at_start) or not comms.is_main_process():
            return None
        if self._worker is not None:
            return self._evaluate_in_background(step)
        pipeline = self.pipeline
        modes = [(module, module.training) for module in pipeline.modules()]
        start = perf_counter()
        try:
            pipeline.eval()
            with torch.no_grad():
                if self.runner is None:
                    self._setup()
                    start = perf_counter()  # the one-time reference embedding is not part of the evaluation cost
                assert self.runner is not None
                self.runner.begin(collect_images=True, step=step)
                for index, view in enumerate(self._views):
                    self.runner.update(index, self._view_from_outputs(view, *self._render_outputs(view)))
                result = self.runner.finish()
                if self._state is not None:
                    self._state.state = self.runner.state_dict()
        finally:
            for module, training in modes:
                module.train(training)
        result.scalars[f"{self.config.prefix}eval_seconds"] = perf_counter() - start
        log_to_nerfstudio(result, step)
        return result

    def _evaluate_in_background(self, step: int) -> Future[EvaluationResult]:
        worker = self._worker
        assert worker is not None
        worker.wait_for_slot(step)
        pipeline = self.pipeline
        modes = [(module, module.training) for module in pipeline.modules()]
        try:
            pipeline.eval()
            with torch.no_grad():
                if self.runner is None:
                    self._setup()
                start = perf_counter()  # the one-time reference embedding is not part of the evaluation cost
                outputs = [(k, *self._render_outputs(view)) for k, view in enumerate(self._views)]
                render_seconds = perf_counter() - start
        finally:
            for module, training in modes:
                module.train(training)
        runner = self.runner
        assert runner is not None

        def work(copies: list[tuple[int, Tensor, Tensor | None]]) -> EvaluationResult:
            began = perf_counter()
            with torch.no_grad():
                runner.begin(collect_images=True, step=step)
                for index, rgb, background in copies:
                    runner.activity = f"preparing view {index}"
                    runner.update(index, self._view_from_outputs(self._views[index], rgb, background))
                result = runner.finish()
                if self._state is not None:
                    self._state.state = runner.state_dict()
            result.scalars[f"{self.config.prefix}eval_seconds"] = render_seconds + perf_counter() - began
            return result

        return worker.submit(
            step,
            outputs,
            work,
            hand_back=log_to_nerfstudio,  # nerfstudio's writer keeps one list of events: the training thread only
            describe=lambda: runner.activity,
            device=pipeline.device,
        )

    # -- first evaluation ------------------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        pipeline = self.pipeline
        device = pipeline.device
        metrics = build_metrics(cfg, device)
        runner = MetricRunner(
            metrics,
            log_maps=cfg.log_maps,
            max_logged_images=cfg.max_logged_images,
            map_colormap=cfg.map_colormap,
            prefix=cfg.prefix,
            configs=metric_configs(cfg, device),
            panel_map=cfg.panel_map,
            map_range=_map_range(cfg),
            strip_steps=cfg.strip_steps,
            panel_config=_panel_config(cfg, device),
        )
        if self._state is not None and self._state.state:
            runner.load_state_dict(self._state.state)  # a resumed run: the ranges fixed before it was saved
        self.runner = runner
        train = pipeline.datamanager.train_dataset
        evals = pipeline.datamanager.eval_dataset
        if evals is None or len(evals) == 0:
            raise ValueError("scenemetrics nerfstudio callback: the datamanager has no eval images to render")
        referenced: list[Any] = [metrics[n] for n in metrics if runner.kind(n) == "references"]
        if referenced:
            refs = [self._load(train, i) for i in evenly_spaced(len(train), cfg.max_reference_views)]
            same_size = len({tuple(r.shape) for r in refs}) == 1
            for metric in referenced:
                metric.set_references(torch.cat(refs).to(device) if same_size else [r[0].to(device) for r in refs])
        needs_cameras = any("cameras" in adapter.inputs for adapter in runner.adapters.values())
        train_c2w = train.cameras.camera_to_worlds
        for i in evenly_spaced(len(evals), cfg.num_eval_views):
            view: dict[str, Any] = {"index": i, "camera": evals.cameras[i : i + 1]}
            if needs_cameras:  # the source view: the training view whose camera centre is nearest
                c2w = evals.cameras.camera_to_worlds[i]
                j = int(torch.linalg.vector_norm(train_c2w[:, :3, 3] - c2w[:3, 3], dim=-1).argmin())
                view["source"] = self._load(train, j)
                view["cameras"] = (train_c2w[j], c2w)  # the metrics' adapters turn them into their pose
            self._views.append(view)

    def _load(self, dataset: Any, index: int) -> Tensor:
        return _limit_side(_hwc_to_batch(dataset.get_image_float32(index)), self.config.max_image_side)

    # -- one view --------------------------------------------------------------------------------------------------
    def _render_outputs(self, view: dict[str, Any]) -> tuple[Tensor, Tensor | None]:
        """What needs the model: the view's ``rgb`` (H, W, 3) and the model's ``background`` colour (or ``None``)."""
        model: Any = self.pipeline.model
        outputs = model.get_outputs_for_camera(view["camera"].to(self.pipeline.device))
        return outputs["rgb"], outputs.get("background")

    def _view_from_outputs(self, view: dict[str, Any], rgb: Tensor, background: Tensor | None) -> RenderedView:
        """The rest, from the rendered ``rgb``: target loaded (composited on ``background``), sizes matched, checked."""
        render = _limit_side(_hwc_to_batch(rgb).clamp(0, 1), self.config.max_image_side)
        evals = self.pipeline.datamanager.eval_dataset
        target = _limit_side(
            _hwc_to_batch(evals.get_image_float32(view["index"]), background), self.config.max_image_side
        )
        size = (int(render.shape[-2]), int(render.shape[-1]))
        if tuple(target.shape[-2:]) != size:
            self._warn_once(
                "resize",
                f"scenemetrics nerfstudio callback: eval images of size {tuple(target.shape[-2:])} are resized to the "
                f"render size {size} (antialiased bilinear)",
            )
            target = _resize_to(target.to(render.device), size)
        extras: dict[str, Any] = {}
        if "source" in view:
            source = view["source"]
            extras = {
                "source": source if tuple(source.shape[-2:]) == size else _resize_to(source, size),
                "cameras": view["cameras"],
            }
        item = RenderedView(render, target.to(render.device), extras)
        return prepare_view(item, "nerfstudio model.get_outputs_for_camera", view["index"])


class CallbackState(torch.nn.Module):
    """The scenemetrics callback's state inside a nerfstudio pipeline (no parameters, no buffers).

    nerfstudio saves ``pipeline.state_dict()`` in its checkpoints and loads it before it creates the training
    callbacks; this module's extra state (``<name>._extra_state``: numbers, strings and ``uint8`` tensors, which
    ``torch.load(..., weights_only=True)`` reads) carries the pictures' display ranges through a resume.
    """

    def __init__(self) -> None:
        super().__init__()
        self.state: dict[str, Any] = {}
        self.before_save: Callable[[], None] | None = None
        """Called before the state is read (the background mode waits for its pending evaluations there)."""

    def get_extra_state(self) -> dict[str, Any]:
        if self.before_save is not None:
            self.before_save()
        return dict(self.state)

    def set_extra_state(self, state: Any) -> None:
        self.state = dict(state) if isinstance(state, dict) else {}


@dataclass
class SceneMetricsPipelineConfig(VanillaPipelineConfig):
    """``VanillaPipelineConfig`` plus the ``scenemetrics`` options (``--pipeline.scenemetrics.*``)."""

    _target: type = field(default_factory=lambda: SceneMetricsPipeline)
    scenemetrics: SceneMetricsNerfstudioConfig = field(  # type: ignore[valid-type]
        default_factory=SceneMetricsNerfstudioConfig
    )


class SceneMetricsPipeline(VanillaPipeline):
    """``VanillaPipeline`` whose training callbacks include a :class:`SceneMetricsTrainingCallback`; its
    ``scenemetrics_state`` (:class:`CallbackState`) keeps the callback's state in nerfstudio's checkpoints."""

    config: SceneMetricsPipelineConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scenemetrics_state = CallbackState()

    def get_training_callbacks(self, attributes: TrainingCallbackAttributes) -> list[TrainingCallback]:
        callbacks = super().get_training_callbacks(attributes)
        return [*callbacks, SceneMetricsTrainingCallback(self, self.config.scenemetrics)]


def add_scenemetrics(config: TrainerConfig, **options: Any) -> TrainerConfig:
    """A deep copy of a nerfstudio ``TrainerConfig`` whose pipeline logs scenemetrics while it trains.

    Args:
        config: e.g. ``method_configs["nerfacto"]``; its pipeline must be a plain ``VanillaPipelineConfig`` (pipelines
            with their own class or config type: add a :class:`SceneMetricsTrainingCallback` in their
            ``get_training_callbacks`` instead), or an already converted one (its options are updated).
        options: :class:`SceneMetricsNerfstudioConfig` fields.

    Returns:
        The new config; train it with ``nerfstudio.scripts.train.main(cfg)`` (or ``train_loop(0, 1, cfg)``).

    Raises:
        TypeError: an unknown option, or a pipeline config this function cannot convert.

    Example:
        >>> from nerfstudio.configs.method_configs import method_configs
        >>> cfg = add_scenemetrics(method_configs["nerfacto"], metrics=("puzzlesim",), every_n_steps=1000)
        >>> type(cfg.pipeline).__name__, cfg.pipeline.scenemetrics.every_n_steps
        ('SceneMetricsPipelineConfig', 1000)
    """
    names = {f.name for f in dataclasses.fields(SceneMetricsNerfstudioConfig)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise TypeError(f"add_scenemetrics() got unknown option(s) {unknown}; valid options: {sorted(names)}")
    out = copy.deepcopy(config)
    pipe = out.pipeline
    if isinstance(pipe, SceneMetricsPipelineConfig):
        pipe.scenemetrics = dataclasses.replace(pipe.scenemetrics, **options)
    elif type(pipe) is VanillaPipelineConfig and pipe._target is VanillaPipeline:
        out.pipeline = SceneMetricsPipelineConfig(
            datamanager=pipe.datamanager, model=pipe.model, scenemetrics=SceneMetricsNerfstudioConfig(**options)
        )
    else:
        raise TypeError(
            f"add_scenemetrics() converts a plain VanillaPipelineConfig (pipeline VanillaPipeline); received "
            f"{type(pipe).__name__} with _target {getattr(pipe, '_target', None)}. Add "
            "SceneMetricsTrainingCallback(self, SceneMetricsNerfstudioConfig(...)) in that pipeline's "
            "get_training_callbacks instead."
        )
    _check_config(out.pipeline.scenemetrics)
    return out
