"""OSIM, Objectness SIMilarity (Uchida et al., ICCV 2025 workshops), as pure functions on tensors.

For the views of one scene, YOLOX detects objects on the reference images only. For detection j of view i,
``r_ij`` is the mean over the feature cells of its box of the per-cell cosine similarity between the reference and
the test feature maps (paper eq. 1) and ``s_ij`` the mean saliency (GBVS on the resized reference) over its pixels
(eq. 3). Per class l, pooled over **all** views: ``o_l = mean r_ij`` and ``s_l = mean s_ij`` (eqs. 2, 4), and
``OSIM = sum_l s_l o_l / sum_l s_l`` (eq. 5). Boxes are used in letterbox pixels; spans are ``floor`` of the
coordinates divided by the cell size, inclusive, clamped to the cells that touch the image content.

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
    >>> from scenemetrics.osim.yolox import YOLOX
    >>> path = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
    >>> model = YOLOX.from_official("yolox_nano", weights_path=path)
    >>> refs = synthetic_images(2, (96, 128), seed=3)
    >>> result = osim(refs, refs, model=model, conf_threshold=0.3)
    >>> round(float(result.score), 4)
    1.0
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.image import check_images
from scenemetrics.osim.boxes import Letterbox, letterbox_tensor
from scenemetrics.osim.detector import check_model, check_model_classes, load_detector
from scenemetrics.osim.options import OSIMOptions, SaliencyFn
from scenemetrics.osim.regions import UNLABELLED, GivenBoxes, check_given_boxes, pool_names
from scenemetrics.osim.saliency import gbvs
from scenemetrics.osim.yolox import COCO_CLASSES, YOLOX

__all__ = [
    "OSIMResult",
    "ReferenceObjects",
    "box_spans",
    "box_to_span",
    "class_name",
    "osim",
    "reference_objects",
    "resolve_class_names",
    "scene_score",
]

_MIN_GBVS_SIDE = 16


def class_name(class_id: int, names: Sequence[str] | None = None) -> str:
    """Name of a class index: ``names[class_id]``, or the COCO name without ``names`` (the index as text beyond).

    ``names`` may be the detector's class names or the pool names (:func:`~scenemetrics.osim.regions.pool_names`,
    which add ``"unlabelled"``, the pool of given boxes without a class, at index ``num_classes``).

    Example:
        >>> class_name(0), class_name(1, ["cat", "dog"]), class_name(90), class_name(2, ["cat", "dog", "unlabelled"])
        ('person', 'dog', '90', 'unlabelled')
    """
    table = COCO_CLASSES if names is None else names
    return table[class_id] if 0 <= class_id < len(table) else str(class_id)


def resolve_class_names(class_names: Sequence[str] | None, num_classes: int) -> tuple[str, ...]:
    """The class names of a detector head with ``num_classes`` outputs.

    Args:
        class_names: one name per class in head order, or ``None``: the COCO names for an 80-class head, the class
            indices as text (``"0"``, ``"1"``, ...) otherwise.
        num_classes: the head size.

    Raises:
        ValueError: not a sequence of distinct non-empty strings, or its length differs from ``num_classes``.

    Example:
        >>> resolve_class_names(None, 3), resolve_class_names(["cat", "dog", "car"], 3)[2]
        (('0', '1', '2'), 'car')
    """
    if class_names is None:
        return COCO_CLASSES if num_classes == len(COCO_CLASSES) else tuple(str(i) for i in range(num_classes))
    if isinstance(class_names, str) or not isinstance(class_names, Sequence):
        raise ValueError(f"`class_names` must be a sequence of strings (one per class); received {class_names!r}")
    names = tuple(class_names)
    bad = [n for n in names if not isinstance(n, str) or not n.strip()]
    if bad:
        raise ValueError(f"`class_names` must hold non-empty strings; received {bad[:3]!r}")
    if len(names) != num_classes:
        raise ValueError(
            f"`class_names` has {len(names)} name(s) but the detector head has num_classes={num_classes}; give one "
            "name per class, in the order of the head"
        )
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"`class_names` must be distinct (per-class scores are keyed by name); repeated: {dupes}")
    if UNLABELLED in names:
        raise ValueError(
            f"`class_names` must not hold {UNLABELLED!r}: it names the pool of given boxes without a class"
        )
    return names


@dataclass
class OSIMResult:
    """Scene OSIM with its per-class pooling and per-object terms.

    Objects are ordered by view, then in the detector's order (descending score), then the given boxes of the view
    in the order given. The per-class sums have one pool per detector class plus one, ``"unlabelled"`` (class id
    ``num_classes``), for given boxes without a class.

    Attributes:
        score: 0-dim float32 scene OSIM; NaN when nothing was detected.
        per_class: ``o_l`` per detected class id.
        class_saliency: ``s_l`` per detected class id.
        class_counts: number of objects per detected class id.
        image_index: ``(n,)`` int64 view index of each object.
        boxes: ``(n, 4)`` reference boxes x1, y1, x2, y2 in original image pixels.
        boxes_letterbox: ``(n, 4)`` the same boxes in letterbox pixels.
        classes: ``(n,)`` int64 class ids (``num_classes`` for an unlabelled given box).
        det_scores: ``(n,)`` detection confidences (NaN for a given box).
        r: ``(n,)`` feature similarity ``r_ij`` (eq. 1), or the object's patch score for
            :func:`~scenemetrics.osim.patches.osim_patches`.
        s: ``(n,)`` saliency ``s_ij`` (eq. 3).
        r_sum: ``(num_classes + 1,)`` float64 sum of ``r_ij`` per class (the last entry: unlabelled given boxes).
        s_sum: ``(num_classes + 1,)`` float64 sum of ``s_ij`` per class.
        count: ``(num_classes + 1,)`` float64 number of objects per class.
        ratio: letterbox ratio of the views.
        content_size: letterbox content ``(h_c, w_c)``.
        class_names: the name of each class id, ``"unlabelled"`` last (``None``: COCO names).
        given: ``(n,)`` bool, True for a user-given box (``None``: no box was given).
    """

    score: Tensor
    per_class: dict[int, float]
    class_saliency: dict[int, float]
    class_counts: dict[int, int]
    image_index: Tensor
    boxes: Tensor
    boxes_letterbox: Tensor
    classes: Tensor
    det_scores: Tensor
    r: Tensor
    s: Tensor
    r_sum: Tensor
    s_sum: Tensor
    count: Tensor
    ratio: float
    content_size: tuple[int, int]
    class_names: tuple[str, ...] | None = None
    given: Tensor | None = None

    def class_table(self) -> list[dict]:
        """Rows ``{class_id, name, o_l, s_l, count}`` sorted by ``o_l`` ascending (worst class first)."""
        rows = [
            {
                "class_id": c,
                "name": class_name(c, self.class_names),
                "o_l": self.per_class[c],
                "s_l": self.class_saliency[c],
                "count": self.class_counts[c],
            }
            for c in self.per_class
        ]
        return sorted(rows, key=lambda row: (row["o_l"], row["class_id"]))

    def view_scores(self, num_views: int | None = None) -> list[float]:
        """OSIM of each view taken alone (NaN for a view without objects), without warnings.

        Args:
            num_views: number of views (default: one past the largest view index with an object).
        """
        if num_views is None:
            num_views = int(self.image_index.max()) + 1 if self.image_index.numel() else 0
        out = []
        num_classes = self.r_sum.shape[0]
        for i in range(num_views):
            sel = self.image_index == i
            r_sum, s_sum, count = _class_sums(self.classes[sel], self.r[sel], self.s[sel], num_classes)
            out.append(float(scene_score(r_sum, s_sum, count, warn=False)))
        return out


# --------------------------------------------------------------------------------------------------------------
# boxes -> cell spans


def box_to_span(a: Tensor | float, b: Tensor | float, step: float, limit: int) -> tuple[Tensor, Tensor]:
    """Inclusive index span ``lo..hi`` of an interval ``[a, b]`` on a grid of cells of size ``step``.

    ``lo = clamp(floor(a / step), 0, limit - 1)``, ``hi = clamp(floor(b / step), 0, limit - 1)``,
    ``hi = max(hi, lo)``: a box beyond the content collapses onto the border cell; a degenerate box keeps one cell.

    Args:
        a: interval starts (x1 or y1), any shape.
        b: interval ends (x2 or y2), same shape.
        step: cell size in pixels (the feature stride, or 1 for pixels).
        limit: number of valid cells.

    Returns:
        ``(lo, hi)`` int64 tensors.

    Example:
        >>> [int(v) for v in box_to_span(0.0, 32.0, 32, 20)], [int(v) for v in box_to_span(-10.0, 700.0, 32, 20)]
        ([0, 1], [0, 19])
    """
    a_t = torch.as_tensor(a, dtype=torch.float64)
    b_t = torch.as_tensor(b, dtype=torch.float64)
    lo = torch.floor(a_t / step).clamp(0, limit - 1).to(torch.int64)
    hi = torch.floor(b_t / step).clamp(0, limit - 1).to(torch.int64)
    return lo, torch.maximum(hi, lo)


def box_spans(boxes: Tensor, step: float, size: tuple[int, int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Spans of ``(n, 4)`` x1, y1, x2, y2 boxes on a ``size = (n_y, n_x)`` grid: ``(x_lo, x_hi, y_lo, y_hi)``."""
    n_y, n_x = size
    x_lo, x_hi = box_to_span(boxes[:, 0], boxes[:, 2], step, n_x)
    y_lo, y_hi = box_to_span(boxes[:, 1], boxes[:, 3], step, n_y)
    return x_lo, x_hi, y_lo, y_hi


