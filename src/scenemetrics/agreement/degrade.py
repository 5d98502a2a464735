"""Controlled degradations for metric sanity sweeps, and the sweep statistics (does a metric get worse?).

The papers check their metrics on views degraded on purpose, level by level: PRISM with Gaussian blur, hue shift,
Gaussian noise and salt-and-pepper noise at three levels each, and with "misaligned" views rendered at other
azimuths; OSIM by blurring the objects of a view one by one. This module holds those degradations as pure, seeded
functions on image batches ``(B, 3, H, W)`` in ``[0, 1]`` (or ``uint8``; checked by :func:`scenemetrics.image.
check_images`; results are float32 on the input's device), a helper that perturbs cameras for the misaligned views
(rendering them is the user's renderer's job), and the statistics of a sweep: Spearman's rho of score against level
and the fraction of scenes whose score is monotone in the level.

**Levels (Decision: the papers name the degradations and "three levels" but give no values).** Level 0 is the
unchanged view; levels 1-3 use :data:`DEGRADATION_PARAMS`:

- ``blur``: Gaussian blur, sigma 1, 2, 4 pixels at a 256-pixel shorter side (PRISM's and Zero123's view size),
  scaled with the shorter side so a level means the same on any resolution (doubling per level: a clear, roughly
  even visual progression from "softened" to "details gone");
- ``hue``: hue rotation by 0.05, 0.1, 0.2 of a turn (18, 36, 72 degrees): from a tint to a clearly wrong colour,
  short of the complementary hue (0.5), beyond which the shift would start to come back;
- ``noise``: additive Gaussian noise with standard deviation 0.02, 0.05, 0.1 (about 5, 13, 26 grey levels of 255),
  clipped to ``[0, 1]``: from barely visible to strong sensor-like noise;
- ``saltpepper``: 1 %, 5 %, 10 % of the pixels set to black or white (each with probability 1/2; all three channels
  of a pixel together).

Random degradations use **common random numbers**: for one seed, every level uses the same draw (the noise is one
standard normal field scaled by the level's sigma; salt-and-pepper marks the pixels whose one uniform draw falls
below the level's fraction). So the levels are nested by construction: the pixels hit at level 1 are hit at level 2,
and the deviation of each pixel from the original never decreases with the level — a full-reference metric that
truly measures the difference is monotone in the level for every image. Draws come from a CPU ``torch.Generator``
seeded with ``seed`` (the same numbers on every device) and cover the whole batch, so equal seeds and equal batches
give equal results.

Example:
    >>> import torch
    >>> from scenemetrics.agreement import degrade, sweep_statistics
    >>> views = torch.full((2, 3, 32, 32), 0.5)
    >>> noisy = [degrade(views, "noise", level, seed=0) for level in range(4)]
    >>> psnr = torch.stack([10 * torch.log10(1 / ((v - views) ** 2).mean((1, 2, 3)).clamp_min(1e-12)) for v in noisy])
    >>> stats = sweep_statistics(psnr.T.numpy(), higher_is_better=True)
    >>> stats.monotone_fraction, stats.spearman < 0
    (1.0, True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import torch
from scipy import stats as scipy_stats
from torch import Tensor
from torchvision.transforms.v2 import functional as TF

from scenemetrics.checks import check_choice, check_int, check_number
from scenemetrics.image import check_images

from ._checks import NAN_POLICIES, to_numpy

__all__ = [
    "DEGRADATIONS",
    "DEGRADATION_PARAMS",
    "MISALIGNMENT_ANGLES",
    "MisalignedCameras",
    "SweepStatistics",
    "blur_objects",
    "degrade",
    "gaussian_blur",
    "gaussian_noise",
    "hue_shift",
    "misaligned_cameras",
    "salt_and_pepper",
    "sweep_statistics",
]

DEGRADATIONS = ("blur", "hue", "noise", "saltpepper")
"""The image degradations of PRISM's sweep, in the order of ``--degradations blur,hue,noise,saltpepper``."""

