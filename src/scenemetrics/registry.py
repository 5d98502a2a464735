"""One metric-adapter registry for every integration: ``scenemetrics eval``, the Lightning and nerfstudio callbacks.

Each entry (a :class:`MetricAdapter`) declares, for one metric:

* how it is **built**: ``factory(config: MetricConfig) -> torchmetrics.Metric``, or a metric class called with the
  options' constructor arguments (``eval`` and the nerfstudio callback build metrics by name; the Lightning callback
  takes instances);
* its **options** (:class:`Option`, the schema): key, constructor argument, type and allowed values, default,
  whether it changes the scores, help. Everything else is derived from them: the factory's keyword arguments
  (:attr:`MetricConfig.kwargs`), the result fingerprint (:meth:`MetricAdapter.fingerprint`), the
  ``scenemetrics eval`` flags and ``--metric-option`` parsing, the nerfstudio config fields and the documented
  table of options. An unknown key, a wrong type or a value out of range is a ``ValueError`` naming the metric, the
  key and the valid keys;
* what **inputs** it needs besides the render: ``gt`` (paired ground truth), ``train`` (training views as
  references), ``cameras`` (a source view and the relative pose, as PRISM uses);
* how it **updates** (``update``): ``"references"`` (``set_references(training views)`` once, then
  ``update(render)``; a boolean ``has_references`` attribute, where the metric has one, says whether it has them),
  ``"prism_mmd"`` (``update(source, render, pose)``), ``"prism_distance"`` (``update(source, render, target, pose)``),
  ``"joint"`` (``update(source, render, target)``: the joint distribution baselines), ``"vs_source"``
  (``update(render, source)``: a render compared with its source view) or ``"paired"`` (``update(render, target)``).
  The one per-view
  dispatch is :meth:`MetricAdapter.update_args`: it also turns a view's two cameras into the relative pose (the
  adapter's ``pose`` function) and crops views to a centred square for metrics declared ``square`` (with their
  ``center_crop`` option);
* what it **reports**: ``compute()`` gives a scalar, a mapping of scalars or a result with ``.score``; per-class
  scores come from ``class_scores()``; ``higher_is_better`` orders the leaderboard;
* its **pictures**: ``"map"`` (``last_maps``, a ``(B, H, W)`` map per update) and/or ``"objects"`` (``last_result``
  with per-object ``classes``, ``r``, ``s``), with an ``overlay`` function drawing the objects below the scene score
  and the ``class_names`` of the object classes;
* which **classes** it adapts, as ``"module:Class"`` strings (or classes): an integration handed a metric instance
  finds its adapter by ``isinstance`` (:func:`adapter_for`), resolving a string only when its module is already
  imported, so looking a metric up never imports a metric family's package.

Published evaluation protocols (:class:`Protocol`, :func:`register_protocol`) say which registered metric stands for
a generic one in whose tables (``3dgs``: ``ssim`` -> ``ssim_3dgs``, ``lpips`` -> ``lpips_3dgs``);
:func:`apply_protocol` rewrites a list of metric names (``scenemetrics eval --protocol``).

A metric instance no entry claims gets the generic adapter: ``"references"`` when it has ``set_references``, else
``"paired"``; its pictures are whatever it exposes.

The built-in metrics (``psnr``, ``ssim``, ``lpips``, ``puzzlesim``, ``osim``, ``prism``, ``prism_mmd``, and the maps
``ssim_map``, ``lpips_map``, ``abs_error``) are declared in :mod:`scenemetrics.builtin_metrics`, which the lookups
below import on first use. A plugin declares its adapter
with :func:`register_metric`, in a module passed to ``scenemetrics eval --plugin`` or named by a
``scenemetrics.evaluation`` entry point (loaded by ``eval`` and the nerfstudio callback); the Lightning callback
finds it as soon as the module is imported::

    from scenemetrics.registry import Option, register_metric
    register_metric("mse", torchmetrics.MeanSquaredError, higher_is_better=False, update="paired",
                    metric_class="torchmetrics.regression:MeanSquaredError",
                    options=[Option("squared", bool, True, "MSE (true) or RMSE (false)")])

Example:
    >>> from scenemetrics.registry import get_metric, metric_names
    >>> [n for n in ("psnr", "lpips", "puzzlesim") if n in metric_names()]
    ['psnr', 'lpips', 'puzzlesim']
    >>> get_metric("lpips").check_options({"net": "squeeze"})
    {'net': 'squeeze'}
    >>> get_metric("puzzlesim").check_options({"screening": "on"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: metric 'puzzlesim' has no option 'screening'; its options: backbone, weights, layers, ...
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from scenemetrics.checks import check_choice, check_int, check_number

__all__ = [
    "ENTRY_POINT_GROUP",
    "GENERIC",
    "INPUTS",
    "PICTURES",
    "UPDATES",
    "UPDATE_SIGNATURES",
    "MetricAdapter",
    "MetricConfig",
    "Option",
    "OptionFlag",
    "Protocol",
    "UnusableViewError",
    "ViewItem",
    "adapter_for",
    "apply_protocol",
    "check_metric_options",
    "get_metric",
    "get_protocol",
    "load_plugins",
    "metric_kind",
    "metric_names",
    "option_flags",
    "parse_metric_option",
    "protocol_names",
    "register_metric",
    "register_protocol",
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
        "joint": ("source", "render", "target"),
        "vs_source": ("render", "source"),
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

_BUILTINS = "scenemetrics.builtin_metrics"
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


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


# ---- the option schema ----------------------------------------------------------------------------------------------

_LEAVES = {str: "a string", Path: "a path", int: "an int", float: "a number", bool: "true or false"}


def _members(tp: Any) -> tuple[Any, ...]:
    """The alternatives of a type (``int | list[int]`` -> ``(int, list[int])``)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _element(tp: Any) -> Any | None:
    """``T`` of ``list[T]``, else ``None``."""
    return typing.get_args(tp)[0] if typing.get_origin(tp) in (list, tuple, Sequence) else None


