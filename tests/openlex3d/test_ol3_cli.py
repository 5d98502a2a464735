"""`scenemetrics openlex3d eval ...` on a two-scene temporary tree (spec §7): JSON equals the functional API."""

from __future__ import annotations

import json
import math
import sys
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.cli import main
from scenemetrics.jsonio import restore
from scenemetrics.openlex3d import (
    category_picture,
    generate_queries,
    load_gt_cloud,
    load_query_mapping,
    pooled_retrieval_ap,
    read_point_cloud,
    retrieval_ap,
    set_ranking,
    topn_frequency,
)

from .ol3_helpers import write_pcd, write_ply


def _standard_json(text: str) -> dict:
    """Parse strictly (a NaN/Infinity token fails), then put the non-finite values back."""

    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return restore(json.loads(text, parse_constant=reject))


@pytest.fixture
def tree(tmp_path, seg_example, ret_example):
    gt_root, pred_root = tmp_path / "gt", tmp_path / "pred"
    cats = seg_example["categories"].to_dict()
    # scene_a: the §12.2 example with a binary PCD; scene_b: the §12.3 geometry with an ascii PLY
    for scene, src in (("scene_a", seg_example), ("scene_b", ret_example)):
        (gt_root / scene).mkdir(parents=True)
        (pred_root / scene).mkdir(parents=True)
        np.savez(gt_root / scene / "gt_cloud.npz", points=src["gt_points"], object_ids=src["gt_ids"])
    (gt_root / "scene_a" / "gt_categories.json").write_text(json.dumps(cats))
    cats_b = {"dataset": {"samples": [
        {"object_id": 10, "labels": {"image_attributes": {"synonyms": ["sofa", "couch"], "depictions": ["cat"]}}},
        {"object_id": 11, "labels": {"image_attributes": {"synonyms": ["table"], "vis_sim": ["lamp"]}}},
        {"object_id": 12, "labels": {"image_attributes": {"synonyms": ["lamp"]}}},
    ]}}  # fmt: skip
    (gt_root / "scene_b" / "gt_categories.json").write_text(json.dumps(cats_b))
    (gt_root / "scene_b" / "gt_categories_query_to_object_mapping_all.json").write_text(
        json.dumps({"level0": {"sofa": [10], "lamp": [12, 11]}, "level1": {"cat sofa": [10, 99]}})
    )
    write_pcd(pred_root / "scene_a" / "point_cloud.pcd", seg_example["pred_points"], mode="binary", dtype="f8")
    np.save(pred_root / "scene_a" / "embeddings.npy", seg_example["pred_features"].numpy())
    np.save(pred_root / "scene_a" / "index.npy", seg_example["pred_index"])
    write_ply(pred_root / "scene_b" / "input.ply", ret_example["pred_points"], "ascii")
    feats_b = torch.nn.functional.pad(ret_example["pred_features"], (0, 1)).numpy()  # D = 4 like the prompts
    np.save(pred_root / "scene_b" / "embeddings.npy", feats_b)
    np.save(pred_root / "scene_b" / "index.npy", np.where(ret_example["pred_index"] < 0, 0, ret_example["pred_index"]))
    (tmp_path / "prompt_list.txt").write_text("\n".join(seg_example["prompts"]) + "\n")
    np.save(tmp_path / "prompts.npy", seg_example["text_features"].numpy())
    return tmp_path


