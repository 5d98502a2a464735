"""Evaluating one unit (a method's renders of one scene) on this process, one function per stage.

:func:`evaluate_unit` runs the stages in order:

1. :func:`start_metrics` — skip metrics whose inputs the unit lacks, build (once per process) and reset the others;
2. :func:`load_cameras` — ``cameras.json`` for the metrics that need source views and poses;
3. :func:`give_references` — the unit's training views, once, to metrics fed by references;
4. per view: :func:`load_view` (render, ground truth, mask, source view, pose), then :func:`update_metrics`
   (the ``update``/forward of each metric, its map thumbnail, its worst views so far and object records);
5. :func:`compute_metrics` — each metric's ``compute()`` and states; :func:`draw_panels` — the render | ground
   truth | map panels of the worst views of each full-reference map metric.

The result is a payload (plain data and CPU tensors) that rank 0 commits (:func:`~scenemetrics.evaluation.records.
commit_unit`). A failure of one metric is recorded as its ``error`` cell; the other metrics go on.

When several processes share one unit, each evaluates one contiguous block of its views (``part=(index, count)``:
:func:`view_block`) and returns a *part*: the states instead of the values (:func:`keep_states`), the inputs' facts
raw; :func:`~scenemetrics.evaluation.shards.merge_parts` turns the parts into the unit's payload.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenemetrics.evaluation.layout import Unit, View, read_cameras
from scenemetrics.evaluation.states import cpu_states, scalars
from scenemetrics.registry import MetricAdapter, MetricConfig, ViewItem

if TYPE_CHECKING:
    from scenemetrics.evaluation.config import EvalConfig

__all__ = [
    "Compositing",
    "UnitMetrics",
    "compute_metrics",
    "draw_panels",
    "error_text",
    "evaluate_unit",
    "evaluate_unit_safely",
    "give_references",
    "higher_is_better",
    "input_warnings",
    "keep_states",
    "load_cameras",
    "load_view",
    "start_metrics",
    "update_metrics",
    "view_block",
]


def print_line(msg: str) -> None:
    """One line on stderr that does not break the progress bars."""
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def _not_distributed() -> bool:
    return False


class UnitMetrics:
    """Metric instances of this process, built on first use (a failed build is remembered, not retried)."""

    def __init__(self, config: EvalConfig, device: Any, work_dir: Path, announce: bool = False) -> None:
        self.config = config
        self.device = device
        self.work_dir = work_dir
        self.announce = announce  # say what a (possibly multi-second) first build does
        self._built: dict[str, Any] = {}
        self._configs: dict[str, MetricConfig] = {}
        self._failed: dict[str, BaseException] = {}

    def metric_config(self, adapter: MetricAdapter) -> MetricConfig:
        """The checked configuration ``adapter``'s metric is built and fed with in this process."""
        if adapter.name not in self._configs:
            self._configs[adapter.name] = adapter.configure(
                MetricConfig(
                    name=adapter.name,
                    options=dict(self.config.options.get(adapter.name, {})),
                    device=self.device,
                    random_weights=self.config.random_weights,
                    work_dir=self.work_dir,
                )
            )
        return self._configs[adapter.name]

    def built(self, name: str) -> Any:
        """The metric ``name`` if this process built it, else ``None``."""
        return self._built.get(name)

    def get(self, adapter: MetricAdapter) -> Any:
        """``adapter``'s metric, built on first use (a failed build raises again)."""
        name = adapter.name
        if name in self._failed:
            raise self._failed[name]
        if name not in self._built:
            if self.announce:
                weights = "random weights" if self.config.random_weights else "loading its weights"
                print_line(f"building {name} on {self.device} ({weights}) ...")
            try:
                metric = adapter.build(self.metric_config(adapter))
                from torchmetrics import Metric

                if not isinstance(metric, Metric):
                    raise TypeError(
                        f"the factory of metric {name!r} returned {type(metric).__name__}, not a torchmetrics.Metric"
                    )
                # a unit is scored on one process: its compute() must never sync with the units of other ranks
                metric.sync_on_compute = False
                metric.distributed_available_fn = _not_distributed
                metric.to(self.device)
            except BaseException as err:
                self._failed[name] = err
                raise
            self._built[name] = metric
        return self._built[name]


