"""Full-reference maps and scores without a network: SSIM (three published definitions) and the absolute error.

Every function takes ``preds`` and ``target`` of the same shape under the one input rule of :mod:`scenemetrics.image`
(``(B, 3, H, W)`` or ``(3, H, W)``, float in [0, 1] or uint8) and returns one value per image, or one map per image
averaged over the three channels. This module imports only torch (not torchmetrics), so it is cheap to import.

The three SSIM definitions share the Gaussian window of Wang et al. (11 taps, sigma 1.5, ``C1 = (0.01 L)^2``,
``C2 = (0.03 L)^2``) and differ at the border and in clipping:

| function | border | mean over | as computed by |
|---|---|---|---|
| `ssim_map`, `ssim` | reflect padding by 5 ("same") | every pixel | torchmetrics >= 1.4.2 |
| `ssim_3dgs` | zero padding by 5 ("same") | every pixel | 3DGS `metrics.py` |
| `ssim_nerfbaselines` | none ("valid"), variances clipped | the `(H-10) x (W-10)` inner positions | NerfBaselines |

The Gaussian filter is separable, so it runs as two 1-D passes (11 multiply-adds per pixel and pass) instead of a
full 11 x 11 convolution (121): the same numbers, several times faster.

Example:
    >>> import torch
    >>> from scenemetrics.fullref import ssim_map, ssim_3dgs, ssim_nerfbaselines, abs_error_map
    >>> preds = torch.rand(2, 3, 32, 48, generator=torch.Generator().manual_seed(0))
    >>> ssim_map(preds, preds).shape, float(ssim_map(preds, preds).min())
    (torch.Size([2, 32, 48]), 1.0)
    >>> ssim_3dgs(preds, preds).tolist(), ssim_nerfbaselines(preds, preds).tolist()
    ([1.0, 1.0], [1.0, 1.0])
    >>> float(abs_error_map(preds, 1 - preds).mean()) == float((2 * preds - 1).abs().mean())
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from scenemetrics.image import check_images

__all__ = [
    "GAUSSIAN_SIGMA",
    "GAUSSIAN_TAPS",
    "abs_error_map",
    "check_data_range",
    "check_pair",
    "gaussian_window",
    "ssim",
    "ssim_3dgs",
    "ssim_map",
    "ssim_nerfbaselines",
]

GAUSSIAN_TAPS = 11
"""Taps of the SSIM Gaussian window (torchmetrics derives it from sigma as ``2 * int(3.5 sigma + 0.5) + 1``)."""
GAUSSIAN_SIGMA = 1.5
"""Standard deviation of the SSIM Gaussian window, in pixels."""
_RADIUS = GAUSSIAN_TAPS // 2
_K1, _K2 = 0.01, 0.03
# dm_pix (and NerfBaselines' copy) clip the local variances to float32's machine epsilon squared
_DMPIX_EPSILON = float(torch.finfo(torch.float32).eps) ** 2


def check_pair(
    preds: Tensor, target: Tensor, *, min_size: int | None = None, min_size_reason: str = "", dtype=torch.float32
) -> tuple[Tensor, Tensor]:
    """Check a prediction and its ground truth (the input rule of :mod:`scenemetrics.image`, same shape and device).

    Args:
        preds, target: ``(B, 3, H, W)`` or ``(3, H, W)``, float in [0, 1] or uint8.
        min_size: smallest side accepted (``None``: any).
        min_size_reason: why, appended to the error.
        dtype: the floating dtype returned.

    Returns:
        Both as contiguous ``(B, 3, H, W)`` tensors of ``dtype``.

    Raises:
        ValueError: a bad image (see :func:`scenemetrics.image.check_images`), or the two differ in shape or device.
    """
    p = check_images(preds, "preds", min_size=min_size, min_size_reason=min_size_reason, dtype=dtype)
    t = check_images(target, "target", min_size=min_size, min_size_reason=min_size_reason, dtype=dtype)
    if p.shape != t.shape:
        raise ValueError(
            f"`preds` and `target` must have the same shape (a render and its ground truth); received preds "
            f"{tuple(p.shape)} and target {tuple(t.shape)}"
        )
    if p.device != t.device:
        raise ValueError(f"`preds` and `target` must be on the same device; received {p.device} and {t.device}")
    return p, t


def gaussian_window(dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> Tensor:
    """The normalised 1-D SSIM window: ``exp(-d^2 / (2 sigma^2))`` for ``d = -5..5``, divided by its sum.

    Its outer product with itself is the 11 x 11 window of torchmetrics, 3DGS and dm_pix.

    Example:
        >>> w = gaussian_window()
        >>> w.shape, round(float(w.sum()), 12), round(float(w[5]), 6)
        (torch.Size([11]), 1.0, 0.266012)
    """
    d = torch.arange(-_RADIUS, _RADIUS + 1, dtype=torch.float64)
    w = torch.exp(-0.5 * (d / GAUSSIAN_SIGMA) ** 2)
    return (w / w.sum()).to(dtype=dtype, device=device)


def _filter_valid(x: Tensor, taps: list[float]) -> Tensor:
    """Separable Gaussian filter of the last two dimensions, "valid" positions only (each side shrinks by 10).

    Each 1-D pass is a sum of shifted slices (a multiply-add per tap over contiguous rows), which on CPUs and GPUs is
    far cheaper than a grouped 2-D convolution with an 11 x 11 kernel. The in-place adds act on fresh tensors, so
    autograd follows them.
    """
    w = x.shape[-1] - 2 * _RADIUS
    rows = x[..., :w] * taps[0]
    for k in range(1, len(taps)):
        rows.add_(x[..., k : k + w], alpha=taps[k])
    h = x.shape[-2] - 2 * _RADIUS
    out = rows[..., :h, :] * taps[0]
    for k in range(1, len(taps)):
        out.add_(rows[..., k : k + h, :], alpha=taps[k])
    return out


def _pad(p: Tensor, t: Tensor, padding: str | None) -> tuple[Tensor, Tensor]:
    """Both images padded by the window's radius on every side (``"reflect"`` or ``"zeros"``; ``None``: as they are)."""
    if padding is None:
        return p, t
    pad = (_RADIUS,) * 4
    mode = "reflect" if padding == "reflect" else "constant"
    return torch.nn.functional.pad(p, pad, mode=mode), torch.nn.functional.pad(t, pad, mode=mode)


