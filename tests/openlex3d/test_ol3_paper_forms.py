"""The paper's protocol variants next to the toolkit's: Top-N IoU ``TP / (TP + FP + FN)`` and AP over 0.50:0.95."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import (
    PAPER_THRESHOLDS,
    THRESHOLDS,
    TIERS,
    Categories,
    OpenLex3DRetrieval,
    OpenLex3DTopN,
    RetrievalQuery,
    TopNIoUResult,
    evaluate_segmentation,
    pooled_retrieval_ap,
    retrieval_ap,
    topn_frequency,
    topn_iou,
)

from . import ol3_reference as ref
from .ol3_helpers import categories_dict, on_x, random_scene, sample

SEG = ("pred_points", "pred_features", "pred_index", "text_features", "prompts", "gt_points", "gt_ids", "categories")
RET = ("pred_points", "pred_features", "pred_index", "query_features", "queries", "gt_points", "gt_ids")


def _seg(fn, scene, **kw):
    return fn(*(scene[k] for k in SEG), **kw)


@pytest.fixture
def leak_scene() -> dict:
    """Prompts sofa, cat, lamp, wall (one-hot features). Object 1 (sofa; depiction cat): points labelled sofa, cat,
    lamp, and one point 10 m from any prediction (missing). Object 2 (lamp): lamp, sofa. Object 3 (wall, listed but
    not evaluated): cat, wall. One -100 point labelled sofa."""
    prompts = ["sofa", "cat", "lamp", "wall"]
    labels = {"sofa": 0, "cat": 1, "lamp": 2, "wall": 3}
    gt = [(0, 1, "sofa"), (1, 1, "cat"), (2, 1, "lamp"), (3, 2, "lamp"), (4, 2, "sofa"), (5, 3, "cat"),
          (6, 3, "wall"), (7, -100, "sofa")]  # fmt: skip
    pred_x = [x for x, _, _ in gt]
    feats = torch.eye(4)[[labels[name] for _, _, name in gt]]
    gt_points = on_x([*pred_x, 17.0])
    gt_ids = np.array([i for _, i, _ in gt] + [1])
    cats = categories_dict(sample(1, ["sofa"], ["cat"]), sample(2, ["lamp"]), sample(3, ["wall"]))
    return {
        "pred_points": on_x(pred_x),
        "pred_features": feats,
        "pred_index": None,
        "text_features": torch.eye(4),
        "prompts": prompts,
        "gt_points": gt_points,
        "gt_ids": gt_ids,
        "categories": cats,
    }


def test_topn_iou_by_hand(leak_scene):
    res = _seg(topn_iou, leak_scene, top_n=1, voxel_size=None)
    assert isinstance(res, TopNIoUResult) and res.object_ids.tolist() == [1, 2]
    # object 1 (4 points): TP synonyms 1 (sofa), depictions 1 (cat); FP synonyms 1 (the lamp point labelled sofa),
    # depictions 1 (the wall point labelled cat, wrong for the wall); the -100 point is ignored
    # object 2 (2 points): TP synonyms 1; FP synonyms 1 (the sofa point labelled lamp, wrong for the sofa)
    assert res.tp.tolist() == [[1, 1, 0, 0], [1, 0, 0, 0]]
    assert res.fp.tolist() == [[1, 1, 0, 0], [1, 0, 0, 0]]
    assert res.fn.tolist() == [[3, 3, 4, 4], [1, 2, 2, 2]]
    np.testing.assert_allclose(res.object_ious.numpy(), [[1 / 5, 1 / 5, 0, 0], [1 / 3, 0, 0, 0]], atol=1e-15)
    assert res.ious == pytest.approx({"synonyms": (1 / 5 + 1 / 3) / 2, "depictions": 0.1, "vis_sim": 0.0,
                                      "clutter": 0.0}, abs=1e-15)  # fmt: skip
    assert list(res.ious) == list(TIERS) and res.n_unlabelled_points == 1
    # the frequency form of the same scene: no false-positive term, so never below the IoU
    freq = _seg(topn_frequency, leak_scene, top_n=1, voxel_size=None)
    assert freq.frequencies["synonyms"] == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert (freq.object_frequencies[:, :4] >= res.object_ious - 1e-15).all()


def test_a_right_label_on_another_object_is_not_a_false_positive():
    # two chairs both labelled "chair": each chair's synonym IoU stays 1 (no leak), as the frequency
    cats = categories_dict(sample(1, ["chair"]), sample(2, ["chair", "seat"]))
    pts = on_x([0, 1, 2, 3])
    scene = {"pred_points": pts, "pred_features": torch.tensor([[1.0, 0]] * 4), "pred_index": None,
             "text_features": torch.eye(2), "prompts": ["chair", "seat"], "gt_points": pts,
             "gt_ids": np.array([1, 1, 2, 2]), "categories": cats}  # fmt: skip
    res = _seg(topn_iou, scene, top_n=1, voxel_size=None)
    assert res.fp.sum() == 0 and res.ious["synonyms"] == 1.0
    assert _seg(topn_frequency, scene, top_n=1, voxel_size=None).frequencies["synonyms"] == 1.0


@pytest.mark.parametrize(("seed", "dense", "voxel"), [(0, True, 0.05), (1, False, 0.05), (2, True, None),
                                                      (5, False, None)])  # fmt: skip
def test_topn_iou_equals_the_loop_definition(seed, dense, voxel):
    scene = random_scene(seed, dense=dense, voxel=voxel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cats = Categories.from_dict(scene["categories"])
        scene = dict(scene, categories=cats)
        res = _seg(evaluate_segmentation, scene, top_n=(1, 3), set_ranking=False, voxel_size=voxel, topn_form="both")
    index = scene["pred_index"] if scene["pred_index"] is not None else np.arange(len(scene["pred_points"]))
    args = (scene["pred_points"], scene["pred_features"], index, scene["text_features"], scene["prompts"],
            scene["gt_points"], scene["gt_ids"], cats)  # fmt: skip
    checked_fp = 0
    for n in (1, 3):
        ious, per_obj = ref.topn_iou(*args, n, voxel, 0.05)
        got = res.topn_iou[n]
        assert got.object_ids.tolist() == sorted(per_obj)
        assert got.tp.tolist() == [per_obj[o][0] for o in sorted(per_obj)]
        assert got.fp.tolist() == [per_obj[o][1] for o in sorted(per_obj)]
        assert got.fn.tolist() == [per_obj[o][2] for o in sorted(per_obj)]
        np.testing.assert_allclose(list(got.ious.values()), list(ious.values()), atol=1e-12)
        checked_fp += int(got.fp.sum())
        # same evaluated objects and true positives as the frequency form
        assert torch.equal(got.object_ids, res.topn[n].object_ids)
    assert checked_fp > 0  # the scenes exercise the false-positive term


def test_evaluate_segmentation_forms(leak_scene):
    both = _seg(evaluate_segmentation, leak_scene, top_n=(1, 2), set_ranking=False, voxel_size=None, topn_form="both")
    iou = _seg(evaluate_segmentation, leak_scene, top_n=(1, 2), set_ranking=False, voxel_size=None, topn_form="iou")
    freq = _seg(evaluate_segmentation, leak_scene, top_n=(1, 2), set_ranking=False, voxel_size=None)
    assert iou.topn == {} and freq.topn_iou == {} and list(both.topn_iou) == [1, 2]
    for n in (1, 2):
        assert both.topn_iou[n].ious == iou.topn_iou[n].ious
        assert both.topn[n].frequencies == freq.topn[n].frequencies
        assert iou.topn_iou[n].ious == _seg(topn_iou, leak_scene, top_n=n, voxel_size=None).ious
    with pytest.raises(ValueError, match="topn_form"):
        _seg(evaluate_segmentation, leak_scene, top_n=1, topn_form="paper")


def test_topn_iou_degenerate_cases(leak_scene):
    # empty prediction: every evaluated point is missing, TP = FP = 0, IoU 0 for every tier
    empty = dict(leak_scene, pred_points=np.zeros((0, 3)), pred_features=torch.zeros(0, 4))
    res = _seg(topn_iou, empty, top_n=1, voxel_size=None)
    assert res.ious == dict.fromkeys(TIERS, 0.0) and res.fn.tolist() == [[4] * 4, [2] * 4]
    # no evaluated object: NaN with a warning
    walls = dict(leak_scene, gt_ids=np.full(len(leak_scene["gt_ids"]), 3))
    with pytest.warns(UserWarning, match="no GT point belongs to an evaluated object"):
        res = _seg(topn_iou, walls, top_n=1, voxel_size=None)
    assert all(math.isnan(v) for v in res.ious.values()) and res.object_ious.shape == (0, 4)


def test_topn_metric_iou_form(leak_scene):
    metric = OpenLex3DTopN(leak_scene["text_features"], leak_scene["prompts"], top_n=1, voxel_size=None, form="iou")
    scenes = [leak_scene, dict(leak_scene, gt_ids=np.where(leak_scene["gt_ids"] == 3, 2, leak_scene["gt_ids"]))]
    expected = []
    for scene in scenes:
        args = [scene[k] for k in ("pred_points", "pred_features", "pred_index", "gt_points", "gt_ids", "categories")]
        metric.update(*args)
        expected.append(_seg(topn_iou, scene, top_n=1, voxel_size=None).ious)
    out = metric.compute()
    assert list(out) == [*TIERS, "n_scenes"] and int(out["n_scenes"]) == 2
    for tier in TIERS:
        assert float(out[tier]) == pytest.approx(np.mean([e[tier] for e in expected]), abs=1e-15)
        assert out[tier].dtype == torch.float64
    assert expected[0] != expected[1]  # the second scene moves the wall's points to the lamp
    with pytest.raises(TypeError, match="TopNIoUResult"):
        metric.update_from_result(_seg(topn_frequency, leak_scene, top_n=1, voxel_size=None))
    with pytest.raises(ValueError, match="form"):
        OpenLex3DTopN(torch.eye(2), ["a", "b"], form="paper")


# ---------------------------------------------------------------------------------------------- AP ranges


def test_threshold_ranges():
    assert (*THRESHOLDS[:-1], 0.95, 0.25) == PAPER_THRESHOLDS
    assert np.allclose(PAPER_THRESHOLDS[:-1], np.arange(0.5, 0.951, 0.05))


def test_paper_range_on_the_worked_example(ret_example):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        toolkit = retrieval_ap(*(ret_example[k] for k in RET), top_k=3)
        paper = retrieval_ap(*(ret_example[k] for k in RET), top_k=3, ap_range="paper")
    # per threshold: 0.59375 for 0.5 ... 0.7, 0 from 0.75 on (0.95 included), 1 at 0.25
    np.testing.assert_allclose(paper.ap_per_threshold.numpy(), [0.59375] * 5 + [0.0] * 5 + [1.0], atol=1e-12)
    assert paper.ap == pytest.approx(5 * 0.59375 / 10, abs=1e-12)  # 0.296875, ten thresholds
    assert toolkit.ap == pytest.approx(5 * 0.59375 / 9, abs=1e-12)  # 0.3298611..., nine thresholds
    assert (paper.ap50, paper.ap25) == (toolkit.ap50, toolkit.ap25)
    assert paper.thresholds == PAPER_THRESHOLDS and toolkit.thresholds == THRESHOLDS
    assert paper.hard_false_negatives.tolist() == [1] * 5 + [4] * 5 + [0]
    with pytest.raises(ValueError, match="ap_range"):
        retrieval_ap(*(ret_example[k] for k in RET), ap_range="coco")


def _random_retrieval_scene(seed: int) -> dict:
    """Five separated objects; row r (r < 5) holds a random fraction (row 0: all) of object r + 1's points, so its
    IoU with that object spreads over the thresholds (1.0 reaches 0.95); rows 5-7 hold noisy points of any object;
    query q resembles row q."""
    rng = np.random.default_rng(seed)
    gt_ids = rng.integers(1, 6, size=80)
    gt = np.column_stack([gt_ids * 1.0, np.zeros(80), np.zeros(80)]) + rng.normal(0, 0.04, size=(80, 3))
    pred, index = [], []
    for r in range(5):
        members = np.flatnonzero(gt_ids == r + 1)
        keep = members if r == 0 else members[rng.random(len(members)) < rng.uniform(0.5, 1.0)]
        pred.append(gt[keep])
        index.append(np.full(len(keep), r))
    pred.append(gt[rng.integers(0, 80, size=30)] + rng.normal(0, 0.015, size=(30, 3)))
    index.append(rng.integers(4, 8, size=30))  # 4 = unassigned
    index = np.concatenate(index)
    feats = rng.normal(size=(9, 4))  # row 8 never has a point
    queries = [RetrievalQuery(f"level0_q{q}", f"q{q}", (q % 5 + 1, int(rng.integers(1, 7)))) for q in range(7)]
    return {
        "pred_points": np.concatenate(pred),
        "pred_features": feats,
        "pred_index": np.where(index == 4, -1, index),
        "query_features": feats[[0, 1, 2, 3, 4, 5, 6]] + rng.normal(0, 0.3, size=(7, 4)),
        "queries": queries,
        "gt_points": gt,
        "gt_ids": gt_ids,
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paper_range_equals_the_per_threshold_loop(seed):
    scene = _random_retrieval_scene(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # object 6 has no GT point
        res = retrieval_ap(*(scene[k] if k not in ("pred_features", "query_features") else torch.tensor(scene[k])
                             for k in RET), top_k=4, alignment_threshold=0.002, ap_range="paper")  # fmt: skip
    expected = ref.retrieval(*(scene[k] for k in RET), 4, 0.002, thresholds=ref.PAPER_THRESHOLDS)
    np.testing.assert_allclose(res.ap_per_threshold.numpy(), expected, atol=1e-12)
    assert expected[9] > 0 and len(set(np.round(expected, 9))) > 2  # 0.95 is reached; the curve varies
    assert res.ap == pytest.approx(np.mean(expected[:10]), abs=1e-12)
    assert res.ap25 == pytest.approx(expected[10], abs=1e-12)


def test_paper_range_pooled_and_metric(ret_example):
    scenes = [_random_retrieval_scene(s) for s in (0, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results = [retrieval_ap(*(s[k] for k in RET), top_k=4, alignment_threshold=0.002, ap_range="paper")
                   for s in scenes]  # fmt: skip
        metric = OpenLex3DRetrieval(top_k=4, alignment_threshold=0.002, ap_range="paper")
        for s in scenes:
            metric.update(*(s[k] for k in RET))
        toolkit = retrieval_ap(*(scenes[0][k] for k in RET), top_k=4, alignment_threshold=0.002)
    pooled = pooled_retrieval_ap(results)
    out = metric.compute()
    assert pooled.thresholds == PAPER_THRESHOLDS and len(pooled.ap_per_threshold) == 11
    assert (float(out["ap"]), float(out["ap50"]), float(out["ap25"])) == pytest.approx(
        (pooled.ap, pooled.ap50, pooled.ap25), abs=1e-12
    )
    assert float(out["ap_scene_mean"]) == pytest.approx(np.mean([r.ap for r in results]), abs=1e-12)
    with pytest.raises(ValueError, match="mix AP threshold ranges"):
        pooled_retrieval_ap([results[0], toolkit])
    with pytest.raises(ValueError, match="ap_range='paper'"):
        metric.update_from_result(toolkit)
    with pytest.raises(ValueError, match="ap_range"):
        OpenLex3DRetrieval(ap_range="coco")


def test_paper_range_degenerate_cases(ret_example):
    empty = dict(ret_example, pred_points=np.zeros((0, 3)), pred_index=np.zeros(0, dtype=int))
    with pytest.warns(UserWarning):
        res = retrieval_ap(*(empty[k] for k in RET), top_k=3, ap_range="paper")
    assert res.ap == 0.0 and res.ap50 == 0.0 and len(res.ap_per_threshold) == 11  # GT but no prediction
    no_gt = dict(ret_example, queries=[RetrievalQuery("level0_x", "x", (99,))], query_features=torch.ones(1, 3))
    with pytest.warns(UserWarning, match="without GT points"):
        res = retrieval_ap(*(no_gt[k] for k in RET), ap_range="paper")
    assert math.isnan(res.ap) and math.isnan(res.ap25) and res.n_gt_instances == 0
    assert math.isnan(pooled_retrieval_ap([]).ap)
