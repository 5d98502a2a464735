"""A tiny differentiable Gaussian-splat renderer in pure PyTorch: CPU demos, examples and tests, no CUDA needed.

Not a replacement for a real rasterizer (memory is dense, ``O(G·H·W)``: fine for ``G ≤ 1024`` Gaussians at
``≤ 64×64`` pixels), but close enough to one that the training-loop examples of the callbacks run anywhere and switch
to ``gsplat.rasterization`` with a flag. Written from the 3D Gaussian Splatting equations (Kerbl et al. 2023) with
gsplat's conventions and post-activation inputs:

* camera-space means ``x_c = R x + t`` from a world->camera ``viewmat`` (OpenCV camera: x right, y down, z forward);
* 3D covariance ``Σ = R(q) S Sᵀ R(q)ᵀ`` from the normalised ``wxyz`` quaternion and the scales;
* 2D covariance ``J W Σ Wᵀ Jᵀ + eps2d·I`` with the perspective Jacobian ``J`` taken at the camera-space mean, its
  ``x/z`` and ``y/z`` clamped to the view frustum widened by 30 % (as 3DGS and gsplat do, so that Gaussians far
  off-screen do not blow up); the conic is its inverse, stored as the upper triangle ``(a, b, c)``;
* ``α = o · exp(-½ (a dx² + c dy²) - b dx dy)`` at pixel centres (``+0.5``), clamped to ``≤ max_alpha``, zero behind
  the near plane (and, optionally, below ``min_alpha``);
* front-to-back compositing over depth-sorted Gaussians: ``C = Σ c_i α_i T_i + T_final · background`` with the
  exclusive transmittance ``T_i = Π_{j<i} (1 - α_j)``;
* view-dependent colour from real spherical harmonics of degree ≤ 3 (:func:`eval_sh`), ``clamp_min(sh + 0.5, 0)``.

:func:`render_gaussians` renders one camera to ``(3, H, W)`` with the original 3DGS alpha clamp (0.99);
:func:`rasterization` takes the arguments of ``gsplat.rasterization`` that a simple training loop uses and returns
what it returns (``[C, H, W, D]`` colours, ``[C, H, W, 1]`` alphas, a dict), with gsplat's alpha rules (clamped to
0.999, below 1/255 skipped, Gaussians culled outside their 3.33-sigma box).

Example:
    >>> import torch
    >>> from scenemetrics.tiny_splat import look_at, intrinsics, render_gaussians
    >>> means = torch.zeros(1, 3); quats = torch.tensor([[1.0, 0, 0, 0]]); scales = torch.full((1, 3), 0.2)
    >>> img = render_gaussians(means, quats, scales, torch.tensor([0.9]), torch.tensor([[1.0, 0, 0]]),
    ...                        look_at((3, 0, 0)), intrinsics(16, 16), 16, 16)
    >>> img.shape, round(float(img[1, 8, 8]), 2)  # green = 1 - alpha near the red Gaussian's centre
    (torch.Size([3, 16, 16]), 0.23)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "Projection",
    "SplatScene",
    "composite",
    "eval_sh",
    "intrinsics",
    "look_at",
    "make_splat_scene",
    "orbit_viewmats",
    "project",
    "quat_to_rotmat",
    "random_gaussians",
    "rasterization",
    "render_gaussians",
]

GSPLAT_MAX_ALPHA = 0.999
"""gsplat's (and :func:`rasterization`'s) upper clamp of a Gaussian's alpha at a pixel."""
GSPLAT_MIN_ALPHA = 1.0 / 255.0
"""gsplat skips a Gaussian at a pixel where its alpha is below this."""
CULL_SIGMAS = 3.33
""":func:`rasterization` culls a Gaussian whose box of this many standard deviations misses the image (gsplat 1.5)."""

