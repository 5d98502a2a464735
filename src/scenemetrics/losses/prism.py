"""``PRISMLoss``, kept importable from here; it lives in :mod:`scenemetrics.prism.loss`.

Example:
    >>> from scenemetrics.losses.prism import PRISMLoss
    >>> from scenemetrics.prism import PRISMLoss as RoomLoss
    >>> PRISMLoss is RoomLoss
    True
"""

from __future__ import annotations

from scenemetrics.prism.loss import PRISMLoss

__all__ = ["PRISMLoss"]
