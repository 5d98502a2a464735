"""Red masks on the objects that score below the scene OSIM (paper Fig. 6), and a labelled picture of them.

:func:`draw_low_objects` is the paper's red mask, pixel for pixel. :func:`low_objects_picture` is the picture written
for people (command line, demo, training callbacks): the same objects outlined and labelled with their class and
score, a title with the view and scene scores, a legend, and a notice in the image when no object is below the
scene score.

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

import numpy as np
import torch
from torch import Tensor

from scenemetrics.checks import check_int
from scenemetrics.osim.functional import OSIMResult, box_spans, class_name
from scenemetrics.viz import Picture, font, panel, to_uint8

__all__ = ["draw_low_objects", "low_objects_picture"]

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


_LOW_COLOR = (230, 0, 0)


def low_objects_picture(
    image: Tensor,
    result: OSIMResult,
    *,
    image_index: int = 0,
    threshold: float | Tensor | None = None,
    title: str | None = None,
    max_labels: int = 10,
    min_height: int = 360,
) -> Picture:
    """The OSIM picture for people: objects of one view that score below the scene OSIM, labelled.

    Only objects with ``r_ij < threshold`` (default: the scene score ``result.score``) are drawn: a light red fill
    over their union, a red outline per object, and a label ``"<class> <r>"`` on up to ``max_labels`` of them, lowest
    first, skipping labels that would cover an earlier one.
    When no object is below the threshold (or nothing was detected, or the threshold is NaN) the image carries a
    notice saying so. Small views are enlarged by an integer factor so labels stay readable.

    Args:
        image: ``(3, H, W)`` uint8 or float in [0, 1]; the test view ``image_index`` at its original size.
        result: an :class:`~scenemetrics.osim.functional.OSIMResult`.
        image_index: which view of ``result`` the image shows.
        threshold: objects below it are drawn (default ``result.score``).
        title: picture title (default names the view index and the scores).
        max_labels: at most this many objects get a text label (the others are outlined only).
        min_height: smallest displayed image height in pixels.

    Returns:
        A :class:`~scenemetrics.viz.Picture`; ``picture.info`` holds ``threshold``, ``view_score``,
        ``num_objects`` (objects of the view), ``low_objects`` (dicts with ``class``, ``class_id``, ``r``, ``box``
        and ``labelled``, lowest first) and ``notice`` (the text shown when nothing is drawn, else ``None``).

    Raises:
        ValueError: as :func:`draw_low_objects`, or ``max_labels < 0``.

    Example:
        >>> import torch
        >>> from scenemetrics.osim.functional import OSIMResult
        >>> z = torch.zeros(80, dtype=torch.float64)
        >>> res = OSIMResult(score=torch.tensor(0.4), per_class={0: 0.5}, class_saliency={0: 1.0},
        ...     class_counts={0: 1}, image_index=torch.tensor([0]), boxes=torch.tensor([[2.0, 2.0, 5.0, 5.0]]),
        ...     boxes_letterbox=torch.tensor([[2.0, 2.0, 5.0, 5.0]]), classes=torch.tensor([0]),
        ...     det_scores=torch.tensor([0.9]), r=torch.tensor([0.5]), s=torch.tensor([1.0]), r_sum=z, s_sum=z,
        ...     count=z, ratio=1.0, content_size=(8, 8))
        >>> low_objects_picture(torch.zeros(3, 8, 8), res).info["notice"]
        'No object scores below the scene OSIM 0.4000.'
    """
    check_int(max_labels, "max_labels", low=0)
    base = draw_low_objects(image, result, image_index=image_index, threshold=float("nan"))  # checks, no drawing
    from PIL import Image, ImageDraw

    H, W = base.shape[-2:]
    thr = float(result.score if threshold is None else threshold)
    sel = (result.image_index == image_index).cpu()
    r = result.r.detach().cpu()[sel].double()
    classes = result.classes.cpu()[sel].tolist()
    boxes = result.boxes.detach().cpu()[sel]
    views = result.view_scores(image_index + 1) if result.image_index.numel() else [float("nan")]
    view_score = views[image_index] if image_index < len(views) else float("nan")
    low = [] if math.isnan(thr) else [k for k in range(r.numel()) if float(r[k]) < thr]
    low.sort(key=lambda k: (float(r[k]), k))
    low_objects = [
        {
            "class": class_name(int(classes[k]), result.class_names),
            "class_id": int(classes[k]),
            "r": float(r[k]),
            "box": [round(float(v), 2) for v in boxes[k]],
            "labelled": False,
        }
        for k in low
    ]
    factor = max(1, math.ceil(min_height / H)) if min_height > H else 1
    canvas = Image.fromarray(base.permute(1, 2, 0).numpy()).resize((W * factor, H * factor), Image.NEAREST)
    fs = int(min(20, max(10, round(H * factor / 28))))
    notice = None
    if low:
        x_lo, x_hi, y_lo, y_hi = (t.tolist() for t in box_spans(boxes[low], 1, (H, W)))
        mask = torch.zeros(H, W, dtype=torch.bool)
        for x0, x1, y0, y1 in zip(x_lo, x_hi, y_lo, y_hi, strict=True):
            mask[y0 : y1 + 1, x0 : x1 + 1] = True
        arr = torch.from_numpy(np.asarray(canvas).copy()).float()
        big = mask.repeat_interleave(factor, 0).repeat_interleave(factor, 1)
        arr[big] = (0.65 * arr[big] + 0.35 * torch.tensor(_LOW_COLOR, dtype=torch.float32)).round()
        canvas = Image.fromarray(arr.to(torch.uint8).numpy())
        draw = ImageDraw.Draw(canvas)
        spans = list(zip(x_lo, x_hi, y_lo, y_hi, strict=True))
        for x0, x1, y0, y1 in spans:
            draw.rectangle(
                (x0 * factor, y0 * factor, (x1 + 1) * factor - 1, (y1 + 1) * factor - 1), outline=_LOW_COLOR, width=2
            )
        face = font(fs)
        placed: list[tuple[int, int, int, int]] = []
        for obj, (x0, _, y0, y1) in zip(low_objects, spans, strict=True):
            if len(placed) == max_labels:
                break
            text = f"{obj['class']} {obj['r']:.3f}"
            tw, th = int(face.getlength(text)) + 4, fs + 3
            tx = min(max(0, x0 * factor), W * factor - tw)
            # above the box when there is room, else just inside its top, else inside its bottom
            spots = [y0 * factor - th - 1, y0 * factor + 2, (y1 + 1) * factor - th - 2]
            for ty in (t for t in spots if 0 <= t <= H * factor - th - 1):
                rect = (tx, ty, tx + tw, ty + th)
                if not any(rect[0] < q[2] and q[0] < rect[2] and rect[1] < q[3] and q[1] < rect[3] for q in placed):
                    placed.append(rect)
                    obj["labelled"] = True
                    draw.rectangle(rect, fill=(120, 0, 0))
                    draw.text((tx + 2, ty + 1), text, fill=(255, 255, 255), font=face)
                    break
    else:
        if math.isnan(thr):
            notice = "No object detected in the references: OSIM is undefined (NaN); nothing to mark."
        elif r.numel() == 0:
            notice = f"No object detected in this view (scene OSIM {thr:.4f})."
        else:
            notice = f"No object scores below the scene OSIM {thr:.4f}."
        draw = ImageDraw.Draw(canvas)
        face = font(fs)
        lines = [notice] if face.getlength(notice) <= W * factor - 8 else notice.replace(": ", ":\n").split("\n")
        for i, line in enumerate(lines):
            y = 4 + i * (fs + 6)
            draw.rectangle((2, y - 2, 8 + int(face.getlength(line)), y + fs + 3), fill=(255, 255, 255))
            draw.text((5, y), line, fill=(0, 0, 0), font=face)
    n_obj = int(r.numel())
    head = title or f"OSIM view {image_index}: view score {view_score:.4f}, scene score {thr:.4f}"
    notes = [
        f"{len(low)} of {n_obj} detected object(s) in this view score below the scene OSIM {thr:.4f}; only those "
        "are drawn. Score r = feature similarity of the object between render and reference (1 = same)."
    ]
    n_labelled = sum(obj["labelled"] for obj in low_objects)
    if n_labelled < len(low):
        notes.append(
            f"{n_labelled} are labelled, lowest first where labels do not overlap (at most {max_labels}); the "
            f"other {len(low) - n_labelled} are outlined only."
        )
    pic = panel(
        [("render with objects below the scene score", np.asarray(canvas))],
        title=head,
        legend=[("object below the scene score (label: class and r)", _LOW_COLOR)],
        notes=notes,
        min_height=0,
        font_size=fs,
    )
    pic.info = {
        "threshold": thr,
        "view_score": view_score,
        "num_objects": n_obj,
        "low_objects": low_objects,
        "notice": notice,
        "scale": factor,
    }
    return pic