DEGRADATION_PARAMS: Mapping[str, tuple[float, float, float]] = MappingProxyType(
    {
        "blur": (1.0, 2.0, 4.0),  # sigma in pixels at a 256-pixel shorter side
        "hue": (0.05, 0.1, 0.2),  # fraction of a full turn
        "noise": (0.02, 0.05, 0.1),  # standard deviation, images in [0, 1]
        "saltpepper": (0.01, 0.05, 0.1),  # fraction of pixels
    }
)
"""Read-only ``{kind: (level 1, level 2, level 3)}`` parameters (see the module docstring for their units)."""

MISALIGNMENT_ANGLES = (22.5, 45.0, 67.5)
"""Default angles (degrees) of :func:`misaligned_cameras`: the three nearest of PRISM's other azimuths (its views are
rendered every 22.5 degrees around the object, and each other azimuth is a "misaligned" view)."""

_REFERENCE_SIDE = 256


def _images(images: Tensor) -> Tensor:
    return check_images(images, "images")


def _generator(seed: Any) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(check_int(seed, "seed", low=0))


def gaussian_blur(images: Tensor, sigma: float) -> Tensor:
    """Gaussian blur with ``sigma`` pixels (torchvision's ``gaussian_blur``, reflect padding).

    The kernel has ``2 * ceil(3 * sigma) + 1`` taps per axis (the Gaussian to three standard deviations) and sums to
    one, so a constant image is unchanged (to float32 rounding); the result is clamped to ``[0, 1]`` against that
    rounding.

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        sigma: standard deviation in pixels, ``> 0``; the kernel radius must be smaller than ``H`` and ``W``.

    Returns:
        ``(B, 3, H, W)`` float32 on the input's device.

    Raises:
        ValueError: bad images, ``sigma <= 0`` or a kernel wider than the image.

    Example:
        >>> import torch
        >>> bool((gaussian_blur(torch.full((3, 8, 8), 0.25), 1.5) - 0.25).abs().max() < 1e-6)
        True
    """
    x = _images(images)
    s = check_number(sigma, "sigma", low=0.0, low_open=True)
    radius = math.ceil(3 * s)
    if x.shape[0] == 0:
        return x
    if radius >= min(x.shape[-2:]):
        raise ValueError(
            f"`sigma` = {s:g} needs a kernel radius of {radius} pixels, which must be smaller than the image "
            f"({x.shape[-2]}x{x.shape[-1]}); use a smaller sigma"
        )
    # a kernel summing to one keeps [0, 1] up to float rounding; clamp that rounding (an image stays an image, and
    # metrics that check their input range, such as torchmetrics' LPIPS, accept it)
    return TF.gaussian_blur(x, [2 * radius + 1] * 2, [s, s]).clamp_(0.0, 1.0)


def hue_shift(images: Tensor, shift: float) -> Tensor:
    """Rotate the hue by ``shift`` turns (torchvision's ``adjust_hue``: RGB to HSV, shift H, back).

    Saturation and value are kept, so grey pixels (``R = G = B``) are unchanged; a shift of 1/3 maps red to green.

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        shift: fraction of a full turn, in ``[-0.5, 0.5]``.

    Returns:
        ``(B, 3, H, W)`` float32 on the input's device.

    Example:
        >>> import torch
        >>> red = torch.zeros(1, 3, 2, 2); red[:, 0] = 1
        >>> hue_shift(red, 1 / 3)[0, :, 0, 0].tolist()
        [0.0, 1.0, 0.0]
    """
    x = _images(images)
    h = check_number(shift, "shift", low=-0.5, high=0.5)
    return TF.adjust_hue(x, h) if x.shape[0] else x


def gaussian_noise(images: Tensor, std: float, *, seed: int = 0) -> Tensor:
    """Add Gaussian noise of standard deviation ``std`` and clip the result to ``[0, 1]``.

    The noise is ``std * z`` with ``z`` one standard normal field drawn from a CPU generator seeded with ``seed``:
    the same ``z`` for every ``std`` (nested levels, see the module docstring). The clipping is part of the
    degradation (a noisy image is still an image).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        std: standard deviation, ``>= 0`` (0 returns the images as float32).
        seed: seed of the noise (an int ``>= 0``).

    Returns:
        ``(B, 3, H, W)`` float32 on the input's device.

    Example:
        >>> import torch
        >>> x = torch.full((1, 3, 4, 4), 0.5)
        >>> torch.equal(gaussian_noise(x, 0.1, seed=3), gaussian_noise(x, 0.1, seed=3))
        True
    """
    x = _images(images)
    s = check_number(std, "std", low=0.0)
    z = torch.randn(x.shape, generator=_generator(seed), dtype=torch.float32).to(x.device)
    return (x + s * z).clamp(0.0, 1.0)