def _load_mask(path: Path, shape: Any) -> Any:
    """A mask image as ``(1, H, W)`` float in [0, 1] (any mode, 8/16-bit or float, as grey), the size of the render."""
    from scenemetrics.image import read_mask

    mask = read_mask(path)
    if tuple(mask.shape[-2:]) != tuple(shape[-2:]):
        raise ValueError(f"mask {path} is {mask.shape[-1]}x{mask.shape[-2]}; the render is {shape[-1]}x{shape[-2]}")
    return mask


_FLAG_BACKGROUNDS = {"white": (255, 255, 255), "black": (0, 0, 0)}


@dataclass(frozen=True)
class Compositing:
    """How a unit's RGBA images become RGB.

    Attributes:
        color: the background as float32 values in [0, 1] (``None``: the alpha channel is dropped, with a warning).
        round_8bit: round each composite down to 8 bits, as NerfBaselines' ``evaluate`` does before every metric.
        origin: where the colour comes from (``--background``, ``info.json``, ``cfg_args``).
    """

    color: tuple[float, float, float] | None = None
    round_8bit: bool = False
    origin: str = ""

    @classmethod
    def of(cls, unit: Unit, flag: str | None) -> Compositing:
        """``--background`` when given, else the background the unit's pipeline recorded, else none."""
        import numpy as np

        if flag is not None:
            rgb, origin = _FLAG_BACKGROUNDS[flag], f"--background {flag}"
        elif unit.background is not None:
            rgb, origin = unit.background, unit.background_origin
        else:
            return cls()
        # 8-bit colour / 255 in float32, as NerfBaselines converts its uint8 background
        color = tuple(float(np.float32(c) / np.float32(255)) for c in rgb)
        return cls((color[0], color[1], color[2]), unit.round_composites, origin)


def _load_image(path: Path, look: Compositing, notes: list[str]) -> Any:
    """The image as ``(3, H, W)`` float in [0, 1] on the CPU through the one reader
    (:func:`scenemetrics.image.read_image_with_alpha`), composited as ``look`` says."""
    import torch

    from scenemetrics.image import read_image_with_alpha

    image, has_alpha = read_image_with_alpha(path, background=look.color)
    if has_alpha and look.color is None and "alpha" not in notes:
        notes.append("alpha")
    if has_alpha and look.color is not None and look.round_8bit:
        # NerfBaselines' image_to_srgb: float32 composite, truncated to uint8, then / 255 in float32
        image = (image * 255.0).clamp_(0, 255).to(torch.uint8).to(torch.float32) / 255.0
    return image


def _digest(image: Any) -> tuple[tuple[int, ...], str]:
    """Shape and hash of an image's pixels (for finding references identical to a test target)."""
    import hashlib

    data = image.detach().to("cpu").contiguous().numpy().tobytes()
    return tuple(image.shape), hashlib.blake2b(data, digest_size=16).hexdigest()


def _thumbnail(
    render: Any, sim_map: Any, height: int, name: str = "map", view: str = "", higher_is_better: bool | None = True
) -> Any:
    """Render and map side by side at ``height`` px, titled, with a colour bar of the map's real values (the map in
    reversed jet for a similarity, jet for an error: warm is worse either way)."""
    import torch.nn.functional as F

    from scenemetrics import viz

    h, w = render.shape[-2:]
    size = (height, max(1, round(w * height / h)))
    small = F.interpolate(render[None].float().cpu(), size=size, mode="bilinear", antialias=True, align_corners=False)
    small_map = F.interpolate(sim_map[None, None].float().cpu(), size=size, mode="bilinear", align_corners=False)
    full = sim_map.detach().float().cpu()
    return viz.map_picture(
        small_map[0, 0],
        image=small[0].clamp(0, 1),
        show=("image", "map"),
        labels={"image": "render"},
        title=f"{name}: {view} (mean {float(full.mean()):.4f})",
        display_range=viz.robust_range(full),
        colormap=viz.colormap_for("jet_r", higher_is_better),
        meaning="warm = worse" if higher_is_better is not None else None,
        value_label=name,
        min_height=0,
        font_size=10,
    ).image


