"""Agreement of metrics with pairwise human preferences, majority votes and rater reliability.

Comparisons are the wireframe room's arrays: ``(K, 3)`` rows ``(i, j, y)`` (``y = 1`` if item ``i`` was preferred,
``0`` if ``j`` was, ``0.5`` for "equal"), extended with a house (scene, object, ...) and a rater column to
``(K, 4)`` rows ``(house, i, j, y)`` or ``(K, 5)`` rows ``(rater, house, i, j, y)``. The agreement rule is
:func:`scenemetrics.wireframe.agreement`'s: same answer 1 point, "equal" against a decisive answer 1/2, opposite 0.

Example:
    >>> import numpy as np
    >>> from scenemetrics.agreement import pairwise_agreement
    >>> comps = np.array([[0, 0, 0, 1, 1], [0, 0, 1, 2, 0.5], [1, 0, 0, 2, 0]])
    >>> pairwise_agreement(np.array([0.9, 0.5, 0.1]), comps, higher_is_better=True).pooled
    0.5
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.agreement._checks import as_1d, check_finite, comparison_table, to_numpy
from scenemetrics.checks import check_choice, check_int

__all__ = [
    "PairwiseAgreement",
    "easy_pair_accuracy",
    "majority_error_probability",
    "majority_vote",
    "pairwise_agreement",
    "rank_concordance",
    "rater_agreement",
    "self_consistency",
    "vote_correlation",
]

TIE_RULES = ("half", "wrong", "right")
VOTE_KINDS = ("sign", "margin")


class PairwiseAgreement(NamedTuple):
    """Result of :func:`pairwise_agreement`.

    Attributes:
        agreement: mean over raters of each rater's agreement with the metric (the "average agreement"); equals
            ``pooled`` when ``by=None``.
        pooled: agreement over all judgments together.
        per_rater: ``{rater: agreement}`` (rater ids as strings, or names when given).
        n: judgments used (after ``drop_ties``).
        n_human_ties: judgments where the rater said "equal" (before ``drop_ties``).
        n_metric_ties: judgments where the metric scores tie within ``tie_tol`` (before ``drop_ties``).
    """

    agreement: float
    pooled: float
    per_rater: dict[str, float]
    n: int
    n_human_ties: int
    n_metric_ties: int


def _score_lookup(metric_scores: Any, houses: np.ndarray, items_i: np.ndarray, items_j: np.ndarray, names: Any):
    """Scores of both items of every judgment; a missing score raises naming ``(house, item)``."""
    house_names = list(getattr(names, "houses", None) or [])
    item_names = list(getattr(names, "items", None) or [])

    def label(h: int, it: int) -> tuple[Any, Any]:
        return (
            house_names[h] if h < len(house_names) else h,
            item_names[it] if it < len(item_names) else it,
        )

    if isinstance(metric_scores, Mapping):

        def get(h: int, it: int) -> float:
            for key in ((h, it), label(h, it)):
                if key in metric_scores:
                    return float(metric_scores[key])
            raise ValueError(f"metric_scores has no score for (house, item) = {label(h, it)}.")

        cache: dict[tuple[int, int], float] = {}
        out = []
        for col in (items_i, items_j):
            vals = np.empty(len(col))
            for k, (h, it) in enumerate(zip(houses.tolist(), col.tolist(), strict=False)):
                if (h, it) not in cache:
                    cache[(h, it)] = get(h, it)
                vals[k] = cache[(h, it)]
            out.append(vals)
        sa, sb = out
    else:
        arr = to_numpy(metric_scores, "metric_scores")
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise ValueError(f"metric_scores must be (n_houses, n_items), 1-D, or a mapping, got shape {arr.shape}.")
        for col in (items_i, items_j):
            bad = (houses >= arr.shape[0]) | (col >= arr.shape[1])
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"metric_scores of shape {arr.shape} has no score for (house, item) = "
                    f"{label(int(houses[k]), int(col[k]))}."
                )
        sa, sb = arr[houses, items_i], arr[houses, items_j]
    for vals, col in ((sa, items_i), (sb, items_j)):
        bad = ~np.isfinite(vals)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"metric_scores for (house, item) = {label(int(houses[k]), int(col[k]))} is {vals[k]}, not finite."
            )
    return sa, sb


def pairwise_agreement(
    metric_scores: Any,
    comparisons: Any,
    *,
    higher_is_better: bool,
    tie_tol: float = 0.0,
    drop_ties: bool = False,
    by: str | None = "rater",
) -> PairwiseAgreement:
    """Agreement of a metric's preferences with human pairwise judgments.

    For each judgment ``(rater, house, i, j, y)`` the metric's outcome is
    :func:`scenemetrics.wireframe.preferences_from_scores` of the two items' scores in that house, and the points
    follow :func:`scenemetrics.wireframe.agreement`. ``drop_ties=True`` keeps only judgments where neither the rater
    nor the metric said "equal" (the "no ties" table; then the value is the 2AFC accuracy).

    Args:
        metric_scores: ``{(house, item): score}`` (ids, or names when ``comparisons`` carries them), or an array
            ``(n_houses, n_items)`` (one house: 1-D).
        comparisons: ``(K, 3)``, ``(K, 4)`` or ``(K, 5)`` comparison rows (see the module doc), or
            :func:`~scenemetrics.agreement.read_comparisons`' result.
        higher_is_better: orientation of the metric.
        tie_tol: score differences up to this are a metric "equal".
        drop_ties: leave out judgments with a tie on either side.
        by: ``"rater"`` (also report the mean of per-rater agreements) or ``None`` (pooled only).

    Returns:
        :class:`PairwiseAgreement`.

    Example:
        >>> comps = [[0, 1, 1], [1, 2, 1], [0, 2, 0.5]]
        >>> pairwise_agreement([3.0, 2.0, 1.0], comps, higher_is_better=True).agreement
        0.8333333333333334
    """
    from scenemetrics.wireframe import agreement, preferences_from_scores

    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"higher_is_better must be True or False, got {higher_is_better!r}.")
    if by not in ("rater", None):
        raise ValueError(f"by must be 'rater' or None, got {by!r}.")
    t = comparison_table(comparisons)
    rater, house = t[:, 0].astype(np.int64), t[:, 1].astype(np.int64)
    i, j, y = t[:, 2].astype(np.int64), t[:, 3].astype(np.int64), t[:, 4]
    sa, sb = _score_lookup(metric_scores, house, i, j, comparisons)
    m = preferences_from_scores(sa, sb, higher_is_better=bool(higher_is_better), tie_tol=tie_tol)
    used = ~((m == 0.5) | (y == 0.5)) if drop_ties else np.ones(len(y), dtype=bool)
    pooled = agreement(m, y, drop_ties=drop_ties)
    rater_names = list(getattr(comparisons, "raters", None) or [])
    per_rater: dict[str, float] = {}
    if by == "rater":
        for r in np.unique(rater):
            rows = rater == r
            name = rater_names[r] if r < len(rater_names) else str(int(r))
            if drop_ties and not used[rows].any():
                per_rater[name] = math.nan
                continue
            per_rater[name] = agreement(m[rows], y[rows], drop_ties=drop_ties)
        vals = np.array(list(per_rater.values()))
        mean = float(np.nanmean(vals)) if np.isfinite(vals).any() else math.nan
    else:
        mean = pooled
    return PairwiseAgreement(
        agreement=mean,
        pooled=pooled,
        per_rater=per_rater,
        n=int(used.sum()),
        n_human_ties=int((y == 0.5).sum()),
        n_metric_ties=int((m == 0.5).sum()),
    )


def _normalised(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Orientation normalised to ``i < j``: returns ``(lo, hi, y_lo)`` with ``y`` flipped where swapped."""
    i, j, y = t[:, 2].astype(np.int64), t[:, 3].astype(np.int64), t[:, 4]
    swap = i > j
    return np.where(swap, j, i), np.where(swap, i, j), np.where(swap, 1.0 - y, y)