def salt_and_pepper(images: Tensor, amount: float, *, seed: int = 0) -> Tensor:
    """Set a fraction ``amount`` of the pixels to white (salt) or black (pepper), each with probability 1/2.

    A pixel is hit when its uniform draw ``u`` is below ``amount`` (one draw per pixel, shared by its three
    channels; the same draw for every ``amount``, so the pixels hit at a smaller amount are hit at a larger one); a
    second draw per pixel chooses salt or pepper. The number of pixels hit is Binomial(``B*H*W``, ``amount``).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        amount: fraction of pixels, in ``[0, 1]``.
        seed: seed of the draws (an int ``>= 0``).

    Returns:
        ``(B, 3, H, W)`` float32 on the input's device.

    Example:
        >>> import torch
        >>> out = salt_and_pepper(torch.full((1, 3, 100, 100), 0.5), 0.1, seed=0)
        >>> hit = (out != 0.5).all(dim=1)
        >>> round(float(hit.float().mean()), 2), bool(((out == 0) | (out == 1))[:, :, hit[0]].all())
        (0.1, True)
    """
    x = _images(images)
    p = check_number(amount, "amount", low=0.0, high=1.0)
    g = _generator(seed)
    b, _, h, w = x.shape
    u = torch.rand((b, 1, h, w), generator=g).to(x.device)
    salt = (torch.rand((b, 1, h, w), generator=g) < 0.5).to(x.device)
    value = salt.to(x.dtype).expand_as(x)
    return torch.where((u < p).expand_as(x), value, x)


def degrade(images: Tensor, kind: str, level: int, *, seed: int = 0) -> Tensor:
    """One of PRISM's degradations at level 0 (unchanged), 1, 2 or 3 (:data:`DEGRADATION_PARAMS`).

    ``blur`` scales its sigma with the shorter image side (the table's values hold at 256 pixels); ``noise`` and
    ``saltpepper`` draw with ``seed``, the same draw at every level (nested levels).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        kind: one of :data:`DEGRADATIONS`.
        level: 0, 1, 2 or 3.
        seed: seed of the random degradations.

    Returns:
        ``(B, 3, H, W)`` float32 on the input's device.

    Raises:
        ValueError: bad images, an unknown ``kind`` or a level outside 0-3.

    Example:
        >>> import torch
        >>> x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
        >>> torch.equal(degrade(x, "hue", 0), x), degrade(x, "blur", 3).shape
        (True, torch.Size([1, 3, 16, 16]))
    """
    check_choice(kind, "kind", DEGRADATIONS)
    lv = check_int(level, "level", low=0, high=len(DEGRADATION_PARAMS[kind]))
    x = _images(images)
    if lv == 0:
        return x
    value = DEGRADATION_PARAMS[kind][lv - 1]
    if kind == "blur":
        return gaussian_blur(x, value * min(x.shape[-2:]) / _REFERENCE_SIDE)
    if kind == "hue":
        return hue_shift(x, value)
    if kind == "noise":
        return gaussian_noise(x, value, seed=seed)
    return salt_and_pepper(x, value, seed=seed)


def _check_boxes(boxes: Any, index: int, h: int, w: int) -> np.ndarray:
    name = f"boxes[{index}]"
    arr = to_numpy(boxes, name)
    if arr.size == 0:
        return np.zeros((0, 4))
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"`{name}` must have shape (K, 4) rows (x0, y0, x1, y1) in pixels; received {arr.shape}")
    for k, (x0, y0, x1, y1) in enumerate(arr.tolist()):
        if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
            raise ValueError(f"`{name}[{k}]` = {arr[k].tolist()} is not finite")
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise ValueError(
                f"`{name}[{k}]` = {arr[k].tolist()} must satisfy 0 <= x0 < x1 <= {w} and 0 <= y0 < y1 <= {h} (pixel "
                "edges of the image; nothing is clipped)"
            )
    return arr


