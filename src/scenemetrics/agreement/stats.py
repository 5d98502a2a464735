"""Correlation of a metric with human scores: PLCC (after an optional 5-parameter logistic fit), SRCC, KRCC, RMSE.

Conventions (the image-quality-assessment ones): human scores are higher = better; ``higher_is_better=False``
negates the metric first, so every statistic reads "positive = agrees with people". SRCC and KRCC are always
computed on the raw (oriented) metric values, never on fitted ones. Ties get average ranks (SRCC) and Kendall's
tau-b (KRCC), both from ``scipy.stats``. The logistic fit is least squares (``scipy.optimize.curve_fit``) of

    q(x) = b1 * (0.5 - 1 / (1 + exp(b2 * (x - b3)))) + b4 * x + b5

on z-scored metric values, with the parameters mapped back to the metric's own units.

Example:
    >>> from scenemetrics.agreement import plcc, srcc, krcc
    >>> x, y = [1, 2, 3, 4, 5], [5, 6, 7, 8, 7]
    >>> round(plcc(x, y, fit="none"), 7), round(srcc(x, y), 7), round(krcc(x, y), 7)
    (0.8320503, 0.8207827, 0.7378648)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.agreement._checks import NAN_POLICIES, as_1d, check_finite, paired
from scenemetrics.checks import check_choice, check_int

__all__ = [
    "AGGREGATES",
    "FITS",
    "CorrelationResult",
    "Logistic5Fit",
    "correlations",
    "fit_logistic5",
    "krcc",
    "logistic5",
    "metric_correlation_matrix",
    "plcc",
    "rmse",
    "srcc",
]

FITS = ("none", "linear", "logistic5", "logistic5-maxcorr")
AGGREGATES = ("pooled", "mean")
KENDALL_VARIANTS = ("b", "c")
CI_LEVELS = (0.9, 0.95, 0.99)
STATISTICS = ("plcc", "srcc", "krcc", "rmse")


def logistic5(x: Any, b1: float, b2: float, b3: float, b4: float, b5: float) -> np.ndarray:
    """The 5-parameter logistic of image-quality assessment, ``b1*(0.5 - 1/(1+exp(b2*(x-b3)))) + b4*x + b5``.

    Args:
        x: values (array-like).
        b1: amplitude of the logistic part.
        b2: slope.
        b3: centre.
        b4: slope of the linear part.
        b5: offset.

    Returns:
        float64 array of ``q(x)``.

    Example:
        >>> logistic5([0, 0.5, 1], 2, 3, 0.5, 0.1, 1).round(7).tolist()
        [0.364851, 1.05, 1.735149]
    """
    from scipy.special import expit

    xx = np.asarray(x, dtype=np.float64)
    # 1 / (1 + exp(z)) = expit(-z), without overflow for large |z|
    return b1 * (0.5 - expit(-b2 * (xx - b3))) + b4 * xx + b5


class Logistic5Fit(NamedTuple):
    """A fitted :func:`logistic5` (``params`` in the units of the original metric values).

    Attributes:
        params: ``(b1, b2, b3, b4, b5)``. A linear fallback is ``(0, 0, 0, a, b)``.
        converged: ``False`` when the logistic fit failed and the linear least-squares line was used instead.
    """

    params: tuple[float, float, float, float, float]
    converged: bool

    def __call__(self, x: Any) -> np.ndarray:
        """Evaluate ``q(x)``."""
        return logistic5(x, *self.params)


def _linear_params(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float]:
    a, b = np.polyfit(x, y, 1)
    return (0.0, 0.0, 0.0, float(a), float(b))


def fit_logistic5(
    pred: Any,
    human: Any,
    *,
    maxfev: int = 20000,
    max_points: int = 200_000,
    seed: int = 0,
    p0: tuple[float, float, float, float, float] | None = None,
) -> Logistic5Fit:
    """Least-squares fit of :func:`logistic5` mapping metric values to human scores.

    The metric values are z-scored before the fit (so the fit does not depend on the metric's units) and the
    parameters are mapped back. Start: ``(sign(r) * (max y - min y), 1, 0, 0, mean y)`` with ``r`` the Pearson
    correlation. With more than ``max_points`` samples the fit uses a random subset (``numpy.random.default_rng(seed)``,
    without replacement). If ``scipy.optimize.curve_fit`` fails or gives non-finite parameters, the least-squares
    line is returned with ``converged=False`` and a ``UserWarning``.

    Args:
        pred: 1-D metric values (already oriented).
        human: 1-D human scores.
        maxfev: maximum number of function evaluations of the fit.
        max_points: largest number of samples used by the fit.
        seed: seed of the subset.
        p0: optional start ``(b1, ..., b5)`` in the metric's units (e.g. a previous fit, to warm-start bootstrap
            replicates) instead of the default start.

    Returns:
        :class:`Logistic5Fit`.

    Raises:
        ValueError: fewer than 6 samples (the fit has 5 parameters), lengths differ, non-finite or constant values.

    Example:
        >>> import numpy as np
        >>> x = np.linspace(0, 1, 50)
        >>> f = fit_logistic5(x, logistic5(x, 2, 3, 0.5, 0.1, 1))
        >>> bool(np.abs(f(x) - logistic5(x, 2, 3, 0.5, 0.1, 1)).max() < 1e-6)
        True
    """
    from scipy.optimize import OptimizeWarning, curve_fit

    x, y, _ = paired(pred, human, min_n=6)
    if np.ptp(x) == 0:
        raise ValueError("pred is constant; a logistic fit needs varying metric values.")
    check_int(max_points, "max_points", low=6)
    if len(x) > max_points:
        keep = np.random.default_rng(seed).choice(len(x), size=max_points, replace=False)
        xf, yf = x[keep], y[keep]
    else:
        xf, yf = x, y
    mean, std = float(xf.mean()), float(xf.std())
    if std == 0:
        return Logistic5Fit(_linear_params(x, y), False)
    z = (xf - mean) / std
    r = np.corrcoef(z, yf)[0, 1] if np.ptp(yf) > 0 else 0.0
    if p0 is None:
        start = (float(np.sign(r) or 1.0) * float(np.ptp(yf) or 1.0), 1.0, 0.0, 0.0, float(yf.mean()))
    else:
        b1, b2, b3, b4, b5 = (float(v) for v in p0)
        start = (b1, b2 * std, (b3 - mean) / std, b4 * std, b5 + b4 * mean)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)  # "covariance could not be estimated": not used here
            warnings.simplefilter("ignore", RuntimeWarning)  # exp overflow while exploring steep slopes
            popt, _ = curve_fit(logistic5, z, yf, p0=start, maxfev=int(maxfev))
        ok = bool(np.isfinite(popt).all())
    except (RuntimeError, ValueError) as err:
        ok, reason = False, str(err)
    else:
        reason = "non-finite parameters"
    if not ok:
        warnings.warn(
            f"fit_logistic5: the logistic fit failed ({reason}); using the least-squares line instead.", stacklevel=2
        )
        return Logistic5Fit(_linear_params(xf, yf), False)
    b1, b2, b3, b4, b5 = (float(v) for v in popt)
    return Logistic5Fit((b1, b2 / std, b3 * std + mean, b4 / std, b5 - b4 * mean / std), True)


def _prepare(pred: Any, human: Any, higher_is_better: bool, nan_policy: str, min_n: int = 3):
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"higher_is_better must be True or False, got {higher_is_better!r}.")
    x, y, _ = paired(pred, human, nan_policy=nan_policy, min_n=min_n)
    return (x if higher_is_better else -x), y


def _constant(x: np.ndarray, y: np.ndarray, what: str) -> bool:
    for name, arr in (("pred", x), ("human", y)):
        if np.ptp(arr) == 0:
            warnings.warn(f"{what}: {name} is constant, the statistic is undefined; returning nan.", stacklevel=3)
            return True
    return False


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import pearsonr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(pearsonr(a, b).statistic)


def _fitted(
    x: np.ndarray, y: np.ndarray, fit: str, *, max_points: int = 200_000, seed: int = 0, p0: Any = None,
    maxfev: int = 20000,
) -> Logistic5Fit:  # fmt: skip
    """The fitted mapping q for ``fit`` (``"none"`` is the identity, as ``(0, 0, 0, 1, 0)``)."""
    if fit == "none":
        return Logistic5Fit((0.0, 0.0, 0.0, 1.0, 0.0), True)
    if fit == "linear":
        return Logistic5Fit(_linear_params(x, y), True)
    if len(x) < 6:
        raise ValueError(
            f"fit={fit!r} needs at least 6 samples (5 parameters), got {len(x)}; use fit='none' or fit='linear'."
        )
    q = fit_logistic5(x, y, max_points=max_points, seed=seed, p0=p0, maxfev=maxfev)
    if fit == "logistic5-maxcorr" and q.converged:
        from scipy.optimize import minimize

        def neg_plcc(params: np.ndarray) -> float:
            r = _pearson(logistic5(x, *params), y)
            return -r if math.isfinite(r) else 1.0

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = minimize(neg_plcc, np.asarray(q.params), method="Nelder-Mead")
        if np.isfinite(res.x).all() and res.fun <= neg_plcc(np.asarray(q.params)):
            q = Logistic5Fit(tuple(float(v) for v in res.x), True)
    return q


def plcc(
    pred: Any, human: Any, *, fit: str = "logistic5", higher_is_better: bool = True, nan_policy: str = "raise"
) -> float:
    """Pearson linear correlation between the (fitted) metric values and the human scores.

    Args:
        pred: 1-D metric values (numpy, list or torch tensor).
        human: 1-D human scores, higher = better.
        fit: ``"logistic5"`` (default, the IQA convention), ``"linear"`` (same PLCC as ``"none"``), ``"none"``, or
            ``"logistic5-maxcorr"`` (start from the logistic fit, then Nelder-Mead on the negative PLCC).
        higher_is_better: orientation of the metric; ``False`` negates it first.
        nan_policy: ``"raise"`` or ``"omit"`` (drop pairs with a non-finite value, with a warning).

    Returns:
        PLCC in ``[-1, 1]``; NaN with a ``UserWarning`` for constant inputs.

    Example:
        >>> round(plcc([1, 2, 3, 4, 5], [5, 6, 7, 8, 7], fit="none"), 7)
        0.8320503
    """
    check_choice(fit, "fit", FITS)
    x, y = _prepare(pred, human, higher_is_better, nan_policy)
    if fit.startswith("logistic5") and len(x) < 6:
        raise ValueError(f"fit={fit!r} needs at least 6 samples (5 parameters), got {len(x)}; use fit='none'.")
    if _constant(x, y, "plcc"):
        return math.nan
    q = _fitted(x, y, fit)
    r = _pearson(q(x), y)
    if not math.isfinite(r):
        warnings.warn("plcc: the fitted curve is constant on the data; returning nan.", stacklevel=2)
    return r


def srcc(pred: Any, human: Any, *, higher_is_better: bool = True, nan_policy: str = "raise") -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``, average ranks for ties).

    Example:
        >>> round(srcc([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 7)
        0.8207827
    """
    from scipy.stats import spearmanr

    x, y = _prepare(pred, human, higher_is_better, nan_policy)
    if _constant(x, y, "srcc"):
        return math.nan
    return float(spearmanr(x, y).statistic)


