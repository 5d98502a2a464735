"""``SoftPuzzleSimLoss`` at its historical import path; it lives in :mod:`scenemetrics.puzzlesim.loss`.

Example:
    >>> from scenemetrics.losses.puzzlesim import SoftPuzzleSimLoss
    >>> SoftPuzzleSimLoss.__module__
    'scenemetrics.puzzlesim.loss'
"""

from __future__ import annotations

from scenemetrics.puzzlesim.loss import SoftPuzzleSimLoss

__all__ = ["SoftPuzzleSimLoss"]
