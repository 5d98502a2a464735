"""The core RBF MMD² (``scenemetrics.stats.mmd_rbf``) and the median heuristic against NumPy float64 references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scenemetrics.stats import median_bandwidth, mmd_rbf
from scenemetrics.stats import mmd as mmd_module


def _reference(x: np.ndarray, y: np.ndarray, bandwidth: str | float = "median") -> tuple[float, float]:
    """Textbook float64 estimator: full kernel matrices, diagonals removed, sigma = lower median of pair distances."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    z = np.concatenate([x, y])
    m, n = len(x), len(y)
    diff = z[:, None, :] - z[None, :, :]
    d2 = np.einsum("ijk,ijk->ij", diff, diff)
    if bandwidth == "median":
        dist = np.sort(np.sqrt(d2[np.triu_indices(m + n, 1)]))
        sigma = dist[(len(dist) - 1) // 2]
    else:
        sigma = float(bandwidth)
    k = np.exp(-d2 / (2 * sigma**2))
    kxx = (k[:m, :m].sum() - np.trace(k[:m, :m])) / (m * (m - 1))
    kyy = (k[m:, m:].sum() - np.trace(k[m:, m:])) / (n * (n - 1))
    return float(kxx + kyy - 2 * k[:m, m:].mean()), float(sigma)


def _assert_close_to_reference(value: float, ref: float) -> None:
    if abs(ref) >= 1e-3:
        assert abs(value - ref) <= 1e-6 * abs(ref), (value, ref)
    else:
        assert abs(value - ref) <= 1e-9, (value, ref)


CASES = [(37, 53, 16, 0.0), (120, 80, 64, 0.3), (5, 9, 300, 0.0), (64, 31, 128, 0.05), (2, 3, 7, 1.0)]


@pytest.mark.parametrize(("m", "n", "d", "shift"), CASES)
@pytest.mark.parametrize("bandwidth", ["median", 3.0])
def test_matches_float64_reference_on_float32_inputs(m, n, d, shift, bandwidth):
    g = torch.Generator().manual_seed(m * 1000 + n)
    x = torch.randn(m, d, generator=g)
    y = torch.randn(n, d, generator=g) * 1.1 + shift
    bw = bandwidth if bandwidth == "median" else bandwidth * math.sqrt(d)
    ref, sigma = _reference(x.numpy(), y.numpy(), bw)
    value = mmd_rbf(x, y, bw)
    assert value.dtype == torch.float32 and value.shape == ()
    _assert_close_to_reference(float(value), ref)
    if bandwidth == "median":
        assert abs(float(median_bandwidth(x, y)) - sigma) <= 1e-6 * sigma


def test_float64_inputs_stay_float64_and_half_inputs_are_upcast():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 8, generator=g, dtype=torch.float64), torch.randn(20, 8, generator=g, dtype=torch.float64)
    ref, _ = _reference(x.numpy(), y.numpy())
    value = mmd_rbf(x, y)
    assert value.dtype == torch.float64 and abs(float(value) - ref) <= 1e-12
    assert mmd_rbf(x.half(), y.bfloat16()).dtype == torch.float32


def test_identical_sets_follow_the_closed_form():
    # with Y = X the unbiased estimate is exactly -2 (1 - mean_{i != j} k(x_i, x_j)) / m
    g = torch.Generator().manual_seed(1)
    x = torch.randn(50, 6, generator=g, dtype=torch.float64)
    sigma = float(median_bandwidth(x, x))
    d2 = torch.cdist(x, x) ** 2
    k = torch.exp(-d2 / (2 * sigma**2))
    off = (k.sum() - k.trace()) / (50 * 49)
    assert abs(float(mmd_rbf(x, x)) - float(-2 * (1 - off) / 50)) <= 1e-12


def test_two_samples_of_one_distribution_give_about_zero():
    g = torch.Generator().manual_seed(2)
    x = torch.nn.functional.normalize(torch.randn(200, 2048, generator=g), dim=1)
    y = torch.nn.functional.normalize(torch.randn(200, 2048, generator=g), dim=1)
    assert abs(float(mmd_rbf(x, y))) < 1e-3


def test_grows_with_the_mean_shift():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(150, 4, generator=g)
    noise = torch.randn(170, 4, generator=g)
    e1 = torch.tensor([1.0, 0.0, 0.0, 0.0])
    values = [float(mmd_rbf(noise + mu * e1, base)) for mu in (0.0, 0.5, 1.0, 2.0)]
    assert values == sorted(values) and values[0] < values[1] < values[2] < values[3]


def test_symmetric():
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(40, 5, generator=g), torch.randn(25, 5, generator=g) + 0.5
    assert abs(float(mmd_rbf(x, y)) - float(mmd_rbf(y, x))) <= 1e-6 * abs(float(mmd_rbf(x, y)))
    assert float(median_bandwidth(x, y)) == float(median_bandwidth(y, x))