def majority_vote(comparisons: Any, *, min_votes: int = 1) -> np.ndarray:
    """Majority outcome per (house, unordered pair) over all raters' judgments.

    Args:
        comparisons: comparison rows (see the module doc).
        min_votes: pairs with fewer judgments are left out of the result.

    Returns:
        ``(P, 6)`` float64 rows ``(house, i, j, y_major, n_votes, share_i)`` with ``i < j``;
        ``share_i = (wins of i + 0.5 * ties) / votes`` and ``y_major`` = 1 if ``share_i > 0.5``, 0 if ``< 0.5``,
        else 0.5. Rows sorted by (house, i, j).

    Example:
        >>> majority_vote([[0, 0, 1, 2, 1], [1, 0, 2, 1, 1], [2, 0, 1, 2, 1]]).tolist()
        [[0.0, 1.0, 2.0, 1.0, 3.0, 0.6666666666666666]]
    """
    check_int(min_votes, "min_votes", low=1)
    t = comparison_table(comparisons)
    lo, hi, ylo = _normalised(t)
    keys = np.column_stack([t[:, 1], lo, hi])
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    votes = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
    share = np.bincount(inv, weights=ylo, minlength=len(uniq)) / votes
    y_major = np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, 0.5))
    out = np.column_stack([uniq, y_major, votes, share])
    return out[votes >= min_votes]