def blur_objects(
    images: Tensor, boxes: Sequence[Any], *, sigma: float | None = None, mode: str = "cumulative"
) -> list[Tensor]:
    """Blur the objects of each view one by one (OSIM's sanity check), for a sweep over the number of objects.

    Each view is blurred once (:func:`gaussian_blur`, so the blur near a box edge sees the surroundings, as a
    blurred object in a photo does), and the blurred pixels are pasted inside the boxes. A box ``(x0, y0, x1, y1)``
    is in pixel-edge coordinates (the detector convention): it covers the columns ``floor(x0) .. ceil(x1) - 1``
    and the rows ``floor(y0) .. ceil(y1) - 1``. Boxes are used in the given order (sort them first, e.g. by OSIM
    saliency or size, to choose which object goes first).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` in ``[0, 1]`` or uint8.
        boxes: one ``(K_b, 4)`` array-like per view (``K_b`` may be 0).
        sigma: blur in pixels; ``None`` = the strongest ``blur`` level (4 pixels at a 256-pixel shorter side,
            scaled with the shorter side).
        mode: ``"cumulative"`` (step ``k`` blurs objects ``1..k``: a sweep whose level is the number of blurred
            objects) or ``"single"`` (step ``k`` blurs object ``k`` alone: which object matters most).

    Returns:
        One ``(K_b, 3, H, W)`` float32 tensor per view (steps in box order).

    Raises:
        ValueError: bad images, ``len(boxes) != B``, a box that is not finite, empty or not inside the image, or a
            bad ``sigma`` / ``mode``.

    Example:
        >>> import torch
        >>> view = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
        >>> steps = blur_objects(view, [[[0, 0, 8, 8], [16, 16, 32, 32]]])[0]
        >>> steps.shape, torch.equal(steps[0][:, 8:, 8:], view[0][:, 8:, 8:])
        (torch.Size([2, 3, 32, 32]), True)
    """
    x = _images(images)
    check_choice(mode, "mode", ("cumulative", "single"))
    b, _, h, w = x.shape
    if isinstance(boxes, (str, bytes)) or not isinstance(boxes, Sequence) or len(boxes) != b:
        raise ValueError(f"`boxes` must be a sequence of one (K, 4) array per view ({b} views); received {boxes!r}")
    checked = [_check_boxes(bx, i, h, w) for i, bx in enumerate(boxes)]
    s = DEGRADATION_PARAMS["blur"][-1] * min(h, w) / _REFERENCE_SIDE if sigma is None else sigma
    blurred = gaussian_blur(x, s) if b else x
    out = []
    for i, bx in enumerate(checked):
        steps, current = [], x[i].clone()
        for x0, y0, x1, y1 in bx.tolist():
            rows = slice(math.floor(y0), math.ceil(y1))
            cols = slice(math.floor(x0), math.ceil(x1))
            step = current.clone() if mode == "cumulative" else x[i].clone()
            step[:, rows, cols] = blurred[i][:, rows, cols]
            steps.append(step)
            current = step
        out.append(torch.stack(steps) if steps else x.new_zeros((0, 3, h, w)))
    return out


class MisalignedCameras(NamedTuple):
    """Cameras rotated by increasing angles (:func:`misaligned_cameras`).

    Attributes:
        c2w: ``(L, B, 4, 4)`` camera-to-world matrices, ``c2w[l]`` rotated by ``angles[l]``.
        intrinsics: ``(L, B, 3, 3)`` the given intrinsics repeated per angle (a rotation does not change them), or
            ``None`` when none were given.
        angles: ``(L,)`` float64 angles in degrees.
    """

    c2w: Tensor
    intrinsics: Tensor | None
    angles: Tensor


def _rotation(axis: Tensor, angle_rad: Tensor) -> Tensor:
    """``(L, 3, 3)`` rotations about the unit ``axis`` by ``angle_rad`` (right-hand rule, Rodrigues' formula)."""
    k = torch.zeros(3, 3, dtype=axis.dtype)
    k[0, 1], k[0, 2], k[1, 0], k[1, 2], k[2, 0], k[2, 1] = -axis[2], axis[1], axis[2], -axis[0], -axis[1], axis[0]
    s, c = torch.sin(angle_rad)[:, None, None], torch.cos(angle_rad)[:, None, None]
    return torch.eye(3, dtype=axis.dtype) + s * k + (1 - c) * (k @ k)


