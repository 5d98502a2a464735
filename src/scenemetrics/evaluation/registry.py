"""Metric names ``scenemetrics eval`` understands, and how each one is built and fed.

Every metric is a ``torchmetrics.Metric`` built by a factory from a :class:`MetricConfig`; factories import their
room (and its optional extras) only when called, so naming a metric never imports the others. Built in:

=============  ===========================================================  ===========================  =====
name           metric                                                       inputs                       best
=============  ===========================================================  ===========================  =====
``psnr``       torchmetrics ``PeakSignalNoiseRatio(data_range=1, dim=CHW)``  render, gt                   high
``ssim``       torchmetrics ``StructuralSimilarityIndexMeasure(data_range=1)``  render, gt               high
``lpips``      torchmetrics ``LearnedPerceptualImagePatchSimilarity``       render, gt                   low
``puzzlesim``  ``scenemetrics.PuzzleSim`` (training views as references)    render, train                high
``osim``       ``scenemetrics.OSIM``                                        render, gt                   high
``prism``      ``scenemetrics.PRISMDistance``                               render, gt, cameras.json     low
``prism_mmd``  ``scenemetrics.PRISMMMD`` (anchors from ``anchors=`` file)   render, cameras.json         low
=============  ===========================================================  ===========================  =====

Which ``update`` a metric gets follows the same dispatch as the training callbacks: a metric with
``set_references`` gets the unit's training views once and then ``update(render)``; a ``PRISMMMD`` gets
``update(source, render, pose)``; a ``PRISMDistance`` gets ``update(source, render, target, pose)``; anything else
``update(render, target)``. A registered ``arguments`` function overrides this.

Register more metrics (in a plugin module passed with ``--plugin``, or a ``scenemetrics.evaluation`` entry point)::

    from scenemetrics.evaluation import register_metric
    register_metric("mse", lambda cfg: torchmetrics.MeanSquaredError(), higher_is_better=False)

Example:
    >>> from scenemetrics.evaluation.registry import metric_names
    >>> [n for n in ("psnr", "lpips", "puzzlesim") if n in metric_names()]
    ['psnr', 'lpips', 'puzzlesim']
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "ENTRY_POINT_GROUP",
    "INPUTS",
    "MetricConfig",
    "MetricEntry",
    "ViewItem",
    "default_arguments",
    "get_metric",
    "load_plugins",
    "metric_kind",
    "metric_names",
    "register_metric",
    "resolve_metrics",
    "unregister_metric",
]

INPUTS = ("gt", "train", "cameras")
"""What a metric may need besides the render: paired ground truth, training views, PRISM cameras."""

ENTRY_POINT_GROUP = "scenemetrics.evaluation"
"""Entry-point group scanned for plugins: each entry point is a module or a callable that registers metrics."""

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class MetricConfig:
    """What a metric factory gets.

    Attributes:
        name: the metric's registered name.
        options: the metric's options (``--<name>-<option>`` flags and ``--metric-option name.key=value``).
        device: where the metric will run (the factory may ignore it; the runner moves the metric there).
        random_weights: build deterministic random weights instead of loading pretrained ones (smoke tests; the
            scores are uncalibrated).
        work_dir: a private temporary folder of this process (for random checkpoints and the like).
    """

    name: str
    options: Mapping[str, Any]
    device: Any
    random_weights: bool = False
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))


@dataclass(frozen=True)
class ViewItem:
    """One view as the runner hands it to a metric: images are float ``(1, 3, H, W)`` in [0, 1] on the device.

    Attributes:
        name: view name.
        unit: ``"<method>/<scene>"`` of the unit the view belongs to.
        render: the rendered view.
        target: its ground truth (``None`` when the unit has none).
        source: PRISM's source view (``None`` without ``cameras.json``).
        pose: ``(1, 3)`` relative pose (``None`` without ``cameras.json``), as in :func:`read_cameras`.
    """

    name: str
    unit: str
    render: Any
    target: Any = None
    source: Any = None
    pose: Any = None


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric.

    Attributes:
        name: the name used in ``--metrics``.
        factory: ``factory(config) -> torchmetrics.Metric``.
        inputs: what it needs from a unit besides the renders (subset of :data:`INPUTS`); a unit lacking one is
            skipped for this metric with a warning.
        higher_is_better: for the leaderboard (``None``: take the metric class's ``higher_is_better``).
        description: one line for ``--help`` and the report.
        requires: ``requires(config) -> str | None``: why the metric cannot run with this configuration (missing
            room or extra, missing required option), or ``None``. ``config.device`` is ``None`` at that point.
        arguments: ``arguments(metric, item, options) -> tuple`` of positional ``update`` arguments; ``None``
            follows the dispatch rules (:func:`default_arguments`).
        per_view: also record each view's value (``metric(*args)``, torchmetrics' forward); ``False`` for metrics
            whose single-view value is meaningless (scene-pooled scores, distribution distances).
        fingerprint_options: option keys that change the scores (a rerun recomputes when they change); ``None``
            means all options.
    """

    name: str
    factory: Callable[[MetricConfig], Any]
    inputs: frozenset[str] = frozenset({"gt"})
    higher_is_better: bool | None = None
    description: str = ""
    requires: Callable[[MetricConfig], str | None] | None = None
    arguments: Callable[[Any, ViewItem, Mapping[str, Any]], tuple] | None = None
    per_view: bool = True
    fingerprint_options: tuple[str, ...] | None = None

    def unavailable_reason(self, options: Mapping[str, Any] | None = None, random_weights: bool = False) -> str | None:
        """Why this metric cannot run with these options in this installation, or ``None``."""
        if self.requires is None:
            return None
        return self.requires(MetricConfig(self.name, dict(options or {}), None, random_weights))


