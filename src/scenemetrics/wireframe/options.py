"""Option checkers of the wireframe metric functions, one per function.

Each metric function of the wireframe package checks its options with its checker here, and
:func:`~scenemetrics.wireframe.make_metric` runs the same checker when a metric is built, so a metric object (and
``WireframeMetrics``) rejects bad options at construction rather than at its first house. Errors are ``ValueError``
(``TypeError`` for a WED cost that is not a number) naming the option; the generic checks are
:mod:`scenemetrics.checks`.

Example:
    >>> from scenemetrics.wireframe.options import check_distance
    >>> check_distance(0.5, "threshold")
    0.5
    >>> check_distance(None, "threshold")
    Traceback (most recent call last):
    ...
    ValueError: `threshold` is required (a number in the coordinates' unit; there is no default); received None
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scenemetrics.checks import check_choice, check_int, check_number

__all__ = [
    "WED_VARIANTS",
    "check_chamfer_options",
    "check_corner_options",
    "check_distance",
    "check_edge_options",
    "check_hausdorff_samples",
    "check_hss_options",
    "check_iou_options",
    "check_sampling",
    "check_spectral_options",
    "check_wed_options",
]

WED_VARIANTS = ("corrected", "s23dr2024", "mnn", "nearest", "ap")
"""The variants of :func:`~scenemetrics.wireframe.wed`."""


def check_distance(value: Any, name: str, *, allow_zero: bool = True) -> float:
    """A distance in the coordinates' unit: a finite number ``>= 0`` (``> 0`` without ``allow_zero``); required."""
    if value is None:
        raise ValueError(
            f"`{name}` is required (a number in the coordinates' unit; there is no default); received None"
        )
    return check_number(value, name, low=0.0, low_open=not allow_zero)


def check_hausdorff_samples(samples: Any) -> int | None:
    """``None`` (exact segment distances) or an int >= 2 (points sampled per segment)."""
    return None if samples is None else check_int(samples, "hausdorff_samples", low=2)


def check_corner_options(threshold: Any) -> float:
    return check_distance(threshold, "threshold")


def check_edge_options(threshold: Any, matching: Any = "hausdorff", hausdorff_samples: Any = None) -> float:
    check_choice(matching, "matching", ("hausdorff", "endpoint"))
    check_hausdorff_samples(hausdorff_samples)
    if matching != "hausdorff" and hausdorff_samples is not None:
        raise ValueError("hausdorff_samples only applies to matching='hausdorff'.")
    return check_distance(threshold, "threshold")


def check_wed_options(
    variant: Any = "corrected",
    cv_ins: Any = -0.5,
    cv_del: Any = -0.25,
    ce: Any = 1.0,
    normalized: Any = True,
    preregister: Any = None,
) -> None:
    check_choice(variant, "variant", WED_VARIANTS)
    for arg, val in (("cv_ins", cv_ins), ("cv_del", cv_del), ("ce", ce)):
        if isinstance(val, bool) or not isinstance(val, (int, float, np.integer, np.floating)):
            raise TypeError(f"`{arg}` must be a number; received {type(val).__name__}")
        if not math.isfinite(val):
            raise ValueError(f"`{arg}` must be a finite number; received {val!r}")
    if variant == "ap" and (cv_ins != -0.5 or cv_del != -0.25):
        raise ValueError("variant='ap' has no vertex insertion/deletion cost; leave cv_ins and cv_del at defaults.")


def check_spectral_options(p: Any = 2, padding: Any = "zeros") -> None:
    if isinstance(p, bool):  # True == 1 would pass the choice below
        raise ValueError(f"`p` must be one of 1, 2; received {p!r}")
    check_choice(p, "p", (1, 2))
    check_choice(padding, "padding", ("zeros", "empirical"))


def check_iou_options(radius: Any, mode: Any = "voxel", resolution: Any = 4) -> float:
    check_choice(mode, "mode", ("voxel", "hss2025"))
    check_int(resolution, "resolution", low=1)
    return check_distance(radius, "radius", allow_zero=False)


def check_hss_options(vert_thresh: Any = 0.5, edge_thresh: Any = 0.5, iou_mode: Any = "hss2025") -> None:
    check_distance(vert_thresh, "vert_thresh")
    check_iou_options(edge_thresh, iou_mode)


def check_sampling(spacing: Any = None, points_per_wireframe: Any = 1000) -> float | None:
    check_int(points_per_wireframe, "points_per_wireframe", low=1)
    return None if spacing is None else check_distance(spacing, "spacing", allow_zero=False)


def check_chamfer_options(
    spacing: Any = None, points_per_wireframe: Any = 1000, squared: Any = False, direction: Any = "symmetric"
) -> None:
    check_sampling(spacing, points_per_wireframe)
    check_choice(direction, "direction", ("symmetric", "pred_to_gt", "gt_to_pred"))
