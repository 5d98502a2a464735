"""nerfstudio integration: a ``TrainingCallback``, a pipeline that adds it, and ``add_scenemetrics`` for scripts.

Needs the ``[nerfstudio]`` extra. The method plugins ``nerfacto-scenemetrics`` and ``splatfacto-scenemetrics``
(module :mod:`scenemetrics.callbacks.nerfstudio_methods`, registered through the ``nerfstudio.method_configs``
entry point) are ``add_scenemetrics`` applied to nerfstudio's own configs, so every option below is a CLI flag::

    ns-train nerfacto-scenemetrics --pipeline.scenemetrics.metrics puzzlesim osim \\
        --pipeline.scenemetrics.every-n-steps 1000 blender-data --data path/to/scene

This module never imports ``nerfstudio.configs.method_configs`` (nerfstudio discovers plugins while that module is
still being imported); metric backbones load at the first evaluation.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import Metric

try:
    from nerfstudio.engine.callbacks import TrainingCallback, TrainingCallbackAttributes, TrainingCallbackLocation
    from nerfstudio.engine.trainer import TrainerConfig
    from nerfstudio.pipelines.base_pipeline import VanillaPipeline, VanillaPipelineConfig
    from nerfstudio.utils import comms
except ImportError as err:
    raise ImportError(
        'scenemetrics.callbacks.nerfstudio needs nerfstudio: pip install "scenemetrics[nerfstudio]"'
    ) from err

from scenemetrics.callbacks.evaluation import EvaluationResult, MetricRunner, check_colormap, evenly_spaced
from scenemetrics.callbacks.logging import log_to_nerfstudio
from scenemetrics.callbacks.views import RenderedView, prepare_view
from scenemetrics.registry import UPDATE_SIGNATURES, MetricConfig, get_metric, load_plugins, metric_names

__all__ = [
    "METRIC_NAMES",
    "SceneMetricsNerfstudioConfig",
    "SceneMetricsPipeline",
    "SceneMetricsPipelineConfig",
    "SceneMetricsTrainingCallback",
    "add_scenemetrics",
    "build_metrics",
]

METRIC_NAMES = ("puzzlesim", "osim", "prism")
"""The scenemetrics metrics the nerfstudio methods are made for; any name in :mod:`scenemetrics.registry` works."""

_OPTION_KEYS = {"weights_path": "weights", "extractor_path": "model", "head_path": "head", "center_crop": "center_crop"}
"""Config field ``<metric>_<suffix>`` -> the registry option it sets for that metric."""


@dataclass
class SceneMetricsNerfstudioConfig:
    """Options of the nerfstudio callback (CLI: ``--pipeline.scenemetrics.<option-with-dashes>``)."""

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
    """Colormap of the maps (fixed [0, 1] range; jet_r shows PuzzleSim artifacts warm)."""
    prefix: str = "scenemetrics/"
    """Prefix of every logged tag."""
    eval_at_start: bool = False
    """Also evaluate at iteration 0."""
    puzzlesim_weights_path: Path | None = None
    """SqueezeNet 1.1 checkpoint file or folder (None: the scenemetrics cache / download)."""
    osim_weights_path: Path | None = None
    """YOLOX-X checkpoint file or folder (None: the scenemetrics cache / download)."""
    prism_extractor_path: Path | None = None
    """Zero123 diffusers folder or hub id (None: scenemetrics.prism.DEFAULT_MODEL)."""
    prism_head_path: Path | None = None
    """Trained PRISM projection head (None: raw diffusion features, not PRISM as published; one warning)."""
    prism_center_crop: bool = False
    """Center-crop non-square views to a square for PRISM only (otherwise PRISM skips them)."""


def _check_config(cfg: SceneMetricsNerfstudioConfig) -> None:
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
    if not isinstance(cfg.max_logged_images, int) or cfg.max_logged_images < 0:
        raise ValueError(f"`max_logged_images` must be an int >= 0; received {cfg.max_logged_images!r}")
    check_colormap(cfg.map_colormap)


def _metric_options(cfg: SceneMetricsNerfstudioConfig, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The registry options of metric ``name`` from the ``<name>_<suffix>`` config fields, and their CLI flags."""
    options: dict[str, Any] = {}
    flags: dict[str, str] = {}
    for f in dataclasses.fields(cfg):
        key = _OPTION_KEYS.get(f.name[len(name) + 1 :]) if f.name.startswith(f"{name}_") else None
        if key is None:
            continue
        value = getattr(cfg, f.name)
        flags[key] = f"--pipeline.scenemetrics.{f.name.replace('_', '-')}"
        if value is not None:
            options[key] = str(value) if isinstance(value, Path) else value
    return options, flags


