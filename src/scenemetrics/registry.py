"""One metric-adapter registry for every integration: ``scenemetrics eval``, the Lightning and nerfstudio callbacks.

Each entry (a :class:`MetricAdapter`) declares, for one metric:

* how it is **built**: ``factory(config: MetricConfig) -> torchmetrics.Metric`` (``eval`` and the nerfstudio
  callback build metrics by name; the Lightning callback takes instances);
* what **inputs** it needs besides the render: ``gt`` (paired ground truth), ``train`` (training views as
  references), ``cameras`` (a source view and the relative pose, as PRISM uses);
* how it **updates** (``update``): ``"references"`` (``set_references(training views)`` once, then
  ``update(render)``), ``"prism_mmd"`` (``update(source, render, pose)``), ``"prism_distance"``
  (``update(source, render, target, pose)``) or ``"paired"`` (``update(render, target)``);
* what it **reports**: ``compute()`` gives a scalar, a mapping of scalars or a result with ``.score``; per-class
  scores come from ``class_scores()``; ``higher_is_better`` orders the leaderboard;
* its **pictures**: ``"map"`` (``last_maps``, a ``(B, H, W)`` map per update) and/or ``"objects"`` (``last_result``
  with per-object ``classes``, ``r``, ``s``), with an ``overlay`` function drawing the objects below the scene score
  and the ``class_names`` of the object classes;
* which **classes** it adapts, as ``"module:Class"`` strings (or classes): an integration handed a metric instance
  finds its adapter by ``isinstance`` (:func:`adapter_for`), resolving a string only when its module is already
  imported, so looking a metric up never imports a room.

A metric instance no entry claims gets the generic adapter: ``"references"`` when it has ``set_references``, else
``"paired"``; its pictures are whatever it exposes.

Built in (declared below; their factories live in :mod:`scenemetrics.builtin_metrics`, imported when first used):

=============  ===========================================================  ===========================  =====
name           metric                                                       inputs / update              best
=============  ===========================================================  ===========================  =====
``psnr``       torchmetrics ``PeakSignalNoiseRatio(data_range=1, dim=CHW)``  gt / paired                 high
``ssim``       torchmetrics ``StructuralSimilarityIndexMeasure(data_range=1)``  gt / paired              high
``lpips``      torchmetrics ``LearnedPerceptualImagePatchSimilarity``       gt / paired                  low
``puzzlesim``  ``scenemetrics.PuzzleSim`` (training views as references)    train / references, map      high
``osim``       ``scenemetrics.OSIM``                                        gt / paired, objects         high
``prism``      ``scenemetrics.PRISMDistance``                               gt, cameras / prism_distance low
``prism_mmd``  ``scenemetrics.PRISMMMD`` (anchors from ``anchors=`` file)   cameras / prism_mmd          low
=============  ===========================================================  ===========================  =====

A plugin declares its adapter with :func:`register_metric`, in a module passed to ``scenemetrics eval --plugin`` or
named by a ``scenemetrics.evaluation`` entry point (loaded by ``eval`` and the nerfstudio callback); the Lightning
callback finds it as soon as the module is imported::

    from scenemetrics.registry import register_metric
    register_metric("mse", lambda cfg: torchmetrics.MeanSquaredError(), higher_is_better=False,
                    metric_class="torchmetrics.regression:MeanSquaredError", update="paired")

Example:
    >>> from scenemetrics.registry import metric_names
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "ENTRY_POINT_GROUP",
    "GENERIC",
    "INPUTS",
    "PICTURES",
    "UPDATES",
    "UPDATE_SIGNATURES",
    "MetricAdapter",
    "MetricConfig",
    "MetricEntry",
    "ViewItem",
    "adapter_for",
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
"""What a metric may need besides the render: paired ground truth, training views, a source view and pose."""

UPDATE_SIGNATURES = MappingProxyType(
    {
        "references": ("render",),
        "prism_mmd": ("source", "render", "pose"),
        "prism_distance": ("source", "render", "target", "pose"),
        "paired": ("render", "target"),
    }
)
"""Update kind -> the positional ``update`` arguments (``references`` metrics get ``set_references`` first)."""

UPDATES = tuple(UPDATE_SIGNATURES)
"""The update kinds an adapter may declare."""

PICTURES = ("map", "objects")
"""The pictures an adapter may declare: a metric map (``last_maps``) and scored objects (``last_result``)."""

ENTRY_POINT_GROUP = "scenemetrics.evaluation"
"""Entry-point group scanned for plugins: each entry point is a module or a callable that registers metrics."""

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class MetricConfig:
    """What a metric factory gets.

    Attributes:
        name: the metric's registered name.
        options: the metric's options (``eval``: ``--<name>-<option>`` flags and ``--metric-option name.key=value``).
        device: where the metric will run (the factory may ignore it; the caller moves the metric there).
        random_weights: build deterministic random weights instead of loading pretrained ones (smoke tests; the
            scores are uncalibrated).
        work_dir: a private temporary folder of this process (for random checkpoints and the like).
        flags: option key -> how the user sets it in this integration (for messages); absent keys are named
            ``--<name>-<key>``.
    """

    name: str
    options: Mapping[str, Any]
    device: Any
    random_weights: bool = False
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    flags: Mapping[str, str] = field(default_factory=dict)

    def flag(self, key: str, default: str | None = None) -> str:
        """How the user sets option ``key`` here (``default``, else ``--<name>-<key>``, when not given)."""
        return self.flags.get(key) or default or f"--{self.name.replace('_', '-')}-{key.replace('_', '-')}"


@dataclass(frozen=True)
class ViewItem:
    """One view as an integration hands it to a metric: images are float ``(1, 3, H, W)`` in [0, 1] on the device.

    Attributes:
        name: view name.
        unit: ``"<method>/<scene>"`` of the unit the view belongs to (``""`` outside ``eval``).
        render: the rendered view.
        target: its ground truth (``None`` when there is none).
        source: the source view (``None`` without cameras).
        pose: ``(1, 3)`` relative pose (``None`` without cameras).
    """

    name: str
    unit: str
    render: Any
    target: Any = None
    source: Any = None
    pose: Any = None


Factory = Callable[[MetricConfig], Any] | str
"""``factory(config) -> torchmetrics.Metric``, or ``"module:function"`` naming one (imported when first called)."""
Requirement = Callable[[MetricConfig], "str | None"] | str
Arguments = Callable[[Any, ViewItem, Mapping[str, Any]], tuple] | str


def _resolve(ref: Any) -> Any:
    """A ``"module:attr"`` string as the object (importing the module), anything else as is."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def _loaded_class(ref: str | type) -> type | None:
    """The class ``ref`` names if its module is already imported (never imports anything), else ``None``."""
    if isinstance(ref, type):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = sys.modules.get(module)
    for part in attr.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