def _objects(names: Sequence[str] | None, result: Any, view: str) -> list[dict]:
    classes = [int(c) for c in result.classes.tolist()]
    return [
        {
            "view": view,
            "class": c,
            "class_name": names[c] if names is not None and 0 <= c < len(names) else str(c),
            "r": float(r),
            "s": float(s),
        }
        for c, r, s in zip(classes, result.r.tolist(), result.s.tolist(), strict=True)
    ]


def _missing_input(entry: MetricAdapter, unit: Unit) -> tuple[str, str] | None:
    """``("skipped"|"error", why)`` when the unit cannot feed the metric, else ``None``."""
    render_problems = [msg for kind, msg in unit.problems if kind == "renders"]
    if render_problems:
        return "error", "; ".join(render_problems)
    if "gt" in entry.inputs:
        if not unit.has_gt:
            return "skipped", "no ground-truth views (gt/ folder)"
        gt_problems = [msg for kind, msg in unit.problems if kind == "gt"]
        if gt_problems:
            return "error", "; ".join(gt_problems)
    if "train" in entry.inputs:
        train_problems = [msg for kind, msg in unit.problems if kind == "train"]
        if train_problems:
            return "error", "; ".join(train_problems)
        if not unit.train:
            return "skipped", f"no training views to use as references ({unit.train_origin or 'none found'})"
    if "cameras" in entry.inputs and unit.cameras is None:
        return "skipped", f"no cameras.json ({entry.name} needs the source view of each render)"
    return None


class _Capture:
    """Collects the warnings raised while calling a metric, attributed to it."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    @contextlib.contextmanager
    def __call__(self, label: str) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        for w in caught:
            text = f"{label}: {w.message}"
            if text not in self.messages:
                self.messages.append(text)


def error_text(err: BaseException) -> str:
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


@dataclass
class UnitRun:
    """What the stages of one unit's evaluation share and fill in.

    Attributes:
        unit: the unit.
        adapters: metric -> its adapter, for every metric asked for in this unit.
        cells: metric -> result cell (``status`` and values, reason or error).
        active: metric -> instance still running (a failure removes it).
        states, thumbs, objects, per_view: what the payload carries per metric.
        worst: metric -> the views kept for panels so far, ``(value, view, render, ground truth, map)`` on the CPU,
            worst first (full-reference map metrics only).
        panels: metric -> ``(view, picture, value)`` of the kept worst views, drawn by :func:`draw_panels`.
        timings: seconds spent per metric.
        notes: facts about the inputs met while loading (``"alpha"``: an alpha channel was dropped).
        capture: the warnings raised while calling each metric.
        look: how RGBA images are composited.
        references: shape and pixel hash of each training view -> its file (while references are in use).
        leaks: ``(training view, test view)`` pairs whose pixels are identical.
    """

    unit: Unit
    adapters: dict[str, MetricAdapter] = field(default_factory=dict)
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    active: dict[str, Any] = field(default_factory=dict)
    states: dict[str, Any] = field(default_factory=dict)
    thumbs: dict[str, list] = field(default_factory=dict)
    objects: dict[str, list] = field(default_factory=dict)
    per_view: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    worst: dict[str, list[tuple[float, str, Any, Any, Any]]] = field(default_factory=dict)
    panels: dict[str, list[tuple[str, Any, float]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    capture: _Capture = field(default_factory=lambda: _Capture())
    look: Compositing = field(default_factory=Compositing)
    references: dict[tuple[tuple[int, ...], str], Path] = field(default_factory=dict)
    leaks: list[tuple[Path, str]] = field(default_factory=list)

    def fail(self, name: str, err: BaseException | str) -> None:
        """Record ``err`` as the metric's result and stop feeding it."""
        if isinstance(err, BaseException):
            self.cells[name] = {
                "status": "error",
                "error": error_text(err),
                "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__))[-4000:],
            }
        else:
            self.cells[name] = {"status": "error", "error": err}
        self.active.pop(name, None)

    def fail_all(self, err: BaseException) -> None:
        for name in list(self.active):
            self.fail(name, err)

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0


