"""Graph-Based Visual Saliency (Harel, Koch, Perona 2006) with the defaults of Harel's MATLAB package, in batched torch.

The pipeline (``gbvs.m`` defaults): DKL colour, intensity and orientation feature maps at pyramid levels 2, 3, 4,
each resized to a ``map_size``-wide grid; graph activation (the equilibrium of a Markov chain on the grid, computed
in closed form); ``A ** 1.5`` normalisation; sum; border attenuation; ``mat2gray``; a small Gaussian blur; bicubic
upsampling to the input size. Constants (Gabor bank, distance kernel, colour table) are built once per device,
dtype and map size. Every image is processed independently of the others in the batch; maps that are constant
contribute nothing, so flat images give all-zero saliency instead of NaN.

Example:
    >>> import torch
    >>> from scenemetrics.osim.saliency import gbvs
    >>> img = torch.zeros(1, 3, 48, 64)
    >>> img[:, 0, 20:28, 30:38] = 1.0  # a red square on black
    >>> sal = gbvs(img)
    >>> sal.shape, int(sal[0].flatten().argmax()) // 64 in range(14, 34)
    (torch.Size([1, 48, 64]), True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.checks import check_positive_int
from scenemetrics.image import check_images

__all__ = [
    "GBVS_CHANNELS",
    "attenuate_borders",
    "gabor_kernel",
    "gbvs",
    "graph_activation",
    "mat2gray",
    "saliency_map_size",
    "subsample",
]

GBVS_CHANNELS = "CDIO"
"""Feature channels: C (Itti colour, optional), D (DKL colour), I (intensity), O (orientation)."""

_MIN_SIDE = 16
_SUBSAMPLE_TAPS = (1.0, 5.0, 10.0, 10.0, 5.0, 1.0)
_GABOR_HALF = 13  # ceil(4 * sqrt(10)): stddev 2, elongation 2
_GABOR_ANGLES = (0.0, 45.0, 90.0, 135.0)
_ORIENTATION_BORDER = 13
_FINAL_BORDER = 4
_CONSTANT_RTOL = 1e-6
_MAT2GRAY_EPS = 1e-12

# Our piecewise-linear fit (knots at k/255, k = 0, 16, ..., 240, 255) of the display gamma table of MATLAB rgb2dkl.
_LUT = (
    (0.0249, 0.0262, 0.0293, 0.0363, 0.0566, 0.0916, 0.1387, 0.2064, 0.2940, 0.3926, 0.4929, 0.5767, 0.6536, 0.7195,
     0.7935, 0.8896, 1.0000),
    (0.0077, 0.0091, 0.0124, 0.0204, 0.0444, 0.0828, 0.1350, 0.2073, 0.2998, 0.4024, 0.5010, 0.5900, 0.6653, 0.7323,
     0.8024, 0.8918, 1.0000),
    (0.0423, 0.0435, 0.0469, 0.0567, 0.0835, 0.1222, 0.1782, 0.2529, 0.3452, 0.4403, 0.5286, 0.6064, 0.6769, 0.7423,
     0.8165, 0.9020, 1.0000),
)  # fmt: skip
_LMS = ((18.32535, 44.60077, 7.46216), (4.09544, 28.20135, 6.66066), (0.02114, 0.10325, 1.05258))
_LMS0 = (34.9185389578, 19.3147966765, 0.5856108185)
_DKL_SCALE = (0.5774, 2.7525, 0.4526)


@functools.lru_cache(maxsize=64)
def _resize_weights(n_in: int, n_out: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """``(n_out, n_in)`` weights of torch's 1-D antialiased bicubic resize (read off by resizing the identity)."""
    eye = torch.eye(n_in, dtype=torch.float64).view(n_in, 1, 1, n_in)
    w = F.interpolate(eye, size=(1, n_out), mode="bicubic", align_corners=False, antialias=True)
    return w.view(n_in, n_out).t().contiguous().to(device=device, dtype=dtype)


def _resize(x: Tensor, size: tuple[int, int]) -> Tensor:
    """``F.interpolate(x, size, mode="bicubic", align_corners=False, antialias=True)`` of ``(..., h, w)`` maps as two
    small matrix products (the resize is separable): several times faster on CPU than the generic kernel."""
    h, w = x.shape[-2:]
    wy = _resize_weights(h, size[0], x.device, x.dtype)
    wx = _resize_weights(w, size[1], x.device, x.dtype)
    return wy @ x @ wx.t()


