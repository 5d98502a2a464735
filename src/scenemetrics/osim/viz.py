"""Red masks on the objects that score below the scene OSIM (paper Fig. 6).

Example:
    >>> import torch
    >>> from scenemetrics.osim.functional import OSIMResult
    >>> from scenemetrics.osim.viz import draw_low_objects
    >>> z = torch.zeros(80, dtype=torch.float64)
    >>> res = OSIMResult(score=torch.tensor(0.8), per_class={0: 0.5}, class_saliency={0: 1.0}, class_counts={0: 1},
    ...     image_index=torch.tensor([0]), boxes=torch.tensor([[2.0, 2.0, 5.0, 5.0]]),
    ...     boxes_letterbox=torch.tensor([[2.0, 2.0, 5.0, 5.0]]), classes=torch.tensor([0]),
    ...     det_scores=torch.tensor([0.9]), r=torch.tensor([0.5]), s=torch.tensor([1.0]), r_sum=z, s_sum=z, count=z,
    ...     ratio=1.0, content_size=(8, 8))
    >>> out = draw_low_objects(torch.zeros(3, 8, 8), res, outline=False)
    >>> out[:, 3, 3].tolist(), out[:, 0, 0].tolist()
    ([102, 0, 0], [0, 0, 0])
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from scenemetrics.osim.functional import OSIMResult, box_spans
from scenemetrics.viz import to_uint8

__all__ = ["draw_low_objects"]

_OUTLINE_PX = 2


def draw_low_objects(
    image: Tensor,
    result: OSIMResult,
    *,
    image_index: int = 0,
    threshold: float | Tensor | None = None,
    per: str = "object",
    alpha: float = 0.4,
    color: tuple[int, int, int] = (255, 0, 0),
    outline: bool = True,
) -> Tensor:
    """Blend ``color`` over the boxes of the low-scoring objects of one view.

    An object is low when ``r_ij < threshold`` (``per="object"``) or when its class's ``o_l < threshold``
    (``per="class"``); the default threshold is the scene score ``result.score``. Box pixels follow the OSIM span
    rule (floor, inclusive, clamped to the image). Each low box is blended once, in object order,
    ``out = round((1 - alpha) out + alpha color)``, so overlaps are blended repeatedly; outlines (2 px, pure
    ``color``) are drawn after all blends. A NaN threshold (nothing detected) returns the image unchanged.

    Args:
        image: ``(3, H, W)`` uint8 or float in [0, 1]; normally the test view ``image_index``, at the size of the
            views the result was computed on.
        result: an :class:`~scenemetrics.osim.functional.OSIMResult`.
        image_index: which view of ``result`` the image shows.
        threshold: objects below it are marked (default ``result.score``).
        per: ``"object"`` (compare ``r_ij``) or ``"class"`` (compare ``o_l``).
        alpha: blend weight of ``color`` in [0, 1].
        color: RGB 0..255.
        outline: also draw a 2-px border in ``color``.

    Returns:
        ``(3, H, W)`` uint8 on the CPU.

    Raises:
        ValueError: bad image, a size that does not match the result's views, or a bad option.
    """
    if per not in ("object", "class"):
        raise ValueError(f"`per` must be 'object' or 'class'; received {per!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"`alpha` must be in [0, 1]; received {alpha!r}")
    if len(color) != 3 or any(not 0 <= int(c) <= 255 for c in color):
        raise ValueError(f"`color` must be an RGB triple of ints in 0..255; received {color!r}")
    if not isinstance(image, Tensor) or image.ndim != 3 or image.shape[0] != 3:
        shape = tuple(image.shape) if isinstance(image, Tensor) else type(image).__name__
        raise ValueError(f"`image` must be a (3, H, W) tensor; received {shape}")
    if image.dtype != torch.uint8 and image.numel():
        lo, hi = float(image.min()), float(image.max())
        if lo < -1e-6 or hi > 1 + 1e-6:
            raise ValueError(f"`image` must be uint8 or float in [0, 1]; received values in [{lo:.4g}, {hi:.4g}]")
    out = to_uint8(image).clone()
    H, W = out.shape[-2:]
    if result.image_index.numel() and not math.isnan(result.ratio):
        h_c, w_c = result.content_size
        if (int(H * result.ratio), int(W * result.ratio)) != (h_c, w_c):
            raise ValueError(
                f"`image` is {H}x{W} px, but the result's views letterbox to {h_c}x{w_c} at ratio "
                f"{result.ratio:.6g}; pass the view at its original size"
            )
    thr = float(result.score if threshold is None else threshold)
    if math.isnan(thr):
        return out
    sel = (result.image_index == image_index).cpu()
    classes = result.classes.cpu()[sel]
    if per == "object":
        values = result.r.detach().cpu()[sel].double()
    else:
        values = torch.tensor([result.per_class[int(c)] for c in classes], dtype=torch.float64)
    low = values < thr
    boxes = result.boxes.detach().cpu()[sel][low]
    if boxes.numel() == 0:
        return out
    x_lo, x_hi, y_lo, y_hi = (t.tolist() for t in box_spans(boxes, 1, (H, W)))
    col = torch.tensor([float(c) for c in color]).view(3, 1, 1)
    a = float(alpha)
    img = out.float()
    for x0, x1, y0, y1 in zip(x_lo, x_hi, y_lo, y_hi, strict=True):
        patch = img[:, y0 : y1 + 1, x0 : x1 + 1]
        img[:, y0 : y1 + 1, x0 : x1 + 1] = ((1 - a) * patch + a * col).round()
    if outline:
        for x0, x1, y0, y1 in zip(x_lo, x_hi, y_lo, y_hi, strict=True):
            t = _OUTLINE_PX
            img[:, y0 : min(y0 + t, y1 + 1), x0 : x1 + 1] = col
            img[:, max(y1 + 1 - t, y0) : y1 + 1, x0 : x1 + 1] = col
            img[:, y0 : y1 + 1, x0 : min(x0 + t, x1 + 1)] = col
            img[:, y0 : y1 + 1, max(x1 + 1 - t, x0) : x1 + 1] = col
    return img.clamp(0, 255).to(torch.uint8)
