"""Shared colormaps and image helpers: metric maps to RGB, overlays, panels, PNG files.

The canonical display image is a ``uint8`` tensor ``(3, H, W)`` on the CPU. Colormaps use a **fixed** range
(no per-image normalisation), so colours are comparable across images and training steps. ``jet`` and ``gray``
(and their ``_r`` reversals) are built in; any other name is looked up in matplotlib when it is installed
(``pip install "scenemetrics[viz]"``).

PuzzleSim maps are similarities (high = plausible); the authors show them with reversed jet so that artifacts are
warm, hence the default ``"jet_r"``.

Example:
    >>> import torch
    >>> from scenemetrics.viz import apply_colormap
    >>> apply_colormap(torch.tensor([[0.0, 1.0]])).permute(1, 2, 0).tolist()
    [[[128, 0, 0], [0, 0, 128]]]
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["BUILTIN_COLORMAPS", "apply_colormap", "blend", "hstack", "save_png", "to_uint8"]

BUILTIN_COLORMAPS = ("jet", "jet_r", "gray", "gray_r")


def _jet(v: Tensor) -> Tensor:
    # MATLAB-style jet as piecewise linear ramps (callbacks spec 1.6).
    r = (1.5 - (4 * v - 3).abs()).clamp(0, 1)
    g = (1.5 - (4 * v - 2).abs()).clamp(0, 1)
    b = (1.5 - (4 * v - 1).abs()).clamp(0, 1)
    return torch.stack([r, g, b])


def apply_colormap(values: Tensor, colormap: str = "jet_r", vmin: float = 0.0, vmax: float = 1.0) -> Tensor:
    """Colour a 2-D map with a fixed value range.

    Args:
        values: ``(H, W)`` real tensor.
        colormap: ``"jet"``, ``"jet_r"``, ``"gray"``, ``"gray_r"`` or a matplotlib colormap name.
        vmin: value shown with the colormap's first colour (values below are clipped for display only).
        vmax: value shown with the last colour; must be ``> vmin``.

    Returns:
        ``uint8`` tensor ``(3, H, W)`` on the CPU. NaN pixels are black (one ``UserWarning`` per call).

    Raises:
        ValueError: ``values`` is not 2-D, ``vmax <= vmin``, or an unknown colormap (matplotlib missing or no
            such name); the message lists the built-ins.

    Example:
        >>> import torch
        >>> apply_colormap(torch.rand(4, 5)).shape
        torch.Size([3, 4, 5])
    """
    if not isinstance(values, Tensor) or values.ndim != 2:
        shape = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
        raise ValueError(f"`values` must be a 2-D tensor (H, W); received {shape}")
    if not vmax > vmin:
        raise ValueError(f"`vmax` must be greater than `vmin`; received vmin={vmin}, vmax={vmax}")
    v = values.detach().to("cpu", torch.float32)
    nan = torch.isnan(v)
    if bool(nan.any()):
        warnings.warn(f"apply_colormap: {int(nan.sum())} NaN value(s) shown in black", UserWarning, stacklevel=2)
    v = ((v - vmin) / (vmax - vmin)).clamp(0, 1).nan_to_num(0.0)
    reverse = colormap.endswith("_r")
    base = colormap[:-2] if reverse else colormap
    if base in ("jet", "gray"):
        if reverse:
            v = 1.0 - v
        rgb = _jet(v) if base == "jet" else v.expand(3, *v.shape)
    else:
        rgb = _matplotlib_colormap(colormap, v)
    out = (rgb * 255.0).round().to(torch.uint8)
    out[:, nan] = 0
    return out


def _matplotlib_colormap(name: str, v: Tensor) -> Tensor:
    try:
        import matplotlib
    except ImportError:
        raise ValueError(
            f"unknown colormap {name!r}: built-in colormaps are {', '.join(BUILTIN_COLORMAPS)}; others need "
            'matplotlib (pip install "scenemetrics[viz]")'
        ) from None
    try:
        cmap = matplotlib.colormaps[name]
    except KeyError:
        raise ValueError(
            f"unknown colormap {name!r}: neither built in ({', '.join(BUILTIN_COLORMAPS)}) nor known to matplotlib"
        ) from None
    rgba = cmap(v.numpy())
    return torch.from_numpy(rgba[..., :3]).permute(2, 0, 1).float()


def to_uint8(image: Tensor) -> Tensor:
    """A ``(3, H, W)`` float image in [0, 1] (clipped for display) or uint8 image as ``uint8`` ``(3, H, W)`` on CPU.

    ``(H, W)`` grey images are expanded to 3 channels.
    """
    if not isinstance(image, Tensor):
        raise ValueError(f"`image` must be a tensor; received {type(image).__name__}")
    img = image.detach().cpu()
    if img.ndim == 2:
        img = img.expand(3, *img.shape)
    if img.ndim != 3 or img.shape[0] not in (1, 3):
        raise ValueError(f"`image` must have shape (3, H, W), (1, H, W) or (H, W); received {tuple(image.shape)}")
    if img.shape[0] == 1:
        img = img.expand(3, *img.shape[1:])
    if img.dtype == torch.uint8:
        return img.contiguous()
    return (img.float().nan_to_num(0.0).clamp(0, 1) * 255.0).round().to(torch.uint8)


def blend(image: Tensor, overlay: Tensor, alpha: float | Tensor = 0.5) -> Tensor:
    """Alpha-blend two ``(3, H, W)`` images (either dtype) into ``uint8``; ``alpha`` may be a ``(H, W)`` mask."""
    a = to_uint8(image).float()
    b = to_uint8(overlay).float()
    if a.shape != b.shape:
        raise ValueError(f"`image` {tuple(a.shape)} and `overlay` {tuple(b.shape)} must have the same shape")
    w = alpha.detach().cpu().float() if isinstance(alpha, Tensor) else torch.tensor(float(alpha))
    return ((1 - w) * a + w * b).round().clamp(0, 255).to(torch.uint8)


def hstack(images: Sequence[Tensor], separator: int = 4, fill: int = 255) -> Tensor:
    """Place images side by side (top-aligned, padded to the tallest) with a ``separator``-px gap; ``uint8``."""
    tiles = [to_uint8(im) for im in images]
    if not tiles:
        raise ValueError("`images` must hold at least one image")
    h = max(t.shape[1] for t in tiles)
    w = sum(t.shape[2] for t in tiles) + separator * (len(tiles) - 1)
    out = torch.full((3, h, w), fill, dtype=torch.uint8)
    x = 0
    for t in tiles:
        out[:, : t.shape[1], x : x + t.shape[2]] = t
        x += t.shape[2] + separator
    return out


def save_png(image: Tensor, path: str | os.PathLike) -> Path:
    """Write a ``(3, H, W)`` / ``(H, W)`` image (float in [0, 1] or uint8) as PNG; creates parent folders."""
    from PIL import Image

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(to_uint8(image).permute(1, 2, 0).numpy()).save(p, format="PNG")
    return p