def _round_half_up(v: float) -> int:
    """MATLAB ``round`` for non-negative values (half away from zero)."""
    return math.floor(v + 0.5)


def saliency_map_size(height: int, width: int, map_size: int = 32) -> tuple[int, int]:
    """The activation grid ``(round(H s), round(W s))`` with ``s = map_size / max(H, W)`` (24x32 for 480x640).

    Example:
        >>> saliency_map_size(480, 640)
        (24, 32)
    """
    scale = map_size / max(height, width)
    return max(1, _round_half_up(height * scale)), max(1, _round_half_up(width * scale))


def mat2gray(x: Tensor) -> Tensor:
    """Min-max normalise each ``(..., H, W)`` map to [0, 1]; maps with range ``<= 1e-12`` become zeros."""
    flat = x.flatten(-2)
    lo = flat.amin(-1, keepdim=True)
    rng = flat.amax(-1, keepdim=True) - lo
    ok = rng > _MAT2GRAY_EPS
    out = torch.where(ok, (flat - lo) / torch.where(ok, rng, torch.ones_like(rng)), torch.zeros_like(flat))
    return out.view_as(x)


def attenuate_borders(x: Tensor, border: int) -> Tensor:
    """MATLAB ``attenuateBordersGBVS``: scale row/column k (k = 0..b-1) from each edge by ``(k + 1) / (b + 1)``.

    ``b`` is capped at half of the shorter side; row and column factors multiply at the corners.
    """
    h, w = x.shape[-2:]
    b = min(border, h // 2, w // 2)
    if b < 1:
        return x
    ramp = torch.arange(1, b + 1, dtype=x.dtype, device=x.device) / (b + 1)
    fy = torch.ones(h, dtype=x.dtype, device=x.device)
    fy[:b] = ramp
    fy[h - b :] = ramp.flip(0)
    fx = torch.ones(w, dtype=x.dtype, device=x.device)
    fx[:b] = ramp
    fx[w - b :] = ramp.flip(0)
    return x * fy.view(h, 1) * fx.view(1, w)


def _subsample_axis(x: Tensor, dim: int) -> Tensor:
    """Filter-and-decimate along ``dim`` (-1 or -2) with strided slices (far cheaper than a 1-channel conv).

    Interior outputs use all six taps (sum 32); the first and last output use the taps that fall inside the signal,
    renormalised. Needs ``n > 10`` (the caller's rule), so there are interior outputs.
    """
    n = x.shape[dim]
    m = n // 2

    def taps(start: int, count: int) -> Tensor:  # x[start], x[start + 2], ... (count samples) along dim
        part = x.narrow(dim, start, 2 * count - 1)
        return part[..., ::2] if dim == -1 else part[..., ::2, :]

    shape = list(x.shape)
    shape[dim] = m
    y = x.new_empty(shape)
    inner = y.narrow(dim, 1, m - 2)  # outputs 1 .. m-2 read inputs 2j-2 .. 2j+3, all inside the signal
    torch.mul(taps(0, m - 2), _SUBSAMPLE_TAPS[0] / 32.0, out=inner)
    for t in range(1, 6):
        inner.add_(taps(t, m - 2), alpha=_SUBSAMPLE_TAPS[t] / 32.0)
    first = sum(_SUBSAMPLE_TAPS[t + 2] / 26.0 * x.narrow(dim, t, 1) for t in range(4))
    y.narrow(dim, 0, 1).copy_(first)
    last_taps = 4 if n % 2 == 0 else 5  # inputs 2m-4 .. n-1
    norm = sum(_SUBSAMPLE_TAPS[:last_taps])
    last = sum(_SUBSAMPLE_TAPS[t] / norm * x.narrow(dim, 2 * m - 4 + t, 1) for t in range(last_taps))
    y.narrow(dim, m - 1, 1).copy_(last)
    return y


def subsample(x: Tensor) -> Tensor:
    """MATLAB ``mySubsample``: ``[1 5 10 10 5 1]`` low-pass and decimation by 2 along x, then along y.

    Output sample j (of ``n // 2``) is centred at input ``2j + 0.5`` and uses inputs ``2j-2 .. 2j+3``; taps outside
    the signal are dropped and the rest renormalised. Maps with a side ``<= 10`` are returned unchanged.

    Args:
        x: ``(..., H, W)`` maps.

    Example:
        >>> [round(v, 4) for v in subsample(torch.arange(12.0).view(1, 12).expand(12, 12))[0].tolist()]
        [0.8846, 2.5, 4.5, 6.5, 8.5, 10.1154]
    """
    h, w = x.shape[-2:]
    if h <= 10 or w <= 10:
        return x
    # The two 1-D passes commute; filtering along y first halves the data the strided x pass reads.
    return _subsample_axis(_subsample_axis(x, -2), -1)


def gabor_kernel(theta_deg: float, phase: float) -> Tensor:
    """One 27x27 GBVS Gabor kernel (float64), zero mean and unit L2 norm.

    ``g(i, j) = cos(2 major + phase) exp(-major^2 / 8 - minor^2 / 32)`` with row offset i and column offset j in
    -13..13, ``major = i cos(t) - j sin(t)``, ``minor = -i sin(t) - j cos(t)`` (stddev 2, elongation 2, period pi).

    Example:
        >>> g = gabor_kernel(45.0, 0.0)
        >>> abs(float(g.sum())) < 1e-12, round(float(g.norm()), 12)
        (True, 1.0)
    """
    t = math.radians(theta_deg)
    co, si = math.cos(t), -math.sin(t)
    r = torch.arange(-_GABOR_HALF, _GABOR_HALF + 1, dtype=torch.float64)
    i, j = r.view(-1, 1), r.view(1, -1)
    major = i * co + j * si
    minor = i * si - j * co
    g = torch.cos(2.0 * major + phase) * torch.exp(-(major**2) / 8.0 - minor**2 / 32.0)
    g = g - g.mean()
    return g / g.norm()


@functools.lru_cache(maxsize=16)
def _gabor_bank(device: torch.device, dtype: torch.dtype) -> Tensor:
    ks = [gabor_kernel(a, p) for a in _GABOR_ANGLES for p in (0.0, math.pi / 2)]
    return torch.stack(ks).to(device=device, dtype=dtype)  # (8, 27, 27): angle-major, phase-minor


def _smooth_size(n: int) -> int:
    """Smallest integer >= n whose prime factors are 2, 3 and 5 (fast FFT lengths)."""
    m = n
    while True:
        k = m
        for p in (2, 3, 5):
            while k % p == 0:
                k //= p
        if k == 1:
            return m
        m += 1


@functools.lru_cache(maxsize=32)
def _gabor_bank_fft(ph: int, pw: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    return torch.fft.rfft2(_gabor_bank(device, dtype), s=(ph, pw))


def _orientation(lum: Tensor) -> Tensor:
    """``(N, 1, h, w)`` intensity -> ``(N, 4, h, w)`` Gabor energy ``|L*g0| + |L*g90|`` at 0, 45, 90, 135 degrees.

    The 27x27 filters run as FFT products on the replicate-padded map (about 30x fewer operations than a direct
    convolution at level 2); only the outputs free of circular wrap-around are kept, so the result is the "same"
    size linear convolution.
    """
    n, _, h, w = lum.shape
    k = 2 * _GABOR_HALF
    padded = F.pad(lum, (_GABOR_HALF,) * 4, mode="replicate")[:, 0]
    ph, pw = _smooth_size(h + k), _smooth_size(w + k)
    spec = torch.fft.rfft2(padded, s=(ph, pw)).unsqueeze(1) * _gabor_bank_fft(ph, pw, lum.device, lum.dtype)
    resp = torch.fft.irfft2(spec, s=(ph, pw))[..., k : k + h, k : k + w].abs()
    energy = resp.reshape(n, 4, 2, h, w).sum(2)
    return attenuate_borders(energy, _ORIENTATION_BORDER)


@functools.lru_cache(maxsize=16)
def _dkl_constants(device: torch.device, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(per-segment [LUT value at the left knot, slope] (48, 2), [affine | offset] (3, 4)): gamma-corrected RGB to DKL.

    Row ``16 c + k`` is segment k (knots k*16/255 .. min(k*16 + 16, 255)/255) of channel c's display table.
    """
    knots = torch.tensor([*range(0, 256, 16), 255], dtype=torch.float64) / 255.0
    lut = torch.tensor(_LUT, dtype=torch.float64)
    slope = (lut[:, 1:] - lut[:, :-1]) / (knots[1:] - knots[:-1])
    segments = torch.stack([lut[:, :-1], slope], -1).reshape(48, 2)
    l0, l1, l2 = _LMS0
    f = 1.0 / (l0 + l1)
    n = math.hypot(l0, l1)
    mm = torch.tensor(
        [
            [math.sqrt(3.0) * f, math.sqrt(3.0) * f, 0.0],
            [n / l0 * f, -n / l1 * f, 0.0],
            [-f, -f, (l0 + l1) / l2 * f],
        ],
        dtype=torch.float64,
    )
    scale_mm = torch.diag(torch.tensor(_DKL_SCALE, dtype=torch.float64)) @ mm
    affine = scale_mm @ torch.tensor(_LMS, dtype=torch.float64)
    offset = scale_mm @ torch.tensor(_LMS0, dtype=torch.float64)
    cast = {"device": device, "dtype": dtype}
    return segments.to(**cast), torch.cat([affine, offset.view(3, 1)], 1).to(**cast)


def _dkl(rgb: Tensor) -> Tensor:
    """``(N, 3, h, w)`` RGB in [0, 1] -> ``(N, 3, h, w)`` DKL planes (display LUT, LMS, opponent axes)."""
    segments, affine = _dkl_constants(rgb.device, rgb.dtype)
    idx = (rgb * (255.0 / 16.0)).floor().clamp_(0, 15).long()
    # one row lookup (value, slope) per pixel: much faster than several advanced-indexing gathers
    seg = F.embedding(idx + 16 * torch.arange(3, device=rgb.device).view(1, 3, 1, 1), segments)
    lin = seg[..., 0] + (rgb - idx.to(rgb.dtype) * (16.0 / 255.0)) * seg[..., 1]
    return torch.einsum("ij,njhw->nihw", affine[:, :3], lin) - affine[:, 3].view(1, 3, 1, 1)


def _itti_color(rgb: Tensor, lum: Tensor) -> Tensor:
    r, g, b = rgb.unbind(1)
    lum = lum[:, 0]
    safe = torch.where(lum > 0, lum, torch.ones_like(lum))
    by = torch.where(lum > 0, (b - torch.minimum(r, g)).abs() / safe, torch.zeros_like(lum))
    rg = torch.where(lum > 0, (r - g).abs() / safe, torch.zeros_like(lum))
    return torch.stack([by, rg], 1)


@functools.lru_cache(maxsize=32)
def _distance_weights(h: int, w: int, sigma: float, device: torch.device, dtype: torch.dtype) -> Tensor:
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    pos = torch.stack([yy.flatten(), xx.flatten()], 1)
    d2 = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1)
    return torch.exp(-d2 / (2.0 * sigma**2)).to(device=device, dtype=dtype)


def graph_activation(maps: Tensor, sigma: float) -> Tensor:
    """GBVS activation (MATLAB ``graphsalapply``, algtype 2) of each ``(h, w)`` map, in closed form.

    The fully connected graph on the cells has weights ``w_ab = |M_a - M_b| exp(-d_ab^2 / (2 sigma^2))`` (d in cell
    units). The chain with column-normalised weights has, since w is symmetric, the equilibrium
    ``A_a = sum_b w_ab / sum_ab w_ab``: what MATLAB's power iteration converges to, without iterating. Constant
    maps (range ``<= 1e-6 max(1, max|M|)``) get zero activation.

    Args:
        maps: ``(..., h, w)``.
        sigma: the graph's spatial scale in cells.

    Returns:
        ``(..., h, w)`` activations, each map summing to 1 (or all zeros).
    """
    h, w = maps.shape[-2:]
    n = h * w
    flat = maps.reshape(-1, n)
    fw = _distance_weights(h, w, float(sigma), maps.device, maps.dtype)
    lo, hi = flat.amin(1), flat.amax(1)
    constant = (hi - lo) <= _CONSTANT_RTOL * torch.clamp(torch.maximum(hi.abs(), lo.abs()), min=1.0)
    degree = torch.zeros_like(flat)
    if maps.device.type == "cpu":
        # one map at a time keeps the n x n temporary in cache (much faster than one big broadcast)
        for k in range(flat.shape[0]):
            if not bool(constant[k]):
                m = flat[k]
                degree[k] = (m.view(n, 1) - m.view(1, n)).abs_().mul_(fw).sum(1)
    else:
        chunk = max(1, (1 << 26) // (n * n))
        for s in range(0, flat.shape[0], chunk):
            m = flat[s : s + chunk]
            degree[s : s + chunk] = ((m.unsqueeze(2) - m.unsqueeze(1)).abs_() * fw).sum(2)
    total = degree.sum(1, keepdim=True)
    act = torch.where(total > 0, degree / torch.where(total > 0, total, torch.ones_like(total)), 0.0)
    act = torch.where(constant.view(-1, 1), torch.zeros_like(act), act)
    return act.view_as(maps)


def _gaussian_blur(x: Tensor, sigma: float) -> Tensor:
    radius = _round_half_up(2.0 * sigma) if sigma > 0 else 0
    if radius < 1:
        return x
    t = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-(t**2) / (2.0 * sigma**2))
    k = (k / k.sum()).to(device=x.device, dtype=x.dtype)
    n = 2 * radius + 1
    y = x.reshape(-1, 1, *x.shape[-2:])
    y = F.conv2d(F.pad(y, (radius, radius, 0, 0), mode="replicate"), k.view(1, 1, 1, n))
    y = F.conv2d(F.pad(y, (0, 0, radius, radius), mode="replicate"), k.view(1, 1, n, 1))
    return y.view_as(x)


def _check_options(channels: str, levels: Sequence[int], map_size: int) -> tuple[str, tuple[int, ...]]:
    if not isinstance(channels, str) or not channels or any(c not in GBVS_CHANNELS for c in channels.upper()):
        raise ValueError(f"`channels` must be a non-empty string of letters from {GBVS_CHANNELS!r}; got {channels!r}")
    chans = "".join(dict.fromkeys(channels.upper()))
    lv = tuple(levels)
    if not lv or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in lv):
        raise ValueError(f"`levels` must be a non-empty sequence of pyramid levels >= 1; received {levels!r}")
    check_positive_int(map_size, "map_size")
    return chans, lv


def gbvs(
    images: Tensor,
    *,
    map_size: int = 32,
    channels: str = "DIO",
    levels: Sequence[int] = (2, 3, 4),
    sigma_frac_act: float = 0.15,
    blur_frac: float = 0.02,
) -> Tensor:
    """Graph-Based Visual Saliency with the MATLAB defaults, for a batch of RGB images.

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)`` RGB, float in [0, 1] or uint8, ``H, W >= 16``.
        map_size: longer side of the activation grid (24x32 for 4:3 images).
        channels: feature channels, letters from ``"CDIO"`` (default DKL colour, intensity, orientation).
        levels: pyramid levels the feature maps are taken from (1 = half resolution).
        sigma_frac_act: graph scale as a fraction of the mean grid side.
        blur_frac: final blur sigma as a fraction of the longer grid side.

    Returns:
        ``(B, H, W)`` saliency in [0, 1] on the input's device (all zeros for a constant image).

    Raises:
        ValueError: bad images (shape, dtype, range, a side below 16 px) or options.

    Example:
        >>> import torch
        >>> gbvs(torch.rand(2, 3, 60, 80)).shape
        torch.Size([2, 60, 80])
    """
    chans, lv = _check_options(channels, levels, map_size)
    x = check_images(images, "images", min_size=_MIN_SIDE, min_size_reason=" for GBVS")
    B, _, H, W = x.shape
    if B == 0:
        return x.new_zeros((0, H, W))
    h_m, w_m = saliency_map_size(H, W, map_size)
    lum = x.amax(1, keepdim=True)
    pyramid = torch.cat([x, lum], 1)
    feature_maps = []
    for level in range(1, max(lv) + 1):
        pyramid = subsample(pyramid)
        if level not in lv:
            continue
        rgb, lum_l = pyramid[:, :3], pyramid[:, 3:]
        maps = []
        if "C" in chans:
            maps.append(_itti_color(rgb, lum_l))
        if "D" in chans:
            maps.append(_dkl(rgb))
        if "I" in chans:
            maps.append(lum_l)
        if "O" in chans:
            maps.append(_orientation(lum_l))
        level_maps = torch.cat(maps, 1)
        feature_maps.append(_resize(level_maps, (h_m, w_m)))
    allmaps = torch.cat(feature_maps, 1)
    act = graph_activation(allmaps, sigma_frac_act * (h_m + w_m) / 2.0)
    # channel weights are all 1 and channel sums are not renormalised, so combining is a plain sum
    master = act.pow(1.5).sum(1)
    master = mat2gray(attenuate_borders(master, _FINAL_BORDER))
    master = mat2gray(_gaussian_blur(master, blur_frac * max(h_m, w_m)))
    return mat2gray(_resize(master, (H, W)))
