"""Differentiable soft relaxations of scenemetrics metrics, as ``nn.Module`` losses (lower is better).

Each loss lives in its room (``scenemetrics.osim.loss``, ``scenemetrics.prism.loss``, ...) next to the metric it
relaxes; this package re-exports them lazily under one name space (``sm.losses.OSIMLoss``), so importing it costs
nothing until a loss is used.

Example:
    >>> import scenemetrics as sm
    >>> sm.losses.OSIMLoss is sm.osim.OSIMLoss
    True
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_LOSSES = {
    "SoftPuzzleSimLoss": "scenemetrics.puzzlesim.loss",
    "OSIMLoss": "scenemetrics.osim.loss",
    "PRISMLoss": "scenemetrics.prism.loss",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _LOSSES)
__all__ = _all