def start_metrics(run: UnitRun, metrics: UnitMetrics) -> None:
    """Skip (or fail) metrics the unit cannot feed; build and reset the others."""
    for name, adapter in run.adapters.items():
        missing = _missing_input(adapter, run.unit)
        if missing is not None:
            status, why = missing
            run.cells[name] = {"status": status, "error" if status == "error" else "reason": why}
            continue
        try:
            with run.capture(name):
                metric = metrics.get(adapter)
                metric.reset()
            run.active[name] = metric
            run.timings[name] = 0.0
        except Exception as err:
            run.fail(name, err)


def load_cameras(run: UnitRun) -> dict[str, Any]:
    """The unit's ``cameras.json`` entries when an active metric needs them (``{}`` otherwise or on failure)."""
    unit = run.unit
    users = [n for n in run.active if "cameras" in run.adapters[n].inputs]
    if not users:
        return {}
    try:
        cameras = read_cameras(unit.cameras)
        missing_views = [v.name for v in unit.views if v.name not in cameras]
        if missing_views:
            raise ValueError(
                f"{unit.cameras} has no entry for {len(missing_views)} render(s): {', '.join(missing_views[:5])}"
            )
        return cameras
    except Exception as err:
        for n in users:
            run.fail(n, err)
        return {}


def give_references(run: UnitRun, config: EvalConfig, device: Any) -> None:
    """Load the unit's training views once and hand them to every metric fed by references."""
    ref_metrics = [n for n in run.active if run.adapters[n].update_kind(run.active[n]) == "references"]
    if not ref_metrics:
        return
    try:
        refs = []
        for p in run.unit.train:
            ref = _load_image(p, run.look, run.notes)
            run.references.setdefault(_digest(ref), p)
            refs.append(ref.to(device))
    except Exception as err:
        for n in ref_metrics:
            run.fail(n, err)
        return
    for n in ref_metrics:
        if n not in run.active:
            continue
        with run.timed(n):
            try:
                with run.capture(n):
                    run.active[n].set_references(refs)
            except Exception as err:
                run.fail(n, err)


def load_view(
    run: UnitRun, view: View, cameras: Mapping[str, Any], sources: dict[Path, Any], config: EvalConfig, device: Any
) -> tuple[ViewItem, ViewItem]:
    """One view's inputs on ``device``: ``(item, masked item)`` (they are the same when the view has no mask).

    ``sources`` caches the loaded source views (many views usually share one). Raises on unreadable inputs.
    """
    import torch

    needs_gt = any("gt" in run.adapters[n].inputs for n in run.active)
    render = _load_image(view.render, run.look, run.notes).to(device)
    target = None
    if (needs_gt or run.references) and view.gt is not None:
        target = _load_image(view.gt, run.look, run.notes)
        if run.references:  # a training view identical to this test target leaks the held-out view
            leak = run.references.get(_digest(target))
            if leak is not None:
                run.leaks.append((leak, view.name))
        target = target.to(device) if needs_gt else None
    source = pose = view_cameras = None
    if view.name in cameras:
        cam = cameras[view.name]
        if cam.source not in sources:
            sources[cam.source] = _load_image(cam.source, run.look, run.notes).to(device)
        source = sources[cam.source][None]
        if cam.pose is not None:
            pose = torch.tensor([cam.pose], dtype=torch.float32).to(device)
        else:  # the adapters of the metrics that take cameras turn them into their pose
            view_cameras = (cam.source_camera, cam.target_camera)
    target_batch = None if target is None else target[None]
    item = ViewItem(view.name, run.unit.key, render[None], target_batch, source, pose, view_cameras)
    if view.mask is None or target is None:
        return item, item
    mask = _load_mask(view.mask, render.shape).to(device)
    return item, dataclasses.replace(item, render=(render * mask)[None], target=(target * mask)[None])


