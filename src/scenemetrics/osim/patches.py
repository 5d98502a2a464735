"""OSIM's "Bbox Patch" baselines: a conventional metric computed inside each object's box, pooled as OSIM pools.

The OSIM paper compares its score with PSNR, SSIM, LPIPS and CLIP similarity computed on the whole image and on the
detected bounding-box patches (its Tables 2 and 3). Here the objects are OSIM's own (detected on the references with
the same detector, thresholds and NMS, plus any given ``boxes``), and the pooling is OSIM's exactly: the patch score
``r_ij`` of each object replaces its feature similarity, then per class ``o_l = mean r_ij`` and ``s_l = mean s_ij``
(the GBVS saliency of the box) over all the views of the scene, and ``score = sum_l s_l o_l / sum_l s_l``
(``saliency="uniform"``: the plain mean over classes). The paper does not say how it averaged its patch scores;
pooling them as OSIM pools its objects keeps the two numbers comparable object for object **[decision]**.

**Patches.** An object's patch is the pixels its box covers in the original image: columns ``floor(x1) ..
floor(x2)`` and rows ``floor(y1) .. floor(y2)``, clamped to the image (OSIM's rule for saliency pixels, on the
original image instead of the letterbox). The same window is cut from the render and the reference. A score that
needs a minimum size (SSIM's 11-pixel window reflected by 5 needs 6 pixels, LPIPS-Alex 31) gets a window grown
around the box's centre to that size, shifted to stay inside the image **[decision]**: every object OSIM scores is
scored, with a little context around the smallest ones, rather than dropped.

The per-patch score is a :class:`PatchScore`: the function and its direction. This module provides PSNR
(torchmetrics' functional PSNR per patch) and the cosine similarity of any image embedding (:func:`embedding_score`:
give it a CLIP image encoder for the CLIP-similarity baseline). SSIM and LPIPS come from the full-reference room
(:mod:`scenemetrics.fullref`), which this room does not import: :mod:`scenemetrics.builtin_metrics` puts them
together for ``scenemetrics eval`` (``osim_patch_psnr``, ``osim_patch_ssim``, ``osim_patch_lpips``,
``osim_patch_clip``).

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.osim.random import random_checkpoint, synthetic_images
    >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
    >>> refs = synthetic_images(1, (96, 128), seed=3)
    >>> res = osim_patches((refs + 0.1).clamp(0, 1), refs, psnr_score(), detector="yolox_nano", weights_path=p,
    ...                    conf_threshold=2.0, boxes=[[[0, 0, 64, 48]]])  # no detection: one given box
    >>> round(float(res.score), 1), res.r.shape
    (20.0, torch.Size([1]))
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.osim.functional import (
    OSIMResult,
    ReferenceObjects,
    _check_pair,
    _resolve_model,
    box_spans,
    given_boxes,
    score_objects,
)
from scenemetrics.osim.options import OSIMOptions, SaliencyFn
from scenemetrics.osim.regions import GivenBoxes
from scenemetrics.osim.yolox import YOLOX

__all__ = [
    "EmbedFn",
    "PatchScore",
    "embedding_score",
    "object_windows",
    "osim_patches",
    "psnr_score",
]

EmbedFn = Callable[[Tensor], Tensor]
"""An image embedding: ``(B, 3, h, w)`` RGB float in [0, 1] (any size; the function resizes as its model needs)
-> ``(B, D)`` embeddings."""


@dataclass(frozen=True)
class PatchScore:
    """A score of one render patch against its reference patch.

    Attributes:
        fn: ``fn(pred_patch, target_patch)`` on ``(1, 3, h, w)`` float32 patches in [0, 1] -> a one-element tensor.
        name: what it is (``"psnr"``, ``"ssim"``, ``"lpips"``, ``"clip"``), for messages.
        higher_is_better: its direction.
        min_side: the smallest patch side it accepts; smaller boxes get a window grown to this size (module doc).
    """

    fn: Callable[[Tensor, Tensor], Tensor]
    name: str
    higher_is_better: bool
    min_side: int = 1

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise ValueError(f"`fn` must be callable; received {type(self.fn).__name__}")
        if isinstance(self.min_side, bool) or not isinstance(self.min_side, int) or self.min_side < 1:
            raise ValueError(f"`min_side` must be an int >= 1; received {self.min_side!r}")
        if not isinstance(self.higher_is_better, bool):
            raise ValueError(f"`higher_is_better` must be a bool; received {self.higher_is_better!r}")


def _psnr(pred: Tensor, target: Tensor, data_range: float) -> Tensor:
    from torchmetrics.functional.image import peak_signal_noise_ratio

    return peak_signal_noise_ratio(pred, target, data_range=data_range, reduction="none", dim=(1, 2, 3))


def psnr_score(data_range: float = 1.0) -> PatchScore:
    """PSNR of a patch (dB): torchmetrics' ``peak_signal_noise_ratio`` over the patch's pixels and channels.

    ``10 log10(data_range^2 / MSE)``; an unchanged patch has MSE 0 and PSNR ``+inf``, as in torchmetrics (a class
    holding one then has ``o_l = +inf``, and so has the scene).

    Example:
        >>> import torch
        >>> x = torch.zeros(1, 3, 4, 4)
        >>> float(psnr_score().fn(x + 0.1, x))  # MSE 0.01 -> 20 dB
        20.0
    """
    # a partial of a module-level function: the score, and a metric holding it, pickle (DDP, checkpoints)
    return PatchScore(functools.partial(_psnr, data_range=float(data_range)), "psnr", higher_is_better=True)


def _embedding_cosine(pred: Tensor, target: Tensor, embed: EmbedFn, name: str) -> Tensor:
    both = embed(torch.cat([pred, target]))
    if not isinstance(both, Tensor) or both.ndim != 2 or both.shape[0] != 2 * pred.shape[0]:
        got = tuple(both.shape) if isinstance(both, Tensor) else type(both).__name__
        raise ValueError(f"the {name} embedding must return (B, D) embeddings; received {got}")
    e_p, e_t = both.float().split(pred.shape[0])
    return F.cosine_similarity(e_p, e_t, dim=1, eps=1e-8)


def embedding_score(embed: EmbedFn, name: str = "clip") -> PatchScore:
    """Cosine similarity of the embeddings of the render patch and the reference patch (the CLIP-similarity
    baseline when ``embed`` is a CLIP image encoder).

    Args:
        embed: ``(B, 3, h, w)`` RGB [0, 1] -> ``(B, D)`` (it resizes and normalises as its model needs). A
            module-level function or a picklable object keeps the metric picklable.
        name: what the embedding is, for messages.

    Raises:
        ValueError: ``embed`` is not callable; when called, an embedding that is not ``(B, D)``.

    Example:
        >>> import torch
        >>> mean_colour = lambda x: x.mean(dim=(2, 3))  # a toy embedding: the mean colour
        >>> a, b = torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8)
        >>> a[:, 0], b[:, 1] = 1.0, 1.0
        >>> float(embedding_score(mean_colour, "colour").fn(a, a)), float(embedding_score(mean_colour).fn(a, b))
        (1.0, 0.0)
    """
    if not callable(embed):
        raise ValueError(f"`embed` must be callable (images -> (B, D) embeddings); received {type(embed).__name__}")
    return PatchScore(functools.partial(_embedding_cosine, embed=embed, name=name), name, higher_is_better=True)


def _grow(lo: int, hi: int, size: int, minimum: int) -> tuple[int, int]:
    """An inclusive span ``lo..hi`` grown around its centre to ``minimum`` cells, kept inside ``0..size-1``."""
    length = hi - lo + 1
    if length >= minimum:
        return lo, hi
    start = min(max(lo - (minimum - length) // 2, 0), size - minimum)
    return start, start + minimum - 1


def object_windows(boxes: Tensor, image_size: tuple[int, int], min_side: int = 1) -> list[tuple[int, int, int, int]]:
    """The pixel window ``(y0, y1, x0, x1)`` (inclusive) of each ``(n, 4)`` box in original image pixels.

    Columns ``floor(x1) .. floor(x2)`` and rows ``floor(y1) .. floor(y2)``, clamped to the image; a window narrower
    than ``min_side`` is grown around its centre and shifted to stay inside the image.

    Raises:
        ValueError: the image is smaller than ``min_side``.

    Example:
        >>> import torch
        >>> object_windows(torch.tensor([[2.5, 3.0, 9.9, 4.0], [-5.0, 0.0, 1.0, 1.0]]), (10, 12), min_side=4)
        [(2, 5, 2, 9), (0, 3, 0, 3)]
    """
    h, w = image_size
    if min(h, w) < min_side:
        raise ValueError(f"the patch score needs images of at least {min_side} px per side; received {h}x{w}")
    x_lo, x_hi, y_lo, y_hi = (t.tolist() for t in box_spans(boxes.detach().cpu(), 1, (h, w)))
    out = []
    for k in range(len(x_lo)):
        y0, y1 = _grow(y_lo[k], y_hi[k], h, min_side)
        x0, x1 = _grow(x_lo[k], x_hi[k], w, min_side)
        out.append((y0, y1, x0, x1))
    return out


def _patch_scores(p: Tensor, t: Tensor, boxes: Tensor, view: Tensor, score: PatchScore) -> Tensor:
    windows = object_windows(boxes, (int(t.shape[-2]), int(t.shape[-1])), score.min_side)
    values = []
    for k, (y0, y1, x0, x1) in enumerate(windows):
        i = int(view[k])
        value = score.fn(p[i : i + 1, :, y0 : y1 + 1, x0 : x1 + 1], t[i : i + 1, :, y0 : y1 + 1, x0 : x1 + 1])
        value = torch.as_tensor(value)
        if value.numel() != 1:
            raise ValueError(f"the {score.name} patch score must return one value per patch; received shape "
                             f"{tuple(value.shape)}")  # fmt: skip
        values.append(float(value.reshape(())))
    return torch.tensor(values, dtype=torch.float64, device=t.device).view(-1)


def _osim_patches(
    p: Tensor,
    t: Tensor,
    score: PatchScore,
    options: OSIMOptions,
    yolox: YOLOX,
    *,
    warn: bool,
    class_names: Sequence[str] | None = None,
    given: Sequence[GivenBoxes] | None = None,
) -> OSIMResult:
    def patch_scores(objects: ReferenceObjects) -> Tensor:
        return _patch_scores(p, t, objects.boxes, objects.image_index, score)

    return score_objects(t, options, yolox, patch_scores, warn=warn, class_names=class_names, given=given)


def osim_patches(
    preds: Tensor,
    target: Tensor,
    score: PatchScore,
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
    """``score`` inside each of OSIM's objects, pooled as OSIM pools them; the B pairs are the views of one scene.

    Args:
        preds: ``(B, 3, H, W)`` or ``(3, H, W)`` test images, RGB float in [0, 1] or uint8.
        target: reference images of the same shape.
        score: the per-patch score (:class:`PatchScore`).
        detector: YOLOX variant, as :func:`scenemetrics.osim.osim` (which objects are scored).
        layer: as :func:`scenemetrics.osim.osim` (the detector's features are computed but not compared).
        conf_threshold: detection confidence threshold.
        nms_threshold: class-agnostic NMS IoU threshold.
        saliency: ``"gbvs"``, ``"uniform"`` or a callable: the weights of the classes.
        weights_path: YOLOX checkpoint file or folder.
        model: a YOLOX to use instead of loading ``detector``.
        num_classes: head size of the detector.
        class_names: one name per class, in head order.
        boxes: regions of your own next to the detector's, one entry per image (see :func:`scenemetrics.osim.osim`).

    Returns:
        An :class:`~scenemetrics.osim.functional.OSIMResult` whose ``r`` holds each object's patch score and whose
        ``score`` is the pooled scene value (NaN with a ``UserWarning`` when there is no object).

    Raises:
        ValueError: as :func:`scenemetrics.osim.osim`, or images smaller than the score's ``min_side``.
    """
    if not isinstance(score, PatchScore):
        raise ValueError(f"`score` must be a PatchScore; received {type(score).__name__}")
    opts = OSIMOptions(detector, layer, conf_threshold, nms_threshold, saliency)
    p, t = _check_pair(preds, target)
    yolox = _resolve_model(model, opts.detector, weights_path, t.device, num_classes)
    given = given_boxes(boxes, t, yolox, class_names)
    with torch.no_grad():
        return _osim_patches(p, t, score, opts, yolox, warn=True, class_names=class_names, given=given)
