"""Random-weight YOLOX checkpoints in the official layout, and synthetic images to calibrate and test them (tests,
demo, benchmarks: no test downloads the real weights).

Example:
    >>> from scenemetrics.osim.random import synthetic_images
    >>> synthetic_images(2, (32, 48)).shape
    torch.Size([2, 3, 32, 48])
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
from torch import Tensor, nn

from scenemetrics.osim.boxes import _check_input_size, letterbox_tensor
from scenemetrics.osim.yolox import _BN_MOMENTUM, YOLOX

__all__ = ["random_checkpoint", "synthetic_images"]


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