def update_metrics(
    run: UnitRun, index: int, item: ViewItem, masked: ViewItem, metrics: UnitMetrics, config: EvalConfig
) -> None:
    """Feed one view to every active metric; keep its per-view value, map thumbnail and object records."""
    render = item.render[0]
    target = None if item.target is None else item.target[0]
    for name in list(run.active):
        entry = run.adapters[name]
        metric = run.active[name]
        with run.timed(name):
            try:
                if "gt" in entry.inputs and target is not None and target.shape != render.shape:
                    raise ValueError(
                        f"view {item.name!r}: render {tuple(render.shape)} and ground truth {tuple(target.shape)} "
                        "differ in size (nothing is resized)"
                    )
                view_item = masked if "gt" in entry.inputs else item  # masks restrict full-reference scores
                args = entry.update_args(metric, view_item, metrics.metric_config(entry))
                with run.capture(name):
                    if entry.per_view:
                        value = metric(*args)
                        run.per_view.setdefault(name, {})[item.name] = scalars(value, name)
                    else:
                        metric.update(*args)
                _keep_pictures(run, entry, metric, index, item, config)
            except Exception as err:
                run.fail(name, err)


def _keep_pictures(
    run: UnitRun, entry: MetricAdapter, metric: Any, index: int, item: ViewItem, config: EvalConfig
) -> None:
    import torch

    name = entry.name
    maps = getattr(metric, "last_maps", None) if entry.has_picture("map", metric) else None
    hib = higher_is_better(entry, metric)
    if isinstance(maps, torch.Tensor) and maps.ndim == 3 and index < config.max_thumbnails:
        picture = _thumbnail(item.render[0], maps[0].detach(), config.thumbnail_height, name, item.name, hib)
        run.thumbs.setdefault(name, []).append((item.name, picture))
    if isinstance(maps, torch.Tensor) and maps.ndim == 3 and "gt" in entry.inputs and config.max_panels > 0:
        _keep_if_worst(run, name, item, maps[0].detach(), hib, config.max_panels)
    result = getattr(metric, "last_result", None) if entry.has_picture("objects", metric) else None
    if result is not None and hasattr(result, "r") and hasattr(result, "classes"):
        run.objects.setdefault(name, []).extend(_objects(entry.object_class_names(), result, item.name))


def higher_is_better(entry: MetricAdapter, metric: Any) -> bool | None:
    """Whether higher values of ``entry``'s metric are better: the adapter's declaration, else the metric's own class
    constant, else ``None`` (unknown)."""
    if entry.higher_is_better is not None:
        return entry.higher_is_better
    value = getattr(metric, "higher_is_better", None)
    return value if isinstance(value, bool) else None


def _keep_if_worst(run: UnitRun, name: str, item: ViewItem, values: Any, hib: bool | None, keep: int) -> None:
    """Keep this view for a panel if it is among the ``keep`` worst so far (by its per-view value, else the map's
    mean; lowest first for a similarity, highest first otherwise)."""
    value = (run.per_view.get(name, {}).get(item.name) or {}).get(name)
    if value is None:
        value = float(values.float().mean())
    kept = run.worst.setdefault(name, [])
    if item.target is None or (len(kept) >= keep and not _worse(value, kept[-1][0], hib)):
        return
    kept.append((float(value), item.name, item.render[0].cpu(), item.target[0].cpu(), values.float().cpu()))
    kept.sort(key=lambda k: k[0], reverse=hib is not True)
    del kept[keep:]