def build_metrics(cfg: SceneMetricsNerfstudioConfig, device: torch.device | str = "cpu") -> dict[str, Metric]:
    """The metrics named in ``cfg.metrics``, with ``sync_on_compute=False`` (rank 0 evaluates alone), on ``device``.

    Example:
        >>> import os, tempfile
        >>> import scenemetrics as sm
        >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> cfg = SceneMetricsNerfstudioConfig(puzzlesim_weights_path=w)
        >>> type(build_metrics(cfg)["puzzlesim"]).__name__
        'PuzzleSim'
    """
    _check_config(cfg)
    out: dict[str, Metric] = {}
    for name in cfg.metrics:
        entry = get_metric(name)
        options, flags = _metric_options(cfg, name)
        reason = entry.unavailable_reason(options)
        if reason is not None:
            raise ValueError(f"scenemetrics nerfstudio callback: metric {name!r} cannot run: {reason}")
        metric = entry.build(MetricConfig(name, options, torch.device(device), flags=flags))
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


def _center_square(image: Tensor) -> Tensor:
    h, w = image.shape[-2:]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return image[..., top : top + s, left : left + s]


def _c2w_4x4(c2w: Tensor) -> Tensor:
    bottom = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=c2w.dtype, device=c2w.device).expand(*c2w.shape[:-2], 1, 4)
    return torch.cat([c2w[..., :3, :4], bottom], dim=-2)


