"""Correlation statistics: hand-computed values, scipy equivalence, invariances, the logistic fit, groups, NaN."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scenemetrics.agreement import (
    correlations,
    fit_logistic5,
    krcc,
    logistic5,
    metric_correlation_matrix,
    plcc,
    rmse,
    srcc,
)

X = [1, 2, 3, 4, 5]
Y = [5, 6, 7, 8, 7]
PARAMS = (2, 3, 0.5, 0.1, 1)


def test_hand_computed_values() -> None:
    # Pearson by hand: cov = 1.5 (sample), sd_x = sqrt(2.5), sd_y = sqrt(1.3) -> 1.5 / sqrt(3.25) = 0.8320503
    assert plcc(X, Y, fit="none") == pytest.approx(0.8320503, abs=1e-6)
    # tied ranks of y: 1, 2, 3.5, 5, 3.5
    assert srcc(X, Y) == pytest.approx(0.8207827, abs=1e-6)
    assert krcc(X, Y) == pytest.approx(0.7378648, abs=1e-6)
    assert plcc(X, Y, fit="none", higher_is_better=False) == pytest.approx(-0.8320503, abs=1e-6)
    assert srcc(X, Y, higher_is_better=False) == pytest.approx(-0.8207827, abs=1e-6)
    assert krcc(X, Y, higher_is_better=False) == pytest.approx(-0.7378648, abs=1e-6)
    # torch input on any dtype gives the same numbers
    assert srcc(torch.tensor(X, dtype=torch.float32), torch.tensor(Y)) == pytest.approx(0.8207827, abs=1e-6)


def test_logistic5_values() -> None:
    # b1*(0.5 - 1/(1+exp(3*(x-0.5)))) + 0.1x + 1 at 0: 2*(0.5 - 1/(1+e^-1.5)) + 1 = 0.3648510
    np.testing.assert_allclose(logistic5([0, 0.5, 1], *PARAMS), [0.3648510, 1.05, 1.7351490], atol=1e-7)


def test_logistic5_fit_recovers_noise_free_data_and_is_unit_free() -> None:
    x = np.linspace(0, 1, 50)
    y = logistic5(x, *PARAMS)
    fit = fit_logistic5(x, y)
    assert fit.converged
    assert 1 - plcc(x, y) < 1e-9
    assert rmse(x, y) < 1e-6
    np.testing.assert_allclose(fit.params, PARAMS, rtol=1e-5)
    # x -> 10x + 3: the fitted curve in the new units gives the same predictions
    fit2 = fit_logistic5(10 * x + 3, y)
    np.testing.assert_allclose(fit2(10 * x + 3), fit(x), atol=1e-7)
    assert plcc(10 * x + 3, y) == pytest.approx(plcc(x, y), abs=1e-12)


def test_fit_subset_for_large_inputs_is_seeded() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 5000)
    y = logistic5(x, *PARAMS) + rng.normal(0, 0.05, 5000)
    a = fit_logistic5(x, y, max_points=500, seed=1)
    b = fit_logistic5(x, y, max_points=500, seed=1)
    c = fit_logistic5(x, y, max_points=500, seed=2)
    assert a.params == b.params and a.params != c.params
    np.testing.assert_allclose(a(x), logistic5(x, *PARAMS), atol=0.05)


def test_fit_failure_falls_back_to_linear() -> None:
    x = np.arange(10.0)
    with pytest.warns(UserWarning, match="least-squares line"):
        fit = fit_logistic5(x, 2 * x + 1, maxfev=1)
    assert not fit.converged
    np.testing.assert_allclose(fit.params, (0, 0, 0, 2, 1), atol=1e-9)


def test_linear_fit_keeps_plcc_and_gives_rmse_in_human_units() -> None:
    x, y = np.array([1.0, 2, 3, 4, 5, 7]), np.array([2.0, 4.5, 5.5, 8, 10, 14.5])
    assert plcc(x, y, fit="linear") == pytest.approx(plcc(x, y, fit="none"), abs=1e-12)
    a, b = np.polyfit(x, y, 1)
    assert rmse(x, y, fit="linear") == pytest.approx(np.sqrt(np.mean((a * x + b - y) ** 2)), abs=1e-12)
    assert rmse(x, y, fit="none") == pytest.approx(np.sqrt(np.mean((x - y) ** 2)), abs=1e-12)


def test_logistic5_beats_linear_on_sigmoid_data_and_maxcorr_is_at_least_as_good() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, 80)
    y = 1 / (1 + np.exp(-3 * x)) + rng.normal(0, 0.03, 80)
    lin, log5 = plcc(x, y, fit="none"), plcc(x, y, fit="logistic5")
    assert log5 >= lin - 1e-9 and log5 > 0.98
    assert plcc(x, y, fit="logistic5-maxcorr") >= log5 - 1e-9


# values on a 1/8 grid: ties are frequent and 3x + 1, exp(x / 50) stay strictly increasing in float64
grid = st.integers(-400, 400).map(lambda k: k / 8)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(3, 200).flatmap(lambda n: st.tuples(st.lists(grid, min_size=n, max_size=n),
                                                       st.lists(grid, min_size=n, max_size=n))))  # fmt: skip
def test_equal_to_scipy(xy: tuple[list[float], list[float]]) -> None:
    x, y = np.array(xy[0]), np.array(xy[1])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        with pytest.warns(UserWarning, match="constant"):
            assert math.isnan(srcc(x, y))
        return
    assert srcc(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
    assert krcc(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)
    assert plcc(x, y, fit="none") == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    # rank statistics: invariant under strictly increasing maps, symmetric in (pred, human)
    assert srcc(3 * x + 1, y) == pytest.approx(srcc(x, y), abs=1e-12)
    assert srcc(np.exp(x / 50), y) == pytest.approx(srcc(x, y), abs=1e-12)
    assert krcc(np.exp(x / 50), y) == pytest.approx(krcc(x, y), abs=1e-12)
    assert srcc(y, x) == pytest.approx(srcc(x, y), abs=1e-12)
    assert krcc(y, x) == pytest.approx(krcc(x, y), abs=1e-12)
    # Pearson without a fit: invariant under positive affine maps
    assert plcc(3 * x + 1, y, fit="none") == pytest.approx(plcc(x, y, fit="none"), abs=1e-9)


def test_kendall_variant_c() -> None:
    assert krcc(X, Y, variant="c") == pytest.approx(scipy.stats.kendalltau(X, Y, variant="c").statistic)


def test_constant_inputs_give_nan_with_warning() -> None:
    for fn in (srcc, krcc, lambda a, b: plcc(a, b, fit="none")):
        with pytest.warns(UserWarning, match="constant"):
            assert math.isnan(fn([1, 1, 1, 1], [1, 2, 3, 4]))
        with pytest.warns(UserWarning, match="constant"):
            assert math.isnan(fn([1, 2, 3, 4], [2, 2, 2, 2]))


def test_nan_policy() -> None:
    x, y = [1, 2, np.nan, 4, 5, 6], [1, 3, 2, 5, 4, 6]
    with pytest.raises(ValueError, match=r"pred\[2\] = nan"):
        srcc(x, y)
    with pytest.warns(UserWarning, match="dropped 1 of 6"):
        got = srcc(x, y, nan_policy="omit")
    assert got == pytest.approx(scipy.stats.spearmanr([1, 2, 4, 5, 6], [1, 3, 5, 4, 6]).statistic)
    with pytest.warns(UserWarning, match="dropped 1 of 6"):
        res = correlations(x, y, fit="none", nan_policy="omit")
    assert (res.n, res.n_omitted) == (5, 1)
    assert res.to_dict()["n_omitted"] == 1


def test_correlations_pooled_and_groups() -> None:
    rng = np.random.default_rng(0)
    g = np.repeat(["s1", "s2", "s3"], 10)
    x = rng.normal(size=30)
    y = x + rng.normal(0, 0.5, 30)
    pooled = correlations(x, y, fit="none", groups=g)
    assert pooled.srcc == pytest.approx(srcc(x, y))
    assert math.isnan(pooled.srcc_std)
    assert pooled.per_group["s2"]["srcc"] == pytest.approx(srcc(x[10:20], y[10:20]))
    mean = correlations(x, y, fit="logistic5", groups=g, aggregate="mean")
    per = [plcc(x[k : k + 10], y[k : k + 10]) for k in (0, 10, 20)]
    assert mean.plcc == pytest.approx(np.mean(per), abs=1e-9)
    assert mean.plcc_std == pytest.approx(np.std(per), abs=1e-9)
    assert mean.fit is None
    d = mean.to_dict()
    assert set(d) >= {"plcc", "srcc", "krcc", "rmse", "per_group", "ci", "fit_params"}


def test_correlations_bootstrap_ci_covers_estimate() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    y = x + rng.normal(0, 1, 60)
    res = correlations(x, y, fit="none", ci=0.95, n_boot=150, seed=0)
    for s in ("plcc", "srcc", "krcc"):
        low, high = res.ci[s]
        assert low <= getattr(res, s) <= high
    again = correlations(x, y, fit="none", ci=0.95, n_boot=150, seed=0)
    assert again.ci == res.ci
    grouped = correlations(x, y, fit="none", ci=0.9, n_boot=50, groups=np.arange(60) // 6)
    assert grouped.ci["srcc"][0] <= grouped.srcc <= grouped.ci["srcc"][1]
    mean_ci = correlations(x, y, fit="none", ci=0.9, n_boot=50, groups=np.arange(60) // 6, aggregate="mean")
    assert mean_ci.ci["srcc"][0] <= mean_ci.srcc <= mean_ci.ci["srcc"][1]


def test_metric_correlation_matrix_orients_lower_is_better() -> None:
    psnr, lpips, rand = [30.0, 25, 20, 27], [0.1, 0.3, 0.5, 0.2], [3.0, 1, 2, 0]
    names, m = metric_correlation_matrix(
        {"psnr": psnr, "lpips": lpips, "r": rand}, higher_is_better={"psnr": True, "lpips": False, "r": True}
    )
    assert names == ["psnr", "lpips", "r"]
    assert m[0, 1] == pytest.approx(scipy.stats.pearsonr(psnr, -np.array(lpips)).statistic)
    assert m[0, 1] > 0.95 and np.allclose(m, m.T) and np.allclose(np.diag(m), 1)
    _, ms = metric_correlation_matrix(
        {"a": psnr, "b": rand}, higher_is_better={"a": True, "b": True}, method="spearman"
    )
    assert ms[0, 1] == pytest.approx(scipy.stats.spearmanr(psnr, rand).statistic)


def test_errors() -> None:
    with pytest.raises(ValueError, match="same length"):
        srcc([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="pred must be 1-D"):
        srcc([[1, 2, 3]], [1, 2, 3])
    with pytest.raises(ValueError, match="at least 3"):
        srcc([1, 2], [1, 2])
    with pytest.raises(ValueError, match="at least 6 samples"):
        plcc([1, 2, 3, 4, 5], [1, 2, 3, 4, 6])
    with pytest.raises(ValueError, match="`fit` must be one of"):
        plcc(X, Y, fit="cubic")
    with pytest.raises(ValueError, match="`variant` must be one of"):
        krcc(X, Y, variant="a")
    with pytest.raises(ValueError, match="`aggregate` must be one of"):
        correlations(X, Y, fit="none", aggregate="median")
    with pytest.raises(ValueError, match="`nan_policy` must be one of"):
        srcc(X, Y, nan_policy="propagate")
    with pytest.raises(ValueError, match="`method` must be one of"):
        metric_correlation_matrix({"a": X}, higher_is_better={"a": True}, method="cosine")
    with pytest.raises(ValueError, match=r"human\[1\] = inf"):
        krcc(X, [1, np.inf, 2, 3, 4])
    with pytest.raises(ValueError, match="groups must have one label per sample"):
        correlations(X, Y, fit="none", groups=["a", "b"])
    with pytest.raises(ValueError, match="higher_is_better must be True or False"):
        srcc(X, Y, higher_is_better=None)
    with pytest.raises(ValueError, match="ci must be None or one of"):
        correlations(X, Y, fit="none", ci=0.5)
    with pytest.raises(ValueError, match="aggregate='mean' needs groups"):
        correlations(X, Y, fit="none", aggregate="mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert srcc(X, Y) > 0  # valid input: no warning at all
