"""Input conversion shared by the agreement modules: array-likes (numpy, lists, torch tensors on any device) to
float64 numpy, with errors that name the argument (the converters themselves live in :mod:`scenemetrics.stats`)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from scenemetrics.checks import check_choice
from scenemetrics.stats import as_1d, check_finite, to_numpy

__all__ = ["NAN_POLICIES", "as_1d", "check_finite", "comparison_table", "paired", "to_numpy"]

NAN_POLICIES = ("raise", "omit")


def paired(
    pred: Any, human: Any, *, nan_policy: str = "raise", min_n: int = 3, names: tuple[str, str] = ("pred", "human")
) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate two paired 1-D samples. Returns ``(pred, human, n_omitted)``.

    ``nan_policy="raise"`` rejects non-finite values; ``"omit"`` drops every pair where either side is non-finite
    (with a ``UserWarning`` giving the count). Fewer than ``min_n`` pairs left raises ``ValueError``.
    """
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    p, h = as_1d(pred, names[0]), as_1d(human, names[1])
    if len(p) != len(h):
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, got {len(p)} and {len(h)}.")
    omitted = 0
    if nan_policy == "raise":
        check_finite(p, names[0])
        check_finite(h, names[1])
    else:
        ok = np.isfinite(p) & np.isfinite(h)
        omitted = int((~ok).sum())
        if omitted:
            warnings.warn(
                f"nan_policy='omit': dropped {omitted} of {len(p)} pairs with a non-finite value.", stacklevel=3
            )
            p, h = p[ok], h[ok]
    if len(p) < min_n:
        raise ValueError(
            f"{names[0]} and {names[1]} need at least {min_n} paired samples"
            + (" after omitting non-finite values" if omitted else "")
            + f", got {len(p)}."
        )
    return p, h, omitted


def comparison_table(comparisons: Any, name: str = "comparisons") -> np.ndarray:
    """Comparisons as a ``(K, 5)`` float64 table of rows ``(rater, house, i, j, y)``.

    Accepts the wireframe room's ``(K, 3)`` rows ``(i, j, y)`` (one rater, one house), ``(K, 4)`` rows
    ``(house, i, j, y)`` (one rater), ``(K, 5)`` rows, or an object with a ``table`` attribute (what
    :func:`scenemetrics.agreement.read_comparisons` returns). The ``(i, j, y)`` columns are validated by
    :func:`scenemetrics.wireframe.win_rates` (ids non-negative integers, ``i != j``, ``y`` in {0, 0.5, 1}).
    """
    from scenemetrics.wireframe import win_rates

    table = getattr(comparisons, "table", comparisons)
    arr = to_numpy(table, name)
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give at least one comparison.")
    if arr.ndim != 2 or arr.shape[1] not in (3, 4, 5):
        raise ValueError(
            f"{name} must have shape (K, 3) rows (i, j, y), (K, 4) rows (house, i, j, y) or (K, 5) rows "
            f"(rater, house, i, j, y), got {tuple(arr.shape)}."
        )
    if arr.shape[1] < 5:
        arr = np.column_stack([np.zeros((len(arr), 5 - arr.shape[1])), arr])
    check_finite(arr, name)
    rh = arr[:, :2]
    bad = (rh < 0) | (rh != np.round(rh))
    if bad.any():
        k = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"{name}[{k}] = {arr[k].tolist()}: rater and house ids must be non-negative integers.")
    try:
        win_rates(arr[:, 2:])
    except ValueError as err:  # re-raised with the argument's own name
        raise ValueError(str(err).replace("comparisons", name, 1)) from None
    return arr
