"""``OSIMLoss``: ``1 - OSIM`` of renders against fixed references, differentiable with respect to the renders.

Everything that depends only on the references is computed once in :meth:`OSIMLoss.set_references` (detections,
per-object cell spans, saliency weights, reference features). ``forward`` letterboxes the renders with a
differentiable bilinear resize (no 8-bit rounding), runs the frozen detector's backbone (plus the PAFPN for
``p*`` layers) with autograd, and pools the per-cell cosine similarities over the fixed boxes.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.image import check_images
from scenemetrics.osim.boxes import letterbox_tensor
from scenemetrics.osim.detector import FrozenDetector
from scenemetrics.osim.functional import _box_means, _class_sums, _content_rgb, _saliency_maps, box_spans
from scenemetrics.osim.options import OSIMOptions, SaliencyFn
from scenemetrics.osim.yolox import YOLOX

__all__ = ["OSIMLoss"]


class OSIMLoss(nn.Module):
    """``1 - OSIM(preds, references)`` as a loss (lower is better), differentiable with respect to ``preds``.

    ``set_references`` detects the objects on the references (8-bit letterbox, exactly as the metric), computes
    their saliency ``s_ij`` and the per-class weights ``s_l`` once, and stores the reference features from an
    unrounded letterbox so that ``loss(references) == 0``. ``forward(preds)`` recomputes only ``r_ij`` from the
    renders' features. The renders are not range-checked (an optimiser may step slightly outside [0, 1]); their
    shape must equal the references'. The detector stays frozen (eval mode, no parameter gradients) and out of
    ``state_dict()``; ``.to()`` moves it.

    Args:
        references: ``(N, 3, H, W)`` reference views (or ``None``: call :meth:`set_references` later).
        detector: YOLOX variant.
        layer: feature map compared (``dark5`` runs only the CSPDarknet; ``p*`` adds the PAFPN).
        conf_threshold: detection confidence threshold.
        nms_threshold: class-agnostic NMS IoU threshold.
        saliency: ``"gbvs"``, ``"uniform"`` or a callable (see :func:`scenemetrics.osim.osim`).
        weights_path: YOLOX checkpoint file or folder.
        model: a :class:`~scenemetrics.osim.yolox.YOLOX` to use instead of loading ``detector``.
        num_classes: head size of the detector; ``None`` reads it from the checkpoint (a YOLOX fine-tuned on your
            own classes loads as it is). A different value raises ``ValueError``.

    The detector is held by a :class:`~scenemetrics.osim.detector.FrozenDetector`, the same holder the
    :class:`~scenemetrics.osim.OSIM` metric uses.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
        >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
        >>> refs = synthetic_images(2, (96, 128), seed=3)
        >>> loss_fn = OSIMLoss(refs, detector="yolox_nano", weights_path=p, conf_threshold=0.3)
        >>> render = (refs * 0.8).requires_grad_(True)
        >>> loss = loss_fn(render)
        >>> loss.backward()
        >>> bool(loss > 0), bool(render.grad.abs().sum() > 0), float(loss_fn(refs)) < 1e-5
        (True, True, True)
    """

    def __init__(
        self,
        references: Tensor | None = None,
        *,
        detector: str = "yolox_x",
        layer: str = "dark5",
        conf_threshold: float = 0.35,
        nms_threshold: float = 0.45,
        saliency: str | SaliencyFn = "gbvs",
        weights_path: str | os.PathLike | None = None,
        model: YOLOX | None = None,
        num_classes: int | None = None,
    ) -> None:
        super().__init__()
        self.options = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
        # a plain attribute, not a submodule: the detector has no parameters here and stays out of state_dict()
        self._frozen = FrozenDetector(self.options.detector, weights_path, model=model, num_classes=num_classes)
        self._shape: tuple[int, ...] | None = None
        self._has_objects = False
        for name in ("ref_features", "masks", "weights"):
            self.register_buffer(name, torch.zeros(0), persistent=False)
        self.register_buffer("object_view", torch.zeros(0, dtype=torch.int64), persistent=False)
        self.register_buffer("object_class", torch.zeros(0, dtype=torch.int64), persistent=False)
        self.register_buffer("class_count", torch.zeros(0), persistent=False)
        if references is not None:
            self.set_references(references)

    @property
    def model(self) -> YOLOX:
        """The frozen detector."""
        return self._frozen.model

    def _apply(self, fn: Callable[[Tensor], Tensor], *args: Any, **kwargs: Any) -> OSIMLoss:
        out = super()._apply(fn, *args, **kwargs)
        # follow device moves only: the detector keeps computing in float32
        self._frozen.to(self.masks.device)
        return out

    @torch.no_grad()
    def set_references(self, references: Tensor) -> None:
        """Detect objects on the references and fix everything that does not depend on the renders.

        Warns (``UserWarning``) when nothing is detected; ``forward`` then returns a zero connected to the graph.
        """
        refs = check_images(references, "references")
        yolox = self._frozen.model
        refs = refs.to(yolox.device)
        S = yolox.input_size
        lb = letterbox_tensor(refs, S, True)
        opts = self.options
        out = yolox._detect_letterbox(lb, opts.conf_threshold, opts.nms_threshold, (opts.layer,))
        self._shape = tuple(refs.shape)
        self.ref_features = yolox.extract(letterbox_tensor(refs, S, False).canvas, (opts.layer,))[opts.layer]
        dets = out.detections
        counts = [len(d) for d in dets]
        self._has_objects = sum(counts) > 0
        if not self._has_objects:
            warnings.warn(
                f"OSIMLoss: no object was detected in any reference at conf_threshold={opts.conf_threshold}; the "
                "loss is zero",
                UserWarning,
                stacklevel=2,
            )
            return
        dev = refs.device
        view = torch.repeat_interleave(torch.arange(len(dets), device=dev), torch.tensor(counts, device=dev))
        boxes_lb = torch.cat([d.boxes_letterbox for d in dets])
        classes = torch.cat([d.classes for d in dets])
        h_c, w_c = lb.content_size
        sal = _saliency_maps(_content_rgb(lb), opts.saliency)
        s = _box_means(sal, view, box_spans(boxes_lb, 1, (h_c, w_c)))
        h_f, w_f = self.ref_features.shape[-2:]
        step = S / w_f
        x_lo, x_hi, y_lo, y_hi = box_spans(boxes_lb, step, (math.ceil(h_c / step), math.ceil(w_c / step)))
        # one normalised box mask per object: r_ij = <mask_ij, cos_i> stays differentiable and batched
        ys = torch.arange(h_f, device=dev).view(1, h_f, 1)
        xs = torch.arange(w_f, device=dev).view(1, 1, w_f)
        inside = (
            (ys >= y_lo.to(dev).view(-1, 1, 1))
            & (ys <= y_hi.to(dev).view(-1, 1, 1))
            & (xs >= x_lo.to(dev).view(-1, 1, 1))
            & (xs <= x_hi.to(dev).view(-1, 1, 1))
        )
        masks = inside.flatten(1).to(torch.float32)
        self.masks = masks / masks.sum(1, keepdim=True)
        num_classes = yolox.num_classes
        _, s_sum, count = _class_sums(classes, torch.zeros_like(s), s, num_classes)
        seen = count > 0
        s_l = torch.where(seen, s_sum / count.clamp(min=1), torch.zeros_like(s_sum))
        if not bool(s_l.sum() > 0):
            warnings.warn(
                "OSIMLoss: every detected object has zero saliency; classes are weighted equally",
                UserWarning,
                stacklevel=2,
            )
            s_l = seen.to(torch.float64)
        self.weights = (s_l / s_l.sum()).to(torch.float32)
        self.object_view = view
        self.object_class = classes
        self.class_count = count.to(torch.float32)

    def forward(self, preds: Tensor) -> Tensor:
        """``1 - OSIM`` of ``preds`` (same shape as the references), a 0-dim tensor with gradients to ``preds``.

        Raises:
            ValueError: no references set, a shape different from the references', or non-finite values.
        """
        if self._shape is None:
            raise ValueError("OSIMLoss has no references: pass them to the constructor or call set_references()")
        x = check_images(preds, "preds", check_range=False)
        if tuple(x.shape) != self._shape:
            raise ValueError(f"`preds` must have the references' shape {self._shape}; received {tuple(x.shape)}")
        if not self._has_objects:
            return preds.sum() * 0.0
        yolox = self._frozen.model
        canvas = letterbox_tensor(x.to(yolox.device), yolox.input_size, False).canvas
        layer = self.options.layer
        feats = yolox.extract(canvas, (layer,))[layer]
        ref = self.ref_features.to(feats.dtype)
        cos = F.cosine_similarity(ref, feats, dim=1, eps=1e-8).flatten(1)  # (B, cells)
        r = (self.masks.to(cos.dtype) * cos[self.object_view]).sum(1)
        o = r.new_zeros(self.weights.shape).index_add(0, self.object_class, r) / self.class_count.clamp(min=1)
        return 1.0 - (self.weights.to(o.dtype) * o).sum()
