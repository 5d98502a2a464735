"""Preference tools: win rates, Bradley-Terry, Elo, implied win rates, quality factor, agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from scenemetrics.wireframe import (
    agreement,
    agreement_matrix,
    bradley_terry,
    elo,
    implied_win_rates,
    preferences_from_scores,
    quality_factor,
    win_rate_matrix,
    win_rates,
)


def simulate(theta: np.ndarray, n: int, seed: int, tie_band: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    i = rng.integers(len(theta), size=n)
    j = (i + rng.integers(1, len(theta), size=n)) % len(theta)
    p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
    u = rng.random(n)
    y = (u < p).astype(float)
    if tie_band:
        y[np.abs(u - p) < tie_band] = 0.5
    return np.column_stack([i, j, y])


def test_win_rates_hand_made():
    comps = [[0, 1, 1], [0, 1, 1], [1, 2, 0.5], [2, 0, 0], [3.0, 0.0, 1.0]]
    # item 0: wins 2, 1 (as j in (2, 0, 0)), loses to 3 -> 3 / 4; item 1: 0 + 0 + 0.5 of 3;
    # item 2: 0.5 + 0 of 2; item 3: 1 of 1; item 4 never compared
    wr = win_rates(comps, n_items=5)
    assert wr[:4].tolist() == [0.75, 0.5 / 3, 0.25, 1.0]
    assert math.isnan(wr[4])
    assert win_rates(np.zeros((0, 3)), n_items=2).shape == (2,)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([[0, 1]], "shape"),
        ([[0, 0, 1]], "itself"),
        ([[0, 1, 0.7]], "y must be"),
        ([[-1, 1, 1]], "non-negative integers"),
        ([[0.5, 1, 1]], "non-negative integers"),
        ([[0, np.nan, 1]], "finite"),
    ],
)
def test_bad_comparisons(bad, match):
    with pytest.raises(ValueError, match=match):
        win_rates(bad)
    with pytest.raises(ValueError, match=match):
        bradley_terry(bad)


def test_n_items_too_small():
    with pytest.raises(ValueError, match="n_items"):
        win_rates([[0, 3, 1]], n_items=3)


def test_elo_and_implied_win_rates_formulas():
    theta = np.array([1.0, 0.0, -0.5])
    assert elo(theta).tolist() == [1200.0, 800.0, 600.0]
    assert elo(theta, scale=10, offset=1).tolist() == [11.0, 1.0, -4.0]
    s = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    expected = [(s(1) + s(1.5)) / 2, (s(-1) + s(0.5)) / 2, (s(-1.5) + s(-0.5)) / 2]
    assert implied_win_rates(theta) == pytest.approx(expected, abs=1e-15)
    assert implied_win_rates(elo(theta), scale=400.0) == pytest.approx(expected, abs=1e-12)
    assert implied_win_rates(theta).sum() == pytest.approx(1.5)  # every pair sums to 1
    nan_theta = np.array([1.0, np.nan, -0.5])
    got = implied_win_rates(nan_theta)
    assert math.isnan(got[1]) and got[0] == pytest.approx(s(1.5))


def test_bradley_terry_recovers_known_abilities():
    truth = np.linspace(-1.5, 1.5, 10)
    comps = simulate(truth, 4000, seed=0)
    res = bradley_terry(comps)
    tau = kendalltau(res.theta, truth).statistic
    assert tau >= 0.9
    assert abs(res.theta.mean()) < 1e-12
    assert np.allclose(res.theta, truth - truth.mean(), atol=0.25)
    assert res.elo == pytest.approx(400 * res.theta + 800)
    assert res.implied_win_rates == pytest.approx(implied_win_rates(res.theta))
    assert res.ratings == pytest.approx(res.theta)
    assert 0 < res.n_steps <= 5000 and math.isfinite(res.loss)
    scaled = bradley_terry(comps, scale=400, offset=800)
    assert scaled.ratings == pytest.approx(400 * scaled.theta + 800)


def test_bradley_terry_matches_a_closed_form_two_item_case():
    # 3 wins of item 0 out of 4: the maximum-likelihood difference is log(3)
    res = bradley_terry([[0, 1, 1]] * 3 + [[1, 0, 1]], tol=1e-14, max_steps=20000)
    assert res.theta[0] - res.theta[1] == pytest.approx(math.log(3), abs=1e-4)


def test_ties_half_versus_drop():
    # item 0 beats 1 twice and ties once: "half" -> p = 2.5 / 3, "drop" -> p = 1 (diverges; stays large)
    comps = [[0, 1, 1], [0, 1, 1], [0, 1, 0.5], [1, 0, 0]]
    half = bradley_terry(comps, tol=1e-14, max_steps=20000)
    assert half.theta[0] - half.theta[1] == pytest.approx(math.log(3.5 / 0.5), abs=1e-3)
    comps2 = [[0, 1, 1], [1, 0, 1], [0, 1, 0.5], [0, 1, 0.5], [0, 1, 0.5]]
    dropped = bradley_terry(comps2, ties="drop", tol=1e-14, max_steps=20000)
    assert dropped.theta[0] - dropped.theta[1] == pytest.approx(0.0, abs=1e-4)
    with pytest.raises(ValueError, match="after dropping ties"):
        bradley_terry([[0, 1, 0.5]], ties="drop")
    with pytest.raises(ValueError, match="ties"):
        bradley_terry(comps, ties="ignore")


def test_bradley_terry_items_never_compared_are_nan_and_seed_is_deterministic():
    comps = [[0, 2, 1], [2, 0, 0], [0, 2, 0]]
    res = bradley_terry(comps, n_items=4)
    assert math.isnan(res.theta[1]) and math.isnan(res.theta[3])
    assert res.theta[0] + res.theta[2] == pytest.approx(0.0, abs=1e-12)
    again = bradley_terry(comps, n_items=4)
    assert np.array_equal(res.theta, again.theta, equal_nan=True)


def test_bradley_terry_speed_on_the_paper_scale():
    truth = np.random.default_rng(1).normal(size=27)
    comps = simulate(truth, 35_000, seed=2)
    res = bradley_terry(comps, max_steps=3000)
    assert kendalltau(res.theta, truth).statistic >= 0.9


def test_win_rate_matrix_and_quality_factor_rank_one_recovery():
    assert win_rate_matrix([[[0, 1, 1]], [[0, 1, 0]]], 2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    rng = np.random.default_rng(4)
    quality = rng.normal(size=8)
    rater = rng.uniform(0.5, 2.0, size=5)
    eta = np.outer(quality, rater)
    m = 1 / (1 + np.exp(-eta))
    f = quality_factor(m)
    assert np.allclose(f, quality / np.linalg.norm(quality), atol=1e-9)
    # sign rule: correlates positively with the row means, even if the SVD returns the other sign
    assert np.corrcoef(f, m.mean(axis=1))[0, 1] > 0
    assert np.allclose(quality_factor(1 - m), -f, atol=1e-9)
    with pytest.raises(ValueError, match="NaN"):
        quality_factor(np.array([[0.5, np.nan]]))
    with pytest.raises(ValueError, match="eps"):
        quality_factor(m, eps=0.0)


def test_agreement_hand_made_and_ties():
    a = [1, 0, 0.5, 1, 0.5, np.nan]
    b = [1, 1, 0.5, 0.5, 0, 1]
    # points: 1, 0, 1, 0.5, 0.5, ignored -> 3 / 5
    assert agreement(a, b) == pytest.approx(0.6)
    assert agreement(a, b, drop_ties=True) == pytest.approx(0.5)  # pairs 0 and 1 only
    with pytest.warns(UserWarning, match="no pair"):
        assert math.isnan(agreement([0.5], [1], drop_ties=True))
    with pytest.raises(ValueError, match="outcomes must be"):
        agreement([2], [1])
    with pytest.raises(ValueError, match="same pairs"):
        agreement([1, 0], [1])


def test_agreement_matrix_and_preferences_from_scores():
    human = preferences_from_scores([3.0, 1.0, 2.0, 5.0], [1.0, 2.0, 2.0, 4.95], higher_is_better=True, tie_tol=0.1)
    assert human.tolist() == [1.0, 0.0, 0.5, 0.5]
    lower = preferences_from_scores([3.0, 1.0], [1.0, 2.0], higher_is_better=False)
    assert lower.tolist() == [0.0, 1.0]
    assert math.isnan(preferences_from_scores([np.nan], [1.0], higher_is_better=True)[0])
    names, mat = agreement_matrix({"human": human, "metric": [1, 1, 0.5, 0], "same": human})
    assert names == ["human", "metric", "same"]
    assert mat[0, 1] == mat[1, 0] == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert mat[0, 2] == 1.0 and np.all(np.diag(mat) == 1.0)


def test_argument_errors():
    comps = [[0, 1, 1]]
    for kwargs, match in (
        ({"lr": 0.0}, "lr > 0"),
        ({"tol": -1.0}, "tol >= 0"),
        ({"l2": -0.1}, "l2 >= 0"),
        ({"max_steps": 0}, "max_steps"),
        ({"scale": math.inf}, "scale must be finite"),
    ):
        with pytest.raises(ValueError, match=match):
            bradley_terry(comps, **kwargs)
    with pytest.raises(ValueError, match="at least one comparison"):
        bradley_terry(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="scale"):
        implied_win_rates([0.0, 1.0], scale=0.0)
    with pytest.raises(ValueError, match="same shape"):
        preferences_from_scores([1.0, 2.0], [1.0], higher_is_better=True)
    with pytest.raises(ValueError, match="tie_tol"):
        preferences_from_scores([1.0], [1.0], higher_is_better=True, tie_tol=-1.0)
    with pytest.raises(ValueError, match="comparisons_per_rater is empty"):
        win_rate_matrix([], 3)
    with pytest.raises(ValueError, match=r"comparisons_per_rater\[1\]"):
        win_rate_matrix([[[0, 1, 1]], [[0, 0, 1]]], 2)


def test_l2_penalty_shrinks_abilities():
    comps = [[0, 1, 1]] * 3 + [[1, 0, 1]]
    free = bradley_terry(comps, tol=1e-14, max_steps=20000)
    shrunk = bradley_terry(comps, l2=0.5, tol=1e-14, max_steps=20000)
    assert 0 < shrunk.theta[0] - shrunk.theta[1] < free.theta[0] - free.theta[1]