def majority_error_probability(n_raters: Any, p_correct: Any, *, ties: str = "half") -> Any:
    """Probability that the majority of ``n_raters`` independent raters is wrong, each right with ``p_correct``.

    With ``X ~ Binomial(N, 1 - p)`` wrong votes: ``P(X > N/2)`` plus, for even ``N``, the tie mass ``P(X = N/2)``
    times 1/2 (``ties="half"``), 1 (``"wrong"``) or 0 (``"right"``). Vectorised over array inputs.

    Args:
        n_raters: number of raters (integer >= 1, or an array of them).
        p_correct: probability that one rater is right, in [0, 1] (or an array).
        ties: how a tied vote counts.

    Returns:
        A float, or an array for array inputs.

    Example:
        >>> round(majority_error_probability(11, 0.8), 9), round(majority_error_probability(17, 0.8), 9)
        (0.011654205, 0.002581463)
    """
    from scipy.stats import binom

    check_choice(ties, "ties", TIE_RULES)
    n = np.asarray(n_raters)
    p = np.asarray(p_correct, dtype=np.float64)
    if n.dtype == bool or not np.issubdtype(n.dtype, np.number) or np.any(n != np.round(n)) or np.any(n < 1):
        raise ValueError(f"n_raters must be integers >= 1, got {n_raters!r}.")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"p_correct must be in [0, 1], got {p_correct!r}.")
    n = n.astype(np.int64)
    q = 1.0 - p
    above = binom.sf(np.floor(n / 2), n, q)  # P(X > N/2) = P(X > floor(N/2)) for both parities
    weight = {"half": 0.5, "wrong": 1.0, "right": 0.0}[ties]
    tie = np.where(n % 2 == 0, binom.pmf(n // 2, n, q), 0.0)
    out = above + weight * tie
    return float(out) if np.ndim(out) == 0 else out


def vote_correlation(
    metric_a: Any,
    metric_b: Any,
    votes: Any,
    *,
    higher_is_better: bool,
    kind: str = "sign",
    tie_tol: float = 0.0,
) -> float:
    """Pearson correlation between a metric's pairwise preferences and human majority votes (PRISM's Table 3).

    ``kind="sign"``: Pearson between ``sign(delta)`` in {-1, 0, 1} (``delta`` = oriented score of A minus B,
    ``|delta| <= tie_tol`` counts 0) and ``2 * vote - 1`` in {-1, 0, 1} (the phi coefficient for decisive pairs).
    ``kind="margin"``: Pearson between ``delta`` and ``share_A - 0.5``.

    Args:
        metric_a: 1-D scores of candidate A per comparison.
        metric_b: 1-D scores of candidate B.
        votes: per comparison, the majority outcome in {1 (A), 0 (B), 0.5 (tie)} or A's vote share in [0, 1]
            (the majority is taken for ``kind="sign"``).
        higher_is_better: orientation of the metric.
        kind: ``"sign"`` or ``"margin"``.
        tie_tol: score differences up to this count as a metric tie.

    Returns:
        The correlation; NaN with a warning when either side is constant.

    Example:
        >>> r = vote_correlation([0.9, 0.2, 0.7, 0.1], [0.1, 0.8, 0.3, 0.5], [1, 0, 1, 1], higher_is_better=True)
        >>> round(r, 6)
        0.57735
    """
    from scipy.stats import pearsonr

    check_choice(kind, "kind", VOTE_KINDS)
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ValueError(f"higher_is_better must be True or False, got {higher_is_better!r}.")
    if not (isinstance(tie_tol, (int, float)) and math.isfinite(tie_tol) and tie_tol >= 0):
        raise ValueError(f"tie_tol must be a finite number >= 0, got {tie_tol!r}.")
    a, b, v = as_1d(metric_a, "metric_a"), as_1d(metric_b, "metric_b"), as_1d(votes, "votes")
    if not (len(a) == len(b) == len(v)):
        raise ValueError(f"metric_a, metric_b and votes must have the same length, got {len(a)}, {len(b)}, {len(v)}.")
    if len(a) < 3:
        raise ValueError(f"vote_correlation needs at least 3 comparisons, got {len(a)}.")
    for arr, name in ((a, "metric_a"), (b, "metric_b"), (v, "votes")):
        check_finite(arr, name)
    if np.any(v < 0) or np.any(v > 1):
        k = int(np.flatnonzero((v < 0) | (v > 1))[0])
        raise ValueError(f"votes[{k}] = {v[k]}: votes must be outcomes in {{0, 0.5, 1}} or vote shares in [0, 1].")
    delta = a - b if higher_is_better else b - a
    if kind == "sign":
        left = np.where(delta > tie_tol, 1.0, np.where(delta < -tie_tol, -1.0, 0.0))
        right = np.sign(v - 0.5)
    else:
        left, right = delta, v - 0.5
    if np.ptp(left) == 0 or np.ptp(right) == 0:
        warnings.warn("vote_correlation: metric preferences or votes are constant; returning nan.", stacklevel=2)
        return math.nan
    return float(pearsonr(left, right).statistic)


def _repeat_points(t: np.ndarray) -> np.ndarray:
    """Agreement points between the first judgment and every later one of the same (rater, house, unordered pair)."""
    lo, hi, ylo = _normalised(t)
    keys = np.column_stack([t[:, 0], t[:, 1], lo, hi])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    first: dict[int, float] = {}
    pts = []
    for g, yy in zip(inv.tolist(), ylo.tolist(), strict=False):
        if g not in first:
            first[g] = yy
            continue
        y0 = first[g]
        pts.append(1.0 if yy == y0 else (0.5 if 0.5 in (yy, y0) else 0.0))
    return np.asarray(pts, dtype=np.float64)


def self_consistency(comparisons: Any) -> float:
    """Agreement of raters with themselves on repeated pairs (the same rater, house and unordered pair).

    Per repeat group, the first judgment is compared with each later one (orientation normalised, agreement
    points 1 / 0.5 / 0); the result is the mean over all such pairs. No repeated pair: NaN and a warning.

    Example:
        >>> self_consistency([[0, 0, 1, 2, 1], [0, 0, 2, 1, 0], [0, 0, 1, 2, 0.5]])
        0.75
    """
    pts = _repeat_points(comparison_table(comparisons))
    if len(pts) == 0:
        warnings.warn("self_consistency: no rater judged the same pair twice; returning nan.", stacklevel=2)
        return math.nan
    return float(pts.mean())


def easy_pair_accuracy(comparisons: Any, names: Any) -> float:
    """Accuracy on "easy" pairs: ``{kind}_low`` against ``{kind}_high`` of the same corruption kind.

    The low-severity item should be preferred (1 point), "equal" counts 1/2, the high one 0. No easy pair: NaN and
    a warning.

    Args:
        comparisons: comparison rows (see the module doc).
        names: item id -> name (a sequence indexed by id, or a mapping).

    Example:
        >>> easy_pair_accuracy([[0, 1, 1], [1, 0, 0.5], [0, 2, 1]], ["add_low", "add_high", "gt"])
        0.75
    """
    t = comparison_table(comparisons)
    if isinstance(names, Mapping):
        lookup = {int(k): str(v) for k, v in names.items()}
    elif isinstance(names, Sequence) and not isinstance(names, str):
        lookup = {k: str(v) for k, v in enumerate(names)}
    else:
        raise ValueError(f"names must map item ids to names (a sequence or a mapping), got {type(names).__name__}.")

    def split(item: int) -> tuple[str, str] | None:
        name = lookup.get(item)
        if name is None:
            raise ValueError(f"names has no entry for item id {item}.")
        base, _, level = name.rpartition("_")
        return (base, level) if base and level in ("low", "high") else None

    pts = []
    for i, j, y in zip(t[:, 2].astype(int).tolist(), t[:, 3].astype(int).tolist(), t[:, 4].tolist(), strict=False):
        a, b = split(i), split(j)
        if a is None or b is None or a[0] != b[0] or a[1] == b[1]:
            continue
        pts.append(y if a[1] == "low" else 1.0 - y)
    if not pts:
        warnings.warn(
            "easy_pair_accuracy: no comparison of {kind}_low against {kind}_high; returning nan.", stacklevel=2
        )
        return math.nan
    return float(np.mean(pts))


def rank_concordance(scores: Mapping[str, Any], *, higher_is_better: Any) -> dict[tuple[str, str], float]:
    """Kendall tau-b between the rankings given by every pair of score vectors over the same models.

    Args:
        scores: ``{name: 1-D scores}`` (e.g. one vector per dataset), all of the same length.
        higher_is_better: one bool for all vectors, or ``{name: bool}``.

    Returns:
        ``{(name_a, name_b): tau_b}`` for every pair in the mapping's order.

    Example:
        >>> tau = rank_concordance({"a": [1, 2, 3], "b": [1, 3, 2]}, higher_is_better=False)
        >>> {k: round(v, 6) for k, v in tau.items()}
        {('a', 'b'): 0.333333}
    """
    from scipy.stats import kendalltau

    names = list(scores)
    if len(names) < 2:
        raise ValueError("rank_concordance needs at least two score vectors.")
    vecs = {}
    for name in names:
        if isinstance(higher_is_better, Mapping):
            if name not in higher_is_better:
                raise ValueError(f"higher_is_better has no entry for {name!r}.")
            hib = higher_is_better[name]
        else:
            hib = higher_is_better
        if not isinstance(hib, (bool, np.bool_)):
            raise ValueError(f"higher_is_better must be True/False (or a mapping of them), got {hib!r}.")
        v = as_1d(scores[name], f"scores[{name!r}]")
        check_finite(v, f"scores[{name!r}]")
        vecs[name] = v if hib else -v
    n = len(vecs[names[0]])
    for name in names:
        if len(vecs[name]) != n:
            raise ValueError(f"scores[{name!r}] has {len(vecs[name])} values, scores[{names[0]!r}] has {n}.")
    out = {}
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            out[(names[a], names[b])] = float(kendalltau(vecs[names[a]], vecs[names[b]]).statistic)
    return out


def rater_agreement(comparisons: Any, *, drop_ties: bool = False) -> tuple[list[str], np.ndarray]:
    """Agreement between every two raters on the pairs both judged (first judgment per pair, orientation normalised).

    The mean of the off-diagonal entries is the human-human agreement a metric can be compared with.

    Returns:
        ``(rater names, matrix)`` from :func:`scenemetrics.wireframe.agreement_matrix`.

    Example:
        >>> names, m = rater_agreement([[0, 0, 0, 1, 1], [1, 0, 1, 0, 0], [2, 0, 0, 1, 0.5]])
        >>> names, m.tolist()
        (['0', '1', '2'], [[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]])
    """
    from scenemetrics.wireframe import agreement_matrix

    t = comparison_table(comparisons)
    lo, hi, ylo = _normalised(t)
    keys = np.column_stack([t[:, 1], lo, hi])
    _, pair = np.unique(keys, axis=0, return_inverse=True)
    pair = pair.reshape(-1)
    raters = np.unique(t[:, 0].astype(np.int64))
    given = list(getattr(comparisons, "raters", None) or [])
    outcomes: dict[str, np.ndarray] = {}
    for r in raters:
        o = np.full(pair.max() + 1, np.nan)
        rows = np.flatnonzero(t[:, 0] == r)[::-1]  # reversed so the first judgment is written last and wins
        o[pair[rows]] = ylo[rows]
        outcomes[given[r] if r < len(given) else str(int(r))] = o
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # raters without a common pair: nan entries
        return agreement_matrix(outcomes, drop_ties=drop_ties)
