"""Object retrieval: queries, masks, selection, greedy matching and AP (spec §5.6, §12.3)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import (
    THRESHOLDS,
    RetrievalQuery,
    generate_queries,
    load_query_mapping,
    pooled_retrieval_ap,
    retrieval_ap,
)
from scenemetrics.openlex3d.retrieval import average_precision

from . import ol3_reference as ref
from .ol3_helpers import categories_dict, sample

ARGS = ("pred_points", "pred_features", "pred_index", "query_features", "queries", "gt_points", "gt_ids")


def call(scene, **kw):
    return retrieval_ap(*(scene[k] for k in ARGS), **kw)


def test_thresholds():
    assert THRESHOLDS == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.25)


def test_worked_example_12_3(ret_example):
    with pytest.warns(UserWarning, match=r"1 \(query, object\) pair\(s\).*\[99\]"):
        res = call(ret_example, top_k=3, alignment_threshold=0.001)
    assert res.ap == pytest.approx(0.3298611111111111, abs=1e-12)
    assert res.ap50 == pytest.approx(0.59375, abs=1e-12)
    assert res.ap25 == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.ap_per_threshold.numpy(), [0.59375] * 5 + [0.0] * 4 + [1.0], atol=1e-12)
    assert res.ap_per_threshold.dtype == torch.float64
    assert (res.n_queries, res.n_gt_instances, res.n_pred_instances, res.n_skipped_gt_instances) == (3, 4, 6, 1)
    # instances: chair -> rows 0 (1.0), 1 (0.972949); lamp -> 2 (1.0), 1 (0.150348); red chair -> 1 (1.0), 0 (0.72098)
    # at IoU 0.5: chair/10 TP 1.0, chair/11 TP 0.972949, lamp/12 hard FN (IoU exactly 0.5), red chair/11 TP 1.0;
    # unmatched predictions lamp/2 (1.0), lamp/1 (0.150348), red chair/0 (0.72098) are false positives
    got = sorted(zip(res.match_scores[0].tolist(), res.match_true[0].tolist(), strict=True))
    want = sorted([(1.0, True), (0.972949, True), (1.0, True), (1.0, False), (0.150348, False), (0.72098, False)])
    assert [t for _, t in got] == [t for _, t in want]
    np.testing.assert_allclose([s for s, _ in got], [s for s, _ in want], atol=5e-7)
    assert res.hard_false_negatives.tolist() == [1] * 5 + [4] * 4 + [0]
    assert res.match_true[0].dtype == torch.bool and res.match_scores[0].dtype == torch.float64


def test_index_minus_one_is_ignored(ret_example):
    with pytest.warns(UserWarning):
        base = call(ret_example, top_k=3)
    scene = dict(ret_example, pred_index=np.array([0, 0, 0, 1, 1, 1, 1, 2, 3, 4]))
    with pytest.warns(UserWarning):
        res = call(scene, top_k=3)
    # row 4 now owns the point at (3, 0, 0): a non-empty mask, kept in "red chair"'s third slot
    assert base.n_pred_instances == 6 and res.n_pred_instances == 7


def test_query_generation():
    cats = categories_dict(
        sample(1, ["chair", "seat"], ["red", "blue"]),
        sample(2, ["chair", "chair"]),
        sample(3, ["wall"], ["poster"]),
        sample(4, ["window ledge"], ["x"]),
        sample(5, [], ["x"]),
    )
    l0 = [RetrievalQuery("level0_chair", "chair", (1, 2, 2)), RetrievalQuery("level0_seat", "seat", (1,))]
    l1 = [
        RetrievalQuery("level1_red chair", "red chair", (1,)),
        RetrievalQuery("level1_red seat", "red seat", (1,)),
        RetrievalQuery("level1_blue chair", "blue chair", (1,)),
        RetrievalQuery("level1_blue seat", "blue seat", (1,)),
        RetrievalQuery("level1_poster wall", "poster wall", (3,)),
        RetrievalQuery("level1_x window ledge", "x window ledge", (4,)),
    ]
    assert generate_queries(cats, "l0") == l0
    assert generate_queries(cats, "l1") == l1
    assert generate_queries(cats) == l0 + l1
    with pytest.raises(ValueError, match="`level` must be one of"):
        generate_queries(cats, "level0")
    with pytest.raises(TypeError, match="`categories`"):
        generate_queries(42)


def test_load_query_mapping_equals_generated(tmp_path):
    cats = categories_dict(sample(1, ["chair", "seat"], ["red"]), sample(2, ["chair"]), sample(3, ["lamp"]))
    path = tmp_path / "gt_categories_query_to_object_mapping_all.json"
    path.write_text(json.dumps({
        "level0": {"chair": [1, 2], "seat": [1], "lamp": [3]},
        "level1": {"red chair": [1], "red seat": [1]},
    }))  # fmt: skip
    assert load_query_mapping(path) == generate_queries(cats, "all")
    path.write_text(json.dumps({"level0": {"chair": [1, "2"]}}))
    with pytest.raises(ValueError, match="list of integer object ids"):
        load_query_mapping(path)
    path.write_text(json.dumps(["chair"]))
    with pytest.raises(ValueError, match="expected an object"):
        load_query_mapping(path)


def _quirk_scene():
    # object A = points 0, 1; object B = points 2, 3. Row 0 covers A, row 1 covers A and B, row 2 has no point.
    gt = np.array([[0, 0, 0], [0, 0.1, 0], [0, 0.2, 0], [0, 0.3, 0]], dtype=np.float64)
    pred = np.concatenate([gt[:2], gt + np.array([0.01, 0, 0])])
    return {
        "pred_points": pred,
        "pred_features": torch.tensor([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]]),
        "pred_index": np.array([0, 0, 1, 1, 1, 1]),
        "query_features": torch.tensor([[1.0, 0.0]]),
        "queries": [RetrievalQuery("level0_thing", "thing", (7, 8))],
        "gt_points": gt,
        "gt_ids": np.array([7, 7, 8, 8]),
    }


def test_greedy_matching_quirk():
    res = call(_quirk_scene())
    # confidences: row 0 -> 1.0, row 1 -> (0.6 + 1) / 2 = 0.8, row 2 -> 0 (empty mask, dropped)
    assert res.n_pred_instances == 2
    # IoU 0.25: A takes row 0 (TP 1.0); row 1 also hits A (IoU 0.5): FP with min(1.0, 0.8), not marked used, so B
    # still gets it (TP 0.8)
    got = sorted(zip(res.match_scores[9].tolist(), res.match_true[9].tolist(), strict=True))
    assert [t for _, t in got] == [False, True, True]
    np.testing.assert_allclose([s for s, _ in got], [0.8, 0.8, 1.0], atol=1e-7)
    assert res.hard_false_negatives[9] == 0
    assert res.ap25 == pytest.approx(2 / 3 * 0.25 + 0.75)
    # IoU 0.5: row 1 hits nothing strictly above 0.5: B is a hard false negative and row 1 a false positive
    got = sorted(zip(res.match_scores[0].tolist(), res.match_true[0].tolist(), strict=True))
    assert [t for _, t in got] == [False, True]
    np.testing.assert_allclose([s for s, _ in got], [0.8, 1.0], atol=1e-7)
    assert res.hard_false_negatives[0] == 1 and res.ap50 == pytest.approx(0.5)


def test_average_precision_by_hand():
    assert average_precision(np.array([0.9, 0.4]), np.array([True, False]), 1, 2, 2) == pytest.approx(0.5)
    assert average_precision(np.array([0.9, 0.4]), np.array([True, True]), 0, 2, 2) == pytest.approx(1.0)
    # (p, r) = (0.5, 0.75), (0.6, 0.75), (0.75, 0.75), (2/3, 0.5), (1, 0) -> 0.09375 + 0.25 + 0.25 (spec §12.3)
    scores = np.array([0.150348, 0.72098, 1.0, 1.0, 1.0, 0.972949])
    true = np.array([False, False, False, True, True, True])
    assert average_precision(scores, true, 1, 4, 6) == pytest.approx(0.59375, abs=1e-12)
    assert math.isnan(average_precision(np.zeros(0), np.zeros(0, bool), 0, 0, 0))
    assert average_precision(np.zeros(0), np.zeros(0, bool), 3, 3, 0) == 0.0


def test_no_prediction_and_no_gt(ret_example):
    empty = dict(ret_example, pred_points=np.zeros((0, 3)), pred_index=np.zeros(0, dtype=int))
    with pytest.warns(UserWarning):
        res = call(empty, top_k=3)
    assert res.ap == 0.0 and res.ap50 == 0.0 and res.n_pred_instances == 0
    no_gt = dict(ret_example, queries=[RetrievalQuery("level0_x", "x", (99,))], query_features=torch.ones(1, 3))
    with pytest.warns(UserWarning, match="without GT points"):
        res = call(no_gt)
    assert math.isnan(res.ap) and math.isnan(res.ap50) and res.n_gt_instances == 0
    nothing = dict(ret_example, queries=[], query_features=torch.zeros(0, 3))
    res = call(nothing)
    assert res.n_queries == 0 and math.isnan(res.ap25)


def test_pooled(ret_example):
    with pytest.warns(UserWarning):
        one = call(ret_example, top_k=3)
    pooled = pooled_retrieval_ap([one])
    assert (pooled.ap, pooled.ap50, pooled.ap25) == (one.ap, one.ap50, one.ap25)
    assert torch.equal(pooled.hard_false_negatives, one.hard_false_negatives)
    twice = pooled_retrieval_ap([one, one])  # doubling every entry leaves precision and recall unchanged
    assert twice.ap == pytest.approx(one.ap, abs=1e-12) and twice.n_gt_instances == 8
    quirk = call(_quirk_scene())
    both = pooled_retrieval_ap([one, quirk])
    entries = [
        (s, t) for r in (one, quirk) for s, t in zip(r.match_scores[9].tolist(), r.match_true[9].tolist(), strict=True)
    ]
    hard = int(one.hard_false_negatives[9] + quirk.hard_false_negatives[9])
    assert both.ap25 == pytest.approx(ref.ap(entries, hard, 6, 8), abs=1e-12)
    assert math.isnan(pooled_retrieval_ap([]).ap)


@pytest.mark.parametrize("seed", [0, 1])
def test_against_slow_reference(seed):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0, 0.5, size=(5, 3))
    gt_ids = rng.integers(1, 6, size=60)
    gt = centers[gt_ids - 1] + rng.normal(0, 0.04, size=(60, 3))
    pred = gt[rng.integers(0, 60, size=80)] + rng.normal(0, 0.015, size=(80, 3))
    index = rng.integers(-1, 8, size=80)  # 8 rows, -1 = unassigned
    feats = rng.normal(size=(9, 4))  # row 8 never has a point
    queries = [
        RetrievalQuery(f"level0_q{i}", f"q{i}", tuple(int(o) for o in rng.integers(1, 7, size=2))) for i in range(6)
    ]
    qf = rng.normal(size=(6, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # object 6 has no GT point
        res = retrieval_ap(pred, torch.tensor(feats), index, torch.tensor(qf), queries, gt, gt_ids, top_k=4,
                           alignment_threshold=0.002)  # fmt: skip
    expected = ref.retrieval(pred, feats, index, qf, queries, gt, gt_ids, 4, 0.002)
    np.testing.assert_allclose(res.ap_per_threshold.numpy(), expected, atol=1e-12)
    assert np.isfinite(expected).all() and len(set(np.round(expected, 9))) > 1


@pytest.mark.parametrize(("d", "k"), [(3, 7), (16, 11), (64, 5), (64, 17), (512, 17)])
def test_duplicated_feature_rows_tie_and_the_lower_row_is_selected(d, k):
    # rows 0, k // 2 and k - 1 share the query's embedding: equal confidences (1), so with top_k = 1 the lower row
    # (0) is selected (spec §5.6 "ties: lower row first"). Row 0's mask is object 1 (the query's GT, IoU 1); the two
    # later duplicates cover object 2, so selecting either would be a false positive and a missed GT (AP 0)
    gen = torch.Generator().manual_seed(d * 100 + k)
    feats = torch.randn(k, d, generator=gen)
    query = torch.randn(1, d, generator=gen)
    feats[0] = feats[k // 2] = feats[k - 1] = query[0]
    points = np.array([[10.0 + r, 5.0, 0.0] for r in range(k)])  # masks of the other rows are empty
    points[0] = [0.0, 0.0, 0.0]
    points[k // 2] = points[k - 1] = [1.0, 0.0, 0.0]
    gt_points = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    res = retrieval_ap(points, feats, np.arange(k), query, [RetrievalQuery("level0_q", "q", (1,))], gt_points,
                       np.array([1, 2]), top_k=1)  # fmt: skip
    assert (res.ap, res.ap50, res.ap25) == (1.0, 1.0, 1.0)
    assert [s.tolist() for s in res.match_scores] == [[1.0]] * len(THRESHOLDS)
