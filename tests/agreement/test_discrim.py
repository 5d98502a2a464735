"""AUC, linear-probe AUC and separation (PRISM ViewMatch statistics)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scenemetrics.agreement import Separation, auc, linear_probe_auc, separation


def brute_force_auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """O(n^2) count: a positive above a negative scores 1, a tie 1/2."""
    diff = np.asarray(pos)[:, None] - np.asarray(neg)[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def test_auc_worked_example() -> None:
    # 4 (pos, neg) pairs: .9>.1, .9>.8, .8>.1, .8=.8 (half) -> 3.5 / 4
    assert auc([0.9, 0.8], [0.1, 0.8]) == pytest.approx(0.875, abs=1e-12)


def test_auc_orientation_and_torch_input() -> None:
    assert auc([0.1, 0.2], [0.5, 0.6], higher_is_positive=False) == 1.0
    assert auc([0.1, 0.2], [0.5, 0.6]) == 0.0
    assert auc(torch.tensor([0.75, 0.5]), torch.tensor([0.25, 0.5], dtype=torch.float16)) == 0.875


values = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, -1.0, 3.5]) | st.floats(-5, 5), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(values, values, st.booleans())
def test_auc_equals_brute_force(pos: list[float], neg: list[float], higher: bool) -> None:
    p, n = np.array(pos), np.array(neg)
    expected = brute_force_auc(p, n) if higher else brute_force_auc(-p, -n)
    assert auc(p, n, higher_is_positive=higher) == pytest.approx(expected, abs=1e-12)


def test_separation_table_layout() -> None:
    s = separation([0.299, 0.2, 0.4], [0.703, 0.9], higher_is_positive=False)
    assert isinstance(s, Separation)
    assert s.mean_pos == pytest.approx(0.299666666666)
    assert s.mean_neg == pytest.approx(0.8015)
    assert s.auc == 1.0 and (s.n_pos, s.n_neg) == (3, 2)
    # a metric that prefers negatives has an AUC below chance, reported as is
    assert separation([0.1, 0.2], [0.3, 0.4], higher_is_positive=True).auc == 0.0


@pytest.mark.parametrize("fn", [auc, lambda p, n: separation(p, n, higher_is_positive=True)])
def test_empty_or_bad_side_raises(fn) -> None:
    with pytest.raises(ValueError, match="scores_pos is empty"):
        fn([], [1.0])
    with pytest.raises(ValueError, match="scores_neg is empty"):
        fn([1.0], [])
    with pytest.raises(ValueError, match=r"scores_neg\[1\] = nan"):
        fn([1.0], [0.0, float("nan")])
    with pytest.raises(ValueError, match="scores_pos must be 1-D"):
        fn([[1.0, 2.0]], [0.0])


def test_linear_probe_one_feature_equals_feature_auc() -> None:
    # with one feature the probe's logits are an affine map of it, so the probe AUC equals the feature's own AUC
    # (oriented by the sign the probe learned, which follows the training data)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 60)
    x = rng.normal(size=(120, 1)) + 0.8 * y[:, None]
    tr, te = np.arange(120) % 2 == 0, np.arange(120) % 2 == 1
    got = linear_probe_auc(x[tr], y[tr], x[te], y[te], l2=0.0)
    assert got == pytest.approx(auc(x[te][y[te] == 1, 0], x[te][y[te] == 0, 0]), abs=1e-12)


def test_linear_probe_finds_the_informative_direction() -> None:
    rng = np.random.default_rng(1)
    n, d = 400, 20
    y = rng.integers(0, 2, n)
    x = rng.normal(size=(n, d))
    x[:, 7] += 3.0 * y  # only feature 7 carries the label
    got = linear_probe_auc(x[:300], y[:300], x[300:], y[300:])
    assert got > 0.95
    noise = linear_probe_auc(rng.normal(size=(300, d)), y[:300], rng.normal(size=(100, d)), y[300:])
    assert 0.3 < noise < 0.7


def test_linear_probe_weights_and_standardize() -> None:
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 50)
    x = rng.normal(size=(100, 2)) * [1.0, 1000.0] + y[:, None] * [1.0, 0.0]
    a = linear_probe_auc(x[::2], y[::2], x[1::2], y[1::2], standardize=True)
    assert a > 0.6
    # uniform weights are the unweighted probe
    assert linear_probe_auc(x[::2], y[::2], x[1::2], y[1::2], sample_weight=np.full(50, 3.0)) == pytest.approx(a)


def test_linear_probe_bad_inputs() -> None:
    x, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="y_train holds a single class"):
        linear_probe_auc(x, [1, 1, 1, 1], x, y)
    with pytest.raises(ValueError, match="y_test holds a single class"):
        linear_probe_auc(x, y, x, [0, 0, 0, 0])
    with pytest.raises(ValueError, match="same feature width"):
        linear_probe_auc(x, y, np.zeros((4, 3)), y)
    with pytest.raises(ValueError, match="y_train must have one label per feature row"):
        linear_probe_auc(x, [0, 1], x, y)
    with pytest.raises(ValueError, match=r"y_train\[2\] = 2.0"):
        linear_probe_auc(x, [0, 1, 2, 1], x, y)
    with pytest.raises(ValueError, match="x_train must be a non-empty"):
        linear_probe_auc(np.zeros(4), y, x, y)
    with pytest.raises(ValueError, match="l2 must be"):
        linear_probe_auc(x, y, x, y, l2=-1.0)
    with pytest.raises(ValueError, match="sample_weight must have one weight"):
        linear_probe_auc(x, y, x, y, sample_weight=[1.0])


def test_separation_statistics_live_in_the_core_module():
    # PRISM's head study and the agreement tools share one implementation, below both rooms
    import scenemetrics.agreement.discrim as discrim
    import scenemetrics.stats as stats
    from scenemetrics import agreement

    for name in ("auc", "separation", "Separation"):
        assert getattr(agreement, name) is getattr(stats, name)
        assert getattr(discrim, name) is getattr(stats, name)
    assert stats.separation([0.3, 0.2], [0.7, 0.8], higher_is_positive=False) == stats.Separation(0.25, 0.75, 1.0, 2, 2)
