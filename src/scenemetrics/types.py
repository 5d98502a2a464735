"""Type aliases for the array inputs of the public functions, defined once for every room.

Only annotations use them; importing this module imports numpy's typing helpers but not torch.

* :data:`ArrayLike`: what ``numpy.asarray`` accepts (nested lists, numpy arrays, scalars) and torch tensors (a
  tensor on any device is detached and copied to the CPU by the functions that take it). The wireframe functions
  take vertices and edges this way.
* :data:`TensorOrArray`: a ``torch.Tensor`` or a ``numpy.ndarray``, nothing else (the OpenLex3D functions raise
  ``TypeError`` for lists, which would be ambiguous for point clouds and features).

Example:
    >>> from scenemetrics.types import ArrayLike, TensorOrArray
    >>> def count_points(points: TensorOrArray) -> int:
    ...     return len(points)
    >>> import numpy as np
    >>> count_points(np.zeros((4, 3)))
    4
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import torch

__all__ = ["ArrayLike", "TensorOrArray"]

ArrayLike = Union[npt.ArrayLike, "torch.Tensor"]  # Union: "|" fails on a string at runtime
"""Anything ``numpy.asarray`` accepts, or a torch tensor on any device."""

TensorOrArray = Union["torch.Tensor", np.ndarray]
"""A ``torch.Tensor`` or a ``numpy.ndarray``."""
