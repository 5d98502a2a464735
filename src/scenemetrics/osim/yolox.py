"""YOLOX in pure PyTorch, module for module the Megvii release (checkpoints load strictly), with pre/post-processing.

The network follows ``Megvii-BaseDetection/YOLOX`` (``network_blocks.py``, ``darknet.py``, ``yolo_pafpn.py``,
``yolo_head.py``): a CSPDarknet backbone (``backbone.backbone``), a PAFPN neck (``backbone``) and a decoupled head
(``head``). Module names equal the keys of the release checkpoints, every BatchNorm uses ``eps=1e-3`` and
``momentum=0.03`` as the official ``init_yolo`` sets them.

Preprocessing is the official letterbox (top-left paste on a 114-grey canvas, BGR, 0..255, no normalisation),
computed from RGB ``[0, 1]`` tensors; decoding and class-agnostic NMS follow ``yolox/utils/boxes.py``.

Example:
    >>> import torch
    >>> from scenemetrics.osim.yolox import YOLOX
    >>> model = YOLOX("yolox_nano").eval()
    >>> out = model.detect(torch.rand(1, 3, 64, 96), input_size=128, conf_threshold=0.99)
    >>> out.features["dark5"].shape, out.raw.shape
    (torch.Size([1, 256, 4, 4]), torch.Size([1, 336, 85]))
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor, nn

from scenemetrics import hub
from scenemetrics.checks import check_number
from scenemetrics.image import check_images

__all__ = [
    "COCO_CLASSES",
    "FEATURE_LAYERS",
    "YOLOX",
    "YOLOX_VARIANTS",
    "Detections",
    "Letterbox",
    "YOLOXOutput",
    "check_thresholds",
    "decode_outputs",
    "infer_variant",
    "letterbox",
    "letterbox_tensor",
    "normalize_variant",
    "postprocess",
    "random_checkpoint",
]

YOLOX_VARIANTS = ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")
"""The six Megvii release variants, smallest first."""

FEATURE_LAYERS = ("dark3", "dark4", "dark5", "p3", "p4", "p5")
"""Feature maps :meth:`YOLOX.extract` can return: CSPDarknet stages and PAFPN outputs (strides 8, 16, 32)."""

# variant -> (depth multiplier, width multiplier, depthwise convs, official test size); from exps/default/*.py
_CONFIGS: dict[str, tuple[float, float, bool, int]] = {
    "yolox_nano": (0.33, 0.25, True, 416),
    "yolox_tiny": (0.33, 0.375, False, 416),
    "yolox_s": (0.33, 0.50, False, 640),
    "yolox_m": (0.67, 0.75, False, 640),
    "yolox_l": (1.0, 1.0, False, 640),
    "yolox_x": (1.33, 1.25, False, 640),
}

COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)  # fmt: skip
"""The 80 COCO class names in YOLOX's index order."""

_BN_EPS = 1e-3
_BN_MOMENTUM = 0.03
_PAD_VALUE = 114.0


def normalize_variant(variant: str) -> str:
    """Canonical variant name (``"yolox-x"`` and ``"YOLOX_X"`` become ``"yolox_x"``).

    Raises:
        ValueError: unknown variant; the message lists :data:`YOLOX_VARIANTS`.
    """
    if not isinstance(variant, str):
        raise ValueError(f"`variant` must be one of {', '.join(YOLOX_VARIANTS)}; received {variant!r}")
    name = variant.strip().lower().replace("-", "_")
    if name not in _CONFIGS:
        raise ValueError(f"unknown YOLOX variant {variant!r}; expected one of {', '.join(YOLOX_VARIANTS)}")
    return name


def _check_num_classes(num_classes: int) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(
            f"`num_classes` must be a positive int (or None: read it from the checkpoint); received {num_classes!r}"
        )
    return num_classes


