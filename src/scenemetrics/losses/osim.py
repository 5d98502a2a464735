"""``OSIMLoss``, kept importable from here; it lives in :mod:`scenemetrics.osim.loss`.

Example:
    >>> from scenemetrics.losses.osim import OSIMLoss
    >>> from scenemetrics.osim import OSIMLoss as RoomLoss
    >>> OSIMLoss is RoomLoss
    True
"""

from __future__ import annotations

from scenemetrics.osim.loss import OSIMLoss

__all__ = ["OSIMLoss"]
