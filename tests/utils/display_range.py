"""The documented display-range rule of the callbacks' first logged step, written again with NumPy for the tests.

The 2nd and 98th percentiles of the map; widened to the value of a perfect render (1 for a similarity, 0 for an
error); if still narrower than 0.01, 0.01 wide from the end the perfect value (or, without one, the top) sits at.
"""

from __future__ import annotations

import numpy as np
import torch


def first_range(values: torch.Tensor, higher_is_better: bool | None) -> tuple[float, float]:
    """``(vmin, vmax)`` of a map at the first step it is logged (see the module)."""
    flat = values.detach().double().cpu().numpy().reshape(-1)
    flat = flat[np.isfinite(flat)]
    low, high = (float(v) for v in np.percentile(flat, [2, 98]))
    if higher_is_better is True:
        high = max(high, 1.0)
    if higher_is_better is False:
        low = min(low, 0.0)
    if high - low < 0.01:
        if higher_is_better is False:
            high = low + 0.01
        else:
            low = high - 0.01
    return low, high
