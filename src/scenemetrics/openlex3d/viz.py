"""Per-point Top-N category colouring: colours, a PLY writer and a top-down PNG picture (no matplotlib).

Colours follow the paper's figures (seaborn "colorblind" palette; vis_sim in the paper's yellow): synonyms green,
depictions blue, visually similar yellow, clutter pink, missing grey, incorrect red/orange, not evaluated white.

Example:
    >>> import numpy as np
    >>> from scenemetrics.openlex3d import colorize_categories
    >>> colorize_categories(np.array([0, 5, -1])).tolist()
    [[2, 158, 115], [213, 94, 0], [255, 255, 255]]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from scenemetrics.types import TensorOrArray

from ._checks import check_int_array, check_points, to_numpy

__all__ = [
    "CATEGORY_COLORS",
    "category_picture",
    "colorize_categories",
    "render_topdown",
    "save_category_ply",
    "save_category_png",
]

CATEGORY_DESCRIPTIONS: dict[str, str] = {
    "synonyms": "synonym",
    "depictions": "depiction",
    "vis_sim": "visually similar",
    "clutter": "clutter",
    "missing": "missing",
    "incorrect": "incorrect",
    "none": "not evaluated",
}
"""Legend text of each category."""

CATEGORY_COLORS: dict[str, tuple[int, int, int]] = {
    "synonyms": (2, 158, 115),
    "depictions": (1, 115, 178),
    "vis_sim": (236, 225, 51),
    "clutter": (204, 120, 188),
    "missing": (148, 148, 148),
    "incorrect": (213, 94, 0),
    "none": (255, 255, 255),
}
"""RGB colour per category name; ``"none"`` is code -1 (not evaluated)."""

# row c + 1 is the colour of code c (codes -1..5)
_PALETTE = np.array([CATEGORY_COLORS["none"], *(v for k, v in CATEGORY_COLORS.items() if k != "none")], np.uint8)


def _codes(point_categories: Any, n: int | None = None) -> np.ndarray:
    codes = check_int_array(point_categories, "point_categories", n)
    bad = (codes < -1) | (codes > 5)
    if bad.any():
        raise ValueError(
            f"`point_categories` must hold codes in [-1, 5]; received {int(codes[bad][0])} "
            f"at position {int(np.flatnonzero(bad)[0])}"
        )
    return codes


def colorize_categories(point_categories: TensorOrArray) -> np.ndarray:
    """``(G, 3)`` uint8 RGB colours of category codes ``-1..5`` (e.g. :attr:`TopNResult.point_categories`).

    Raises:
        ValueError: a code outside ``[-1, 5]`` or not 1-D.
        TypeError: not an integer array.
    """
    return _PALETTE[_codes(point_categories) + 1]


def save_category_ply(path: str | os.PathLike, points: TensorOrArray, point_categories: TensorOrArray) -> None:
    """Write a binary little-endian PLY with ``x y z`` (float32), ``red green blue`` (uchar), ``category`` (char).

    Readable by :func:`~scenemetrics.openlex3d.read_point_cloud` and by common viewers.
    """
    pts = check_points(points, "points")
    codes = _codes(point_categories, len(pts))
    colors = _PALETTE[codes + 1]
    record = np.dtype(
        [("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("category", "i1")]
    )
    data = np.empty(len(pts), dtype=record)
    for i, c in enumerate("xyz"):
        data[c] = pts[:, i]
    for i, c in enumerate(("red", "green", "blue")):
        data[c] = colors[:, i]
    data["category"] = codes
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment scenemetrics OpenLex3D categories: "
        "0 synonyms 1 depictions 2 vis_sim 3 clutter 4 missing 5 incorrect -1 none\n"
        f"element vertex {len(pts)}\nproperty float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty char category\nend_header\n"
    )
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(data.tobytes())


def render_topdown(
    points: TensorOrArray,
    point_categories: TensorOrArray,
    *,
    resolution: int = 1024,
    point_size: int = 2,
    background: tuple[int, int, int] = (0, 0, 0),
) -> np.ndarray:
    """Orthographic view from +z (x right, y up) of the coloured points: ``(H, W, 3)`` uint8.

    The square image is fitted to the x/y extent with a 2 % margin; points are ``point_size``-pixel squares drawn
    in order of increasing z, so the highest point wins a pixel (equal z: the later point).

    Raises:
        ValueError: bad points/codes, ``resolution`` or ``point_size`` < 1, or a background that is not RGB.
    """
    pts = check_points(points, "points")
    codes = _codes(point_categories, len(pts))
    for name, value in (("resolution", resolution), ("point_size", point_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be an int >= 1; received {value!r}")
    bg = np.asarray(background)
    if bg.shape != (3,) or bg.min() < 0 or bg.max() > 255:
        raise ValueError(f"`background` must be an RGB triple in [0, 255]; received {background!r}")
    image = np.empty((resolution, resolution, 3), dtype=np.uint8)
    image[:] = bg.astype(np.uint8)
    if len(pts) == 0:
        return image
    lo, hi = pts[:, :2].min(axis=0), pts[:, :2].max(axis=0)
    span = float((hi - lo).max()) or 1.0
    side = span * 1.04  # 2 % margin on each side
    center = (lo + hi) / 2
    col = np.floor((pts[:, 0] - center[0]) / side * resolution + resolution / 2).astype(np.int64)
    row = np.floor((center[1] - pts[:, 1]) / side * resolution + resolution / 2).astype(np.int64)
    order = np.argsort(pts[:, 2], kind="stable")  # drawing order: later entries win
    rank = np.empty(len(pts), dtype=np.int64)
    rank[order] = np.arange(len(pts))
    offsets = np.arange(-((point_size - 1) // 2), point_size // 2 + 1)
    dr, dc = np.meshgrid(offsets, offsets, indexing="ij")
    rr = (row[:, None] + dr.reshape(1, -1)).reshape(-1)
    cc = (col[:, None] + dc.reshape(1, -1)).reshape(-1)
    who = np.repeat(np.arange(len(pts)), dr.size)
    inside = (rr >= 0) & (rr < resolution) & (cc >= 0) & (cc < resolution)
    pix, who = rr[inside] * resolution + cc[inside], who[inside]
    by = np.lexsort((rank[who], pix))
    pix, who = pix[by], who[by]
    last = np.r_[pix[1:] != pix[:-1], True]
    image.reshape(-1, 3)[pix[last]] = _PALETTE[codes[who[last]] + 1]
    return image


def category_picture(
    points: TensorOrArray,
    point_categories: TensorOrArray,
    *,
    title: str = "OpenLex3D: Top-N category of each ground-truth point (top-down view)",
    **render_kwargs: Any,
) -> Any:
    """:func:`render_topdown` with a title, an axis label and a legend giving each category's colour and share.

    Args:
        points: ``(G, 3)`` point coordinates.
        point_categories: ``(G,)`` codes ``-1..5``.
        title: picture title.
        **render_kwargs: passed to :func:`render_topdown`.

    Returns:
        A :class:`scenemetrics.viz.Picture`; its ``legend`` lists ``("<category> (<share> %)", rgb)`` for every
        category, and ``info["counts"]`` the number of points per category name.
    """
    from scenemetrics.viz import panel

    pts = to_numpy(points, "points")
    image = render_topdown(pts, point_categories, **render_kwargs)
    codes = _codes(point_categories, len(check_points(pts, "points")))
    total = max(len(codes), 1)
    names = ["none", *(k for k in CATEGORY_COLORS if k != "none")]
    counts = {name: int((codes == code).sum()) for code, name in enumerate(names, start=-1)}
    legend = [
        (f"{CATEGORY_DESCRIPTIONS[name]} ({100 * counts[name] / total:.1f} %)", CATEGORY_COLORS[name])
        for name in [*names[1:], "none"]
    ]
    background = tuple(int(c) for c in render_kwargs.get("background", (0, 0, 0)))
    bg_name = {(0, 0, 0): "black", (255, 255, 255): "white"}.get(background, f"RGB {background}")
    picture = panel(
        [("view from above (+z): x to the right, y up", image)],
        title=title,
        legend=legend,
        notes=[
            f"{len(codes)} points; the highest point wins a pixel; {bg_name} background = no point. "
            "Shares are of all points."
        ],
        min_height=0,
    )
    picture.info = {"counts": counts}
    return picture


def save_category_png(
    path: str | os.PathLike,
    points: TensorOrArray,
    point_categories: TensorOrArray,
    *,
    legend: bool = True,
    **kwargs: Any,
) -> None:
    """Write the top-down category picture as a PNG (Pillow).

    With ``legend=True`` (default) the file is :func:`category_picture` (title, axis label, colour legend); with
    ``legend=False`` it is the bare :func:`render_topdown` image. Other keyword arguments go to those functions
    (``title`` only with the legend).
    """
    from PIL import Image

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if legend:
        category_picture(points, point_categories, **kwargs).save(p)
        return
    image = render_topdown(to_numpy(points, "points"), point_categories, **kwargs)
    Image.fromarray(image).save(p)