_REGISTRY: dict[str, MetricEntry] = {}


def register_metric(
    name: str,
    factory: Callable[[MetricConfig], Any],
    *,
    inputs: Sequence[str] = ("gt",),
    higher_is_better: bool | None = None,
    description: str = "",
    requires: Callable[[MetricConfig], str | None] | None = None,
    arguments: Callable[[Any, ViewItem, Mapping[str, Any]], tuple] | None = None,
    per_view: bool = True,
    fingerprint_options: Sequence[str] | None = None,
    replace: bool = False,
) -> MetricEntry:
    """Add a metric to ``scenemetrics eval`` (see :class:`MetricEntry` for the arguments).

    Registering the same factory again under the same name is a no-op (plugins may be imported twice).

    Raises:
        ValueError: a name that is not lowercase ``[a-z][a-z0-9_]*``, unknown ``inputs``, or a name already taken by
            another factory (pass ``replace=True`` to override).

    Example:
        >>> import torchmetrics
        >>> from scenemetrics.evaluation import register_metric, unregister_metric
        >>> entry = register_metric("mae", lambda cfg: torchmetrics.MeanAbsoluteError(), higher_is_better=False)
        >>> entry.inputs
        frozenset({'gt'})
        >>> unregister_metric("mae")
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"metric `name` must match [a-z][a-z0-9_]* (it names a column and a flag); received {name!r}")
    if not callable(factory):
        raise ValueError(f"`factory` of metric {name!r} must be callable; received {type(factory).__name__}")
    bad = [i for i in inputs if i not in INPUTS]
    if bad or isinstance(inputs, str):
        raise ValueError(f"`inputs` of metric {name!r} must be a subset of {INPUTS}; received {inputs!r}")
    entry = MetricEntry(
        name=name,
        factory=factory,
        inputs=frozenset(inputs),
        higher_is_better=higher_is_better,
        description=description,
        requires=requires,
        arguments=arguments,
        per_view=per_view,
        fingerprint_options=tuple(fingerprint_options) if fingerprint_options is not None else None,
    )
    old = _REGISTRY.get(name)
    if old is not None and not replace:
        if old.factory is factory:
            return old
        raise ValueError(f"metric {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[name] = entry
    return entry


def unregister_metric(name: str) -> None:
    """Remove a registered metric (no error if absent)."""
    _REGISTRY.pop(name, None)


def metric_names() -> list[str]:
    """Names of every registered metric, in registration order."""
    return list(_REGISTRY)


def get_metric(name: str) -> MetricEntry:
    """The entry of a registered metric; ``ValueError`` listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown metric {name!r}; known metrics: {', '.join(_REGISTRY)} (register more with "
            "scenemetrics.evaluation.register_metric in a --plugin module)"
        ) from None


