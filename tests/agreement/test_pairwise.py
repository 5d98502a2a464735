"""Pairwise tools: agreement, majority votes, reliability, vote correlation, rank concordance, paper fixtures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from scenemetrics.agreement import (
    PAPER_TARGETS,
    easy_pair_accuracy,
    majority_error_probability,
    majority_vote,
    pairwise_agreement,
    rank_concordance,
    rater_agreement,
    self_consistency,
    vote_correlation,
)
from scenemetrics.wireframe import bradley_terry


def test_agreement_rule_worked_example() -> None:
    # human outcomes a = [1, 0, .5, 1]; metric outcomes b = [1, 1, .5, .5] -> points 1, 0, 1, .5 -> 0.625;
    # without ties only pairs 0 and 1 remain -> 0.5. Four pairs (0,1), (2,3), (4,5), (6,7) in one house.
    comps = np.array([[0, 1, 1], [2, 3, 0], [4, 5, 0.5], [6, 7, 1]])
    scores = np.array([2.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # metric: 1, 1, .5, .5
    res = pairwise_agreement(scores, comps, higher_is_better=True)
    assert res.agreement == res.pooled == 0.625
    assert (res.n, res.n_human_ties, res.n_metric_ties) == (4, 1, 2)
    no_ties = pairwise_agreement(scores, comps, higher_is_better=True, drop_ties=True)
    assert no_ties.pooled == 0.5 and no_ties.n == 2


def test_orientation_tie_tol_and_per_rater_mean() -> None:
    comps = np.array([[0, 0, 0, 1, 1], [0, 0, 1, 2, 1], [1, 0, 0, 1, 0], [1, 0, 0, 2, 1], [1, 0, 1, 2, 1]])
    scores = np.array([0.1, 0.2, 0.35])  # a distance: lower is better, so 0 > 1 > 2
    res = pairwise_agreement(scores, comps, higher_is_better=False)
    assert res.per_rater == {"0": 1.0, "1": pytest.approx(2 / 3)}
    assert res.agreement == pytest.approx((1 + 2 / 3) / 2) and res.pooled == pytest.approx(4 / 5)
    tol = pairwise_agreement(scores, comps, higher_is_better=False, tie_tol=0.12)  # |0.1 - 0.2| is a tie now
    assert tol.n_metric_ties == 2  # rows 0 and 2 compare items 0 and 1
    assert pairwise_agreement(scores, comps, higher_is_better=False, by=None).per_rater == {}


def test_mapping_scores_with_houses() -> None:
    comps = np.array([[0, 0, 1, 1], [1, 0, 1, 1]])  # (house, i, j, y)
    scores = {(0, 0): 5.0, (0, 1): 1.0, (1, 0): 1.0, (1, 1): 5.0}
    assert pairwise_agreement(scores, comps, higher_is_better=True).pooled == 0.5
    with pytest.raises(ValueError, match=r"no score for \(house, item\) = \(1, 1\)"):
        pairwise_agreement({(0, 0): 5.0, (0, 1): 1.0, (1, 0): 1.0}, comps, higher_is_better=True)
    with pytest.raises(ValueError, match="no score for"):
        pairwise_agreement(np.ones((1, 2)), comps, higher_is_better=True)


def test_majority_vote_and_orientation() -> None:
    comps = [[0, 0, 1, 2, 1], [1, 0, 2, 1, 1], [2, 0, 1, 2, 0.5], [0, 1, 0, 1, 0]]
    mv = majority_vote(comps)
    # house 0, pair (1, 2): votes for 1: 1, 0 (the reversed row says 2 won), 0.5 -> share 0.5 -> tie
    np.testing.assert_allclose(mv, [[0, 1, 2, 0.5, 3, 0.5], [1, 0, 1, 0, 1, 0]])
    assert majority_vote(comps, min_votes=2).shape == (1, 6)


def test_majority_error_probability_targets_and_monotonicity() -> None:
    assert majority_error_probability(11, 0.8) == pytest.approx(0.011654205, abs=1e-9)
    assert majority_error_probability(17, 0.8) == pytest.approx(0.002581463, abs=1e-9)
    assert majority_error_probability(18, 0.8, ties="half") == pytest.approx(0.002581463, abs=1e-9)
    assert majority_error_probability(18, 0.8, ties="right") == pytest.approx(0.000910892, abs=1e-9)
    wrong = majority_error_probability(18, 0.8, ties="wrong")
    assert wrong - 0.000910892 == pytest.approx(2 * (0.002581463 - 0.000910892), abs=1e-9)
    odd = majority_error_probability(np.arange(1, 40, 2), 0.7)
    assert odd.shape == (20,) and np.all(np.diff(odd) < 0)
    assert np.all(np.diff(majority_error_probability(9, np.linspace(0.55, 1, 10))) < 0)
    assert majority_error_probability(1, 0.8) == pytest.approx(0.2)


def test_vote_correlation_sign_is_phi_and_margin() -> None:
    a, b = np.array([0.9, 0.2, 0.7, 0.1, 0.6]), np.array([0.1, 0.8, 0.3, 0.5, 0.6])
    votes = np.array([1, 0, 1, 1, 0.5])
    # sign(delta) = [1, -1, 1, -1, 0], 2v - 1 = [1, -1, 1, 1, 0]
    expected = np.corrcoef([1, -1, 1, -1, 0], [1, -1, 1, 1, 0])[0, 1]
    assert vote_correlation(a, b, votes, higher_is_better=True) == pytest.approx(expected)
    assert vote_correlation(a, b, votes, higher_is_better=False) == pytest.approx(-expected)
    shares = np.array([0.9, 0.2, 0.6, 0.7, 0.5])
    assert vote_correlation(a, b, shares, higher_is_better=True) == pytest.approx(expected)  # majority of shares
    assert vote_correlation(a, b, shares, higher_is_better=True, kind="margin") == pytest.approx(
        np.corrcoef(a - b, shares - 0.5)[0, 1]
    )
    with pytest.warns(UserWarning, match="constant"):
        assert math.isnan(vote_correlation(a, b, np.ones(5), higher_is_better=True))


def test_self_consistency_and_easy_pairs() -> None:
    comps = [
        [0, 0, 1, 2, 1], [0, 0, 2, 1, 0], [0, 0, 1, 2, 0.5],  # repeats: agree (1), half (0.5)
        [1, 0, 1, 2, 0], [1, 0, 1, 2, 1],  # another rater: opposite (0)
        [0, 1, 1, 2, 1],  # another house: no repeat
    ]  # fmt: skip
    assert self_consistency(comps) == pytest.approx((1 + 0.5 + 0) / 3)
    with pytest.warns(UserWarning, match="no rater judged the same pair twice"):
        assert math.isnan(self_consistency([[0, 1, 1]]))
    names = ["add_low", "add_high", "remove_low", "remove_high", "gt"]
    comps = [[0, 1, 1], [1, 0, 1], [2, 3, 0.5], [0, 3, 0], [4, 0, 1]]
    # counted: add_low>add_high (1), add_high>add_low (0), remove tie (0.5); cross-kind and gt rows are not easy
    assert easy_pair_accuracy(comps, names) == pytest.approx(0.5)
    assert easy_pair_accuracy(comps, dict(enumerate(names))) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="names has no entry for item id 4"):
        easy_pair_accuracy(comps, names[:4])


def test_rater_agreement_matrix() -> None:
    comps = [[0, 0, 0, 1, 1], [0, 0, 1, 2, 1], [1, 0, 1, 0, 0], [1, 0, 1, 2, 0], [2, 0, 0, 1, 0.5]]
    names, m = rater_agreement(comps)
    assert names == ["0", "1", "2"]
    assert m[0, 1] == pytest.approx(0.5)  # pair (0,1) same, pair (1,2) opposite
    assert m[0, 2] == 0.5 and m[1, 2] == 0.5
    _, nt = rater_agreement(comps, drop_ties=True)
    assert np.isnan(nt[0, 2]) and nt[0, 1] == 0.5


def test_bad_comparisons() -> None:
    with pytest.raises(ValueError, match=r"comparisons\[0\].*compared with itself"):
        pairwise_agreement([1.0, 2.0], [[1, 1, 1]], higher_is_better=True)
    with pytest.raises(ValueError, match=r"comparisons\[1\].*y must be"):
        pairwise_agreement([1.0, 2.0], [[0, 1, 1], [0, 1, 0.7]], higher_is_better=True)
    with pytest.raises(ValueError, match=r"comparisons\[0\].*non-negative integers"):
        pairwise_agreement([1.0, 2.0], [[-1, 1, 1]], higher_is_better=True)
    with pytest.raises(ValueError, match=r"rater and house ids must be non-negative integers"):
        majority_vote([[0.5, 0, 0, 1, 1]])
    with pytest.raises(ValueError, match="higher_is_better must be True or False"):
        pairwise_agreement([1.0, 2.0], [[0, 1, 1]], higher_is_better=None)
    with pytest.raises(ValueError, match="n_raters must be integers >= 1"):
        majority_error_probability(0, 0.8)
    with pytest.raises(ValueError, match=r"p_correct must be in \[0, 1\]"):
        majority_error_probability(3, 1.2)
    with pytest.raises(ValueError, match="`ties` must be one of"):
        majority_error_probability(4, 0.8, ties="coin")
    with pytest.raises(ValueError, match="`kind` must be one of"):
        vote_correlation([1, 2, 3], [3, 2, 1], [1, 0, 1], higher_is_better=True, kind="rank")
    with pytest.raises(ValueError, match="same length"):
        vote_correlation([1, 2, 3], [3, 2], [1, 0, 1], higher_is_better=True)


def _table1() -> dict:
    return PAPER_TARGETS["wireframe_table1"]["values"]


def test_wireframe_table1_quality_factor_vs_bt_tau() -> None:
    """Langerman et al. (ICCV 2025), Obs. 4.6: Kendall tau > 0.7 between the SVD quality factor and BT ranking.

    Recomputed on the paper's Table 1 columns: tau_b = 0.7215.
    """
    rows = _table1()
    theta = [r["bt_theta"] for r in rows.values()]
    qf = [r["quality_factor"] for r in rows.values()]
    tau = rank_concordance({"bt": theta, "qf": qf}, higher_is_better=True)[("bt", "qf")]
    assert tau == pytest.approx(0.7215, abs=5e-5) and tau > 0.7


@pytest.mark.slow
def test_wireframe_bt_recovers_table1_order_from_simulated_votes() -> None:
    """Comparisons simulated from Table 1's BT abilities (10 houses x 18 raters): BT recovers the order."""
    theta = np.array([r["bt_theta"] for r in _table1().values()])
    rng = np.random.default_rng(0)
    i, j = np.triu_indices(len(theta), k=1)
    rows = []
    for house in range(10):
        for rater in range(18):
            y = (rng.random(len(i)) < 1 / (1 + np.exp(-(theta[i] - theta[j])))).astype(float)
            rows.append(np.column_stack([np.full(len(i), rater), np.full(len(i), house), i, j, y]))
    table = np.concatenate(rows)
    fitted = bradley_terry(table[:, 2:]).theta
    assert kendalltau(fitted, theta).statistic >= 0.9
    # majority votes of 18 raters with these abilities agree with the true order on most pairs
    mv = majority_vote(table)
    truth = (theta[mv[:, 1].astype(int)] > theta[mv[:, 2].astype(int)]).astype(float)
    decisive = mv[:, 3] != 0.5
    assert np.mean(mv[decisive, 3] == truth[decisive]) > 0.9


def test_prism_ranking_concordance() -> None:
    """Stern, Sobol, Litany (PRISM), Tables 4/5/9/10: MMD_PRISM rankings on Toys4K, GSO, OmniObject3D.

    Kendall tau_b between every two datasets' model rankings: 13 concordant, 2 discordant of 15 pairs -> 11/15.
    """
    values = PAPER_TARGETS["prism_ranking"]["values"]
    tau = rank_concordance({k: list(v.values()) for k, v in values.items()}, higher_is_better=False)
    assert len(tau) == 3
    for value in tau.values():
        assert value == pytest.approx(0.7333, abs=5e-5)
