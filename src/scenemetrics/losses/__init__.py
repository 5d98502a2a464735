"""Differentiable soft relaxations of scenemetrics metrics, as ``nn.Module`` losses (lower is better).

Each loss lives in the module of its room's name (``losses/puzzlesim.py``, ``losses/osim.py``, ``losses/prism.py``)
and is imported lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

_LOSSES = {
    "SoftPuzzleSimLoss": "scenemetrics.losses.puzzlesim",
    "OSIMLoss": "scenemetrics.losses.osim",
    "PRISMLoss": "scenemetrics.losses.prism",
}

__all__ = list(_LOSSES)


def __getattr__(name: str) -> Any:
    if name in _LOSSES:
        return getattr(importlib.import_module(_LOSSES[name]), name)
    raise AttributeError(f"module 'scenemetrics.losses' has no attribute {name!r}")
