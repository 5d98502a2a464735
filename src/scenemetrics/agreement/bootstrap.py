"""Bootstrap confidence intervals and the Kendall-tau stability study of a ranking built from human judgments.

Example:
    >>> import numpy as np
    >>> from scenemetrics.agreement import bootstrap_ci
    >>> ci = bootstrap_ci(np.mean, np.arange(100.0), n=500, seed=0)
    >>> bool(ci.low < 49.5 < ci.high), ci.n_valid
    (True, 500)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.agreement._checks import comparison_table, to_numpy
from scenemetrics.checks import check_choice, check_int, check_number

__all__ = ["BootstrapCI", "StabilityResult", "bootstrap_ci", "kendall_stability"]

METHODS = ("percentile", "bca")
UNITS = ("rater", "house", "comparison")
CRITERIA = ("mean", "low")


class BootstrapCI(NamedTuple):
    """Result of :func:`bootstrap_ci`.

    Attributes:
        estimate: the statistic on the full data (an array when ``stat_fn`` returns several statistics).
        low: lower end of the interval.
        high: upper end.
        level: confidence level.
        n: replicates drawn.
        n_valid: replicates with a finite statistic (the interval uses only these).
        samples: the replicate statistics, ``(n,)`` or ``(n, k)``.
    """

    estimate: Any
    low: Any
    high: Any
    level: float
    n: int
    n_valid: int
    samples: np.ndarray


def _progress(it: Iterable, total: int, desc: str, show: bool) -> Iterable:
    if not show:
        return it
    import sys

    from tqdm.auto import tqdm

    # delay=1: the bar only appears for loops that run longer than a second
    return tqdm(it, total=total, desc=desc, delay=1.0, file=sys.stderr)


def bootstrap_ci(
    stat_fn: Callable[..., Any],
    *arrays: Any,
    n: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: str = "percentile",
    groups: Any = None,
    show_progress: bool = False,
) -> BootstrapCI:
    """Paired bootstrap confidence interval of ``stat_fn(*arrays)``.

    Every replicate draws one index vector ``rng.integers(0, m, m)`` (``rng = numpy.random.default_rng(seed)``)
    and applies it to axis 0 of every array, so paired samples stay paired. With ``groups`` whole groups are
    resampled with replacement and their members concatenated (cluster bootstrap). ``method="percentile"`` takes
    the quantiles ``(1 - level)/2`` and ``(1 + level)/2`` of the finite replicate values (a warning when fewer than
    90 % are finite); ``method="bca"`` delegates to ``scipy.stats.bootstrap(method="BCa")`` (no groups).
    ``stat_fn`` may return one number or a 1-D array of statistics (then estimate/low/high are arrays).

    Args:
        stat_fn: statistic of the arrays.
        *arrays: one or more arrays with the same length on axis 0.
        n: number of replicates.
        seed: seed (or ``numpy.random.Generator``).
        level: confidence level in (0, 1).
        method: ``"percentile"`` or ``"bca"``.
        groups: optional length-m labels for a cluster bootstrap.
        show_progress: show a progress bar when the loop takes longer than a second.

    Returns:
        :class:`BootstrapCI`.

    Example:
        >>> ci = bootstrap_ci(lambda a: a.mean(), np.ones(10), n=50)
        >>> (ci.estimate, ci.low, ci.high)
        (1.0, 1.0, 1.0)
    """
    n = check_int(n, "n", low=1)
    check_number(level, "level", low=0, high=1, low_open=True, high_open=True)
    check_choice(method, "method", METHODS)
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array.")
    arrs = [to_numpy(a, f"arrays[{k}]") if not isinstance(a, np.ndarray) else a for k, a in enumerate(arrays)]
    m = len(arrs[0]) if arrs[0].ndim else 0
    for k, a in enumerate(arrs):
        if a.ndim == 0 or len(a) != m:
            raise ValueError(
                f"arrays must share their length on axis 0; arrays[0] has {m}, arrays[{k}] has shape {a.shape}."
            )
    if m < 1:
        raise ValueError("bootstrap_ci needs at least one sample.")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    estimate = np.asarray(stat_fn(*arrs), dtype=np.float64)

    if method == "bca":
        if groups is not None:
            raise ValueError("method='bca' does not support groups; use method='percentile' for a cluster bootstrap.")
        import inspect

        from scipy.stats import bootstrap

        seed_kw = "rng" if "rng" in inspect.signature(bootstrap).parameters else "random_state"  # scipy < 1.15
        res = bootstrap(
            tuple(arrs), stat_fn, paired=True, vectorized=False, method="BCa", n_resamples=n,
            confidence_level=level, **{seed_kw: rng},
        )  # fmt: skip
        samples = np.asarray(res.bootstrap_distribution, dtype=np.float64)
        samples = samples.T if samples.ndim == 2 else samples
        low, high = np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)
        n_valid = int(np.isfinite(samples).all(axis=-1).sum()) if samples.ndim == 2 else int(np.isfinite(samples).sum())
        return _result(estimate, low, high, level, n, n_valid, samples)

    if groups is not None:
        labels = np.asarray([str(v) for v in np.asarray(groups, dtype=object).reshape(-1)], dtype=object)
        if len(labels) != m:
            raise ValueError(f"groups must have one label per sample ({m}), got {len(labels)}.")
        uniq, codes = np.unique(labels, return_inverse=True)
        members = [np.flatnonzero(codes == c) for c in range(len(uniq))]
    samples_list = []
    for _ in _progress(range(n), n, "bootstrap", show_progress):
        if groups is None:
            idx = rng.integers(0, m, m)
        else:
            pick = rng.integers(0, len(members), len(members))
            idx = np.concatenate([members[p] for p in pick])
        samples_list.append(np.asarray(stat_fn(*(a[idx] for a in arrs)), dtype=np.float64))
    samples = np.stack(samples_list)
    finite = np.isfinite(samples) if samples.ndim == 1 else np.isfinite(samples).all(axis=1)
    n_valid = int(finite.sum())
    if n_valid < 0.9 * n:
        warnings.warn(
            f"bootstrap_ci: only {n_valid} of {n} replicates gave a finite statistic; the interval uses those.",
            stacklevel=2,
        )
    q = ((1 - level) / 2, (1 + level) / 2)
    if n_valid == 0:
        low = high = np.full(estimate.shape, math.nan)
    else:
        low, high = np.quantile(samples[finite], q, axis=0)
    return _result(estimate, low, high, level, n, n_valid, samples)


def _result(estimate, low, high, level, n, n_valid, samples) -> BootstrapCI:
    def out(v: Any) -> Any:
        a = np.asarray(v, dtype=np.float64)
        return float(a) if a.ndim == 0 else a

    return BootstrapCI(out(estimate), out(low), out(high), float(level), n, n_valid, samples)


class StabilityResult(NamedTuple):
    """Result of :func:`kendall_stability`.

    Attributes:
        unit: ``"rater"``, ``"house"`` or ``"comparison"``.
        sizes: subsample sizes.
        tau_mean: mean Kendall tau-b per size.
        tau_low: lower percentile of tau per size.
        tau_high: upper percentile.
        min_size: smallest size from which the criterion stays >= threshold at every larger size (``None`` if never).
        threshold: the threshold used.
        criterion: ``"mean"`` or ``"low"``.
    """

    unit: str
    sizes: np.ndarray
    tau_mean: np.ndarray
    tau_low: np.ndarray
    tau_high: np.ndarray
    min_size: int | None
    threshold: float = 0.95
    criterion: str = "mean"


def kendall_stability(
    table: Any,
    *,
    unit: str = "rater",
    sizes: Any = None,
    n: int = 500,
    seed: int = 0,
    level: float = 0.95,
    threshold: float = 0.95,
    criterion: str = "mean",
    show_progress: bool = False,
) -> StabilityResult:
    """How many raters, houses or comparisons are enough for a stable ranking ("Do we label enough?").

    For each size ``s`` and each of ``n`` replicates, ``s`` distinct units are drawn without replacement
    (``unit="comparison"``: ``s`` comparisons per rater; a rater with fewer keeps all of theirs), the items are
    ranked by :func:`scenemetrics.wireframe.win_rates` on the kept comparisons (pooled over raters and houses), and
    Kendall's tau-b against the ranking from all comparisons is taken over the items compared in both. The
    interval is the ``level`` percentile range of the ``n`` tau values.

    Args:
        table: comparisons, ``(K, 5)`` rows ``(rater, house, i, j, y)`` (or what
            :func:`~scenemetrics.agreement.read_comparisons` returns).
        unit: ``"rater"``, ``"house"`` or ``"comparison"``.
        sizes: sizes to test (default: every 1..U for raters/houses; 30 sizes from 100 to the largest per-rater
            count for comparisons).
        n: replicates per size.
        seed: seed.
        level: percentile range of the interval.
        threshold: tau the ranking must reach.
        criterion: ``"mean"`` (mean tau) or ``"low"`` (interval's lower end) compared with ``threshold``.
        show_progress: progress bar when the study takes longer than a second.

    Returns:
        :class:`StabilityResult`.

    Example:
        >>> t = np.array([[r, 0, i, j, 1.0] for r in range(3) for i in range(4) for j in range(i + 1, 4)])
        >>> res = kendall_stability(t, unit="rater", n=20)
        >>> res.sizes.tolist(), res.tau_mean.tolist(), res.min_size
        ([1, 2, 3], [1.0, 1.0, 1.0], 1)
    """
    from scipy.stats import kendalltau

    from scenemetrics.wireframe import win_rates

    check_choice(unit, "unit", UNITS)
    check_choice(criterion, "criterion", CRITERIA)
    n = check_int(n, "n", low=1)
    check_number(level, "level", low=0, high=1, low_open=True, high_open=True)
    t = comparison_table(table, "table")
    n_items = int(t[:, 2:4].max()) + 1
    full = win_rates(t[:, 2:], n_items)
    raters = t[:, 0].astype(np.int64)
    if unit == "comparison":
        counts = np.bincount(raters)
        units = int(counts.max())
        default = np.unique(np.round(np.linspace(min(100, units), units, 30)).astype(np.int64))
        # position of each sorted row inside its rater's block (rows sorted by rater)
        block_offset = np.arange(len(t)) - np.repeat(np.cumsum(counts) - counts, counts)
    else:
        col = 0 if unit == "rater" else 1
        labels = np.unique(t[:, col].astype(np.int64))
        codes = np.searchsorted(labels, t[:, col].astype(np.int64))
        units = len(labels)
        default = np.arange(1, units + 1)
    size_arr = default if sizes is None else np.asarray(sizes).reshape(-1)
    if size_arr.size == 0 or np.any(size_arr != np.round(size_arr)) or size_arr.min() < 1 or size_arr.max() > units:
        raise ValueError(f"sizes must be integers in [1, {units}] (the number of {unit} units), got {sizes!r}.")
    size_arr = size_arr.astype(np.int64)
    rng = np.random.default_rng(seed)

    def tau(rows: np.ndarray) -> float:
        wr = win_rates(t[rows, 2:], n_items)
        ok = np.isfinite(wr) & np.isfinite(full)
        if ok.sum() < 2 or np.ptp(wr[ok]) == 0 or np.ptp(full[ok]) == 0:
            return math.nan
        return float(kendalltau(wr[ok], full[ok]).statistic)

    taus = np.full((len(size_arr), n), np.nan)
    steps = ((k, r) for k in range(len(size_arr)) for r in range(n))
    for k, r in _progress(steps, len(size_arr) * n, f"stability ({unit})", show_progress):
        s = int(size_arr[k])
        if unit == "comparison":
            # random key per row, then rank within each rater: keeps s random comparisons per rater
            order = np.lexsort((rng.random(len(t)), raters))
            pos = np.empty(len(t), dtype=np.int64)
            pos[order] = block_offset
            rows = pos < s
        else:
            chosen = rng.choice(units, size=s, replace=False)
            rows = np.isin(codes, chosen)
        taus[k, r] = tau(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN sizes give NaN
        mean = np.nanmean(taus, axis=1)
        low = np.nanquantile(taus, (1 - level) / 2, axis=1)
        high = np.nanquantile(taus, (1 + level) / 2, axis=1)
    if np.isnan(taus).any():
        warnings.warn(
            f"kendall_stability: {int(np.isnan(taus).sum())} replicates had fewer than 2 rankable items (nan, "
            "left out of the means and intervals).",
            stacklevel=2,
        )
    crit = mean if criterion == "mean" else low
    ok = np.nan_to_num(crit, nan=-np.inf) >= threshold
    order = np.argsort(size_arr)
    min_size = None
    for pos_k in range(len(order) - 1, -1, -1):  # walk down from the largest size while the criterion holds
        if not ok[order[pos_k]]:
            break
        min_size = int(size_arr[order[pos_k]])
    return StabilityResult(unit, size_arr, mean, low, high, min_size, float(threshold), criterion)