def infer_variant(state: Mapping[str, Tensor]) -> str | None:
    """The YOLOX variant a state_dict was made for, from its tensor shapes (``None`` if it fits none).

    The stem's output channels give the width (``int(64 * width)``: 16, 24, 32, 48, 64, 80), the number of
    bottlenecks in ``dark2`` the depth (``max(round(3 * depth), 1)``), and ``dconv`` keys the depthwise nano.

    Example:
        >>> infer_variant(YOLOX("yolox_tiny").state_dict())
        'yolox_tiny'
    """
    stem = state.get("backbone.backbone.stem.conv.conv.weight")
    if not isinstance(stem, Tensor) or stem.ndim != 4:
        return None
    base = int(stem.shape[0])
    prefix = "backbone.backbone.dark2.1.m."
    depth = len({k[len(prefix) :].split(".", 1)[0] for k in state if k.startswith(prefix)})
    depthwise = any(".dconv." in k for k in state)
    for name, (d, w, dw, _) in _CONFIGS.items():
        if int(64 * w) == base and max(round(3 * d), 1) == depth and dw == depthwise:
            return name
    return None


# --------------------------------------------------------------------------------------------------------------
# building blocks (names = checkpoint keys)


class BaseConv(nn.Module):
    """Conv2d (no bias) -> BatchNorm2d(eps=1e-3) -> SiLU."""

    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, padding=(k - 1) // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=_BN_EPS, momentum=_BN_MOMENTUM)
        self.act = nn.SiLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.bn(self.conv(x)))


class DWConv(nn.Module):
    """Depthwise BaseConv followed by a pointwise BaseConv (YOLOX-nano)."""

    def __init__(self, cin: int, cout: int, k: int, stride: int = 1) -> None:
        super().__init__()
        self.dconv = BaseConv(cin, cin, k, stride, groups=cin)
        self.pconv = BaseConv(cin, cout, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.pconv(self.dconv(x))


def _conv(depthwise: bool, cin: int, cout: int, k: int, stride: int = 1) -> nn.Module:
    return DWConv(cin, cout, k, stride) if depthwise else BaseConv(cin, cout, k, stride)


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool, depthwise: bool) -> None:
        super().__init__()
        self.conv1 = BaseConv(c, c, 1)
        self.conv2 = _conv(depthwise, c, c, 3)
        self.use_add = shortcut

    def forward(self, x: Tensor) -> Tensor:
        y = self.conv2(self.conv1(x))
        return y + x if self.use_add else y


class CSPLayer(nn.Module):
    def __init__(self, cin: int, cout: int, n: int, shortcut: bool, depthwise: bool) -> None:
        super().__init__()
        h = int(0.5 * cout)
        self.conv1 = BaseConv(cin, h, 1)
        self.conv2 = BaseConv(cin, h, 1)
        self.conv3 = BaseConv(2 * h, cout, 1)
        self.m = nn.Sequential(*[Bottleneck(h, shortcut, depthwise) for _ in range(n)])

    def forward(self, x: Tensor) -> Tensor:
        return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], dim=1))


