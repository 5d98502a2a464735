"""The baselines' distances on embeddings, against independent computations: torchmetrics' FID and KID on the same
features, scipy's matrix square root, a NumPy brute-force RBF MMD with CMMD's σ and scale, a direct cosine."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch
from torch import nn

from scenemetrics.baselines import (
    CMMD_SCALE,
    CMMD_SIGMA,
    cmmd,
    cosine_similarity,
    frechet_distance,
    joint_features,
    kernel_distance,
)


class _Identity(nn.Module):
    """A torchmetrics "feature extractor" that returns its input: torchmetrics then computes on our features."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.num_features = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def _sets(n_fake: int, n_real: int, d: int, seed: int, shift: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    fake = torch.randn(n_fake, d, generator=g, dtype=torch.float64) * 1.3 + shift
    real = torch.randn(n_real, d, generator=g, dtype=torch.float64)
    return fake, real


@pytest.mark.parametrize(("n_fake", "n_real", "d"), [(40, 30, 8), (12, 50, 16), (5, 7, 20)])  # the last: rank-deficient
def test_frechet_distance_equals_torchmetrics_fid_on_the_same_features(n_fake, n_real, d):
    from torchmetrics.image.fid import FrechetInceptionDistance

    fake, real = _sets(n_fake, n_real, d, seed=d)
    tm = FrechetInceptionDistance(feature=_Identity(d), normalize=False)
    tm.update(real, real=True)
    tm.update(fake, real=False)
    expected = float(tm.compute())
    assert float(frechet_distance(fake, real)) == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_frechet_distance_equals_the_scipy_sqrtm_formula():
    fake, real = _sets(60, 45, 6, seed=3)
    f, r = fake.numpy(), real.numpy()
    mu_f, mu_r = f.mean(0), r.mean(0)
    s_f, s_r = np.cov(f, rowvar=False), np.cov(r, rowvar=False)
    covmean = scipy.linalg.sqrtm(s_f @ s_r).real
    expected = ((mu_f - mu_r) ** 2).sum() + np.trace(s_f) + np.trace(s_r) - 2 * np.trace(covmean)
    assert float(frechet_distance(fake, real)) == pytest.approx(expected, rel=1e-9)
    # identical sets are at distance 0; a pure shift by c adds |c|²
    assert abs(float(frechet_distance(real, real))) < 1e-9
    assert float(frechet_distance(real + 2.0, real)) == pytest.approx(4.0 * 6, rel=1e-9)


@pytest.mark.parametrize(("n_fake", "n_real", "subset_size", "seed"), [(20, 25, 8, 0), (30, 12, 12, 7)])
@pytest.mark.filterwarnings("ignore:Metric `Kernel Inception Distance` will save")
def test_kernel_distance_equals_torchmetrics_kid_with_the_same_seed(n_fake, n_real, subset_size, seed):
    from torchmetrics.image.kid import KernelInceptionDistance

    fake, real = _sets(n_fake, n_real, 10, seed=seed)
    tm = KernelInceptionDistance(feature=_Identity(10), subsets=6, subset_size=subset_size, normalize=False)
    tm.update(real, real=True)
    tm.update(fake, real=False)
    torch.manual_seed(seed)  # torchmetrics draws its subsets from the global generator
    tm_mean, tm_std = tm.compute()
    mean, std = kernel_distance(fake, real, subsets=6, subset_size=subset_size, seed=seed)
    assert float(mean) == pytest.approx(float(tm_mean), rel=1e-9)
    assert float(std) == pytest.approx(float(tm_std), rel=1e-9)


def test_kernel_distance_is_the_unbiased_cubic_kernel_mmd_on_a_hand_checked_case():
    # one subset holding every row (a permutation changes nothing): the textbook unbiased estimator
    fake, real = _sets(6, 6, 3, seed=1)
    f, r = fake.numpy(), real.numpy()
    k = lambda a, b: (a @ b.T / 3 + 1) ** 3  # noqa: E731 - gamma = 1/d, coef 1, degree 3
    m = 6
    kxx, kyy, kxy = k(r, r), k(f, f), k(r, f)
    expected = (
        (kxx.sum() - np.trace(kxx)) / (m * (m - 1)) + (kyy.sum() - np.trace(kyy)) / (m * (m - 1)) - 2 * kxy.mean()
    )
    mean, std = kernel_distance(fake, real, subsets=3, subset_size=6)
    assert float(mean) == pytest.approx(expected, rel=1e-12)
    assert float(std) == pytest.approx(0.0, abs=1e-12)


