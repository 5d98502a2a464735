"""``gsplat.rasterization`` on the CPU for tests: gsplat's own pure-PyTorch projection and spherical harmonics, our
compositor for the pixels.

gsplat 1.4 / 1.5 have no CPU rasterizer: ``gsplat.rasterization`` and its "PyTorch" ``_rasterization`` both call the
CUDA tile intersection. What does run on the CPU is the reference code gsplat tests its kernels against
(``gsplat.cuda._torch_impl``): ``_quat_scale_to_covar_preci`` (3D covariances), ``_fully_fused_projection`` (EWA
projection, conics, depths, radii) and ``_spherical_harmonics``. Those are private names of gsplat, so this helper is
test-only; it handles both layouts of ``radii`` (gsplat 1.4: ``[C, N]``, 1.5: ``[C, N, 2]``) because nerfstudio pins
gsplat 1.4.0 while a plain install gets 1.5.x. The pixels come from :func:`scenemetrics.tiny_splat.composite` with
gsplat's alpha rules (clamp 0.999, skip below 1/255).
"""

from __future__ import annotations

import torch
from torch import Tensor

from scenemetrics.tiny_splat import GSPLAT_MAX_ALPHA, GSPLAT_MIN_ALPHA, composite

from .extras import need

need("gsplat")

from gsplat.cuda._torch_impl import (  # noqa: E402
    _fully_fused_projection,
    _quat_scale_to_covar_preci,
    _spherical_harmonics,
)

__all__ = ["gsplat_cpu_rasterization", "gsplat_projection"]


def gsplat_projection(
    means: Tensor, quats: Tensor, scales: Tensor, viewmats: Tensor, Ks: Tensor, width: int, height: int, **kwargs
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """gsplat's reference projection: ``(means2d [C, N, 2], conics [C, N, 3], depths [C, N], visible [C, N])``."""
    covars, _ = _quat_scale_to_covar_preci(quats, scales, True, False, False)
    radii, means2d, depths, conics, _ = _fully_fused_projection(means, covars, viewmats, Ks, width, height, **kwargs)
    visible = radii > 0 if radii.dim() == 2 else (radii > 0).all(-1)
    return means2d, conics, depths, visible


def gsplat_cpu_rasterization(
    means: Tensor,
    quats: Tensor,
    scales: Tensor,
    opacities: Tensor,
    colors: Tensor,
    viewmats: Tensor,
    Ks: Tensor,
    width: int,
    height: int,
    near_plane: float = 0.01,
    far_plane: float = 1e10,
    eps2d: float = 0.3,
    sh_degree: int | None = None,
    backgrounds: Tensor | None = None,
) -> tuple[Tensor, Tensor, dict]:
    """The arguments and outputs of ``gsplat.rasterization`` (RGB, classic, pinhole), computed on any device."""
    means2d, conics, depths, visible = gsplat_projection(
        means, quats, scales, viewmats, Ks, width, height, eps2d=eps2d, near_plane=near_plane, far_plane=far_plane
    )
    renders, alphas = [], []
    for cam in range(viewmats.shape[0]):
        if sh_degree is None:
            rgb = colors
        else:  # as gsplat.rasterization: SH towards the camera centre, then clamp_min(+0.5, 0)
            campos = torch.linalg.inv(viewmats[cam])[:3, 3]
            rgb = torch.clamp_min(_spherical_harmonics(sh_degree, means - campos, colors) + 0.5, 0.0)
        image, alpha = composite(
            means2d[cam], conics[cam], opacities, rgb, depths[cam], width, height,
            background=None if backgrounds is None else backgrounds[cam], visible=visible[cam],
            max_alpha=GSPLAT_MAX_ALPHA, min_alpha=GSPLAT_MIN_ALPHA,
        )  # fmt: skip
        renders.append(image)
        alphas.append(alpha)
    return torch.stack(renders), torch.stack(alphas), {"means2d": means2d, "conics": conics, "depths": depths}
