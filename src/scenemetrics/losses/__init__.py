"""Differentiable soft relaxations of scenemetrics metrics, as ``nn.Module`` losses (lower is better).

Each loss lives in the module of its room's name (``losses/puzzlesim.py``, ``losses/osim.py``, ``losses/prism.py``)
and is imported lazily.
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_LOSSES = {
    "SoftPuzzleSimLoss": "scenemetrics.losses.puzzlesim",
    "OSIMLoss": "scenemetrics.losses.osim",
    "PRISMLoss": "scenemetrics.losses.prism",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _LOSSES)
__all__ = _all