@dataclass(frozen=True)
class MetricAdapter:
    """A registered metric: how it is built, fed, reported and pictured (see the module).

    Attributes:
        name: the name used in ``--metrics`` and in the callbacks' configs.
        factory: ``factory(config) -> torchmetrics.Metric``; ``None`` for an adapter that only describes instances
            of ``classes`` (it cannot be built by name).
        inputs: what it needs besides the renders (subset of :data:`INPUTS`); ``eval`` skips a unit lacking one.
        higher_is_better: for the leaderboard (``None``: take the metric class's ``higher_is_better``).
        description: one line for ``--help`` and the report.
        requires: ``requires(config) -> str | None``: why the metric cannot run with this configuration (missing
            room or extra, missing required option), or ``None``. ``config.device`` is ``None`` at that point.
        arguments: ``arguments(metric, item, options) -> tuple`` of positional ``update`` arguments; ``None``
            follows ``update`` (:func:`default_arguments`).
        per_view: ``eval`` also records each view's value (``metric(*args)``, torchmetrics' forward); ``False`` for
            metrics whose single-view value is meaningless (scene-pooled scores, distribution distances).
        fingerprint_options: option keys that change the scores (a rerun recomputes when they change); ``None``
            means all options.
        update: one of :data:`UPDATES`; ``None``: decided from the instance (``set_references`` -> ``references``,
            else ``paired``).
        classes: the metric classes this adapter describes, as ``"module:Class"`` strings or classes.
        pictures: subset of :data:`PICTURES`; ``None``: whatever the metric exposes (``last_maps``, ``last_result``).
        overlay: ``"module:function"`` (or a callable) ``draw(image, result, *, image_index, threshold, title)``
            returning a picture with ``.image``, for ``objects`` pictures in the callbacks.
        class_names: ``"module:ATTR"`` (or a sequence) naming the object classes of ``objects`` pictures.
        square: the metric needs square images; with the ``center_crop`` option integrations crop them.
    """

    name: str
    factory: Factory | None
    inputs: frozenset[str] = frozenset({"gt"})
    higher_is_better: bool | None = None
    description: str = ""
    requires: Requirement | None = None
    arguments: Arguments | None = None
    per_view: bool = True
    fingerprint_options: tuple[str, ...] | None = None
    update: str | None = None
    classes: tuple[str | type, ...] = ()
    pictures: frozenset[str] | None = None
    overlay: str | Callable[..., Any] | None = None
    class_names: str | Sequence[str] | None = None
    square: bool = False

    def unavailable_reason(self, options: Mapping[str, Any] | None = None, random_weights: bool = False) -> str | None:
        """Why this metric cannot run with these options in this installation, or ``None``."""
        if self.factory is None:
            return f"metric {self.name!r} describes metric instances only and cannot be built by name"
        if self.requires is None:
            return None
        return _resolve(self.requires)(MetricConfig(self.name, dict(options or {}), None, random_weights))

    def build(self, config: MetricConfig) -> Any:
        """``factory(config)``: the metric (``ValueError`` for an adapter without a factory)."""
        if self.factory is None:
            raise ValueError(f"metric {self.name!r} describes metric instances only and cannot be built by name")
        return _resolve(self.factory)(config)

    def update_args(self, metric: Any, item: ViewItem, options: Mapping[str, Any]) -> tuple:
        """The positional ``update`` arguments for one view: ``arguments`` when given, else by :meth:`update_kind`."""
        if self.arguments is not None:
            return _resolve(self.arguments)(metric, item, options)
        return update_arguments(self.update_kind(metric), item)

    def update_kind(self, metric: Any) -> str:
        """How ``metric`` is fed: the declared ``update``; undeclared, that of the adapter of ``metric``'s class (a
        plugin wrapping a built-in metric class is fed like it), else the generic rule."""
        if self.update is not None:
            return self.update
        by_class = adapter_for(metric)
        if by_class.update is not None:
            return by_class.update
        return "references" if callable(getattr(metric, "set_references", None)) else "paired"

    def has_picture(self, kind: str, metric: Any) -> bool:
        """Whether ``metric`` gives the ``kind`` picture (``"map"`` or ``"objects"``)."""
        if self.pictures is not None:
            return kind in self.pictures
        return hasattr(metric, "last_maps" if kind == "map" else "last_result")

    def overlay_function(self) -> Callable[..., Any] | None:
        """The ``overlay`` drawing function (resolved now), or ``None``."""
        return None if self.overlay is None else _resolve(self.overlay)

    def object_class_names(self) -> Sequence[str] | None:
        """The names of the object classes (resolved now), or ``None`` when unknown or not importable."""
        try:
            return None if self.class_names is None else _resolve(self.class_names)
        except (ImportError, AttributeError):
            return None

    def _rank(self, metric: Any) -> int | None:
        """Position in ``metric``'s MRO of the most specific class this adapter describes (``None``: none)."""
        mro = type(metric).__mro__
        found = [mro.index(c) for c in map(_loaded_class, self.classes) if c is not None and c in mro]
        return min(found) if found else None


