"""The one input rule for every image API of scenemetrics, plus the one reader of image files (:func:`read_image`).

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

import importlib.util
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = [
    "BACKGROUNDS",
    "IMAGE_EXTENSIONS",
    "RANGE_TOLERANCE",
    "ImageFileError",
    "ImageTypeError",
    "check_image_list",
    "check_images",
    "list_images",
    "read_image",
    "read_image_with_alpha",
    "read_images",
    "read_mask",
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
            # one pass: the extremes are NaN when any value is NaN and infinite when any value is infinite
            lo, hi = (float(v) for v in torch.aminmax(out))
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"`{name}` contains NaN or infinite values (shape {tuple(images.shape)})")
            if check_range and (lo < -RANGE_TOLERANCE or hi > 1.0 + RANGE_TOLERANCE):
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


BACKGROUNDS = ("white", "black")
"""Accepted ``background=`` values of :func:`read_image` (``None`` drops the alpha channel)."""


class ImageFileError(ValueError):
    """An image file that cannot be read exactly (unknown mode, out-of-range float, undecodable); names the file."""


def _tile_rawmode(im: object) -> str:
    """The raw mode the decoder stores (``"RGB;16B"`` for a 16-bit RGB PNG that Pillow shows as 8-bit ``RGB``)."""
    tile = getattr(im, "tile", None) or []
    if not tile:
        return ""
    args = tile[0][3]
    return args if isinstance(args, str) else str(args[0]) if isinstance(args, tuple) and args else ""


def _opencv_image(path: Path, why: str) -> tuple[object, str]:
    import numpy as np

    try:
        import cv2
    except ImportError:
        raise ImageFileError(
            f"{path}: {why}; reading it exactly needs OpenCV: pip install opencv-python-headless (or "
            '"scenemetrics[inpaint]"), or save it as an 8/16-bit PNG'
        ) from None
    arr = cv2.imread(os.fspath(path), cv2.IMREAD_UNCHANGED)
    if arr is None:
        raise ImageFileError(f"{path}: {why}, and OpenCV cannot decode it either")
    if arr.ndim == 3 and arr.shape[2] in (3, 4):
        arr = arr[..., [2, 1, 0, 3][: arr.shape[2]]]  # BGR(A) -> RGB(A)
    if arr.dtype == np.uint8:
        return arr.astype(np.float32) / 255.0, f"{arr.shape[-1] if arr.ndim == 3 else 1}-channel 8-bit (OpenCV)"
    if arr.dtype == np.uint16:
        return arr.astype(np.float32) / 65535.0, f"{arr.shape[-1] if arr.ndim == 3 else 1}-channel 16-bit (OpenCV)"
    if arr.dtype in (np.float32, np.float64):
        return arr.astype(np.float32), "float"
    raise ImageFileError(f"{path}: {arr.dtype} pixels have no defined white level; use 8/16-bit or float images")


def _torchvision_png(path: Path, mode: str) -> object:
    """A 16-bit colour PNG decoded by torchvision (a core dependency) where OpenCV is not installed."""
    import numpy as np

    with warnings.catch_warnings():
        # torchvision 0.29 deprecates its decoders in favour of torchcodec; they still decode 16-bit PNG exactly
        warnings.simplefilter("ignore", DeprecationWarning)
        from torchvision.io import ImageReadMode, decode_png, read_file

        data = decode_png(read_file(os.fspath(path)), mode=ImageReadMode.UNCHANGED)
    arr = data.to(torch.int32).permute(1, 2, 0).numpy().astype(np.float32) / 65535.0
    return arr[..., 0] if arr.shape[-1] == 1 else arr


def _decode(path: Path) -> tuple[object, str]:
    """``(array (H, W) or (H, W, C) float32 in [0, 1] with C in 2..4, description of the source)``."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        im = Image.open(path)
    except UnidentifiedImageError:
        return _opencv_image(path, "Pillow cannot decode this file (e.g. a float or 16-bit multi-channel TIFF)")
    except Image.DecompressionBombError as err:
        raise ImageFileError(f"{path}: {err}") from None
    with im:
        mode, rawmode = im.mode, _tile_rawmode(im)
        if mode in ("RGB", "RGBA", "LA") and ";16" in rawmode:
            # Pillow keeps only the high byte of 16-bit colour channels: decode the file itself
            why = f"a 16-bit {mode} {im.format} image, which Pillow reads as 8-bit"
            if im.format == "PNG" and importlib.util.find_spec("cv2") is None:
                return _torchvision_png(path, mode), f"16-bit {mode} PNG"
            return _opencv_image(path, why)
        try:
            im.load()
        except OSError as err:
            raise ImageFileError(f"{path}: cannot decode the image ({err})") from None
        if mode in ("1", "L", "LA", "RGB", "RGBA"):
            arr = np.asarray(im)
            desc = "1-bit" if mode == "1" else f"8-bit {mode}"
            # one pass (the same float32 division as ``astype(np.float32) / 255``, without the intermediate copy)
            return np.divide(arr, np.float32(1.0 if mode == "1" else 255.0), dtype=np.float32), desc
        if mode in ("P", "PA"):
            alpha = mode == "PA" or "transparency" in im.info
            return np.asarray(im.convert("RGBA" if alpha else "RGB")).astype(np.float32) / 255.0, "8-bit palette"
        unsigned16 = mode.startswith("I;16") or (mode == "I" and rawmode.startswith("I;16"))
        if unsigned16 and not (rawmode or mode).endswith("S"):  # signed 16-bit (I;16S) has no white level
            return np.asarray(im).astype(np.float32) / 65535.0, "16-bit grey"
        if mode == "F":
            return np.asarray(im, dtype=np.float32).copy(), "float grey"
        if mode in ("CMYK", "YCbCr", "RGBX", "RGBa", "La"):
            target = "RGBA" if mode in ("RGBa", "La") else "RGB"
            return np.asarray(im.convert(target)).astype(np.float32) / 255.0, f"8-bit {mode}"
    raise ImageFileError(
        f"{path}: image mode {mode!r}{f' (stored as {rawmode})' if rawmode else ''} has no defined white level or "
        "colour meaning here; save it as an 8/16-bit grey, RGB or RGBA PNG, or a float TIFF in [0, 1]"
    )


