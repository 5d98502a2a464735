"""Bootstrap intervals and the Kendall-tau stability study."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenemetrics.agreement import bootstrap_ci, kendall_stability


def test_bootstrap_deterministic_and_brackets_the_mean() -> None:
    x = np.random.default_rng(0).normal(size=100)
    a = bootstrap_ci(np.mean, x, n=400, seed=7)
    b = bootstrap_ci(np.mean, x, n=400, seed=7)
    c = bootstrap_ci(np.mean, x, n=400, seed=8)
    assert (a.low, a.high) == (b.low, b.high) and (a.low, a.high) != (c.low, c.high)
    assert a.low <= a.estimate <= a.high
    assert a.estimate == pytest.approx(x.mean())
    # the percentile interval of the mean of N(0, 1) x 100 has a width close to 2 * 1.96 / sqrt(100)
    assert 0.25 < a.high - a.low < 0.55
    assert a.n == a.n_valid == 400 and a.samples.shape == (400,)


def test_bootstrap_replicates_follow_the_documented_draw() -> None:
    x = np.arange(10.0)
    res = bootstrap_ci(np.mean, x, n=3, seed=5)
    rng = np.random.default_rng(5)
    expected = [x[rng.integers(0, 10, 10)].mean() for _ in range(3)]
    np.testing.assert_allclose(res.samples, expected)


def test_bootstrap_constant_data_zero_width() -> None:
    res = bootstrap_ci(np.mean, np.full(20, 3.0), n=50)
    assert res.low == res.high == res.estimate == 3.0


def test_bootstrap_paired_arrays_and_vector_statistics() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=80)
    y = x + rng.normal(0, 0.1, 80)
    res = bootstrap_ci(lambda a, b: np.array([np.corrcoef(a, b)[0, 1], np.mean(a - b)]), x, y, n=200)
    assert res.estimate.shape == (2,) and res.samples.shape == (200, 2)
    assert res.low[0] > 0.98  # pairs stay paired: the correlation stays near 1 in every replicate


def test_bootstrap_cluster_resamples_whole_groups() -> None:
    groups = np.repeat(np.arange(5), 4)
    x = np.repeat(np.arange(5.0), 4)  # constant within each group
    res = bootstrap_ci(lambda a: float(len(np.unique(a)) <= 5 and len(a) == 20), x, n=30, groups=groups)
    assert res.low == 1.0  # every replicate has 5 whole groups of 4
    spread = bootstrap_ci(np.mean, x, n=200, groups=groups, seed=0)
    assert spread.low < 2.0 < spread.high


def test_bootstrap_bca_matches_scipy() -> None:
    from scipy.stats import bootstrap

    x = np.random.default_rng(2).normal(size=40)
    ours = bootstrap_ci(np.mean, x, n=300, method="bca", seed=3)
    ref = bootstrap((x,), np.mean, paired=True, vectorized=False, method="BCa", n_resamples=300,
                    rng=np.random.default_rng(3))  # fmt: skip
    assert (ours.low, ours.high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))


def test_bootstrap_warns_when_replicates_are_undefined() -> None:
    with pytest.warns(UserWarning, match="finite statistic"):
        res = bootstrap_ci(lambda a: np.nan if a[0] > 0 else 1.0, np.array([-1.0, 1.0]), n=100, seed=0)
    assert res.n_valid < 90


def test_bootstrap_errors() -> None:
    with pytest.raises(ValueError, match=r"`level` must be a finite number in \(0, 1\)"):
        bootstrap_ci(np.mean, np.ones(3), level=1.0)
    with pytest.raises(ValueError, match="`n` must be an int >= 1"):
        bootstrap_ci(np.mean, np.ones(3), n=0)
    with pytest.raises(ValueError, match="share their length"):
        bootstrap_ci(lambda a, b: 0.0, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="groups must have one label per sample"):
        bootstrap_ci(np.mean, np.ones(3), groups=[0, 1])
    with pytest.raises(ValueError, match="`method` must be one of"):
        bootstrap_ci(np.mean, np.ones(3), method="basic")
    with pytest.raises(ValueError, match="does not support groups"):
        bootstrap_ci(np.mean, np.ones(3), method="bca", groups=[0, 0, 1])


def _simulated(theta: np.ndarray, raters: int, houses: int, seed: int) -> np.ndarray:
    """Every rater judges every pair in every house; i wins with probability sigmoid(theta_i - theta_j)."""
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(len(theta), k=1)
    rows = []
    for r in range(raters):
        for h in range(houses):
            y = (rng.random(len(i)) < 1 / (1 + np.exp(-(theta[i] - theta[j])))).astype(float)
            rows.append(np.column_stack([np.full(len(i), r), np.full(len(i), h), i, j, y]))
    return np.concatenate(rows)


def test_stability_full_size_is_exact_and_curves_rise() -> None:
    theta = np.linspace(-2, 2, 8)
    table = _simulated(theta, raters=6, houses=3, seed=0)
    for unit, units in (("rater", 6), ("house", 3)):
        res = kendall_stability(table, unit=unit, n=30, seed=0)
        assert res.sizes.tolist() == list(range(1, units + 1))
        # all units drawn = the full data: identical rankings
        assert res.tau_mean[-1] == pytest.approx(1.0, abs=1e-12) and res.tau_low[-1] == pytest.approx(1.0, abs=1e-12)
        assert res.tau_mean[0] < 1.0 and np.all(np.diff(res.tau_mean) > -0.05)
        assert np.all(res.tau_low <= res.tau_mean) and np.all(res.tau_mean <= res.tau_high)
    comp = kendall_stability(table, unit="comparison", sizes=[5, 20, 84], n=20, seed=0)
    assert comp.tau_mean[-1] == pytest.approx(1.0, abs=1e-12) and comp.tau_mean[0] < comp.tau_mean[-1]


def test_stability_min_size_rule() -> None:
    table = _simulated(np.linspace(-2, 2, 6), raters=8, houses=1, seed=1)
    res = kendall_stability(table, unit="rater", n=40, seed=0, threshold=0.9)
    ok = res.tau_mean >= 0.9
    expected = next(int(s) for k, s in enumerate(res.sizes) if ok[k:].all())
    assert res.min_size == expected
    strict = kendall_stability(table, unit="rater", n=40, seed=0, threshold=0.9, criterion="low")
    assert strict.min_size is None or strict.min_size >= res.min_size


def test_stability_errors() -> None:
    table = _simulated(np.zeros(4), raters=3, houses=1, seed=0)
    with pytest.raises(ValueError, match="`unit` must be one of"):
        kendall_stability(table, unit="item")
    with pytest.raises(ValueError, match=r"sizes must be integers in \[1, 3\]"):
        kendall_stability(table, sizes=[0, 2])
    with pytest.raises(ValueError, match=r"sizes must be integers in \[1, 3\]"):
        kendall_stability(table, sizes=[4])
    with pytest.raises(ValueError, match="`criterion` must be one of"):
        kendall_stability(table, criterion="median")
    with pytest.raises(ValueError, match=r"table\[0\].*compared with itself"):
        kendall_stability([[0, 0, 1, 1, 1.0]])
    assert math.isfinite(kendall_stability(table, n=2).tau_mean[-1])