def krcc(
    pred: Any, human: Any, *, variant: str = "b", higher_is_better: bool = True, nan_policy: str = "raise"
) -> float:
    """Kendall rank correlation (``scipy.stats.kendalltau``; tau-b by default, ``variant="c"`` allowed).

    Example:
        >>> round(krcc([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 7)
        0.7378648
    """
    from scipy.stats import kendalltau

    check_choice(variant, "variant", KENDALL_VARIANTS)
    x, y = _prepare(pred, human, higher_is_better, nan_policy)
    if _constant(x, y, "krcc"):
        return math.nan
    return float(kendalltau(x, y, variant=variant).statistic)


def rmse(
    pred: Any, human: Any, *, fit: str = "logistic5", higher_is_better: bool = True, nan_policy: str = "raise"
) -> float:
    """Root mean squared error between the fitted metric values and the human scores (in human units).

    With ``fit="none"`` the raw values are compared, which only means something on the human scale.

    Example:
        >>> rmse([1, 2, 3], [1, 2, 4], fit="none")
        0.5773502691896257
    """
    check_choice(fit, "fit", FITS)
    x, y = _prepare(pred, human, higher_is_better, nan_policy)
    if fit.startswith("logistic5") and np.ptp(x) == 0:
        warnings.warn("rmse: pred is constant, nothing to fit; returning nan.", stacklevel=2)
        return math.nan
    q = _fitted(x, y, fit)
    return float(np.sqrt(np.mean((q(x) - y) ** 2)))