def _read(path: str | os.PathLike) -> tuple[object, str]:
    """The decoded array, checked: finite and in [0, 1] (floats are never clipped)."""
    import numpy as np

    p = Path(path)
    arr, desc = _decode(p)
    if desc.startswith("float"):
        if not np.isfinite(arr).all():
            raise ImageFileError(f"{p}: the {desc} image holds NaN or infinite values")
        lo, hi = (float(arr.min()), float(arr.max())) if arr.size else (0.0, 0.0)
        if lo < -RANGE_TOLERANCE or hi > 1.0 + RANGE_TOLERANCE:
            raise ImageFileError(
                f"{p}: the {desc} image has values in [{lo:.6g}, {hi:.6g}]; scenemetrics reads float images as "
                "[0, 1] (nothing is clipped): rescale it, or save it as an 8/16-bit PNG"
            )
    return arr, desc


def read_image(path: str | os.PathLike, *, background: str | Sequence[float] | None = None) -> Tensor:
    """Read an image file as a ``(3, H, W)`` float32 tensor in [0, 1]: the one image reader of every command.

    Every mode becomes exact values in [0, 1]: 8-bit (``value / 255``), 16-bit (``value / 65535``: greyscale, RGB and
    RGBA PNG, greyscale TIFF; 16-bit multi-channel TIFF through OpenCV), 1-bit, palette (its colours), and float
    TIFF (taken as is; values outside [0, 1] or not finite are an error, never clipped). Greyscale is repeated to
    RGB. Any other mode (e.g. 32-bit or signed 16-bit integer) is an :class:`ImageFileError` naming the file and
    the mode.

    Args:
        path: the image file.
        background: for images with an alpha channel (RGBA, grey + alpha, palette with transparency): ``None``
            drops alpha (the colour as stored), ``"white"`` / ``"black"`` or an ``(r, g, b)`` triple in [0, 1]
            composite onto that colour (``rgb * a + bg * (1 - a)``, in float32).

    Returns:
        ``(3, H, W)`` float32 in [0, 1].

    Raises:
        ImageFileError: (a ``ValueError``) a mode without a defined white level, float values outside [0, 1], a
            file that cannot be decoded; the message names the file.
        ValueError: ``background`` is not ``None``, ``"white"``, ``"black"`` or three numbers in [0, 1].

    Example:
        >>> import os, tempfile, numpy as np
        >>> from PIL import Image
        >>> path = os.path.join(tempfile.mkdtemp(), "grey16.png")
        >>> Image.fromarray(np.array([[0, 65535]], np.uint16)).save(path)
        >>> read_image(path)[:, 0, 1].tolist()
        [1.0, 1.0, 1.0]
    """
    rgb, _ = read_image_with_alpha(path, background=background)
    return rgb


