"""Statistics shared across the library, below the rooms so that any room can use them without importing another.

* :mod:`~scenemetrics.stats.roc` (numpy and scipy only; torch tensors are accepted and converted without
  importing torch): array conversion with errors that name the argument, the ROC AUC of a score between positives
  and negatives, and the mean/AUC separation table built on it (PRISM's head study, the agreement tools).
* :mod:`~scenemetrics.stats.mmd` (torch): the RBF-kernel MMD², exact and in bounded memory, unbiased by default,
  with the median-heuristic bandwidth (PRISM's reference-free score) or a given one (the CMMD baselines).

Names are imported lazily: ``import scenemetrics.stats`` imports neither torch nor scipy.

Example:
    >>> from scenemetrics.stats import auc, separation
    >>> auc([0.9, 0.8], [0.1, 0.8])
    0.875
    >>> separation([0.3, 0.2], [0.7, 0.8], higher_is_positive=False).auc
    1.0
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "Separation": "roc",
    "as_1d": "roc",
    "auc": "roc",
    "check_finite": "roc",
    "separation": "roc",
    "to_numpy": "roc",
    "MMDOptions": "mmd",
    "median_bandwidth": "mmd",
    "mmd_rbf": "mmd",
}

_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = _all