def _load_scene(tree, scene):
    from scenemetrics.openlex3d import load_categories, load_gt_cloud, load_prediction_folder

    pts, feats, index = load_prediction_folder(tree / "pred" / scene)
    gt_pts, gt_ids = load_gt_cloud(tree / "gt" / scene / "gt_cloud.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cats = load_categories(tree / "gt" / scene / "gt_categories.json")
    return pts, feats, index, gt_pts, gt_ids, cats


def test_segmentation(tree, seg_example):
    out = tree / "results.json"
    argv = ["openlex3d", "eval", "segmentation", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--prompts", str(tree / "prompt_list.txt"), "--text-features", str(tree / "prompts.npy"),
            "--top-n", "1", "2", "--set-ranking", "--compat", "toolkit", "--out", str(out), "--viz",
            str(tree / "viz"), "--quiet", "--device", "cpu"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
    data = _standard_json(out.read_text())
    assert list(data) == ["config", "per_scene", "mean"]
    assert list(data["per_scene"]) == ["scene_a", "scene_b"]
    assert data["config"]["top_n"] == [1, 2] and data["config"]["voxel_size"] == 0.05
    text, prompts = seg_example["text_features"], seg_example["prompts"]
    per_scene = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for scene in ("scene_a", "scene_b"):
            pts, feats, index, gt_pts, gt_ids, cats = _load_scene(tree, scene)
            args = (pts, feats, index, text, prompts, gt_pts, gt_ids, cats)
            per_scene[scene] = {
                "top_1": topn_frequency(*args, top_n=1),
                "top_2": topn_frequency(*args, top_n=2),
                "set_ranking": set_ranking(*args, compat="toolkit"),
            }
    for scene, expected in per_scene.items():
        got = data["per_scene"][scene]
        assert got["top_1"] == pytest.approx(expected["top_1"].frequencies, nan_ok=True)
        assert got["top_2"] == pytest.approx(expected["top_2"].frequencies, nan_ok=True)
        assert got["set_ranking"] == pytest.approx(expected["set_ranking"].scores, nan_ok=True)
    for key in ("top_1", "top_2"):
        assert list(data["mean"][key]) == list(per_scene["scene_a"][key].frequencies)
        for c, v in data["mean"][key].items():
            values = [per_scene[s][key].frequencies[c] for s in per_scene]
            assert v == pytest.approx(np.mean(values))
    for k, v in data["mean"]["set_ranking"].items():
        values = [per_scene[s]["set_ranking"].scores[k] for s in per_scene]
        finite = [x for x in values if not math.isnan(x)]
        assert v == pytest.approx(np.mean(finite) if finite else math.nan, nan_ok=True)
    # visualisation: one PLY and one PNG per scene and N, categories as computed
    for n in (1, 2):
        ply = tree / "viz" / f"scene_a_top{n}.ply"
        assert read_point_cloud(ply).shape == (12, 3)
        codes = np.frombuffer(ply.read_bytes().split(b"end_header\n")[1], dtype=[("a", "V15"), ("c", "i1")])["c"]
        assert codes.tolist() == per_scene["scene_a"][f"top_{n}"].point_categories.tolist()
        # the 1024-px top-down view with a title and a legend of the categories (shares of the 12 points)
        gt_points, _ = load_gt_cloud(tree / "gt" / "scene_a" / "gt_cloud.npz")
        picture = category_picture(
            gt_points, codes, title=f"OpenLex3D scene_a: Top-{n} category of each ground-truth point (top-down view)"
        )
        png = np.asarray(Image.open(tree / "viz" / f"scene_a_top{n}.png"))
        assert png.shape[0] > 1024 and png.shape[1] >= 1024 and np.array_equal(png, picture.image.permute(1, 2, 0))


def test_segmentation_text_features_npz_and_stdout(tree, seg_example, capsys):
    prompts = seg_example["prompts"]
    np.savez(tree / "texts.npz", texts=np.array(prompts[::-1]), features=seg_example["text_features"].numpy()[::-1])
    argv = ["openlex3d", "eval", "segmentation", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--prompts", str(tree / "prompt_list.txt"), "--text-features", str(tree / "texts.npz"),
            "--scenes", "scene_a", "--no-downsample", "--quiet"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
    data = _standard_json(capsys.readouterr().out)
    assert list(data["per_scene"]) == ["scene_a"] and data["config"]["voxel_size"] is None
    # the .npz rows are looked up by text: the result equals the aligned embeddings of the functional call
    args = (*(seg_example[k] for k in ("pred_points", "pred_features", "pred_index", "text_features", "prompts")),
            *(seg_example[k] for k in ("gt_points", "gt_ids", "categories")))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = topn_frequency(*args, top_n=5, voxel_size=None).frequencies
    assert data["per_scene"]["scene_a"]["top_5"] == pytest.approx(expected)
    np.savez(tree / "texts.npz", texts=np.array(prompts[1:]), features=seg_example["text_features"].numpy()[1:])
    assert main(argv) == 1
    assert "no embedding for 1 prompt text(s): 'sofa'" in capsys.readouterr().err


def test_segmentation_clip_is_monkeypatched(tree, seg_example, monkeypatch):
    import scenemetrics.openlex3d.text as text_module

    seen = {}

    def fake_encode(prompts, **kwargs):
        seen["prompts"], seen["kwargs"] = list(prompts), kwargs
        return seg_example["text_features"]

    monkeypatch.setattr(text_module, "encode_prompts", fake_encode)
    argv = ["openlex3d", "eval", "segmentation", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--prompts", str(tree / "prompt_list.txt"), "--clip", "--clip-weights", "w.bin", "--scenes",
            "scene_a", "--out", str(tree / "o"), "--quiet", "--device", "cpu"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
    assert seen["prompts"] == seg_example["prompts"] and seen["kwargs"]["weights_path"] == "w.bin"
    assert (tree / "o" / "openlex3d_segmentation.json").is_file()


def test_retrieval(tree):
    mapping = tree / "gt" / "scene_b" / "gt_categories_query_to_object_mapping_all.json"
    scenes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for scene in ("scene_a", "scene_b"):
            loaded = _load_scene(tree, scene)
            # scene_b has a mapping file; scene_a's queries are generated from its categories
            queries = load_query_mapping(mapping) if scene == "scene_b" else generate_queries(loaded[5])
            scenes[scene] = (loaded, queries)
    texts = sorted({q.text for _, qs in scenes.values() for q in qs})
    feats = np.random.default_rng(0).normal(size=(len(texts), 4)).astype(np.float32)
    np.savez(tree / "queries.npz", texts=np.array(texts), features=feats)
    out = tree / "ret.json"
    argv = ["openlex3d", "eval", "retrieval", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--query-features", str(tree / "queries.npz"), "--top-k", "3", "--out", str(out), "--quiet"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
        results = {}
        for scene, ((pts, f, index, gt_pts, gt_ids, _), queries) in scenes.items():
            qf = torch.tensor(np.stack([feats[texts.index(q.text)] for q in queries]))
            results[scene] = retrieval_ap(pts, f, index, qf, queries, gt_pts, gt_ids, top_k=3)
    data = _standard_json(out.read_text())
    assert list(data) == ["config", "per_scene", "pooled", "scene_mean"]
    for scene, res in results.items():
        assert data["per_scene"][scene] == pytest.approx({"ap": res.ap, "ap50": res.ap50, "ap25": res.ap25})
    pooled = pooled_retrieval_ap(list(results.values()))
    assert data["pooled"] == pytest.approx({"ap": pooled.ap, "ap50": pooled.ap50, "ap25": pooled.ap25})
    for k in ("ap", "ap50", "ap25"):
        assert data["scene_mean"][k] == pytest.approx(np.mean([getattr(r, k) for r in results.values()]))
    assert data["config"] == {"level": "all", "top_k": 3, "alignment_threshold": 0.001, "ap_range": "toolkit"}
    # a query text without embedding is an error naming it
    np.savez(tree / "queries.npz", texts=np.array(texts[1:]), features=feats[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 1


def test_errors(tree, capsys, monkeypatch):
    base = ["openlex3d", "eval", "segmentation", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--prompts", str(tree / "prompt_list.txt"), "--text-features", str(tree / "prompts.npy"),
            "--quiet"]  # fmt: skip
    (tree / "gt" / "scene_b" / "gt_cloud.npz").unlink()
    assert main([*base, "--scenes", "scene_b"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("scenemetrics: error: missing file") and "scene_b/gt_cloud.npz" in err
    assert main([*base, "--scenes", "nope"]) == 1
    assert "nope/gt_categories.json" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "lightning", None)
    monkeypatch.setitem(sys.modules, "lightning.fabric", None)
    assert main([*base, "--scenes", "scene_a", "--devices", "2"]) == 1
    assert 'pip install "scenemetrics[lightning]"' in capsys.readouterr().err
    assert main(["openlex3d", "eval"]) == 2
    assert main(["openlex3d", "eval", "segmentation"]) == 2  # argparse: required arguments missing


@pytest.mark.slow
def test_segmentation_two_fabric_ranks_equal_one_process(tree):
    argv = ["openlex3d", "eval", "segmentation", "--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"),
            "--prompts", str(tree / "prompt_list.txt"), "--text-features", str(tree / "prompts.npy"),
            "--top-n", "1", "3", "--set-ranking", "--quiet", "--device", "cpu"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main([*argv, "--out", str(tree / "one.json")]) == 0
        assert main([*argv, "--out", str(tree / "two.json"), "--devices", "2"]) == 0
    one, two = (_standard_json((tree / name).read_text()) for name in ("one.json", "two.json"))
    assert one["per_scene"] == two["per_scene"]
    assert one["mean"]["top_1"] == pytest.approx(two["mean"]["top_1"], abs=1e-12)
    assert one["mean"]["top_3"] == pytest.approx(two["mean"]["top_3"], abs=1e-12)
    assert one["mean"]["set_ranking"] == pytest.approx(two["mean"]["set_ranking"], abs=1e-12, nan_ok=True)


def _as_benchmark_release(tree, *, visible_scene=None):
    """The same two scenes in the benchmark's own layouts: ScanNet++ ``prepared_semantics/<scene>.pth`` for the
    dataset and the OpenLex3D label release (``<labels>/scannetpp/<scene>/...``, ``prompt_list.txt``)."""
    import shutil

    root, labels = tree / "scannetpp_root", tree / "openlex3d_labels"
    (root / "prepared_semantics").mkdir(parents=True)
    for scene in ("scene_a", "scene_b"):
        with np.load(tree / "gt" / scene / "gt_cloud.npz") as data:
            arrays = {"sampled_coords": data["points"], "sampled_colors": np.zeros_like(data["points"]),
                      "sampled_instance_anno_id": data["object_ids"]}  # fmt: skip
        torch.save(arrays, root / "prepared_semantics" / f"{scene}.pth")
        shutil.copytree(tree / "gt" / scene, labels / "scannetpp" / scene, ignore=shutil.ignore_patterns("*.npz"))
    shutil.copy(tree / "prompt_list.txt", labels / "scannetpp" / "prompt_list.txt")
    return root, labels


def test_benchmark_layout_equals_prepared_gt_and_prints_the_table(tree, capsys):
    root, labels = _as_benchmark_release(tree)
    texts = sorted({"sofa", "lamp", "cat sofa"} | {q.text for q in generate_queries(_load_scene(tree, "scene_a")[5])})
    np.savez(tree / "queries.npz", texts=np.array(texts),
             features=np.random.default_rng(1).normal(size=(len(texts), 4)).astype(np.float32))  # fmt: skip
    common = ["--pred", str(tree / "pred"), "--top-n", "1", "--quiet", "--device", "cpu"]
    prepared = ["--gt-root", str(tree / "gt"), "--prompts", str(tree / "prompt_list.txt")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["openlex3d", "eval", "segmentation", *prepared, *common, "--set-ranking", "--text-features",
                     str(tree / "prompts.npy"), "--out", str(tree / "seg.json")]) == 0  # fmt: skip
        assert (
            main(
                [
                    "openlex3d",
                    "eval",
                    "retrieval",
                    "--gt-root",
                    str(tree / "gt"),
                    "--pred",
                    str(tree / "pred"),
                    "--query-features",
                    str(tree / "queries.npz"),
                    "--quiet",
                    "--out",
                    str(tree / "r.json"),
                ]
            )
            == 0
        )
        capsys.readouterr()
        argv = ["openlex3d", "eval", "--dataset", "scannetpp", "--dataset-root", str(root), "--labels", str(labels),
                *common, "--text-features", str(tree / "prompts.npy"), "--query-features", str(tree / "queries.npz"),
                "--out", str(tree / "bench.json")]  # fmt: skip
        assert main(argv) == 0
    table = capsys.readouterr().out
    bench = json.loads((tree / "bench.json").read_text())
    seg, ret = json.loads((tree / "seg.json").read_text()), json.loads((tree / "r.json").read_text())
    assert bench["segmentation"]["per_scene"] == seg["per_scene"] and bench["segmentation"]["mean"] == seg["mean"]
    assert bench["retrieval"]["per_scene"] == ret["per_scene"] and bench["retrieval"]["pooled"] == ret["pooled"]
    caption, *lines = table.strip().splitlines()
    assert "category frequency (the toolkit's form" in caption and "IoU 0.50:0.05:0.90" in caption
    assert [line.split()[0] for line in lines] == ["scene", "scene_a", "scene_b", "mean"]
    header = lines[0].split()
    assert "top_1:synonyms" in header and "AP" in header
    mean_row = dict(zip(header, lines[-1].split(), strict=True))
    assert mean_row["top_1:synonyms"] == f"{100 * seg['mean']['top_1']['synonyms']:.1f}"
    assert mean_row["AP"] == f"{100 * ret['scene_mean']['ap']:.1f}"


def test_benchmark_segmentation_uses_the_visible_cloud(tree):
    root, labels = _as_benchmark_release(tree)
    pts, feats, index, gt_pts, gt_ids, cats = _load_scene(tree, "scene_a")
    visible = gt_pts[::2] + 0.01  # within the 5 cm transfer radius of a GT point
    visible[0] += 1.0  # far from every GT point: id -1 (not evaluated)
    write_pcd(labels / "scannetpp" / "scene_a" / "gt_visible_cloud.pcd", visible, mode="ascii", dtype="f8")
    out = tree / "bench.json"
    argv = ["openlex3d", "eval", "--dataset", "scannetpp", "--dataset-root", str(root), "--labels", str(labels),
            "--scene", "scene_a", "--pred", str(tree / "pred" / "scene_a"), "--top-n", "1", "--quiet",
            "--text-features", str(tree / "prompts.npy"), "--out", str(out)]  # fmt: skip
    from scipy.spatial import cKDTree

    dist, nn = cKDTree(gt_pts).query(read_point_cloud(labels / "scannetpp" / "scene_a" / "gt_visible_cloud.pcd"))
    visible_ids = np.where(dist < 0.05, gt_ids[nn], -1)
    assert visible_ids[0] == -1 and (visible_ids[1:] == gt_ids[::2][1:]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
        expected = topn_frequency(pts, feats, index, torch.as_tensor(np.load(tree / "prompts.npy")),
                                  (tree / "prompt_list.txt").read_text().splitlines(), visible, visible_ids, cats,
                                  top_n=1)  # fmt: skip
    data = json.loads(out.read_text())
    assert data["segmentation"]["per_scene"]["scene_a"]["top_1"] == pytest.approx(expected.frequencies)
    assert data["retrieval"] is None and "no --query-features" in data["retrieval_skipped"]


def test_benchmark_argument_errors(tree, capsys):
    root, labels = _as_benchmark_release(tree)
    base = ["openlex3d", "eval", "--dataset", "scannetpp", "--dataset-root", str(root), "--pred", str(tree / "pred")]
    assert main([*base, "--text-features", "x.npy"]) == 1
    assert "--labels DIR" in capsys.readouterr().err
    assert main([*base, "--labels", str(labels)]) == 1
    assert "--text-features FILE or --clip" in capsys.readouterr().err
    assert main([*base, "--labels", str(labels), "--gt-root", str(tree / "gt"), "--text-features", "x"]) == 1
    assert "not both" in capsys.readouterr().err
    assert main([*base, "--labels", str(labels), "--scenes", "all", "--text-features", str(tree / "prompts.npy"),
                 "--quiet"]) == 1  # fmt: skip
    assert "openlex3d_labels/scannetpp/0a76e06478/gt_categories.json" in capsys.readouterr().err


def test_options_given_before_the_task_are_kept(tree):
    """`openlex3d eval --out F TASK ...` ignored every option given before TASK (argparse reset them)."""
    common = ["--gt-root", str(tree / "gt"), "--pred-root", str(tree / "pred"), "--quiet", "--device", "cpu"]
    seg = ["--prompts", str(tree / "prompt_list.txt"), "--text-features", str(tree / "prompts.npy")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["openlex3d", "eval", "segmentation", *common, *seg, "--top-n", "1", "--out",
                     str(tree / "after.json")]) == 0  # fmt: skip
        assert main(["openlex3d", "eval", "--out", str(tree / "before.json"), *seg, "segmentation", *common,
                     "--top-n", "1"]) == 0  # fmt: skip
        # --top-n takes several values, so before TASK it is written with "="
        assert main(["openlex3d", "eval", *common, "--top-n=3", "segmentation", *seg, "--out",
                     str(tree / "mixed.json")]) == 0  # fmt: skip
    after, before = (_standard_json((tree / n).read_text()) for n in ("after.json", "before.json"))
    assert before == after
    mixed = _standard_json((tree / "mixed.json").read_text())
    assert mixed["config"]["top_n"] == [3] and "top_3" in mixed["mean"]


def test_paper_forms_through_the_cli(tree, capsys):
    """``--topn-form iou`` and ``--ap-range paper``: the JSON equals the functional API, the table says its forms."""
    from scenemetrics.openlex3d import topn_iou

    text = torch.as_tensor(np.load(tree / "prompts.npy"))
    prompts = (tree / "prompt_list.txt").read_text().splitlines()
    seg_out, ret_out = tree / "seg.json", tree / "ret.json"
    texts = sorted({"sofa", "lamp", "cat sofa"} | {q.text for q in generate_queries(_load_scene(tree, "scene_a")[5])})
    feats = np.random.default_rng(1).normal(size=(len(texts), 4)).astype(np.float32)
    np.savez(tree / "queries.npz", texts=np.array(texts), features=feats)
    gt = ["--gt-root", str(tree / "gt"), "--pred", str(tree / "pred"), "--quiet", "--device", "cpu"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["openlex3d", "eval", "segmentation", *gt, "--prompts", str(tree / "prompt_list.txt"),
                     "--text-features", str(tree / "prompts.npy"), "--top-n", "1", "2", "--topn-form", "iou",
                     "--out", str(seg_out)]) == 0  # fmt: skip
        assert main(["openlex3d", "eval", "retrieval", *gt, "--query-features", str(tree / "queries.npz"),
                     "--ap-range", "paper", "--out", str(ret_out)]) == 0  # fmt: skip
        seg, ret = _standard_json(seg_out.read_text()), _standard_json(ret_out.read_text())
        expected, results = {}, {}
        for scene in ("scene_a", "scene_b"):
            pts, f, index, gt_pts, gt_ids, cats = _load_scene(tree, scene)
            expected[scene] = {n: topn_iou(pts, f, index, text, prompts, gt_pts, gt_ids, cats, top_n=n) for n in (1, 2)}
            mapping = tree / "gt" / scene / "gt_categories_query_to_object_mapping_all.json"
            queries = load_query_mapping(mapping) if mapping.is_file() else generate_queries(cats)
            qf = torch.tensor(np.stack([feats[texts.index(q.text)] for q in queries]))
            results[scene] = retrieval_ap(pts, f, index, qf, queries, gt_pts, gt_ids, ap_range="paper")
    assert seg["config"]["topn_form"] == "iou" and ret["config"]["ap_range"] == "paper"
    for scene, by_n in expected.items():
        assert list(seg["per_scene"][scene]) == ["top_1_iou", "top_2_iou"]
        for n, res in by_n.items():
            assert seg["per_scene"][scene][f"top_{n}_iou"] == pytest.approx(res.ious)
        assert ret["per_scene"][scene] == pytest.approx({"ap": results[scene].ap, "ap50": results[scene].ap50,
                                                         "ap25": results[scene].ap25})  # fmt: skip
    assert seg["mean"]["top_1_iou"]["synonyms"] == pytest.approx(
        np.mean([expected[s][1].ious["synonyms"] for s in expected])
    )
    pooled = pooled_retrieval_ap(list(results.values()))
    assert ret["pooled"] == pytest.approx({"ap": pooled.ap, "ap50": pooled.ap50, "ap25": pooled.ap25})
    # the benchmark table names the forms it shows
    root, labels = _as_benchmark_release(tree)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["openlex3d", "eval", "--dataset", "scannetpp", "--dataset-root", str(root), "--labels",
                     str(labels), "--pred", str(tree / "pred"), "--top-n", "1", "--quiet", "--device", "cpu",
                     "--text-features", str(tree / "prompts.npy"), "--query-features", str(tree / "queries.npz"),
                     "--topn-form", "iou", "--ap-range", "paper"]) == 0  # fmt: skip
    caption, header, *_ = capsys.readouterr().out.strip().splitlines()
    assert "IoU TP / (TP + FP + FN) per label tier (the paper's form)" in caption
    assert "AP over IoU 0.50:0.05:0.95 (the range the paper writes)" in caption
    assert "top_1_iou:synonyms" in header.split() and "top_1_iou:missing" not in header.split()
