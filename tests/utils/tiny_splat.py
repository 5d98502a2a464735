"""A tiny differentiable Gaussian-splat renderer in pure PyTorch (CPU tests and examples only; not public API).

Written from the 3D Gaussian Splatting equations (Kerbl et al. 2023) with the conventions and post-activation
inputs of ``gsplat.rasterization`` so that examples can switch backends with a flag:

* camera-space means ``x_c = R x + t`` from a world->camera ``viewmat`` (OpenCV camera: x right, y down, z forward);
* 3D covariance ``Σ = R(q) S Sᵀ R(q)ᵀ`` from the normalised ``wxyz`` quaternion and the scales;
* 2D covariance ``J W Σ Wᵀ Jᵀ + eps2d·I`` with the perspective Jacobian ``J`` at the camera-space mean;
* ``α = o · exp(-½ dᵀ Σ₂⁻¹ d)`` at pixel centres (``+0.5``), clamped to ``≤ 0.99``, zero behind the near plane;
* front-to-back compositing over depth-sorted Gaussians: ``C = Σ c_i α_i T_i + T_final · background`` with the
  exclusive transmittance ``T_i = Π_{j<i} (1 - α_j)``.

Memory is dense, ``O(G·H·W)``: fine for ``G ≤ 1024`` Gaussians at ``≤ 64×64`` pixels. gsplat additionally clamps
the projected position used in ``J`` to a widened frustum and drops ``α < 1/255``; neither matters for the small
on-screen scenes used here.

Example:
    >>> import torch
    >>> from tests.utils.tiny_splat import look_at, intrinsics, render_gaussians
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

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "SplatScene",
    "intrinsics",
    "look_at",
    "make_splat_scene",
    "orbit_viewmats",
    "quat_to_rotmat",
    "random_gaussians",
    "render_gaussians",
]


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
    dtype, device = means.dtype, means.device
    viewmat = viewmat.to(device, dtype)
    K = K.to(device, dtype)
    R_v, t_v = viewmat[:3, :3], viewmat[:3, 3]
    p = means @ R_v.T + t_v  # (G, 3) camera space
    x, y, z = p.unbind(-1)
    visible = z > near_plane
    z_safe = torch.where(visible, z, torch.ones_like(z))

    R = quat_to_rotmat(quats.to(dtype))
    M = R * scales.to(dtype).unsqueeze(-2)  # R S
    cov3 = M @ M.transpose(-1, -2)  # R S Sᵀ Rᵀ
    W = R_v.expand(p.shape[0], 3, 3)
    cov_cam = W @ cov3 @ W.transpose(-1, -2)

    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    zeros = torch.zeros_like(z_safe)
    J = torch.stack(
        [
            torch.stack([fx / z_safe, zeros, -fx * x / z_safe**2], -1),
            torch.stack([zeros, fy / z_safe, -fy * y / z_safe**2], -1),
        ],
        dim=-2,
    )  # (G, 2, 3)
    cov2 = J @ cov_cam @ J.transpose(-1, -2) + eps2d * torch.eye(2, dtype=dtype, device=device)
    a, b, c = cov2[:, 0, 0], cov2[:, 0, 1], cov2[:, 1, 1]
    det = a * c - b * b
    conic_a, conic_b, conic_c = c / det, -b / det, a / det
    u = fx * x / z_safe + cx
    v = fy * y / z_safe + cy

    px = torch.arange(width, dtype=dtype, device=device) + 0.5
    py = torch.arange(height, dtype=dtype, device=device) + 0.5
    dx = px.view(1, 1, -1) - u.view(-1, 1, 1)  # (G, 1, W)
    dy = py.view(1, -1, 1) - v.view(-1, 1, 1)  # (G, H, 1)
    power = -0.5 * (
        conic_a.view(-1, 1, 1) * dx * dx + 2 * conic_b.view(-1, 1, 1) * dx * dy + conic_c.view(-1, 1, 1) * dy * dy
    )
    alpha = (opacities.to(dtype).view(-1, 1, 1) * torch.exp(power)).clamp(max=0.99)
    alpha = alpha * visible.to(dtype).view(-1, 1, 1)  # (G, H, W)

    order = torch.argsort(z.detach())
    alpha = alpha[order]
    rgb = colors.to(dtype)[order]
    trans = torch.cumprod(1.0 - alpha, dim=0)
    trans_excl = torch.cat([torch.ones_like(trans[:1]), trans[:-1]], dim=0)
    weights = alpha * trans_excl  # (G, H, W)
    image = torch.einsum("ghw,gc->chw", weights, rgb)
    bg = torch.as_tensor(background, dtype=dtype, device=device).view(3, 1, 1)
    return image + trans[-1].unsqueeze(0) * bg if alpha.shape[0] else bg.expand(3, height, width).clone()


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
