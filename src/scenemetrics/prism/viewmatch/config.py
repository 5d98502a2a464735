"""Settings of the ViewMatch-style dataset builder (:class:`BuildConfig`) and the paper's negative prompt."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scenemetrics.checks import check_choice, check_int

__all__ = ["PAPER_NEGATIVE_PROMPT", "BuildConfig"]

PAPER_NEGATIVE_PROMPT = (
    "Blurred details, low res, unrealistic textures, dark or cluttered backgrounds, dull colors, distorted shapes"
)
"""The negative prompt of the PRISM paper's ViewMatch inpainting (used verbatim by the diffusion backends)."""

_CHOICES = {
    "captioner": ("auto", "blip", "none"),
    "misaligned": ("all", "none"),
    "world_up": ("z", "y"),
    "depth_kind": ("z", "ray"),
    "view_names": ("index", "stem"),
}


@dataclass(frozen=True)
class BuildConfig:
    """Every non-backend option of ``scenemetrics prism build-dataset`` (same names in snake_case, same defaults).

    Mask geometry: ``rel_tol`` / ``abs_tol`` (depth-test tolerance ``max(abs_tol, rel_tol * depth)``; ``abs_tol=None``
    is twice the depth quantisation step: 2 x ``depth_unit_scale_factor`` for 16-bit PNG depth, 0 for float depth),
    ``max_ray_samples`` (epipolar samples per ray), the morphology radii in pixels (the paper's 4 / 10 / 3 / 20,
    all multiplied by ``radius_scale`` and rounded). Candidates: ``num_positives`` / ``num_negatives`` inpaintings per
    ordered pair (seeds ``seed + k``), negatives only when their mask covers ``min_negative_area`` of the target
    silhouette and the target sees ``min_visible_fraction`` of itself in the source. ``pairs``: ``"all"`` ordered
    pairs or ``N`` random ones per object. Splits: ``test_fraction`` / ``val_fraction`` of the objects by a
    ``split_seed`` permutation, or an explicit ``splits`` mapping. Inputs: ``world_up``, ``depth_kind``,
    ``depth_scale``, ``far``, ``view_names``. Prompts: ``captioner`` (``"auto"``: BLIP for diffusion backends, none
    for OpenCV), ``blip_model``, ``prompt`` (used without a captioner), ``prompt_template``, ``negative_prompt``.
    ``save_masks`` writes the masks as PNGs; ``overwrite`` rebuilds objects from scratch; ``device`` places the
    captioner (and the default diffusion backend).

    Example:
        >>> from scenemetrics.prism.viewmatch import BuildConfig
        >>> BuildConfig().close_radius, BuildConfig(radius_scale=0.5).radii()
        (4, (2, 5, 2, 10))
    """

    seed: int = 45
    captioner: str = "auto"
    blip_model: str = "Salesforce/blip-image-captioning-base"
    prompt: str = ""
    prompt_template: str = "{caption}"
    negative_prompt: str = PAPER_NEGATIVE_PROMPT
    num_positives: int = 4
    num_negatives: int = 4
    pairs: str | int = "all"
    misaligned: str = "all"
    min_negative_area: float = 0.02
    min_visible_fraction: float = 0.01
    test_fraction: float = 0.2
    val_fraction: float = 0.0
    split_seed: int = 0
    splits: Mapping[str, Sequence[str]] | None = None
    rel_tol: float = 0.002
    abs_tol: float | None = None
    close_radius: int = 4
    open_radius: int = 10
    epipolar_close_radius: int = 3
    silhouette_dilate_radius: int = 20
    radius_scale: float = 1.0
    max_ray_samples: int = 2048
    world_up: str = "z"
    depth_kind: str = "z"
    depth_scale: float | None = None
    far: float = 1e4
    view_names: str = "index"
    save_masks: bool = True
    device: str | None = None
    overwrite: bool = False

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES.items():
            check_choice(getattr(self, name), name, allowed)
        for name in ("num_positives", "num_negatives", "max_ray_samples", "seed", "split_seed"):
            check_int(getattr(self, name), name, low=1 if name == "max_ray_samples" else 0)
        for name in ("close_radius", "open_radius", "epipolar_close_radius", "silhouette_dilate_radius"):
            check_int(getattr(self, name), name, low=0)
        if self.pairs != "all" and (isinstance(self.pairs, bool) or not isinstance(self.pairs, int) or self.pairs < 1):
            raise ValueError(f"`pairs` must be 'all' or a positive int; received {self.pairs!r}")
        for name in ("min_negative_area", "min_visible_fraction", "rel_tol"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"`{name}` must be >= 0; received {getattr(self, name)!r}")
        if self.abs_tol is not None and not self.abs_tol >= 0:
            raise ValueError(f"`abs_tol` must be None or >= 0; received {self.abs_tol!r}")
        if not (
            0 <= self.test_fraction <= 1 and 0 <= self.val_fraction <= 1 and self.test_fraction + self.val_fraction <= 1
        ):
            raise ValueError(
                "`test_fraction` and `val_fraction` must be in [0, 1] with a sum <= 1; received "
                f"{self.test_fraction} and {self.val_fraction}"
            )
        if not self.radius_scale > 0:
            raise ValueError(f"`radius_scale` must be positive; received {self.radius_scale!r}")
        if self.depth_scale is not None and not self.depth_scale > 0:
            raise ValueError(f"`depth_scale` must be None or positive; received {self.depth_scale!r}")
        if not self.far > 0:
            raise ValueError(f"`far` must be positive; received {self.far!r}")
        try:
            self.prompt_template.format(caption="x")
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"`prompt_template` must use only {{caption}}; received {self.prompt_template!r}") from err
        if self.splits is not None:
            bad = set(self.splits) - {"train", "val", "test"}
            if bad:
                raise ValueError(f"`splits` keys must be train/val/test; received {sorted(bad)}")
            seen: set[str] = set()
            for objs in self.splits.values():
                dup = seen & set(objs)
                if dup:
                    raise ValueError(f"`splits` lists objects in several splits: {sorted(dup)}")
                seen |= set(objs)

    def radii(self) -> tuple[int, int, int, int]:
        """``(close, open, epipolar_close, silhouette_dilate)`` radii after ``radius_scale`` (rounded)."""
        return tuple(  # type: ignore[return-value]
            round(r * self.radius_scale)
            for r in (self.close_radius, self.open_radius, self.epipolar_close_radius, self.silhouette_dilate_radius)
        )

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values."""
        out = dataclasses.asdict(self)
        if out["splits"] is not None:
            out["splits"] = {k: list(v) for k, v in out["splits"].items()}
        return out

    def fingerprint_dict(self) -> dict[str, Any]:
        """The settings that decide the output (``overwrite`` and ``device`` excluded)."""
        out = self.to_dict()
        out.pop("overwrite")
        out.pop("device")
        return json.loads(json.dumps(out, sort_keys=True))