def test_kernel_distance_reduces_a_large_subset_size_with_a_warning():
    fake, real = _sets(5, 9, 4, seed=2)
    with pytest.warns(UserWarning, match="subset_size=1000 is larger than the sets"):
        kernel_distance(fake, real)
    with pytest.raises(ValueError, match="at least 2"):
        kernel_distance(fake[:1], real)
    with pytest.raises(ValueError, match="subsets"):
        kernel_distance(fake, real, subsets=0)


def _brute_force_mmd(x: np.ndarray, y: np.ndarray, sigma: float, unbiased: bool) -> float:
    """The RBF MMD² by explicit loops over every pair (Gretton et al. 2012, Lemma 6 / Eq. 5)."""

    def k(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.exp(-np.sum((a - b) ** 2) / (2 * sigma**2)))

    m, n = len(x), len(y)
    if unbiased:
        xx = sum(k(x[i], x[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
        yy = sum(k(y[i], y[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    else:
        xx = sum(k(x[i], x[j]) for i in range(m) for j in range(m)) / (m * m)
        yy = sum(k(y[i], y[j]) for i in range(n) for j in range(n)) / (n * n)
    xy = sum(k(x[i], y[j]) for i in range(m) for j in range(n)) / (m * n)
    return xx + yy - 2 * xy


@pytest.mark.parametrize("unbiased", [True, False])
def test_cmmd_is_the_scaled_rbf_mmd_with_sigma_10(unbiased):
    # unit vectors, as CLIP embeddings are: pair distances in [0, 2], so σ = 10 puts the kernel near 1
    g = torch.Generator().manual_seed(4)
    fake = torch.nn.functional.normalize(torch.randn(9, 12, generator=g, dtype=torch.float64) + 0.3, dim=1)
    real = torch.nn.functional.normalize(torch.randn(11, 12, generator=g, dtype=torch.float64), dim=1)
    expected = CMMD_SCALE * _brute_force_mmd(fake.numpy(), real.numpy(), CMMD_SIGMA, unbiased)
    assert (CMMD_SIGMA, CMMD_SCALE) == (10.0, 1000.0)
    assert float(cmmd(fake, real, unbiased=unbiased)) == pytest.approx(expected, rel=1e-9)
    assert float(cmmd(fake, real, sigma=0.5, scale=1.0, unbiased=unbiased)) == pytest.approx(
        _brute_force_mmd(fake.numpy(), real.numpy(), 0.5, unbiased), rel=1e-9
    )
    with pytest.raises(ValueError, match="sigma"):
        cmmd(fake, real, sigma=0.0)


def test_cosine_similarity_and_joint_features():
    a = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    b = torch.tensor([[3.0, 4.0], [0.0, 1.0], [0.0, -5.0]])
    assert cosine_similarity(a, b).tolist() == pytest.approx([1.0, 0.0, -1.0])
    assert torch.equal(
        joint_features(a, b), torch.tensor([[3.0, 4.0, 3.0, 4.0], [1.0, 0.0, 0.0, 1.0], [0, 2, 0, -5.0]])
    )
    with pytest.raises(ValueError, match="same shape"):
        joint_features(a, b[:2])
    with pytest.raises(ValueError, match="same dimension"):
        frechet_distance(torch.randn(4, 3), torch.randn(4, 2))
    with pytest.raises(ValueError, match="NaN"):
        frechet_distance(torch.full((4, 3), float("nan")), torch.randn(4, 3))
    with pytest.raises(ValueError, match="at least 2"):
        frechet_distance(torch.randn(1, 3), torch.randn(4, 3))