_LOADED_PLUGINS: set[str] = set()


def load_plugins(plugins: Sequence[str] = (), *, entry_points: bool = True) -> None:
    """Import plugin modules that register metrics: module names or ``.py`` file paths, and the entry points.

    Each plugin is imported once per process (DDP ranks import it themselves).

    Raises:
        ImportError: a plugin module cannot be imported. FileNotFoundError: a plugin file does not exist.
    """
    for spec in plugins:
        if spec in _LOADED_PLUGINS:
            continue
        if spec.endswith(".py") or os.sep in spec or "/" in spec:
            path = Path(spec).expanduser().resolve()
            if not path.is_file():
                raise FileNotFoundError(f"--plugin {spec!r}: no such file")
            mod_name = "scenemetrics_eval_plugin_" + re.sub(r"\W", "_", path.stem)
            module_spec = importlib.util.spec_from_file_location(mod_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"--plugin {spec!r}: cannot import this file")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            module_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
        _LOADED_PLUGINS.add(spec)
    if entry_points:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            key = f"entry-point:{ep.name}={ep.value}"
            if key in _LOADED_PLUGINS:
                continue
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type(sys)):
                obj()
            _LOADED_PLUGINS.add(key)


def resolve_metrics(
    names: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    random_weights: bool = False,
) -> tuple[list[MetricEntry], dict[str, str]]:
    """Look up the requested metrics and check that each can run (:attr:`MetricEntry.requires`).

    ``"all"`` expands to every registered metric.

    Returns:
        ``(available entries in the requested order, {name: why unavailable})``.

    Raises:
        ValueError: an unknown name (the message lists the known ones), a repeated name, or no name.
    """
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError("`metrics` is empty; name at least one metric, e.g. psnr,ssim,lpips,puzzlesim")
    expand_all = names == ["all"]
    if expand_all:
        names = metric_names()
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"`metrics` names {', '.join(dupes)} more than once")
    entries, unavailable = [], {}
    for name in names:
        entry = get_metric(name)
        reason = entry.unavailable_reason((options or {}).get(name), random_weights)
        if reason is None:
            entries.append(entry)
        else:
            unavailable[name] = reason
    return entries, unavailable


# ---- dispatch (the same rule as the training callbacks) ---------------------------------------------------------


def metric_kind(metric: Any) -> str:
    """How a metric is fed: ``"references"``, ``"prism_mmd"``, ``"prism_distance"`` or ``"paired"``.

    Decided as in the callbacks: ``set_references`` first, then the class names along the MRO (so the PRISM room
    is never imported just to check a type).
    """
    if callable(getattr(metric, "set_references", None)):
        return "references"
    names = {cls.__name__ for cls in type(metric).__mro__}
    if "PRISMMMD" in names:
        return "prism_mmd"
    if "PRISMDistance" in names:
        return "prism_distance"
    return "paired"


def default_arguments(metric: Any, item: ViewItem, options: Mapping[str, Any]) -> tuple:
    """Positional ``update`` arguments for one view, by :func:`metric_kind`.

    Raises:
        ValueError: a PRISM metric without the view's source/pose, or a paired metric without ground truth.
    """
    kind = metric_kind(metric)
    if kind == "references":
        return (item.render,)
    if kind in ("prism_mmd", "prism_distance"):
        if item.source is None or item.pose is None:
            raise ValueError(f"view {item.name!r} has no source view and pose in cameras.json")
        if kind == "prism_mmd":
            return (item.source, item.render, item.pose)
        if item.target is None:
            raise ValueError(f"view {item.name!r} has no ground truth")
        return (item.source, item.render, item.target, item.pose)
    if item.target is None:
        raise ValueError(f"view {item.name!r} has no ground truth")
    return (item.render, item.target)


# ---- built-in metrics ----------------------------------------------------------------------------------------------

