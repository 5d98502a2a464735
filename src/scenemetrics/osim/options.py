"""``OSIMOptions``: the scoring options of OSIM in one frozen record, validated once when it is built.

:func:`~scenemetrics.osim.osim`, :class:`~scenemetrics.osim.OSIM` and :class:`~scenemetrics.osim.OSIMLoss` keep their
keyword arguments; each builds one record from them (the metric and the loss at construction, the function per
call) and the scoring code below them takes the record as it is, never checking it again. Thresholds follow one
rule (:func:`~scenemetrics.osim.boxes.check_thresholds`): ``conf_threshold`` a number >= 0 (above 1 no detection is
kept), ``nms_threshold`` an IoU in [0, 1].

Example:
    >>> from scenemetrics.osim.options import OSIMOptions
    >>> OSIMOptions(detector="YOLOX-Nano", conf_threshold=0.3)
    OSIMOptions(detector='yolox_nano', layer='dark5', conf_threshold=0.3, nms_threshold=0.45, saliency='gbvs')
    >>> OSIMOptions(nms_threshold=1.5)
    Traceback (most recent call last):
    ...
    ValueError: `nms_threshold` must be a finite number in [0, 1]; received 1.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from scenemetrics.checks import check_choice
from scenemetrics.osim.boxes import check_thresholds
from scenemetrics.osim.checkpoints import normalize_variant
from scenemetrics.osim.yolox import FEATURE_LAYERS

__all__ = ["SALIENCY_MODES", "OSIMOptions", "SaliencyFn"]

SALIENCY_MODES = ("gbvs", "uniform")
"""Named saliency options of OSIM (a callable is accepted too)."""

SaliencyFn = Callable[[Tensor], Tensor]
"""A saliency function: resized references ``(B, 3, h_c, w_c)`` RGB [0, 1] -> ``(B, h_c, w_c)`` non-negative."""


@dataclass(frozen=True)
class OSIMOptions:
    """Every scoring option of OSIM, validated once in ``__post_init__`` and stored normalised.

    Attributes:
        detector: canonical YOLOX variant (``"yolox_x"`` in the paper; ``"YOLOX-X"`` is accepted).
        layer: feature map compared (``"dark5"``; or ``dark3``, ``dark4``, ``p3``, ``p4``, ``p5``).
        conf_threshold: detection confidence threshold (inclusive), a float >= 0.
        nms_threshold: class-agnostic NMS IoU threshold, a float in [0, 1].
        saliency: ``"gbvs"``, ``"uniform"`` or a callable (see :func:`scenemetrics.osim.osim`).

    Raises:
        ValueError: a bad option; the message names the keyword argument.
    """

    detector: str = "yolox_x"
    layer: str = "dark5"
    conf_threshold: float = 0.35
    nms_threshold: float = 0.45
    saliency: str | SaliencyFn = "gbvs"

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "detector", normalize_variant(self.detector))
        check_choice(self.layer, "layer", FEATURE_LAYERS)
        if not callable(self.saliency) and self.saliency not in SALIENCY_MODES:
            raise ValueError(
                f"`saliency` must be one of {', '.join(map(repr, SALIENCY_MODES))} or a callable; received "
                f"{self.saliency!r}"
            )
        check_thresholds(self.conf_threshold, self.nms_threshold)
        put(self, "conf_threshold", float(self.conf_threshold))
        put(self, "nms_threshold", float(self.nms_threshold))
