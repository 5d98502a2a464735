"""``OSIM``: the scene-level Objectness SIMilarity as a torchmetrics ``Metric``, and ``OSIMPatches``, the
conventional metrics (PSNR, SSIM, LPIPS, CLIP similarity, ...) computed inside each object's box and pooled as OSIM
pools its objects (the paper's "Bbox Patch" baselines).

The state is three fixed-size per-class sums (``r_sum``, ``s_sum``, ``count``, each ``(num_classes + 1,)`` float64
with ``dist_reduce_fx="sum"``; the last pool holds the given boxes without a class), so any split of the views over
updates and processes gives the same scene score as :func:`scenemetrics.osim.osim` over all views at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.osim.detector import FrozenDetector
from scenemetrics.osim.functional import (
    OSIMResult,
    _check_pair,
    _osim,
    class_name,
    given_boxes,
    resolve_class_names,
    scene_score,
)
from scenemetrics.osim.options import OSIMOptions, SaliencyFn
from scenemetrics.osim.patches import PatchScore, _osim_patches
from scenemetrics.osim.regions import GivenBoxes, pool_names
from scenemetrics.osim.yolox import YOLOX

__all__ = ["OSIM", "OSIMPatches"]


class _PooledObjects(Metric):
    """What OSIM and its patch baselines share: the frozen detector, the per-class sum states, their pooling."""

    is_differentiable = False
    full_state_update = False

    r_sum: Tensor
    s_sum: Tensor
    count: Tensor

    def __init__(
        self,
        options: OSIMOptions,
        weights_path: str | os.PathLike | None,
        model: YOLOX | None,
        num_classes: int | None,
        class_names: Sequence[str] | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.options = options
        # a plain attribute, not a submodule: the detector stays out of state_dict() and parameters()
        self._frozen = FrozenDetector(self.options.detector, weights_path, model=model, num_classes=num_classes)
        yolox = self._frozen.model
        self.class_names = resolve_class_names(class_names, yolox.num_classes)
        self.pool_names = pool_names(self.class_names, yolox.num_classes)
        self.detector = yolox.variant
        self.last_result: OSIMResult | None = None
        self._class_scores: dict[str, float] | None = None
        n = yolox.num_classes + 1  # one pool per class, and one for the given boxes without a class
        for name in ("r_sum", "s_sum", "count"):
            self.add_state(name, default=torch.zeros(n, dtype=torch.float64), dist_reduce_fx="sum")

    @property
    def model(self) -> YOLOX:
        """The frozen detector."""
        return self._frozen.model

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any) -> _PooledObjects:
        out = super()._apply(fn, *args, **kwargs)
        # only follow device moves: a .half()/.double() of the metric must not change the detector's dtype
        self._frozen.to(self.device)
        return out

    def _score(self, p: Tensor, t: Tensor, given: list[GivenBoxes] | None) -> OSIMResult:
        raise NotImplementedError

    def update(self, preds: Tensor, target: Tensor, boxes: Sequence[Any] | None = None) -> None:
        """Add views: ``preds`` (renders) and ``target`` (references), ``(B, 3, H, W)`` of the same shape.

        Any number of views per call, any image size per call; ``B = 0`` adds nothing. ``boxes``: regions of your own
        next to the detector's, one entry per view (see :func:`scenemetrics.osim.osim`).
        """
        p, t = _check_pair(preds, target)
        given = given_boxes(boxes, t, self._frozen.model, self.class_names)
        if t.shape[0] == 0:
            return
        self._frozen.to(t.device)
        with torch.no_grad():
            result = self._score(p, t, given)
        self.last_result = result
        self._class_scores = None
        self.r_sum += result.r_sum.to(self.r_sum.device)
        self.s_sum += result.s_sum.to(self.s_sum.device)
        self.count += result.count.to(self.count.device)

    def compute(self) -> Tensor:
        """Scene score (0-dim float32) over every view seen; NaN with a ``UserWarning`` when there was no object."""
        # the states are synced across processes here: keep the per-class scores of the whole scene
        self._class_scores = self._per_class()
        return scene_score(self.r_sum, self.s_sum, self.count, conf_threshold=self.options.conf_threshold)

    def _per_class(self) -> dict[str, float]:
        seen = torch.nonzero(self.count > 0).flatten().tolist()
        return {class_name(c, self.pool_names): float(self.r_sum[c] / self.count[c]) for c in seen}

    def class_scores(self) -> dict[str, float]:
        """``o_l`` (mean per-object score) per class seen, keyed by class name (``class_names``, default COCO; the
        given boxes without a class under ``"unlabelled"``).

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