_LPIPS_BACKBONES = MappingProxyType({"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"})
"""torchmetrics LPIPS ``net_type`` -> torchvision architecture (= hub key ``puzzlesim/<arch>``)."""


def _room_requirement(module: str, attr: str, room: str, extras: Sequence[tuple[str, str]] = ()) -> Callable:
    def check(config: MetricConfig) -> str | None:
        try:
            mod = importlib.import_module(module)
            getattr(mod, attr)
        except (ImportError, AttributeError) as err:
            return f"the {room} room is not part of this installation ({module}.{attr}: {err})"
        missing = [pkg for pkg, _ in extras if importlib.util.find_spec(pkg) is None]
        if missing:
            extra = extras[0][1]
            return f'needs {", ".join(missing)}: pip install "scenemetrics[{extra}]"'
        return None

    return check


def _random_torchvision(arch: str, config: MetricConfig) -> str:
    from scenemetrics.puzzlesim import random_checkpoint

    return str(random_checkpoint(arch, config.work_dir / f"{config.name}-{arch}-random.pth"))


def _build_psnr(config: MetricConfig) -> Any:
    from torchmetrics.image import PeakSignalNoiseRatio

    return PeakSignalNoiseRatio(data_range=1.0, dim=(1, 2, 3), reduction="elementwise_mean")


def _build_ssim(config: MetricConfig) -> Any:
    from torchmetrics.image import StructuralSimilarityIndexMeasure

    return StructuralSimilarityIndexMeasure(data_range=1.0)


def lpips_checkpoint(net: str, weights_path: str | os.PathLike | None, work_dir: str | os.PathLike) -> Path:
    """The torchvision checkpoint for LPIPS's backbone, found through :mod:`scenemetrics.hub`, as torchvision loads it.

    torchvision loads the whole classifier strictly, so a checkpoint holding only the ``features`` (``features.*``
    or bare ``<i>.<param>`` keys, as PuzzleSim accepts) is completed with zero classifier tensors (stored as
    broadcast views, a few bytes; LPIPS never uses the classifier) into a file in ``work_dir``.

    Args:
        net: torchmetrics' ``net_type`` (``alex``, ``vgg``, ``squeeze``).
        weights_path: a file or folder (``--lpips-weights``); ``None``: the hub cache, torchvision's cache, then a
            verified download (:func:`scenemetrics.hub.resolve_weights` with key ``puzzlesim/<arch>``).
        work_dir: where a completed checkpoint is written.

    Raises:
        ValueError: unknown ``net``, or a file whose ``features`` keys or shapes do not match torchvision's.
        scenemetrics.hub.WeightsNotFoundError: nothing found (offline or download failed).
    """
    import torch
    import torchvision

    from scenemetrics import hub

    if net not in _LPIPS_BACKBONES:
        raise ValueError(f"lpips `net` must be one of {', '.join(_LPIPS_BACKBONES)}; received {net!r}")
    arch = _LPIPS_BACKBONES[net]
    key = f"puzzlesim/{arch}"
    path = hub.resolve_weights(key, weights_path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as err:
        raise ValueError(f"could not read LPIPS backbone checkpoint {os.fspath(path)!r}: {err}") from err
    with torch.device("meta"):
        reference = getattr(torchvision.models, arch)(weights=None).state_dict()
    if not isinstance(state, Mapping):
        raise ValueError(f"LPIPS backbone checkpoint {os.fspath(path)!r} must hold a state_dict")
    if not any(k.startswith("features.") for k in state):
        state = {f"features.{k}": v for k, v in state.items()}
    want = {k: v for k, v in reference.items() if k.startswith("features.")}
    got = {k: v for k, v in state.items() if k.startswith("features.")}
    bad = sorted(set(want) ^ set(got)) + sorted(k for k in want.keys() & got.keys() if want[k].shape != got[k].shape)
    extra = sorted(k for k in state if not k.startswith(("features.", "classifier.")))
    if bad or extra:
        raise ValueError(
            f"LPIPS backbone checkpoint {os.fspath(path)!r} does not match torchvision {arch}: mismatched keys "
            f"{(bad + extra)[:5]} (expected a torchvision {arch} state_dict, whole or features only)"
        )
    classifier = {k: v for k, v in reference.items() if k.startswith("classifier.")}
    if all(k in state and state[k].shape == v.shape for k, v in classifier.items()):
        return Path(path)
    completed = dict(got)
    completed.update({k: torch.zeros((), dtype=v.dtype).expand(v.shape) for k, v in classifier.items()})
    out = Path(tempfile.mkdtemp(prefix="lpips-", dir=work_dir)) / hub.CHECKPOINTS[key].filename
    torch.save(completed, out)
    return out


def _build_lpips(config: MetricConfig) -> Any:
    import torch.hub
    from torchmetrics.image import LearnedPerceptualImagePatchSimilarity

    from scenemetrics import hub

    net = str(config.options.get("net", "alex"))
    if net not in _LPIPS_BACKBONES:
        raise ValueError(f"lpips `net` must be one of {', '.join(_LPIPS_BACKBONES)}; received {net!r}")
    arch = _LPIPS_BACKBONES[net]
    weights = config.options.get("weights")
    if config.random_weights:
        from scenemetrics.puzzlesim import random_checkpoint

        weights = random_checkpoint(arch, config.work_dir / f"lpips-{arch}-random.pth", include_classifier=False)
    path = lpips_checkpoint(net, weights, config.work_dir)
    # torchmetrics builds the backbone with torchvision's pretrained weights, which torchvision reads from
    # torch.hub.get_dir()/checkpoints/<file> and downloads only when that file is absent. Point the hub at a private
    # folder holding (a link to) the file the scenemetrics hub resolved: torchvision loads exactly it, never
    # downloading. The LPIPS linear layers are bundled with torchmetrics.
    hub_dir = Path(tempfile.mkdtemp(prefix="lpips-hub-", dir=config.work_dir))
    (hub_dir / "checkpoints").mkdir()
    link = hub_dir / "checkpoints" / hub.CHECKPOINTS[f"puzzlesim/{arch}"].filename
    try:
        link.symlink_to(Path(path).resolve())
    except OSError:
        import shutil

        shutil.copyfile(path, link)
    old_dir = torch.hub.get_dir()
    torch.hub.set_dir(str(hub_dir))
    try:
        return LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True)
    finally:
        torch.hub.set_dir(old_dir)


