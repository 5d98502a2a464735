"""Option checkers shared by every room: one wording for every "bad argument" error.

Each checker returns the value (normalised: ``int``/``float``/the choice itself) or raises ``ValueError`` whose
message names the argument in backticks and shows what was received, e.g.
``` `alpha` must be a finite number > 0; received -1 ```. Booleans are never accepted as numbers.

Example:
    >>> from scenemetrics.checks import check_choice, check_int, check_number, check_probability
    >>> check_int(3, "batch_size", low=1), check_number(0.5, "alpha", low=0, low_open=True)
    (3, 0.5)
    >>> check_probability(0.25, "p"), check_choice("exact", "search", ("exact", "faiss"))
    (0.25, 'exact')
    >>> check_int(0, "batch_size", low=1)
    Traceback (most recent call last):
    ...
    ValueError: `batch_size` must be an int >= 1; received 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["check_choice", "check_int", "check_number", "check_positive", "check_positive_int", "check_probability"]


def _bounds_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " ".join(parts)


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (Python or numpy, not bool) within ``[low, high]`` (either end optional), as ``int``.

    Raises:
        ValueError: ``` `name` must be an int >= low; received ...``` (or ``in [low, high]`` / ``<= high``).
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and ((low is not None and int(value) < low) or (high is not None and int(value) > high)):
        ok = False
    if not ok:
        where = _bounds_text(low, high, False, False)
        raise ValueError(f"`{name}` must be an int{' ' + where if where else ''}; received {value!r}")
    return int(value)


def check_positive_int(value: Any, name: str) -> int:
    """An int >= 1 (see :func:`check_int`)."""
    return check_int(value, name, low=1)


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number (not bool) within the given bounds, as ``float``.

    Args:
        value: the argument.
        name: its name, quoted in the error.
        low, high: bounds (``None``: unbounded on that side).
        low_open, high_open: exclude the bound itself (``low_open=True`` with ``low=0``: strictly positive).

    Raises:
        ValueError: ``` `name` must be a finite number > 0; received ...```.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = math.isfinite(v)
        if ok and low is not None:
            ok = v > low if low_open else v >= low
        if ok and high is not None:
            ok = v < high if high_open else v <= high
    if not ok:
        where = _bounds_text(low, high, low_open, high_open)
        raise ValueError(f"`{name}` must be a finite number{' ' + where if where else ''}; received {value!r}")
    return float(value)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (``>= 0`` with ``allow_zero``), as ``float`` (see :func:`check_number`)."""
    return check_number(value, name, low=0.0, low_open=not allow_zero)


def check_probability(value: Any, name: str) -> float:
    """A finite number in ``[0, 1]``, as ``float`` (see :func:`check_number`)."""
    return check_number(value, name, low=0.0, high=1.0)


def check_choice(value: T, name: str, options: Collection[Any]) -> T:
    """``value`` if it is one of ``options``.

    Raises:
        ValueError: ``` `name` must be one of 'a', 'b'; received 'c'```.
    """
    try:
        ok = value in options
    except TypeError:  # unhashable value against a set of options
        ok = False
    if not ok:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, options))}; received {value!r}")
    return value
