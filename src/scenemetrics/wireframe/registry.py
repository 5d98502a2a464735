"""The wireframe metric registry: every metric by name, with its options, direction and how to read its value.

:func:`make_metric` binds a registry name (:data:`METRIC_NAMES`) to its options and checks them; the result is a
:class:`ScalarMetric` computing one number per house. ``WireframeMetrics``, the property suite and the
``scenemetrics wireframe`` command build their metrics here. The functions themselves live in
:mod:`scenemetrics.wireframe.scores`.

Example:
    >>> from scenemetrics.wireframe import make_metric
    >>> m = make_metric("corner_f1", threshold=0.5)
    >>> m([[0, 0, 0]], [], [[0, 0, 0.1]], []), m.higher_is_better
    (1.0, True)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.matching import (
    check_corner_distance_options,
    check_edge_matching_options,
    corner_chamfer,
    corner_matching_distance,
    edge_matching_distance,
)
from scenemetrics.wireframe.options import (
    check_chamfer_options,
    check_corner_options,
    check_edge_options,
    check_hss_options,
    check_iou_options,
    check_sampling,
    check_spectral_options,
    check_wed_options,
)
from scenemetrics.wireframe.scores import (
    chamfer_distance,
    corner_offset,
    corner_prf,
    edge_prf,
    hausdorff_distance,
    hss,
    iou,
    spectral_distance,
    wed,
)

__all__ = ["METRIC_NAMES", "TABLE2_COLUMNS", "ScalarMetric", "make_metric", "metric_option_names"]


class _Entry:
    __slots__ = ("check", "extract", "fixed", "func", "higher_is_better", "kind", "required")

    def __init__(
        self,
        func: Callable,
        kind: str,
        higher_is_better: bool,
        check: Callable[..., Any],
        extract: Callable[[Any], float] = float,
        fixed: dict | None = None,
        required: tuple[str, ...] = (),
    ) -> None:
        self.func, self.kind, self.higher_is_better, self.check = func, kind, higher_is_better, check
        self.extract, self.fixed, self.required = extract, fixed or {}, required


def _field(result: Any, field: str) -> float:
    return float(getattr(result, field))


def _attr(field: str) -> Callable[[Any], float]:
    # a partial of a module-level function, not a lambda: metric objects holding it stay picklable
    return functools.partial(_field, field=field)


def _one_minus(value: float) -> float:
    return 1.0 - float(value)


# kind: "corner" = (pred_vertices, gt_vertices, ...); "wire" = (pv, pe, gv, ge, ...)
_REGISTRY: dict[str, _Entry] = {
    "corner_precision": _Entry(
        corner_prf, "corner", True, check_corner_options, _attr("precision"), required=("threshold",)
    ),
    "corner_recall": _Entry(corner_prf, "corner", True, check_corner_options, _attr("recall"), required=("threshold",)),
    "corner_f1": _Entry(corner_prf, "corner", True, check_corner_options, _attr("f1"), required=("threshold",)),
    "corner_offset": _Entry(corner_offset, "corner", False, check_corner_options, required=("threshold",)),
    "edge_precision": _Entry(edge_prf, "wire", True, check_edge_options, _attr("precision"), required=("threshold",)),
    "edge_recall": _Entry(edge_prf, "wire", True, check_edge_options, _attr("recall"), required=("threshold",)),
    "edge_f1": _Entry(edge_prf, "wire", True, check_edge_options, _attr("f1"), required=("threshold",)),
    "wed": _Entry(wed, "wire", False, check_wed_options, fixed={"variant": "corrected"}),
    "wed_prereg": _Entry(wed, "wire", False, check_wed_options, fixed={"variant": "s23dr2024"}),
    "wed_mnn": _Entry(wed, "wire", False, check_wed_options, fixed={"variant": "mnn"}),
    "wed_nearest": _Entry(wed, "wire", False, check_wed_options, fixed={"variant": "nearest"}),
    "wed_ap": _Entry(wed, "wire", False, check_wed_options, fixed={"variant": "ap"}),
    "spectral_l1": _Entry(spectral_distance, "wire", False, check_spectral_options, fixed={"p": 1}),
    "spectral_l2": _Entry(spectral_distance, "wire", False, check_spectral_options, fixed={"p": 2}),
    "iou": _Entry(iou, "wire", True, check_iou_options, required=("radius",)),
    "jaccard_distance": _Entry(iou, "wire", False, check_iou_options, _one_minus, required=("radius",)),
    "hausdorff": _Entry(hausdorff_distance, "wire", False, check_sampling),
    "chamfer": _Entry(chamfer_distance, "wire", False, check_chamfer_options),
    "hss": _Entry(hss, "wire", True, check_hss_options, _attr("hss")),
    # one-to-one (Hungarian) forms next to the nearest-neighbour Chamfer forms (wireframe/matching.py)
    "corner_chamfer": _Entry(corner_chamfer, "corner", False, check_corner_distance_options),
    "corner_matching": _Entry(corner_matching_distance, "corner", False, check_corner_distance_options),
    "edge_matching": _Entry(edge_matching_distance, "wire", False, check_edge_matching_options),
}

METRIC_NAMES: tuple[str, ...] = tuple(_REGISTRY)
"""Every registry name accepted by :func:`make_metric`, ``WireframeMetrics`` and the CLI."""

TABLE2_COLUMNS: tuple[tuple[str, str], ...] = (
    ("corner_precision", "Corner Prec"),
    ("corner_recall", "Corner Rec"),
    ("corner_f1", "Corner F1"),
    ("corner_offset", "Corner offset"),
    ("edge_precision", "Edge Prec"),
    ("edge_recall", "Edge Rec"),
    ("edge_f1", "Edge F1"),
    ("wed_prereg", "WED prereg"),
    ("wed_mnn", "WED MNN"),
    ("wed_nearest", "WED nearest"),
    ("wed_ap", "WED AP"),
    ("spectral_l1", "Spectral L1"),
    ("spectral_l2", "Spectral L2"),
    ("iou", "IoU Jaccard"),
    ("hausdorff", "Hausdorff dist."),
    ("chamfer", "Chamfer edge"),
)
"""``(registry name, paper column label)`` in the order of the paper's Table 2."""