def _build_puzzlesim(config: MetricConfig) -> Any:
    from scenemetrics.puzzlesim import PuzzleSim
    from scenemetrics.puzzlesim.backbone import canonical_backbone

    backbone = canonical_backbone(str(config.options.get("backbone", "squeezenet1_1")))
    weights = _random_torchvision(backbone, config) if config.random_weights else config.options.get("weights")
    kwargs: dict[str, Any] = {}
    for key in ("layers", "layer_weights", "resize", "chunk_size"):
        if config.options.get(key) is not None:
            kwargs[key] = config.options[key]
    return PuzzleSim(backbone=backbone, weights_path=weights, keep_maps=True, **kwargs)


_OSIM_RANDOM_DETECTOR = "yolox_nano"
_OSIM_OPTIONS = (("conf", "conf_threshold"), ("nms", "nms_threshold"), ("layer", "layer"), ("saliency", "saliency"))


def _build_osim(config: MetricConfig) -> Any:
    osim = importlib.import_module("scenemetrics.osim")
    opts = config.options
    detector = str(opts.get("detector") or (_OSIM_RANDOM_DETECTOR if config.random_weights else "yolox_x"))
    weights = opts.get("weights")
    if config.random_weights:
        weights = str(osim.random_checkpoint(detector, config.work_dir / f"osim-{detector}-random.pth"))
    kwargs: dict[str, Any] = {}
    for key, arg in _OSIM_OPTIONS:
        if opts.get(key) is not None:
            kwargs[arg] = opts[key]
    return osim.OSIM(detector=detector, weights_path=weights, **kwargs)


_PRISM_EXTRACTOR_OPTIONS = ("timestep", "noise_seed", "image_size", "revision", "variant")


