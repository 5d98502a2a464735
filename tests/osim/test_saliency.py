"""GBVS: MATLAB-default pipeline pieces by hand, an independent float64 NumPy reference, degenerate inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scenemetrics.osim.saliency import (
    attenuate_borders,
    gabor_kernel,
    gbvs,
    graph_activation,
    mat2gray,
    saliency_map_size,
    subsample,
)

from .conftest import images, load_benchmark


@pytest.fixture(scope="module")
def naive():
    return load_benchmark("osim_gbvs")


def test_salient_blob_peaks_on_the_blob() -> None:
    img = torch.full((1, 3, 96, 128), 0.3)
    img[0, :, 40:56, 80:96] = torch.tensor([0.9, 0.1, 0.1]).view(3, 1, 1)
    sal = gbvs(img)[0]
    peak_y, peak_x = divmod(int(sal.argmax()), 128)
    assert 36 <= peak_y <= 60 and 76 <= peak_x <= 100
    assert sal[40:56, 80:96].mean() > 3 * sal[:, :40].mean()


def test_range_shape_batch_independence_and_uint8() -> None:
    x = images(3, 60, 80, seed=4)
    sal = gbvs(x)
    assert tuple(sal.shape) == (3, 60, 80) and sal.dtype == torch.float32
    assert float(sal.min()) == 0.0 and float(sal.max()) == 1.0
    for i in range(3):
        assert torch.allclose(gbvs(x[i]), sal[i : i + 1], atol=1e-5)
    u8 = (x * 255).round().to(torch.uint8)
    assert torch.allclose(gbvs(u8), gbvs(u8.float() / 255), atol=1e-6)
    assert tuple(gbvs(x[:0]).shape) == (0, 60, 80)


def test_constant_and_degenerate_images_give_no_nan() -> None:
    flat = gbvs(torch.full((2, 3, 40, 50), 0.5))
    assert torch.equal(flat, torch.zeros(2, 40, 50))
    # red == green everywhere: the Itti red-green opponent map is constant (0), the other maps are not
    x = images(1, 48, 64, seed=2)
    x[:, 1] = x[:, 0]
    for channels in ("DIO", "CIO", "C"):
        sal = gbvs(x, channels=channels)
        assert torch.isfinite(sal).all() and float(sal.min()) >= 0 and float(sal.max()) <= 1
    # a grey image: both Itti colour maps are constant (0)
    grey = images(1, 48, 64, seed=5).mean(1, keepdim=True).expand(1, 3, 48, 64)
    assert float(gbvs(grey).max()) == 1.0
    assert torch.equal(gbvs(grey, channels="C"), torch.zeros(1, 48, 64))


def test_closed_form_activation_equals_power_iteration(naive) -> None:
    g = torch.Generator().manual_seed(0)
    m = torch.rand(6, 8, generator=g, dtype=torch.float64)
    sigma = 0.15 * (6 + 8) / 2
    ours = graph_activation(m, sigma)
    ref = naive.naive_activation(m.numpy(), sigma, tol=1e-15)
    assert np.abs(ours.numpy() - ref).max() < 1e-10
    assert float(ours.sum()) == pytest.approx(1.0, abs=1e-12)
    batch = torch.stack([m, torch.full_like(m, 3.0), m * 5 + 1])  # constant map -> 0; affine change -> same
    act = graph_activation(batch, sigma)
    assert torch.equal(act[1], torch.zeros_like(m))
    assert torch.allclose(act[2], act[0], atol=1e-12)


def test_subsample_by_hand() -> None:
    ramp = torch.arange(12.0, dtype=torch.float64).view(1, 12).expand(12, 12)
    out = subsample(ramp)
    assert out.shape == (6, 6)
    expected = [(10 * 1 + 5 * 2 + 1 * 3) / 26, 80 / 32, 144 / 32, 208 / 32, 272 / 32, (8 + 45 + 100 + 110) / 26]
    assert out[0].tolist() == pytest.approx(expected, abs=1e-12)
    assert torch.allclose(out, out[:1].expand(6, 6))  # constant along y stays constant
    odd = subsample(torch.arange(13.0, dtype=torch.float64).view(13, 1).expand(13, 12))
    assert odd[-1, 0] == pytest.approx((8 + 5 * 9 + 10 * 10 + 10 * 11 + 5 * 12) / 31, abs=1e-12)
    assert odd[0, 0] == pytest.approx((10 * 0 + 10 * 1 + 5 * 2 + 3) / 26, abs=1e-12)
    small = torch.rand(10, 40)
    assert subsample(small) is small  # a side <= 10: identity


def test_gabor_kernels(naive) -> None:
    for theta in (0.0, 45.0, 90.0, 135.0):
        g0, g90 = gabor_kernel(theta, 0.0), gabor_kernel(theta, math.pi / 2)
        for g in (g0, g90):
            assert g.shape == (27, 27)
            assert abs(float(g.sum())) < 1e-12 and float(g.norm()) == pytest.approx(1.0, abs=1e-12)
        assert torch.allclose(g0, g0.flip(0, 1), atol=1e-12)  # even
        assert torch.allclose(g90, -g90.flip(0, 1), atol=1e-12)  # odd
        assert np.abs(g0.numpy() - naive.naive_gabor(theta, 0.0)).max() < 1e-12
    # 0 degrees oscillates along the rows (i): constant phase along a row near the centre
    g = gabor_kernel(0.0, 0.0)
    assert float(g[13, 13]) > 0 and float(g[13 + 2, 13]) < 0 < float(g[13, 13 + 2])


def test_map_size_borders_and_mat2gray() -> None:
    assert saliency_map_size(480, 640) == (24, 32)
    assert saliency_map_size(640, 480) == (32, 24)
    assert saliency_map_size(500, 500) == (32, 32)
    x = torch.ones(10, 12)
    att = attenuate_borders(x, 4)
    assert att[0, 6] == pytest.approx(0.2) and att[3, 6] == pytest.approx(0.8) and att[4, 6] == 1.0
    assert att[9, 6] == pytest.approx(0.2) and att[0, 0] == pytest.approx(0.04) and att[5, 11] == pytest.approx(0.2)
    assert attenuate_borders(torch.ones(4, 20), 13)[0, 10] == pytest.approx(1 / 3)  # capped at half the side
    assert torch.equal(mat2gray(torch.full((3, 3), 7.0)), torch.zeros(3, 3))
    assert mat2gray(torch.tensor([[1.0, 3.0]])).tolist() == [[0.0, 1.0]]


@pytest.mark.parametrize(("h", "w", "seed"), [(60, 80, 1), (45, 71, 2), (64, 48, 3)])
def test_matches_independent_numpy_reference(naive, h, w, seed) -> None:
    x = images(1, h, w, seed=seed)
    ours = gbvs(x)[0].double().numpy()
    ref = naive.naive_gbvs(x[0].permute(1, 2, 0).double().numpy(), tol=1e-13)
    assert np.abs(ours - ref).max() < 1e-4


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="at least 16x16"):
        gbvs(torch.rand(1, 3, 15, 40))
    with pytest.raises(ValueError, match="channels"):
        gbvs(torch.rand(1, 3, 32, 32), channels="DX")
    with pytest.raises(ValueError, match="levels"):
        gbvs(torch.rand(1, 3, 32, 32), levels=())
    with pytest.raises(ValueError, match="images"):
        gbvs(torch.rand(1, 4, 32, 32))
    with pytest.raises(ValueError, match="images"):
        gbvs(torch.rand(1, 3, 32, 32) + 1)


@pytest.mark.gpu
def test_cuda_matches_cpu() -> None:
    x = images(4, 120, 160)
    assert torch.allclose(gbvs(x.cuda()).cpu(), gbvs(x), atol=1e-3)
