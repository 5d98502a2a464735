"""Preference analysis tools (paper Sec. 4, Table 1): win rates, Bradley-Terry, Elo, quality factor, agreement.

Comparisons are ``(K, 3)`` rows ``(i, j, y)``: item ids ``i != j`` (non-negative integers, stored as ints or
integral floats), ``y = 1`` if ``i`` was preferred, ``0`` if ``j`` was, ``0.5`` for "equal". Outcomes of two raters
(or metrics) on the same pairs are arrays in ``{1, 0.5, 0}``, NaN meaning "not rated".

Example:
    >>> import numpy as np
    >>> comps = np.array([[0, 1, 1], [0, 1, 1], [1, 2, 0.5], [2, 0, 0]])
    >>> win_rates(comps).tolist()
    [1.0, 0.16666666666666666, 0.25]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.checks import check_choice, check_int, check_number, check_positive

__all__ = [
    "BTResult",
    "agreement",
    "agreement_matrix",
    "bradley_terry",
    "elo",
    "implied_win_rates",
    "preferences_from_scores",
    "quality_factor",
    "win_rate_matrix",
    "win_rates",
]


class BTResult(NamedTuple):
    """Result of :func:`bradley_terry`.

    Attributes:
        theta: natural-log abilities, zero mean over the compared items (NaN for items never compared).
        ratings: ``offset + scale * theta``.
        loss: final objective (mean binary cross-entropy, plus the L2 term).
        n_steps: Adam steps taken.
        implied_win_rates: :func:`implied_win_rates` of ``theta``.
        elo: :func:`elo` of ``theta`` (scale 400, offset 800).
    """

    theta: np.ndarray
    ratings: np.ndarray
    loss: float
    n_steps: int
    implied_win_rates: np.ndarray
    elo: np.ndarray


def _comparisons(
    comparisons: Any, n_items: int | None, arg: str = "comparisons"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    try:
        c = np.asarray(comparisons, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{arg} must be a numeric (K, 3) array of rows (i, j, y) ({err}).") from None
    if c.size == 0:
        c = c.reshape(0, 3)
    if c.ndim != 2 or c.shape[1] != 3:
        raise ValueError(f"{arg} must have shape (K, 3) with rows (i, j, y), got {tuple(c.shape)}.")
    if not np.isfinite(c).all():
        raise ValueError(f"{arg} must be finite (rows (i, j, y)).")
    ij = c[:, :2]
    if np.any(ij < 0) or np.any(ij != np.round(ij)):
        k = int(np.flatnonzero(np.any((ij < 0) | (ij != np.round(ij)), axis=1))[0])
        raise ValueError(f"{arg}[{k}] = {c[k].tolist()}: item ids must be non-negative integers.")
    i, j = ij[:, 0].astype(np.int64), ij[:, 1].astype(np.int64)
    same = i == j
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise ValueError(f"{arg}[{k}] = {c[k].tolist()}: an item cannot be compared with itself.")
    y = c[:, 2]
    bad = ~np.isin(y, (0.0, 0.5, 1.0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{arg}[{k}] = {c[k].tolist()}: y must be 1 (i preferred), 0 (j preferred) or 0.5 (equal).")
    needed = int(max(i.max(), j.max()) + 1) if len(c) else 0
    if n_items is None:
        n_items = needed
    elif isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < needed:
        raise ValueError(f"n_items must be an integer >= the largest item id + 1 = {needed}, got {n_items!r}.")
    return i, j, y, int(n_items)


def win_rates(comparisons: Any, n_items: int | None = None) -> np.ndarray:
    """Chess-style win rate per item: wins + 0.5 ties, divided by the comparisons it took part in.

    Args:
        comparisons: ``(K, 3)`` rows ``(i, j, y)``.
        n_items: number of items (default: largest id + 1).

    Returns:
        ``(n_items,)`` float64, NaN for items never compared.

    Example:
        >>> win_rates([[0, 1, 1], [1, 0, 0.5]]).tolist()
        [0.75, 0.25]
    """
    return _win_rates(*_comparisons(comparisons, n_items))


def _win_rates(i: np.ndarray, j: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    score = np.bincount(i, weights=y, minlength=n) + np.bincount(j, weights=1.0 - y, minlength=n)
    games = np.bincount(i, minlength=n) + np.bincount(j, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(games > 0, score / np.maximum(games, 1), np.nan)


def implied_win_rates(theta: Any, *, scale: float = 1.0) -> np.ndarray:
    """Expected win rate against every other item: ``mean_{j != i} sigmoid((t_i - t_j) / scale)``.

    NaN entries (items never compared) are left out of the other items' means and stay NaN.

    Args:
        theta: abilities (natural-log scale when ``scale = 1``).
        scale: rating units per natural-log unit (400 for Elo ratings from :func:`elo`).

    Returns:
        ``(n,)`` float64.

    Example:
        >>> implied_win_rates([0.0, 0.0]).tolist()
        [0.5, 0.5]
    """
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    check_positive(scale, "scale")
    ok = np.isfinite(t)
    out = np.full(len(t), np.nan)
    tt = t[ok]
    if len(tt) < 2:
        return out
    p = 1.0 / (1.0 + np.exp(-(tt[:, None] - tt[None, :]) / scale))
    np.fill_diagonal(p, 0.0)
    out[ok] = p.sum(axis=1) / (len(tt) - 1)
    return out


def elo(theta: Any, *, scale: float = 400.0, offset: float = 800.0) -> np.ndarray:
    """Elo-style ratings ``scale * theta + offset`` (paper Eq. 6, read as an affine map of the ratings).

    Example:
        >>> elo([0.0, 1.0]).tolist()
        [800.0, 1200.0]
    """
    return scale * np.asarray(theta, dtype=np.float64) + offset


def bradley_terry(
    comparisons: Any,
    n_items: int | None = None,
    *,
    scale: float = 1.0,
    offset: float = 0.0,
    ties: str = "half",
    lr: float = 0.05,
    max_steps: int = 5000,
    tol: float = 1e-10,
    l2: float = 0.0,
    seed: int = 0,
) -> BTResult:
    """Fit Bradley-Terry abilities ``P(i > j) = sigmoid(theta_i - theta_j)`` (paper Eqs. 4-7).

    ``theta`` starts from ``N(0, 1)`` (``torch.Generator`` seeded by ``seed``) and is fitted with full-batch Adam
    (float64, CPU) on the mean binary cross-entropy (plus ``l2 * mean(theta^2)``) until the loss changes by less than
    ``tol`` between steps or ``max_steps`` is reached; it is returned centred to zero mean. Ties: ``"half"`` uses the
    soft label 0.5, ``"drop"`` removes them (Decision; the paper does not say). ``scale``/``offset`` are an affine
    map of the ratings, ``ratings = offset + scale * theta`` (Decision: Eq. 6's ``s = 400, o = 800`` then gives Elo,
    and ``sigmoid((R_i - R_j) / s) = sigmoid(theta_i - theta_j)``). Items that take part in no comparison get NaN.

    Args:
        comparisons: ``(K, 3)`` rows ``(i, j, y)``.
        n_items: number of items (default: largest id + 1).
        scale: rating scale.
        offset: rating offset.
        ties: ``"half"`` or ``"drop"``.
        lr: Adam learning rate.
        max_steps: maximum number of steps.
        tol: stopping tolerance on the loss change.
        l2: L2 penalty weight.
        seed: initialisation seed.

    Returns:
        :class:`BTResult`.

    Example:
        >>> res = bradley_terry([[0, 1, 1]] * 3 + [[1, 0, 1]], seed=0)
        >>> bool(res.theta[0] > res.theta[1])
        True
    """
    import torch

    check_choice(ties, "ties", ("half", "drop"))
    check_int(max_steps, "max_steps", low=1)
    for arg, val in (("lr", lr), ("tol", tol), ("l2", l2), ("scale", scale), ("offset", offset)):
        if not math.isfinite(val):
            raise ValueError(f"{arg} must be finite, got {val!r}.")
    if lr <= 0 or tol < 0 or l2 < 0:
        raise ValueError(f"need lr > 0, tol >= 0 and l2 >= 0, got lr={lr}, tol={tol}, l2={l2}.")
    i, j, y, n = _comparisons(comparisons, n_items)
    if ties == "drop":
        keep = y != 0.5
        i, j, y = i[keep], j[keep], y[keep]
    if len(y) == 0:
        raise ValueError("bradley_terry needs at least one comparison (after dropping ties).")
    gen = torch.Generator().manual_seed(int(seed))
    theta = torch.randn(n, generator=gen, dtype=torch.float64).requires_grad_(True)
    ti, tj = torch.from_numpy(i), torch.from_numpy(j)
    ty = torch.from_numpy(y)
    opt = torch.optim.Adam([theta], lr=lr)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    prev = math.inf
    steps = 0
    loss_value = math.nan
    with torch.enable_grad():
        for steps in range(1, max_steps + 1):  # noqa: B007  (steps is read after the loop)
            opt.zero_grad()
            loss = bce(theta[ti] - theta[tj], ty)
            if l2 > 0:
                loss = loss + l2 * theta.pow(2).mean()
            loss.backward()
            opt.step()
            loss_value = float(loss.detach())
            if abs(prev - loss_value) < tol:
                break
            prev = loss_value
    t = theta.detach().numpy().copy()
    seen = np.zeros(n, dtype=bool)
    seen[i] = True
    seen[j] = True
    t[~seen] = np.nan
    t = t - np.nanmean(t)
    return BTResult(
        theta=t,
        ratings=offset + scale * t,
        loss=loss_value,
        n_steps=steps,
        implied_win_rates=implied_win_rates(t),
        elo=elo(t),
    )


def win_rate_matrix(comparisons_per_rater: Sequence[Any], n_items: int) -> np.ndarray:
    """Win rates per rater: ``(n_items, n_raters)``, column ``r`` = :func:`win_rates` of rater ``r``'s comparisons.

    Example:
        >>> win_rate_matrix([[[0, 1, 1]], [[0, 1, 0]]], 2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    cols = [
        _win_rates(*_comparisons(c, n_items, arg=f"comparisons_per_rater[{r}]"))
        for r, c in enumerate(comparisons_per_rater)
    ]
    if not cols:
        raise ValueError("comparisons_per_rater is empty; give one comparison array per rater.")
    return np.column_stack(cols)


def quality_factor(win_matrix: Any, *, eps: float = 1e-3) -> np.ndarray:
    """First factor of the logit win-rate matrix (the paper's "factor analysis"); higher is better.

    ``eta = log(M / (1 - M))`` after clipping ``M`` to ``[eps, 1 - eps]``; ``eta = U S V^T``; the first left
    singular vector, with its sign chosen to correlate positively with the row means of ``M`` (if that correlation
    is 0 or undefined, the sign makes the entries sum to a non-negative value).

    Args:
        win_matrix: ``(n_items, n_raters)`` win rates in ``[0, 1]``, no NaN.
        eps: clipping margin, in ``(0, 0.5)``.

    Returns:
        ``(n_items,)`` unit-norm factor.

    Example:
        >>> q = quality_factor([[0.9, 0.8], [0.5, 0.5], [0.1, 0.3]])
        >>> bool(q[0] > q[1] > q[2])
        True
    """
    m = np.asarray(win_matrix, dtype=np.float64)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"win_matrix must be a non-empty (n_items, n_raters) matrix, got shape {m.shape}.")
    if not np.isfinite(m).all() or m.min() < 0 or m.max() > 1:
        raise ValueError("win_matrix must hold win rates in [0, 1] without NaN (drop items a rater never compared).")
    check_number(eps, "eps", low=0, high=0.5, low_open=True, high_open=True)
    mc = np.clip(m, eps, 1 - eps)
    eta = np.log(mc / (1 - mc))
    u, _, _ = np.linalg.svd(eta, full_matrices=False)
    f = u[:, 0]
    means = m.mean(axis=1)
    corr = float(np.corrcoef(f, means)[0, 1]) if np.std(f) > 0 and np.std(means) > 0 else math.nan
    if (math.isfinite(corr) and corr < 0) or ((not math.isfinite(corr) or corr == 0) and f.sum() < 0):
        f = -f
    return f