def _prism_parts(config: MetricConfig) -> tuple[Any, Any]:
    prism = importlib.import_module("scenemetrics.prism")
    model = config.options.get("model")
    kwargs = {k: config.options[k] for k in _PRISM_EXTRACTOR_OPTIONS if config.options.get(k) is not None}
    extractor = prism.Zero123Features.from_pretrained(model, device=config.device, resize=True, **kwargs)
    head_path = config.options.get("head")
    if head_path is None:
        warnings.warn(
            f"{config.name}: no --prism-head given, so PRISM runs in raw mode (normalised Zero123 features): "
            "untrained diffusion-feature scores, not PRISM as published",
            UserWarning,
            stacklevel=2,
        )
        return extractor, None
    return extractor, prism.ProjectionHead.load(head_path)


def _build_prism(config: MetricConfig) -> Any:
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMDistance(extractor, head)


def _build_prism_mmd(config: MetricConfig) -> Any:
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMMMD(extractor, head, anchors=config.options["anchors"])


def _center_square(x: Any) -> Any:
    h, w = x.shape[-2:]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return x[..., top : top + s, left : left + s]


def _prism_arguments(metric: Any, item: ViewItem, options: Mapping[str, Any]) -> tuple:
    args = default_arguments(metric, item, options)
    if options.get("center_crop"):
        args = tuple(_center_square(a) if i < len(args) - 1 else a for i, a in enumerate(args))
    return args


_PRISM_ROOM = _room_requirement(
    "scenemetrics.prism", "PRISMDistance", "PRISM", (("diffusers", "prism"), ("transformers", "prism"))
)


def _prism_requirement(config: MetricConfig) -> str | None:
    reason = _PRISM_ROOM(config)
    if reason is None and config.random_weights and config.options.get("model") is None:
        reason = "PRISM has no random-weight helper; with --random-weights pass a local Zero123 folder (--prism-model)"
    return reason


def _prism_mmd_requirement(config: MetricConfig) -> str | None:
    reason = _prism_requirement(config)
    if reason is None and config.options.get("anchors") is None:
        reason = (
            "needs an anchor file of ground-truth triplet embeddings (--prism-anchors FILE, e.g. from "
            "`scenemetrics prism embed ... --anchors-out FILE`)"
        )
    return reason


_PRISM_FINGERPRINT = ("model", "head", "anchors", "center_crop", *_PRISM_EXTRACTOR_OPTIONS)

register_metric(
    "psnr",
    _build_psnr,
    inputs=("gt",),
    higher_is_better=True,
    description="PSNR (dB) of each render vs its ground truth, averaged over views (torchmetrics, data range 1)",
)
register_metric(
    "ssim",
    _build_ssim,
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM (Gaussian 11x11, sigma 1.5) of each render vs its ground truth, averaged (torchmetrics)",
)
register_metric(
    "lpips",
    _build_lpips,
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS (torchmetrics; backbone weights through the scenemetrics hub), averaged over views",
    fingerprint_options=("net", "weights"),
)
register_metric(
    "puzzlesim",
    _build_puzzlesim,
    inputs=("train",),
    higher_is_better=True,
    description="PuzzleSim mean map value of each render against the scene's training views (no ground truth)",
)
register_metric(
    "osim",
    _build_osim,
    inputs=("gt",),
    higher_is_better=True,
    description="OSIM scene score (objects detected on the ground truth, pooled per class over the scene's views)",
    requires=_room_requirement("scenemetrics.osim", "OSIM", "OSIM"),
    per_view=False,
)
register_metric(
    "prism",
    _build_prism,
    inputs=("gt", "cameras"),
    higher_is_better=False,
    description="PRISM distance D in [0, 1] between (source, pose, render) and (source, pose, ground truth)",
    requires=_prism_requirement,
    arguments=_prism_arguments,
    fingerprint_options=_PRISM_FINGERPRINT,
)
register_metric(
    "prism_mmd",
    _build_prism_mmd,
    inputs=("cameras",),
    higher_is_better=False,
    description="PRISM MMD^2 between the (source, pose, render) embeddings and an anchor set of ground-truth triplets",
    requires=_prism_mmd_requirement,
    arguments=_prism_arguments,
    per_view=False,
    fingerprint_options=_PRISM_FINGERPRINT,
)