# real spherical harmonics, normalisation constants of each degree (3DGS / gsplat sign convention, see eval_sh)
_SH_C0 = math.sqrt(1 / (4 * math.pi))
_SH_C1 = math.sqrt(3 / (4 * math.pi))
_SH_C2 = (math.sqrt(15 / (4 * math.pi)), math.sqrt(5 / (16 * math.pi)), math.sqrt(15 / (16 * math.pi)))
_SH_C3 = (
    math.sqrt(35 / (32 * math.pi)),
    math.sqrt(105 / (4 * math.pi)),
    math.sqrt(21 / (32 * math.pi)),
    math.sqrt(7 / (16 * math.pi)),
    math.sqrt(105 / (16 * math.pi)),
)


def quat_to_rotmat(quats: Tensor) -> Tensor:
    """``(G, 4)`` quaternions ``wxyz`` (any norm) -> ``(G, 3, 3)`` rotation matrices."""
    w, x, y, z = F.normalize(quats, dim=-1).unbind(-1)
    return torch.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ],
        dim=-1,
    ).reshape(-1, 3, 3)


class Projection(NamedTuple):
    """Gaussians projected to one camera (gsplat's names and layouts).

    Attributes:
        means2d: ``(G, 2)`` pixel coordinates of the projected centres.
        conics: ``(G, 3)`` upper triangle ``(a, b, c)`` of the inverse 2D covariance.
        depths: ``(G,)`` camera-space z.
        radii: ``(G, 2)`` int half-sizes (pixels) of each Gaussian's box; ``0`` marks a culled Gaussian.
    """

    means2d: Tensor
    conics: Tensor
    depths: Tensor
    radii: Tensor


def project(
    means: Tensor,
    quats: Tensor,
    scales: Tensor,
    viewmat: Tensor,
    K: Tensor,
    width: int,
    height: int,
    *,
    eps2d: float = 0.3,
    near_plane: float = 0.01,
    far_plane: float = 1e10,
    cull_sigmas: float | None = CULL_SIGMAS,
) -> Projection:
    """EWA projection of 3D Gaussians to one pinhole camera (differentiable).

    Args:
        means: ``(G, 3)`` world-space centres.
        quats: ``(G, 4)`` ``wxyz`` rotations (normalised here).
        scales: ``(G, 3)`` positive standard deviations.
        viewmat: ``(4, 4)`` world->camera (OpenCV camera).
        K: ``(3, 3)`` intrinsics.
        width: image width in pixels.
        height: image height in pixels.
        eps2d: added to the 2D covariance's diagonal (the 3DGS low-pass filter).
        near_plane: Gaussians not beyond this depth are culled.
        far_plane: Gaussians not nearer than this depth are culled.
        cull_sigmas: also cull Gaussians whose box of ``cull_sigmas`` standard deviations per axis misses the image;
            ``None`` keeps them (only the depth range culls).

    Returns:
        a :class:`Projection`; ``radii`` is 0 for culled Gaussians (1 for the others when ``cull_sigmas`` is None).
    """
    dtype, device = means.dtype, means.device
    viewmat = viewmat.to(device, dtype)
    K = K.to(device, dtype)
    R_v, t_v = viewmat[:3, :3], viewmat[:3, 3]
    p = means @ R_v.T + t_v  # (G, 3) camera space
    x, y, z = p.unbind(-1)
    in_depth = (z > near_plane) & (z < far_plane)
    z_safe = torch.where(in_depth, z, torch.ones_like(z))

    M = quat_to_rotmat(quats.to(dtype)) * scales.to(dtype).unsqueeze(-2)  # R S
    cov_cam = R_v @ (M @ M.transpose(-1, -2)) @ R_v.T  # W R S Sᵀ Rᵀ Wᵀ

    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    # the Jacobian is evaluated at the centre clamped to the frustum widened by 30 % of its half-angle
    tan_x, tan_y = 0.5 * width / fx, 0.5 * height / fy
    tx = z_safe * torch.clamp(x / z_safe, min=-(cx / fx + 0.3 * tan_x), max=(width - cx) / fx + 0.3 * tan_x)
    ty = z_safe * torch.clamp(y / z_safe, min=-(cy / fy + 0.3 * tan_y), max=(height - cy) / fy + 0.3 * tan_y)
    zeros = torch.zeros_like(z_safe)
    J = torch.stack(
        [
            torch.stack([fx / z_safe, zeros, -fx * tx / z_safe**2], -1),
            torch.stack([zeros, fy / z_safe, -fy * ty / z_safe**2], -1),
        ],
        dim=-2,
    )  # (G, 2, 3)
    cov2 = J @ cov_cam @ J.transpose(-1, -2) + eps2d * torch.eye(2, dtype=dtype, device=device)
    a, b, c = cov2[:, 0, 0], 0.5 * (cov2[:, 0, 1] + cov2[:, 1, 0]), cov2[:, 1, 1]
    det = (a * c - b * b).clamp(min=1e-10)
    conics = torch.stack([c / det, -b / det, a / det], dim=-1)
    means2d = torch.stack([fx * x / z_safe + cx, fy * y / z_safe + cy], dim=-1)

    keep = in_depth
    if cull_sigmas is None:
        radii = torch.ones(p.shape[0], 2, dtype=torch.int32, device=device)
    else:
        half = torch.ceil(cull_sigmas * torch.stack([a, c], dim=-1).sqrt()).detach()
        u, v = means2d.detach().unbind(-1)
        keep = keep & (u + half[:, 0] > 0) & (u - half[:, 0] < width) & (v + half[:, 1] > 0) & (v - half[:, 1] < height)
        radii = half.to(torch.int32)
    radii = radii * keep.unsqueeze(-1).to(torch.int32)
    return Projection(means2d, conics, z, radii)