def _box_means(maps: Tensor, view: Tensor, spans: tuple[Tensor, Tensor, Tensor, Tensor]) -> Tensor:
    """Mean of ``maps[view[k]]`` (``(B, h, w)``) over each inclusive span, through float64 summed-area tables."""
    x_lo, x_hi, y_lo, y_hi = (t.to(maps.device) for t in spans)
    sat = F.pad(maps.to(torch.float64).cumsum(1).cumsum(2), (1, 0, 1, 0))
    total = (
        sat[view, y_hi + 1, x_hi + 1] - sat[view, y_lo, x_hi + 1] - sat[view, y_hi + 1, x_lo] + sat[view, y_lo, x_lo]
    )
    area = ((x_hi - x_lo + 1) * (y_hi - y_lo + 1)).to(torch.float64)
    return total / area


# --------------------------------------------------------------------------------------------------------------
# pooling


def _class_sums(classes: Tensor, r: Tensor, s: Tensor, num_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    dev = r.device
    r_sum = torch.zeros(num_classes, dtype=torch.float64, device=dev).index_add_(0, classes, r.to(torch.float64))
    s_sum = torch.zeros(num_classes, dtype=torch.float64, device=dev).index_add_(0, classes, s.to(torch.float64))
    count = torch.zeros(num_classes, dtype=torch.float64, device=dev).index_add_(
        0, classes, torch.ones_like(r, dtype=torch.float64)
    )
    return r_sum, s_sum, count


def _nothing_detected_warning(conf_threshold: float | None) -> None:
    at = f" at conf_threshold={conf_threshold}" if conf_threshold is not None else ""
    warnings.warn(
        f"OSIM: no object was detected in any reference image{at}; the score is NaN "
        "(lower conf_threshold, or check that the references show COCO objects)",
        UserWarning,
        stacklevel=3,
    )


def scene_score(
    r_sum: Tensor, s_sum: Tensor, count: Tensor, *, warn: bool = True, conf_threshold: float | None = None
) -> Tensor:
    """Eq. (5) from per-class sums: ``sum_l s_l o_l / sum_l s_l`` over classes with ``count > 0``.

    Computed in float64, returned as a 0-dim float32 tensor. No object at all gives NaN (with a ``UserWarning`` if
    ``warn``); if every detected class has zero saliency the classes are weighted equally (``mean_l o_l``, with a
    ``UserWarning`` if ``warn``).

    Example:
        >>> import torch
        >>> r = torch.tensor([1.8, 0.5, 0.0], dtype=torch.float64)  # two objects of class 0, one of class 1
        >>> s = torch.tensor([1.0, 0.25, 0.0], dtype=torch.float64)
        >>> n = torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64)
        >>> round(float(scene_score(r, s, n)), 6)  # (0.5 * 0.9 + 0.25 * 0.5) / 0.75
        0.766667
    """
    seen = count > 0
    if not bool(seen.any()):
        if warn:
            _nothing_detected_warning(conf_threshold)
        return torch.tensor(float("nan"), dtype=torch.float32, device=r_sum.device)
    n = count[seen].to(torch.float64)
    o = r_sum[seen].to(torch.float64) / n
    s = s_sum[seen].to(torch.float64) / n
    weight = s.sum()
    if not bool(weight > 0):
        if warn:
            warnings.warn(
                "OSIM: every detected object has zero saliency; classes are weighted equally (mean of o_l)",
                UserWarning,
                stacklevel=2,
            )
        return o.mean().to(torch.float32)
    # classes of zero weight add nothing (and an unbounded o_l, such as the PSNR of an unchanged patch, no NaN)
    keep = s > 0
    return ((s[keep] * o[keep]).sum() / weight).to(torch.float32)


# --------------------------------------------------------------------------------------------------------------
# saliency of the resized reference


def _content_rgb(lb: Letterbox) -> Tensor:
    """The letterbox content region back in RGB [0, 1]: the 'resized reference' the saliency is computed on."""
    h_c, w_c = lb.content_size
    return lb.canvas[:, :, :h_c, :w_c].flip(1) / 255.0


def _saliency_maps(content: Tensor, saliency: str | SaliencyFn) -> Tensor:
    """``(B, h_c, w_c)`` non-negative saliency of the resized references."""
    B, _, h_c, w_c = content.shape
    if isinstance(saliency, str):
        if saliency == "uniform":
            return content.new_ones((B, h_c, w_c))
        if min(h_c, w_c) < _MIN_GBVS_SIDE:
            warnings.warn(
                f"OSIM: the resized reference ({h_c}x{w_c} px) is smaller than {_MIN_GBVS_SIDE} px on a side, too "
                "small for GBVS; uniform saliency is used for these views",
                UserWarning,
                stacklevel=3,
            )
            return content.new_ones((B, h_c, w_c))
        return gbvs(content)
    sal = saliency(content)
    if not isinstance(sal, Tensor) or tuple(sal.shape) != (B, h_c, w_c):
        got = tuple(sal.shape) if isinstance(sal, Tensor) else type(sal).__name__
        raise ValueError(f"`saliency` callable must return a (B, h_c, w_c) = {(B, h_c, w_c)} tensor; received {got}")
    sal = sal.to(device=content.device, dtype=torch.float32)
    if not bool(torch.isfinite(sal).all()) or bool((sal < 0).any()):
        raise ValueError("`saliency` callable must return finite, non-negative values")
    return sal


def _check_pair(preds: Tensor, target: Tensor, *, check_range: bool = True) -> tuple[Tensor, Tensor]:
    p = check_images(preds, "preds", check_range=check_range)
    t = check_images(target, "target")
    if p.shape != t.shape:
        raise ValueError(
            f"`preds` and `target` must have the same shape (renders from the reference cameras); received "
            f"{tuple(p.shape)} and {tuple(t.shape)}"
        )
    return p, t


def _resolve_model(
    model: YOLOX | None,
    detector: str,
    weights_path: str | os.PathLike | None,
    device: torch.device,
    num_classes: int | None = None,
) -> YOLOX:
    if model is None:
        return load_detector(detector, weights_path, device, num_classes=num_classes)
    check_model_classes(check_model(model), num_classes)
    if model.device != device:
        raise ValueError(
            f"`model` is on {model.device} but the images are on {device}; move one of them (model.to(device))"
        )
    return model


def _empty_result(
    num_pools: int,
    device: torch.device,
    ratio: float,
    content_size: tuple[int, int],
    class_names: tuple[str, ...] | None = None,
) -> OSIMResult:
    z64 = torch.zeros(num_pools, dtype=torch.float64, device=device)
    z = torch.zeros(0, device=device)
    return OSIMResult(
        score=torch.tensor(float("nan"), device=device),
        per_class={},
        class_saliency={},
        class_counts={},
        image_index=torch.zeros(0, dtype=torch.int64, device=device),
        boxes=torch.zeros(0, 4, device=device),
        boxes_letterbox=torch.zeros(0, 4, device=device),
        classes=torch.zeros(0, dtype=torch.int64, device=device),
        det_scores=z,
        r=z.clone(),
        s=z.clone(),
        r_sum=z64,
        s_sum=z64.clone(),
        count=z64.clone(),
        ratio=ratio,
        content_size=content_size,
        class_names=class_names,
        given=torch.zeros(0, dtype=torch.bool, device=device),
    )


@dataclass
class ReferenceObjects:
    """The objects of a batch of reference views: the detector's, then the given boxes of each view.

    Attributes:
        letterbox: the references' letterbox.
        features: the references' feature map of the options' layer ``(B, C, h, w)``.
        image_index: ``(n,)`` int64 view of each object.
        boxes: ``(n, 4)`` float32 boxes in original image pixels.
        boxes_letterbox: ``(n, 4)`` float32 boxes in letterbox pixels.
        classes: ``(n,)`` int64 pool ids (``num_classes`` for an unlabelled given box).
        det_scores: ``(n,)`` detection confidences (NaN for a given box).
        given: ``(n,)`` bool, True for a given box.
        s: ``(n,)`` float32 saliency ``s_ij`` (eq. 3), empty when there is no object.
    """

    letterbox: Letterbox
    features: Tensor
    image_index: Tensor
    boxes: Tensor
    boxes_letterbox: Tensor
    classes: Tensor
    det_scores: Tensor
    given: Tensor
    s: Tensor

    def __len__(self) -> int:
        return int(self.classes.shape[0])


def reference_objects(
    target: Tensor, options: OSIMOptions, yolox: YOLOX, given: Sequence[GivenBoxes] | None = None
) -> ReferenceObjects:
    """Detect the objects of checked reference views, add the given boxes, and take each one's saliency ``s_ij``.

    Args:
        target: checked ``(B, 3, H, W)`` float references on the detector's device.
        options: validated options.
        yolox: the detector.
        given: checked regions per view (:func:`~scenemetrics.osim.regions.check_given_boxes`), or ``None``.
    """
    S = yolox.input_size
    lb = letterbox_tensor(target, S, True)
    out = yolox._detect_letterbox(lb, options.conf_threshold, options.nms_threshold, (options.layer,))
    dev = target.device
    parts: dict[str, list[Tensor]] = {k: [] for k in ("view", "boxes", "lb", "classes", "scores", "given")}
    for i, d in enumerate(out.detections):
        g_boxes, g_ids = given[i] if given is not None else (torch.zeros(0, 4, dtype=torch.float64), torch.zeros(0))
        n_det, n_given = len(d), int(g_boxes.shape[0])
        parts["view"].append(torch.full((n_det + n_given,), i, dtype=torch.int64, device=dev))
        parts["boxes"] += [d.boxes.to(torch.float32), g_boxes.to(dev, torch.float32)]
        # given boxes enter the letterbox frame as the detector's leave it (boxes_letterbox / ratio), in float64
        parts["lb"] += [d.boxes_letterbox.to(torch.float32), (g_boxes.to(dev) * lb.ratio).to(torch.float32)]
        parts["classes"] += [d.classes, g_ids.to(dev, torch.int64)]
        parts["scores"] += [d.scores.to(torch.float32), torch.full((n_given,), float("nan"), device=dev)]
        parts["given"] += [torch.zeros(n_det, dtype=torch.bool, device=dev), torch.ones(n_given, dtype=torch.bool,
                                                                                       device=dev)]  # fmt: skip
    view = torch.cat(parts["view"]) if parts["view"] else torch.zeros(0, dtype=torch.int64, device=dev)
    boxes_lb = torch.cat(parts["lb"]) if parts["lb"] else torch.zeros(0, 4, device=dev)
    s = torch.zeros(0, device=dev)
    if view.numel():
        h_c, w_c = lb.content_size
        with torch.no_grad():
            sal = _saliency_maps(_content_rgb(lb), options.saliency)
        s = _box_means(sal, view, box_spans(boxes_lb, 1, (h_c, w_c))).to(torch.float32)

    def cat(key: str, empty: Tensor) -> Tensor:
        return torch.cat(parts[key]) if parts[key] else empty

    return ReferenceObjects(
        letterbox=lb,
        features=out.features[options.layer],
        image_index=view,
        boxes=cat("boxes", torch.zeros(0, 4, device=dev)),
        boxes_letterbox=boxes_lb,
        classes=cat("classes", torch.zeros(0, dtype=torch.int64, device=dev)),
        det_scores=cat("scores", torch.zeros(0, device=dev)),
        given=cat("given", torch.zeros(0, dtype=torch.bool, device=dev)),
        s=s,
    )


def pooled_result(
    objects: ReferenceObjects,
    r: Tensor,
    num_classes: int,
    names: tuple[str, ...],
    *,
    warn: bool,
    conf_threshold: float | None,
) -> OSIMResult:
    """The :class:`OSIMResult` of ``objects`` whose per-object scores are ``r`` (``(n,)``): per-class sums over
    ``num_classes + 1`` pools and the scene score of eq. (5). ``names`` are the pool names."""
    lb = objects.letterbox
    if len(objects) == 0:
        if warn:
            _nothing_detected_warning(conf_threshold)
        return _empty_result(num_classes + 1, r.device, lb.ratio, lb.content_size, names)
    r = r.to(torch.float32)
    r_sum, s_sum, count = _class_sums(objects.classes, r, objects.s, num_classes + 1)
    seen = torch.nonzero(count > 0).flatten().tolist()
    return OSIMResult(
        score=scene_score(r_sum, s_sum, count, warn=warn, conf_threshold=conf_threshold),
        per_class={c: float(r_sum[c] / count[c]) for c in seen},
        class_saliency={c: float(s_sum[c] / count[c]) for c in seen},
        class_counts={c: int(count[c]) for c in seen},
        image_index=objects.image_index,
        boxes=objects.boxes,
        boxes_letterbox=objects.boxes_letterbox,
        classes=objects.classes,
        det_scores=objects.det_scores,
        r=r,
        s=objects.s,
        r_sum=r_sum,
        s_sum=s_sum,
        count=count,
        ratio=lb.ratio,
        content_size=lb.content_size,
        class_names=names,
        given=objects.given,
    )


def _osim(
    p: Tensor,
    t: Tensor,
    options: OSIMOptions,
    yolox: YOLOX,
    *,
    warn: bool,
    class_names: Sequence[str] | None = None,
    given: Sequence[GivenBoxes] | None = None,
) -> OSIMResult:
    """OSIM of checked images (:func:`_check_pair`) with validated ``options``, a detector on ``t``'s device and
    checked given boxes."""

    def feature_similarity(objects: ReferenceObjects) -> Tensor:
        with torch.no_grad():
            layer = options.layer
            f_test = yolox.extract(letterbox_tensor(p, yolox.input_size, True).canvas, (layer,))[layer]
            cos = F.cosine_similarity(objects.features, f_test, dim=1, eps=1e-8)  # (B, H_f, W_f)
        h_c, w_c = objects.letterbox.content_size
        step = yolox.input_size / cos.shape[-1]
        cell_limits = (math.ceil(h_c / step), math.ceil(w_c / step))
        return _box_means(cos, objects.image_index, box_spans(objects.boxes_letterbox, step, cell_limits))

    return score_objects(t, options, yolox, feature_similarity, warn=warn, class_names=class_names, given=given)


def score_objects(
    t: Tensor,
    options: OSIMOptions,
    yolox: YOLOX,
    object_scores: Callable[[ReferenceObjects], Tensor],
    *,
    warn: bool,
    class_names: Sequence[str] | None = None,
    given: Sequence[GivenBoxes] | None = None,
) -> OSIMResult:
    """OSIM's objects of the checked references ``t`` (detected and given), scored by ``object_scores`` (the
    ``r_ij`` of every object, ``(N,)``; not called when there is none) and pooled as OSIM pools them."""
    num_classes = yolox.num_classes
    names = pool_names(resolve_class_names(class_names, num_classes), num_classes)
    if t.shape[0] == 0:
        if warn:
            _nothing_detected_warning(options.conf_threshold)
        return _empty_result(num_classes + 1, t.device, float("nan"), (0, 0), names)
    objects = reference_objects(t, options, yolox, given)
    r = object_scores(objects) if len(objects) else torch.zeros(0, device=t.device)
    return pooled_result(objects, r, num_classes, names, warn=warn, conf_threshold=options.conf_threshold)


def given_boxes(
    boxes: Sequence[object] | None, images: Tensor, yolox: YOLOX, class_names: Sequence[str] | None
) -> list[GivenBoxes] | None:
    """``boxes`` checked for the checked ``images`` (``(B, 3, H, W)``) and ``yolox``'s classes."""
    return check_given_boxes(
        boxes, int(images.shape[0]), (int(images.shape[-2]), int(images.shape[-1])), yolox.num_classes,
        resolve_class_names(class_names, yolox.num_classes),
    )  # fmt: skip


def osim(
    preds: Tensor,
    target: Tensor,
    *,
    detector: str = "yolox_x",
    layer: str = "dark5",
    conf_threshold: float = 0.35,
    nms_threshold: float = 0.45,
    saliency: str | SaliencyFn = "gbvs",
    weights_path: str | os.PathLike | None = None,
    model: YOLOX | None = None,
    num_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    boxes: Sequence[object] | None = None,
) -> OSIMResult:
    """Scene OSIM of test images (renders) against their references; the B pairs are the views of one scene.

    Args:
        preds: ``(B, 3, H, W)`` or ``(3, H, W)`` test images, RGB float in [0, 1] or uint8.
        target: reference images of the same shape.
        detector: YOLOX variant (the paper uses ``"yolox_x"``).
        layer: feature map compared (``"dark5"`` in the paper; ``dark3``, ``dark4``, ``p3``, ``p4``, ``p5``).
        conf_threshold: detection confidence threshold (inclusive).
        nms_threshold: class-agnostic NMS IoU threshold.
        saliency: ``"gbvs"``, ``"uniform"`` (unweighted mean of ``o_l``) or a callable mapping the resized
            references ``(B, 3, h_c, w_c)`` RGB [0, 1] to ``(B, h_c, w_c)`` non-negative saliency.
        weights_path: YOLOX checkpoint file or folder (``None``: the scenemetrics cache).
        model: a :class:`~scenemetrics.osim.yolox.YOLOX` to use instead of loading ``detector`` (on the images'
            device).
        num_classes: head size of the detector; ``None`` reads it from the checkpoint (80 for the official COCO
            files; a YOLOX fine-tuned on your own classes loads as it is). A different value raises.
        class_names: one name per class, in head order, used by the per-class outputs (``None``: the COCO names
            for an 80-class head, the class indices as text otherwise).
        boxes: regions of your own next to the detector's, one entry per image: ``None``, a ``(K, 4)`` list of
            ``x1, y1, x2, y2`` in original image pixels (no class: pooled as ``"unlabelled"``), or
            ``{"boxes": (K, 4), "classes": [name, index or None, ...]}`` (see :mod:`scenemetrics.osim.regions`).
            A given box is scored exactly as a detection with the same box and class.

    Returns:
        An :class:`OSIMResult`. With no object (detected or given) the score is NaN and a ``UserWarning`` is
        emitted.

    Raises:
        ValueError: bad images, different shapes of ``preds`` and ``target``, a bad option, bad ``boxes``, or a
            ``model`` on another device.
        scenemetrics.hub.WeightsNotFoundError: no checkpoint for ``detector``.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
        >>> from scenemetrics.osim.yolox import YOLOX
        >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
        >>> refs = synthetic_images(2, (96, 128), seed=3)
        >>> res = osim((refs * 0.7).clamp(0, 1), refs, detector="yolox_nano", weights_path=p, conf_threshold=0.3)
        >>> bool(0 <= float(res.score) < 1), res.r.shape == res.s.shape
        (True, True)
        >>> mine = osim(refs, refs, detector="yolox_nano", weights_path=p, conf_threshold=2.0,  # no detection
        ...             boxes=[[[8, 8, 60, 60]], {"boxes": [[0, 0, 40, 30]], "classes": ["dog"]}])
        >>> [mine.class_names[c] for c in mine.classes.tolist()], round(float(mine.score), 4)
        (['unlabelled', 'dog'], 1.0)
    """
    opts = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
    p, t = _check_pair(preds, target)
    yolox = _resolve_model(model, opts.detector, weights_path, t.device, num_classes)
    given = given_boxes(boxes, t, yolox, class_names)
    with torch.no_grad():
        return _osim(p, t, opts, yolox, warn=True, class_names=class_names, given=given)
