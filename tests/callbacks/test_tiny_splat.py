"""The test-only Gaussian-splat renderer: hand-computed values, gradients, and that it can be fitted."""

from __future__ import annotations

import math

import torch

from tests.utils.tiny_splat import intrinsics, look_at, make_splat_scene, render_gaussians


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