class CorrelationResult(NamedTuple):
    """Result of :func:`correlations`.

    Attributes:
        plcc: PLCC after the fit (pooled, or mean over groups with ``aggregate="mean"``).
        srcc: SRCC.
        krcc: KRCC (tau-b).
        rmse: RMSE after the fit, in human units.
        n: number of samples used (after ``nan_policy="omit"``).
        plcc_std: standard deviation (ddof 0) over groups with ``aggregate="mean"``, else NaN.
        srcc_std: idem for SRCC.
        krcc_std: idem for KRCC.
        per_group: ``{group: {"plcc", "srcc", "krcc", "rmse", "n"}}``; empty without groups.
        fit: the pooled fit (``None`` for ``fit="none"`` and for ``aggregate="mean"``, where each group has its own).
        ci: ``{statistic: (low, high)}`` bootstrap intervals; empty unless requested.
        n_omitted: samples dropped by ``nan_policy="omit"``.
    """

    plcc: float
    srcc: float
    krcc: float
    rmse: float
    n: int
    plcc_std: float
    srcc_std: float
    krcc_std: float
    per_group: dict[str, dict[str, float]]
    fit: Logistic5Fit | None
    ci: dict[str, tuple[float, float]]
    n_omitted: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN written as ``None``)."""
        return _json_ready(
            {
                "plcc": self.plcc,
                "srcc": self.srcc,
                "krcc": self.krcc,
                "rmse": self.rmse,
                "n": self.n,
                "n_omitted": self.n_omitted,
                "plcc_std": self.plcc_std,
                "srcc_std": self.srcc_std,
                "krcc_std": self.krcc_std,
                "per_group": self.per_group,
                "fit_params": list(self.fit.params) if self.fit is not None else None,
                "fit_converged": self.fit.converged if self.fit is not None else None,
                "ci": {k: list(v) for k, v in self.ci.items()},
            }
        )


def _json_ready(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return _json_ready(obj.tolist())
    return obj


def _all_stats(
    x: np.ndarray, y: np.ndarray, fit: str, kendall: str = "b", **fit_kw: Any
) -> tuple[dict[str, float], Any]:
    """Every statistic on oriented samples; constant inputs give NaN (one warning, from the caller)."""
    from scipy.stats import kendalltau, spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"plcc": math.nan, "srcc": math.nan, "krcc": math.nan, "rmse": math.nan}, None
    q = _fitted(x, y, fit, **fit_kw)
    fitted = q(x)
    return {
        "plcc": _pearson(fitted, y),
        "srcc": float(spearmanr(x, y).statistic),
        "krcc": float(kendalltau(x, y, variant=kendall).statistic),
        "rmse": float(np.sqrt(np.mean((fitted - y) ** 2))),
    }, q


def _group_labels(groups: Any, n: int) -> np.ndarray:
    if hasattr(groups, "detach"):
        groups = groups.detach().cpu().numpy()
    g = np.asarray([str(v) for v in np.asarray(groups, dtype=object).reshape(-1)], dtype=object)
    if len(g) != n:
        raise ValueError(f"groups must have one label per sample ({n}), got {len(g)}.")
    return g


def correlations(
    pred: Any,
    human: Any,
    *,
    fit: str = "logistic5",
    higher_is_better: bool = True,
    groups: Any = None,
    aggregate: str = "pooled",
    ci: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    nan_policy: str = "raise",
    show_progress: bool = False,
) -> CorrelationResult:
    """PLCC, SRCC, KRCC and RMSE of a metric against human scores, optionally per group and with bootstrap CIs.

    ``aggregate="pooled"`` computes one statistic over all samples (per-group values are still reported when
    ``groups`` is given); ``aggregate="mean"`` computes each statistic per group (each group with its own fit) and
    reports the mean and the standard deviation (ddof 0) over groups. ``ci`` adds percentile bootstrap intervals
    (:func:`~scenemetrics.agreement.bootstrap_ci`, ``n_boot`` replicates): samples are resampled with replacement,
    or whole groups when ``groups`` is given; with ``aggregate="mean"`` the group statistics are resampled.

    Args:
        pred: 1-D metric values.
        human: 1-D human scores (higher = better).
        fit: ``"none"``, ``"linear"``, ``"logistic5"`` or ``"logistic5-maxcorr"`` (PLCC and RMSE only).
        higher_is_better: orientation of the metric.
        groups: optional length-n labels (scene, image, ...).
        aggregate: ``"pooled"`` or ``"mean"``.
        ci: ``None`` or a confidence level in (0.9, 0.95, 0.99).
        n_boot: bootstrap replicates.
        seed: bootstrap seed.
        nan_policy: ``"raise"`` or ``"omit"``.
        show_progress: progress bar for the bootstrap (shown when it takes over a second).

    Returns:
        :class:`CorrelationResult`.

    Example:
        >>> import numpy as np
        >>> x = np.arange(20.0)
        >>> r = correlations(x, x**2, fit="none", ci=0.95, n_boot=200)
        >>> round(r.srcc, 6), r.n, [round(v, 6) for v in r.ci["srcc"]]
        (1.0, 20, [1.0, 1.0])
    """
    from scenemetrics.agreement.bootstrap import bootstrap_ci

    check_choice(fit, "fit", FITS)
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    check_choice(aggregate, "aggregate", AGGREGATES)
    if ci is not None and ci not in CI_LEVELS:
        raise ValueError(f"ci must be None or one of {CI_LEVELS}, got {ci!r}.")
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"higher_is_better must be True or False, got {higher_is_better!r}.")
    x_raw, y_raw = as_1d(pred, "pred"), as_1d(human, "human")
    if len(x_raw) != len(y_raw):
        raise ValueError(f"pred and human must have the same length, got {len(x_raw)} and {len(y_raw)}.")
    g = _group_labels(groups, len(x_raw)) if groups is not None else None
    ok = np.isfinite(x_raw) & np.isfinite(y_raw)
    if nan_policy == "raise":
        check_finite(x_raw, "pred")
        check_finite(y_raw, "human")
    elif not ok.all():
        warnings.warn(
            f"nan_policy='omit': dropped {int((~ok).sum())} of {len(ok)} pairs with a non-finite value.", stacklevel=2
        )
    x, y = x_raw[ok], y_raw[ok]
    g = g[ok] if g is not None else None
    n_omitted = int((~ok).sum())
    min_n = 6 if fit.startswith("logistic5") else 3
    if len(x) < 3:
        raise ValueError(f"pred and human need at least 3 paired samples, got {len(x)}.")
    if aggregate == "pooled" and len(x) < min_n:
        raise ValueError(f"fit={fit!r} needs at least 6 samples (5 parameters), got {len(x)}; use fit='none'.")
    if aggregate == "mean" and g is None:
        raise ValueError("aggregate='mean' needs groups (one label per sample).")
    x = x if higher_is_better else -x
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        warnings.warn("correlations: pred or human is constant; the statistics are undefined (nan).", stacklevel=2)

    per_group: dict[str, dict[str, float]] = {}
    if g is not None:
        for label in dict.fromkeys(g):  # first-seen order
            m = g == label
            if m.sum() < min_n:
                if aggregate == "mean":
                    raise ValueError(
                        f"group {label!r} has {int(m.sum())} samples; aggregate='mean' with fit={fit!r} needs at "
                        f"least {min_n} per group."
                    )
                per_group[str(label)] = {**dict.fromkeys(STATISTICS, math.nan), "n": int(m.sum())}
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                vals, _ = _all_stats(x[m], y[m], fit)
            per_group[str(label)] = {**vals, "n": int(m.sum())}
        short = [k for k, v in per_group.items() if v["n"] < min_n]
        if short:
            warnings.warn(
                f"correlations: groups {short} have fewer than {min_n} samples; their statistics are nan.", stacklevel=2
            )

    nan = math.nan
    if aggregate == "pooled":
        vals, q = _all_stats(x, y, fit)
        stds = dict.fromkeys(("plcc", "srcc", "krcc"), nan)
    else:
        table = {s: np.array([v[s] for v in per_group.values()]) for s in STATISTICS}
        vals = {s: float(np.nanmean(a)) if np.isfinite(a).any() else nan for s, a in table.items()}
        stds = {s: float(np.nanstd(table[s])) if np.isfinite(table[s]).any() else nan for s in ("plcc", "srcc", "krcc")}
        q = None

    intervals: dict[str, tuple[float, float]] = {}
    if ci is not None:
        if aggregate == "mean":
            for s in STATISTICS:
                col = np.array([v[s] for v in per_group.values()])
                b = bootstrap_ci(_nanmean, col, n=n_boot, seed=seed, level=ci, show_progress=show_progress)
                intervals[s] = (b.low, b.high)
        else:
            # replicates start from the full-data fit (fast, same optimum basin); when that fit fell back to the
            # least-squares line, so do the replicates
            rep_fit, rep_kw = fit, {}
            if fit.startswith("logistic5") and q is not None:
                if q.converged:
                    rep_kw = {"p0": q.params, "maxfev": 2000}
                else:
                    rep_fit = "linear"

            def stat_fn(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
                if np.ptp(xs) == 0 or np.ptp(ys) == 0:
                    return np.full(4, nan)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    return np.array(list(_all_stats(xs, ys, rep_fit, **rep_kw)[0].values()))

            b = bootstrap_ci(stat_fn, x, y, n=n_boot, seed=seed, level=ci, groups=g, show_progress=show_progress)
            for k, s in enumerate(STATISTICS):
                intervals[s] = (float(b.low[k]), float(b.high[k]))

    return CorrelationResult(
        plcc=vals["plcc"],
        srcc=vals["srcc"],
        krcc=vals["krcc"],
        rmse=vals["rmse"],
        n=len(x),
        plcc_std=stds["plcc"],
        srcc_std=stds["srcc"],
        krcc_std=stds["krcc"],
        per_group=per_group,
        fit=q if fit != "none" else None,
        ci=intervals,
        n_omitted=n_omitted,
    )


def _nanmean(a: np.ndarray) -> float:
    return float(np.nanmean(a)) if np.isfinite(a).any() else math.nan


def metric_correlation_matrix(
    scores: Mapping[str, Any], *, higher_is_better: Mapping[str, bool], method: str = "pearson"
) -> tuple[list[str], np.ndarray]:
    """Correlation between every pair of metrics on the same items (OSIM's Fig. 3), lower-is-better ones negated.

    Args:
        scores: ``{metric: 1-D scores}``, all of the same length.
        higher_is_better: ``{metric: bool}`` for every metric.
        method: ``"pearson"``, ``"spearman"`` or ``"kendall"``.

    Returns:
        ``(names, matrix)`` with names in the mapping's order.

    Example:
        >>> names, m = metric_correlation_matrix({"psnr": [1, 2, 3], "lpips": [0.3, 0.2, 0.1]},
        ...                                      higher_is_better={"psnr": True, "lpips": False})
        >>> names, m.round(6).tolist()
        (['psnr', 'lpips'], [[1.0, 1.0], [1.0, 1.0]])
    """
    from scipy.stats import kendalltau, pearsonr, spearmanr

    funcs: dict[str, Callable[..., Any]] = {"pearson": pearsonr, "spearman": spearmanr, "kendall": kendalltau}
    check_choice(method, "method", tuple(funcs))
    names = list(scores)
    if len(names) < 1:
        raise ValueError("scores is empty; give at least one metric.")
    cols = []
    for name in names:
        if name not in higher_is_better:
            raise ValueError(f"higher_is_better has no entry for metric {name!r}.")
        v = as_1d(scores[name], f"scores[{name!r}]")
        check_finite(v, f"scores[{name!r}]")
        cols.append(v if higher_is_better[name] else -v)
    n = len(cols[0])
    for name, c in zip(names, cols, strict=False):
        if len(c) != n:
            raise ValueError(f"scores[{name!r}] has {len(c)} values, the first metric has {n}.")
    if n < 3:
        raise ValueError(f"metric_correlation_matrix needs at least 3 items, got {n}.")
    k = len(names)
    mat = np.full((k, k), np.nan)
    for a in range(k):
        for b in range(a, k):
            if np.ptp(cols[a]) == 0 or np.ptp(cols[b]) == 0:
                continue
            mat[a, b] = mat[b, a] = float(funcs[method](cols[a], cols[b]).statistic)
    if np.isnan(mat).any():
        warnings.warn("metric_correlation_matrix: a constant metric gives nan entries.", stacklevel=2)
    return names, mat