def composite(
    means2d: Tensor,
    conics: Tensor,
    opacities: Tensor,
    colors: Tensor,
    depths: Tensor,
    width: int,
    height: int,
    *,
    background: Sequence[float] | Tensor | None = None,
    visible: Tensor | None = None,
    max_alpha: float = 0.99,
    min_alpha: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """Alpha-composite projected 2D Gaussians front to back at every pixel centre (dense, differentiable).

    Args:
        means2d: ``(G, 2)`` pixel coordinates of the centres.
        conics: ``(G, 3)`` upper triangle ``(a, b, c)`` of the inverse 2D covariances.
        opacities: ``(G,)`` in ``(0, 1)``.
        colors: ``(G, D)`` colours (any number of channels).
        depths: ``(G,)`` sort keys (camera-space z): nearest first.
        width: image width in pixels.
        height: image height in pixels.
        background: ``D`` values behind the Gaussians (default: none, i.e. black).
        visible: ``(G,)`` bool; Gaussians marked False contribute nothing.
        max_alpha: upper clamp of a Gaussian's alpha at a pixel (0.99 in 3DGS, 0.999 in gsplat).
        min_alpha: alphas below this are dropped (gsplat: 1/255).

    Returns:
        ``(colors (H, W, D), alphas (H, W, 1))``: the composite and its accumulated opacity ``1 - T_final``.
    """
    dtype, device = means2d.dtype, means2d.device
    num, channels = colors.shape
    px = torch.arange(width, dtype=dtype, device=device) + 0.5
    py = torch.arange(height, dtype=dtype, device=device) + 0.5
    dx = px.view(1, 1, -1) - means2d[:, 0].view(-1, 1, 1)  # (G, 1, W)
    dy = py.view(1, -1, 1) - means2d[:, 1].view(-1, 1, 1)  # (G, H, 1)
    a, b, c = (conics[:, k].view(-1, 1, 1) for k in range(3))
    sigma = 0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
    alpha = (opacities.to(dtype).view(-1, 1, 1) * torch.exp(-sigma)).clamp(max=max_alpha)
    keep = sigma >= 0
    if min_alpha > 0:
        keep = keep & (alpha >= min_alpha)
    if visible is not None:
        keep = keep & visible.view(-1, 1, 1)
    alpha = alpha * keep.to(dtype)  # (G, H, W)

    order = torch.argsort(depths.detach())
    alpha = alpha[order]
    trans = torch.cumprod(1.0 - alpha, dim=0)
    trans_excl = torch.cat([torch.ones_like(trans[:1]), trans[:-1]], dim=0)
    weights = alpha * trans_excl
    image = torch.einsum("ghw,gc->hwc", weights, colors.to(dtype)[order])
    final = trans[-1] if num else torch.ones(height, width, dtype=dtype, device=device)
    if background is not None:
        bg = torch.as_tensor(background, dtype=dtype, device=device).view(1, 1, channels)
        image = image + final.unsqueeze(-1) * bg
    return image, (1.0 - final).unsqueeze(-1)


def render_gaussians(
    means: Tensor,
    quats: Tensor,
    scales: Tensor,
    opacities: Tensor,
    colors: Tensor,
    viewmat: Tensor,
    K: Tensor,
    width: int,
    height: int,
    background: Sequence[float] | Tensor = (1.0, 1.0, 1.0),
    eps2d: float = 0.3,
    near_plane: float = 0.01,
) -> Tensor:
    """Render ``G`` 3D Gaussians to a ``(3, height, width)`` image (differentiable w.r.t. every tensor input).

    Every Gaussian in front of the near plane is composited (no culling by screen extent), alpha clamped to 0.99 as
    in the original 3DGS rasterizer.

    Args:
        means: ``(G, 3)`` world-space centres.
        quats: ``(G, 4)`` rotations as ``wxyz`` quaternions (normalised here).
        scales: ``(G, 3)`` positive standard deviations along the Gaussian's axes.
        opacities: ``(G,)`` in ``(0, 1)``.
        colors: ``(G, 3)`` RGB in ``[0, 1]``.
        viewmat: ``(4, 4)`` world->camera transform, OpenCV camera (x right, y down, z forward).
        K: ``(3, 3)`` pinhole intrinsics.
        width: image width in pixels.
        height: image height in pixels.
        background: RGB colour behind the Gaussians.
        eps2d: added to the 2D covariance's diagonal (anti-aliasing low-pass, as in 3DGS / gsplat).
        near_plane: Gaussians whose camera-space depth is not beyond this contribute nothing.

    Returns:
        ``(3, height, width)`` image in the dtype of ``means``.
    """
    proj = project(
        means, quats, scales, viewmat, K, width, height, eps2d=eps2d, near_plane=near_plane, cull_sigmas=None
    )
    image, _ = composite(
        proj.means2d,
        proj.conics,
        opacities,
        colors,
        proj.depths,
        width,
        height,
        background=background,
        visible=proj.radii[:, 0] > 0,
    )
    return image.permute(2, 0, 1)


def eval_sh(degree: int, dirs: Tensor, coeffs: Tensor) -> Tensor:
    """Colour from real spherical-harmonic coefficients: ``Σ_k coeffs[..., k, :] · Y_k(dirs)``, ``(degree+1)²`` bases.

    The basis order and signs are those of 3DGS and gsplat (degree 1: ``-y, z, -x`` times ``sqrt(3/(4π))``; ...).

    Args:
        degree: 0 to 3.
        dirs: ``(..., 3)`` directions (normalised here), e.g. Gaussian centre minus camera centre.
        coeffs: ``(..., K, 3)`` coefficients with ``K ≥ (degree + 1)²``.

    Returns:
        ``(..., 3)`` (without gsplat's ``+ 0.5`` offset: :func:`rasterization` adds it).

    Raises:
        ValueError: ``degree`` outside 0..3 or too few coefficients.

    Example:
        >>> import torch
        >>> coeffs = torch.zeros(1, 4, 3); coeffs[0, 2] = 1.0  # the z basis of degree 1
        >>> eval_sh(1, torch.tensor([[0.0, 0.0, 2.0]]), coeffs)  # sqrt(3 / (4 pi)) along +z
        tensor([[0.4886, 0.4886, 0.4886]])
    """
    if degree not in (0, 1, 2, 3):
        raise ValueError(f"`degree` must be 0, 1, 2 or 3; received {degree!r}")
    if coeffs.shape[-2] < (degree + 1) ** 2:
        raise ValueError(
            f"`coeffs` needs at least {(degree + 1) ** 2} coefficients for degree {degree}; got {coeffs.shape}"
        )
    bases = [torch.full_like(dirs[..., 0], _SH_C0)]
    if degree >= 1:
        x, y, z = F.normalize(dirs, dim=-1).unbind(-1)
        bases += [-_SH_C1 * y, _SH_C1 * z, -_SH_C1 * x]
    if degree >= 2:
        xx, yy, zz = x * x, y * y, z * z
        c0, c1, c2 = _SH_C2
        bases += [c0 * x * y, -c0 * y * z, c1 * (2 * zz - xx - yy), -c0 * x * z, c2 * (xx - yy)]
    if degree >= 3:
        d0, d1, d2, d3, d4 = _SH_C3
        bases += [
            -d0 * y * (3 * xx - yy),
            d1 * x * y * z,
            -d2 * y * (4 * zz - xx - yy),
            d3 * z * (2 * zz - 3 * xx - 3 * yy),
            -d2 * x * (4 * zz - xx - yy),
            d4 * z * (xx - yy),
            -d0 * x * (xx - 3 * yy),
        ]
    basis = torch.stack(bases, dim=-1)  # (..., n)
    return (basis.unsqueeze(-1) * coeffs[..., : basis.shape[-1], :]).sum(dim=-2)


def rasterization(
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
) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """The part of ``gsplat.rasterization`` a simple training loop uses, on any device (dense; small scenes only).

    Same arguments, conventions and outputs as ``gsplat.rasterization(means, quats, scales, opacities, colors,
    viewmats, Ks, width, height, near_plane=, far_plane=, eps2d=, sh_degree=, backgrounds=)`` with its defaults
    (``render_mode="RGB"``, ``rasterize_mode="classic"``, pinhole cameras): with ``sh_degree`` set, ``colors`` are
    ``(G, K, 3)`` SH coefficients evaluated towards each camera centre, ``clamp_min(sh + 0.5, 0)``; else ``(G, D)``
    post-activation colours. Alphas are clamped to 0.999, those below 1/255 skipped, and Gaussians whose 3.33-sigma
    box misses the image culled, as in gsplat 1.5.

    Args:
        means: ``(G, 3)``. quats: ``(G, 4)`` wxyz. scales: ``(G, 3)``. opacities: ``(G,)``.
        colors: ``(G, D)`` or ``(G, K, 3)`` with ``sh_degree``.
        viewmats: ``(C, 4, 4)`` world->camera. Ks: ``(C, 3, 3)``.
        width: image width. height: image height.
        near_plane: near clipping depth. far_plane: far clipping depth.
        eps2d: 2D low-pass added to the projected covariances.
        sh_degree: SH degree to evaluate (``None``: ``colors`` are colours).
        backgrounds: ``(C, D)`` colours behind the Gaussians (default black).

    Returns:
        ``(render_colors (C, H, W, D), render_alphas (C, H, W, 1), meta)``; ``meta`` holds the per-camera
        ``radii (C, G, 2)``, ``means2d (C, G, 2)``, ``depths (C, G)`` and ``conics (C, G, 3)``.

    Raises:
        ValueError: inconsistent shapes (named).

    Example:
        >>> import torch
        >>> from scenemetrics.tiny_splat import intrinsics, look_at, random_gaussians, rasterization
        >>> g = random_gaussians(16)
        >>> sh = torch.zeros(16, 4, 3); sh[:, 0] = (g["colors"] - 0.5) / 0.28209479177387814  # degree-0 = colours
        >>> img, alpha, meta = rasterization(g["means"], g["quats"], g["scales"], g["opacities"], sh,
        ...                                  look_at((3, 0, 0))[None], intrinsics(24, 16)[None], 24, 16, sh_degree=1)
        >>> img.shape, alpha.shape, meta["radii"].shape
        (torch.Size([1, 16, 24, 3]), torch.Size([1, 16, 24, 1]), torch.Size([1, 16, 2]))
    """
    num = means.shape[0]
    if means.shape != (num, 3) or quats.shape != (num, 4) or scales.shape != (num, 3) or opacities.shape != (num,):
        raise ValueError(
            "expected means (G, 3), quats (G, 4), scales (G, 3), opacities (G,); received "
            f"{tuple(means.shape)}, {tuple(quats.shape)}, {tuple(scales.shape)}, {tuple(opacities.shape)}"
        )
    if viewmats.dim() != 3 or viewmats.shape[1:] != (4, 4) or Ks.shape != (viewmats.shape[0], 3, 3):
        raise ValueError(
            f"expected viewmats (C, 4, 4) and Ks (C, 3, 3); received {tuple(viewmats.shape)}, {tuple(Ks.shape)}"
        )
    if sh_degree is not None and (colors.dim() != 3 or colors.shape[0] != num or colors.shape[-1] != 3):
        raise ValueError(
            f"with `sh_degree`, `colors` must be (G, K, 3) SH coefficients; received {tuple(colors.shape)}"
        )
    if sh_degree is None and (colors.dim() != 2 or colors.shape[0] != num):
        raise ValueError(f"`colors` must be (G, D) (or (G, K, 3) with `sh_degree`); received {tuple(colors.shape)}")
    renders, alphas, metas = [], [], []
    for cam in range(viewmats.shape[0]):
        proj = project(
            means, quats, scales, viewmats[cam], Ks[cam], width, height,
            eps2d=eps2d, near_plane=near_plane, far_plane=far_plane,
        )  # fmt: skip
        if sh_degree is None:
            rgb = colors
        else:
            campos = torch.linalg.inv(viewmats[cam].to(means.dtype))[:3, 3]
            rgb = torch.clamp_min(eval_sh(sh_degree, means - campos, colors) + 0.5, 0.0)
        image, alpha = composite(
            proj.means2d, proj.conics, opacities, rgb, proj.depths, width, height,
            background=None if backgrounds is None else backgrounds[cam],
            visible=(proj.radii > 0).all(-1), max_alpha=GSPLAT_MAX_ALPHA, min_alpha=GSPLAT_MIN_ALPHA,
        )  # fmt: skip
        renders.append(image)
        alphas.append(alpha)
        metas.append(proj)
    meta = {name: torch.stack([getattr(p, name) for p in metas]) for name in Projection._fields}
    return torch.stack(renders), torch.stack(alphas), meta


def look_at(
    eye: Sequence[float] | Tensor,
    target: Sequence[float] | Tensor = (0.0, 0.0, 0.0),
    up: Sequence[float] | Tensor = (0.0, 0.0, 1.0),
) -> Tensor:
    """World->camera ``(4, 4)`` float32 matrix of an OpenCV camera at ``eye`` looking at ``target`` (z-up world)."""
    eye_t = torch.as_tensor(eye, dtype=torch.float32)
    forward = F.normalize(torch.as_tensor(target, dtype=torch.float32) - eye_t, dim=0)
    right = F.normalize(torch.linalg.cross(forward, torch.as_tensor(up, dtype=torch.float32)), dim=0)
    down = torch.linalg.cross(forward, right)
    R = torch.stack([right, down, forward])  # rows: camera axes in world coordinates
    view = torch.eye(4)
    view[:3, :3] = R
    view[:3, 3] = -R @ eye_t
    return view


def intrinsics(width: int, height: int, fov_deg: float = 50.0) -> Tensor:
    """``(3, 3)`` pinhole intrinsics with horizontal field of view ``fov_deg`` and the principal point centred."""
    f = 0.5 * width / math.tan(math.radians(fov_deg) / 2)
    return torch.tensor([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])


def orbit_viewmats(n: int, radius: float = 3.0, elevation_deg: float = 20.0, phase_deg: float = 0.0) -> Tensor:
    """``(n, 4, 4)`` cameras evenly spaced on a circle around the origin, looking at it."""
    el = math.radians(elevation_deg)
    mats = []
    for i in range(n):
        az = math.radians(phase_deg) + 2 * math.pi * i / n
        eye = (radius * math.cos(el) * math.cos(az), radius * math.cos(el) * math.sin(az), radius * math.sin(el))
        mats.append(look_at(eye))
    return torch.stack(mats)


def random_gaussians(n: int, seed: int = 0, extent: float = 0.8, scale: float = 0.08) -> dict[str, Tensor]:
    """``n`` random Gaussians (post-activation parameters) inside a cube of half-size ``extent``."""
    g = torch.Generator().manual_seed(seed)
    return {
        "means": (torch.rand(n, 3, generator=g) * 2 - 1) * extent,
        "quats": torch.randn(n, 4, generator=g),
        "scales": scale * torch.exp(0.4 * torch.randn(n, 3, generator=g)),
        "opacities": 0.5 + 0.45 * torch.rand(n, generator=g),
        "colors": torch.rand(n, 3, generator=g),
    }


@dataclass
class SplatScene:
    """A ground-truth Gaussian scene and its views.

    Attributes:
        gaussians: ground-truth post-activation parameters (see :func:`random_gaussians`).
        train_viewmats: ``(N, 4, 4)`` training cameras; ``train_images`` ``(N, 3, H, W)`` their renders.
        eval_viewmats: ``(M, 4, 4)`` held-out cameras (between training cameras); ``eval_images`` their renders.
        K: ``(3, 3)`` intrinsics shared by every camera.
    """

    gaussians: dict[str, Tensor]
    train_viewmats: Tensor
    train_images: Tensor
    eval_viewmats: Tensor
    eval_images: Tensor
    K: Tensor
    width: int
    height: int


def make_splat_scene(
    num_gaussians: int = 256,
    num_train: int = 16,
    num_eval: int = 4,
    size: int | tuple[int, int] = 32,
    seed: int = 0,
    render_fn: Callable[..., Tensor] = render_gaussians,
    device: torch.device | str = "cpu",
) -> SplatScene:
    """A random ground-truth scene, ``num_train`` training and ``num_eval`` held-out views of ``size`` = (H, W) px.

    ``render_fn`` (same keywords as :func:`render_gaussians`) renders the ground truth on ``device``; the returned
    tensors are on the CPU.

    Example:
        >>> scene = make_splat_scene(num_gaussians=8, num_train=2, num_eval=1, size=(12, 16))
        >>> tuple(scene.train_images.shape), tuple(scene.eval_viewmats.shape)
        ((2, 3, 12, 16), (1, 4, 4))
    """
    height, width = (size, size) if isinstance(size, int) else size
    gs = random_gaussians(num_gaussians, seed=seed)
    K = intrinsics(width, height)
    train = orbit_viewmats(num_train)
    held_out = orbit_viewmats(num_eval, elevation_deg=30.0, phase_deg=180.0 / max(num_train, 1))

    def render_all(viewmats: Tensor) -> Tensor:
        on = {k: v.to(device) for k, v in gs.items()}
        with torch.no_grad():
            imgs = [
                render_fn(**on, viewmat=v.to(device), K=K.to(device), width=width, height=height).cpu()
                for v in viewmats
            ]
        return torch.stack(imgs).clamp(0, 1)

    return SplatScene(gs, train, render_all(train), held_out, render_all(held_out), K, width, height)
