"""The YOLOX network in pure PyTorch, module for module the Megvii release, so release checkpoints load strictly.

The network follows ``Megvii-BaseDetection/YOLOX`` (``network_blocks.py``, ``darknet.py``, ``yolo_pafpn.py``,
``yolo_head.py``): a CSPDarknet backbone (``backbone.backbone``), a PAFPN neck (``backbone``) and a decoupled head
(``head``). Module names equal the keys of the release checkpoints, every BatchNorm uses ``eps=1e-3`` and
``momentum=0.03`` as the official ``init_yolo`` sets them. The letterbox, decoding and NMS live in
:mod:`scenemetrics.osim.boxes`, the variants and checkpoint reading in :mod:`scenemetrics.osim.checkpoints`, random
checkpoints in :mod:`scenemetrics.osim.random`.

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
import os
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.image import check_images
from scenemetrics.osim.boxes import (
    Letterbox,
    YOLOXOutput,
    _postprocess,
    check_thresholds,
    decode_outputs,
    letterbox_tensor,
)
from scenemetrics.osim.checkpoints import (
    _CONFIGS,
    _check_num_classes,
    check_official_state,
    normalize_variant,
    read_official,
)

__all__ = ["COCO_CLASSES", "FEATURE_LAYERS", "YOLOX"]

FEATURE_LAYERS = ("dark3", "dark4", "dark5", "p3", "p4", "p5")
"""Feature maps :meth:`YOLOX.extract` can return: CSPDarknet stages and PAFPN outputs (strides 8, 16, 32)."""

# variant -> (depth multiplier, width multiplier, depthwise convs, official test size); from exps/default/*.py


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
            >>> from scenemetrics.osim.random import random_checkpoint
            >>> path = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "n.pth"), num_classes=3,
            ...                          calibrate=False)
            >>> model = YOLOX.from_official("yolox_nano", weights_path=path)
            >>> model.training, model.num_classes
            (False, 3)
        """
        name, state, source, head_size = read_official(variant, weights_path, num_classes)
        model = cls(name, num_classes=head_size or len(COCO_CLASSES))
        model.load_official_state_dict(state, source=source)
        model.eval().requires_grad_(False)
        if device is not None:
            model.to(device)
        return model

    def load_official_state_dict(self, state: Mapping[str, Tensor], *, source: str = "state_dict") -> None:
        """``load_state_dict(state, strict=True)`` with a :class:`ValueError` that names what does not match."""
        check_official_state(self.state_dict(), state, source=source, variant=self.variant)
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