def _moments(
    p: Tensor, t: Tensor, filter_dtype: torch.dtype | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Local Gaussian means of ``p``, ``t``, ``p^2``, ``t^2`` and ``p t`` at the "valid" positions of (padded) images.

    The products are formed in the inputs' dtype; ``filter_dtype`` (default: the same) is the dtype of the filter.
    """
    taps = gaussian_window().tolist()
    dtype = filter_dtype or p.dtype
    return (
        _filter_valid(p.to(dtype), taps),
        _filter_valid(t.to(dtype), taps),
        _filter_valid((p * p).to(dtype), taps),
        _filter_valid((t * t).to(dtype), taps),
        _filter_valid((p * t).to(dtype), taps),
    )


_STRIP_BYTES = 2**19
"""About how much of each filtered map one CPU strip holds (512 KiB, in the filter's dtype)."""


def _per_pixel(
    p: Tensor,
    t: Tensor,
    padding: str | None,
    formula: Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor],
    filter_dtype: torch.dtype | None = None,
) -> Tensor:
    """``formula(mu_p, mu_t, e_pp, e_tt, e_pt)`` at every output position: ``(B, 3, H', W')``.

    On the CPU the images are processed in horizontal strips of rows (each with the window's 10 extra rows) small
    enough for the dozens of passes of the filter and the formula to stay in the processor's cache: about 2.5 times
    faster at 400 x 600 than whole images, and every value the same to the bit (each output pixel goes through
    exactly the same operations). Other devices, and images that need a gradient (whose halo rows would add up their
    gradients in another order), take the whole images at once.
    """
    p, t = _pad(p, t, padding)
    out_rows = p.shape[-2] - 2 * _RADIUS
    needs_grad = torch.is_grad_enabled() and (p.requires_grad or t.requires_grad)
    if p.device.type != "cpu" or needs_grad or out_rows <= 0:
        return formula(*_moments(p, t, filter_dtype))
    itemsize = torch.empty((), dtype=filter_dtype or p.dtype).element_size()
    per_row = max(1, p.shape[0] * p.shape[1] * p.shape[-1] * itemsize)
    rows = max(8, _STRIP_BYTES // per_row)
    if rows >= out_rows:
        return formula(*_moments(p, t, filter_dtype))
    strips = [
        formula(*_moments(p[..., a : a + rows + 2 * _RADIUS, :], t[..., a : a + rows + 2 * _RADIUS, :], filter_dtype))
        for a in range(0, out_rows, rows)
    ]
    return torch.cat(strips, dim=-2)


def check_data_range(data_range: float) -> float:
    """``data_range`` as a float; a ``ValueError`` naming it unless it is a positive finite number."""
    if isinstance(data_range, bool) or not isinstance(data_range, (int, float)):
        raise ValueError(f"`data_range` must be a positive number; received {data_range!r}")
    if not (math.isfinite(data_range) and data_range > 0):
        raise ValueError(f"`data_range` must be a positive finite number; received {data_range!r}")
    return float(data_range)


_REFLECT_REASON = " (SSIM pads each side by reflecting 5 pixels, the radius of its 11-pixel window, which needs 6)"


def _ssim_channels(preds: Tensor, target: Tensor, data_range: float) -> Tensor:
    data_range = check_data_range(data_range)
    p, t = check_pair(preds, target, min_size=_RADIUS + 1, min_size_reason=_REFLECT_REASON)
    c1, c2 = (_K1 * data_range) ** 2, (_K2 * data_range) ** 2

    def formula(mu_p: Tensor, mu_t: Tensor, e_pp: Tensor, e_tt: Tensor, e_pt: Tensor) -> Tensor:
        mu_pp, mu_tt, mu_pt = mu_p * mu_p, mu_t * mu_t, mu_p * mu_t
        # torchmetrics clamps the variances at zero (float32 rounding can make them slightly negative), not the
        # covariance
        var_p = torch.clamp(e_pp - mu_pp, min=0.0)
        var_t = torch.clamp(e_tt - mu_tt, min=0.0)
        cov = e_pt - mu_pt
        return ((2 * mu_pt + c1) * (2 * cov + c2)) / ((mu_pp + mu_tt + c1) * (var_p + var_t + c2))

    return _per_pixel(p, t, "reflect", formula)


def ssim_map(preds: Tensor, target: Tensor, *, data_range: float = 1.0) -> Tensor:
    """Per-pixel SSIM as torchmetrics computes it, averaged over the three channels.

    Definition (torchmetrics >= 1.4.2, ``structural_similarity_index_measure(preds, target, data_range=data_range,
    return_full_image=True)``): both images are padded by 5 pixels on every side by reflection (``reflect``: the edge
    pixel is not repeated); the local means, variances and covariance come from an 11 x 11 Gaussian window
    (sigma 1.5) over the padded images; the variances are clamped at zero; ``C1 = (0.01 data_range)^2`` and
    ``C2 = (0.03 data_range)^2``. The map has the images' size, so its mean over pixels (and channels) is torchmetrics'
    SSIM. Computed in float32, as torchmetrics does; differentiable.

    Args:
        preds: renders ``(B, 3, H, W)`` or ``(3, H, W)``, float in [0, 1] or uint8.
        target: ground truth of the same shape.
        data_range: the ``L`` of ``C1``, ``C2`` (the inputs are in [0, 1], so 1.0 unless you want another constant).

    Returns:
        ``(B, H, W)`` float32, 1 where the images agree (``(0, H, W)`` for an empty batch).

    Raises:
        ValueError: a bad image, different shapes, a side below 6 pixels (reflect padding by 5 needs 6; the message
            names the argument), or ``data_range`` not a positive finite number.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> target = torch.rand(1, 3, 24, 24, generator=g)
        >>> m = ssim_map(target * 0.5, target)
        >>> m.shape, bool((m < 1).all())
        (torch.Size([1, 24, 24]), True)
    """
    return _ssim_channels(preds, target, data_range).mean(dim=1)


def ssim(preds: Tensor, target: Tensor, *, data_range: float = 1.0) -> Tensor:
    """SSIM per image as torchmetrics computes it: the mean of :func:`ssim_map` (same definition, same checks).

    Returns:
        ``(B,)`` float32.

    Example:
        >>> import torch
        >>> x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
        >>> ssim(x, x).tolist()
        [1.0, 1.0]
    """
    s = _ssim_channels(preds, target, data_range)
    return s.mean(dim=(1, 2, 3))


def ssim_3dgs(preds: Tensor, target: Tensor) -> Tensor:
    """SSIM per image as the original 3D Gaussian Splatting ``metrics.py`` reports it (``utils/loss_utils.py``).

    Definition: the 11 x 11 Gaussian window (sigma 1.5) applied as a "same" convolution with **zero** padding (pixels
    outside the image count as black, so the local means and variances near the border are pulled towards 0); no
    clamping of the variances; ``C1 = 0.01^2``, ``C2 = 0.03^2`` (data range 1); the mean of the map over every pixel
    and channel. 3DGS scores one image at a time, so this is one value per image. Computed in float32 (as 3DGS does);
    any size of at least 1 x 1 works.

    Returns:
        ``(B,)`` float32.

    Example:
        >>> import torch
        >>> target = torch.rand(1, 3, 20, 20, generator=torch.Generator().manual_seed(2))
        >>> bool(ssim_3dgs(target * 0.9, target) < 1), ssim_3dgs(target, target).tolist()
        (True, [1.0])
    """
    p, t = check_pair(preds, target)
    c1, c2 = _K1**2, _K2**2

    def formula(mu_p: Tensor, mu_t: Tensor, e_pp: Tensor, e_tt: Tensor, e_pt: Tensor) -> Tensor:
        mu_pp, mu_tt, mu_pt = mu_p * mu_p, mu_t * mu_t, mu_p * mu_t
        return ((2 * mu_pt + c1) * (2 * (e_pt - mu_pt) + c2)) / (
            (mu_pp + mu_tt + c1) * ((e_pp - mu_pp) + (e_tt - mu_tt) + c2)
        )

    return _per_pixel(p, t, "zeros", formula).mean(dim=(1, 2, 3))


_VALID_REASON = " (this SSIM averages over the positions where the 11-pixel window lies inside the image)"


def ssim_nerfbaselines(preds: Tensor, target: Tensor) -> Tensor:
    """SSIM per image as NerfBaselines evaluates it (``nerfbaselines.metrics.ssim``, which equals ``dm_pix.ssim``).

    Definition: the separable 11-tap Gaussian filter (sigma 1.5) in "valid" mode (no padding: only the
    ``(H - 10) x (W - 10)`` positions where the window lies inside the image); the local variances clipped below at
    float32's machine epsilon squared and the covariance clipped to ``[-sqrt(var_p var_t), sqrt(var_p var_t)]``;
    ``C1 = 0.01^2``, ``C2 = 0.03^2`` (``max_val`` 1); the mean over the valid positions and the channels. It is also
    the SSIM of google-research/multinerf (mip-NeRF 360, Ref-NeRF, RawNeRF), which calls ``dm_pix.ssim`` (in
    float32 there). The images are read in float32 (and so are their products ``p^2``, ``t^2``, ``p t``) and
    filtered in float64, as NerfBaselines 1.2.x does (its NumPy filter promotes the float32 images and products to
    float64).

    Returns:
        ``(B,)`` float64.

    Raises:
        ValueError: a side below 11 pixels (no valid position), or a bad image.

    Example:
        >>> import torch
        >>> target = torch.rand(1, 3, 20, 20, generator=torch.Generator().manual_seed(3))
        >>> ssim_nerfbaselines(target, target).tolist()
        [1.0]
    """
    p, t = check_pair(preds, target, min_size=GAUSSIAN_TAPS, min_size_reason=_VALID_REASON)
    c1, c2 = _K1**2, _K2**2

    def formula(mu_p: Tensor, mu_t: Tensor, e_pp: Tensor, e_tt: Tensor, e_pt: Tensor) -> Tensor:
        mu_pp, mu_tt, mu_pt = mu_p * mu_p, mu_t * mu_t, mu_p * mu_t
        var_p = torch.clamp(e_pp - mu_pp, min=_DMPIX_EPSILON)
        var_t = torch.clamp(e_tt - mu_tt, min=_DMPIX_EPSILON)
        cov = e_pt - mu_pt
        cov = torch.sign(cov) * torch.minimum(torch.sqrt(var_p * var_t), cov.abs())
        return ((2 * mu_pt + c1) * (2 * cov + c2)) / ((mu_pp + mu_tt + c1) * (var_p + var_t + c2))

    # as NerfBaselines: images and their products in float32 (uint8 / 255 in float32), the filter in float64
    return _per_pixel(p, t, None, formula, filter_dtype=torch.float64).mean(dim=(1, 2, 3))


def abs_error_map(preds: Tensor, target: Tensor) -> Tensor:
    """Per-pixel absolute error, averaged over the three channels: ``mean_c |preds - target|``.

    Its mean over pixels is the mean absolute error (NerfBaselines' ``mae``). Differentiable.

    Returns:
        ``(B, H, W)`` float32 in [0, 1], 0 where the images agree.

    Example:
        >>> import torch
        >>> abs_error_map(torch.zeros(1, 3, 2, 2), torch.ones(1, 3, 2, 2)).tolist()
        [[[1.0, 1.0], [1.0, 1.0]]]
    """
    p, t = check_pair(preds, target)
    return (p - t).abs().mean(dim=1)