def preferences_from_scores(
    scores_a: Any, scores_b: Any, *, higher_is_better: bool, tie_tol: float = 0.0
) -> np.ndarray:
    """Outcomes of pairwise comparisons decided by a metric: 1 if ``a`` is better by more than ``tie_tol``, 0 if
    ``b`` is, else 0.5 (NaN where either score is NaN).

    Example:
        >>> preferences_from_scores([0.9, 0.5, 0.2], [0.1, 0.5, 0.3], higher_is_better=True).tolist()
        [1.0, 0.5, 0.0]
    """
    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"scores_a and scores_b must have the same shape, got {a.shape} and {b.shape}.")
    check_positive(tie_tol, "tie_tol", allow_zero=True)
    diff = a - b if higher_is_better else b - a
    out = np.where(diff > tie_tol, 1.0, np.where(diff < -tie_tol, 0.0, 0.5))
    out[np.isnan(diff)] = np.nan
    return out


def _outcomes(x: Any, arg: str) -> np.ndarray:
    o = np.asarray(x, dtype=np.float64).reshape(-1)
    bad = ~(np.isnan(o) | np.isin(o, (0.0, 0.5, 1.0)))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{arg}[{k}] = {o[k]}: outcomes must be 1, 0.5, 0 or NaN (not rated).")
    return o