MetricEntry = MetricAdapter
"""The former name of :class:`MetricAdapter` (kept for plugins written against it)."""

GENERIC = MetricAdapter(name="", factory=None, inputs=frozenset(), description="any torchmetrics.Metric")
"""The adapter of a metric instance no entry describes: duck-typed update, pictures from its attributes."""

_REGISTRY: dict[str, MetricAdapter] = {}


def register_metric(
    name: str,
    factory: Factory | None,
    *,
    inputs: Sequence[str] = ("gt",),
    higher_is_better: bool | None = None,
    description: str = "",
    requires: Requirement | None = None,
    arguments: Arguments | None = None,
    per_view: bool = True,
    fingerprint_options: Sequence[str] | None = None,
    update: str | None = None,
    metric_class: str | type | Sequence[str | type] = (),
    pictures: Sequence[str] | None = None,
    overlay: str | Callable[..., Any] | None = None,
    class_names: str | Sequence[str] | None = None,
    square: bool = False,
    replace: bool = False,
) -> MetricAdapter:
    """Add a metric adapter to the registry (see :class:`MetricAdapter` for the arguments).

    ``metric_class`` names the class(es) the adapter describes (``"module:Class"`` strings are resolved lazily).
    Registering the same factory again under the same name is a no-op (plugins may be imported twice).

    Raises:
        ValueError: a name that is not lowercase ``[a-z][a-z0-9_]*``, a factory that is not callable, unknown
            ``inputs``, ``update`` or ``pictures``, a ``metric_class`` string not of the form ``module:Class``, or a
            name already taken by another factory (pass ``replace=True`` to override).

    Example:
        >>> import torchmetrics
        >>> from scenemetrics.registry import register_metric, unregister_metric
        >>> entry = register_metric("mae", lambda cfg: torchmetrics.MeanAbsoluteError(), higher_is_better=False)
        >>> entry.inputs, entry.update_kind(torchmetrics.MeanAbsoluteError())
        (frozenset({'gt'}), 'paired')
        >>> unregister_metric("mae")
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"metric `name` must match [a-z][a-z0-9_]* (it names a column and a flag); received {name!r}")
    for what, fn in (("factory", factory), ("requires", requires), ("arguments", arguments)):
        if fn is not None and not (callable(fn) or (isinstance(fn, str) and _REF_RE.match(fn))):
            raise ValueError(f"`{what}` of metric {name!r} must be callable or 'module:function'; received {fn!r}")
    bad = [i for i in inputs if i not in INPUTS]
    if bad or isinstance(inputs, str):
        raise ValueError(f"`inputs` of metric {name!r} must be a subset of {INPUTS}; received {inputs!r}")
    if update is not None and update not in UPDATES:
        raise ValueError(f"`update` of metric {name!r} must be one of {UPDATES} or None; received {update!r}")
    if pictures is not None and (isinstance(pictures, str) or any(p not in PICTURES for p in pictures)):
        raise ValueError(f"`pictures` of metric {name!r} must be a subset of {PICTURES} or None; received {pictures!r}")
    classes = (metric_class,) if isinstance(metric_class, (str, type)) else tuple(metric_class)
    for ref in classes:
        if not isinstance(ref, type) and not (isinstance(ref, str) and _REF_RE.match(ref)):
            raise ValueError(f"`metric_class` of metric {name!r} must be classes or 'module:Class'; received {ref!r}")
    entry = MetricAdapter(
        name=name,
        factory=factory,
        inputs=frozenset(inputs),
        higher_is_better=higher_is_better,
        description=description,
        requires=requires,
        arguments=arguments,
        per_view=per_view,
        fingerprint_options=tuple(fingerprint_options) if fingerprint_options is not None else None,
        update=update,
        classes=classes,
        pictures=None if pictures is None else frozenset(pictures),
        overlay=overlay,
        class_names=class_names,
        square=bool(square),
    )
    old = _REGISTRY.get(name)
    if old is not None and not replace:
        if factory is not None and (old.factory is factory or (isinstance(factory, str) and old.factory == factory)):
            return old
        raise ValueError(f"metric {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[name] = entry
    return entry


def unregister_metric(name: str) -> None:
    """Remove a registered metric (no error if absent)."""
    _REGISTRY.pop(name, None)


def metric_names() -> list[str]:
    """Names of every metric that can be built by name, in registration order."""
    return [name for name, entry in _REGISTRY.items() if entry.factory is not None]


def get_metric(name: str) -> MetricAdapter:
    """The adapter of a registered metric; ``ValueError`` listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown metric {name!r}; known metrics: {', '.join(metric_names())} (register more with "
            "scenemetrics.registry.register_metric in a plugin module)"
        ) from None