class SceneMetricsTrainingCallback(TrainingCallback):
    """nerfstudio ``TrainingCallback`` that renders eval views every ``config.every_n_steps`` iterations and logs.

    Runs after the training iteration (``AFTER_TRAIN_ITERATION``), on the main process only; values go through
    ``nerfstudio.utils.writer`` at the iteration ``step`` (TensorBoard, W&B, Comet, whatever ``--vis`` selects):
    ``{prefix}puzzlesim`` / ``osim`` / ``prism`` scalars, ``{prefix}osim/class/<name>``, ``{prefix}eval_seconds``,
    colormapped ``{prefix}puzzlesim/map/{i}`` and ``{prefix}osim/overlay/{i}`` images.

    Args:
        pipeline: the training pipeline (a ``VanillaPipeline``; its model renders with ``get_outputs_for_camera``).
        config: the options.

    Example:
        In a custom pipeline::

            def get_training_callbacks(self, attrs):
                return super().get_training_callbacks(attrs) + [SceneMetricsTrainingCallback(self, cfg)]
    """

    def __init__(self, pipeline: VanillaPipeline, config: SceneMetricsNerfstudioConfig) -> None:
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

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, UserWarning, stacklevel=3)

    def evaluate(self, step: int) -> EvaluationResult | None:
        """Evaluate and log at iteration ``step``; returns the result (``None`` when skipped)."""
        if (step == 0 and not self.config.eval_at_start) or not comms.is_main_process():
            return None
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
                self.runner.begin(collect_images=True)
                for index, view in enumerate(self._views):
                    self.runner.update(index, self._render(view))
                result = self.runner.finish()
        finally:
            for module, training in modes:
                module.train(training)
        result.scalars[f"{self.config.prefix}eval_seconds"] = perf_counter() - start
        log_to_nerfstudio(result, step)
        return result

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
        )
        runner.update_fns = {name: self._square_update(runner, name) for name, a in runner.adapters.items() if a.square}
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
        centres = train.cameras.camera_to_worlds[:, :3, 3]
        for i in evenly_spaced(len(evals), cfg.num_eval_views):
            view: dict[str, Any] = {"index": i, "camera": evals.cameras[i : i + 1]}
            if needs_cameras:
                import scenemetrics as sm

                c2w = evals.cameras.camera_to_worlds[i]
                j = int(torch.linalg.vector_norm(centres - c2w[:3, 3], dim=-1).argmin())
                view["source"] = self._load(train, j)
                spherical = sm.prism.spherical_from_c2w
                view["pose"] = sm.prism.relative_pose(
                    spherical(_c2w_4x4(train.cameras.camera_to_worlds[j]).float()), spherical(_c2w_4x4(c2w).float())
                )
            self._views.append(view)

    def _load(self, dataset: Any, index: int) -> Tensor:
        return _limit_side(_hwc_to_batch(dataset.get_image_float32(index)), self.config.max_image_side)

    # -- one view --------------------------------------------------------------------------------------------------
    def _render(self, view: dict[str, Any]) -> RenderedView:
        pipeline = self.pipeline
        device = pipeline.device
        model: Any = pipeline.model
        outputs = model.get_outputs_for_camera(view["camera"].to(device))
        render = _limit_side(_hwc_to_batch(outputs["rgb"]).clamp(0, 1), self.config.max_image_side)
        evals = pipeline.datamanager.eval_dataset
        target = _limit_side(
            _hwc_to_batch(evals.get_image_float32(view["index"]), outputs.get("background")), self.config.max_image_side
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
                "pose": view["pose"],
            }
        item = RenderedView(render, target.to(render.device), extras)
        return prepare_view(item, "nerfstudio model.get_outputs_for_camera", view["index"])

    def _square_update(self, runner: MetricRunner, name: str) -> Any:
        """The update of a metric whose adapter needs square views: non-square views are skipped (one warning), or
        centre-cropped with ``<name>_center_crop``."""
        crop = bool(getattr(self.config, f"{name}_center_crop", False))
        wanted = UPDATE_SIGNATURES[runner.kind(name)]

        def update(metric: Metric, render: Tensor, target: Tensor | None, extras: Any) -> bool:
            if "target" in wanted and target is None:
                return False
            values: dict[str, Any] = {"render": render, "target": target}
            if "source" in wanted:
                values["source"], values["pose"] = extras["source"].to(render.device), extras["pose"].to(render.device)
            if render.shape[-2] != render.shape[-1]:
                if not crop:
                    flag = f"--pipeline.scenemetrics.{name.replace('_', '-')}-center-crop"
                    self._warn_once(
                        f"{name}_square",
                        f"scenemetrics nerfstudio callback: {name} needs square views; non-square views are skipped "
                        f"for it ({flag} True crops them to a centred square for {name} only)",
                    )
                    return False
                values = {k: _center_square(v) if k != "pose" and v is not None else v for k, v in values.items()}
            metric.update(*(values[key] for key in wanted))
            return True

        return update


@dataclass
class SceneMetricsPipelineConfig(VanillaPipelineConfig):
    """``VanillaPipelineConfig`` plus the ``scenemetrics`` options (``--pipeline.scenemetrics.*``)."""

    _target: type = field(default_factory=lambda: SceneMetricsPipeline)
    scenemetrics: SceneMetricsNerfstudioConfig = field(default_factory=SceneMetricsNerfstudioConfig)


class SceneMetricsPipeline(VanillaPipeline):
    """``VanillaPipeline`` whose training callbacks include a :class:`SceneMetricsTrainingCallback`."""

    config: SceneMetricsPipelineConfig

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