def _type_text(tp: Any) -> str:
    parts = []
    for member in _members(tp):
        element = _element(member)
        parts.append(_LEAVES[member] if element is None else f"a list of {_LEAVES[element].split(' ', 1)[1]}s")
    return " or ".join(parts)


class _MismatchError(Exception):
    """A value that is not of one alternative of an option's type."""


def _coerce_leaf(tp: Any, value: Any) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is Path:
        if isinstance(value, (str, os.PathLike)):
            return os.fspath(value)
    elif isinstance(value, str):
        return value
    raise _MismatchError


def _coerce(tp: Any, value: Any) -> Any:
    element = _element(tp)
    if element is None:
        return _coerce_leaf(tp, value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _MismatchError
    return [_coerce_leaf(element, v) for v in value]


@dataclass(frozen=True)
class Option:
    """One option a metric accepts: one row of its adapter's schema.

    Attributes:
        key: the option's name (``--metric-option <metric>.<key>=VALUE``; the ``scenemetrics eval`` flag
            ``--<family>-<key>`` and the nerfstudio field ``<family>_<key>``).
        type: ``str``, ``int``, ``float``, ``bool``, ``pathlib.Path`` (a file, folder or hub id, kept as a string),
            ``list[T]`` of one of those, or alternatives (``int | list[int]``).
        default: what the metric uses when the option is not given (shown in the help and the docs; the factory
            receives only the options given).
        help: one line for ``--help`` and the docs.
        argument: the constructor keyword argument it sets (default: ``key``); see :attr:`MetricConfig.kwargs`.
        choices: the allowed values, or ``"module:ATTR"`` naming them (imported when a value is checked).
        low, high: inclusive bounds of a number (of every element of a list).
        scores: whether the value changes the scores (it is part of the result fingerprint: a rerun recomputes the
            results made with another value). ``False`` for speed and memory knobs.
        required: the metric cannot run without it (:meth:`MetricAdapter.unavailable_reason` says so).

    Example:
        >>> Option("conf", float, 0.35, "detection threshold", argument="conf_threshold", low=0, high=1).check(2)
        Traceback (most recent call last):
        ...
        ValueError: `conf` must be a finite number in [0, 1]; received 2.0
    """

    key: str
    type: Any = str
    default: Any = None
    help: str = ""
    argument: str | None = None
    choices: Sequence[Any] | str | None = None
    low: float | None = None
    high: float | None = None
    scores: bool = True
    required: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _NAME_RE.match(self.key):
            raise ValueError(f"option `key` must match [a-z][a-z0-9_]*; received {self.key!r}")
        for member in _members(self.type):
            leaf = _element(member) or member
            if leaf not in _LEAVES or _element(leaf) is not None:
                raise ValueError(
                    f"option {self.key!r}: `type` must be str, int, float, bool, pathlib.Path, list[...] of one of "
                    f"them, or alternatives of those; received {self.type!r}"
                )
        if isinstance(self.choices, str) and not _REF_RE.match(self.choices):
            raise ValueError(
                f"option {self.key!r}: `choices` must be values or 'module:ATTR'; received {self.choices!r}"
            )
        if self.default is not None and not isinstance(self.choices, str):
            self.check(self.default)

    @property
    def keyword(self) -> str:
        """The constructor keyword argument this option sets."""
        return self.argument or self.key

    @property
    def alternatives(self) -> tuple[Any, ...]:
        """The alternatives of :attr:`type` (``int | list[int]`` -> ``(int, list[int])``)."""
        return _members(self.type)

    @property
    def type_text(self) -> str:
        """The type in words (``"an int or a list of ints"``)."""
        return _type_text(self.type)

    @property
    def is_flag(self) -> bool:
        """Whether the option is a plain ``bool`` (a switch on the command line)."""
        return self.type is bool

    def allowed(self) -> tuple[Any, ...] | None:
        """The allowed values (resolving a ``"module:ATTR"`` reference), or ``None`` when any value of the type is."""
        if self.choices is None:
            return None
        return tuple(_resolve(self.choices))

    def check(self, value: Any, label: str | None = None) -> Any:
        """``value`` checked and normalised (an int given for a float becomes a float, a path a string).

        Raises:
            ValueError: a value of another type, not among the choices or out of bounds; the message names
                ``label`` (default: the key).
        """
        label = label or self.key
        for member in _members(self.type):
            try:
                checked = _coerce(member, value)
            except _MismatchError:
                continue
            for v in checked if isinstance(checked, list) else (checked,):
                self._check_value(v, label)
            return checked
        raise ValueError(f"`{label}` must be {self.type_text}; received {value!r}")

    def _check_value(self, value: Any, label: str) -> None:
        allowed = self.allowed()
        if allowed is not None:
            check_choice(value, label, allowed)
        if self.low is None and self.high is None:
            return
        if isinstance(value, float):
            check_number(value, label, low=self.low, high=self.high)
        elif isinstance(value, int):
            low = None if self.low is None else int(self.low)
            check_int(value, label, low=low, high=None if self.high is None else int(self.high))

    def parse(self, text: str, label: str | None = None) -> Any:
        """A command-line value: the text itself for string and path options, else JSON (``[2,3]``, ``0.5``,
        ``true``) or comma-separated values (``2,3``) for lists; then :meth:`check`.

        Example:
            >>> Option("layers", list[int]).parse("[2,3]"), Option("layers", list[int]).parse("2,3")
            ([2, 3], [2, 3])
        """
        if all(m in (str, Path) for m in _members(self.type)):
            return self.check(text, label)
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
            if "," in text and any(_element(m) is not None for m in _members(self.type)):
                parts = [p.strip() for p in text.strip("[]()").split(",") if p.strip()]
                value = []
                for p in parts:
                    try:
                        value.append(json.loads(p))
                    except json.JSONDecodeError:
                        value.append(p)
        return self.check(value, label)


@dataclass(frozen=True)
class MetricConfig:
    """What a metric factory gets.

    Attributes:
        name: the metric's registered name.
        options: the options given (``eval``: ``--<family>-<key>`` flags and ``--metric-option name.key=value``),
            checked against the adapter's schema by :meth:`MetricAdapter.build`.
        device: where the metric will run (the factory may ignore it; the caller moves the metric there).
        random_weights: build deterministic random weights instead of loading pretrained ones (smoke tests; the
            scores are uncalibrated).
        work_dir: a private temporary folder of this process (for random checkpoints and the like).
        flags: option key -> how the user sets it in this integration (for messages); :meth:`MetricAdapter.configure`
            fills in ``--<family>-<key>`` (the ``scenemetrics eval`` flag) for the keys not given.
        kwargs: the options given, under their constructor argument names (:attr:`Option.argument`); set by
            :meth:`MetricAdapter.build`.
    """

    name: str
    options: Mapping[str, Any]
    device: Any
    random_weights: bool = False
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    flags: Mapping[str, str] = field(default_factory=dict)
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def flag(self, key: str) -> str:
        """How the user sets option ``key`` here (``"option '<key>'"`` when the integration did not say)."""
        return self.flags.get(key) or f"option {key!r}"


@dataclass(frozen=True)
class ViewItem:
    """One view as an integration hands it to a metric: images are float ``(1, 3, H, W)`` in [0, 1] on the device.

    Attributes:
        name: view name.
        unit: ``"<method>/<scene>"`` of the unit the view belongs to (``""`` outside ``eval``).
        render: the rendered view.
        target: its ground truth (``None`` when there is none).
        source: the source view (``None`` without cameras).
        pose: ``(1, 3)`` relative pose (``None``: computed from ``cameras`` by the adapter, or absent).
        cameras: ``(source_camera, target_camera)`` as the adapter's ``pose`` function takes them (for PRISM: a
            camera-to-world matrix or a spherical ``{"polar_deg", "azimuth_deg", "radius"}`` mapping each), or
            ``None``.
    """

    name: str
    unit: str
    render: Any
    target: Any = None
    source: Any = None
    pose: Any = None
    cameras: tuple[Any, Any] | None = None


class UnusableViewError(ValueError):
    """A view a metric cannot take: no ground truth, no source view and pose, or not square (the message says which
    and how to fix it). ``eval`` records it as the metric's error; the callbacks skip the view with a warning.

    Attributes:
        reason: ``"target"``, ``"cameras"`` or ``"square"``.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


Factory = Callable[[MetricConfig], Any] | type | str
"""``factory(config) -> torchmetrics.Metric``, a metric class (called with :attr:`MetricConfig.kwargs`), or
``"module:function"`` naming one (imported when first called)."""
Requirement = Callable[[MetricConfig], "str | None"] | str
Feed = Callable[[Any, ViewItem, MetricConfig], tuple] | str


def _center_square(x: Any) -> Any:
    h, w = x.shape[-2:]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return x[..., top : top + s, left : left + s]


@dataclass(frozen=True)
class MetricAdapter:
    """A registered metric: how it is built, fed, reported and pictured (see the module).

    Attributes:
        name: the name used in ``--metrics`` and in the callbacks' configs.
        factory: ``factory(config) -> torchmetrics.Metric`` or a metric class; ``None`` for an adapter that only
            describes instances of ``classes`` (it cannot be built by name).
        options: the option schema (:class:`Option` per key, in the order of the help and the docs).
        family: the metric family its command-line flags and nerfstudio fields are named after (``prism`` for
            ``prism_mmd``: ``--prism-model`` sets both); default ``name``.
        inputs: what it needs besides the renders (subset of :data:`INPUTS`); ``eval`` skips a unit lacking one.
        higher_is_better: for the leaderboard (``None``: take the metric class's ``higher_is_better``).
        description: one line for ``--help`` and the report.
        requires: ``requires(config) -> str | None``: why the metric cannot run with this configuration (missing
            package or extra), or ``None``. ``config.device`` is ``None`` at that point.
        feed: ``feed(metric, item, config) -> tuple`` of positional ``update`` arguments, replacing the dispatch
            by ``update`` kind (:meth:`update_args`).
        per_view: ``eval`` also records each view's value (``metric(*args)``, torchmetrics' forward); ``False`` for
            metrics whose single-view value is meaningless (scene-pooled scores, distribution distances).
        update: one of :data:`UPDATES`; ``None``: decided from the instance (``set_references`` -> ``references``,
            else ``paired``).
        classes: the metric classes this adapter describes, as ``"module:Class"`` strings or classes.
        pictures: subset of :data:`PICTURES`; ``None``: whatever the metric exposes (``last_maps``, ``last_result``).
        overlay: ``"module:function"`` (or a callable) ``draw(image, result, *, image_index, threshold, title)``
            returning a picture with ``.image``, for ``objects`` pictures in the callbacks.
        class_names: ``"module:ATTR"`` (or a sequence) naming the object classes of ``objects`` pictures.
        square: the metric needs square images: non-square views are unusable unless its ``center_crop`` option
            is set, which crops every image of the view to its centred square.
        pose: ``"module:function"`` (or a callable) ``pose(source_camera, target_camera) -> (1, 3)`` turning a
            view's cameras into the relative pose its ``update`` takes.
    """

    name: str
    factory: Factory | None
    options: tuple[Option, ...] = ()
    family: str = ""
    inputs: frozenset[str] = frozenset({"gt"})
    higher_is_better: bool | None = None
    description: str = ""
    requires: Requirement | None = None
    feed: Feed | None = None
    per_view: bool = True
    update: str | None = None
    classes: tuple[str | type, ...] = ()
    pictures: frozenset[str] | None = None
    overlay: str | Callable[..., Any] | None = None
    class_names: str | Sequence[str] | None = None
    square: bool = False
    pose: str | Callable[..., Any] | None = None

    # -- options ----------------------------------------------------------------------------------------------------
    @property
    def option_keys(self) -> tuple[str, ...]:
        """The keys of :attr:`options`, in order."""
        return tuple(o.key for o in self.options)

    def option(self, key: str) -> Option:
        """The schema entry of ``key`` (``ValueError`` naming the metric and its valid keys otherwise)."""
        for opt in self.options:
            if opt.key == key:
                return opt
        valid = f"its options: {', '.join(self.option_keys)}" if self.options else "it takes no options"
        raise ValueError(f"metric {self.name!r} has no option {key!r}; {valid}")

    def _label(self, key: str) -> str:
        return f"{self.name}.{key}"

    def _checked(self, key: str, value: Any, parse: bool = False) -> Any:
        opt = self.option(key)
        try:
            return opt.parse(value, self._label(key)) if parse else opt.check(value, self._label(key))
        except ValueError as err:
            raise ValueError(f"{err} (metric {self.name!r}; its options: {', '.join(self.option_keys)})") from None

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options given, checked against the schema and normalised (``None`` values are dropped: not given).

        Raises:
            ValueError: not a mapping, an unknown key, a wrong type or a value out of range; the message names the
                metric, the key and the valid keys.
        """
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise ValueError(f"options of metric {self.name!r} must be a mapping; received {type(options).__name__}")
        return {key: self._checked(key, value) for key, value in options.items() if value is not None}

    def parse_option(self, key: str, text: str) -> Any:
        """A command-line value of option ``key`` (:meth:`Option.parse`), checked like :meth:`check_options`."""
        return self._checked(key, text, parse=True)

    def flag(self, key: str, prefix: str = "--") -> str:
        """The flag of option ``key``: ``<prefix><family>-<key>`` with dashes (``--prism-center-crop``)."""
        return f"{prefix}{self.family}-{key}".replace("_", "-")

    def fingerprint(self, options: Mapping[str, Any], random_weights: bool) -> str:
        """A short hash of what changes this metric's scores: the options given whose :attr:`Option.scores` is set,
        and ``random_weights`` (a rerun recomputes a result whose fingerprint changed)."""
        relevant = {k: v for k, v in options.items() if v is not None and self.option(k).scores}
        text = json.dumps(
            {"metric": self.name, "options": relevant, "random": bool(random_weights)}, sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # -- building ---------------------------------------------------------------------------------------------------
    def unavailable_reason(
        self, options: Mapping[str, Any] | None = None, random_weights: bool = False, flags: Mapping[str, str] = {}
    ) -> str | None:
        """Why this metric cannot run with these options in this installation (``requires``, a missing required
        option), or ``None``."""
        if self.factory is None:
            return f"metric {self.name!r} describes metric instances only and cannot be built by name"
        config = self.configure(MetricConfig(self.name, dict(options or {}), None, random_weights, flags=flags))
        if self.requires is not None:
            reason = _resolve(self.requires)(config)
            if reason is not None:
                return reason
        for opt in self.options:
            if opt.required and config.options.get(opt.key) is None:
                return f"needs {config.flag(opt.key)} ({opt.help})"
        return None

    def configure(self, config: MetricConfig) -> MetricConfig:
        """``config`` with its options checked (:meth:`check_options`), the flags of the options it does not name
        (``--<family>-<key>``) and the constructor arguments (:attr:`MetricConfig.kwargs`) filled in.

        Raises:
            ValueError: options the schema rejects.
        """
        options = self.check_options(config.options)
        flags = {o.key: self.flag(o.key) for o in self.options} | dict(config.flags)
        kwargs = {self.option(k).keyword: v for k, v in options.items()}
        return dataclasses.replace(config, options=options, flags=flags, kwargs=kwargs)

    def build(self, config: MetricConfig) -> Any:
        """The metric: ``factory(config)`` with ``config.options`` checked (or ``factory(**config.kwargs)`` for a
        class).

        Raises:
            ValueError: an adapter without a factory, or options the schema rejects.
        """
        if self.factory is None:
            raise ValueError(f"metric {self.name!r} describes metric instances only and cannot be built by name")
        config = self.configure(config)
        factory = _resolve(self.factory)
        return factory(**config.kwargs) if isinstance(factory, type) else factory(config)

    # -- feeding ----------------------------------------------------------------------------------------------------
    def update_kind(self, metric: Any) -> str:
        """How ``metric`` is fed: the declared ``update``; undeclared, that of the adapter of ``metric``'s class (a
        plugin wrapping a built-in metric class is fed like it), else the generic rule."""
        if self.update is not None:
            return self.update
        by_class = adapter_for(metric)
        if by_class.update is not None:
            return by_class.update
        return "references" if callable(getattr(metric, "set_references", None)) else "paired"

    def update_args(self, metric: Any, item: ViewItem, config: MetricConfig | None = None) -> tuple:
        """The positional ``update`` arguments of ``metric`` for one view: the one dispatch of every integration.

        ``feed`` when declared; otherwise the arguments of the update kind (:data:`UPDATE_SIGNATURES`), the pose
        computed from ``item.cameras`` by the adapter's ``pose`` function when the view has none, and for
        ``square`` metrics every image cropped to its centred square when the ``center_crop`` option is set.

        Raises:
            UnusableViewError: the view lacks the ground truth or the source view and pose the metric needs, or is not
                square for a ``square`` metric without ``center_crop``.
        """
        config = config or MetricConfig(self.name, {}, None)
        if self.feed is not None:
            return _resolve(self.feed)(metric, item, config)
        wanted = UPDATE_SIGNATURES[self.update_kind(metric)]
        values = {"render": item.render, "target": item.target, "source": item.source, "pose": item.pose}
        if "target" in wanted and item.target is None:
            raise UnusableViewError(f"view {item.name!r} has no ground truth", "target")
        if "pose" in wanted and values["pose"] is None and item.cameras is not None and self.pose is not None:
            values["pose"] = _resolve(self.pose)(*item.cameras).to(item.render.device)
        if ("source" in wanted and values["source"] is None) or ("pose" in wanted and values["pose"] is None):
            what = "source view and pose" if "pose" in wanted else "source view"
            raise UnusableViewError(f"view {item.name!r} has no {what} (cameras)", "cameras")
        images = [k for k in wanted if k != "pose"]
        if self.square and any(values[k].shape[-2] != values[k].shape[-1] for k in images):
            if not config.options.get("center_crop"):
                h, w = values["render"].shape[-2:]
                raise UnusableViewError(
                    f"{config.name} needs square views; view {item.name!r} is {w}x{h} ({config.flag('center_crop')} "
                    "crops the views to their centred square)",
                    "square",
                )
            values.update({k: _center_square(values[k]) for k in images})
        return tuple(values[k] for k in wanted)

    # -- pictures ---------------------------------------------------------------------------------------------------
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


GENERIC = MetricAdapter(name="", factory=None, inputs=frozenset(), description="any torchmetrics.Metric")
"""The adapter of a metric instance no entry describes: duck-typed update, pictures from its attributes."""

_REGISTRY: dict[str, MetricAdapter] = {}


def _check_ref(name: str, what: str, ref: Any) -> None:
    if ref is not None and not (callable(ref) or (isinstance(ref, str) and _REF_RE.match(ref))):
        raise ValueError(f"`{what}` of metric {name!r} must be callable or 'module:function'; received {ref!r}")


def register_metric(
    name: str,
    factory: Factory | None,
    *,
    options: Sequence[Option] = (),
    family: str | None = None,
    inputs: Sequence[str] = ("gt",),
    higher_is_better: bool | None = None,
    description: str = "",
    requires: Requirement | None = None,
    feed: Feed | None = None,
    per_view: bool = True,
    update: str | None = None,
    metric_class: str | type | Sequence[str | type] = (),
    pictures: Sequence[str] | None = None,
    overlay: str | Callable[..., Any] | None = None,
    class_names: str | Sequence[str] | None = None,
    square: bool = False,
    pose: str | Callable[..., Any] | None = None,
    replace: bool = False,
) -> MetricAdapter:
    """Add a metric adapter to the registry (see :class:`MetricAdapter` for the arguments).

    ``factory`` is a metric class (built with the options' constructor arguments), a function of a
    :class:`MetricConfig`, or a ``"module:name"`` string naming either. ``options`` declares every option the metric
    accepts (one :class:`Option` each). ``metric_class`` names the class(es) the adapter describes (``"module:Class"``
    strings are resolved lazily). Registering the same factory again under the same name is a no-op (plugins may be
    imported twice).

    Raises:
        ValueError: a name that is not lowercase ``[a-z][a-z0-9_]*``, a factory that is not callable, options that
            are not :class:`Option` or repeat a key, unknown ``inputs``, ``update`` or ``pictures``, a ``square``
            metric without a ``center_crop`` option, a ``metric_class`` string not of the form ``module:Class``, or
            a name already taken by another factory (pass ``replace=True`` to override).

    Example:
        >>> import torchmetrics
        >>> from scenemetrics.registry import Option, register_metric, unregister_metric
        >>> entry = register_metric("mae", torchmetrics.MeanAbsoluteError, higher_is_better=False,
        ...                         options=[Option("num_outputs", int, 1, "outputs per sample", low=1)])
        >>> entry.inputs, entry.update_kind(torchmetrics.MeanAbsoluteError())
        (frozenset({'gt'}), 'paired')
        >>> type(entry.build(MetricConfig("mae", {"num_outputs": 1}, "cpu"))).__name__
        'MeanAbsoluteError'
        >>> unregister_metric("mae")
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"metric `name` must match [a-z][a-z0-9_]* (it names a column and a flag); received {name!r}")
    family = name if family is None else family
    if not isinstance(family, str) or not _NAME_RE.match(family):
        raise ValueError(f"`family` of metric {name!r} must match [a-z][a-z0-9_]*; received {family!r}")
    for what, ref in (("factory", factory), ("requires", requires), ("feed", feed), ("pose", pose)):
        _check_ref(name, what, ref)
    options = tuple(options)
    if not all(isinstance(o, Option) for o in options):
        raise ValueError(f"`options` of metric {name!r} must be scenemetrics.registry.Option objects")
    keys = [o.key for o in options]
    if len(set(keys)) != len(keys):
        raise ValueError(f"`options` of metric {name!r} repeat a key: {keys}")
    bad = [i for i in inputs if i not in INPUTS]
    if bad or isinstance(inputs, str):
        raise ValueError(f"`inputs` of metric {name!r} must be a subset of {INPUTS}; received {inputs!r}")
    if update is not None and update not in UPDATES:
        raise ValueError(f"`update` of metric {name!r} must be one of {UPDATES} or None; received {update!r}")
    if pictures is not None and (isinstance(pictures, str) or any(p not in PICTURES for p in pictures)):
        raise ValueError(f"`pictures` of metric {name!r} must be a subset of {PICTURES} or None; received {pictures!r}")
    if square and not any(o.key == "center_crop" and o.type is bool for o in options):
        raise ValueError(f"metric {name!r} is declared `square`: declare a bool option 'center_crop' too")
    classes = (metric_class,) if isinstance(metric_class, (str, type)) else tuple(metric_class)
    for ref in classes:
        if not isinstance(ref, type) and not (isinstance(ref, str) and _REF_RE.match(ref)):
            raise ValueError(f"`metric_class` of metric {name!r} must be classes or 'module:Class'; received {ref!r}")
    entry = MetricAdapter(
        name=name,
        factory=factory,
        options=options,
        family=family,
        inputs=frozenset(inputs),
        higher_is_better=higher_is_better,
        description=description,
        requires=requires,
        feed=feed,
        per_view=per_view,
        update=update,
        classes=classes,
        pictures=None if pictures is None else frozenset(pictures),
        overlay=overlay,
        class_names=class_names,
        square=bool(square),
        pose=pose,
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


def _registry() -> dict[str, MetricAdapter]:
    """The registry, with the built-in metrics declared (their module is imported on first use)."""
    if _BUILTINS not in sys.modules:
        importlib.import_module(_BUILTINS)
    return _REGISTRY


def metric_names() -> list[str]:
    """Names of every metric that can be built by name, in registration order (the built-in ones first)."""
    return [name for name, entry in _registry().items() if entry.factory is not None]


def get_metric(name: str) -> MetricAdapter:
    """The adapter of a registered metric; ``ValueError`` listing the known names otherwise."""
    try:
        return _registry()[name]
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
    registry = _registry()
    named = registry.get(name) if name is not None else None
    if named is not None and (not named.classes or named._rank(metric) is not None):
        return named
    best, best_rank = GENERIC, None
    for entry in registry.values():
        rank = entry._rank(metric)
        if rank is not None and (best_rank is None or rank < best_rank):
            best, best_rank = entry, rank
    return best


def metric_kind(metric: Any, name: str | None = None) -> str:
    """How a metric instance is fed (one of :data:`UPDATES`), from its adapter (:func:`adapter_for`)."""
    return adapter_for(metric, name).update_kind(metric)


_LOADED_PLUGINS: set[str] = set()


def load_plugins(plugins: Sequence[str] = (), *, entry_points: bool = True) -> None:
    """Import plugin modules that register metrics: module names or ``.py`` file paths, and the entry points.

    Each plugin is imported once per process (DDP ranks import it themselves).

    Raises:
        ImportError: a plugin module cannot be imported. FileNotFoundError: a plugin file does not exist.
    """
    _registry()  # the built-in metrics first
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


def check_metric_options(options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Per-metric options (``{metric: {key: value}}``) checked against each metric's schema, normalised.

    Raises:
        ValueError: an unknown metric, or an option its schema rejects (naming the metric, the key, the valid keys).
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"`options` must map metric names to their options; received {type(options).__name__}")
    return {name: get_metric(name).check_options(value) for name, value in options.items()}


def resolve_metrics(
    names: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    random_weights: bool = False,
) -> tuple[list[MetricAdapter], dict[str, str]]:
    """Look up the requested metrics, check every metric's options, and check that each can run
    (:meth:`MetricAdapter.unavailable_reason`).

    ``"all"`` expands to every metric that can be built by name.

    Returns:
        ``(available entries in the requested order, {name: why unavailable})``.

    Raises:
        ValueError: an unknown name (the message lists the known ones), a repeated name, no name, or a bad option.
    """
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError("`metrics` is empty; name at least one metric, e.g. psnr,ssim,lpips,puzzlesim")
    if names == ["all"]:
        names = metric_names()
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"`metrics` names {', '.join(dupes)} more than once")
    checked = check_metric_options(options)
    entries, unavailable = [], {}
    for name in names:
        entry = get_metric(name)
        reason = entry.unavailable_reason(checked.get(name), random_weights)
        if reason is None:
            entries.append(entry)
        else:
            unavailable[name] = reason
    return entries, unavailable


# ---- options across metrics: flags and fields ------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionFlag:
    """An option as the integrations expose it, shared by the metrics of one family that declare the same key.

    Attributes:
        family: the metric family (``prism``).
        key: the option key (``model``).
        option: its schema entry (the first metric's; the others declare the same).
        metrics: the metrics it sets (``("prism", "prism_mmd")``).
    """

    family: str
    key: str
    option: Option
    metrics: tuple[str, ...]

    @property
    def name(self) -> str:
        """``<family>_<key>``: the nerfstudio config field (the ``eval`` flag is this with dashes)."""
        return f"{self.family}_{self.key}"


def option_flags(names: Sequence[str] | None = None) -> list[OptionFlag]:
    """Every option of the named metrics (default: every metric that can be built by name), one entry per
    ``(family, key)`` in registration order: what ``scenemetrics eval`` turns into ``--<family>-<key>`` flags and the
    nerfstudio callback into fields.

    Raises:
        ValueError: two metrics of one family declare the same key with different types.

    Example:
        >>> [(f.name, f.metrics) for f in option_flags(["prism", "prism_mmd"]) if f.key in ("model", "anchors")]
        [('prism_model', ('prism', 'prism_mmd')), ('prism_anchors', ('prism_mmd',))]
    """
    out: dict[tuple[str, str], OptionFlag] = {}
    for name in metric_names() if names is None else names:
        entry = get_metric(name)
        for opt in entry.options:
            key = (entry.family, opt.key)
            old = out.get(key)
            if old is None:
                out[key] = OptionFlag(entry.family, opt.key, opt, (entry.name,))
                continue
            if old.option.type != opt.type:
                raise ValueError(
                    f"metrics {old.metrics[0]!r} and {entry.name!r} (family {entry.family!r}) declare option "
                    f"{opt.key!r} with different types"
                )
            out[key] = dataclasses.replace(old, metrics=(*old.metrics, entry.name))
    return list(out.values())


def parse_metric_option(text: str) -> tuple[str, str, Any]:
    """``"METRIC.KEY=VALUE"`` -> ``(metric, key, checked value)`` (:meth:`MetricAdapter.parse_option`).

    Raises:
        ValueError: not of that form, an unknown metric, or an option the metric's schema rejects.

    Example:
        >>> parse_metric_option("puzzlesim.layers=[2,3]")
        ('puzzlesim', 'layers', [2, 3])
    """
    name, dot, rest = str(text).partition(".")
    key, eq, value = rest.partition("=")
    if not (dot and eq and name and key):
        raise ValueError(f"a metric option must look like METRIC.KEY=VALUE; received {text!r}")
    return name, key, get_metric(name).parse_option(key, value)


# ---- published evaluation protocols ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Protocol:
    """A published evaluation protocol: the registered metric that stands for each generic one in its tables.

    Attributes:
        name: what ``scenemetrics eval --protocol`` takes (``3dgs``).
        variants: generic metric -> this protocol's metric (``{"ssim": "ssim_3dgs"}``); others are kept as they are.
        options: options the protocol fixes for the metrics it keeps (``{"lpips": {"net": "alex"}}``); a run that
            gives another value is refused.
        description: one line: whose tables these are.
    """

    name: str
    variants: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    description: str = ""


_PROTOCOLS: dict[str, Protocol] = {}


def register_protocol(
    name: str,
    variants: Mapping[str, str] | None = None,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    description: str = "",
    replace: bool = False,
) -> Protocol:
    """Declare a published protocol (see :class:`Protocol`); ``replace=True`` overrides one of the same name.

    Raises:
        ValueError: a malformed name, or a name already registered (without ``replace``).
    """
    if not isinstance(name, str) or not re.match(r"^[a-z0-9][a-z0-9_-]*$", name):
        raise ValueError(f"protocol name must match [a-z0-9][a-z0-9_-]*; received {name!r}")
    if name in _PROTOCOLS and not replace:
        raise ValueError(f"protocol {name!r} is already registered (pass replace=True to override it)")
    protocol = Protocol(
        name,
        MappingProxyType(dict(variants or {})),
        MappingProxyType({k: MappingProxyType(dict(v)) for k, v in (options or {}).items()}),
        description,
    )
    _PROTOCOLS[name] = protocol
    return protocol


def protocol_names() -> list[str]:
    """Names of the registered protocols (the built-in ones: ``scenemetrics``, ``3dgs``, ``nerfbaselines``)."""
    _registry()
    return list(_PROTOCOLS)


def get_protocol(name: str) -> Protocol:
    """A registered protocol; ``ValueError`` listing the known names otherwise."""
    _registry()
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; known protocols: {', '.join(_PROTOCOLS)}") from None


def apply_protocol(
    name: str, metrics: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """``metrics`` with each generic metric replaced by protocol ``name``'s variant (``"all"`` expanded first;
    repeated names once).

    Raises:
        ValueError: an unknown protocol, or ``options`` that set an option the protocol fixes to another value.

    Example:
        >>> apply_protocol("3dgs", ["psnr", "ssim", "lpips", "puzzlesim"])
        ['psnr', 'ssim_3dgs', 'lpips_3dgs', 'puzzlesim']
        >>> apply_protocol("nerfbaselines", ["psnr", "ssim", "lpips"], {"lpips": {"net": "vgg"}})
        Traceback (most recent call last):
        ...
        ValueError: protocol 'nerfbaselines' computes lpips with net='alex'; the options give lpips.net='vgg'
    """
    protocol = get_protocol(name)
    names = [n.strip() for n in metrics if n.strip()]
    if names == ["all"]:
        names = metric_names()
    out: list[str] = []
    for n in names:
        variant = protocol.variants.get(n, n)
        if variant not in out:
            out.append(variant)
    for metric, fixed in protocol.options.items():
        if metric not in out:
            continue
        given = (options or {}).get(metric, {})
        for key, value in fixed.items():
            if given.get(key) is not None and given[key] != value:
                raise ValueError(
                    f"protocol {name!r} computes {metric} with {key}={value!r}; the options give "
                    f"{metric}.{key}={given[key]!r}"
                )
    return out