def _worse(a: float, b: float, hib: bool | None) -> bool:
    return a < b if hib is True else a > b


def draw_panels(run: UnitRun, adapters: Mapping[str, MetricAdapter]) -> None:
    """Render | ground truth | map of each kept worst view (each tile at the view's resolution), for the metrics
    that computed."""
    from scenemetrics import viz

    for name, kept in run.worst.items():
        if run.cells.get(name, {}).get("status") != "ok":
            continue
        metric = run.active.get(name)
        hib = higher_is_better(adapters[name], metric)
        for value, view, render, target, values in kept:
            rng = viz.quality_range(values, hib)
            picture = viz.comparison_panel(
                render,
                target,
                values,
                title=f"{name}: {run.unit.key}, view {view} ({name} {value:.4f})",
                display_range=rng,
                colormap=viz.colormap_for("jet_r", hib),
                value_label=name,
                labels=("render", "ground truth", "map"),
                notes=[
                    f"{'warm = worse; ' if hib is not None else ''}{rng.rule} ({rng.vmin:.4f} to {rng.vmax:.4f}); "
                    "tiles at the view's resolution"
                ],
            )
            run.panels.setdefault(name, []).append((view, picture.image, value))


def keep_states(run: UnitRun) -> None:
    """The CPU states of each metric still active, without ``compute()`` (a part of a unit: the value is computed
    once the parts are combined)."""
    for name in list(run.active):
        try:
            cell: dict[str, Any] = {"status": "ok"}
            if name in run.per_view:
                cell["per_view"] = run.per_view[name]
            run.cells[name] = cell
            run.states[name] = cpu_states(run.active[name])
        except Exception as err:
            run.fail(name, err)


def compute_metrics(run: UnitRun) -> None:
    """``compute()`` each metric still active: its values, per-view values, class scores and CPU states."""
    for name in list(run.active):
        metric = run.active[name]
        with run.timed(name):
            try:
                with run.capture(name):
                    values = scalars(metric.compute(), name)
                    class_scores = getattr(metric, "class_scores", None)
                    extra = dict(class_scores()) if callable(class_scores) else None
                cell: dict[str, Any] = {"status": "ok", "values": values}
                if name in run.per_view:
                    cell["per_view"] = run.per_view[name]
                if extra:
                    cell["class_scores"] = extra
                run.cells[name] = cell
                run.states[name] = cpu_states(metric)
            except Exception as err:
                run.fail(name, err)


def input_warnings(alpha: bool, leaks: Sequence[tuple[str, str]]) -> list[str]:
    """The warnings about a unit's inputs: an alpha channel that was dropped, training views identical to test
    ground truth (``(training view file name, test view)`` pairs)."""
    out = []
    if alpha:
        out.append("images have an alpha channel that was dropped (pass --background white|black to composite them)")
    if leaks:
        pairs = ", ".join(f"{ref} = test view {view}" for ref, view in leaks[:3])
        more = f" and {len(leaks) - 3} more" if len(leaks) > 3 else ""
        out.append(
            f"{len(leaks)} training view(s) are pixel-identical to test ground truth ({pairs}{more}): the "
            "references include held-out test views; pass --train-views with the training images only"
        )
    return out


def _payload(run: UnitRun, seconds: float, part: tuple[int, int] | None = None) -> dict[str, Any]:
    unit = run.unit
    leaks = [(ref.name, view) for ref, view in run.leaks]
    if part is None:
        run.capture.messages.extend(input_warnings("alpha" in run.notes, leaks))
        run.capture.messages.extend(m for m in unit.warnings if m not in run.capture.messages)
    for name, cell in run.cells.items():
        if name in run.timings:
            cell["seconds"] = round(run.timings[name], 4)
    ok = {name for name, cell in run.cells.items() if cell.get("status") == "ok"}
    payload = {
        "method": unit.method,
        "scene": unit.scene,
        "layout": unit.layout,
        "num_views": len(unit.views),
        "metrics": run.cells,
        "states": run.states,
        "thumbs": {k: v for k, v in run.thumbs.items() if k in ok},
        "panels": {k: v for k, v in run.panels.items() if k in ok},
        "objects": {k: v for k, v in run.objects.items() if k in ok},
        "warnings": run.capture.messages,
        "seconds": round(seconds, 4),
        "sources": _sources(unit, run.look),
    }
    if part is not None:  # the inputs' facts raw: merge_parts words them once for the whole unit
        payload["part"] = {"index": part[0], "count": part[1], "alpha": "alpha" in run.notes, "leaks": leaks}
    return payload


