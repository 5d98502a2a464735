"""``scenemetrics.tiny_splat`` against gsplat's own pure-PyTorch reference code (projection, spherical harmonics):
two independent implementations of the same equations must agree (gsplat 1.4, as nerfstudio pins it, and 1.5)."""

from __future__ import annotations

import math

import pytest
import torch

from scenemetrics.tiny_splat import (
    eval_sh,
    intrinsics,
    look_at,
    orbit_viewmats,
    project,
    random_gaussians,
    rasterization,
)

pytestmark = pytest.mark.extra("gsplat")


@pytest.fixture(scope="module")
def gs():
    from tests.utils import gsplat_cpu

    return gsplat_cpu


def _gaussians(n: int, seed: int, extent: float = 1.6) -> dict[str, torch.Tensor]:
    g = random_gaussians(n, seed=seed, extent=extent, scale=0.1)  # the default: some fall off-screen
    return {k: v.double() for k, v in g.items()}


@pytest.mark.parametrize("size", [(24, 32), (17, 9)])
def test_projection_equals_gsplats(gs, size) -> None:
    height, width = size
    g = _gaussians(200, seed=5)
    views = orbit_viewmats(3, radius=2.2).double()
    K = intrinsics(width, height, fov_deg=60.0).double()
    K[0, 2] += 1.5  # an off-centre principal point exercises the asymmetric frustum clamp
    ref_means2d, ref_conics, ref_depths, ref_visible = gs.gsplat_projection(
        g["means"], g["quats"], g["scales"], views, K.expand(3, 3, 3), width, height
    )
    for cam in range(3):
        ours = project(g["means"], g["quats"], g["scales"], views[cam], K, width, height)
        in_front = ours.depths > 0.01
        assert 0 < int((ours.radii[:, 0] > 0).sum()) < len(g["means"])  # some culled, some kept
        torch.testing.assert_close(ours.depths, ref_depths[cam])
        torch.testing.assert_close(ours.means2d[in_front], ref_means2d[cam][in_front])
        torch.testing.assert_close(ours.conics[in_front], ref_conics[cam][in_front], rtol=1e-7, atol=1e-9)
        if _radii_per_axis(
            gs
        ):  # gsplat >= 1.5 culls with the same 3.33-sigma box per axis; 1.4 used a round 3-sigma disc
            assert torch.equal((ours.radii > 0).all(-1), ref_visible[cam])


def _radii_per_axis(gs) -> bool:
    radii = gs._fully_fused_projection(
        torch.zeros(1, 3), torch.eye(3)[None] * 0.01, look_at((3, 0, 0))[None], intrinsics(8, 8)[None], 8, 8
    )[0]
    return radii.dim() == 3


@pytest.mark.parametrize("degree", [0, 1, 2, 3])
def test_spherical_harmonics_equal_gsplats(gs, degree) -> None:
    gen = torch.Generator().manual_seed(degree)
    dirs = torch.randn(500, 3, generator=gen, dtype=torch.float64) * 3
    coeffs = torch.randn(500, 16, 3, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(eval_sh(degree, dirs, coeffs), gs._spherical_harmonics(degree, dirs, coeffs))


def test_rasterization_equals_gsplat_projection_and_sh_with_the_same_compositor(gs) -> None:
    g = _gaussians(150, seed=9, extent=0.5)  # all on screen: gsplat 1.4 and 1.5 cull nothing, nor do we
    sh = torch.randn(150, 16, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.3
    views = orbit_viewmats(2, radius=2.5).double()
    Ks = intrinsics(20, 16).double().expand(2, 3, 3)
    bg = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.2, 0.4]], dtype=torch.float64)
    args = (g["means"], g["quats"], g["scales"], g["opacities"], sh, views, Ks, 20, 16)
    ours, ours_alpha, _ = rasterization(*args, sh_degree=3, backgrounds=bg)
    ref, ref_alpha, _ = gs.gsplat_cpu_rasterization(*args, sh_degree=3, backgrounds=bg)
    assert ours.shape == (2, 16, 20, 3) and float(ours_alpha.mean()) > 0.2  # something is drawn
    torch.testing.assert_close(ours, ref, atol=1e-9, rtol=0)
    torch.testing.assert_close(ours_alpha, ref_alpha, atol=1e-9, rtol=0)
    assert not math.isnan(float(ours.sum()))
