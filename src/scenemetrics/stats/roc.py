"""Array conversion with errors that name the argument, the ROC AUC of a score between positives and negatives, and
the mean/AUC separation table built on it.

These need numpy and scipy only; torch tensors are accepted and converted without importing torch. Import them from
:mod:`scenemetrics.stats`.

Example:
    >>> from scenemetrics.stats import auc, separation
    >>> auc([0.9, 0.8], [0.1, 0.8])
    0.875
    >>> separation([0.3, 0.2], [0.7, 0.8], higher_is_positive=False).auc
    1.0
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Separation", "as_1d", "auc", "check_finite", "separation", "to_numpy"]


def to_numpy(x: Any, name: str) -> np.ndarray:
    """``x`` as a float64 numpy array (torch tensors are detached and moved to the CPU)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        x = x.detach().cpu().double().numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numeric, got {type(x).__name__} ({err}).") from None
    return arr


def as_1d(x: Any, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array; anything that is not 1-D raises ``ValueError`` naming ``name``."""
    arr = to_numpy(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per sample), got shape {tuple(arr.shape)}.")
    return arr


def check_finite(x: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` and the first non-finite index."""
    bad = ~np.isfinite(x)
    if bad.any():
        k = np.argwhere(bad)[0]
        idx = ", ".join(str(int(v)) for v in k)
        raise ValueError(
            f"{name}[{idx}] = {x[tuple(k)]} is not finite; clean the data or pass nan_policy='omit' where offered."
        )


class Separation(NamedTuple):
    """Mean score on positives and negatives, and the AUC of telling them apart (see :func:`separation`).

    Attributes:
        mean_pos: mean score over the positives.
        mean_neg: mean score over the negatives.
        auc: ROC AUC with the metric's orientation applied (0.5 = chance, 1 = perfect).
        n_pos: number of positives.
        n_neg: number of negatives.
    """

    mean_pos: float
    mean_neg: float
    auc: float
    n_pos: int
    n_neg: int


def _scores(x: Any, name: str) -> np.ndarray:
    s = as_1d(x, name)
    if len(s) == 0:
        raise ValueError(f"{name} is empty; the AUC needs at least one positive and one negative score.")
    check_finite(s, name)
    return s


def auc(scores_pos: Any, scores_neg: Any, *, higher_is_positive: bool = True) -> float:
    """ROC AUC: the probability that a random positive scores better than a random negative (ties count 1/2).

    Computed as ``U / (n_pos * n_neg)`` with ``U`` the Mann-Whitney statistic of the positives from
    ``scipy.stats.mannwhitneyu``; with ``higher_is_positive=False`` (a distance, an error) both sides are negated
    first, so the AUC always reads "1 = perfect".

    Args:
        scores_pos: 1-D scores of the positives (numpy, list or torch tensor).
        scores_neg: 1-D scores of the negatives.
        higher_is_positive: whether a higher score should mean "positive".

    Returns:
        The AUC in ``[0, 1]``.

    Raises:
        ValueError: a side is empty, not 1-D, or holds a non-finite value.

    Example:
        >>> auc([0.9, 0.8], [0.1, 0.8])
        0.875
        >>> auc([0.1, 0.2], [0.5, 0.6], higher_is_positive=False)
        1.0
    """
    from scipy.stats import mannwhitneyu

    pos, neg = _scores(scores_pos, "scores_pos"), _scores(scores_neg, "scores_neg")
    if not higher_is_positive:
        pos, neg = -pos, -neg
    u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
    return float(u) / (len(pos) * len(neg))


def separation(scores_pos: Any, scores_neg: Any, *, higher_is_positive: bool) -> Separation:
    """Mean score on positives and on negatives plus the AUC (the layout of PRISM's Tables 1 and 2).

    Args:
        scores_pos: 1-D scores of the positives.
        scores_neg: 1-D scores of the negatives.
        higher_is_positive: whether a higher score should mean "positive" (``False`` for distances); the means are
            reported as given, only the AUC is oriented.

    Returns:
        :class:`Separation`.

    Example:
        >>> s = separation([0.3, 0.2], [0.7, 0.8], higher_is_positive=False)
        >>> round(s.mean_pos, 3), round(s.mean_neg, 3), s.auc, s.n_pos, s.n_neg
        (0.25, 0.75, 1.0, 2, 2)
    """
    pos, neg = _scores(scores_pos, "scores_pos"), _scores(scores_neg, "scores_neg")
    return Separation(
        mean_pos=float(pos.mean()),
        mean_neg=float(neg.mean()),
        auc=auc(pos, neg, higher_is_positive=higher_is_positive),
        n_pos=len(pos),
        n_neg=len(neg),
    )
