"""Data formats, triplet enumeration, the Lightning head trainer (separation, resume) and the two CLI commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from . import prism_tiny

pytest.importorskip("lightning")
pytest.importorskip("safetensors")

from scenemetrics.cli import main
from scenemetrics.prism import (
    PRISMFeatureDataModule,
    ProjectionHead,
    anchor_embeddings_from_cache,
    enumerate_triplets,
    evaluate_head,
    load_anchors,
    mask_weight,
    read_feature_cache,
    train_head,
)

FAST = {"hidden_dim": 32, "out_dim": 16, "progress": False, "accelerator": "cpu", "devices": 1}


def test_mask_weight_ramp():
    assert [mask_weight(a) for a in (0.0, 0.02, 0.11, 0.2, 0.35, 1.7)] == pytest.approx([0, 0, 0.5, 1, 1, 1])
    t = mask_weight(torch.tensor([0.01, 0.065, 0.3]), min_area=0.02, full_area=0.11)
    assert torch.allclose(t, torch.tensor([0.0, 0.5, 1.0]))
    with pytest.raises(ValueError, match="min_area"):
        mask_weight(0.1, min_area=0.2, full_area=0.2)
    with pytest.raises(ValueError, match="min_area"):
        mask_weight(0.1, min_area=-0.1)


def _index() -> dict:
    return {
        "anchors": [
            {
                "split": "train",
                "gt": 0,
                "positives": [1, 2],
                "negatives": [{"row": 3, "mask_area": 0.01}, {"row": 4, "mask_area": 0.11}],
                "misaligned": [5, 6, 7],
            },
            {"split": "train", "gt": 8, "positives": [], "negatives": [{"row": 9, "mask_area": 0.5}]},
            {"split": "train", "gt": 10, "positives": [11], "negatives": [{"row": 12, "mask_area": 0.001}]},
            {"split": "test", "gt": 13, "positives": [14], "negatives": [], "misaligned": [15]},
        ]
    }


def test_enumerate_triplets_by_hand():
    index = _index()
    for a in index["anchors"]:
        a.setdefault("misaligned", [])
    got = enumerate_triplets(index, "train")
    assert got == [
        (0, 1, 4, pytest.approx(0.5)),
        (0, 1, 5, 1.0),
        (0, 1, 6, 1.0),
        (0, 1, 7, 1.0),
        (0, 2, 4, pytest.approx(0.5)),
        (0, 2, 5, 1.0),
        (0, 2, 6, 1.0),
        (0, 2, 7, 1.0),
    ]  # the 1 % mask is dropped; no positives -> nothing; only tiny negatives -> nothing
    capped = enumerate_triplets(index, "train", max_misaligned=1)
    assert [t[2] for t in capped] == [4, 5, 4, 5]
    assert enumerate_triplets(index, "test") == [(13, 14, 15, 1.0)]
    assert len(enumerate_triplets(index, None)) == 9
    with pytest.raises(ValueError, match="split"):
        enumerate_triplets(index, "holdout")


def _write_cache(root: Path, index: dict, features: np.ndarray) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "features.npy", features)
    (root / "index.json").write_text(json.dumps(index))
    return root


def test_read_feature_cache_fills_defaults_and_memory_maps(tmp_path):
    index = {"format": "scenemetrics.prism.feature-cache/1", "feature_dim": 4, "num_rows": 16, **_index()}
    root = _write_cache(tmp_path / "c", index, np.zeros((16, 4), np.float16))
    got, feats = read_feature_cache(root)
    assert isinstance(feats, np.memmap) and feats.shape == (16, 4)
    assert got["anchors"][1]["misaligned"] == [] and got["anchors"][0]["split"] == "train"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"format": "something/1"}, "format"),
        ({"num_rows": 17}, "shape"),
        ({"feature_dim": 5}, "shape"),
        ({"anchors": [{"gt": 16, "positives": []}]}, "row index"),
        ({"anchors": [{"gt": 0, "positives": [-1]}]}, "row index"),
        ({"anchors": [{"gt": 0, "negatives": [{"row": 1}]}]}, "mask_area"),
        ({"anchors": [{"gt": 0, "split": "holdout"}]}, "split"),
        ({"rows": [{}]}, "rows"),
    ],
)
def test_read_feature_cache_errors(tmp_path, change, match):
    index = {"format": "scenemetrics.prism.feature-cache/1", "feature_dim": 4, "num_rows": 16, "anchors": []}
    root = _write_cache(tmp_path / "c", {**index, **change}, np.zeros((16, 4), np.float32))
    with pytest.raises(ValueError, match=match):
        read_feature_cache(root)


def test_read_feature_cache_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"index\.json"):
        read_feature_cache(tmp_path)


@pytest.fixture(scope="module")
def separable_cache(tmp_path_factory) -> Path:
    return prism_tiny.write_synthetic_cache(
        tmp_path_factory.mktemp("cache") / "cache", num_objects=16, anchors_per_object=8, dim=16, val_objects=2
    )


def test_datamodule_splits_and_epoch_order(separable_cache, tmp_path):
    dm = PRISMFeatureDataModule(separable_cache, batch_size=8, seed=3)
    assert dm.feature_dim == 16 and dm.val_objects == ["obj_00", "obj_01"]
    assert len(dm.train_triplets) == 14 * 8 * 2 * 4 and len(dm.val_triplets) == 2 * 8 * 2 * 4
    a, p, n, w = next(iter(dm.val_dataloader()))
    assert a.shape == p.shape == n.shape == (8, 16) and a.dtype == torch.float32 and w.shape == (8,)
    features = np.load(separable_cache / "features.npy")
    first = dm.val_triplets[0]
    assert torch.equal(a[0], torch.from_numpy(features[first[0]])) and float(w[0]) == pytest.approx(first[3])
    assert torch.equal(p[0], torch.from_numpy(features[first[1]])) and torch.equal(
        n[0], torch.from_numpy(features[first[2]])
    )
    sampler = dm.train_dataloader().sampler
    sampler.set_epoch(2)
    order = list(sampler)
    assert order == torch.randperm(len(dm.train_triplets), generator=torch.Generator().manual_seed(5)).tolist()
    # without "val" anchors, ceil(0.1 * 5) = 1 of the train objects is held out, chosen by the seed
    cache = prism_tiny.write_synthetic_cache(tmp_path / "noval", num_objects=5, anchors_per_object=2, val_objects=0)
    dm2 = PRISMFeatureDataModule(cache, val_fraction=0.1, seed=0)
    objects = [f"obj_{i:02d}" for i in range(5)]
    held = objects[int(torch.randperm(5, generator=torch.Generator().manual_seed(0))[0])]
    assert dm2.val_objects == [held]
    dm3 = PRISMFeatureDataModule(cache, val_fraction=0.0)
    with pytest.raises(ValueError, match="validation"):
        dm3.setup("fit")


def test_train_head_separates_the_synthetic_cache(separable_cache, tmp_path):
    torch.manual_seed(0)
    untrained = evaluate_head(separable_cache, ProjectionHead(in_dim=16, out_dim=16, hidden_dim=32), split="val")
    result = train_head(separable_cache, tmp_path / "run", epochs=25, lr=3e-3, **FAST)
    trained = evaluate_head(separable_cache, result.head, split="val")
    assert trained["num_triplets"] == 128
    assert trained["triplet_acc"] > 0.9 and trained["triplet_acc"] > untrained["triplet_acc"]
    history = result.history
    assert [h["epoch"] for h in history] == list(range(result.epochs_completed))
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    best = min(h["val_loss"] for h in history)
    assert result.best_val_loss == pytest.approx(best, rel=1e-6)
    assert trained["loss"] == pytest.approx(best, rel=1e-5)  # the returned head is the best checkpoint's
    run = tmp_path / "run"
    for name in ("head.safetensors", "checkpoints/last.ckpt", "checkpoints/best.ckpt", "history.json", "config.json"):
        assert (run / name).is_file(), name
    assert json.loads((run / "history.json").read_text()) == history
    assert any((run / "logs").rglob("events.out.tfevents.*"))  # tensorboard is installed in the dev env
    saved = ProjectionHead.load(result.head_path)
    assert json.loads(saved.metadata["extractor"])["model"] == "synthetic"
    assert json.loads(saved.metadata["trainer"])["epochs"] == 25
    for k, v in result.head.state_dict().items():
        assert torch.equal(v, saved.state_dict()[k])


def test_resume_continues_from_the_checkpoint(tmp_path):
    cache = prism_tiny.write_synthetic_cache(tmp_path / "cache", num_objects=6, anchors_per_object=3, dim=8)
    opts = dict(FAST, lr=3e-3, batch_size=16)
    full = train_head(cache, tmp_path / "full", epochs=4, **opts)
    part = train_head(cache, tmp_path / "part", epochs=2, **opts)
    assert part.epochs_completed == 2
    resumed = train_head(cache, tmp_path / "part", epochs=4, resume="last", **opts)
    assert resumed.epochs_completed == 4
    assert [h["epoch"] for h in resumed.history] == [0, 1, 2, 3]
    assert resumed.history[:2] == part.history
    for a, b in zip(resumed.history, full.history, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-6, abs=1e-9)
    last_full = torch.load(tmp_path / "full" / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
    last_resumed = torch.load(tmp_path / "part" / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
    for k, v in last_full.items():
        assert torch.allclose(v, last_resumed[k], atol=1e-6, rtol=0), k
    with pytest.raises(FileNotFoundError, match="resume"):
        train_head(cache, tmp_path / "fresh", epochs=2, resume="last", **opts)


def test_cli_train_head_prints_a_json_summary(separable_cache, tmp_path, capsys):
    code = main(
        [
            "prism",
            "train-head",
            str(separable_cache),
            "--out",
            str(tmp_path / "cli"),
            "--epochs",
            "2",
            "--hidden-dim",
            "16",
            "--out-dim",
            "8",
            "--accelerator",
            "cpu",
            "--devices",
            "1",
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    summary = json.loads(out[-1])
    assert summary["epochs_completed"] == 2 and math.isfinite(summary["best_val_loss"])
    assert Path(summary["head"]).is_file() and Path(summary["last_checkpoint"]).is_file()
    assert main(["prism", "train-head", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 1
    assert main(["prism", "train-head", str(separable_cache)]) == 2  # --out is required


# ---- embed ------------------------------------------------------------------------------------------------------


def _tiny_dataset(root: Path) -> Path:
    g = np.random.default_rng(0)
    for name, with_pairs in (("obj_a", True), ("obj_b", False)):
        obj = root / name
        (obj / "views").mkdir(parents=True)
        (obj / "inpainted").mkdir()
        views = {}
        for i, az in enumerate((0.0, 120.0, 240.0)):
            rgba = g.integers(0, 256, (64, 64, 4), dtype=np.uint8)
            rgba[..., 3] = np.where(rgba[..., 3] > 128, 255, 0)
            Image.fromarray(rgba, "RGBA").save(obj / "views" / f"{i:03d}.png")
            views[f"{i:03d}"] = {"file": f"views/{i:03d}.png", "polar_deg": 60.0, "azimuth_deg": az, "radius": 2.7}
        if name == "obj_b":  # one camera given as a c2w matrix (z-up world): polar 60, azimuth 240, radius 2.7
            p, a = math.radians(60.0), math.radians(240.0)
            c2w = np.eye(4)
            c2w[:3, 3] = [2.7 * math.sin(p) * math.cos(a), 2.7 * math.sin(p) * math.sin(a), 2.7 * math.cos(p)]
            views["002"] = {"file": "views/002.png", "c2w": c2w.tolist()}
        (obj / "cameras.json").write_text(json.dumps({"views": views}))
        if with_pairs:
            for f in ("pos0", "neg0", "neg1"):
                Image.fromarray(g.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(obj / "inpainted" / f"{f}.png")
            pairs = {
                "pairs": [
                    {
                        "source": "000",
                        "target": "001",
                        "positives": [{"file": "inpainted/pos0.png", "mask_area": 0.3}],
                        "negatives": [
                            {"file": "inpainted/neg0.png", "mask_area": 0.08},
                            {"file": "inpainted/neg1.png", "mask_area": 0.01},
                        ],
                        "misaligned": "all",
                    }
                ]
            }
            (obj / "pairs.json").write_text(json.dumps(pairs))
    (root / "dataset.json").write_text(
        json.dumps({"format": "scenemetrics.prism.dataset/1", "splits": {"test": ["obj_b"]}})
    )
    return root


def test_cli_embed_writes_a_cache_of_extractor_features(tiny_folders, extractor64, tmp_path, capsys):
    from scenemetrics.prism import load_view, relative_pose

    dataset = _tiny_dataset(tmp_path / "data")
    cache = tmp_path / "cache"
    anchors_file = tmp_path / "anchors.safetensors"
    args = ["prism", "embed", str(dataset), "--model", str(tiny_folders["clip_camera_projection"])]
    args += ["--out", str(cache), "--image-size", "64", "--device", "cpu", "--store-dtype", "float32"]
    args += ["--batch-size", "4", "--anchors-out", str(anchors_file), "--no-progress"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    index, feats = read_feature_cache(cache)
    # obj_a: 1 anchor (gt, 1 positive, 2 negatives, misaligned views 000 and 002); obj_b: 6 ordered pairs
    assert summary == {
        "rows": index["num_rows"],
        "anchors": 7,
        "feature_dim": 208,
        "out": str(cache),
        "anchors_file": str(anchors_file),
    }
    a = index["anchors"][0]
    assert a["split"] == "train" and len(a["positives"]) == 1 and len(a["misaligned"]) == 2
    assert [n["mask_area"] for n in a["negatives"]] == [0.08, 0.01]
    assert index["num_rows"] == 6 + 6  # obj_a: gt, positive, 2 negatives, 2 misaligned; obj_b: 6 ground truths
    assert index["extractor"]["image_size"] == 64 and index["extractor"]["torch_dtype"] == "float32"
    b = [x for x in index["anchors"] if x["object"] == "obj_b"]
    assert {x["split"] for x in b} == {"test"} and len(b) == 6
    for anchor in (a, b[0], b[-1]):
        obj = dataset / anchor["object"]
        cams = json.loads((obj / "cameras.json").read_text())["views"]
        src = load_view(obj / cams[anchor["source"]]["file"], 64)
        tgt = load_view(obj / cams[anchor["target"]]["file"], 64)
        row = index["rows"][anchor["gt"]]
        expected_pose = relative_pose(
            torch.tensor([60.0, float(int(anchor["source"]) * 120), 2.7]),
            torch.tensor([60.0, float(int(anchor["target"]) * 120), 2.7]),
        )
        assert torch.allclose(torch.tensor(row["pose"], dtype=torch.float64), expected_pose.double(), atol=1e-4)
        with torch.no_grad():
            direct = extractor64(src, tgt, torch.tensor(row["pose"]))
        assert torch.allclose(torch.from_numpy(np.array(feats[anchor["gt"]])), direct[0], atol=1e-5)
    # the anchor file holds the raw-mode embeddings of the test split's ground-truth rows
    anchors = load_anchors(anchors_file)
    expected = anchor_embeddings_from_cache(cache, None, split="test")
    assert anchors.shape == (6, 208) and torch.allclose(anchors, expected)
    assert main(["prism", "embed", str(dataset), "--out", str(cache), "--head", "h.safetensors"]) == 2


def test_cli_embed_reports_errors_in_one_line(tmp_path, capsys):
    code = main(["prism", "embed", str(tmp_path), "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("scenemetrics: error")]  # besides "loading the Zero123 model"
    assert code == 1 and len(errors) == 1 and "does not exist" in errors[0]
    assert not any("Traceback" in line for line in err)
