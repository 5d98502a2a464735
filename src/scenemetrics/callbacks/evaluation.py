"""Framework-neutral evaluation: which ``update`` each metric gets, what is computed, which images are made.

Both the Lightning callback and the nerfstudio callback drive a :class:`MetricRunner`:
``begin()`` → ``update(i, view)`` per rendered view → ``finish()`` → scalars and images keyed by their log tags.

Dispatch, per metric ``m`` named ``name``: ``update_fns[name](m, render, target, extras)`` when given, otherwise
the one dispatch of ``m``'s adapter in :mod:`scenemetrics.registry` (:func:`~scenemetrics.registry.adapter_for`: the
entry registered under ``name`` or for ``m``'s class, subclasses included; else ``set_references`` -> references,
anything else paired; :meth:`~scenemetrics.registry.MetricAdapter.update_args`), the same ``scenemetrics eval``
uses:

==================  =========================================================
update kind         call
==================  =========================================================
``references``      ``m.update(render)`` (after ``set_references``; PuzzleSim)
``prism_mmd``       ``m.update(extras["source"], render, pose)``
``prism_distance``  ``m.update(extras["source"], render, target, pose)``
``joint``           ``m.update(extras["source"], render, target)`` (JFID, JCMMD, ...)
``vs_source``       ``m.update(render, extras["source"])`` (CLIP-S with the source)
``paired``          ``m.update(render, target)`` (OSIM, PSNR, SSIM, ...)
==================  =========================================================

``pose`` is ``extras["pose"]``, or computed by the adapter from ``extras["cameras"]`` (a pair of source and target
cameras); the kinds without a pose need only ``extras["source"]``. A view a metric cannot use (no target; not square
for a metric declared ``square`` without its ``center_crop`` option) is skipped for it with one warning. The adapter
also says which pictures a metric gives: its ``last_maps`` map, and the objects overlay its ``overlay`` function draws
(OSIM). Nothing here imports a metric family or compares class names.

Example:
    >>> import torch, torchmetrics
    >>> from scenemetrics.callbacks import RenderedView
    >>> runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()})
    >>> runner.begin(collect_images=False)
    >>> runner.update(0, RenderedView(torch.ones(1, 3, 4, 4), torch.zeros(1, 3, 4, 4)))
    >>> runner.finish().scalars
    {'scenemetrics/mse': 1.0}
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.callbacks.views import RenderedView
from scenemetrics.registry import (
    UPDATE_SIGNATURES,
    MetricAdapter,
    MetricConfig,
    UnusableViewError,
    ViewItem,
    adapter_for,
)
from scenemetrics.viz import apply_colormap, map_picture, to_uint8

__all__ = [
    "EvaluationResult",
    "MetricRunner",
    "UpdateFn",
    "check_max_views",
    "check_references_arg",
    "check_schedule",
    "evenly_spaced",
    "is_due",
    "scalars_from_value",
    "shard_indices",
]

UpdateFn = Callable[[Metric, Tensor, "Tensor | None", Mapping[str, Any]], "bool | None"]
"""``fn(metric, render, target, extras)``; returning ``False`` (not ``None``) means the view was skipped for it."""

# torchmetrics warns when compute() runs on a metric that saw no update; under DDP a rank without views still has
# to join the collective compute, and its zero states sync correctly.
_COMPUTE_BEFORE_UPDATE = r".*compute.*called before.*update.*"


@dataclass
class EvaluationResult:
    """What one evaluation produced.

    Attributes:
        scalars: log tag -> value (metric scores, per-key / per-class scores).
        images: log tag -> ``uint8`` ``(3, H, W)`` CPU image (colormapped maps, overlays, renders).
    """

    scalars: dict[str, float] = field(default_factory=dict)
    images: dict[str, Tensor] = field(default_factory=dict)


def evenly_spaced(n: int, k: int | None) -> list[int]:
    """``k`` indices spread evenly over ``range(n)``: ``round(j * (n - 1) / (k - 1))`` (all if ``k >= n``).

    Python's ``round`` (ties to even), so ``evenly_spaced(6, 3) == [0, 2, 5]``.
    """
    if k is None or k >= n:
        return list(range(n))
    if k == 1:
        return [0]
    return [round(j * (n - 1) / (k - 1)) for j in range(k)]


def check_schedule(value: int | None, name: str) -> int | None:
    """``value`` as an evaluation period: an int >= 1, or ``None`` (``ValueError`` naming ``name`` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{name}` must be an int >= 1 or None; received {value!r}")
    return value


def check_references_arg(references: Any, callable_form: str) -> Any:
    """Validate a ``references=`` argument: ``None``, a tensor, a list of tensors or a callable ``callable_form``.

    Raises:
        TypeError: anything else (the message names ``references`` and the accepted forms).
    """
    if references is not None and not (
        isinstance(references, Tensor)
        or callable(references)
        or (isinstance(references, Sequence) and not isinstance(references, (str, bytes)))
    ):
        raise TypeError(
            f"`references` must be a tensor (N, 3, H, W), a list of (3, H, W) tensors or a callable {callable_form}; "
            f"received {type(references).__name__}"
        )
    return references


def check_max_views(value: int | None, name: str = "max_reference_views") -> int | None:
    """An int >= 1 or ``None`` (``ValueError`` naming ``name`` otherwise)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"`{name}` must be an int >= 1 or None; received {value!r}")
    return value


def is_due(step: int, every_n_steps: int | None, last_eval_step: int) -> bool:
    """The step schedule every integration shares: ``step > 0``, a multiple of ``every_n_steps``, not yet done.

    Example:
        >>> [s for s in range(0, 7) if is_due(s, 3, last_eval_step=-1)]
        [3, 6]
    """
    return every_n_steps is not None and step > 0 and step % every_n_steps == 0 and step != last_eval_step


def shard_indices(n: int, rank: int, world_size: int) -> list[int]:
    """The views process ``rank`` renders: ``i % world_size == rank``; with fewer views than processes, every process
    still gets one (``rank % n``), because list states cannot gather from a process that updated nothing.

    Example:
        >>> shard_indices(5, 1, 2), shard_indices(1, 1, 2)
        ([1, 3], [0])
    """
    indices = [i for i in range(n) if i % world_size == rank]
    if not indices and n:
        indices = [rank % n]
    return indices


def scalars_from_value(tag: str, value: Any, metric_name: str) -> dict[str, float]:
    """Flatten a ``compute()`` result into log scalars.

    A 1-element tensor or a number gives ``{tag: value}``; a mapping gives ``{tag/key: ...}`` (nested keys joined by
    ``/``); an object with a ``score`` attribute (a dataclass result) gives ``{tag: score}``.

    Raises:
        ValueError: a tensor with more than one element, or a value of another type.
    """
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for key, sub in value.items():
            out.update(scalars_from_value(f"{tag}/{key}", sub, metric_name))
        return out
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"metric {metric_name!r}: compute() returned a tensor of shape {tuple(value.shape)}; the callback "
                "logs scalars. Use `update_fns`/a wrapper metric returning a scalar or a dict of scalars."
            )
        return {tag: float(value.detach().reshape(()).cpu())}
    if isinstance(value, (bool, int, float)):
        return {tag: float(value)}
    score = getattr(value, "score", None)
    if score is not None:
        return scalars_from_value(tag, score, metric_name)
    raise ValueError(
        f"metric {metric_name!r}: compute() returned {type(value).__name__}; expected a scalar tensor, a number, a "
        "mapping of those, or a result with a `score` attribute. Use `update_fns`/a wrapper metric."
    )


def check_metrics(metrics: Any) -> dict[str, Metric]:
    """Validate the ``metrics`` argument: a non-empty mapping of ``str`` to ``torchmetrics.Metric``."""
    if not isinstance(metrics, Mapping) or not metrics:
        raise ValueError(
            f"`metrics` must be a non-empty mapping of names to torchmetrics.Metric; received {type(metrics).__name__}"
            + (" (empty)" if isinstance(metrics, Mapping) else "")
        )
    for name, metric in metrics.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"`metrics` keys must be non-empty strings; received {name!r}")
        if not isinstance(metric, Metric):
            raise ValueError(
                f"`metrics[{name!r}]` must be a torchmetrics.Metric; received {type(metric).__name__} "
                "(wrap other scorers in a torchmetrics.Metric subclass)"
            )
    return dict(metrics)


def check_colormap(colormap: str) -> str:
    """Fail early (``ValueError`` naming ``map_colormap``) on a colormap unknown to ``scenemetrics.viz``."""
    try:
        apply_colormap(torch.zeros(1, 1), colormap)
    except ValueError as err:
        raise ValueError(f"`map_colormap`: {err}") from None
    return colormap


def map_image(values: Tensor, name: str, index: int, colormap: str = "jet_r") -> Tensor:
    """The logged picture of a metric map: the map on its 2nd-98th percentile with a title and a colour bar.

    Colours are relative to this map (a fixed [0, 1] scale shows PuzzleSim maps as one flat colour); the colour
    bar's tick labels give the real values, so steps compare by their numbers. ``uint8`` ``(3, H', W')``.
    """
    v = values.detach().float().cpu()
    title = f"{name} map, view {index} (mean {float(v.mean()):.4f})"
    return map_picture(v, title=title, colormap=colormap, value_label=f"{name} value").image


class MetricRunner:
    """Runs one evaluation over rendered views: dispatches updates, computes, prepares images.

    Args:
        metrics: name -> ``torchmetrics.Metric``.
        update_fns: name -> ``fn(metric, render, target, extras)`` overriding the dispatch for that metric.
        log_maps: colormap ``last_maps`` of metrics that have them, and draw OSIM overlays.
        log_renders: also log the renders themselves (``{prefix}render/{i}``).
        max_logged_images: only views with index ``i < max_logged_images`` get images.
        map_colormap: colormap for metric maps (fixed range [0, 1]).
        prefix: prefix of every log tag.
        configs: name -> the :class:`~scenemetrics.registry.MetricConfig` a metric was built with (its options
            steer the dispatch, e.g. PRISM's ``center_crop``; its flags name them in messages); default: no options.
    """

    def __init__(
        self,
        metrics: Mapping[str, Metric],
        *,
        update_fns: Mapping[str, UpdateFn] | None = None,
        log_maps: bool = True,
        log_renders: bool = False,
        max_logged_images: int = 4,
        map_colormap: str = "jet_r",
        prefix: str = "scenemetrics/",
        configs: Mapping[str, MetricConfig] | None = None,
    ) -> None:
        self.metrics = check_metrics(metrics)
        update_fns = dict(update_fns or {})
        for name, fn in update_fns.items():
            if name not in self.metrics:
                raise ValueError(f"`update_fns` has key {name!r}, which is not a metric name ({sorted(self.metrics)})")
            if not callable(fn):
                raise ValueError(f"`update_fns[{name!r}]` must be callable; received {type(fn).__name__}")
        self.update_fns = update_fns
        if isinstance(max_logged_images, bool) or not isinstance(max_logged_images, int) or max_logged_images < 0:
            raise ValueError(f"`max_logged_images` must be an int >= 0; received {max_logged_images!r}")
        self.log_maps = bool(log_maps)
        self.log_renders = bool(log_renders)
        self.max_logged_images = max_logged_images
        self.map_colormap = check_colormap(map_colormap)
        self.prefix = str(prefix)
        self._warned: set[tuple[str, str]] = set()
        self._counts: dict[str, int] = {}
        self._images: dict[str, Tensor] = {}
        self._overlays: dict[str, list[tuple[int, Tensor, Any]]] = {}
        self._collect = False
        self.adapters: dict[str, MetricAdapter] = {name: adapter_for(m, name) for name, m in self.metrics.items()}
        self._kinds = {name: self.adapters[name].update_kind(m) for name, m in self.metrics.items()}
        configs = dict(configs or {})
        self.configs = {name: configs.get(name) or MetricConfig(name, {}, None) for name in self.metrics}

    def kind(self, name: str) -> str:
        """The update kind of metric ``name`` (see the module)."""
        return self._kinds[name]

    # -- references ----------------------------------------------------------------------------------------------
    def needs_references(self) -> bool:
        """Whether a metric takes reference views (update kind ``references``, e.g. PuzzleSim)."""
        return any(kind == "references" for kind in self._kinds.values())

    def set_references(self, references: Any, max_reference_views: int | None, *, missing_hint: str) -> None:
        """Give ``references`` (at most ``max_reference_views``, evenly spaced) to every metric fed by references;
        ``None`` sets nothing. A metric that still has none (its ``has_references`` is false) raises ``ValueError``
        ending with ``missing_hint`` (what the caller should pass)."""
        needs = {name: m for name, m in self.metrics.items() if self._kinds[name] == "references"}
        if references is not None and needs:
            refs = _subset_references(references, max_reference_views)
            for metric in needs.values():
                moved = refs.to(metric.device) if isinstance(refs, Tensor) else [r.to(metric.device) for r in refs]
                metric.set_references(moved)
        for name, metric in needs.items():
            if getattr(metric, "has_references", True) is False:
                raise ValueError(f"metric {name!r} needs reference images and has none. {missing_hint}")

    # -- one evaluation -------------------------------------------------------------------------------------------
    def begin(self, *, collect_images: bool) -> None:
        """Reset every metric (a logged value covers exactly one evaluation) and the per-evaluation buffers."""
        for metric in self.metrics.values():
            metric.reset()
        self._counts = dict.fromkeys(self.metrics, 0)
        self._images = {}
        self._overlays = {name: [] for name in self.metrics}
        self._collect = bool(collect_images)

    def update(self, index: int, view: RenderedView) -> None:
        """Feed one prepared view (see :func:`~scenemetrics.callbacks.views.prepare_view`) to every metric."""
        logged = self._collect and index < self.max_logged_images
        if logged and self.log_renders:
            self._images[f"{self.prefix}render/{index}"] = to_uint8(view.render[0].float())
        for name, metric in self.metrics.items():
            if not self._update_one(name, metric, index, view):
                continue
            self._counts[name] += 1
            if logged and self.log_maps:
                self._grab_images(name, metric, index, view)

    def _update_one(self, name: str, metric: Metric, index: int, view: RenderedView) -> bool:
        device = metric.device
        render = view.render.to(device)
        target = view.target.to(device) if view.target is not None else None
        extras = view.extras
        fn = self.update_fns.get(name)
        if fn is not None:
            return fn(metric, render, target, extras) is not False
        cameras: dict[str, Any] = {}
        wanted = UPDATE_SIGNATURES[self._kinds[name]]
        if "source" in wanted:
            cameras = self._cameras(name, extras, device, "pose" in wanted)
        item = ViewItem(str(index), "", render, target, **cameras)
        try:
            args = self.adapters[name].update_args(metric, item, self.configs[name])
        except UnusableViewError as err:
            text = "needs a target" if err.reason == "target" else str(err).removeprefix(f"{name} ")
            self._warn_once(
                name, err.reason, f"scenemetrics callback: metric {name!r} {text}; such views are skipped for it"
            )
            return False
        metric.update(*args)
        return True

    @staticmethod
    def _cameras(name: str, extras: Mapping[str, Any], device: torch.device, needs_pose: bool) -> dict[str, Any]:
        """``source`` and, when the metric takes a pose, ``pose`` (or ``cameras``) of a view from its ``extras``, on
        ``device``."""
        keys = (
            ("source",) if not needs_pose else ("source", "pose") if "cameras" not in extras else ("source", "cameras")
        )
        missing = [key for key in keys if key not in extras]
        if missing:
            pose = (
                ", 'pose': ...}), or 'cameras': (source_camera, target_camera) instead of 'pose'"
                if needs_pose
                else "})"
            )
            raise KeyError(
                f"metric {name!r} needs extras[{missing[0]!r}] in every rendered view (RenderedView(render, target, "
                f"extras={{'source': ...{pose}); it is missing"
            )
        out = {key: extras[key] for key in keys}
        out["source"] = out["source"].to(device)
        if "pose" in out and isinstance(out["pose"], Tensor):
            out["pose"] = out["pose"].to(device)
        return out

    def _grab_images(self, name: str, metric: Metric, index: int, view: RenderedView) -> None:
        adapter = self.adapters[name]
        maps = getattr(metric, "last_maps", None) if adapter.has_picture("map", metric) else None
        if isinstance(maps, Tensor) and maps.ndim in (2, 3) and maps.numel():
            first = maps[0] if maps.ndim == 3 else maps
            self._images[f"{self.prefix}{name}/map/{index}"] = map_image(first, name, index, self.map_colormap)
        if adapter.overlay is not None and adapter.has_picture("objects", metric):
            result = getattr(metric, "last_result", None)
            if result is not None:
                self._overlays[name].append((index, view.render[0].detach().cpu(), result))

    def local_counts(self) -> Tensor:
        """Number of views each metric was updated with on this process, in ``metrics`` order (int64)."""
        return torch.tensor([self._counts.get(name, 0) for name in self.metrics], dtype=torch.int64)

    def finish(self, global_counts: Tensor | None = None) -> EvaluationResult:
        """``compute()`` every metric (in ``metrics`` order) and collect scalars and images.

        Args:
            global_counts: per-metric update counts summed over all processes (``local_counts()`` when ``None``).
                A metric with a zero count is neither computed nor logged (one warning); under DDP every process
                must pass the same counts so that all of them take part in the same collective ``compute`` calls.
        """
        counts = self.local_counts() if global_counts is None else global_counts
        result = EvaluationResult(images=self._images)
        for (name, metric), total in zip(self.metrics.items(), counts.tolist(), strict=True):
            if total == 0:
                self._warn_once(
                    name,
                    "empty",
                    f"scenemetrics callback: metric {name!r} got no view in this evaluation (e.g. none has a target); "
                    "it is not logged",
                )
                continue
            with warnings.catch_warnings():
                if self._counts.get(name, 0) == 0:
                    warnings.filterwarnings("ignore", message=_COMPUTE_BEFORE_UPDATE)
                value = metric.compute()
            tag = f"{self.prefix}{name}"
            scalars = scalars_from_value(tag, value, name)
            result.scalars.update(scalars)
            class_scores = getattr(metric, "class_scores", None)
            if callable(class_scores):
                for cls, score in class_scores().items():
                    result.scalars[f"{tag}/class/{str(cls).replace(' ', '_')}"] = float(score)
            if self._overlays.get(name):
                self._draw_overlays(name, scalars.get(tag, float("nan")))
        return result

    def _draw_overlays(self, name: str, scene_score: float) -> None:
        draw = self.adapters[name].overlay_function()
        for index, render, osim_result in self._overlays[name]:
            title = f"{name}, view {index}: objects below the scene score {scene_score:.4f}"
            picture = draw(render, osim_result, image_index=0, threshold=scene_score, title=title)
            self._images[f"{self.prefix}{name}/overlay/{index}"] = to_uint8(picture.image)

    def _warn_once(self, name: str, what: str, message: str) -> None:
        if (name, what) not in self._warned:
            self._warned.add((name, what))
            warnings.warn(message, UserWarning, stacklevel=3)


def _subset_references(refs: Any, max_views: int | None) -> Tensor | list[Tensor]:
    from scenemetrics.image import check_images

    if isinstance(refs, Tensor):
        refs = check_images(refs, "references")
        return refs[evenly_spaced(refs.shape[0], max_views)]
    if isinstance(refs, (list, tuple)) and all(isinstance(r, Tensor) for r in refs):
        return [refs[i] for i in evenly_spaced(len(refs), max_views)]
    raise TypeError(f"references must be a tensor (N, 3, H, W) or a list of tensors; received {type(refs).__name__}")