def _background_color(background: str | Sequence[float] | None) -> object:
    """``background=`` as what the composite multiplies: ``None``, a float, or a float32 ``(3,)`` array."""
    import numpy as np

    if background is None or isinstance(background, str):
        if background not in (None, *BACKGROUNDS):
            raise ValueError(f"`background` must be None, 'white', 'black' or (r, g, b); received {background!r}")
        return None if background is None else (1.0 if background == "white" else 0.0)
    try:
        color = np.asarray(background, dtype=np.float32)
    except (TypeError, ValueError):
        color = None
    if (
        color is None
        or color.shape != (3,)
        or not (np.isfinite(color).all() and (color >= 0).all() and (color <= 1).all())
    ):
        raise ValueError(
            f"`background` must be None, 'white', 'black' or three numbers in [0, 1]; received {background!r}"
        )
    return color


def read_image_with_alpha(
    path: str | os.PathLike, *, background: str | Sequence[float] | None = None
) -> tuple[Tensor, bool]:
    """:func:`read_image` and whether the file had an alpha channel (that ``background`` handled or dropped)."""
    import numpy as np

    bg = _background_color(background)
    arr, _ = _read(path)
    arr = np.asarray(arr, dtype=np.float32)
    if arr.ndim == 2:
        arr = arr[..., None]
    channels = arr.shape[-1]
    has_alpha = channels in (2, 4)
    color = arr[..., : channels - 1] if has_alpha else arr
    if color.shape[-1] == 1:
        color = np.repeat(color, 3, axis=-1)
    if has_alpha and bg is not None:
        alpha = arr[..., -1:]
        color = color * alpha + bg * (1.0 - alpha)
    return torch.from_numpy(np.ascontiguousarray(color.transpose(2, 0, 1))).float(), has_alpha


def read_mask(path: str | os.PathLike) -> Tensor:
    """Read a mask image as a ``(1, H, W)`` float32 tensor in [0, 1] (white = 1), from any mode :func:`read_image`
    reads (8/16-bit, float); colour masks are reduced to luma (ITU-R 601, as Pillow's ``L``), alpha is ignored.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from PIL import Image
        >>> path = os.path.join(tempfile.mkdtemp(), "mask.png")
        >>> Image.fromarray(np.array([[0, 255]], np.uint8)).save(path)
        >>> read_mask(path).tolist()
        [[[0.0, 1.0]]]
    """
    import numpy as np

    arr, _ = _read(path)
    arr = np.asarray(arr, dtype=np.float32)
    if arr.ndim == 3:
        channels = arr.shape[-1]
        color = arr[..., : channels - 1] if channels in (2, 4) else arr
        arr = color[..., 0] if color.shape[-1] == 1 else color @ np.array([0.299, 0.587, 0.114], np.float32)
    return torch.from_numpy(np.ascontiguousarray(np.clip(arr, 0.0, 1.0)))[None]


def read_images(folder: str | os.PathLike, name: str = "folder") -> tuple[list[Path], list[Tensor]]:
    """All images of a folder (:func:`list_images`) as ``(3, H, W)`` tensors; sizes may differ."""
    files = list_images(folder, name)
    return files, [read_image(f) for f in files]
