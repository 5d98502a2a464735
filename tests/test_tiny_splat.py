"""The tiny Gaussian-splat renderer: hand-computed values, gradients, spherical harmonics, the gsplat-shaped
``rasterization``, and that it can be fitted (gsplat cross-checks: tests/test_tiny_splat_gsplat.py)."""

from __future__ import annotations

import math

import pytest
import torch

from scenemetrics.tiny_splat import (
    composite,
    eval_sh,
    intrinsics,
    look_at,
    make_splat_scene,
    project,
    rasterization,
    render_gaussians,
)


def _one_gaussian(size: int = 16, scale: float = 0.2, opacity: float = 0.9) -> dict:
    return {
        "means": torch.zeros(1, 3, dtype=torch.float64),
        "quats": torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64),
        "scales": torch.full((1, 3), scale, dtype=torch.float64),
        "opacities": torch.tensor([opacity], dtype=torch.float64),
        "colors": torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64),
        "viewmat": look_at((3.0, 0.0, 0.0)).double(),
        "K": intrinsics(size, size).double(),
        "width": size,
        "height": size,
    }


def test_single_gaussian_matches_hand_computation() -> None:
    args = _one_gaussian()
    img = render_gaussians(**args)
    f = 8 / math.tan(math.radians(25))
    var = (f * 0.2 / 3.0) ** 2 + 0.3  # isotropic 2D covariance at depth 3 plus eps2d
    for py, px in [(7, 7), (7, 8), (3, 12), (0, 0)]:
        d2 = (px + 0.5 - 8) ** 2 + (py + 0.5 - 8) ** 2
        alpha = min(0.99, 0.9 * math.exp(-0.5 * d2 / var))
        # red Gaussian over a white background: R = α + (1-α), G = B = 1-α (K and viewmat come from float32)
        assert math.isclose(float(img[0, py, px]), 1.0, abs_tol=1e-12)
        assert math.isclose(float(img[1, py, px]), 1 - alpha, rel_tol=1e-6)
        assert math.isclose(float(img[2, py, px]), 1 - alpha, rel_tol=1e-6)


def test_behind_camera_and_occlusion_order() -> None:
    args = _one_gaussian()
    args["means"] = torch.tensor([[4.0, 0.0, 0.0]], dtype=torch.float64)  # behind the camera at x=3 looking at -x
    assert torch.allclose(render_gaussians(**args), torch.ones(3, 16, 16, dtype=torch.float64))
    two = _one_gaussian(opacity=0.99)
    two["means"] = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)  # second one is nearer
    two["quats"] = two["quats"].repeat(2, 1)
    two["scales"] = two["scales"].repeat(2, 1)
    two["opacities"] = torch.tensor([0.99, 0.99], dtype=torch.float64)
    two["colors"] = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    centre = render_gaussians(**two)[:, 7, 7]
    assert centre[2] > 0.9 and centre[0] < 0.1  # the nearer blue Gaussian covers the red one


def test_gradients_match_finite_differences() -> None:
    torch.manual_seed(0)
    base = _one_gaussian(size=6)
    means = torch.tensor([[0.0, 0.1, 0.05], [0.3, -0.2, 0.1]], dtype=torch.float64, requires_grad=True)
    quats = torch.tensor([[0.9, 0.1, 0.2, 0.3], [0.7, -0.3, 0.1, 0.2]], dtype=torch.float64, requires_grad=True)
    scales = torch.tensor([[0.3, 0.2, 0.25], [0.2, 0.35, 0.3]], dtype=torch.float64, requires_grad=True)
    opac = torch.tensor([0.7, 0.6], dtype=torch.float64, requires_grad=True)
    colors = torch.tensor([[0.9, 0.2, 0.1], [0.1, 0.5, 0.8]], dtype=torch.float64, requires_grad=True)

    def fn(m, q, s, o, c):
        return render_gaussians(m, q, s, o, c, base["viewmat"], base["K"], 6, 6)

    assert torch.autograd.gradcheck(fn, (means, quats, scales, opac, colors), eps=1e-6, atol=1e-5)


def test_fit_reduces_l1_by_half() -> None:
    scene = make_splat_scene(num_gaussians=64, num_train=4, num_eval=1, size=24, seed=1)
    gt = scene.gaussians
    g = torch.Generator().manual_seed(2)
    params = {
        "means": (gt["means"] + 0.08 * torch.randn(gt["means"].shape, generator=g)).requires_grad_(),
        "quats": gt["quats"].clone().requires_grad_(),
        "log_scales": (gt["scales"].log() + 0.2 * torch.randn(gt["scales"].shape, generator=g)).requires_grad_(),
        "opacities": gt["opacities"].clone(),
        "color_logits": torch.logit(torch.rand(gt["colors"].shape, generator=g).clamp(0.05, 0.95)).requires_grad_(),
    }
    opt = torch.optim.Adam([p for p in params.values() if p.requires_grad], lr=0.03)

    def l1() -> torch.Tensor:
        loss = 0.0
        for view, target in zip(scene.train_viewmats, scene.train_images, strict=True):
            img = render_gaussians(
                params["means"],
                params["quats"],
                params["log_scales"].exp(),
                params["opacities"],
                torch.sigmoid(params["color_logits"]),
                view,
                scene.K,
                scene.width,
                scene.height,
            )
            loss = loss + (img - target).abs().mean()
        return loss / len(scene.train_images)

    start = float(l1())
    for _ in range(40):
        opt.zero_grad()
        loss = l1()
        loss.backward()
        opt.step()
    assert float(l1()) <= 0.5 * start