def misaligned_cameras(
    c2w: Tensor,
    angles: Sequence[float] | Tensor = MISALIGNMENT_ANGLES,
    *,
    mode: str = "orbit",
    pivot: Sequence[float] | Tensor = (0.0, 0.0, 0.0),
    axis: Sequence[float] | Tensor = (0.0, 0.0, 1.0),
    intrinsics: Tensor | None = None,
) -> MisalignedCameras:
    """Rotate cameras by increasing angles: the poses of PRISM's misaligned views (render them with your renderer).

    **Convention.** ``c2w`` are camera-to-world rigid transforms ``[[R, t], [0, 0, 0, 1]]``: ``t`` is the camera
    centre in world coordinates and the columns of ``R`` are the camera's axes in world coordinates (whatever they
    mean — OpenCV's x right / y down / z forward or OpenGL's and nerfstudio's x right / y up / z backward: the
    rotation is rigid and applied in the world, so it never needs to know). A camera is rotated by ``angle`` degrees
    about the world line through ``pivot`` (``mode="orbit"``) or through its own centre (``mode="in_place"``, a pan
    in the world) with direction ``axis``, counter-clockwise seen from the tip of ``axis`` (right-hand rule):
    ``c2w' = T(p) @ Rot(axis, angle) @ T(-p) @ c2w`` with ``p`` the pivot or the camera centre. With the defaults
    (z-up world, object at the origin) an orbit is PRISM's / Zero123's azimuth change: the camera centre's azimuth
    ``atan2(y, x)`` grows by the angle, its height and distance to the pivot stay, and a camera that looked at the
    pivot still does. Intrinsics do not change.

    Args:
        c2w: ``(B, 4, 4)`` or ``(4, 4)`` float camera-to-world matrices (last row ``0 0 0 1``, ``R`` orthonormal with
            determinant 1, to 1e-4).
        angles: ``(L,)`` angles in degrees (default :data:`MISALIGNMENT_ANGLES`).
        mode: ``"orbit"`` or ``"in_place"``.
        pivot: ``(3,)`` point of the orbit axis (``mode="orbit"``).
        axis: ``(3,)`` direction of the rotation axis (normalised here; not zero).
        intrinsics: optional ``(B, 3, 3)`` or ``(3, 3)`` intrinsics, returned repeated per angle.

    Returns:
        :class:`MisalignedCameras`, in the dtype and on the device of ``c2w`` (computed in float64).

    Raises:
        ValueError: bad shapes, non-finite values, a non-rigid ``c2w``, a zero ``axis`` or an unknown ``mode``.

    Example:
        >>> import torch
        >>> cam = torch.eye(4, dtype=torch.float64); cam[:3, 3] = torch.tensor([2.0, 0.0, 1.0])
        >>> out = misaligned_cameras(cam, [90.0])
        >>> out.c2w[0, 0, :3, 3].round(decimals=6).tolist()
        [0.0, 2.0, 1.0]
    """
    check_choice(mode, "mode", ("orbit", "in_place"))
    if not isinstance(c2w, Tensor) or not c2w.is_floating_point():
        raise ValueError(f"`c2w` must be a float tensor of shape (B, 4, 4) or (4, 4); received {c2w!r:.80}")
    cams = c2w.unsqueeze(0) if c2w.ndim == 2 else c2w
    if cams.ndim != 3 or cams.shape[-2:] != (4, 4):
        raise ValueError(f"`c2w` must have shape (B, 4, 4) or (4, 4); received {tuple(c2w.shape)}")
    m = cams.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(m).all()):
        raise ValueError("`c2w` contains NaN or infinite values")
    r = m[:, :3, :3]
    bottom = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    orthonormal = (r.transpose(1, 2) @ r - torch.eye(3, dtype=torch.float64)).abs().amax(dim=(1, 2)) <= 1e-4
    proper = (torch.linalg.det(r) - 1).abs() <= 1e-4
    if not bool(((m[:, 3] == bottom).all(dim=1) & orthonormal & proper).all()):
        raise ValueError(
            "`c2w` must be rigid camera-to-world transforms: last row (0, 0, 0, 1) and an orthonormal rotation with "
            "determinant 1 (to 1e-4)"
        )
    ang = torch.as_tensor(angles, dtype=torch.float64).reshape(-1)
    if not bool(torch.isfinite(ang).all()):
        raise ValueError(f"`angles` must be finite degrees; received {ang.tolist()}")
    ax = torch.as_tensor(axis, dtype=torch.float64).reshape(-1)
    piv = torch.as_tensor(pivot, dtype=torch.float64).reshape(-1)
    if ax.shape != (3,) or piv.shape != (3,) or not bool(torch.isfinite(ax).all() & torch.isfinite(piv).all()):
        raise ValueError(f"`axis` and `pivot` must be finite 3-vectors; received {ax.tolist()} and {piv.tolist()}")
    norm = float(torch.linalg.norm(ax))
    if norm == 0:
        raise ValueError("`axis` must not be the zero vector")
    rot = _rotation(ax / norm, torch.deg2rad(ang))  # (L, 3, 3)
    centres = m[:, :3, 3]  # (B, 3)
    p = piv.expand_as(centres) if mode == "orbit" else centres
    out = m.unsqueeze(0).repeat(len(ang), 1, 1, 1)  # (L, B, 4, 4)
    out[..., :3, :3] = rot[:, None] @ r[None]
    out[..., :3, 3] = (rot[:, None] @ (centres - p)[None, ..., None])[..., 0] + p[None]
    k = None
    if intrinsics is not None:
        if not isinstance(intrinsics, Tensor):
            raise ValueError(f"`intrinsics` must be a tensor of shape (B, 3, 3) or (3, 3); received {intrinsics!r:.80}")
        k_in = intrinsics.unsqueeze(0) if intrinsics.ndim == 2 else intrinsics
        if k_in.ndim != 3 or k_in.shape[-2:] != (3, 3) or k_in.shape[0] not in (1, len(m)):
            raise ValueError(
                f"`intrinsics` must have shape ({len(m)}, 3, 3) or (3, 3); received {tuple(intrinsics.shape)}"
            )
        k = k_in.expand(len(m), 3, 3).unsqueeze(0).expand(len(ang), len(m), 3, 3).clone()
    c2w_out = out.to(c2w.device, c2w.dtype)
    if c2w.ndim == 2:
        c2w_out = c2w_out.reshape(len(ang), 1, 4, 4)
    return MisalignedCameras(c2w_out, k, ang)