class SPPBottleneck(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_sizes: Sequence[int] = (5, 9, 13)) -> None:
        super().__init__()
        hidden = cin // 2
        self.conv1 = BaseConv(cin, hidden, 1)
        self.m = nn.ModuleList([nn.MaxPool2d(k, stride=1, padding=k // 2) for k in kernel_sizes])
        self.conv2 = BaseConv(hidden * (len(kernel_sizes) + 1), cout, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        return self.conv2(torch.cat([x, *[pool(x) for pool in self.m]], dim=1))


class Focus(nn.Module):
    """Space-to-depth in the order top-left, bottom-left, top-right, bottom-right (not raster order), then a conv."""

    def __init__(self, cin: int, cout: int, k: int = 3) -> None:
        super().__init__()
        self.conv = BaseConv(cin * 4, cout, k)

    def forward(self, x: Tensor) -> Tensor:
        tl = x[..., ::2, ::2]
        bl = x[..., 1::2, ::2]
        tr = x[..., ::2, 1::2]
        br = x[..., 1::2, 1::2]
        return self.conv(torch.cat([tl, bl, tr, br], dim=1))


class CSPDarknet(nn.Module):
    def __init__(self, depth: float, width: float, depthwise: bool) -> None:
        super().__init__()
        b = int(width * 64)
        d = max(round(depth * 3), 1)
        self.stem = Focus(3, b, k=3)
        self.dark2 = nn.Sequential(_conv(depthwise, b, 2 * b, 3, 2), CSPLayer(2 * b, 2 * b, d, True, depthwise))
        self.dark3 = nn.Sequential(_conv(depthwise, 2 * b, 4 * b, 3, 2), CSPLayer(4 * b, 4 * b, 3 * d, True, depthwise))
        self.dark4 = nn.Sequential(_conv(depthwise, 4 * b, 8 * b, 3, 2), CSPLayer(8 * b, 8 * b, 3 * d, True, depthwise))
        self.dark5 = nn.Sequential(
            _conv(depthwise, 8 * b, 16 * b, 3, 2),
            SPPBottleneck(16 * b, 16 * b),
            CSPLayer(16 * b, 16 * b, d, False, depthwise),
        )

    def forward(self, x: Tensor, upto: str = "dark5") -> dict[str, Tensor]:
        """Stage outputs ``dark3``..``upto`` (stages after ``upto`` are not run)."""
        out: dict[str, Tensor] = {}
        x = self.dark2(self.stem(x))
        for name in ("dark3", "dark4", "dark5"):
            x = getattr(self, name)(x)
            out[name] = x
            if name == upto:
                break
        return out


class YOLOPAFPN(nn.Module):
    def __init__(self, depth: float, width: float, depthwise: bool) -> None:
        super().__init__()
        self.backbone = CSPDarknet(depth, width, depthwise)
        c0, c1, c2 = int(256 * width), int(512 * width), int(1024 * width)
        n = round(3 * depth)
        self.lateral_conv0 = BaseConv(c2, c1, 1)
        self.C3_p4 = CSPLayer(2 * c1, c1, n, False, depthwise)
        self.reduce_conv1 = BaseConv(c1, c0, 1)
        self.C3_p3 = CSPLayer(2 * c0, c0, n, False, depthwise)
        self.bu_conv2 = _conv(depthwise, c0, c0, 3, 2)
        self.C3_n3 = CSPLayer(2 * c0, c1, n, False, depthwise)
        self.bu_conv1 = _conv(depthwise, c1, c1, 3, 2)
        self.C3_n4 = CSPLayer(2 * c1, c2, n, False, depthwise)

    def forward(self, feats: Mapping[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(p3, p4, p5) = official (pan_out2, pan_out1, pan_out0) from the dark3/4/5 maps."""
        x2, x1, x0 = feats["dark3"], feats["dark4"], feats["dark5"]
        fpn0 = self.lateral_conv0(x0)
        fpn1 = self.reduce_conv1(self.C3_p4(torch.cat([F.interpolate(fpn0, scale_factor=2.0, mode="nearest"), x1], 1)))
        p3 = self.C3_p3(torch.cat([F.interpolate(fpn1, scale_factor=2.0, mode="nearest"), x2], 1))
        p4 = self.C3_n3(torch.cat([self.bu_conv2(p3), fpn1], 1))
        p5 = self.C3_n4(torch.cat([self.bu_conv1(p4), fpn0], 1))
        return p3, p4, p5


class YOLOXHead(nn.Module):
    def __init__(self, num_classes: int, width: float, depthwise: bool) -> None:
        super().__init__()
        c = int(256 * width)
        in_channels = (int(256 * width), int(512 * width), int(1024 * width))
        self.stems = nn.ModuleList([BaseConv(cin, c, 1) for cin in in_channels])
        self.cls_convs = nn.ModuleList(
            [nn.Sequential(_conv(depthwise, c, c, 3), _conv(depthwise, c, c, 3)) for _ in in_channels]
        )
        self.reg_convs = nn.ModuleList(
            [nn.Sequential(_conv(depthwise, c, c, 3), _conv(depthwise, c, c, 3)) for _ in in_channels]
        )
        self.cls_preds = nn.ModuleList([nn.Conv2d(c, num_classes, 1) for _ in in_channels])
        self.reg_preds = nn.ModuleList([nn.Conv2d(c, 4, 1) for _ in in_channels])
        self.obj_preds = nn.ModuleList([nn.Conv2d(c, 1, 1) for _ in in_channels])
        prior = -math.log((1 - 1e-2) / 1e-2)  # official initialize_biases(prior_prob=0.01)
        for conv in (*self.cls_preds, *self.obj_preds):
            nn.init.constant_(conv.bias, prior)

    def forward(self, feats: Sequence[Tensor]) -> list[Tensor]:
        """Per level ``cat([reg (raw), sigmoid(obj), sigmoid(cls)])``, shape (B, 5 + C, h, w)."""
        levels = []
        for k, x in enumerate(feats):
            x = self.stems[k](x)
            cls = self.cls_preds[k](self.cls_convs[k](x))
            rf = self.reg_convs[k](x)
            levels.append(torch.cat([self.reg_preds[k](rf), self.obj_preds[k](rf).sigmoid(), cls.sigmoid()], 1))
        return levels


# --------------------------------------------------------------------------------------------------------------
# pre/post-processing


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


# --------------------------------------------------------------------------------------------------------------
# the model


class YOLOX(nn.Module):
    """YOLOX detector (nano, tiny, s, m, l, x) whose ``state_dict`` keys equal the Megvii release checkpoints.

    Args:
        variant: one of :data:`YOLOX_VARIANTS`; hyphenated names (``"yolox-x"``) are accepted.
        num_classes: number of classes of the head (80 for the COCO checkpoints).

    Attributes:
        variant: the canonical variant name.
        input_size: official test size (416 for nano and tiny, 640 otherwise); ``detect`` uses it by default.
        strides: ``(8, 16, 32)``.
        backbone: the PAFPN; ``backbone.backbone`` is the CSPDarknet.
        head: the decoupled head.

    Example:
        >>> m = YOLOX("yolox-s")
        >>> m.variant, m.input_size, m.state_dict()["backbone.backbone.stem.conv.conv.weight"].shape
        ('yolox_s', 640, torch.Size([32, 12, 3, 3]))
    """

    def __init__(self, variant: str = "yolox_x", *, num_classes: int = 80) -> None:
        super().__init__()
        self.variant = normalize_variant(variant)
        depth, width, depthwise, size = _CONFIGS[self.variant]
        self.depth, self.width, self.depthwise = depth, width, depthwise
        self.input_size = size
        self.num_classes = _check_num_classes(num_classes)
        self.strides: tuple[int, ...] = (8, 16, 32)
        self.backbone = YOLOPAFPN(depth, width, depthwise)
        self.head = YOLOXHead(self.num_classes, width, depthwise)

    # -- loading ------------------------------------------------------------------------------------------------

    @classmethod
    def from_official(
        cls,
        variant: str = "yolox_x",
        weights_path: str | os.PathLike | None = None,
        *,
        num_classes: int | None = None,
        device: str | torch.device | None = None,
    ) -> YOLOX:
        """Load a checkpoint in the Megvii release layout strictly (the official files, or your own fine-tuned one).

        The file is read with ``torch.load(..., weights_only=True)``; it holds ``{"model": state_dict, ...}`` (the
        release and training-checkpoint layout) or a bare state_dict. The head size is read from the checkpoint
        (``head.cls_preds.0.weight``), so a YOLOX trained on your own classes loads as it is.

        Args:
            variant: one of :data:`YOLOX_VARIANTS`.
            weights_path: the checkpoint file, or a folder holding ``<variant>.pth``; ``None`` uses the cache
                ``$SCENEMETRICS_HOME/osim/<variant>.pth`` (downloading the 0.1.1rc0 release on first use).
            num_classes: number of classes of the head; ``None`` reads it from the checkpoint (80 for the official
                COCO files). A value that differs from the checkpoint is an error.
            device: where to put the model (default CPU).

        Returns:
            The model in ``eval()`` mode with ``requires_grad_(False)``.

        Raises:
            scenemetrics.hub.WeightsNotFoundError: no file (offline, or the download failed).
            ValueError: the file is not a torch checkpoint, needs the unsafe unpickler (the message gives the
                command to re-save it safely), is a checkpoint of another YOLOX variant (the message names it),
                has another head size than ``num_classes``, or its keys/shapes do not match the variant.

        Example:
            >>> import tempfile, os
            >>> path = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "n.pth"), num_classes=3,
            ...                          calibrate=False)
            >>> model = YOLOX.from_official("yolox_nano", weights_path=path)
            >>> model.training, model.num_classes
            (False, 3)
        """
        name = normalize_variant(variant)
        if num_classes is not None:
            num_classes = _check_num_classes(num_classes)
        path = hub.resolve_weights(f"osim/{name}", weights_path)
        source = os.fspath(path)
        ckpt = hub.load_torch_checkpoint(path)
        state = ckpt["model"] if isinstance(ckpt, Mapping) and "model" in ckpt else ckpt
        if not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values()):
            raise ValueError(
                f"{source!r} is not a YOLOX checkpoint: expected {{'model': state_dict, ...}} or a bare "
                "state_dict of tensors"
            )
        found = infer_variant(state)
        if found is not None and found != name:
            raise ValueError(
                f"{source!r} is a {found} checkpoint, not {name} (inferred from its tensor shapes): load it with "
                f'detector="{found}" (CLI: --detector {found}) or YOLOX.from_official("{found}", ...)'
            )
        head = state.get("head.cls_preds.0.weight")
        in_file = int(head.shape[0]) if isinstance(head, Tensor) and head.ndim >= 1 else None
        if num_classes is not None and in_file is not None and num_classes != in_file:
            raise ValueError(
                f"num_classes={num_classes} was asked for, but the head of {source!r} has {in_file} classes "
                f"(head.cls_preds.0.weight is {tuple(head.shape)}); pass num_classes={in_file} or None"
            )
        model = cls(name, num_classes=num_classes or in_file or len(COCO_CLASSES))
        model.load_official_state_dict(state, source=source)
        model.eval().requires_grad_(False)
        if device is not None:
            model.to(device)
        return model

    def load_official_state_dict(self, state: Mapping[str, Tensor], *, source: str = "state_dict") -> None:
        """``load_state_dict(state, strict=True)`` with a :class:`ValueError` that names what does not match."""
        own = self.state_dict()
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        mismatched = [
            f"{k}: {tuple(state[k].shape)} vs {tuple(v.shape)}"
            for k, v in own.items()
            if k in state and tuple(state[k].shape) != tuple(v.shape)
        ]
        if missing or unexpected or mismatched:
            parts = []
            if missing:
                parts.append(f"{len(missing)} missing key(s) (e.g. {', '.join(missing[:4])})")
            if unexpected:
                parts.append(f"{len(unexpected)} unexpected key(s) (e.g. {', '.join(unexpected[:4])})")
            if mismatched:
                parts.append(f"{len(mismatched)} shape mismatch(es) (e.g. {'; '.join(mismatched[:3])})")
            raise ValueError(
                f"{source} does not match YOLOX variant {self.variant!r}: {', '.join(parts)}. Check the variant; "
                "legacy 0.0.1 Megvii weights are not supported (use the 0.1.1rc0 release)."
            )
        self.load_state_dict(state, strict=True)

    # -- inference ----------------------------------------------------------------------------------------------

    def _check_canvas(self, canvas: Tensor) -> None:
        if not isinstance(canvas, Tensor) or canvas.ndim != 4 or canvas.shape[1] != 3:
            shape = tuple(canvas.shape) if isinstance(canvas, Tensor) else type(canvas).__name__
            raise ValueError(f"`canvas` must be a (B, 3, S, S) BGR 0..255 tensor; received {shape}")
        if canvas.shape[-1] % 32 or canvas.shape[-2] % 32:
            raise ValueError(f"`canvas` sides must be multiples of 32; received {tuple(canvas.shape[-2:])}")

    def _features(self, canvas: Tensor, layers: Sequence[str], need_head: bool) -> tuple[dict[str, Tensor], Tensor]:
        bad = [name for name in layers if name not in FEATURE_LAYERS]
        if bad:
            raise ValueError(f"unknown feature layer(s) {bad}; expected names from {', '.join(FEATURE_LAYERS)}")
        self._check_canvas(canvas)
        need_pan = need_head or any(name.startswith("p") for name in layers)
        deepest = "dark5" if need_pan else max((n for n in layers), key=lambda n: int(n[-1]), default="dark5")
        dark = self.backbone.backbone(canvas, upto=deepest)
        feats = dict(dark)
        raw = canvas.new_zeros(0)
        if need_pan:
            p3, p4, p5 = self.backbone(dark)
            feats.update(p3=p3, p4=p4, p5=p5)
            if need_head:
                raw = decode_outputs(self.head([p3, p4, p5]), self.strides)
        return {name: feats[name] for name in layers}, raw

    def forward(self, canvas: Tensor) -> Tensor:
        """Decoded head output ``(B, N, 5 + num_classes)`` of a letterbox canvas (official eval forward).

        Args:
            canvas: ``(B, 3, S, S)`` float32 BGR 0..255, S a multiple of 32 (see :func:`letterbox`).
        """
        return self._features(canvas, (), need_head=True)[1]

    def extract(self, canvas: Tensor, layers: Sequence[str] = ("dark5",)) -> dict[str, Tensor]:
        """Feature maps of a letterbox canvas by name (``dark3..5``, ``p3..5``), keeping autograd.

        Only what the layers need runs: the CSPDarknet up to the deepest requested stage for ``dark*``, plus the
        PAFPN for ``p*``.

        Example:
            >>> import torch
            >>> YOLOX("yolox_nano").eval().extract(torch.zeros(1, 3, 64, 64), ("dark3",))["dark3"].shape
            torch.Size([1, 64, 8, 8])
        """
        return self._features(canvas, tuple(layers), need_head=False)[0]

    def detect(
        self,
        images: Tensor,
        *,
        conf_threshold: float = 0.35,
        nms_threshold: float = 0.45,
        layers: Sequence[str] = ("dark5",),
        input_size: int | None = None,
        quantize: bool = True,
    ) -> YOLOXOutput:
        """Letterbox, one network pass (features and head), decode and class-agnostic NMS.

        Args:
            images: ``(B, 3, H, W)`` or ``(3, H, W)`` RGB, float in [0, 1] or uint8.
            conf_threshold: minimum ``objectness * class_conf`` (inclusive).
            nms_threshold: NMS IoU threshold (class-agnostic).
            layers: feature maps to return along with the detections.
            input_size: canvas side (default :attr:`input_size`).
            quantize: see :func:`letterbox`.

        Returns:
            A :class:`YOLOXOutput`; boxes are given in original-image pixels and in letterbox pixels.
        """
        check_thresholds(conf_threshold, nms_threshold)  # before any work
        x = check_images(images, "images", check_range=quantize)
        lb = letterbox_tensor(x.to(self.device), input_size or self.input_size, quantize)
        return self.detect_letterbox(lb, conf_threshold=conf_threshold, nms_threshold=nms_threshold, layers=layers)

    def detect_letterbox(
        self,
        lb: Letterbox,
        *,
        conf_threshold: float = 0.35,
        nms_threshold: float = 0.45,
        layers: Sequence[str] = ("dark5",),
    ) -> YOLOXOutput:
        """:meth:`detect` on an already letterboxed batch (see :func:`letterbox`), without gradients."""
        check_thresholds(conf_threshold, nms_threshold)  # before the network pass
        return self._detect_letterbox(lb, conf_threshold, nms_threshold, tuple(layers))

    def _detect_letterbox(
        self, lb: Letterbox, conf_threshold: float, nms_threshold: float, layers: tuple[str, ...]
    ) -> YOLOXOutput:
        """:meth:`detect_letterbox` with thresholds already checked (OSIM validates its options once)."""
        with torch.no_grad():
            feats, raw = self._features(lb.canvas, layers, need_head=True)
        dets = _postprocess(raw, conf_threshold, nms_threshold, lb.ratio)
        return YOLOXOutput(
            features=feats,
            raw=raw,
            detections=dets,
            ratio=lb.ratio,
            content_size=lb.content_size,
            input_size=int(lb.canvas.shape[-1]),
        )

    @property
    def device(self) -> torch.device:
        """The device of the parameters."""
        return next(self.parameters()).device


# --------------------------------------------------------------------------------------------------------------
# random-weight checkpoints in the official layout (tests, demo, benchmarks)


def synthetic_images(n: int, size: int | tuple[int, int], *, seed: int = 0) -> Tensor:
    """``n`` RGB images in [0, 1]: smooth colour gradients with a few rectangles and discs (deterministic).

    Example:
        >>> synthetic_images(2, (32, 48)).shape
        torch.Size([2, 3, 32, 48])
    """
    h, w = (size, size) if isinstance(size, int) else size
    g = torch.Generator().manual_seed(seed)
    ys = torch.linspace(0, 1, h).view(h, 1)
    xs = torch.linspace(0, 1, w).view(1, w)
    out = torch.empty(n, 3, h, w)
    for i in range(n):
        a, b, c = torch.rand(3, 3, generator=g)
        img = a.view(3, 1, 1) + (b.view(3, 1, 1) - a.view(3, 1, 1)) * (0.6 * ys + 0.4 * xs) * c.view(3, 1, 1)
        for _ in range(int(torch.randint(3, 7, (1,), generator=g))):
            cy, cx, ry, rx = torch.rand(4, generator=g).tolist()
            ry, rx = 0.05 + 0.25 * ry, 0.05 + 0.25 * rx
            color = torch.rand(3, 1, 1, generator=g)
            if bool(torch.rand(1, generator=g) < 0.5):
                mask = ((ys - cy).abs() < ry) & ((xs - cx).abs() < rx)
            else:
                mask = ((ys - cy) / ry) ** 2 + ((xs - cx) / rx) ** 2 < 1
            img = torch.where(mask, color, img)
        out[i] = img.clamp(0, 1)
    return out


@torch.no_grad()
def _randomize(model: YOLOX, g: torch.Generator, calibrate: bool, calib_size: int, seed: int) -> None:
    for module in model.modules():
        if isinstance(module, nn.Conv2d) and module.bias is None:
            fan_in = module.weight[0].numel()
            module.weight.copy_(torch.randn(module.weight.shape, generator=g) * math.sqrt(2.0 / fan_in))
        elif isinstance(module, nn.BatchNorm2d):
            c = module.num_features
            module.weight.copy_(0.3 + 0.3 * torch.rand(c, generator=g))
            module.bias.copy_(0.4 + 0.2 * torch.rand(c, generator=g))
            module.running_mean.zero_()
            module.running_var.fill_(1.0)
    head = model.head
    for k in range(len(model.strides)):
        c = head.cls_preds[k].in_channels
        # zero-mean rows with a large gain: the argmax class varies from cell to cell and is confident
        cls_w = torch.randn(model.num_classes, c, generator=g)
        head.cls_preds[k].weight.copy_((cls_w - cls_w.mean(1, keepdim=True)).view_as(head.cls_preds[k].weight) * 4.0)
        head.cls_preds[k].bias.fill_(-2.0)
        obj_w = torch.randn(1, c, generator=g)
        head.obj_preds[k].weight.copy_((obj_w - obj_w.mean()).view_as(head.obj_preds[k].weight) * 4.0)
        head.obj_preds[k].bias.fill_(-4.0)
        reg_w = torch.randn(4, c, generator=g)
        head.reg_preds[k].weight.copy_((reg_w - reg_w.mean(1, keepdim=True)).view_as(head.reg_preds[k].weight) * 0.3)
        head.reg_preds[k].bias.copy_(torch.tensor([0.0, 0.0, math.log(2.5), math.log(2.5)]))
    if not calibrate:
        return
    # One train-mode pass with cumulative averaging sets every running mean/var to the batch statistics of a few
    # synthetic images, so the eval-mode network neither explodes nor collapses.
    canvas = letterbox_tensor(synthetic_images(4, calib_size, seed=seed), calib_size, True).canvas
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    model._features(canvas, (), need_head=True)
    for bn in bns:
        bn.momentum = _BN_MOMENTUM
    model.eval()
    # Objectness bias: about 1% of the calibration cells reach a confident objectness.
    p3, p4, p5 = model.backbone(model.backbone.backbone(canvas))
    logits = []
    for k, f in enumerate((p3, p4, p5)):
        rf = head.reg_convs[k](head.stems[k](f))
        logits.append((head.obj_preds[k](rf) - head.obj_preds[k].bias.view(1, -1, 1, 1)).flatten())
    q = torch.quantile(torch.cat(logits), 0.99)
    for k in range(len(model.strides)):
        head.obj_preds[k].bias.fill_(float(-q) + 1.0)


def random_checkpoint(
    variant: str,
    path: str | os.PathLike,
    seed: int = 0,
    *,
    calibrate: bool = True,
    calib_size: int = 256,
    num_classes: int = 80,
) -> Path:
    """Write a random-weight checkpoint in the Megvii release layout ``{"model": state_dict, "start_epoch": 0}``.

    The weights are built so that the network behaves (no test may download the real ones): He-normal convs,
    BatchNorm gains in [0.3, 0.6] and biases in [0.4, 0.6] (SiLU stays near its linear range), running statistics
    calibrated by one train-mode pass over synthetic images (``calibrate=True``), zero-mean class/objectness
    predictor rows with large gains, and an objectness bias set so that about 1% of the calibration cells are
    confident, which gives a handful of class-diverse detections per image. The scores such a detector produces
    are meaningless (uncalibrated), but every code path of a real checkpoint is exercised.

    Args:
        variant: one of :data:`YOLOX_VARIANTS`.
        path: output file (parent folders are created).
        seed: random seed (the same seed gives the same file content).
        calibrate: run the BatchNorm/objectness calibration (skip it when only the layout matters, e.g. to test
            strict loading of yolox_x cheaply).
        calib_size: canvas side of the calibration pass (multiple of 32).
        num_classes: head size (80 as the COCO release; another value makes a checkpoint like a YOLOX fine-tuned
            on your own classes).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Example:
        >>> import tempfile, os
        >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
        >>> sorted(torch.load(p, weights_only=True))
        ['model', 'start_epoch']
    """
    _check_input_size(calib_size)
    g = torch.Generator().manual_seed(int(seed))
    model = YOLOX(variant, num_classes=num_classes)
    _randomize(model, g, calibrate, calib_size, int(seed))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "start_epoch": 0}, p)
    return p