class OSIM(_PooledObjects):
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
        pool_names: the name of each entry of the per-class states (the classes, then ``"unlabelled"``).

    ``update(preds, target, boxes=None)`` takes regions of your own next to the detector's (objects it misses; see
    :func:`scenemetrics.osim.osim`). The detector is frozen, kept out of ``state_dict()`` and moved by ``.to()``;
    inputs on another device move it there. Views with no object add nothing; ``compute()`` warns once when the whole
    scene has none (NaN).

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

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

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
        options = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
        super().__init__(options, weights_path, model, num_classes, class_names, **kwargs)

    def _score(self, p: Tensor, t: Tensor, given: list[GivenBoxes] | None) -> OSIMResult:
        return _osim(p, t, self.options, self._frozen.model, warn=False, class_names=self.class_names, given=given)


class OSIMPatches(_PooledObjects):
    """A conventional metric inside each object's box, pooled as OSIM pools its objects (the "Bbox Patch" baselines).

    The objects are OSIM's (detected on the references, plus the given ``boxes``); each object's score is
    ``score`` of its render patch against its reference patch (:func:`~scenemetrics.osim.patches.osim_patches`);
    per-class means ``o_l`` and saliency weights ``s_l`` are pooled over the scene into ``sum_l s_l o_l / sum_l s_l``
    exactly as OSIM's eq. (5) (``saliency="uniform"``: the plain mean over classes).

    Args:
        score: the per-patch score (:class:`~scenemetrics.osim.patches.PatchScore`, e.g. from
            :func:`~scenemetrics.osim.patches.psnr_score` or :func:`~scenemetrics.osim.patches.embedding_score`).
        detector: YOLOX variant, as :class:`OSIM` (the objects are OSIM's).
        layer: as :class:`OSIM` (the detector's features are computed but not compared).
        conf_threshold: detection confidence threshold.
        nms_threshold: class-agnostic NMS IoU threshold.
        saliency: ``"gbvs"``, ``"uniform"`` or a callable: the weights of the classes.
        weights_path: YOLOX checkpoint file or folder.
        model: a YOLOX to use instead of loading ``detector``.
        num_classes: head size of the detector.
        class_names: one name per class, in head order.
        kwargs: torchmetrics ``Metric`` options.

    Attributes:
        higher_is_better: ``score.higher_is_better`` (set per instance).
        score: the patch score.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.osim.patches import psnr_score
        >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
        >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
        >>> metric = OSIMPatches(psnr_score(), detector="yolox_nano", weights_path=p, conf_threshold=2.0)
        >>> refs = synthetic_images(1, (96, 128), seed=3)
        >>> metric.update((refs + 0.1).clamp(0, 1), refs, boxes=[[[0, 0, 64, 48]]])
        >>> round(float(metric.compute()), 1), metric.higher_is_better
        (20.0, True)
    """

    def __init__(
        self,
        score: PatchScore,
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
        if not isinstance(score, PatchScore):
            raise ValueError(f"`score` must be a scenemetrics.osim.patches.PatchScore; received {type(score).__name__}")
        options = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
        super().__init__(options, weights_path, model, num_classes, class_names, **kwargs)
        self.score = score
        # torchmetrics guards the class constant against assignment; the direction of a patch baseline is its score's
        object.__setattr__(self, "higher_is_better", score.higher_is_better)

    def _score(self, p: Tensor, t: Tensor, given: list[GivenBoxes] | None) -> OSIMResult:
        return _osim_patches(
            p, t, self.score, self.options, self._frozen.model, warn=False, class_names=self.class_names, given=given
        )