class SweepStatistics(NamedTuple):
    """How a metric behaves over the levels of one degradation (:func:`sweep_statistics`).

    Attributes:
        spearman: Spearman's rho between level and score over every (scene, level) pair, sign as computed (a
            higher-is-better metric that degrades gives a negative value); NaN when undefined.
        monotone_fraction: fraction of scenes whose score is monotone in the level, in the sense of ``strict`` and
            ``higher_is_better``; NaN without scenes left.
        monotone: ``(n_scenes,)`` bool per scene (the scenes kept after ``nan_policy``).
        n_scenes: scenes used.
        n_levels: levels per scene.
        strict: whether ties broke monotonicity.
        higher_is_better: the direction that was checked (``None``: either direction).
    """

    spearman: float
    monotone_fraction: float
    monotone: np.ndarray
    n_scenes: int
    n_levels: int
    strict: bool
    higher_is_better: bool | None


def sweep_statistics(
    scores: Any,
    levels: Any = None,
    *,
    higher_is_better: bool | None,
    strict: bool = True,
    tol: float = 0.0,
    nan_policy: str = "raise",
) -> SweepStatistics:
    """Spearman of score vs level and the fraction of scenes whose score is monotone in the level.

    **Monotone (Decision).** For each scene, with its scores ordered by level and ``d`` the consecutive differences
    oriented so that positive means *worse* (``-d`` for higher-is-better metrics):

    - ``strict=True`` (default): every step makes the score worse by more than ``tol`` (``d > tol`` for all steps).
      A metric that does not react to a level (a tie) is not monotone: "gets worse at every level" is what a sweep
      checks.
    - ``strict=False``: no step makes it better by more than ``tol`` (``d >= -tol``); a constant score counts as
      monotone.
    - ``higher_is_better=None``: monotone in either direction (all steps worse, or all steps better).

    **Spearman.** ``scipy.stats.spearmanr`` of the level against the score over all (scene, level) pairs pooled
    (average ranks for ties), not oriented: a higher-is-better metric that degrades gives a negative rho, a
    lower-is-better one a positive rho. A constant score gives NaN with a ``UserWarning``.

    **Infinite scores** are ordered values, not missing ones: a full-reference metric compares an undegraded view
    (level 0) with itself, and PSNR is then ``+inf``. Both statistics use only the order of the scores, so ``+inf``
    ranks above every finite score and two equal infinities are a tie; only NaN counts as missing.

    Args:
        scores: ``(n_scenes, n_levels)`` array-like, row = one scene (view) scored at every level; ``n_levels >= 2``.
        levels: ``(n_levels,)`` increasing level values (default ``0, 1, ..., n_levels - 1``); only their order and
            ranks matter.
        higher_is_better: the metric's direction (``None``: check both directions).
        strict: see above.
        tol: tolerance ``>= 0`` on each step (in score units).
        nan_policy: ``"raise"`` (NaN scores raise ``ValueError``) or ``"omit"`` (scenes with a NaN score are dropped,
            with a ``UserWarning`` giving the count).

    Returns:
        :class:`SweepStatistics`.

    Raises:
        ValueError: bad shapes, fewer than 2 levels, levels not strictly increasing, NaN scores with
            ``nan_policy="raise"``, a negative ``tol``, a non-bool ``strict`` or ``higher_is_better``.

    Example:
        >>> s = sweep_statistics([[30.0, 25.0, 20.0], [28.0, 28.0, 21.0]], higher_is_better=True)
        >>> s.monotone.tolist(), round(s.spearman, 4)
        ([True, False], -0.9095)
        >>> sweep_statistics([[30.0, 25.0, 20.0], [28.0, 28.0, 21.0]], higher_is_better=True, strict=False)[1]
        1.0
    """
    arr = to_numpy(scores, "scores")
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"`scores` must have shape (n_scenes, n_levels) with n_levels >= 2; received {arr.shape}")
    if not isinstance(strict, bool):
        raise ValueError(f"`strict` must be a bool; received {strict!r}")
    if higher_is_better is not None and not isinstance(higher_is_better, bool):
        raise ValueError(f"`higher_is_better` must be True, False or None; received {higher_is_better!r}")
    tolerance = check_number(tol, "tol", low=0.0)
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    n_levels = arr.shape[1]
    lv = np.arange(n_levels, dtype=np.float64) if levels is None else to_numpy(levels, "levels").reshape(-1)
    if len(lv) != n_levels or not np.isfinite(lv).all() or not (np.diff(lv) > 0).all():
        raise ValueError(f"`levels` must be {n_levels} finite, strictly increasing values; received {lv.tolist()}")
    finite = ~np.isnan(arr).any(axis=1)
    if not finite.all():
        if nan_policy == "raise":
            row = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"`scores` has a NaN value in scene {row}: {arr[row].tolist()}")
        warnings.warn(
            f"nan_policy='omit': dropped {int((~finite).sum())} of {len(arr)} scenes with a NaN score.",
            UserWarning,
            stacklevel=2,
        )
        arr = arr[finite]
    with np.errstate(invalid="ignore"):  # inf - inf: two equal infinities are a tie (step 0), not NaN
        steps = np.where(arr[:, 1:] == arr[:, :-1], 0.0, np.diff(arr, axis=1))

    def worse(d: np.ndarray) -> np.ndarray:
        return (d > tolerance).all(axis=1) if strict else (d >= -tolerance).all(axis=1)

    if higher_is_better is None:
        monotone = worse(steps) | worse(-steps)
    else:
        monotone = worse(-steps if higher_is_better else steps)
    n = len(arr)
    fraction = float(monotone.mean()) if n else float("nan")
    rho = float("nan")
    # ranks: +-inf take their place in the order (spearmanr itself would see inf - inf in its centring)
    y = scipy_stats.rankdata(arr.reshape(-1))
    if n and np.ptp(y) > 0:
        rho = float(scipy_stats.spearmanr(np.tile(lv, n), y).statistic)
    elif n:
        warnings.warn("sweep_statistics: the scores are constant; Spearman's rho is NaN.", UserWarning, stacklevel=2)
    return SweepStatistics(rho, fraction, monotone, n, n_levels, strict, higher_is_better)
