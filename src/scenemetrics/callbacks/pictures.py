"""What the training callbacks draw, on display ranges that stay fixed across training steps.

Three kinds of picture, all ``uint8`` ``(3, H, W)`` with a title, a colour bar of real values and a line on how
the colours were chosen:

* **metric maps** (``<prefix><name>/map/<i>``): the ``last_maps`` of a metric (PuzzleSim, ``ssim_map``, ...);
* **panels** (``<prefix>panel/<i>``): render | target | error map of a view that has a target, each tile at the
  view's own resolution (unscaled), the map chosen by ``panel_map`` (:data:`PANEL_MAPS`);
* **the panel over time** (``<prefix>panel_over_time/<i>``): the panel's map of the first view with a panel, at
  each logged step side by side (the first step and the latest ones), on the shared range.

**Display ranges** (``map_range``): ``"first"`` (default) fixes the range of each picture (each image tag: one
metric or panel, one view) at the first step it is logged: the 2nd-98th percentile of that first map
(:func:`scenemetrics.viz.robust_range`), widened to include the value of a perfect render (1 for similarities such
as PuzzleSim and SSIM, 0 for errors such as LPIPS and the absolute error). Every later step reuses it, so the same
colour means the same value along TensorBoard's step slider and artifacts visibly shrink as training goes on.
``"per-map"`` gives each map its own 2nd-98th percentile (colours compare only within one picture; read the colour
bar); ``(vmin, vmax)`` fixes one range for every picture. :class:`PictureState` keeps the fixed ranges (and the
over-time tiles); the callbacks put it in their checkpoint state, so a resumed run keeps its colours.

Colours: the callbacks' ``map_colormap`` (default ``"jet_r"``) is given for similarity maps (high = good), where
reversed jet makes low values, the artifacts, warm. Error maps (high = bad) are drawn with its reversal (``"jet"``),
so warm always means bad.

Example:
    >>> import torch
    >>> state = PictureState("first")
    >>> first = state.display_range("sm/panel/0", torch.linspace(0.1, 0.3, 100), step=10, higher_is_better=False,
    ...                             what="abs_error")
    >>> later = state.display_range("sm/panel/0", torch.linspace(0.0, 0.1, 100), step=20, higher_is_better=False,
    ...                             what="abs_error")
    >>> (first.vmin, round(first.vmax, 3)) == (later.vmin, round(later.vmax, 3)) == (0.0, 0.296)
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import torch
from torch import Tensor

from scenemetrics.viz import (
    ColorBar,
    DisplayRange,
    Picture,
    apply_colormap,
    comparison_panel,
    map_picture,
    panel,
    quality_range,
)

__all__ = [
    "DEFAULT_PANEL_MAP",
    "DEFAULT_STRIP_STEPS",
    "MAP_RANGES",
    "PANEL_MAPS",
    "PanelMap",
    "PictureState",
    "check_map_range",
    "check_panel_map",
    "check_strip_steps",
    "draw_map",
    "draw_panel",
    "draw_strip",
    "parse_map_range",
    "strip_tile",
]

PanelMap = Literal["abs", "ssim", "lpips"]
"""The ``panel_map`` values (the keys of :data:`PANEL_MAPS`), as a type (the nerfstudio config field's)."""

PANEL_MAPS: Mapping[str, str] = MappingProxyType({"abs": "abs_error", "ssim": "ssim_map", "lpips": "lpips_map"})
"""``panel_map`` value -> the registered metric whose map the panel shows (:mod:`scenemetrics.builtin_metrics`)."""

PANEL_LABELS: Mapping[str, str] = MappingProxyType({"abs": "abs error", "ssim": "SSIM", "lpips": "LPIPS"})
"""``panel_map`` value -> the name of the panel's map (titles, tile labels)."""

PANEL_UNITS: Mapping[str, str] = MappingProxyType(
    {"abs": "|render - target|, RGB mean", "ssim": "SSIM (1 = same)", "lpips": "LPIPS (0 = same)"}
)
"""``panel_map`` value -> what the panel's colour bar is labelled."""

DEFAULT_PANEL_MAP = "abs"
"""The default ``panel_map``: the absolute error, the cheapest meaningful map (no network, no weights, a subtraction
per pixel; it is the L1 term 3DGS and NeRF training minimise, in the images' own units)."""

MAP_RANGES = ("first", "per-map")
"""The named ``map_range`` rules (a ``(vmin, vmax)`` pair is the third form)."""

DEFAULT_STRIP_STEPS = 8
"""Steps shown by the panel over time: the first logged step and the latest ones."""

STRIP_HEIGHT = 128
"""Tiles of the panel over time taller than this are shrunk (area) to this height."""


def check_panel_map(value: Any) -> str | None:
    """``value`` as a ``panel_map``: one of :data:`PANEL_MAPS` or ``None`` (``ValueError`` naming it otherwise)."""
    if value is None or (isinstance(value, str) and value in PANEL_MAPS):
        return value
    raise ValueError(f"`panel_map` must be one of {', '.join(map(repr, PANEL_MAPS))} or None; received {value!r}")


def check_map_range(value: Any) -> str | tuple[float, float]:
    """``value`` as a ``map_range``: ``"first"``, ``"per-map"`` or a finite ``(vmin, vmax)`` with ``vmin < vmax``.

    Raises:
        ValueError: anything else (the message names ``map_range``).
    """
    if isinstance(value, str) and value in MAP_RANGES:
        return value
    pair = value if isinstance(value, (tuple, list)) and len(value) == 2 else ()
    numbers = [v for v in pair if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if len(numbers) == 2 and numbers[0] < numbers[1]:
        return (float(numbers[0]), float(numbers[1]))
    raise ValueError(
        f"`map_range` must be 'first', 'per-map' or a pair (vmin, vmax) of finite numbers with vmin < vmax; "
        f"received {value!r}"
    )


def parse_map_range(text: str) -> str | tuple[float, float]:
    """A ``map_range`` written as text (a command-line flag): ``first``, ``per-map`` or ``VMIN,VMAX``.

    Example:
        >>> parse_map_range("first"), parse_map_range("0,0.25")
        ('first', (0.0, 0.25))
    """
    text = str(text).strip()
    if text in MAP_RANGES:
        return text
    parts = [p.strip() for p in text.strip("()[]").split(",")]
    try:
        pair = [float(p) for p in parts]
    except ValueError:
        pair = parts  # type: ignore[assignment]
    return check_map_range(pair)


def check_strip_steps(value: Any) -> int:
    """An int >= 0 (0: no panel over time); ``ValueError`` naming ``strip_steps`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`strip_steps` must be an int >= 0 (0: no panel over time); received {value!r}")
    return value


def _meaning(higher_is_better: bool | None, colormap: str) -> str:
    warm = colormap.startswith("jet")
    if higher_is_better is True:
        return "warm = low = worse" if warm else f"{colormap}: top of the colour bar = better"
    if higher_is_better is False:
        return "warm = high = worse" if warm else f"{colormap}: bottom of the colour bar = better"
    return f"colormap {colormap}: read values on the colour bar"


def _finite(values: Tensor) -> bool:
    return bool(torch.isfinite(values).any())


class PictureState:
    """The display range of each picture (by image tag) and the tiles of the panel over time.

    This is what keeps colours comparable across steps and resumes: under ``map_range="first"`` the range of a tag is
    chosen at its first step and reused after; :meth:`state_dict` / :meth:`load_state_dict` carry it (and the
    over-time tiles) through a checkpoint. One thread updates it, in step order (the callbacks call it when they
    draw an evaluation), so the result does not depend on timing.

    Args:
        map_range: ``"first"``, ``"per-map"`` or ``(vmin, vmax)`` (:func:`check_map_range`).
        strip_steps: tiles kept for the panel over time (the first step and the latest ``strip_steps - 1``); 0: none.
    """

    def __init__(self, map_range: str | tuple[float, float] = "first", strip_steps: int = DEFAULT_STRIP_STEPS) -> None:
        self.map_range = check_map_range(map_range)
        self.strip_steps = check_strip_steps(strip_steps)
        self.ranges: dict[str, tuple[float, float, int | None, str, str]] = {}
        """tag -> (vmin, vmax, step it was fixed at, what it shows, how it was chosen)."""
        self.strip: dict[str, Any] = {}
        """``{"tag", "what", "steps", "tiles"}`` of the panel over time (empty before the first tile)."""

    def display_range(
        self, tag: str, values: Tensor, *, step: int | None, higher_is_better: bool | None, what: str
    ) -> DisplayRange:
        """The range to colour ``values`` (the map logged as ``tag`` at ``step``) with, fixing it if it is new.

        Args:
            tag: the picture's log tag (one metric or panel, one view).
            values: the map.
            step: the training step (``None``: unknown; said so in the rule).
            higher_is_better: the map's direction: a first range is widened to the value of a perfect render, 1 for
                a similarity (``True``), 0 for an error (``False``); ``None``: not widened.
            what: what the map shows (a metric name); a stored range of another map is not reused.
        """
        if isinstance(self.map_range, tuple):
            return DisplayRange(*self.map_range, "fixed range (map_range)")
        if not _finite(values):
            return DisplayRange(0.0, 1.0, "no finite value in the map: fixed range 0 to 1")
        own = quality_range(values, higher_is_better)
        if self.map_range == "per-map":
            return own
        stored = self.ranges.get(tag)
        if stored is None or stored[3] != what:
            stored = (own.vmin, own.vmax, step, what, own.rule)
            self.ranges[tag] = stored
        at = "the first logged step" if stored[2] is None else f"step {stored[2]}"
        return DisplayRange(stored[0], stored[1], f"range fixed at {at} ({stored[4]})")

    def add_strip_tile(self, tag: str, what: str, step: int | None, tile: Tensor) -> list[tuple[int | None, Tensor]]:
        """Add the coloured map of ``tag`` at ``step`` to the panel over time; its ``(step, tile)`` list, oldest first.

        The first tile is always kept, then the latest ``strip_steps - 1``. A different tag or map starts anew.
        """
        if self.strip.get("tag") != tag or self.strip.get("what") != what:
            self.strip = {"tag": tag, "what": what, "steps": [], "tiles": []}
        steps, tiles = self.strip["steps"], self.strip["tiles"]
        if steps and step is not None and steps[-1] == step:  # the same step again (an extra evaluate() call)
            steps.pop()
            tiles.pop()
        steps.append(step)
        tiles.append(tile)
        if len(steps) > self.strip_steps:
            del steps[1], tiles[1]
        return list(zip(steps, tiles, strict=True))

    def state_dict(self) -> dict[str, Any]:
        """Plain data (numbers, strings, ``uint8`` tensors): the fixed ranges and the over-time tiles."""
        return {
            "ranges": {tag: list(value) for tag, value in self.ranges.items()},
            "strip": {k: (list(v) if isinstance(v, list) else v) for k, v in self.strip.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (an empty or missing part restores nothing)."""
        ranges = state.get("ranges") or {}
        self.ranges = {
            str(tag): (float(v[0]), float(v[1]), None if v[2] is None else int(v[2]), str(v[3]), str(v[4]))
            for tag, v in ranges.items()
        }
        strip = dict(state.get("strip") or {})
        if strip:
            strip["steps"] = [None if s is None else int(s) for s in strip.get("steps", [])]
            strip["tiles"] = [t.to(torch.uint8).cpu() for t in strip.get("tiles", [])]
            keep = self.strip_steps
            if keep and len(strip["steps"]) > keep:  # fewer steps asked for than saved: the first and the latest
                strip["steps"] = strip["steps"][:1] + strip["steps"][len(strip["steps"]) - keep + 1 :]
                strip["tiles"] = strip["tiles"][:1] + strip["tiles"][len(strip["tiles"]) - keep + 1 :]
        self.strip = strip


def _step_text(step: int | None) -> str:
    return "" if step is None else f"step {step}, "


def draw_map(
    values: Tensor,
    name: str,
    index: int,
    *,
    step: int | None,
    display_range: DisplayRange,
    colormap: str = "jet_r",
    higher_is_better: bool | None = True,
) -> Picture:
    """The logged picture of a metric map: title (metric, view, step, mean), the map, its colour bar, the range rule.

    ``colormap`` is used as given (see :func:`colormap_for`); the picture's ``image`` is what is logged.
    """
    v = values.detach().float().cpu()
    title = f"{name} map, {_step_text(step)}view {index} (mean {float(v.nanmean()):.4f})"
    return map_picture(
        v,
        title=title,
        colormap=colormap,
        value_label=f"{name} value",
        display_range=display_range,
        meaning=_meaning(higher_is_better, colormap),
    )


def draw_panel(
    render: Tensor,
    target: Tensor,
    values: Tensor,
    *,
    index: int,
    step: int | None,
    panel_map: str,
    display_range: DisplayRange,
    colormap: str,
    higher_is_better: bool | None,
) -> Picture:
    """Render | target | map of one view, unscaled, titled with the step and the map; ``image`` is what is logged."""
    v = values.detach().float().cpu()
    label = PANEL_LABELS.get(panel_map, panel_map)
    title = f"{_step_text(step)}view {index}: render | target | {label} (mean {float(v.nanmean()):.4f})"
    note = f"{_meaning(higher_is_better, colormap)}; {display_range.rule} ({display_range.vmin:.4f} to "
    note += f"{display_range.vmax:.4f}); tiles at the view's resolution"
    return comparison_panel(
        render,
        target,
        v,
        title=title,
        display_range=display_range,
        colormap=colormap,
        value_label=PANEL_UNITS.get(panel_map, label),
        labels=("render", "target", label),
        notes=[note],
    )


def strip_tile(values: Tensor, display_range: DisplayRange, colormap: str) -> Tensor:
    """One tile of the panel over time: the map coloured on ``display_range``, at most :data:`STRIP_HEIGHT` high."""
    v = values.detach().float().cpu()
    h, w = v.shape
    if h > STRIP_HEIGHT:
        size = (STRIP_HEIGHT, max(1, round(w * STRIP_HEIGHT / h)))
        v = torch.nn.functional.interpolate(v[None, None], size=size, mode="area")[0, 0]
    return apply_colormap(v, colormap, display_range.vmin, display_range.vmax)


def draw_strip(
    tiles: Sequence[tuple[int | None, Tensor]],
    *,
    index: int,
    panel_map: str,
    display_range: DisplayRange,
    colormap: str,
    higher_is_better: bool | None,
) -> Picture:
    """The panel's map of view ``index`` at each kept step, side by side on the shared range."""
    label = PANEL_LABELS.get(panel_map, panel_map)
    steps = [s for s, _ in tiles]
    span = f"steps {steps[0]} to {steps[-1]}" if len(steps) > 1 else f"step {steps[0]}"
    labelled = [("" if s is None else f"step {s}", t) for s, t in tiles]
    note = f"{_meaning(higher_is_better, colormap)}; one range for every step: {display_range.rule} "
    note += f"({display_range.vmin:.4f} to {display_range.vmax:.4f})"
    return panel(
        labelled,
        title=f"view {index}, {label} over training ({span})",
        colorbar=ColorBar(display_range, colormap, PANEL_UNITS.get(panel_map, label)),
        notes=[note],
        min_height=0,
    )