def _sources(unit: Unit, look: Compositing) -> dict[str, Any]:
    """Where the unit's inputs came from (stored with its record): the unit's, and the background actually used."""
    out = unit.sources()
    out.pop("background", None)
    if look.color is not None:
        out["background"] = {"rgb": [round(c * 255) for c in look.color], "from": look.origin}
        if look.round_8bit:
            out["background"]["rounded_to_8_bits"] = True
    return out


def view_block(num_views: int, index: int, count: int) -> range:
    """The views of part ``index`` of ``count``: contiguous blocks, in order, whose sizes differ by at most one.

    Example:
        >>> [list(view_block(5, i, 2)) for i in range(2)]
        [[0, 1], [2, 3, 4]]
    """
    return range(index * num_views // count, (index + 1) * num_views // count)


def evaluate_unit(
    unit: Unit,
    adapters: Sequence[MetricAdapter],
    metrics: UnitMetrics,
    config: EvalConfig,
    show_progress: bool,
    part: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Evaluate the ``adapters``' metrics on ``unit`` with this process's ``metrics``; returns the payload to
    commit, or with ``part=(index, count)`` the part of the views :func:`view_block` gives (states, not values)."""
    import torch
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    run = UnitRun(unit, {a.name: a for a in adapters}, look=Compositing.of(unit, config.background))
    block = range(len(unit.views)) if part is None else view_block(len(unit.views), *part)
    start_metrics(run, metrics)
    cameras = load_cameras(run)
    sources: dict[Path, Any] = {}
    with torch.no_grad():
        give_references(run, config, metrics.device)
        views: Sequence[View] = unit.views[block.start : block.stop]
        bar = tqdm(views, desc=unit.key, total=len(views), disable=not show_progress, leave=False, file=sys.stderr)
        for index, view in enumerate(bar, start=block.start):  # the index in the unit: the first views get thumbnails
            if not run.active:
                break
            try:
                item, masked = load_view(run, view, cameras, sources, config, metrics.device)
            except Exception as err:
                run.fail_all(ValueError(f"view {view.name!r}: {error_text(err)}"))
                break
            update_metrics(run, index, item, masked, metrics, config)
        if part is None:
            compute_metrics(run)
        else:
            keep_states(run)
    draw_panels(run, run.adapters)
    return _payload(run, time.perf_counter() - t_start, part)


def evaluate_unit_safely(
    unit: Unit,
    adapters: Sequence[MetricAdapter],
    metrics: UnitMetrics,
    config: EvalConfig,
    show_progress: bool,
    part: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """:func:`evaluate_unit`, turning an unexpected failure into an error for every metric of the unit."""
    try:
        return evaluate_unit(unit, adapters, metrics, config, show_progress, part)
    except Exception as err:
        cell = {"status": "error", "error": error_text(err), "traceback": traceback.format_exc()[-4000:]}
        payload = {
            "method": unit.method,
            "scene": unit.scene,
            "layout": unit.layout,
            "num_views": len(unit.views),
            "metrics": {a.name: dict(cell) for a in adapters},
            "states": {},
            "thumbs": {},
            "panels": {},
            "objects": {},
            "warnings": [],
            "seconds": 0.0,
            "sources": unit.sources(),
        }
        if part is not None:
            payload["part"] = {"index": part[0], "count": part[1], "alpha": False, "leaks": []}
        return payload
