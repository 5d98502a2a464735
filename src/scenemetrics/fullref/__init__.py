"""Full-reference per-pixel maps and scores: SSIM, LPIPS and the absolute error, plus the SSIM and LPIPS of
published evaluation protocols (3DGS ``metrics.py``, NerfBaselines) so that numbers can sit next to their tables.

Functions take a render ``preds`` and its ground truth ``target`` (same shape, ``(B, 3, H, W)`` or ``(3, H, W)``,
float in [0, 1] or uint8). Maps are ``(B, H, W)``, scores ``(B,)``. The functions without a network
(:mod:`scenemetrics.fullref.functional`) import only torch.

Example:
    >>> import torch
    >>> import scenemetrics as sm
    >>> x = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    >>> sm.fullref.ssim_map(x, x).shape, sm.fullref.ssim(x, x).tolist()
    (torch.Size([1, 32, 32]), [1.0])
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "abs_error_map": "functional",
    "gaussian_window": "functional",
    "ssim": "functional",
    "ssim_3dgs": "functional",
    "ssim_map": "functional",
    "ssim_nerfbaselines": "functional",
    "NETS": "perceptual",
    "LPIPSNet": "perceptual",
    "load_lpips": "perceptual",
    "lpips": "perceptual",
    "lpips_3dgs": "perceptual",
    "lpips_map": "perceptual",
    "AbsErrorMap": "metric",
    "LPIPS3DGS": "metric",
    "LPIPSMap": "metric",
    "SSIM3DGS": "metric",
    "SSIMMap": "metric",
    "SSIMNerfBaselines": "metric",
}
_SUBMODULES = ("functional", "perceptual", "metric")

_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
__all__ = [name for name in _all if name in _EXPORTS]
