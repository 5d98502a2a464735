"""The one input rule for every image API of scenemetrics, plus reading images from disk.

Images are ``(B, 3, H, W)`` tensors (a ``(3, H, W)`` tensor is a batch of one), RGB, either floating point
(float16 / bfloat16 / float32 / float64) in ``[0, 1]`` (tolerance ``1e-6``) or ``uint8`` (divided by 255).
They are computed in float32 on the input's device. ``B = 0`` is valid (an empty batch). Anything else raises a
``ValueError`` naming the argument, what was expected and what was received. Nothing is clipped or resized.

Example:
    >>> import torch
    >>> from scenemetrics.image import check_images
    >>> check_images(torch.zeros(3, 8, 8, dtype=torch.uint8), "images").shape
    torch.Size([1, 3, 8, 8])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = [
    "IMAGE_EXTENSIONS",
    "RANGE_TOLERANCE",
    "ImageTypeError",
    "check_image_list",
    "check_images",
    "list_images",
    "read_image",
    "read_images",
]

RANGE_TOLERANCE = 1e-6
"""Float images may exceed [0, 1] by this much (rounding) without an error."""

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


class ImageTypeError(TypeError, ValueError):
    """An image argument is not a tensor at all (both a ``TypeError`` and a ``ValueError``)."""


def _size_pair(min_size: int | tuple[int, int] | None) -> tuple[int, int] | None:
    if min_size is None:
        return None
    if isinstance(min_size, int):
        return (min_size, min_size)
    return (int(min_size[0]), int(min_size[1]))


def check_images(
    images: Tensor,
    name: str = "images",
    *,
    check_range: bool = True,
    min_size: int | tuple[int, int] | None = None,
    min_size_reason: str = "",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Validate an image batch and return it as a contiguous ``(B, 3, H, W)`` float tensor on its device.

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)``; float in [0, 1] or uint8.
        name: the argument's name, used in error messages.
        check_range: check that float values lie in [0, 1] (``False`` for renders being optimised, which may
            overshoot; shape, dtype and finiteness are still checked).
        min_size: minimum ``(H, W)`` (or one int for both sides).
        min_size_reason: appended to the minimum-size error (e.g. which backbone layer needs it).
        dtype: the floating dtype to return (float32 unless a caller computes in float64).

    Returns:
        The images as ``dtype``, ``(B, 3, H, W)``. A uint8 input is divided by 255. The result keeps autograd
        history when the input has it.

    Raises:
        ValueError: wrong ndim, channels, dtype, non-finite values, values outside [0, 1], a side below
            ``min_size``, or a tensor on the meta device (no data). The message names ``name``, the expectation
            and what was received.
        ImageTypeError: ``images`` is not a tensor (a ``TypeError`` and a ``ValueError``).

    Example:
        >>> import torch
        >>> check_images(torch.rand(2, 3, 4, 5)).dtype
        torch.float32
    """
    if not isinstance(images, Tensor):
        raise ImageTypeError(
            f"`{name}` must be a torch.Tensor of shape (B, 3, H, W) or (3, H, W); received {type(images).__name__}"
        )
    if images.device.type == "meta":
        raise ValueError(f"`{name}` is on the meta device (it holds no data); pass a tensor on the CPU or a GPU")
    if images.ndim == 3:
        images = images.unsqueeze(0)
    if images.ndim != 4:
        raise ValueError(f"`{name}` must have shape (B, 3, H, W) or (3, H, W); received shape {tuple(images.shape)}")
    if images.shape[1] != 3:
        raise ValueError(
            f"`{name}` must have 3 (RGB) channels in dimension 1, shape (B, 3, H, W); received shape "
            f"{tuple(images.shape)}"
        )
    if images.dtype == torch.uint8:
        out = images.to(dtype) / 255.0
        range_ok = True
    elif images.dtype in FLOAT_DTYPES:
        out = images.to(dtype)
        range_ok = False
    else:
        raise ValueError(
            f"`{name}` must be float16/bfloat16/float32/float64 in [0, 1] or uint8 in [0, 255]; received dtype "
            f"{images.dtype}"
        )
    min_hw = _size_pair(min_size)
    if min_hw is not None and (images.shape[-2] < min_hw[0] or images.shape[-1] < min_hw[1]):
        raise ValueError(
            f"`{name}` must be at least {min_hw[0]}x{min_hw[1]} pixels (H x W){min_size_reason}; received "
            f"{images.shape[-2]}x{images.shape[-1]} (shape {tuple(images.shape)})"
        )
    if out.numel() and not range_ok:
        with torch.no_grad():
            finite = bool(torch.isfinite(out).all())
            if not finite:
                raise ValueError(f"`{name}` contains NaN or infinite values (shape {tuple(images.shape)})")
            if check_range:
                lo, hi = float(out.min()), float(out.max())
                if lo < -RANGE_TOLERANCE or hi > 1.0 + RANGE_TOLERANCE:
                    raise ValueError(
                        f"`{name}` must be float in [0, 1] (or uint8); received values in [{lo:.6g}, {hi:.6g}]"
                        " (if it is in [0, 255] convert it to uint8 or divide by 255; nothing is clipped silently)"
                    )
    return out.contiguous()


def check_image_list(
    images: Tensor | Sequence[Tensor],
    name: str = "references",
    **kwargs,
) -> list[Tensor]:
    """Validate a batch tensor or a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors whose sizes may differ.

    Returns:
        A list of ``(n_i, 3, h_i, w_i)`` float tensors (see :func:`check_images` for ``kwargs``). Entries with
        ``n_i = 0`` are dropped.

    Raises:
        ValueError / ImageTypeError: as :func:`check_images`, naming ``name[i]`` for a bad element.

    Example:
        >>> import torch
        >>> [t.shape[0] for t in check_image_list([torch.rand(3, 8, 8), torch.rand(2, 3, 9, 7)])]
        [1, 2]
    """
    if isinstance(images, Tensor):
        out = [check_images(images, name, **kwargs)]
    elif isinstance(images, (list, tuple)):
        out = [check_images(t, f"{name}[{i}]", **kwargs) for i, t in enumerate(images)]
    else:
        raise ImageTypeError(
            f"`{name}` must be a tensor (N, 3, H, W) or a list/tuple of (3, H, W) or (n, 3, H, W) tensors; "
            f"received {type(images).__name__}"
        )
    return [t for t in out if t.shape[0] > 0]


def list_images(folder: str | os.PathLike, name: str = "folder") -> list[Path]:
    """Image files of a folder (not recursive), sorted by name.

    Raises:
        FileNotFoundError: the folder does not exist. ValueError: it holds no image file.
    """
    p = Path(folder)
    if not p.is_dir():
        raise FileNotFoundError(f"`{name}` {os.fspath(folder)!r} is not a folder")
    files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS)
    if not files:
        raise ValueError(f"`{name}` {os.fspath(folder)!r} holds no image ({', '.join(IMAGE_EXTENSIONS)})")
    return files


def read_image(path: str | os.PathLike) -> Tensor:
    """Read an image file as a ``(3, H, W)`` float32 tensor in [0, 1] (alpha dropped, grey expanded to RGB)."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    return torch.from_numpy(arr).permute(2, 0, 1).float().div_(255.0)


def read_images(folder: str | os.PathLike, name: str = "folder") -> tuple[list[Path], list[Tensor]]:
    """All images of a folder (:func:`list_images`) as ``(3, H, W)`` tensors; sizes may differ."""
    files = list_images(folder, name)
    return files, [read_image(f) for f in files]
