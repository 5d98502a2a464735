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

from scenemetrics.callbacks.pictures import (
    DEFAULT_PANEL_MAP,
    DEFAULT_STRIP_STEPS,
    PANEL_MAPS,
    PictureState,
    check_panel_map,
    draw_map,
    draw_panel,
    draw_strip,
    strip_tile,
)
from scenemetrics.callbacks.views import RenderedView
from scenemetrics.registry import (
    UPDATE_SIGNATURES,
    MetricAdapter,
    MetricConfig,
    UnusableViewError,
    ViewItem,
    adapter_for,
    get_metric,
)
from scenemetrics.viz import apply_colormap, colormap_for, to_uint8

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
        images: log tag -> ``uint8`` ``(3, H, W)`` CPU image (maps, panels, overlays, renders).
        display_ranges: image tag -> ``(vmin, vmax)`` the colours of that image span (maps, panels, the panel over
            time), so a program can check that a view keeps its range from step to step.
    """

    scalars: dict[str, float] = field(default_factory=dict)
    images: dict[str, Tensor] = field(default_factory=dict)
    display_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


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


class MetricRunner:
    """Runs one evaluation over rendered views: dispatches updates, computes, draws the pictures.

    The work is split so that only the producer of the views needs the model: :meth:`update` takes views already
    rendered and detached (it feeds the metrics and keeps, for the logged views, the maps and the images the pictures
    need, on the CPU), and :meth:`finish` computes the metrics and draws every picture. The display ranges
    (:class:`~scenemetrics.callbacks.pictures.PictureState`) change only in :meth:`finish`, in the order of the
    evaluations.

    Args:
        metrics: name -> ``torchmetrics.Metric``.
        update_fns: name -> ``fn(metric, render, target, extras)`` overriding the dispatch for that metric.
        log_maps: pictures of the ``last_maps`` of metrics that have them, and OSIM overlays.
        log_renders: also log the renders themselves (``{prefix}render/{i}``).
        max_logged_images: only views with index ``i < max_logged_images`` get images.
        map_colormap: colormap of similarity maps (error maps get its reversal; see
            :mod:`~scenemetrics.callbacks.pictures`).
        prefix: prefix of every log tag.
        configs: name -> the :class:`~scenemetrics.registry.MetricConfig` a metric was built with (its options
            steer the dispatch, e.g. PRISM's ``center_crop``; its flags name them in messages); default: no options.
        panel_map: the map of the render | target | map panels (``{prefix}panel/{i}``): ``"abs"`` (default),
            ``"ssim"``, ``"lpips"`` or ``None`` (no panels). The maps of a metric in ``metrics`` of that kind
            (``abs_error``, ``ssim_map``, ``lpips_map``) are reused; otherwise the runner builds one through the
            registry (with ``panel_config``; LPIPS loads its weights now).
        map_range: ``"first"`` (default), ``"per-map"`` or ``(vmin, vmax)``: the display ranges of maps and panels.
        strip_steps: steps shown by the panel over time (``{prefix}panel_over_time/{i}``); 0: none.
        panel_config: the configuration the panel's metric is built with (default: its defaults).
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
        panel_map: str | None = DEFAULT_PANEL_MAP,
        map_range: str | tuple[float, float] = "first",
        strip_steps: int = DEFAULT_STRIP_STEPS,
        panel_config: MetricConfig | None = None,
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
        self.activity = ""
        """What the runner is doing (``"updating metric 'psnr' with view 2"``, ...; ``""`` when idle): after an
        exception it names where the evaluation failed (background evaluation reports it)."""
        self._counts: dict[str, int] = {}
        self._images: dict[str, Tensor] = {}
        self._maps: dict[tuple[str, int], Tensor] = {}
        self._panels: dict[int, tuple[Tensor, Tensor, Tensor]] = {}
        self._overlays: dict[str, list[tuple[int, Tensor, Any]]] = {}
        self._collect = False
        self._step: int | None = None
        self.adapters: dict[str, MetricAdapter] = {name: adapter_for(m, name) for name, m in self.metrics.items()}
        self._kinds = {name: self.adapters[name].update_kind(m) for name, m in self.metrics.items()}
        configs = dict(configs or {})
        self.configs = {name: configs.get(name) or MetricConfig(name, {}, None) for name in self.metrics}
        self.pictures = PictureState(map_range, strip_steps)
        self.panel_map = check_panel_map(panel_map)
        self._panel_config = panel_config
        self._panel_metric: Metric | None = None
        self._panel_source: str | None = None  # a metric of `metrics` whose maps the panels reuse
        if self.panel_map is not None:
            wanted = PANEL_MAPS[self.panel_map]
            self._panel_source = next((n for n in self.metrics if self.adapters[n].name == wanted), None)
            if self._panel_source is None and self.max_logged_images > 0:
                self._panel_metric = self._build_panel_metric()

    def kind(self, name: str) -> str:
        """The update kind of metric ``name`` (see the module)."""
        return self._kinds[name]

    def _build_panel_metric(self) -> Metric:
        """The metric behind ``panel_map``, built through the registry (LPIPS loads its weights here)."""
        assert self.panel_map is not None
        name = PANEL_MAPS[self.panel_map]
        config = self._panel_config or MetricConfig(name, {}, None)
        try:
            return get_metric(name).build(config)
        except Exception as err:
            note = (
                f"(building the {name!r} metric for panel_map={self.panel_map!r}; pass panel_map='abs', which needs "
                "no weights, or panel_map=None)"
            )
            if hasattr(err, "add_note"):  # Python >= 3.11
                err.add_note(note)
            elif len(err.args) == 1 and isinstance(err.args[0], str):  # Python 3.10: into the message itself
                err.args = (f"{err.args[0]} {note}",)
            raise

    def _higher_is_better(self, name: str) -> bool | None:
        declared = self.adapters[name].higher_is_better
        if declared is not None:
            return declared
        value = getattr(self.metrics[name], "higher_is_better", None)
        return value if isinstance(value, bool) else None

    # -- checkpoint state --------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The pictures' state (fixed display ranges, tiles of the panel over time): plain data for a checkpoint."""
        return self.pictures.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.pictures.load_state_dict(state)

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
    def begin(self, *, collect_images: bool, step: int | None = None) -> None:
        """Reset every metric (a logged value covers exactly one evaluation) and the per-evaluation buffers.

        Args:
            collect_images: keep what the pictures need (rank 0 only under DDP).
            step: the training step of this evaluation (in the pictures' titles; fixes display ranges).
        """
        self.activity = "resetting the metrics"
        for metric in self.metrics.values():
            metric.reset()
        if self._panel_metric is not None:
            self._panel_metric.reset()
        self._counts = dict.fromkeys(self.metrics, 0)
        self._images = {}
        self._maps = {}
        self._panels = {}
        self._overlays = {name: [] for name in self.metrics}
        self._collect = bool(collect_images)
        self._step = None if step is None else int(step)
        self.activity = ""

    def update(self, index: int, view: RenderedView) -> None:
        """Feed one prepared view (see :func:`~scenemetrics.callbacks.views.prepare_view`) to every metric."""
        logged = self._collect and index < self.max_logged_images
        if logged and self.log_renders:
            self._images[f"{self.prefix}render/{index}"] = to_uint8(view.render[0].float())
        updated: set[str] = set()
        for name, metric in self.metrics.items():
            self.activity = f"updating metric {name!r} with view {index}"
            if not self._update_one(name, metric, index, view):
                continue
            self._counts[name] += 1
            updated.add(name)
            if logged and self.log_maps:
                self._grab_images(name, metric, index, view)
        if logged and self.panel_map is not None and view.target is not None:
            self.activity = f"making the panel of view {index}"
            self._grab_panel(index, view, updated)
        self.activity = ""

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
            self._maps[(name, index)] = first.detach().float().cpu()
        if adapter.overlay is not None and adapter.has_picture("objects", metric):
            result = getattr(metric, "last_result", None)
            if result is not None:
                self._overlays[name].append((index, view.render[0].detach().cpu(), result))

    def _grab_panel(self, index: int, view: RenderedView, updated: set[str]) -> None:
        """Keep the render, target and panel map (first image of the view) of a logged view, on the CPU."""
        assert view.target is not None
        render, target = view.render[:1], view.target[:1]
        maps = None
        source = self._panel_source
        if source is not None and source in updated:
            maps = getattr(self.metrics[source], "last_maps", None)
        if not isinstance(maps, Tensor) or maps.ndim != 3 or maps.shape[-2:] != render.shape[-2:]:
            if self._panel_metric is None:  # the reused metric keeps no maps (keep_maps=False)
                self._panel_metric = self._build_panel_metric()
            self._panel_metric.update(render, target)
            maps = getattr(self._panel_metric, "last_maps", None)
        if isinstance(maps, Tensor) and maps.ndim == 3 and maps.shape[0]:
            self._panels[index] = (render[0].cpu(), target[0].cpu(), maps[0].detach().float().cpu())

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
            self.activity = f"computing metric {name!r}"
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
                self.activity = f"drawing the overlays of metric {name!r}"
                self._draw_overlays(name, scalars.get(tag, float("nan")))
        self.activity = "drawing the pictures"
        self._draw(result)
        self.activity = ""
        return result

    def _draw(self, result: EvaluationResult) -> None:
        """Draw the kept maps and panels on their display ranges (fixing new ones, in evaluation order)."""
        step, state = self._step, self.pictures
        order = {name: k for k, name in enumerate(self.metrics)}
        for name, index in sorted(self._maps, key=lambda key: (order[key[0]], key[1])):
            values = self._maps[(name, index)]
            tag = f"{self.prefix}{name}/map/{index}"
            hib = self._higher_is_better(name)
            rng = state.display_range(tag, values, step=step, higher_is_better=hib, what=name)
            cmap = colormap_for(self.map_colormap, hib)
            result.images[tag] = draw_map(
                values, name, index, step=step, display_range=rng, colormap=cmap, higher_is_better=hib
            ).image
            result.display_ranges[tag] = (rng.vmin, rng.vmax)
        if not self._panels:
            return
        assert self.panel_map is not None
        what = PANEL_MAPS[self.panel_map]
        hib = get_metric(what).higher_is_better
        cmap = colormap_for(self.map_colormap, hib)
        for index in sorted(self._panels):
            render, target, values = self._panels[index]
            tag = f"{self.prefix}panel/{index}"
            rng = state.display_range(tag, values, step=step, higher_is_better=hib, what=what)
            result.images[tag] = draw_panel(
                render,
                target,
                values,
                index=index,
                step=step,
                panel_map=self.panel_map,
                display_range=rng,
                colormap=cmap,
                higher_is_better=hib,
            ).image
            result.display_ranges[tag] = (rng.vmin, rng.vmax)
        if state.strip_steps and state.map_range != "per-map":
            # the first view with a panel, kept across evaluations (and resumes) by the state
            kept = state.strip.get("tag")
            index = next((i for i in sorted(self._panels) if f"{self.prefix}panel/{i}" == kept), min(self._panels))
            values = self._panels[index][2]
            panel_tag = f"{self.prefix}panel/{index}"
            rng = state.display_range(panel_tag, values, step=step, higher_is_better=hib, what=what)
            tiles = state.add_strip_tile(panel_tag, what, step, strip_tile(values, rng, cmap))
            tag = f"{self.prefix}panel_over_time/{index}"
            result.images[tag] = draw_strip(
                tiles, index=index, panel_map=self.panel_map, display_range=rng, colormap=cmap, higher_is_better=hib
            ).image
            result.display_ranges[tag] = (rng.vmin, rng.vmax)

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
