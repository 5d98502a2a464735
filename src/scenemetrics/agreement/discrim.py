"""Discriminability of a score between positives and negatives: ROC AUC, linear-probe AUC, separation table.

These are the statistics of PRISM's ViewMatch study (Stern, Sobol, Litany): does a metric (or a feature vector)
tell a correct novel view (positive) from a wrong one (negative)? :func:`auc`, :func:`separation` and
:class:`Separation` live in the core module :mod:`scenemetrics.stats` (PRISM uses them too) and are re-exported
here.

Example:
    >>> from scenemetrics.agreement import auc, separation
    >>> auc([0.9, 0.8], [0.1, 0.8])
    0.875
    >>> separation([0.3, 0.2], [0.7, 0.8], higher_is_positive=False).auc
    1.0
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from scenemetrics.agreement._checks import as_1d, check_finite, to_numpy
from scenemetrics.stats import Separation, auc, separation

__all__ = ["Separation", "auc", "linear_probe_auc", "separation"]


def _features(x: Any, name: str) -> np.ndarray:
    arr = to_numpy(x, name)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty (n, d) feature matrix, got shape {tuple(arr.shape)}.")
    check_finite(arr, name)
    return arr


def _labels(y: Any, n: int, name: str) -> np.ndarray:
    lab = as_1d(y, name)
    if len(lab) != n:
        raise ValueError(f"{name} must have one label per feature row ({n}), got {len(lab)}.")
    bad = ~np.isin(lab, (0.0, 1.0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{k}] = {lab[k]}: labels must be 0 (negative) or 1 (positive).")
    if lab.min() == lab.max():
        raise ValueError(f"{name} holds a single class ({int(lab[0])}); both 0 and 1 are needed.")
    return lab


def linear_probe_auc(
    x_train: Any,
    y_train: Any,
    x_test: Any,
    y_test: Any,
    *,
    l2: float = 1e-3,
    standardize: bool = True,
    sample_weight: Any = None,
) -> float:
    """Test AUC of an L2-regularised logistic-regression probe trained on ``(x_train, y_train)``.

    The probe minimises the (weighted) mean log-loss plus ``l2 * ||w||^2`` (bias not penalised) with
    ``scipy.optimize.minimize(method="L-BFGS-B")`` and its analytic gradient; features are standardised with the
    training mean and standard deviation (constant features are left centred). The AUC (:func:`auc`) is that of the
    test logits. Split train and test by object, not by image, so the probe cannot memorise objects.

    Args:
        x_train: ``(n_train, d)`` features.
        y_train: ``(n_train,)`` labels in {0, 1}, both classes present.
        x_test: ``(n_test, d)`` features, same ``d``.
        y_test: ``(n_test,)`` labels in {0, 1}, both classes present.
        l2: penalty weight (>= 0).
        standardize: z-score the features with the training statistics.
        sample_weight: optional ``(n_train,)`` non-negative weights of the training samples.

    Returns:
        The test AUC.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> y = np.repeat([0, 1], 50)
        >>> x = rng.normal(size=(100, 3)) + y[:, None]
        >>> linear_probe_auc(x[::2], y[::2], x[1::2], y[1::2]) > 0.8
        True
    """
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    xtr, xte = _features(x_train, "x_train"), _features(x_test, "x_test")
    if xtr.shape[1] != xte.shape[1]:
        raise ValueError(f"x_train and x_test must have the same feature width, got {xtr.shape[1]} and {xte.shape[1]}.")
    ytr, yte = _labels(y_train, len(xtr), "y_train"), _labels(y_test, len(xte), "y_test")
    if not (isinstance(l2, (int, float)) and math.isfinite(l2) and l2 >= 0):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}.")
    if sample_weight is None:
        w = np.full(len(xtr), 1.0 / len(xtr))
    else:
        w = as_1d(sample_weight, "sample_weight")
        if len(w) != len(xtr):
            raise ValueError(f"sample_weight must have one weight per training row ({len(xtr)}), got {len(w)}.")
        check_finite(w, "sample_weight")
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError("sample_weight must be non-negative with a positive sum.")
        w = w / w.sum()
    if standardize:
        mu, sd = xtr.mean(axis=0), xtr.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    d = xtr.shape[1]
    sign = 2.0 * ytr - 1.0  # log-loss of a logit z with label y is -log sigmoid((2y - 1) z)

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        coef, bias = params[:d], params[d]
        z = xtr @ coef + bias
        loss = -float(w @ log_expit(sign * z)) + l2 * float(coef @ coef)
        g = -w * sign * expit(-sign * z)  # d loss / d z per sample
        grad = np.empty(d + 1)
        grad[:d] = xtr.T @ g + 2.0 * l2 * coef
        grad[d] = g.sum()
        return loss, grad

    res = minimize(objective, np.zeros(d + 1), jac=True, method="L-BFGS-B")
    if not res.success:
        warnings.warn(f"linear_probe_auc: the probe's optimiser did not converge ({res.message}).", stacklevel=2)
    logits = xte @ res.x[:d] + res.x[d]
    return auc(logits[yte == 1], logits[yte == 0])
