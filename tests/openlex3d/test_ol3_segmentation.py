"""Top-N category frequency and set ranking (spec §4, §5.1-5.5, §12.2), by hand and against a slow reference."""

from __future__ import annotations

import importlib
import math
import warnings

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import CATEGORIES, evaluate_segmentation, set_ranking, topn_frequency

from . import ol3_reference as ref
from .ol3_helpers import categories_dict, on_x, random_scene, sample

sr = importlib.import_module("scenemetrics.openlex3d.set_ranking")  # the function shadows the module's name

ARGS = ("pred_points", "pred_features", "pred_index", "text_features", "prompts", "gt_points", "gt_ids", "categories")


def call(fn, scene, **kw):
    return fn(*(scene[k] for k in ARGS), **kw)


# ---------------------------------------------------------------------------------------------- worked example


def test_worked_example_topn(seg_example):
    res = evaluate_segmentation(*(seg_example[k] for k in ARGS), top_n=(1, 2), voxel_size=None)
    t1, t2 = res.topn[1], res.topn[2]
    assert t1.point_categories.tolist() == [0, 1, 1, 0, 3, -1, -1, 0, 3, 4, -1, -1]
    assert t2.point_categories.tolist() == [0, 1, 1, 0, 3, -1, -1, 0, 2, 4, -1, -1]
    exp1 = [0.38888888888888884, 0.2222222222222222, 0.0, 0.27777777777777773, 0.1111111111111111, 0.0]
    exp2 = [0.38888888888888884, 0.2222222222222222, 0.1111111111111111, 0.16666666666666666, 0.1111111111111111, 0]
    assert list(t1.frequencies) == list(CATEGORIES)
    np.testing.assert_allclose(list(t1.frequencies.values()), exp1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(list(t2.frequencies.values()), exp2, rtol=0, atol=1e-12)
    assert t1.object_ids.tolist() == [1, 2, 5]
    assert t1.n_unlabelled_points == 2  # -100 and 9
    assert t1.point_labels.shape == (12, 1) and t2.point_labels.shape == (12, 2)
    assert t1.point_labels.dtype == torch.int64 and t1.point_categories.dtype == torch.int8
    np.testing.assert_allclose(t1.distances.numpy(), [0.01, 0.01, 0.01, 0.02, 0.03, 0, 0.01, 0.02, 0.01, 0.41, 0, 0],
                               atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(t1.object_frequencies.sum(1).numpy(), 1.0)


@pytest.mark.parametrize(
    ("compat", "inlier_s", "inlier_dv", "under_dv"),
    [
        ("toolkit", 0.0, 0.6666666666666666, 0.16666666666666663),
        ("corrected", 0.29166666666666663, 0.5555555555555555, 0.4444444444444445),
    ],
)
def test_worked_example_set_ranking(seg_example, compat, inlier_s, inlier_dv, under_dv):
    res = call(set_ranking, seg_example, voxel_size=None, compat=compat)
    s = res.scores
    assert list(s) == list(sr.SCORE_KEYS)
    expected = {
        "overall": 0.6250000001666666,
        "synonyms": 0.5813492063492064,
        "secondary": 0.6851851857407407,
        "synonym_inlier_rate": inlier_s,
        "secondary_inlier_rate": inlier_dv,
        "synonym_undershooting": 0.38988095238095244,
        "secondary_overshooting": 4.999999969612645e-09,
        "secondary_undershooting": under_dv,
    }
    for key, value in expected.items():
        assert s[key] == pytest.approx(value, abs=1e-12), key
    assert s["P_S"] == pytest.approx(1 - expected["synonym_undershooting"], abs=1e-15)
    assert s["P_DV_left"] == pytest.approx(1 - expected["secondary_overshooting"], abs=1e-15)
    assert s["P_DV_right"] == pytest.approx(1 - under_dv, abs=1e-15)
    assert res.object_ids.tolist() == [1, 2, 3, 4, 5]  # the wall (3) and the synonym-less 4 take part
    assert res.object_scores.shape == (5, 8) and res.object_scores.dtype == torch.float64
    assert math.isnan(res.object_scores[3, 1])  # object 4 has no synonym column
    assert res.compat == compat


def test_evaluate_segmentation_equals_separate_calls(seg_example):
    both = call(evaluate_segmentation, seg_example, top_n=[2, 1], voxel_size=0.05, compat="toolkit")
    assert list(both.topn) == [2, 1]
    for n in (1, 2):
        alone = call(topn_frequency, seg_example, top_n=n, voxel_size=0.05)
        assert alone.frequencies == both.topn[n].frequencies
        assert torch.equal(alone.point_categories, both.topn[n].point_categories)
        assert torch.equal(alone.point_labels, both.topn[n].point_labels)
    alone = call(set_ranking, seg_example, voxel_size=0.05, compat="toolkit")
    assert alone.scores == both.set_ranking.scores
    only = call(evaluate_segmentation, seg_example, top_n=3, set_ranking=False)
    assert only.set_ranking is None and list(only.topn) == [3]


# ---------------------------------------------------------------------------------------------- Top-N by hand

HAND_PROMPTS = ["chair", "seat", "dog", "stool", "table", "wall", "lamp"]


def _feature(order):
    """A feature whose cosine logits with one-hot prompts rank ``order`` first (then the others by index)."""
    f = np.linspace(0.05, 0.01, len(HAND_PROMPTS))
    for i, name in enumerate(order):
        f[HAND_PROMPTS.index(name)] = 1.0 - 0.1 * i
    return f


@pytest.fixture
def hand_scene():
    feats = np.stack([_feature(["chair", "seat"]), _feature(["dog", "chair"]), _feature(["stool", "lamp"]),
                      _feature(["table", "seat"]), _feature(["lamp", "wall"]), np.zeros(7)])  # fmt: skip
    pred = on_x([0, 1, 2, 3, 4, 6])
    gt = [((0, 0, 0), 1), ((1, 0, 0), 1), ((2, 0, 0), 1), ((3, 0, 0), 1), ((4, 0, 0), 1), ((4, 0.0501, 0), 1),
          ((4, 0.0499, 0), 1), ((3, 0, 0.01), 2), ((0, 0.01, 0), 2), ((0, 0, 0.02), 3), ((1, 0, 0.01), 4),
          ((2, 0, 0.01), -100), ((3, 0, 0.02), 77), ((6, 0, 0), 5)]  # fmt: skip
    cats = categories_dict(
        sample(1, ["chair", "seat"], ["dog"], ["stool"], ["2"]),
        sample(2, ["table"]),
        sample(3, ["wall"]),
        sample(4, [], ["dog"]),
        sample(5, ["seat"]),
    )
    return {
        "pred_points": pred,
        "pred_features": torch.tensor(feats, dtype=torch.float32),
        "pred_index": None,
        "text_features": torch.eye(7),
        "prompts": HAND_PROMPTS,
        "gt_points": np.array([p for p, _ in gt], dtype=np.float64),
        "gt_ids": np.array([i for _, i in gt]),
        "categories": cats,
    }


def test_topn_by_hand(hand_scene):
    r1 = call(topn_frequency, hand_scene, top_n=1, voxel_size=None)
    # object 1: syn, dep, vis, clutter (table is a synonym of clutter neighbour 2), incorrect, missing (5.01 cm),
    # incorrect (4.99 cm); object 2: syn, incorrect; 3 wall, 4 no synonym, -100, 77 unlabelled; 5: zero feature
    assert r1.point_categories.tolist() == [0, 1, 2, 3, 5, 4, 5, 0, 5, -1, -1, -1, -1, 5]
    assert r1.object_ids.tolist() == [1, 2, 5]
    assert r1.n_unlabelled_points == 2
    o1 = np.array([1, 1, 1, 1, 1, 2]) / 7
    np.testing.assert_allclose(r1.object_frequencies.numpy(), [o1, [0.5, 0, 0, 0, 0, 0.5], [0, 0, 0, 0, 0, 1]])
    np.testing.assert_allclose(
        list(r1.frequencies.values()), (o1 + np.array([0.5, 0, 0, 0, 0, 0.5]) + np.array([0, 0, 0, 0, 0, 1])) / 3
    )
    assert sum(r1.frequencies.values()) == pytest.approx(1.0)
    # zero feature: all logits tie, the lower prompt index ranks first
    assert r1.point_labels[13].tolist() == [0]

    r2 = call(topn_frequency, hand_scene, top_n=2, voxel_size=None)
    assert r2.point_categories.tolist() == [0, 0, 2, 0, 5, 4, 5, 0, 5, -1, -1, -1, -1, 0]
    assert r2.point_labels[13].tolist() == [0, 1]  # "chair", "seat": object 5's synonym "seat" is in the top 2
    assert r2.point_labels[1].tolist() == [2, 0]


def test_missing_threshold_is_strict_and_configurable(hand_scene):
    r = call(topn_frequency, hand_scene, top_n=1, voxel_size=None, missing_threshold=0.0501)
    assert r.point_categories[5] == 5  # exactly 5.01 cm away: not missing when the threshold is 5.01 cm
    r = call(topn_frequency, hand_scene, top_n=1, voxel_size=None, missing_threshold=0.04)
    assert r.point_categories[5] == 4 and r.point_categories[6] == 4


def test_excluded_labels_argument(hand_scene):
    r = call(topn_frequency, hand_scene, top_n=1, voxel_size=None, excluded_labels=("table",))
    assert r.object_ids.tolist() == [1, 3, 5]  # the wall is evaluated, the table is not
    assert r.point_categories[9] == 5 and r.point_categories[7] == -1


def test_no_evaluated_object_gives_nan_and_a_warning(hand_scene):
    scene = dict(hand_scene, gt_ids=np.full(len(hand_scene["gt_ids"]), 3))
    with pytest.warns(UserWarning, match="no GT point belongs to an evaluated object"):
        r = call(topn_frequency, scene, top_n=1, voxel_size=None)
    assert all(math.isnan(v) for v in r.frequencies.values())
    assert r.object_ids.numel() == 0 and (r.point_categories == -1).all()


def test_empty_prediction(hand_scene):
    scene = dict(hand_scene, pred_points=np.zeros((0, 3)), pred_features=torch.zeros(0, 7))
    with pytest.warns(UserWarning, match="the prediction is empty"):
        res = call(evaluate_segmentation, scene, top_n=2, voxel_size=0.05)
    t = res.topn[2]
    assert t.frequencies["missing"] == 1.0
    assert torch.isinf(t.distances).all() and (t.point_labels == -1).all()
    assert all(math.isnan(v) for v in res.set_ranking.scores.values())


def test_float64_inputs_and_numpy_features(hand_scene):
    scene = dict(hand_scene, pred_features=hand_scene["pred_features"].double().numpy(),
                 text_features=hand_scene["text_features"].double())  # fmt: skip
    r = call(topn_frequency, scene, top_n=1, voxel_size=None)
    assert r.point_categories.tolist()[:9] == [0, 1, 2, 3, 5, 4, 5, 0, 5]


# ---------------------------------------------------------------------------------------------- set ranking


def test_rank_scores_by_hand():
    # l = 3, r = 5, L = 11
    left, right, score = sr.rank_scores(np.array([0, 3, 4, 8, 11]), 3, 5, 11)
    assert left[0] == 1 + (0 - 3) / (3 + 1e-8) and 0 < left[0] < 1e-8  # the 1e-8 keeps left(0) above 0
    np.testing.assert_array_equal(left[1:], 1.0)
    np.testing.assert_allclose(right, [1, 1, 1, 0.5, 0.0])
    np.testing.assert_allclose(score, [left[0], 1, 1, 0.5, 0])
    # a box that reaches the last rank: right is 1 (the toolkit divides by zero)
    assert sr.rank_scores(7, 0, 11, 11)[1] == 1.0
    # synonyms (l = 0): left is always 1
    assert sr.rank_scores(9, 0, 2, 11)[0] == 1.0


def _two_point_scene(orders, prompts, syn, dv):
    feats = np.stack([[1.0 - 0.1 * order.index(p) for p in prompts] for order in orders])
    return {
        "pred_points": on_x(range(len(orders))),
        "pred_features": torch.tensor(feats, dtype=torch.float32),
        "pred_index": None,
        "text_features": torch.eye(len(prompts)),
        "prompts": prompts,
        "gt_points": on_x(range(len(orders))),
        "gt_ids": np.ones(len(orders), dtype=int),
        "categories": categories_dict(sample(1, syn, [], dv)),
    }


def test_compat_modes_on_a_two_point_object():
    prompts = ["a", "b", "c", "d"]
    scene = _two_point_scene([["a", "b", "c", "d"], ["d", "c", "b", "a"]], prompts, ["a"], ["b"])
    with pytest.warns(UserWarning, match="secondary_overshooting"):
        corrected = call(set_ranking, scene, voxel_size=None).scores
    # point 0: a rank 0 (score 1), b rank 1 (score 1); point 1: a rank 3 -> right 0, b rank 2 -> right 0.5
    assert corrected["overall"] == pytest.approx(0.625)
    assert corrected["synonyms"] == pytest.approx(0.5) and corrected["secondary"] == pytest.approx(0.75)
    assert corrected["synonym_inlier_rate"] == 0.5 and corrected["secondary_inlier_rate"] == 0.5
    assert corrected["synonym_undershooting"] == 0.0 and corrected["secondary_undershooting"] == 0.5
    assert math.isnan(corrected["secondary_overshooting"]) and math.isnan(corrected["P_DV_left"])
    assert corrected["P_S"] == 1.0 and corrected["P_DV_right"] == 0.5
    with pytest.warns(UserWarning):
        toolkit = call(set_ranking, scene, voxel_size=None, compat="toolkit").scores
    assert toolkit["overall"] == corrected["overall"]  # pooled in both modes
    assert toolkit["synonym_inlier_rate"] == 0.0 and toolkit["secondary_inlier_rate"] == 0.0  # the last point only
    assert toolkit["synonym_undershooting"] == 0.0 and toolkit["secondary_undershooting"] == 0.5
    # reversed point order: the last point is now the perfect one
    rev = dict(scene, gt_points=scene["gt_points"][::-1].copy())
    with pytest.warns(UserWarning):
        toolkit = call(set_ranking, rev, voxel_size=None, compat="toolkit").scores
    assert toolkit["synonym_inlier_rate"] == 1.0 and math.isnan(toolkit["synonym_undershooting"])


def test_duplicates_after_normalisation_count_twice_and_absent_labels_drop():
    prompts = ["x", "counter top", "countertop", "y"]
    scene = _two_point_scene(
        [["x", "counter top", "countertop", "y"]], prompts, ["counter top", "countertop", "zzz"], []
    )
    with pytest.warns(UserWarning, match="secondary, "):
        res = call(set_ranking, scene, voxel_size=None)
    # S = [1, 1] (first prompt with the normalised string, twice; "zzz" dropped): box [0, 1], rank 1 -> score 1
    assert res.scores["synonyms"] == 1.0 and res.scores["synonym_inlier_rate"] == 1.0
    scene = _two_point_scene([["x", "counter top", "countertop", "y"]], prompts, ["countertop", "zzz"], [])
    with pytest.warns(UserWarning, match="secondary, "):
        res = call(set_ranking, scene, voxel_size=None)
    # deduplicated S = [1]: box [0, 0], rank 1 -> right = 1 - 1/3
    assert res.scores["synonyms"] == pytest.approx(2 / 3)


def test_set_filling_the_prompt_list_has_right_one():
    scene = _two_point_scene([["b", "a"]], ["a", "b"], ["a"], ["b"])
    with pytest.warns(UserWarning):
        res = call(set_ranking, scene, voxel_size=None)
    # a: rank 1, box [0, 0], L = 1 -> right 0; b: rank 0, box [1, 1] = [1, L] -> right 1, left = 1e-8-ish
    assert res.scores["synonyms"] == 0.0
    assert res.scores["secondary"] == pytest.approx(1 - 1 / (1 + 1e-8), abs=1e-15)
    assert res.scores["secondary_overshooting"] == res.scores["secondary"]
    assert math.isnan(res.scores["secondary_undershooting"])
    single = _two_point_scene([["a"]], ["a"], ["a"], [])
    with pytest.warns(UserWarning):
        assert call(set_ranking, single, voxel_size=None).scores["synonyms"] == 1.0  # M = 1: right = 1


def test_set_ranking_ignores_distance_and_exclusion():
    scene = _two_point_scene([["a", "b"]], ["a", "b"], ["a"], [])
    scene["gt_points"] = on_x([10.0])  # 10 m from the prediction: still used
    scene["categories"] = categories_dict(sample(1, ["a", "wall"]))
    with pytest.warns(UserWarning):
        res = call(set_ranking, scene, voxel_size=None, compat="toolkit")
    assert res.object_ids.tolist() == [1] and res.scores["synonyms"] == 1.0


def test_no_object_with_labels_gives_nan():
    scene = _two_point_scene([["a", "b"]], ["a", "b"], ["zzz"], [])
    with pytest.warns(UserWarning, match="no GT point belongs to an object with a prompt label"):
        res = call(set_ranking, scene, voxel_size=None)
    assert all(math.isnan(v) for v in res.scores.values()) and res.object_ids.numel() == 0


def test_zero_feature_ranks_follow_prompt_order():
    scene = _two_point_scene([["a", "b", "c"]], ["a", "b", "c"], ["c"], ["a"])
    scene["pred_features"] = torch.zeros(1, 3)
    with pytest.warns(UserWarning):
        res = call(set_ranking, scene, voxel_size=None)
    # all logits equal: ranks = prompt indices; c rank 2 in box [0, 0] (L = 2): right 0; a rank 0 in [1, 1]
    assert res.scores["synonyms"] == 0.0
    assert res.scores["secondary"] == pytest.approx(1 - 1 / (1 + 1e-8), abs=1e-15)


# ---------------------------------------------------------------------------------------------- reference


@pytest.mark.parametrize(("seed", "dense", "voxel"), [(0, True, 0.05), (1, False, 0.05), (2, True, None)])
def test_against_slow_reference(seed, dense, voxel):
    scene = random_scene(seed, dense=dense, voxel=voxel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from scenemetrics.openlex3d import Categories

        cats = Categories.from_dict(scene["categories"])
        scene = dict(scene, categories=cats)
        res = call(evaluate_segmentation, scene, top_n=(1, 3), voxel_size=voxel)
        toolkit = call(set_ranking, scene, voxel_size=voxel, compat="toolkit")
    index = scene["pred_index"] if scene["pred_index"] is not None else np.arange(len(scene["pred_points"]))
    args = (scene["pred_points"], scene["pred_features"], index, scene["text_features"], scene["prompts"],
            scene["gt_points"], scene["gt_ids"], cats)  # fmt: skip
    for n in (1, 3):
        freq, codes, objects = ref.topn(*args, n, voxel, 0.05)
        assert res.topn[n].point_categories.tolist() == codes
        assert res.topn[n].object_ids.tolist() == objects
        np.testing.assert_allclose(list(res.topn[n].frequencies.values()), list(freq.values()), atol=1e-12)
    for compat, got in (("corrected", res.set_ranking), ("toolkit", toolkit)):
        scene_ref, per_obj = ref.set_ranking(*args, voxel, compat)
        np.testing.assert_allclose([got.scores[k] for k in sr.SCORE_KEYS[:8]], scene_ref, atol=1e-12)
        assert got.object_ids.tolist() == sorted(per_obj)
        np.testing.assert_allclose(got.object_scores.numpy(), np.array([per_obj[o] for o in sorted(per_obj)]),
                                   atol=1e-12)  # fmt: skip


# ---------------------------------------------------------------------------------------------- label pass


def _stable_rank(logits_row, j):
    return sum(v > logits_row[j] for v in logits_row) + sum(logits_row[m] == logits_row[j] for m in range(j))


@pytest.mark.parametrize("use_numpy", [True, False])
def test_label_pass_ties_chunks_and_both_code_paths(monkeypatch, use_numpy):
    text_module = importlib.import_module("scenemetrics.openlex3d.text")
    monkeypatch.setattr(text_module, "_CHUNK_BYTES", 8 * 4 * 3)  # 3 rows of 8 float32 logits per chunk
    rng = np.random.default_rng(0)
    text = torch.tensor(rng.normal(size=(8, 3)), dtype=torch.float32)
    text[5] = text[2]  # duplicate prompt embeddings: exact ties between prompts 2 and 5
    feats = torch.tensor(rng.normal(size=(9, 3)), dtype=torch.float32)
    feats[4] = 0.0  # all logits equal
    feats[7] = feats[1] * 2  # same direction as row 1
    rows = np.array([0, 1, 2, 4, 5, 7, 8])
    pair_pos = np.array([0, 1, 1, 2, 3, 3, 4, 5, 6, 6])
    pair_labels = rng.integers(0, 8, size=(10, 4))
    pair_labels[1] = [2, 5, 0, 1]
    threads = torch.get_num_threads()
    top, ranks = text_module.label_pass(feats, text, rows, top_n=3, pair_pos=pair_pos, pair_labels=pair_labels,
                                        use_numpy=use_numpy)  # fmt: skip
    assert torch.get_num_threads() == threads  # the CPU pass restores torch's thread count
    logits = text_module.cosine_logits(feats, text).numpy()
    for i, r in enumerate(rows):
        order = sorted(range(8), key=lambda m, r=r: (-logits[r, m], m))
        assert top[i].tolist() == order[:3]
    for p, (pos, labels) in enumerate(zip(pair_pos, pair_labels, strict=True)):
        row = logits[rows[pos]].tolist()
        assert ranks[p].tolist() == [_stable_rank(row, j) for j in labels]
    assert top[3].tolist() == [0, 1, 2]  # the zero feature: prompt order


def test_chunking_does_not_change_results(monkeypatch):
    scene = random_scene(4, dense=True, voxel=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        base = call(evaluate_segmentation, scene, top_n=(2,), voxel_size=None)
        monkeypatch.setattr(importlib.import_module("scenemetrics.openlex3d.text"), "_CHUNK_BYTES", 12 * 4 * 5)
        chunked = call(evaluate_segmentation, scene, top_n=(2,), voxel_size=None)
    assert torch.equal(base.topn[2].point_labels, chunked.topn[2].point_labels)
    assert base.set_ranking.scores == pytest.approx(chunked.set_ranking.scores, abs=1e-12, nan_ok=True)


# Shapes (D, M, points) for which a plain BLAS product rounds identical text columns differently on common CPUs
DUPLICATE_SHAPES = [(3, 5, 4), (16, 11, 1), (16, 11, 6), (64, 17, 7), (512, 17, 7), (32, 64, 9)]


@pytest.mark.parametrize(("d", "m", "p"), DUPLICATE_SHAPES)
def test_duplicated_text_features_tie_exactly(d, m, p):
    # prompts 0, m // 2 and m - 1 share one embedding, so their cosines are equal and the tie rule (spec §4.4:
    # equal logits, lower prompt index first) must order them 0, m // 2, m - 1, adjacent in every ranking
    gen = torch.Generator().manual_seed(d * 1000 + m)
    text = torch.randn(m, d, generator=gen)
    text[m // 2] = text[0]
    text[m - 1] = text[0]
    feats = torch.randn(p, d, generator=gen)
    prompts = [f"p{j}" for j in range(m)]
    points = on_x(range(p))
    cats = categories_dict(*(sample(i + 1, [f"p{m - 1}"]) for i in range(p)))
    args = (points, feats, None, text, prompts, points, np.arange(1, p + 1), cats)
    with pytest.warns(UserWarning, match="secondary"):  # no object has secondary labels
        res = evaluate_segmentation(*args, top_n=m, voxel_size=None)
    for i, labels in enumerate(res.topn[m].point_labels.tolist()):
        first = labels.index(0)
        assert labels[first : first + 3] == [0, m // 2, m - 1], f"point {i}: {labels}"
    # set ranking: p{m-1} is the single synonym (box [0, 0], L = m - 1), ranked 2 below prompt 0, whose rank is the
    # number of prompts with a larger cosine (float64, elementwise: independent of the implementation's product)
    f64, t64 = feats.double().numpy(), text.double().numpy()
    cos = (f64[:, None, :] * t64[None, :, :]).sum(-1)
    cos /= np.linalg.norm(f64, axis=1)[:, None] * np.linalg.norm(t64, axis=1)[None, :]
    above = (cos > cos[:, :1] + 1e-6).sum(axis=1)
    assert ((cos > cos[:, :1] - 1e-6) & (cos <= cos[:, :1] + 1e-6)).sum(axis=1).tolist() == [3] * p  # no near tie
    expected = 1 - (above + 2) / (m - 1)
    np.testing.assert_allclose(res.set_ranking.object_scores[:, 1].numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("use_numpy", [True, False])
@pytest.mark.parametrize(("d", "m", "p"), DUPLICATE_SHAPES)
def test_label_pass_duplicated_text_features_both_code_paths(d, m, p, use_numpy):
    text_module = importlib.import_module("scenemetrics.openlex3d.text")
    gen = torch.Generator().manual_seed(d + m)
    text = torch.randn(m, d, generator=gen)
    text[m // 2] = text[0]
    text[m - 1] = text[0]
    feats = torch.randn(p, d, generator=gen)
    rows = np.arange(p)
    pair_labels = np.tile([0, m // 2, m - 1], (p, 1))
    top, ranks = text_module.label_pass(
        feats, text, rows, top_n=m, pair_pos=rows, pair_labels=pair_labels, use_numpy=use_numpy
    )
    for labels, r in zip(top.tolist(), ranks.tolist(), strict=True):
        first = labels.index(0)
        assert labels[first : first + 3] == [0, m // 2, m - 1]
        assert r == [first, first + 1, first + 2]
