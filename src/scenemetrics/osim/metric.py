"""``OSIM``: the scene-level Objectness SIMilarity as a torchmetrics ``Metric``.

The state is three fixed-size per-class sums (``r_sum``, ``s_sum``, ``count``, each ``(num_classes,)`` float64 with
``dist_reduce_fx="sum"``), so any split of the views over updates and processes gives the same scene score as
:func:`scenemetrics.osim.osim` over all views at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.osim.detector import FrozenDetector
from scenemetrics.osim.functional import OSIMResult, _check_pair, _osim, class_name, resolve_class_names, scene_score
from scenemetrics.osim.options import OSIMOptions, SaliencyFn
from scenemetrics.osim.yolox import YOLOX

__all__ = ["OSIM"]


class OSIM(Metric):
    """Scene OSIM accumulated over any number of views (pairs of render and reference from the same camera).

    Args:
        detector: YOLOX variant (``"yolox_x"`` in the paper).
        layer: feature map compared (``"dark5"``; or ``dark3``, ``dark4``, ``p3``, ``p4``, ``p5``).
        conf_threshold: detection confidence threshold.
        nms_threshold: class-agnostic NMS IoU threshold.
        saliency: ``"gbvs"``, ``"uniform"`` or a callable (see :func:`scenemetrics.osim.osim`).
        weights_path: YOLOX checkpoint file or folder (``None``: the scenemetrics cache, downloading on first use).
        model: a :class:`~scenemetrics.osim.yolox.YOLOX` to use instead of loading ``detector``.
        num_classes: head size of the detector; ``None`` reads it from the checkpoint (80 for the official COCO
            files; a YOLOX fine-tuned on your own classes loads as it is). A different value raises ``ValueError``.
        class_names: one name per class in head order, the keys of :meth:`class_scores` (``None``: the COCO
            names for an 80-class head, the class indices as text otherwise).
        kwargs: torchmetrics ``Metric`` options (``dist_sync_on_step``, ``sync_on_compute``, ...).

    Attributes:
        last_result: the :class:`~scenemetrics.osim.functional.OSIMResult` of the last ``update`` (not a state).
        options: the :class:`~scenemetrics.osim.options.OSIMOptions` (detector, layer, thresholds, saliency).

    The detector is frozen, kept out of ``state_dict()`` and moved by ``.to()``; inputs on another device move it
    there. Views with no detection add nothing; ``compute()`` warns once when the whole scene has none (NaN).

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
        >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
        >>> metric = OSIM(detector="yolox_nano", weights_path=p, conf_threshold=0.3)
        >>> refs = synthetic_images(3, (96, 128), seed=3)
        >>> for i in range(3):
        ...     metric.update(refs[i : i + 1], refs[i : i + 1])
        >>> round(float(metric.compute()), 4), sorted(metric.state_dict())
        (1.0, [])
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    r_sum: Tensor
    s_sum: Tensor
    count: Tensor

    def __init__(
        self,
        detector: str = "yolox_x",
        layer: str = "dark5",
        conf_threshold: float = 0.35,
        nms_threshold: float = 0.45,
        saliency: str | SaliencyFn = "gbvs",
        weights_path: str | os.PathLike | None = None,
        *,
        model: YOLOX | None = None,
        num_classes: int | None = None,
        class_names: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.options = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
        # a plain attribute, not a submodule: the detector stays out of state_dict() and parameters()
        self._frozen = FrozenDetector(self.options.detector, weights_path, model=model, num_classes=num_classes)
        yolox = self._frozen.model
        self.class_names = resolve_class_names(class_names, yolox.num_classes)
        self.detector = yolox.variant
        self.last_result: OSIMResult | None = None
        self._class_scores: dict[str, float] | None = None
        n = yolox.num_classes
        for name in ("r_sum", "s_sum", "count"):
            self.add_state(name, default=torch.zeros(n, dtype=torch.float64), dist_reduce_fx="sum")

    @property
    def model(self) -> YOLOX:
        """The frozen detector."""
        return self._frozen.model

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any) -> OSIM:
        out = super()._apply(fn, *args, **kwargs)
        # only follow device moves: a .half()/.double() of the metric must not change the detector's dtype
        self._frozen.to(self.device)
        return out

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add views: ``preds`` (renders) and ``target`` (references), ``(B, 3, H, W)`` of the same shape.

        Any number of views per call, any image size per call; ``B = 0`` adds nothing.
        """
        p, t = _check_pair(preds, target)
        if t.shape[0] == 0:
            return
        self._frozen.to(t.device)
        with torch.no_grad():
            result = _osim(p, t, self.options, self._frozen.model, warn=False, class_names=self.class_names)
        self.last_result = result
        self._class_scores = None
        self.r_sum += result.r_sum.to(self.r_sum.device)
        self.s_sum += result.s_sum.to(self.s_sum.device)
        self.count += result.count.to(self.count.device)

    def compute(self) -> Tensor:
        """Scene OSIM (0-dim float32) over every view seen; NaN with a ``UserWarning`` when nothing was detected."""
        # the states are synced across processes here: keep the per-class scores of the whole scene
        self._class_scores = self._per_class()
        return scene_score(self.r_sum, self.s_sum, self.count, conf_threshold=self.options.conf_threshold)

    def _per_class(self) -> dict[str, float]:
        seen = torch.nonzero(self.count > 0).flatten().tolist()
        return {class_name(c, self.class_names): float(self.r_sum[c] / self.count[c]) for c in seen}

    def class_scores(self) -> dict[str, float]:
        """``o_l`` (mean ``r_ij``) per detected class, keyed by class name (``class_names``, default COCO).

        After ``compute()`` (and until the next ``update``/``reset``) these are the values of the whole scene,
        synced across processes like the score; otherwise they come from this process's states.
        """
        if self._class_scores is not None:
            return dict(self._class_scores)
        return self._per_class()

    def reset(self) -> None:
        """Clear the states and the per-class cache (``last_result`` is kept)."""
        super().reset()
        self._class_scores = None

    def plot(self, val: Tensor | None = None, ax: Any = None) -> Any:
        """Plot the score (torchmetrics style; needs matplotlib: ``pip install "scenemetrics[viz]"``)."""
        return self._plot(val, ax)