# ---- spherical harmonics -------------------------------------------------------------------------------------------


def _sphere_grid(n_theta: int = 48, n_phi: int = 96) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit directions and quadrature weights integrating polynomials of degree <= 6 over the sphere exactly:
    Gauss-Legendre in cos(theta), uniform in phi."""
    import numpy as np

    nodes, weights = np.polynomial.legendre.leggauss(n_theta)
    cos_t = torch.from_numpy(nodes).repeat_interleave(n_phi)
    w = torch.from_numpy(weights).repeat_interleave(n_phi) * (2 * math.pi / n_phi)
    phi = (torch.arange(n_phi, dtype=torch.float64) * 2 * math.pi / n_phi).repeat(n_theta)
    sin_t = (1 - cos_t**2).sqrt()
    return torch.stack([sin_t * phi.cos(), sin_t * phi.sin(), cos_t], dim=-1), w


def _bases(degree: int, dirs: torch.Tensor) -> torch.Tensor:
    """(n, K) basis values: eval_sh with one-hot coefficients (the first colour channel)."""
    k = (degree + 1) ** 2
    coeffs = torch.eye(k, dtype=dirs.dtype).unsqueeze(-1).expand(k, k, 3)
    return torch.stack([eval_sh(degree, dirs, coeffs[i].expand(len(dirs), k, 3))[:, 0] for i in range(k)], dim=-1)


def test_sh_bases_are_orthonormal_over_the_sphere() -> None:
    # <Y_i, Y_j> = delta_ij is what fixes each normalisation constant; quadrature exact for these degrees
    dirs, w = _sphere_grid()
    Y = _bases(3, dirs)
    gram = (Y * w.unsqueeze(-1)).T @ Y
    torch.testing.assert_close(gram, torch.eye(16, dtype=torch.float64), atol=1e-10, rtol=0)


def test_sh_signs_follow_the_3dgs_convention() -> None:
    # 3DGS / gsplat order the degree-1 bases as (-y, z, -x) * sqrt(3 / (4 pi)), degree 2 starts with +xy
    c1 = math.sqrt(3 / (4 * math.pi))
    axes = torch.eye(3, dtype=torch.float64) * 5.0  # not unit: eval_sh normalises
    Y = _bases(1, axes)
    torch.testing.assert_close(Y[:, 0], torch.full((3,), 0.5 / math.sqrt(math.pi), dtype=torch.float64))
    torch.testing.assert_close(Y[:, 1:], torch.tensor([[0, 0, -c1], [-c1, 0, 0], [0, c1, 0]], dtype=torch.float64))
    d = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    xy = 0.5  # x*y of the unit direction
    assert math.isclose(float(_bases(2, d)[0, 4]), math.sqrt(15 / (4 * math.pi)) * xy, rel_tol=1e-12)


def test_eval_sh_rejects_bad_degree_and_short_coefficients() -> None:
    with pytest.raises(ValueError, match="`degree`"):
        eval_sh(4, torch.ones(1, 3), torch.ones(1, 25, 3))
    with pytest.raises(ValueError, match="`coeffs`"):
        eval_sh(2, torch.ones(1, 3), torch.ones(1, 4, 3))


# ---- the gsplat-shaped rasterization -------------------------------------------------------------------------------


def test_rasterization_single_gaussian_matches_hand_computation() -> None:
    a = _one_gaussian()
    colors, alphas, meta = rasterization(
        a["means"], a["quats"], a["scales"], a["opacities"], a["colors"], a["viewmat"][None], a["K"][None], 16, 16,
        backgrounds=torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64),
    )  # fmt: skip
    assert colors.shape == (1, 16, 16, 3) and alphas.shape == (1, 16, 16, 1)
    f = 8 / math.tan(math.radians(25))
    var = (f * 0.2 / 3.0) ** 2 + 0.3
    for py, px in [(7, 7), (3, 12), (0, 0)]:
        d2 = (px + 0.5 - 8) ** 2 + (py + 0.5 - 8) ** 2
        alpha = min(0.999, 0.9 * math.exp(-0.5 * d2 / var))
        alpha = alpha if alpha >= 1 / 255 else 0.0  # gsplat skips alphas below 1/255
        # red Gaussian over a blue background
        assert math.isclose(float(colors[0, py, px, 0]), alpha, rel_tol=1e-6, abs_tol=1e-12)
        assert math.isclose(float(colors[0, py, px, 2]), 1 - alpha, rel_tol=1e-6, abs_tol=1e-12)
        assert math.isclose(float(alphas[0, py, px, 0]), alpha, rel_tol=1e-6, abs_tol=1e-12)
    # the 3.33-sigma box, in pixels
    assert meta["radii"][0, 0].tolist() == [math.ceil(3.33 * math.sqrt(var))] * 2


def test_rasterization_culls_off_screen_and_behind_the_camera() -> None:
    a = _one_gaussian(scale=0.02)
    means = torch.tensor([[0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [4.0, 0.0, 0.0]], dtype=torch.float64)  # in, aside, behind
    n = len(means)
    _, _, meta = rasterization(
        means, a["quats"].expand(n, 4), a["scales"].expand(n, 3), torch.full((n,), 0.9, dtype=torch.float64),
        a["colors"].expand(n, 3), a["viewmat"][None], a["K"][None], 16, 16,
    )  # fmt: skip
    assert (meta["radii"][0] > 0).all(-1).tolist() == [True, False, False]


def test_rasterization_sh_degree_zero_equals_colours() -> None:
    scene = make_splat_scene(num_gaussians=24, num_train=1, num_eval=1, size=(12, 16), seed=3)
    g = scene.gaussians
    sh = ((g["colors"] - 0.5) / math.sqrt(1 / (4 * math.pi))).unsqueeze(1)  # (G, 1, 3): the DC term only
    args = (g["means"], g["quats"], g["scales"], g["opacities"])
    view, K = scene.train_viewmats[:1], scene.K[None]
    from_sh, _, _ = rasterization(*args, sh, view, K, 16, 12, sh_degree=0)
    plain, _, _ = rasterization(*args, g["colors"], view, K, 16, 12)
    torch.testing.assert_close(from_sh, plain, atol=1e-6, rtol=0)


def test_rasterization_rejects_bad_shapes() -> None:
    a = _one_gaussian()
    with pytest.raises(ValueError, match="viewmats"):
        rasterization(a["means"], a["quats"], a["scales"], a["opacities"], a["colors"], a["viewmat"], a["K"], 8, 8)
    with pytest.raises(ValueError, match="SH coefficients"):
        rasterization(
            a["means"], a["quats"], a["scales"], a["opacities"], a["colors"], a["viewmat"][None], a["K"][None], 8, 8,
            sh_degree=0,
        )  # fmt: skip


def test_composite_drops_small_alphas_and_reports_coverage() -> None:
    means2d = torch.tensor([[2.0, 2.0]])
    conics = torch.tensor([[1.0, 0.0, 1.0]])
    image, alpha = composite(means2d, conics, torch.tensor([0.5]), torch.ones(1, 2), torch.ones(1), 4, 4)
    # pixel (1, 1) has centre (1.5, 1.5): alpha = 0.5 exp(-0.25)
    assert math.isclose(float(alpha[1, 1, 0]), 0.5 * math.exp(-0.25), rel_tol=1e-6)
    assert image.shape == (4, 4, 2)
    torch.testing.assert_close(image[..., 0:1], alpha)  # a white Gaussian over black: colour = coverage
    _, cut = composite(means2d, conics, torch.tensor([0.5]), torch.ones(1, 2), torch.ones(1), 4, 4, min_alpha=0.3)
    assert float(cut[1, 1, 0]) == pytest.approx(0.5 * math.exp(-0.25)) and float(cut[0, 0, 0]) == 0.0  # 0.5e^-2.25


def test_project_clamps_the_jacobian_of_gaussians_far_off_screen() -> None:
    # a Gaussian 60 degrees off-axis: without the frustum clamp its projected footprint would be larger
    a = _one_gaussian()
    means = torch.tensor([[0.0, 3.0 * math.tan(math.radians(60)), 0.0]], dtype=torch.float64)
    clamped = project(means, a["quats"], a["scales"], a["viewmat"], a["K"], 16, 16, cull_sigmas=None)
    f = 8 / math.tan(math.radians(25))
    lim = 8 / f + 0.3 * (8 / f)  # (W - cx)/fx + 0.3 tan(fov/2)
    # isotropic 3D covariance s^2 I: the x-variance of J Σ Jᵀ is (f s / z)^2 (1 + t^2), t the clamped tangent
    var = (f * 0.2 / 3.0) ** 2 * (1 + lim**2) + 0.3
    conic_a = float(clamped.conics[0, 0])  # 1 / var (the 2D covariance is diagonal here)
    assert math.isclose(conic_a, 1 / var, rel_tol=1e-6)