@pytest.mark.parametrize(("m", "n"), [(2, 3), (3, 3), (4, 7)])  # P = 10 (even), 15 (odd), 55 (odd)
def test_median_bandwidth_is_numpys_lower_median(m, n):
    g = torch.Generator().manual_seed(m + n)
    x, y = torch.randn(m, 3, generator=g, dtype=torch.float64), torch.randn(n, 3, generator=g, dtype=torch.float64)
    z = np.concatenate([x.numpy(), y.numpy()])
    dist = np.sort([np.linalg.norm(z[i] - z[j]) for i in range(len(z)) for j in range(i + 1, len(z))])
    lower_median = dist[(len(dist) - 1) // 2]
    assert abs(float(median_bandwidth(x, y)) - lower_median) <= 1e-12 * lower_median
    # duplicates count, at distance 0
    x2 = torch.zeros(3, 2, dtype=torch.float64)
    y2 = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64)  # distances: six 0s, four 5s -> lower median 0
    y3 = torch.tensor([[3.0, 4.0], [3.0, 4.0], [6.0, 8.0]], dtype=torch.float64)
    assert float(median_bandwidth(x2, y2)) == 0.0
    assert float(median_bandwidth(x2[:2], y3)) == 5.0  # 0,5,5,10,5,5,10,0,5,5 -> sorted lower median 5


def test_chunked_tiles_equal_one_tile():
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(30, 4, generator=g, dtype=torch.float64), torch.randn(23, 4, generator=g, dtype=torch.float64)
    assert abs(float(mmd_rbf(x, y, chunk_size=7)) - float(mmd_rbf(x, y))) <= 1e-12
    assert abs(float(median_bandwidth(x, y, chunk_size=7)) - float(median_bandwidth(x, y))) <= 1e-12


def test_selection_path_above_4096_points_equals_the_direct_median(monkeypatch):
    g = torch.Generator().manual_seed(6)
    x, y = torch.randn(2600, 1, generator=g), torch.randn(2400, 1, generator=g) * 1.3 + 0.2  # N = 5000 > 4096
    selected = median_bandwidth(x, y)
    monkeypatch.setattr(mmd_module, "_SMALL_PAIRS", 10**9)  # collect every pair and take kthvalue
    direct = median_bandwidth(x, y)
    assert float(selected) == float(direct)


@pytest.mark.parametrize(("cap_values", "points", "bins"), [(50, 16, 4), (3, 8, 2), (1, 4, 2)])
def test_selection_refines_when_the_bracket_misses(monkeypatch, cap_values, points, bins):
    """Tiny collection caps force the histogram refinement; ties and duplicates included."""
    g = torch.Generator().manual_seed(7)
    sets = [
        (torch.randn(40, 3, generator=g, dtype=torch.float64), torch.randn(33, 3, generator=g, dtype=torch.float64)),
        (torch.randint(0, 3, (40, 1), generator=g).double(), torch.randint(0, 3, (31, 1), generator=g).double()),
        (torch.zeros(20, 2, dtype=torch.float64), torch.randn(25, 2, generator=g, dtype=torch.float64)),
    ]
    expected = [float(median_bandwidth(x, y, chunk_size=7)) for x, y in sets]
    monkeypatch.setattr(mmd_module, "_SMALL_PAIRS", 0)
    monkeypatch.setattr(mmd_module, "_COLLECT_BYTES", 8 * cap_values)
    monkeypatch.setattr(mmd_module, "_BRACKET_POINTS", points)
    monkeypatch.setattr(mmd_module, "_HIST_BINS", bins)
    assert [float(median_bandwidth(x, y, chunk_size=7)) for x, y in sets] == expected


def test_zero_median_gives_nan_and_a_warning():
    x = torch.zeros(5, 3)
    y = torch.cat([torch.zeros(4, 3), torch.ones(1, 3)])
    with pytest.warns(UserWarning, match="median"):
        assert torch.isnan(mmd_rbf(x, y))


@pytest.mark.parametrize(
    ("x", "y", "error"),
    [
        (torch.randn(1, 4), torch.randn(5, 4), ValueError),
        (torch.randn(5, 4), torch.randn(1, 4), ValueError),
        (torch.randn(5, 4), torch.randn(5, 3), ValueError),
        (torch.randn(5), torch.randn(5, 1), ValueError),
        (torch.randint(0, 5, (5, 4)), torch.randn(5, 4), TypeError),
        (torch.randn(5, 4), [[0.0] * 4] * 5, TypeError),
        (torch.full((5, 4), float("nan")), torch.randn(5, 4), ValueError),
    ],
)
def test_bad_inputs_raise(x, y, error):
    with pytest.raises(error):
        mmd_rbf(x, y)


@pytest.mark.parametrize("bandwidth", ["mean", 0.0, -1.0, float("inf"), True])
def test_bad_bandwidth_raises(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        mmd_rbf(torch.randn(4, 2), torch.randn(4, 2), bandwidth)
    with pytest.raises(ValueError, match="chunk_size"):
        mmd_rbf(torch.randn(4, 2), torch.randn(4, 2), chunk_size=0)


@pytest.mark.parametrize(("m", "n"), [(2, 3), (17, 9)])
def test_biased_v_statistic_is_the_mean_over_all_pairs(m, n):
    # Gretton et al. 2012 Eq. 5: every mean over all m² / n² / mn pairs, self-pairs (k = 1) included
    g = torch.Generator().manual_seed(m)
    x, y = torch.randn(m, 4, generator=g, dtype=torch.float64), torch.randn(n, 4, generator=g, dtype=torch.float64)
    sigma = 1.7

    def k(a, b):
        return np.exp(-(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)) / (2 * sigma**2))

    xa, ya = x.numpy(), y.numpy()
    expected = k(xa, xa).mean() + k(ya, ya).mean() - 2 * k(xa, ya).mean()
    got = float(mmd_rbf(x, y, sigma, unbiased=False))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert got >= 0 and got != pytest.approx(float(mmd_rbf(x, y, sigma)), rel=1e-6)