def adapter_for(metric: Any, name: str | None = None) -> MetricAdapter:
    """The adapter describing a metric instance.

    The entry registered under ``name`` when it describes ``metric``'s class (or declares no class); otherwise the
    entry whose class is the most specific along ``metric``'s MRO; otherwise :data:`GENERIC`. Class strings are
    resolved only when their module is already imported (an instance of a class implies its module is).

    Example:
        >>> import torchmetrics
        >>> adapter_for(torchmetrics.MeanSquaredError()).update_kind(torchmetrics.MeanSquaredError())
        'paired'
    """
    named = _REGISTRY.get(name) if name is not None else None
    if named is not None and (not named.classes or named._rank(metric) is not None):
        return named
    best, best_rank = GENERIC, None
    for entry in _REGISTRY.values():
        rank = entry._rank(metric)
        if rank is not None and (best_rank is None or rank < best_rank):
            best, best_rank = entry, rank
    return best


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
) -> tuple[list[MetricAdapter], dict[str, str]]:
    """Look up the requested metrics and check that each can run (:attr:`MetricAdapter.requires`).

    ``"all"`` expands to every metric that can be built by name.

    Returns:
        ``(available entries in the requested order, {name: why unavailable})``.

    Raises:
        ValueError: an unknown name (the message lists the known ones), a repeated name, or no name.
    """
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError("`metrics` is empty; name at least one metric, e.g. psnr,ssim,lpips,puzzlesim")
    if names == ["all"]:
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


# ---- dispatch -------------------------------------------------------------------------------------------------------


def metric_kind(metric: Any, name: str | None = None) -> str:
    """How a metric instance is fed (one of :data:`UPDATES`), from its adapter (:func:`adapter_for`)."""
    return adapter_for(metric, name).update_kind(metric)


