"""Shared colormaps and pictures: metric maps to RGB, overlays, titled panels with colour bars and legends, PNGs.

Two kinds of output come from this module:

* **Values for machines.** :func:`apply_colormap` colours a map on a **fixed** range (default [0, 1]), so colours
  are comparable across images and training steps; the command line also keeps every PuzzleSim map as exact
  float32 numbers (``maps/<name>_raw.npy``).
* **Pictures for people.** A map whose values sit in a narrow band (PuzzleSim maps often span 0.95-0.99) is one flat
  colour on a fixed scale. Pictures therefore use a **robust display range**, :func:`robust_range`: the 2nd to
  98th percentile of the map shown (widened to at least ``min_span``, keeping the upper end, so a flat map stays
  flat). Values outside the range are drawn with the end colours. Every picture made by :func:`panel` carries a
  title, a label over each image, and a colour bar whose tick labels are the **real** map values (or a legend for
  categorical colours). Colours are relative to one picture; read values off its colour bar. The pictures are drawn
  with Pillow and its default font only, so they look the same with or without matplotlib.

``jet`` and ``gray`` (and their ``_r`` reversals) are built in; any other colormap name is looked up in matplotlib
when it is installed (``pip install "scenemetrics[viz]"``). PuzzleSim maps are similarities (high = plausible); the
authors show them with reversed jet so that artifacts are warm, hence the default ``"jet_r"``.

Example:
    >>> import torch
    >>> from scenemetrics.viz import apply_colormap, map_picture
    >>> apply_colormap(torch.tensor([[0.0, 1.0]])).permute(1, 2, 0).tolist()
    [[[128, 0, 0], [0, 0, 128]]]
    >>> pic = map_picture(torch.linspace(0.95, 0.99, 64 * 64).view(64, 64), title="PuzzleSim map")
    >>> pic.colorbar.labels[0], pic.colorbar.labels[-1]
    ('0.9892', '0.9508')
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "BUILTIN_COLORMAPS",
    "ColorBar",
    "DisplayRange",
    "Picture",
    "apply_colormap",
    "blend",
    "colormap_for",
    "comparison_panel",
    "font",
    "hstack",
    "map_overlay",
    "map_picture",
    "panel",
    "quality_range",
    "robust_range",
    "save_png",
    "save_raw_map",
    "to_uint8",
]

BUILTIN_COLORMAPS = ("jet", "jet_r", "gray", "gray_r")


def _jet(v: Tensor) -> Tensor:
    # MATLAB-style jet as piecewise linear ramps: r = clip(1.5 - |4v - 3|), g = ... |4v - 2|, b = ... |4v - 1|.
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


def colormap_for(colormap: str, higher_is_better: bool | None) -> str:
    """The colormap of a map: ``colormap`` for similarities (and maps of unknown direction), its reversal for errors.

    Example:
        >>> colormap_for("jet_r", True), colormap_for("jet_r", False), colormap_for("viridis", False)
        ('jet_r', 'jet', 'viridis_r')
    """
    if higher_is_better is False:
        return colormap[:-2] if colormap.endswith("_r") else f"{colormap}_r"
    return colormap


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
    """Write a ``(3, H, W)`` / ``(H, W)`` image (float in [0, 1] or uint8) as PNG; creates parent folders.

    zlib's fastest level: the same pixels (PNG is lossless) in about half the time of Pillow's default level 6, for
    files a few percent larger (report panels of 400 x 600 views: 3 % larger, 1.8 times faster).
    """
    from PIL import Image

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(to_uint8(image).permute(1, 2, 0).numpy()).save(p, format="PNG", compress_level=1)
    return p


# ---- pictures for people -------------------------------------------------------------------------------------------

TEXT_COLOR = (25, 25, 25)
NOTE_COLOR = (80, 80, 80)
BACKGROUND = (255, 255, 255)


@dataclass(frozen=True)
class DisplayRange:
    """The value range a picture's colours span.

    Attributes:
        vmin: value drawn with the colormap's first colour (lower values get the same colour).
        vmax: value drawn with the last colour (higher values get the same colour).
        rule: how the range was chosen, in words (printed under the picture).
    """

    vmin: float
    vmax: float
    rule: str = "fixed range"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.vmin) and math.isfinite(self.vmax) and self.vmax > self.vmin):
            raise ValueError(f"`vmax` must be finite and greater than `vmin`; received {self.vmin}, {self.vmax}")


def robust_range(
    values: Tensor | np.ndarray | Sequence[Tensor | np.ndarray],
    *,
    low: float = 2.0,
    high: float = 98.0,
    min_span: float = 0.01,
    up_to: float | None = None,
    down_to: float | None = None,
) -> DisplayRange:
    """Display range of one map (or several maps shown with one colour bar): the ``low``-``high`` percentiles.

    Percentiles ignore the extreme ``low`` % at each end, so a few outlier pixels do not wash out the picture, and
    adapt to any scene: a PuzzleSim map between 0.95 and 0.99 uses the whole colormap. ``up_to`` / ``down_to``
    widen the range to a value first. When the range is narrower than ``min_span`` (an almost flat map), it becomes
    ``[vmax - min_span, vmax]``, or ``[vmin, vmin + min_span]`` with ``down_to``: a flat map then shows the colour
    of the end it sits at (for PuzzleSim, "plausible"; for an error map, "no error") instead of magnified noise.
    NaN and infinite values are ignored.

    Args:
        values: a map, or a sequence of maps pooled together.
        low: lower percentile in [0, 100).
        high: upper percentile in (low, 100].
        min_span: smallest ``vmax - vmin`` (> 0).
        up_to: the range reaches at least up to this value (the value of a perfect render in a similarity map:
            1); applied before ``min_span``.
        down_to: the range reaches at least down to this value (a perfect render in an error map: 0).

    Returns:
        A :class:`DisplayRange` whose ``rule`` states the percentiles.

    Raises:
        ValueError: bad percentiles or ``min_span``, or no finite value.

    Example:
        >>> r = robust_range(torch.linspace(0, 1, 101))
        >>> round(r.vmin, 6), round(r.vmax, 6)
        (0.02, 0.98)
        >>> r = robust_range(torch.linspace(0.5, 0.9, 101), up_to=1.0)
        >>> round(r.vmin, 6), r.vmax, r.rule
        (0.508, 1.0, 'colours span the 2nd-98th percentile of the map, widened to include 1')
    """
    if not (0.0 <= low < high <= 100.0):
        raise ValueError(f"`low` and `high` must satisfy 0 <= low < high <= 100; received {low}, {high}")
    if not (math.isfinite(min_span) and min_span > 0):
        raise ValueError(f"`min_span` must be a positive number; received {min_span!r}")
    items = [values] if isinstance(values, (Tensor, np.ndarray)) else list(values)
    arrays = []
    for item in items:
        a = item.detach().to("cpu", torch.float64).numpy() if isinstance(item, Tensor) else np.asarray(item, float)
        arrays.append(a.reshape(-1))
    flat = np.concatenate(arrays) if arrays else np.zeros(0)
    flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        raise ValueError("`values` holds no finite value to choose a display range from")
    vmin, vmax = (float(v) for v in np.percentile(flat, [low, high]))
    rule = f"colours span the {_ordinal(low)}-{_ordinal(high)} percentile of the map"
    if up_to is not None and vmax < up_to:
        vmax = float(up_to)
        rule += f", widened to include {up_to:g}"
    if down_to is not None and vmin > down_to:
        vmin = float(down_to)
        rule += f", widened to include {down_to:g}"
    if vmax - vmin < min_span:
        if down_to is not None:
            vmax = vmin + min_span
            rule = f"almost flat map: colours span [{vmin:g}, {vmin:g} + {min_span:g}]"
        else:
            top = f"{vmax:g}" if up_to is not None else f"{_ordinal(high)} percentile"
            vmin = vmax - min_span
            rule = f"almost flat map: colours span [{top} - {min_span:g}, {top}]"
    return DisplayRange(vmin, vmax, rule)


def quality_range(values: Tensor | np.ndarray, higher_is_better: bool | None) -> DisplayRange:
    """:func:`robust_range` of a quality map, widened to the value of a perfect render: up to 1 for a similarity
    (``higher_is_better=True``: PuzzleSim, SSIM), down to 0 for an error (``False``: LPIPS, absolute error); not
    widened when the direction is unknown (``None``).

    Example:
        >>> r = quality_range(torch.linspace(0.1, 0.3, 101), higher_is_better=False)
        >>> r.vmin, round(r.vmax, 3)
        (0.0, 0.296)
    """
    return robust_range(
        values, up_to=1.0 if higher_is_better is True else None, down_to=0.0 if higher_is_better is False else None
    )


def _ordinal(p: float) -> str:
    n = f"{p:g}"
    if not float(p).is_integer():
        return n + "th"
    k = int(p)
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return n + suffix


@dataclass(frozen=True)
class ColorBar:
    """A colour bar drawn by :func:`panel`; after drawing, ``box`` and ``ticks`` say where it is.

    Attributes:
        range: the values the bar spans (top = ``vmax``).
        colormap: colormap name (as :func:`apply_colormap`).
        label: what the values are, e.g. ``"PuzzleSim similarity"``.
        box: ``(x0, y0, x1, y1)`` of the coloured bar in the picture (exclusive ends); ``None`` before drawing.
        values: tick values, top to bottom.
        labels: tick labels, top to bottom (the values, formatted).
        ticks_y: picture row of each tick.
    """

    range: DisplayRange
    colormap: str = "jet_r"
    label: str = ""
    box: tuple[int, int, int, int] | None = None
    values: tuple[float, ...] = ()
    labels: tuple[str, ...] = ()
    ticks_y: tuple[int, ...] = ()


@dataclass
class Picture:
    """A picture for people and what is drawn where (for tests and captions).

    Attributes:
        image: ``uint8`` ``(3, H, W)`` on the CPU.
        title: the title drawn at the top.
        tiles: one dict per image: ``label`` and ``box`` ``(x0, y0, x1, y1)``.
        colorbar: the drawn :class:`ColorBar` (``None`` without one).
        legend: ``(text, rgb)`` entries drawn as colour swatches.
        notes: text lines drawn under the images.
        info: extra facts from the caller (e.g. which objects are labelled).
    """

    image: Tensor
    title: str
    tiles: list[dict[str, Any]] = field(default_factory=list)
    colorbar: ColorBar | None = None
    legend: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the picture as PNG (creates parent folders); returns the path."""
        return save_png(self.image, path)


