"""A small procedural scene: training views, novel views with planted artifacts, and their clean counterparts.

The "world" is a few textured layers at different depths (a sky/ground backdrop, a far band of hills, textured
objects). A camera translating sideways renders a view by shifting each layer by ``x / depth`` (parallax) and
cropping. Novel views sit between training views, so every piece of them is visible in some training view; the
planted artifacts (noise squares, blurry floaters, needle streaks, blur patches, colour blotches) are not.

Used by ``scenemetrics demo`` and the benchmarks; deterministic for a given seed on any machine.

Example:
    >>> from scenemetrics.synthetic import make_scene
    >>> scene = make_scene(num_train=3, num_novel=2, size=(64, 96), seed=0)
    >>> len(scene.train_views), tuple(scene.novel_views[0].shape), scene.artifact_masks[0].dtype
    (3, (3, 64, 96), torch.bool)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["SyntheticScene", "make_scene", "make_views"]

ARTIFACT_KINDS = ("noise", "floater", "needle", "blur", "blotch")


@dataclass
class SyntheticScene:
    """Views of a procedural scene.

    Attributes:
        train_views: ``(3, H, W)`` float images in [0, 1] (the references).
        novel_views: novel views with planted artifacts (what a reconstruction would render).
        novel_targets: the same novel views without artifacts (aligned ground truth).
        artifact_masks: ``(H, W)`` bool per novel view: where artifacts were planted.
        artifacts: per novel view, a list of ``{"kind", "box": [y0, x0, y1, x1]}``.
        names: file stems of the novel views.
        train_names: file stems of the training views.
    """

    train_views: list[Tensor]
    novel_views: list[Tensor]
    novel_targets: list[Tensor]
    artifact_masks: list[Tensor]
    artifacts: list[list[dict]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    train_names: list[str] = field(default_factory=list)


def _smooth_noise(g: torch.Generator, c: int, h: int, w: int, cells: int) -> Tensor:
    """Band-limited noise in [0, 1]: a coarse random grid upsampled bicubically, rescaled."""
    ch, cw = max(2, cells), max(2, round(cells * w / max(h, 1)))
    base = torch.rand(1, c, ch, cw, generator=g)
    up = F.interpolate(base, size=(h, w), mode="bicubic", align_corners=True)[0]
    lo = up.amin(dim=(1, 2), keepdim=True)
    hi = up.amax(dim=(1, 2), keepdim=True)
    return (up - lo) / (hi - lo + 1e-8)


def _texture(g: torch.Generator, h: int, w: int) -> Tensor:
    """A coloured texture: stripes, checker, dots or smooth noise, on a random palette."""
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    kind = int(torch.randint(0, 4, (1,), generator=g))
    period = float(torch.randint(6, 18, (1,), generator=g))
    angle = float(torch.rand(1, generator=g)) * math.pi
    if kind == 0:
        t = 0.5 + 0.5 * torch.sin((xx * math.cos(angle) + yy * math.sin(angle)) * 2 * math.pi / period)
    elif kind == 1:
        t = (((xx // period) + (yy // period)) % 2).float()
    elif kind == 2:
        t = ((torch.sin(xx * 2 * math.pi / period) * torch.sin(yy * 2 * math.pi / period)) > 0.5).float()
    else:
        t = _smooth_noise(g, 1, h, w, max(3, h // 8))[0]
    c0, c1 = torch.rand(3, 1, 1, generator=g), torch.rand(3, 1, 1, generator=g)
    return (c0 * (1 - t) + c1 * t).clamp(0, 1)


def _world(g: torch.Generator, h: int, w: int) -> list[tuple[Tensor, Tensor, float]]:
    """Layers as (rgb (3,h,w), alpha (h,w), depth), far to near."""
    yy = torch.linspace(0, 1, h).view(1, h, 1)
    sky = torch.tensor([0.45, 0.65, 0.95]).view(3, 1, 1) * (1 - 0.4 * yy) + 0.08 * _smooth_noise(g, 3, h, w, 6)
    ground = torch.tensor([0.35, 0.45, 0.2]).view(3, 1, 1) + 0.25 * (_smooth_noise(g, 3, h, w, h // 6) - 0.5)
    horizon = 0.45 + 0.05 * torch.sin(torch.linspace(0, 6 * math.pi, w)).view(1, 1, w)
    back = torch.where(yy.expand(1, h, w) < horizon, sky, ground).clamp(0, 1)
    layers = [(back, torch.ones(h, w), 8.0)]
    hills = torch.tensor([0.25, 0.35, 0.3]).view(3, 1, 1) + 0.15 * _smooth_noise(g, 3, h, w, 10)
    ridge = 0.35 + 0.1 * _smooth_noise(g, 1, 1, w, 12)[0]
    layers.append((hills.clamp(0, 1), (yy[0] > ridge).float() * (yy[0] < 0.55).float(), 4.0))
    yy2, xx2 = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    for depth in (2.5, 1.6, 1.0):
        rgb = torch.zeros(3, h, w)
        alpha = torch.zeros(h, w)
        for _ in range(int(w / (70 * depth)) + 2):
            oh = int(torch.randint(h // 8, h // 3, (1,), generator=g))
            ow = int(torch.randint(w // 16, w // 6, (1,), generator=g))
            y0 = int(torch.randint(int(0.35 * h), max(int(0.35 * h) + 1, h - oh), (1,), generator=g))
            x0 = int(torch.randint(0, max(1, w - ow), (1,), generator=g))
            tex = _texture(g, oh, ow)
            if float(torch.rand(1, generator=g)) < 0.5:  # ellipse
                cy, cx = y0 + oh / 2, x0 + ow / 2
                m = (((yy2 - cy) / (oh / 2)) ** 2 + ((xx2 - cx) / (ow / 2)) ** 2) <= 1
            else:
                m = torch.zeros(h, w, dtype=torch.bool)
                m[y0 : y0 + oh, x0 : x0 + ow] = True
            full = torch.zeros(3, h, w)
            full[:, y0 : y0 + oh, x0 : x0 + ow] = tex
            rgb = torch.where(m, full, rgb)
            alpha = torch.where(m, torch.ones(()), alpha)
        layers.append((rgb, alpha, depth))
    return layers


def _render(layers: list[tuple[Tensor, Tensor, float]], cam_x: float, size: tuple[int, int], x_origin: int) -> Tensor:
    """Composite the layers for a camera at ``cam_x`` (pixels), cropped to ``size`` at world column ``x_origin``."""
    h, w = size
    out = torch.zeros(3, h, w)
    for rgb, alpha, depth in layers:
        shift = cam_x / depth
        x = x_origin + shift
        xi = math.floor(x)
        frac = x - xi
        # sub-pixel shift by linear interpolation of two integer crops
        crop = (1 - frac) * rgb[:, :h, xi : xi + w] + frac * rgb[:, :h, xi + 1 : xi + 1 + w]
        a = (1 - frac) * alpha[:h, xi : xi + w] + frac * alpha[:h, xi + 1 : xi + 1 + w]
        out = out * (1 - a) + crop * a
    return out.clamp(0, 1)


def _gaussian_blur(img: Tensor, sigma: float) -> Tensor:
    radius = max(1, int(3 * sigma))
    x = torch.arange(-radius, radius + 1, dtype=torch.float32)
    k = torch.exp(-0.5 * (x / sigma) ** 2)
    k = k / k.sum()
    c = img.shape[0]
    y = F.conv2d(
        F.pad(img[None], (radius, radius, 0, 0), mode="replicate"), k.view(1, 1, 1, -1).repeat(c, 1, 1, 1), groups=c
    )
    y = F.conv2d(F.pad(y, (0, 0, radius, radius), mode="replicate"), k.view(1, 1, -1, 1).repeat(c, 1, 1, 1), groups=c)
    return y[0]


def _plant(g: torch.Generator, img: Tensor, kind: str) -> tuple[Tensor, Tensor, list[int]]:
    """Plant one artifact; returns (image, mask, box)."""
    _, h, w = img.shape
    s = max(8, min(h, w) // 5)
    y0 = int(torch.randint(0, h - s + 1, (1,), generator=g))
    x0 = int(torch.randint(0, w - s + 1, (1,), generator=g))
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    cy, cx = y0 + s / 2, x0 + s / 2
    out = img.clone()
    if kind == "noise":
        mask = torch.zeros(h, w, dtype=torch.bool)
        mask[y0 : y0 + s, x0 : x0 + s] = True
        out[:, mask] = torch.rand(3, int(mask.sum()), generator=g)
    elif kind == "floater":
        r2 = ((yy - cy) ** 2 + (xx - cx) ** 2) / (s / 2.5) ** 2
        a = 0.85 * torch.exp(-r2)
        a = torch.where(a > 0.05, a, torch.zeros(()))  # compact support: the mask holds every changed pixel
        color = torch.rand(3, 1, 1, generator=g)
        out = out * (1 - a) + color * a
        mask = a > 0
    elif kind == "needle":
        ang = float(torch.rand(1, generator=g)) * math.pi
        u = (xx - cx) * math.cos(ang) + (yy - cy) * math.sin(ang)
        v = -(xx - cx) * math.sin(ang) + (yy - cy) * math.cos(ang)
        a = torch.exp(-((u / (1.2 * s)) ** 2) - (v / 1.5) ** 2)
        a = torch.where(a > 0.05, a, torch.zeros(()))
        color = torch.rand(3, 1, 1, generator=g)
        out = out * (1 - a) + color * a
        mask = a > 0
    elif kind == "blur":
        mask = torch.zeros(h, w, dtype=torch.bool)
        mask[y0 : y0 + s, x0 : x0 + s] = True
        out = torch.where(mask, _gaussian_blur(img, sigma=max(2.0, s / 6)), out)
    else:  # blotch: a colour shift with a soft edge
        r2 = ((yy - cy) ** 2 + (xx - cx) ** 2) / (s / 2) ** 2
        a = (1 - r2).clamp(0, 1)
        shift = torch.rand(3, 1, 1, generator=g) - 0.5
        out = out + 0.8 * shift * a
        mask = a > 0
    ys, xs = torch.nonzero(mask, as_tuple=True)
    box = [int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1] if ys.numel() else [y0, x0, y0, x0]
    return out.clamp(0, 1), mask, box


def make_views(num_views: int, size: tuple[int, int] = (416, 628), seed: int = 0) -> list[Tensor]:
    """``num_views`` clean views of one procedural scene (e.g. benchmark references), cameras evenly spaced."""
    return make_scene(num_train=num_views, num_novel=0, size=size, seed=seed).train_views


def make_scene(
    num_train: int = 8,
    num_novel: int = 4,
    size: tuple[int, int] = (192, 288),
    seed: int = 0,
    artifacts_per_view: int = 2,
) -> SyntheticScene:
    """Generate a procedural scene (deterministic for a seed).

    Args:
        num_train: training views (references), cameras evenly spaced along a horizontal baseline.
        num_novel: novel views, cameras between training cameras, each with ``artifacts_per_view`` planted artifacts
            (kinds cycle through noise, floater, needle, blur, blotch).
        size: ``(H, W)`` of every view.
        seed: random seed.
        artifacts_per_view: artifacts planted in each novel view.

    Returns:
        A :class:`SyntheticScene`.
    """
    if num_train < 1:
        raise ValueError(f"`num_train` must be >= 1; received {num_train}")
    h, w = size
    if h < 16 or w < 16:
        raise ValueError(f"`size` must be at least 16x16; received {size}")
    g = torch.Generator().manual_seed(seed)
    baseline = 0.5 * w  # camera travel in pixels of the nearest layer
    world_w = int(w + baseline + 4)
    layers = _world(g, h, world_w)
    cams = [baseline * (i / max(num_train - 1, 1)) for i in range(num_train)]
    train = [_render(layers, -c, size, int(baseline) + 1) for c in cams]
    novel, targets, masks, arts = [], [], [], []
    for i in range(num_novel):
        c = baseline * ((i + 0.5) / max(num_novel, 1))
        clean = _render(layers, -c, size, int(baseline) + 1)
        img, mask, info = clean, torch.zeros(h, w, dtype=torch.bool), []
        for a in range(artifacts_per_view):
            kind = ARTIFACT_KINDS[(i * artifacts_per_view + a) % len(ARTIFACT_KINDS)]
            img, m, box = _plant(g, img, kind)
            mask |= m
            info.append({"kind": kind, "box": box})
        novel.append(img)
        targets.append(clean)
        masks.append(mask)
        arts.append(info)
    return SyntheticScene(
        train_views=train,
        novel_views=novel,
        novel_targets=targets,
        artifact_masks=masks,
        artifacts=arts,
        names=[f"novel_{i:02d}" for i in range(num_novel)],
        train_names=[f"train_{i:02d}" for i in range(num_train)],
    )