_DATA_PARAMS = {"pred_vertices", "pred_edges", "gt_vertices", "gt_edges"}


def _allowed_options(entry: _Entry) -> set[str]:
    params = inspect.signature(entry.func).parameters
    return {n for n in params if n not in _DATA_PARAMS} - set(entry.fixed)


class ScalarMetric:
    """A registry metric bound to its options: ``metric(pred_vertices, pred_edges, gt_vertices, gt_edges) -> float``.

    Attributes:
        name: registry name.
        higher_is_better: direction of the score.
        options: the keyword options passed to the underlying function.

    Example:
        >>> m = make_metric("corner_f1", threshold=0.5)
        >>> m([[0, 0, 0]], [], [[0, 0, 0.1]], [])
        1.0
    """

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        self._entry = _REGISTRY[name]
        self.name = name
        self.higher_is_better = self._entry.higher_is_better
        self.options = dict(options)

    @property
    def group_key(self) -> tuple:
        """Metrics with equal keys share one call of the underlying function (e.g. corner P, R and F1)."""
        kwargs = {**self._entry.fixed, **self.options}
        return (self._entry.func.__name__, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))

    def raw(self, pred_vertices: ArrayLike, pred_edges: ArrayLike, gt_vertices: ArrayLike, gt_edges: ArrayLike) -> Any:
        """The underlying function's full result (e.g. the :class:`PRF`), shared by metrics with one ``group_key``."""
        kwargs = {**self._entry.fixed, **self.options}
        if self._entry.kind == "corner":
            return self._entry.func(pred_vertices, gt_vertices, **kwargs)
        return self._entry.func(pred_vertices, pred_edges, gt_vertices, gt_edges, **kwargs)

    def extract(self, raw: Any) -> float:
        """This metric's value from :meth:`raw`'s result."""
        return self._entry.extract(raw)

    def __call__(
        self, pred_vertices: ArrayLike, pred_edges: ArrayLike, gt_vertices: ArrayLike, gt_edges: ArrayLike
    ) -> float:
        return self.extract(self.raw(pred_vertices, pred_edges, gt_vertices, gt_edges))

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, Any]]]:
        # pickled by name and options; the registry entry (functions) is looked up again when unpickled
        return ScalarMetric, (self.name, self.options)

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"ScalarMetric({self.name!r}{', ' if opts else ''}{opts})"


def make_metric(name: str, **options: Any) -> ScalarMetric:
    """Bind a registry metric (:data:`METRIC_NAMES`) to its options.

    Required options: ``threshold`` for corner and edge metrics, ``radius`` for ``iou``/``jaccard_distance``.
    Other keyword options go to the underlying function (e.g. ``matching="endpoint"`` for edge metrics,
    ``cv_ins=50.0`` for WED); options the function does not take raise ``TypeError`` here.

    Args:
        name: registry name.
        **options: keyword options of the underlying function.

    Returns:
        A :class:`ScalarMetric`.

    Raises:
        ValueError: unknown name, missing required option, or an option value the metric rejects (e.g. a negative
            ``threshold``): options are checked here, not at the first call.
        TypeError: an option the metric does not take.

    Example:
        >>> make_metric("wed_mnn").higher_is_better
        False
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown wireframe metric {name!r}; choose from {', '.join(METRIC_NAMES)}.")
    entry = _REGISTRY[name]
    unknown = sorted(set(options) - _allowed_options(entry))
    if unknown:
        raise TypeError(
            f"metric {name!r} takes no option(s) {unknown}; its options are {sorted(_allowed_options(entry))}."
        )
    missing = [r for r in entry.required if options.get(r) is None]
    if missing:
        raise ValueError(f"metric {name!r} needs the option(s) {missing} (in the coordinates' unit; no default).")
    entry.check(**entry.fixed, **options)
    return ScalarMetric(name, options)


def metric_option_names(name: str) -> set[str]:
    """The option names a registry metric accepts (used to route shared options such as ``threshold``)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown wireframe metric {name!r}; choose from {', '.join(METRIC_NAMES)}.")
    return _allowed_options(_REGISTRY[name])
