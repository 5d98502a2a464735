"""YOLOX's pre- and post-processing: the official letterbox (top-left paste on a 114-grey canvas, BGR, 0..255, no
normalisation, from RGB ``[0, 1]`` tensors), decoding of the head's outputs and class-agnostic NMS (as
``yolox/utils/boxes.py``), and the result types.

Example:
    >>> import torch
    >>> from scenemetrics.osim.boxes import letterbox
    >>> lb = letterbox(torch.rand(1, 3, 60, 80), 128)
    >>> lb.canvas.shape, lb.content_size
    (torch.Size([1, 3, 128, 128]), (96, 128))
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor

from scenemetrics.checks import check_number
from scenemetrics.image import check_images

__all__ = [
    "Detections",
    "Letterbox",
    "YOLOXOutput",
    "check_thresholds",
    "decode_outputs",
    "letterbox",
    "letterbox_tensor",
    "postprocess",
]

_PAD_VALUE = 114.0


@dataclass
class Letterbox:
    """A letterboxed batch.

    Attributes:
        canvas: ``(B, 3, S, S)`` float32, BGR, 0..255, content at the top-left, padding 114.
        ratio: ``r = min(S / H, S / W)`` as Python computes it.
        content_size: ``(int(H * r), int(W * r))``, the content region ``canvas[:, :, :h_c, :w_c]``.
    """

    canvas: Tensor
    ratio: float
    content_size: tuple[int, int]


@dataclass
class Detections:
    """The detections of one image, sorted by descending score (NMS order).

    Attributes:
        boxes: ``(n, 4)`` float32 x1, y1, x2, y2 in original image pixels (``boxes_letterbox / ratio``).
        boxes_letterbox: ``(n, 4)`` in letterbox-canvas pixels, not clipped (YOLOX does not clip).
        scores: ``(n,)`` objectness * class confidence.
        classes: ``(n,)`` int64 COCO class index.
        objectness: ``(n,)``.
        class_conf: ``(n,)`` maximum class probability.
    """

    boxes: Tensor
    boxes_letterbox: Tensor
    scores: Tensor
    classes: Tensor
    objectness: Tensor
    class_conf: Tensor

    def __len__(self) -> int:
        return int(self.scores.shape[0])


@dataclass
class YOLOXOutput:
    """What :meth:`YOLOX.detect` returns.

    Attributes:
        features: the requested layers, each ``(B, C, h, w)`` over the whole canvas.
        raw: ``(B, N, 5 + C)`` decoded head output (as :meth:`YOLOX.forward`).
        detections: one :class:`Detections` per image.
        ratio: letterbox ratio.
        content_size: letterbox content ``(h_c, w_c)``.
        input_size: canvas side S.
    """

    features: dict[str, Tensor]
    raw: Tensor
    detections: list[Detections]
    ratio: float
    content_size: tuple[int, int]
    input_size: int


def _check_input_size(input_size: int) -> int:
    if isinstance(input_size, bool) or not isinstance(input_size, int) or input_size <= 0 or input_size % 32:
        raise ValueError(f"`input_size` must be a positive multiple of 32 (e.g. 416, 640); received {input_size!r}")
    return input_size


def letterbox_tensor(x: Tensor, input_size: int, quantize: bool) -> Letterbox:
    """:func:`letterbox` of an already validated float ``(B, 3, H, W)`` RGB batch: no image checks here (values are
    not range-checked), so a render an optimiser pushed slightly outside [0, 1] keeps its gradient path.

    Example:
        >>> import torch
        >>> x = torch.rand(1, 3, 375, 500)
        >>> bool(torch.equal(letterbox_tensor(x, 640, True).canvas, letterbox(x).canvas))
        True
    """
    S = _check_input_size(input_size)
    H, W = int(x.shape[-2]), int(x.shape[-1])
    r = min(S / H, S / W)
    h_c, w_c = int(H * r), int(W * r)
    if min(h_c, w_c) < 1:
        raise ValueError(
            f"an image of {H}x{W} px letterboxes to {h_c}x{w_c} px at input_size {S}: the aspect ratio is too extreme"
        )
    bgr = x.flip(1) * 255.0
    if quantize:
        bgr = bgr.round()
    if (h_c, w_c) != (H, W):
        bgr = F.interpolate(bgr, size=(h_c, w_c), mode="bilinear", align_corners=False, antialias=False)
        if quantize:  # OpenCV returns uint8
            bgr = bgr.round().clamp(0.0, 255.0)
    pad = (0, S - w_c, 0, S - h_c)
    canvas = F.pad(bgr, pad, mode="constant", value=_PAD_VALUE)
    return Letterbox(canvas=canvas, ratio=r, content_size=(h_c, w_c))


def letterbox(images: Tensor, input_size: int = 640, *, quantize: bool = True) -> Letterbox:
    """The official YOLOX preprocessing, from RGB ``[0, 1]`` images.

    RGB is flipped to BGR and scaled to 0..255 (rounded when ``quantize``), resized by ``r = min(S/H, S/W)`` to
    ``(int(H r), int(W r))`` with half-pixel bilinear interpolation and no antialias (OpenCV ``INTER_LINEAR``;
    rounded and clamped again when ``quantize``), and pasted at the top-left of an ``S x S`` canvas of 114.

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` RGB, float in [0, 1] or uint8.
        input_size: canvas side S, a multiple of 32.
        quantize: round like the 8-bit pipeline of the paper; ``False`` keeps the canvas differentiable (and does
            not range-check the input).

    Returns:
        A :class:`Letterbox`.

    Raises:
        ValueError: bad images (see :func:`scenemetrics.image.check_images`) or an ``input_size`` that is not a
            positive multiple of 32.

    Example:
        >>> import torch
        >>> lb = letterbox(torch.rand(1, 3, 375, 500))
        >>> lb.ratio, lb.content_size, lb.canvas.shape
        (1.28, (480, 640), torch.Size([1, 3, 640, 640]))
    """
    x = check_images(images, "images", check_range=quantize)
    return letterbox_tensor(x, input_size, quantize)


def decode_outputs(levels: Sequence[Tensor], strides: Sequence[int] = (8, 16, 32)) -> Tensor:
    """Decode head levels into ``(B, sum h_k w_k, 5 + C)`` rows (official ``YOLOXHead.decode_outputs``).

    Each level is flattened row-major (row index ``y * w + x``) and the levels are concatenated in the given order.
    For a cell at column x, row y of a level with stride s: ``cx = (p0 + x) s``, ``cy = (p1 + y) s``,
    ``w = exp(p2) s``, ``h = exp(p3) s``; the remaining columns pass through.

    Args:
        levels: ``levels[k]`` is ``(B, 5 + C, h_k, w_k)`` = [reg (4, raw), objectness, class probabilities].
        strides: stride of each level.

    Returns:
        The decoded rows.

    Example:
        >>> import torch
        >>> lvl = torch.zeros(1, 6, 1, 2)
        >>> decode_outputs([lvl], strides=[8])[0, :, :4].tolist()
        [[0.0, 0.0, 8.0, 8.0], [8.0, 0.0, 8.0, 8.0]]
    """
    if len(levels) != len(strides):
        raise ValueError(f"`levels` ({len(levels)}) and `strides` ({len(strides)}) must have the same length")
    rows = []
    for lvl, stride in zip(levels, strides, strict=True):
        if lvl.ndim != 4 or lvl.shape[1] < 5:
            raise ValueError(f"each level must have shape (B, 5 + C, h, w); received {tuple(lvl.shape)}")
        _, _, h, w = lvl.shape
        flat = lvl.flatten(2).transpose(1, 2)  # (B, h*w, 5 + C)
        yv, xv = torch.meshgrid(
            torch.arange(h, device=lvl.device, dtype=lvl.dtype),
            torch.arange(w, device=lvl.device, dtype=lvl.dtype),
            indexing="ij",
        )
        grid = torch.stack([xv, yv], dim=-1).reshape(1, h * w, 2)
        xy = (flat[..., 0:2] + grid) * stride
        wh = flat[..., 2:4].exp() * stride
        rows.append(torch.cat([xy, wh, flat[..., 4:]], dim=-1))
    return torch.cat(rows, dim=1)


def _empty_detections(like: Tensor) -> Detections:
    z = like.new_zeros((0,))
    return Detections(
        boxes=like.new_zeros((0, 4)),
        boxes_letterbox=like.new_zeros((0, 4)),
        scores=z,
        classes=torch.zeros(0, dtype=torch.int64, device=like.device),
        objectness=z.clone(),
        class_conf=z.clone(),
    )


def check_thresholds(conf_threshold: float, nms_threshold: float) -> None:
    """``conf_threshold``: a number >= 0 (``inf`` keeps no detection: scores lie in [0, 1]); ``nms_threshold``:
    an IoU in [0, 1]. NaN, booleans and other types raise ``ValueError`` naming the argument.

    Example:
        >>> check_thresholds(float("nan"), 0.45)
        Traceback (most recent call last):
        ...
        ValueError: `conf_threshold` must be a number >= 0 (inf keeps no detection); received nan
    """
    ok = isinstance(conf_threshold, numbers.Real) and not isinstance(conf_threshold, bool)
    if not ok or not float(conf_threshold) >= 0.0:  # NaN fails the comparison
        raise ValueError(
            f"`conf_threshold` must be a number >= 0 (inf keeps no detection); received {conf_threshold!r}"
        )
    check_number(nms_threshold, "nms_threshold", low=0.0, high=1.0)


def postprocess(
    raw: Tensor, *, conf_threshold: float = 0.35, nms_threshold: float = 0.45, ratio: float = 1.0
) -> list[Detections]:
    """Threshold and class-agnostic NMS of decoded rows (official ``postprocess(..., class_agnostic=True)``).

    Boxes become ``cx -/+ w/2, cy -/+ h/2``; the class is the argmax of the class probabilities and the score is
    ``objectness * class_conf``. Rows with ``score >= conf_threshold`` (inclusive) enter
    ``torchvision.ops.nms(boxes, score, nms_threshold)``, whose order (descending score) is kept. Boxes are not
    clipped; original-image boxes are ``boxes_letterbox / ratio``.

    Args:
        raw: ``(B, N, 5 + C)`` from :func:`decode_outputs` / :meth:`YOLOX.forward`.
        conf_threshold: minimum score (inclusive), >= 0; ``inf`` keeps no detection (the raw rows stay available).
        nms_threshold: IoU above which the lower-scored box is suppressed, in [0, 1].
        ratio: the letterbox ratio (> 0).

    Raises:
        ValueError: a bad ``raw`` shape or a bad threshold / ratio (the message names the argument).

    Returns:
        One :class:`Detections` per image.

    Example:
        >>> import torch
        >>> raw = torch.tensor([[[50.0, 50, 20, 20, 0.9, 0.8, 0.1], [52.0, 50, 20, 20, 0.8, 0.1, 0.9]]])
        >>> d = postprocess(raw, conf_threshold=0.5)[0]
        >>> d.boxes.tolist(), d.classes.tolist()
        ([[40.0, 40.0, 60.0, 60.0]], [0])
    """
    if raw.ndim != 3 or raw.shape[-1] < 6:
        raise ValueError(f"`raw` must have shape (B, N, 5 + C) with C >= 1; received {tuple(raw.shape)}")
    check_thresholds(conf_threshold, nms_threshold)
    check_number(ratio, "ratio", low=0.0, low_open=True)
    return _postprocess(raw, conf_threshold, nms_threshold, ratio)


def _postprocess(raw: Tensor, conf_threshold: float, nms_threshold: float, ratio: float) -> list[Detections]:
    """:func:`postprocess` of a checked ``raw`` with checked thresholds and ratio."""
    out = []
    for pred in raw:
        xy, wh = pred[:, 0:2], pred[:, 2:4]
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], dim=1)
        class_conf, classes = pred[:, 5:].max(dim=1)
        obj = pred[:, 4]
        score = obj * class_conf
        keep = score >= conf_threshold
        if not bool(keep.any()):
            out.append(_empty_detections(pred))
            continue
        boxes, score, classes, obj, class_conf = boxes[keep], score[keep], classes[keep], obj[keep], class_conf[keep]
        idx = torchvision.ops.nms(boxes.float(), score.float(), float(nms_threshold))
        boxes_lb = boxes[idx]
        out.append(
            Detections(
                boxes=boxes_lb / ratio,
                boxes_letterbox=boxes_lb,
                scores=score[idx],
                classes=classes[idx].to(torch.int64),
                objectness=obj[idx],
                class_conf=class_conf[idx],
            )
        )
    return out