def agreement(a: Any, b: Any, *, drop_ties: bool = False) -> float:
    """Agreement of two raters/metrics on the same pairs: mean of 1 (equal outcomes, "equal" included), 0.5 (exactly
    one said "equal") or 0 (opposite); pairs with a NaN are ignored.

    ``drop_ties=True`` keeps only pairs where neither said "equal" (the paper's "no ties" table). No pair left:
    NaN and a ``UserWarning``.

    Example:
        >>> agreement([1, 0, 0.5, 1], [1, 1, 0.5, 0.5])
        0.625
    """
    x, y = _outcomes(a, "a"), _outcomes(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must rate the same pairs, got lengths {len(x)} and {len(y)}.")
    ok = ~(np.isnan(x) | np.isnan(y))
    if drop_ties:
        ok &= (x != 0.5) & (y != 0.5)
    if not ok.any():
        warnings.warn("agreement: no pair rated by both (after dropping ties); returning nan.", stacklevel=2)
        return float("nan")
    x, y = x[ok], y[ok]
    points = np.where(x == y, 1.0, np.where((x == 0.5) | (y == 0.5), 0.5, 0.0))
    return float(points.mean())


def agreement_matrix(outcomes: Mapping[str, Any], *, drop_ties: bool = False) -> tuple[list[str], np.ndarray]:
    """Pairwise :func:`agreement` of several raters/metrics (names in the mapping's order).

    Example:
        >>> names, m = agreement_matrix({"human": [1, 0, 1], "wed": [1, 1, 1]})
        >>> names, m.round(3).tolist()
        (['human', 'wed'], [[1.0, 0.667], [0.667, 1.0]])
    """
    names = list(outcomes)
    k = len(names)
    mat = np.full((k, k), np.nan)
    for r in range(k):
        for c in range(r, k):
            mat[r, c] = mat[c, r] = agreement(outcomes[names[r]], outcomes[names[c]], drop_ties=drop_ties)
    return names, mat