def update_arguments(kind: str, item: ViewItem) -> tuple:
    """The positional ``update`` arguments of update kind ``kind`` for one view (:data:`UPDATE_SIGNATURES`).

    Raises:
        ValueError: the view lacks the source/pose (``prism_*`` kinds) or the ground truth the kind needs.
    """
    wanted = UPDATE_SIGNATURES[kind]
    if "source" in wanted and (item.source is None or item.pose is None):
        raise ValueError(f"view {item.name!r} has no source view and pose in cameras.json")
    if "target" in wanted and item.target is None:
        raise ValueError(f"view {item.name!r} has no ground truth")
    return tuple(getattr(item, key) for key in wanted)


def default_arguments(metric: Any, item: ViewItem, options: Mapping[str, Any], name: str | None = None) -> tuple:
    """Positional ``update`` arguments for one view, by the metric's update kind (:func:`metric_kind`).

    Raises:
        ValueError: a ``prism_*`` metric without the view's source/pose, or a metric without the ground truth it needs.
    """
    return update_arguments(metric_kind(metric, name), item)


# ---- built-in metrics (their functions live in scenemetrics.builtin_metrics, imported when first used) -------------

_PRISM_FINGERPRINT = (
    "model", "head", "anchors", "center_crop", "timestep", "noise_seed", "image_size", "revision", "variant"
)  # fmt: skip

register_metric(
    "psnr",
    "scenemetrics.builtin_metrics:build_psnr",
    inputs=("gt",),
    higher_is_better=True,
    description="PSNR (dB) of each render vs its ground truth, averaged over views (torchmetrics, data range 1)",
    update="paired",
    metric_class="torchmetrics.image.psnr:PeakSignalNoiseRatio",
)
register_metric(
    "ssim",
    "scenemetrics.builtin_metrics:build_ssim",
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM (Gaussian 11x11, sigma 1.5) of each render vs its ground truth, averaged (torchmetrics)",
    update="paired",
    metric_class="torchmetrics.image.ssim:StructuralSimilarityIndexMeasure",
)
register_metric(
    "lpips",
    "scenemetrics.builtin_metrics:build_lpips",
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS (torchmetrics; backbone weights through the scenemetrics hub), averaged over views",
    fingerprint_options=("net", "weights"),
    update="paired",
    metric_class="torchmetrics.image.lpip:LearnedPerceptualImagePatchSimilarity",
)
register_metric(
    "puzzlesim",
    "scenemetrics.builtin_metrics:build_puzzlesim",
    inputs=("train",),
    higher_is_better=True,
    description="PuzzleSim mean map value of each render against the scene's training views (no ground truth)",
    update="references",
    metric_class="scenemetrics.puzzlesim.metric:PuzzleSim",
    pictures=("map",),
)
register_metric(
    "osim",
    "scenemetrics.builtin_metrics:build_osim",
    inputs=("gt",),
    higher_is_better=True,
    description="OSIM scene score (objects detected on the ground truth, pooled per class over the scene's views)",
    requires="scenemetrics.builtin_metrics:osim_requirement",
    per_view=False,
    update="paired",
    metric_class="scenemetrics.osim.metric:OSIM",
    pictures=("objects",),
    overlay="scenemetrics.osim:low_objects_picture",
    class_names="scenemetrics.osim:COCO_CLASSES",
)
register_metric(
    "prism",
    "scenemetrics.builtin_metrics:build_prism",
    inputs=("gt", "cameras"),
    higher_is_better=False,
    description="PRISM distance D in [0, 1] between (source, pose, render) and (source, pose, ground truth)",
    requires="scenemetrics.builtin_metrics:prism_requirement",
    arguments="scenemetrics.builtin_metrics:prism_arguments",
    fingerprint_options=_PRISM_FINGERPRINT,
    update="prism_distance",
    metric_class="scenemetrics.prism.metric:PRISMDistance",
    square=True,
)
register_metric(
    "prism_mmd",
    "scenemetrics.builtin_metrics:build_prism_mmd",
    inputs=("cameras",),
    higher_is_better=False,
    description="PRISM MMD^2 between the (source, pose, render) embeddings and an anchor set of ground-truth triplets",
    requires="scenemetrics.builtin_metrics:prism_mmd_requirement",
    arguments="scenemetrics.builtin_metrics:prism_arguments",
    per_view=False,
    fingerprint_options=_PRISM_FINGERPRINT,
    update="prism_mmd",
    metric_class="scenemetrics.prism.metric:PRISMMMD",
    square=True,
)
