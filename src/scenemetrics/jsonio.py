"""Standard JSON for every file scenemetrics writes: no ``NaN``/``Infinity`` tokens, ``null`` plus the reason.

Python's :mod:`json` writes ``NaN``, ``Infinity`` and ``-Infinity``, which most JSON readers (``jq``, JavaScript's
``JSON.parse``, Go, Rust's serde) reject. Every JSON file of scenemetrics is written by :func:`write_json` (the
``scenemetrics`` commands, the evaluation tables and commit log), which follows one rule:

* a non-finite number becomes ``null`` where it stood;
* the top-level object gains a ``"non_finite"`` member mapping the JSON Pointer (RFC 6901) of each such ``null`` to
  the value it stands for: ``"NaN"`` (undefined, e.g. a score with no object to score), ``"Infinity"`` or
  ``"-Infinity"`` (e.g. the PSNR of a render identical to its ground truth).

:func:`restore` undoes it, so a reader in Python gets the floats back.

Example:
    >>> from scenemetrics.jsonio import dumps, restore
    >>> text = dumps({"psnr": float("inf"), "osim": float("nan"), "ssim": 0.5}, indent=None)
    >>> text
    '{"psnr": null, "osim": null, "ssim": 0.5, "non_finite": {"/psnr": "Infinity", "/osim": "NaN"}}'
    >>> restore(__import__("json").loads(text))
    {'psnr': inf, 'osim': nan, 'ssim': 0.5}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["NON_FINITE_KEY", "dumps", "restore", "standard", "write_json"]

NON_FINITE_KEY = "non_finite"
"""Top-level member listing the JSON Pointer of every ``null`` that stands for a non-finite number."""

_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _name(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _walk(obj: Any, pointer: str, found: dict[str, str]) -> Any:
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        found[pointer] = _name(obj)
        return None
    if isinstance(obj, Mapping):
        return {str(k): _walk(v, f"{pointer}/{_escape(str(k))}", found) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_walk(v, f"{pointer}/{i}", found) for i, v in enumerate(obj)]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    item = getattr(obj, "item", None)  # numpy scalars and one-element tensors
    if callable(item) and getattr(obj, "ndim", None) == 0:
        return _walk(item(), pointer, found)
    tolist = getattr(obj, "tolist", None)  # numpy arrays
    if callable(tolist):
        return _walk(tolist(), pointer, found)
    raise TypeError(f"cannot write {type(obj).__name__} at {pointer or '/'} as JSON")


def standard(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``None``; a mapping gains ``"non_finite"`` (see the module).

    Numpy scalars and arrays become Python numbers and lists; paths become strings.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: ``obj`` has non-finite numbers but is not a mapping (there is no place for the reasons), or it
            already has a ``"non_finite"`` member.
    """
    found: dict[str, str] = {}
    clean = _walk(obj, "", found)
    if isinstance(clean, dict) and NON_FINITE_KEY in clean:
        raise ValueError(f"a JSON object written by scenemetrics cannot have its own {NON_FINITE_KEY!r} member")
    if not found:
        return clean
    if not isinstance(clean, dict):
        raise ValueError(f"non-finite numbers at {sorted(found)} need a JSON object at the top level for their reasons")
    clean[NON_FINITE_KEY] = found
    return clean


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """:func:`standard` JSON text of ``obj`` (never a ``NaN``/``Infinity`` token)."""
    return json.dumps(standard(obj), indent=indent, allow_nan=False)


def restore(obj: Any) -> Any:
    """Undo :func:`standard` in place on a parsed document: the listed ``null`` values become floats again.

    Returns:
        ``obj`` without its ``"non_finite"`` member.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get(NON_FINITE_KEY), dict):
        return obj
    for pointer, name in obj.pop(NON_FINITE_KEY).items():
        if name not in _NAMES or not isinstance(pointer, str) or not pointer.startswith("/"):
            continue
        *path, last = (_unescape(t) for t in pointer[1:].split("/"))
        node: Any = obj
        try:
            for token in path:
                node = node[int(token)] if isinstance(node, list) else node[token]
            key: Any = int(last) if isinstance(node, list) else last
            if node[key] is None:
                node[key] = _NAMES[name]
        except (KeyError, IndexError, ValueError, TypeError):
            continue
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented standard JSON (see the module), atomically, creating parent folders.

    The file follows the process umask, like any file Python's ``open`` creates.
    """
    from scenemetrics.fileio import atomic_write_text

    return atomic_write_text(path, dumps(obj) + "\n")