@functools.lru_cache(maxsize=16)
def font(size: int) -> Any:
    """The font of every picture: Pillow's bundled default font at ``size`` pixels.

    It is a scalable TrueType font when Pillow has FreeType (the usual wheels), else Pillow's small bitmap font.
    """
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _text_width(text: str, size: int) -> int:
    return math.ceil(font(size).getlength(text))


def _line_height(size: int) -> int:
    return round(size * 1.25) + 1


def _wrap(text: str, width: int, size: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels (a word longer than the width gets a line of its own)."""
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and _text_width(candidate, size) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


def _hwc(image: Tensor | np.ndarray) -> np.ndarray:
    if isinstance(image, np.ndarray):
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"a numpy tile must be uint8 (H, W, 3); received {image.dtype} {image.shape}")
        return image
    return to_uint8(image).permute(1, 2, 0).numpy()


def _tick_format(vmin: float, vmax: float, n: int) -> str:
    step = (vmax - vmin) / max(n - 1, 1)
    decimals = min(6, max(2, math.ceil(-math.log10(step)) + 1)) if step > 0 else 2
    return f"{{:.{decimals}f}}"


def panel(
    tiles: Sequence[tuple[str, Tensor | np.ndarray]],
    *,
    title: str,
    colorbar: ColorBar | None = None,
    legend: Sequence[tuple[str, tuple[int, int, int]]] = (),
    notes: Sequence[str] = (),
    min_height: int = 160,
    font_size: int | None = None,
    separator: int | None = None,
) -> Picture:
    """Images side by side under a title, each with a label, plus an optional colour bar, legend and notes.

    Layout, top to bottom: the title (wrapped), a label over each image, the images (top-aligned) with the colour
    bar on the right, the legend (colour swatches with their meaning), then the notes. Images lower than
    ``min_height`` are enlarged by an integer factor (nearest neighbour, so pixels stay sharp).

    Args:
        tiles: ``(label, image)`` pairs; images are ``(3, H, W)`` tensors (float in [0, 1] or uint8) or uint8
            ``(H, W, 3)`` arrays.
        title: text at the top.
        colorbar: a :class:`ColorBar` to draw at the right end of the row of images.
        legend: ``(text, rgb)`` entries.
        notes: lines of small text under the images.
        min_height: smallest displayed image height in pixels (0 keeps sizes).
        font_size: text size in pixels (default: from the image height, 10 to 20).
        separator: gap between images in pixels (default from the font size).

    Returns:
        A :class:`Picture` (the colour bar in it has its ``box`` and ticks filled in).

    Raises:
        ValueError: no tile, or a tile that is not an image.

    Example:
        >>> pic = panel([("a", torch.zeros(3, 8, 8)), ("b", torch.ones(3, 8, 8))], title="two squares")
        >>> [t["label"] for t in pic.tiles], pic.image.dtype
        (['a', 'b'], torch.uint8)
    """
    from PIL import Image, ImageDraw

    if not tiles:
        raise ValueError("`tiles` must hold at least one (label, image) pair")
    arrays = [(str(label), _hwc(img)) for label, img in tiles]
    tallest = max(a.shape[0] for _, a in arrays)
    factor = max(1, math.ceil(min_height / tallest)) if tallest < min_height else 1
    if factor > 1:
        arrays = [(label, a.repeat(factor, axis=0).repeat(factor, axis=1)) for label, a in arrays]
    row_h = max(a.shape[0] for _, a in arrays)
    fs = int(font_size) if font_size else int(min(20, max(10, round(row_h / 14))))
    gap = int(separator) if separator is not None else max(4, fs // 2)
    margin = max(4, fs // 2)
    label_h = _line_height(fs)

    bar_w = bar_block = 0
    tick_fmt = ""
    n_ticks = 0
    if colorbar is not None:
        rng = colorbar.range
        n_ticks = 5 if row_h >= 10 * fs else (3 if row_h >= 4 * fs else 2)
        tick_fmt = _tick_format(rng.vmin, rng.vmax, n_ticks)
        tick_values = [rng.vmax - k * (rng.vmax - rng.vmin) / (n_ticks - 1) for k in range(n_ticks)]
        tick_labels = [tick_fmt.format(v) for v in tick_values]
        bar_w = max(10, fs)
        bar_block = gap + bar_w + 4 + max(_text_width(t, fs) for t in tick_labels)
        bar_block = max(bar_block, gap + _text_width(colorbar.label, fs - 1))
    row_w = sum(a.shape[1] for _, a in arrays) + gap * (len(arrays) - 1) + bar_block
    width = row_w + 2 * margin
    inner = width - 2 * margin
    title_fs = fs + 2
    title_lines = _wrap(title, inner, title_fs)
    label_lines = [_wrap(label, a.shape[1], fs) for label, a in arrays]
    n_label_lines = max(max(len(x) for x in label_lines), 1)
    legend_rows: list[list[tuple[str, tuple[int, int, int], int]]] = [[]]
    if legend:
        used = 0
        for text, rgb in legend:
            w = fs + 4 + _text_width(text, fs) + 2 * fs
            if legend_rows[-1] and used + w > inner:
                legend_rows.append([])
                used = 0
            legend_rows[-1].append((str(text), tuple(int(c) for c in rgb), w))
            used += w
    note_lines = [line for note in notes for line in _wrap(note, inner, fs - 1)]

    y_title = margin
    y_labels = y_title + len(title_lines) * _line_height(title_fs) + fs // 2
    y_row = y_labels + n_label_lines * label_h
    y_legend = y_row + row_h + margin
    n_legend = len(legend_rows) if legend else 0
    y_notes = y_legend + n_legend * _line_height(fs) + (fs // 3 if legend else 0)
    height = y_notes + len(note_lines) * _line_height(fs - 1) + margin

    canvas = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    for k, line in enumerate(title_lines):
        draw.text((margin, y_title + k * _line_height(title_fs)), line, fill=TEXT_COLOR, font=font(title_fs))
    placed: list[dict[str, Any]] = []
    x = margin
    for (label, a), lines in zip(arrays, label_lines, strict=True):
        for k, line in enumerate(lines):
            draw.text((x, y_labels + k * label_h), line, fill=TEXT_COLOR, font=font(fs))
        canvas.paste(Image.fromarray(np.ascontiguousarray(a)), (x, y_row))
        placed.append({"label": label, "box": (x, y_row, x + a.shape[1], y_row + a.shape[0]), "scale": factor})
        x += a.shape[1] + gap
    drawn_bar = None
    if colorbar is not None:
        rng = colorbar.range
        x0 = x
        column = torch.tensor(
            [rng.vmax - (y + 0.5) / row_h * (rng.vmax - rng.vmin) for y in range(row_h)], dtype=torch.float64
        )
        strip = apply_colormap(
            column.view(row_h, 1).expand(row_h, bar_w).float(), colorbar.colormap, rng.vmin, rng.vmax
        )
        canvas.paste(Image.fromarray(strip.permute(1, 2, 0).numpy()), (x0, y_row))
        draw.rectangle((x0 - 1, y_row - 1, x0 + bar_w, y_row + row_h), outline=TEXT_COLOR)
        ticks_y = []
        for k, text in enumerate(tick_labels):
            ty = y_row + round(k * (row_h - 1) / (n_ticks - 1))
            ticks_y.append(ty)
            draw.line((x0 + bar_w, ty, x0 + bar_w + 3, ty), fill=TEXT_COLOR)
            text_y = min(max(ty - fs // 2 - 1, y_row - fs // 2), y_row + row_h - fs)
            draw.text((x0 + bar_w + 5, text_y), text, fill=TEXT_COLOR, font=font(fs))
        if colorbar.label:
            draw.text(
                (x0, y_labels + (n_label_lines - 1) * label_h), colorbar.label, fill=TEXT_COLOR, font=font(fs - 1)
            )
        drawn_bar = ColorBar(
            rng,
            colorbar.colormap,
            colorbar.label,
            (x0, y_row, x0 + bar_w, y_row + row_h),
            tuple(tick_values),
            tuple(tick_labels),
            tuple(ticks_y),
        )
    if legend:
        for r, entries in enumerate(legend_rows):
            lx, ly = margin, y_legend + r * _line_height(fs)
            for text, rgb, w in entries:
                draw.rectangle((lx, ly + 1, lx + fs - 1, ly + fs), fill=rgb, outline=TEXT_COLOR)
                draw.text((lx + fs + 4, ly), text, fill=TEXT_COLOR, font=font(fs))
                lx += w
    for k, line in enumerate(note_lines):
        draw.text((margin, y_notes + k * _line_height(fs - 1)), line, fill=NOTE_COLOR, font=font(fs - 1))
    image = torch.from_numpy(np.asarray(canvas).copy()).permute(2, 0, 1).contiguous()
    return Picture(
        image=image,
        title=title,
        tiles=placed,
        colorbar=drawn_bar,
        legend=[(t, tuple(int(c) for c in rgb)) for t, rgb in legend],
        notes=list(notes),
    )


def map_overlay(
    image: Tensor,
    values: Tensor,
    display_range: DisplayRange,
    colormap: str = "jet_r",
    *,
    max_alpha: float = 0.85,
    low_is_bad: bool = True,
) -> Tensor:
    """``image`` with the coloured map blended in where the map is bad, the image itself where it is good.

    With ``t`` the value's position in ``display_range`` (0 at ``vmin``, 1 at ``vmax``) and ``b = 1 - t`` when low
    values are bad (PuzzleSim) or ``b = t`` otherwise, the colour's weight is ``max_alpha * b**2``: the worst
    pixels show the map's colour, the best the untouched image.

    Returns:
        ``uint8`` ``(3, H, W)``.
    """
    v = values.detach().to("cpu", torch.float32)
    t = ((v - display_range.vmin) / (display_range.vmax - display_range.vmin)).clamp(0, 1).nan_to_num(0.0)
    bad = 1.0 - t if low_is_bad else t
    colored = apply_colormap(v, colormap, display_range.vmin, display_range.vmax)
    return blend(image, colored, max_alpha * bad**2)


def map_picture(
    values: Tensor,
    *,
    title: str,
    image: Tensor | None = None,
    show: Sequence[str] = ("map",),
    display_range: DisplayRange | None = None,
    colormap: str = "jet_r",
    value_label: str = "PuzzleSim similarity",
    meaning: str | None = None,
    extra_tiles: Sequence[tuple[str, Tensor | np.ndarray]] = (),
    notes: Sequence[str] = (),
    labels: dict[str, str] | None = None,
    min_height: int = 160,
    font_size: int | None = None,
) -> Picture:
    """The picture of a metric map for people: chosen tiles, a colour bar with real values and a note on scaling.

    This is the one place where map pictures are scaled and labelled; the demo, the ``puzzlesim`` command, the
    evaluation report, the training callbacks and the inpainting command all call it.

    Args:
        values: ``(H, W)`` map.
        title: picture title.
        image: the ``(3, H, W)`` image the map belongs to (needed for the ``"image"`` and ``"overlay"`` tiles).
        show: tiles in order, from ``"image"``, ``"map"`` and ``"overlay"`` (:func:`map_overlay`).
        display_range: colour range; default :func:`robust_range` of ``values``.
        colormap: colormap name.
        value_label: what the values are (over the colour bar).
        meaning: how to read the colours (added to the notes); default: "warm = low similarity = likely artifact"
            for ``jet_r``, else a pointer to the colour bar.
        extra_tiles: more ``(label, image)`` tiles after the map tiles (e.g. a mask).
        notes: more lines under the picture.
        labels: labels of the ``show`` tiles by name (defaults: "image", "map", "map over the image (bad areas
            coloured)").
        min_height: as :func:`panel`.
        font_size: as :func:`panel`.

    Returns:
        A :class:`Picture`; ``picture.colorbar.range`` is the display range used.

    Raises:
        ValueError: ``values`` is not 2-D, an unknown tile name, or an image tile without ``image``.
    """
    if not isinstance(values, Tensor) or values.ndim != 2:
        shape = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
        raise ValueError(f"`values` must be a 2-D tensor (H, W); received {shape}")
    unknown = [s for s in show if s not in ("image", "map", "overlay")]
    if unknown:
        raise ValueError(f"`show` entries must be 'image', 'map' or 'overlay'; received {unknown}")
    if image is None and any(s in ("image", "overlay") for s in show):
        raise ValueError("`image` is needed to show the 'image' or 'overlay' tile")
    rng = display_range if display_range is not None else robust_range(values)
    if meaning is None:
        meaning = (
            "warm = low similarity = likely artifact"
            if colormap == "jet_r"
            else f"colormap {colormap}: read values on the colour bar (top = high)"
        )
    labels = {"image": "image", "map": "map", "overlay": "map over the image (bad areas coloured)", **(labels or {})}
    tiles: list[tuple[str, Tensor | np.ndarray]] = []
    for name in show:
        if name == "image":
            tiles.append((labels[name], image))
        elif name == "map":
            tiles.append((labels[name], apply_colormap(values, colormap, rng.vmin, rng.vmax)))
        else:
            tiles.append((labels[name], map_overlay(image, values, rng, colormap)))
    tiles.extend(extra_tiles)
    v = values.detach().float()
    finite = v[torch.isfinite(v)]
    stats = (
        f"map min {float(finite.min()):.4f}, mean {float(finite.mean()):.4f}, max {float(finite.max()):.4f}"
        if finite.numel()
        else "map has no finite value"
    )
    lines = [f"{meaning}; {rng.rule} ({rng.vmin:.4f} to {rng.vmax:.4f}); {stats}", *notes]
    return panel(
        tiles,
        title=title,
        colorbar=ColorBar(rng, colormap, value_label),
        notes=lines,
        min_height=min_height,
        font_size=font_size,
    )


def comparison_panel(
    render: Tensor,
    target: Tensor,
    values: Tensor,
    *,
    title: str,
    display_range: DisplayRange,
    colormap: str = "jet",
    value_label: str = "error",
    labels: Sequence[str] = ("render", "ground truth", "map"),
    notes: Sequence[str] = (),
    font_size: int | None = None,
) -> Picture:
    """Render | ground truth | coloured map, each at the images' own resolution (unscaled), with a colour bar.

    The three tiles have the same size as the images, pixel for pixel (``min_height=0``: nothing is enlarged or
    shrunk, so a person can compare pixels); the map is coloured on ``display_range`` (values outside take the end
    colours) and the colour bar's ticks are real map values. This is the training callbacks' panel
    (``<prefix>panel/<i>``) and the ``scenemetrics eval`` report's panel of the worst views.

    Args:
        render: ``(3, H, W)`` image (float in [0, 1] or uint8).
        target: its ground truth, same shape.
        values: ``(H, W)`` map comparing them (e.g. :func:`scenemetrics.fullref.abs_error_map`).
        title: text at the top (say which map and, during training, which step).
        display_range: the values the colours span.
        colormap: colormap of the map (``"jet"``: high = warm; use ``"jet_r"`` for similarities, where low is bad).
        value_label: what the map's values are (over the colour bar).
        labels: labels of the render, ground-truth and map tiles.
        notes: lines under the picture (e.g. how the range was chosen).
        font_size: as :func:`panel`.

    Returns:
        A :class:`Picture` whose ``tiles`` give the three boxes (each ``W x H``).

    Raises:
        ValueError: images of different sizes, or a map of another size than the images.

    Example:
        >>> import torch
        >>> r, t = torch.zeros(3, 20, 30), torch.full((3, 20, 30), 0.5)
        >>> pic = comparison_panel(r, t, (r - t).abs().mean(0), title="abs error", display_range=DisplayRange(0, 1))
        >>> [(x1 - x0, y1 - y0) for x0, y0, x1, y1 in (tile["box"] for tile in pic.tiles)]
        [(30, 20), (30, 20), (30, 20)]
    """
    a, b = to_uint8(render), to_uint8(target)
    if a.shape != b.shape:
        raise ValueError(f"`render` {tuple(a.shape)} and `target` {tuple(b.shape)} must have the same shape")
    if not isinstance(values, Tensor) or tuple(values.shape) != tuple(a.shape[1:]):
        shape = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
        raise ValueError(f"`values` must be a (H, W) map of the images' size {tuple(a.shape[1:])}; received {shape}")
    coloured = apply_colormap(values, colormap, display_range.vmin, display_range.vmax)
    tiles = [(labels[0], a), (labels[1], b), (labels[2], coloured)]
    return panel(
        tiles,
        title=title,
        colorbar=ColorBar(display_range, colormap, value_label),
        notes=notes,
        min_height=0,
        font_size=font_size,
    )


def save_raw_map(values: Tensor, path: str | os.PathLike) -> Path:
    """Save a map's exact values for machines: a float32 ``.npy`` file (``numpy.load`` reads it back).

    Raises:
        ValueError: ``values`` is not 2-D or ``path`` does not end in ``.npy``.
    """
    if not isinstance(values, Tensor) or values.ndim != 2:
        shape = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
        raise ValueError(f"`values` must be a 2-D tensor (H, W); received {shape}")
    p = Path(path)
    if p.suffix != ".npy":
        raise ValueError(f"`path` must end in .npy; received {str(path)!r}")
    p.parent.mkdir(parents=True, exist_ok=True)
    np.save(p, values.detach().to("cpu", torch.float32).numpy())
    return p
