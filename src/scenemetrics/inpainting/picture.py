"""The picture of one PuzzleSim-guided inpainting run, for people: before | map | after | inpainted pixels.

Example:
    >>> import torch
    >>> from types import SimpleNamespace
    >>> result = SimpleNamespace(image=torch.ones(3, 8, 8), mask=torch.zeros(8, 8, dtype=torch.bool),
    ...     map_before=torch.linspace(0.9, 1.0, 64).view(8, 8), quality_before=0.95, quality_after=0.95,
    ...     history=[{}], mask_fraction=0.0)
    >>> [t["label"] for t in inpainting_picture(torch.zeros(3, 8, 8), result, name="a.png").tiles]
    ['before (quality 0.9500)', 'PuzzleSim map before', 'after (quality 0.9500)', 'inpainted pixels (white)']
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from scenemetrics.viz import Picture, map_picture

__all__ = ["inpainting_picture"]


def inpainting_picture(image: Tensor, result: Any, *, name: str) -> Picture:
    """Before (with its quality), its PuzzleSim map with a colour bar of real values, after, and the mask.

    Args:
        image: the ``(3, H, W)`` input image.
        result: the :class:`~scenemetrics.inpainting.InpaintResult` of that image.
        name: the image's name, for the title.

    Returns:
        A :class:`~scenemetrics.viz.Picture` (the map on its 2nd-98th percentile, see
        :func:`scenemetrics.viz.robust_range`).
    """
    before, after = result.quality_before, result.quality_after
    return map_picture(
        result.map_before.detach().cpu(),
        image=image.detach().cpu(),
        show=("image", "map"),
        labels={"image": f"before (quality {before:.4f})", "map": "PuzzleSim map before"},
        extra_tiles=[
            (f"after (quality {after:.4f})", result.image.detach().cpu()),
            ("inpainted pixels (white)", result.mask.detach().cpu().float()),
        ],
        title=(
            f"PuzzleSim-guided inpainting of {name}: quality {before:.4f} -> {after:.4f} (mean map, higher = "
            f"better), {len(result.history)} round(s), {100 * result.mask_fraction:.1f}% of pixels inpainted"
        ),
    )
