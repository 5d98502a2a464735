"""``WireframeMetrics``: a torchmetrics collection of wireframe metrics accumulated over houses.

Example:
    >>> import torch
    >>> from scenemetrics.wireframe import WireframeMetrics
    >>> m = WireframeMetrics(("corner_f1", "wed"), threshold=0.5)
    >>> v, e = [[0, 0, 0], [4, 0, 0], [4, 3, 0]], [[0, 1], [1, 2]]
    >>> m.update((v, e), (v, e))
    >>> {k: float(x) for k, x in m.compute().items()}
    {'corner_f1': 1.0, 'wed': 0.0}
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torchmetrics import Metric

from scenemetrics.checks import check_choice
from scenemetrics.wireframe.options import check_distance
from scenemetrics.wireframe.registry import METRIC_NAMES, ScalarMetric, make_metric, metric_option_names
from scenemetrics.wireframe.types import PRF, Wireframe, as_wireframe

__all__ = ["DEFAULT_METRICS", "WireframeMetrics"]

DEFAULT_METRICS = ("corner_precision", "corner_recall", "corner_f1", "edge_precision", "edge_recall", "edge_f1", "wed")
"""The metrics :class:`WireframeMetrics` (and ``scenemetrics wireframe eval``) compute by default."""

_PRF_NAMES = {"corner_precision", "corner_recall", "corner_f1", "edge_precision", "edge_recall", "edge_f1"}
_PRF_FIELD = {n: n.split("_")[1] for n in _PRF_NAMES}


def _is_single(obj: Any) -> bool:
    """One house (Wireframe, mapping, (vertices, edges)) rather than a sequence of houses."""
    if isinstance(obj, (Wireframe, Mapping)):
        return True
    if not isinstance(obj, (tuple, list)):
        return False
    if len(obj) != 2:
        return False
    first = obj[0]
    if isinstance(first, (Wireframe, Mapping)):
        return False
    # a sequence of (vertices, edges) pairs has a 2-D array one level deeper than a single pair
    return not (isinstance(first, (tuple, list)) and len(first) == 2 and np.ndim(first[0]) == 2)


def _houses(obj: Any, arg: str) -> list:
    if _is_single(obj):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return list(obj)
    raise TypeError(
        f"{arg} must be a house (Wireframe, (vertices, edges) or a mapping) or a sequence of houses, "
        f"got {type(obj).__name__}."
    )


class WireframeMetrics(Metric):
    """Wireframe metrics of the registry (:data:`~scenemetrics.wireframe.METRIC_NAMES`) averaged over houses.

    Each ``update`` adds one house or a batch of houses (prediction and GT paired by position); every metric
    function runs once per house even when several names share it (corner P/R/F1 share one assignment). States are
    fixed-size float64 sums (``dist_reduce_fx="sum"``): per metric ``sum_<name>``, ``count_<name>`` and
    ``nan_<name>``, and for corner/edge P/R/F1 also ``tp_<name>``, ``npred_<name>``, ``ngt_<name>``.

    * ``average="macro"`` (default; S23DR convention): mean over houses of the per-house values. NaN values (e.g.
      corner offset without a true positive) are skipped and counted; ``compute()`` warns once if any were skipped.
    * ``average="micro"``: P/R/F1 from the summed ``tp``/``n_pred``/``n_gt`` (Building3D convention); other metrics
      stay macro.

    ``compute()`` before any update returns NaN per metric with a ``UserWarning``. ``last_values`` holds the
    per-house values of the last ``update`` (an output, not a state). Every option (``threshold``, ``radius``,
    ``metric_options``) is checked when the metric is built: a bad value raises ``ValueError`` there, not at the
    first ``update``.

    Args:
        metrics: registry names.
        threshold: corner/edge match distance, required if a corner or edge metric is requested (no default: it is
            in the data's unit).
        radius: tube radius, required for ``iou``/``jaccard_distance``.
        metric_options: name -> extra options, e.g. ``{"edge_f1": {"matching": "endpoint"}}``.
        average: ``"macro"`` or ``"micro"``.
        **kwargs: passed to ``torchmetrics.Metric``.

    Example:
        >>> m = WireframeMetrics(("edge_f1",), threshold=0.1, average="micro")
        >>> v = [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
        >>> m.update([(v, [[0, 1]]), (v, [[0, 1], [1, 2]])], [(v, [[0, 1], [1, 2]])] * 2)
        >>> round(float(m.compute()["edge_f1"]), 4)
        0.8571
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = None

    def __init__(
        self,
        metrics: Sequence[str] = DEFAULT_METRICS,
        *,
        threshold: float | None = None,
        radius: float | None = None,
        metric_options: Mapping[str, Mapping[str, Any]] | None = None,
        average: str = "macro",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(metrics, str):
            metrics = (metrics,)
        names = tuple(metrics)
        if not names:
            raise ValueError("metrics is empty; give at least one name of scenemetrics.wireframe.METRIC_NAMES.")
        unknown = [n for n in names if n not in METRIC_NAMES]
        if unknown:
            raise ValueError(f"unknown wireframe metric(s) {unknown}; choose from {', '.join(METRIC_NAMES)}.")
        if len(set(names)) != len(names):
            raise ValueError(f"metrics has duplicate names: {names}.")
        check_choice(average, "average", ("macro", "micro"))
        options = dict(metric_options or {})
        stray = sorted(set(options) - set(names))
        if stray:
            raise ValueError(f"metric_options names metrics that are not requested: {stray}.")
        # checked even when no requested metric uses them: a negative or non-finite distance is always a mistake
        if threshold is not None:
            check_distance(threshold, "threshold")
        if radius is not None:
            check_distance(radius, "radius", allow_zero=False)
        self.metric_names = names
        self.average = average
        self.threshold, self.radius = threshold, radius
        self._metrics: dict[str, ScalarMetric] = {}
        for name in names:
            accepted = metric_option_names(name)
            opts: dict[str, Any] = {}
            for key, val in (("threshold", threshold), ("radius", radius)):
                if key in accepted and val is not None:
                    opts[key] = val
            opts.update(options.get(name, {}))
            # every registry function taking threshold / radius requires it (it is in the data's unit)
            missing = [key for key in ("threshold", "radius") if key in accepted and opts.get(key) is None]
            if missing:
                raise ValueError(
                    f"WireframeMetrics: metric {name!r} needs the option {' and '.join(missing)}; pass "
                    f"{', '.join(f'{k}=' for k in missing)} to WireframeMetrics (e.g. 0.5 for metres)."
                )
            try:
                self._metrics[name] = make_metric(name, **opts)
            except (ValueError, TypeError) as err:
                raise type(err)(f"WireframeMetrics: metric {name!r}: {err}") from None
        self._groups: dict[tuple, list[str]] = {}
        for name, m in self._metrics.items():
            self._groups.setdefault(m.group_key, []).append(name)
        zero = torch.tensor(0.0, dtype=torch.float64)
        for name in names:
            for prefix in ("sum", "count", "nan"):
                self.add_state(f"{prefix}_{name}", default=zero.clone(), dist_reduce_fx="sum")
            if name in _PRF_NAMES:
                for prefix in ("tp", "npred", "ngt"):
                    self.add_state(f"{prefix}_{name}", default=zero.clone(), dist_reduce_fx="sum")
        self.last_values: list[dict[str, float]] = []

    def _evaluate(self, pred: Wireframe, gt: Wireframe) -> tuple[dict[str, float], dict[str, PRF]]:
        values: dict[str, float] = {}
        prfs: dict[str, PRF] = {}
        for group in self._groups.values():
            first = self._metrics[group[0]]
            raw = first.raw(pred.vertices, pred.edges, gt.vertices, gt.edges)
            for name in group:
                values[name] = self._metrics[name].extract(raw)
                if name in _PRF_NAMES:
                    prfs[name] = raw
        return {n: values[n] for n in self.metric_names}, prfs

    def update(self, preds: Any, targets: Any) -> None:
        """Add one house, or equal-length sequences of houses (paired by position)."""
        p_list, t_list = _houses(preds, "preds"), _houses(targets, "targets")
        if len(p_list) != len(t_list):
            raise ValueError(f"preds has {len(p_list)} houses but targets has {len(t_list)}; pair them one to one.")
        sums = dict.fromkeys(self.metric_names, 0.0)
        counts = dict.fromkeys(self.metric_names, 0)
        nans = dict.fromkeys(self.metric_names, 0)
        prf_sums = {n: [0, 0, 0] for n in self.metric_names if n in _PRF_NAMES}
        per_house = []
        for k, (p, t) in enumerate(zip(p_list, t_list, strict=True)):
            try:
                pw, gw = as_wireframe(p, name="pred"), as_wireframe(t, name="gt")
                values, prfs = self._evaluate(pw, gw)
            except (ValueError, TypeError) as err:
                if len(p_list) == 1:
                    raise
                raise type(err)(f"house {k}: {err}") from None
            per_house.append(values)
            for name, val in values.items():
                if math.isnan(val):
                    nans[name] += 1
                else:
                    sums[name] += val
                    counts[name] += 1
            for name, prf in prfs.items():
                acc = prf_sums[name]
                acc[0] += prf.tp
                acc[1] += prf.n_pred
                acc[2] += prf.n_gt
        for name in self.metric_names:
            setattr(self, f"sum_{name}", getattr(self, f"sum_{name}") + sums[name])
            setattr(self, f"count_{name}", getattr(self, f"count_{name}") + counts[name])
            setattr(self, f"nan_{name}", getattr(self, f"nan_{name}") + nans[name])
        for name, (tp, npred, ngt) in prf_sums.items():
            setattr(self, f"tp_{name}", getattr(self, f"tp_{name}") + tp)
            setattr(self, f"npred_{name}", getattr(self, f"npred_{name}") + npred)
            setattr(self, f"ngt_{name}", getattr(self, f"ngt_{name}") + ngt)
        self.last_values = per_house

    def compute(self) -> dict[str, torch.Tensor]:
        """``name -> 0-dim float64 tensor`` (NaN for a metric with no finite value)."""
        out: dict[str, torch.Tensor] = {}
        skipped: dict[str, int] = {}
        if self._update_count == 0 and all(float(getattr(self, f"count_{n}")) == 0 for n in self.metric_names):
            warnings.warn("WireframeMetrics.compute() before any house was added; returning NaN", stacklevel=2)
        for name in self.metric_names:
            count = float(getattr(self, f"count_{name}"))
            n_nan = int(getattr(self, f"nan_{name}"))
            if n_nan:
                skipped[name] = n_nan
            if self.average == "micro" and name in _PRF_NAMES:
                tp, npred, ngt = (float(getattr(self, f"{p}_{name}")) for p in ("tp", "npred", "ngt"))
                if ngt == 0:  # no house yet (every GT has >= 1 vertex and >= 1 edge)
                    value = math.nan
                else:
                    precision = tp / npred if npred > 0 else 0.0
                    recall = tp / ngt
                    denom = precision + recall
                    f1 = 2 * precision * recall / denom if denom > 0 else 0.0
                    value = {"precision": precision, "recall": recall, "f1": f1}[_PRF_FIELD[name]]
            else:
                value = float(getattr(self, f"sum_{name}")) / count if count > 0 else math.nan
            out[name] = torch.tensor(value, dtype=torch.float64, device=getattr(self, f"sum_{name}").device)
        if skipped:
            detail = ", ".join(f"{k}: {v}" for k, v in skipped.items())
            warnings.warn(f"WireframeMetrics: NaN values were skipped in the averages ({detail}).", stacklevel=2)
        return out

    def plot(self, val: Any = None, ax: Any = None) -> Any:
        """Plot ``compute()``'s values (or ``val``, one result or a list of results) with matplotlib.

        Example:
            >>> m = WireframeMetrics(("wed",))
            >>> v, e = [[0, 0, 0], [1, 0, 0]], [[0, 1]]
            >>> m.update((v, e), (v, e))
            >>> fig, ax = m.plot()  # doctest: +SKIP
        """
        return self._plot(val, ax)

    def reset(self) -> None:
        """Reset the states and ``last_values``."""
        super().reset()
        self.last_values = []
