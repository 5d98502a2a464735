"""Fine-tuning end to end: build-dataset -> embed -> train-head -> evaluate-head; --init-head; TensorBoard resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("cv2")
pytest.importorskip("lightning")

from scenemetrics.cli import main
from scenemetrics.prism import ProjectionHead, build_feature_cache, read_feature_cache, train_head
from scenemetrics.prism.training import PRISMHeadModule
from scenemetrics.prism.viewmatch import (
    BuildConfig,
    OpenCVBackend,
    build_viewmatch_dataset,
    head_discriminability,
)

from . import prism_tiny
from . import viewmatch_scenes as sc

FAST_HEAD = {"hidden_dim": 32, "out_dim": 16, "progress": False, "accelerator": "cpu", "devices": 1}


@pytest.fixture(scope="module")
def three_objects(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("views3")
    sc.write_transforms(root / "cube", "cube", [10.0, 100.0, 190.0, 280.0], 128)
    sc.write_transforms(root / "sphere", "sphere", [10.0, 100.0, 190.0, 280.0], 128)
    sc.write_transforms(root / "cube_b", "cube", [40.0, 130.0, 220.0, 310.0], 128)
    return root


@pytest.mark.slow
def test_build_embed_train_python_api(three_objects, extractor64, tmp_path):
    config = BuildConfig(num_positives=2, num_negatives=2, pairs=2, test_fraction=0.0)
    report = build_viewmatch_dataset(three_objects, tmp_path / "vm", inpainter=OpenCVBackend(), config=config)
    assert report.objects == ["cube", "cube_b", "sphere"] and report.pairs_done == 6
    cache = build_feature_cache(tmp_path / "vm", tmp_path / "cache", extractor64, batch_size=8, progress=False)
    index, feats = read_feature_cache(cache)
    assert len(index["anchors"]) == 6 and feats.shape[1] == prism_tiny.TINY_FEATURE_DIM
    assert all(a["split"] == "train" and a["negatives"] for a in index["anchors"] if a["object"] != "sphere")
    result = train_head(cache, tmp_path / "run", epochs=2, **FAST_HEAD)
    assert result.epochs_completed == 2 and result.head_path.is_file()
    assert ProjectionHead.load(result.head_path).in_dim == prism_tiny.TINY_FEATURE_DIM
    scores = head_discriminability(cache, result.head, split=None)
    assert scores["distance"]["positives"]["n"] == sum(len(a["positives"]) for a in index["anchors"])
    assert 0.0 <= scores["auc"] <= 1.0 and math.isfinite(scores["mmd"]["positives"])


@pytest.mark.slow
def test_the_chain_runs_through_the_cli_without_hand_editing(three_objects, tiny_folders, tmp_path, capsys):
    def run(*args: str) -> dict:
        assert main(list(args)) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    vm, cache, runs = tmp_path / "vm", tmp_path / "cache", tmp_path / "runs"
    built = run(
        "prism", "build-dataset", "--views", str(three_objects), "--out", str(vm), "--inpainter", "opencv",
        "--num-positives", "1", "--num-negatives", "1", "--pairs", "2", "--test-fraction", "0.34", "--no-progress",
    )  # fmt: skip
    assert built["objects"] == 3 and built["pairs_done"] == 6 and built["out"] == str(vm)
    assert set(built) == {
        "out",
        "objects",
        "pairs_done",
        "pairs_skipped",
        "positives",
        "negatives",
        "skipped_by_reason",
    }
    model = str(tiny_folders["clip_camera_projection"])
    embedded = run("prism", "embed", str(vm), "--model", model, "--out", str(cache), "--image-size", "64",
                   "--device", "cpu", "--no-progress")  # fmt: skip
    assert embedded["feature_dim"] == prism_tiny.TINY_FEATURE_DIM and embedded["anchors"] == 6
    trained = run("prism", "train-head", str(cache), "--out", str(runs / "a"), "--epochs", "2", "--hidden-dim", "16",
                  "--out-dim", "8", "--accelerator", "cpu", "--devices", "1", "--no-progress")  # fmt: skip
    assert trained["epochs_completed"] == 2
    tuned = run("prism", "train-head", str(cache), "--out", str(runs / "b"), "--epochs", "1", "--init-head",
                trained["head"], "--accelerator", "cpu", "--devices", "1", "--no-progress")  # fmt: skip
    assert ProjectionHead.load(tuned["head"]).out_dim == 8  # sizes come from the --init-head file
    evaluated = run("prism", "evaluate-head", "--data", str(cache), "--head", tuned["head"], "--out", str(runs / "e"))
    assert evaluated["split"] == "test" and evaluated["num_anchors"] == 2
    assert 0.0 <= evaluated["auc"] <= 1.0 and "raw" in evaluated
    assert (runs / "e" / "histogram.png").is_file()
    strict = json.loads((runs / "e" / "evaluation.json").read_text(), parse_constant=pytest.fail)  # no NaN tokens
    assert strict["auc"] == evaluated["auc"]
    # a bad --init-head size is a one-line error (exit 1)
    wrong = tmp_path / "wrong.safetensors"
    ProjectionHead(in_dim=7, out_dim=4, hidden_dim=4).save(wrong)
    assert main(["prism", "train-head", str(cache), "--out", str(runs / "c"), "--init-head", str(wrong)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "takes 7-d features" in err[0]


# ---- --init-head and TensorBoard (synthetic feature caches: seconds) --------------------------------------------


@pytest.fixture
def cache(tmp_path) -> Path:
    return prism_tiny.write_synthetic_cache(tmp_path / "cache", num_objects=6, anchors_per_object=3, dim=8)


def test_init_head_is_the_first_step_start(cache, tmp_path, monkeypatch):
    torch.manual_seed(123)
    start = ProjectionHead(in_dim=8, out_dim=16, hidden_dim=32)
    start_file = tmp_path / "start.safetensors"
    start.save(start_file, metadata={"extractor": json.dumps({"model": "synthetic", "image_size": 64})})
    seen: list[dict[str, torch.Tensor]] = []

    def first_batch(self, batch, batch_idx):
        if not seen:
            seen.append({k: v.detach().clone() for k, v in self.head.state_dict().items()})

    monkeypatch.setattr(PRISMHeadModule, "on_train_batch_start", first_batch)
    result = train_head(cache, tmp_path / "run", epochs=1, init_head=start_file, lr=1e-2, **FAST_HEAD)
    expected = ProjectionHead.load(start_file).state_dict()
    assert seen and all(torch.equal(seen[0][k], expected[k]) for k in expected)
    assert any(not torch.equal(result.head.state_dict()[k], expected[k]) for k in expected)  # it did train
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    import hashlib

    assert config["init_head"] == {
        "path": str(start_file),
        "sha256": hashlib.sha256(start_file.read_bytes()).hexdigest(),
    }
    assert json.loads(ProjectionHead.load(result.head_path).metadata["trainer"])["init_head"] == config["init_head"]
    # sizes come from the file when not given
    again = train_head(cache, tmp_path / "run2", epochs=1, init_head=start_file, progress=False, accelerator="cpu")
    assert (again.head.hidden_dim, again.head.out_dim) == (32, 16)


def test_init_head_errors_and_warnings(cache, tmp_path):
    wrong_in = tmp_path / "wrong_in.safetensors"
    ProjectionHead(in_dim=9, out_dim=16, hidden_dim=32).save(wrong_in)
    with pytest.raises(ValueError, match="9-d features but the feature cache holds 8-d"):
        train_head(cache, tmp_path / "r1", epochs=1, init_head=wrong_in, **FAST_HEAD)
    ok = tmp_path / "ok.safetensors"
    ProjectionHead(in_dim=8, out_dim=16, hidden_dim=32).save(ok, metadata={"extractor": json.dumps({"timestep": 500})})
    with pytest.raises(ValueError, match="`hidden_dim`=64 does not match"):
        train_head(cache, tmp_path / "r2", epochs=1, init_head=ok, **{**FAST_HEAD, "hidden_dim": 64})
    with pytest.raises(ValueError, match="resume"):
        train_head(cache, tmp_path / "r3", epochs=1, init_head=ok, resume="last", **FAST_HEAD)
    with pytest.raises(FileNotFoundError, match="init_head"):
        train_head(cache, tmp_path / "r4", epochs=1, init_head=tmp_path / "none.safetensors", **FAST_HEAD)
    with pytest.warns(UserWarning, match="another extractor setting"):
        train_head(cache, tmp_path / "r5", epochs=1, init_head=ok, **FAST_HEAD)


def test_a_resumed_run_keeps_its_tensorboard_folder(cache, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    train_head(cache, out, epochs=1, **FAST_HEAD)
    train_head(cache, out, epochs=2, resume="last", **FAST_HEAD)
    versions = sorted(p.name for p in (out / "logs").iterdir())
    assert versions == ["version_0"]
    events = sorted((out / "logs" / "version_0").glob("events.out.tfevents.*"))
    assert len(events) == 2  # one file per process, both in the run's folder
    runs = []
    for f in events:
        acc = EventAccumulator(str(f))
        acc.Reload()
        scalars = acc.Scalars("val/loss")
        runs.append((scalars[0].wall_time, [e.step for e in scalars]))
    # in the order the runs wrote them (file names order by second and pid, which can tie or invert)
    steps = [s for _, s in sorted(runs)]
    assert len(steps[0]) == 1 and len(steps[1]) == 1 and steps[1][0] > steps[0][0]  # steps continue
    ckpt = torch.load(out / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["prism_logger_version"] == 0
    # a new fresh run in the same folder takes the next version
    train_head(cache, out, epochs=1, **FAST_HEAD)
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["version_0", "version_1"]


def test_evaluate_head_separates_a_separating_head(tmp_path):
    cache = prism_tiny.write_synthetic_cache(
        tmp_path / "cache", num_objects=12, anchors_per_object=6, dim=16, val_objects=2, test_objects=3
    )
    # a hand-built head that keeps only the last quarter of the features, where the synthetic negatives differ
    head = ProjectionHead(in_dim=16, out_dim=4, hidden_dim=8)
    with torch.no_grad():
        eye = torch.eye(4)
        head.fc1.weight.zero_()
        head.fc1.weight[:4, 12:] = eye
        head.fc1.weight[4:, 12:] = -eye
        head.fc1.bias.zero_()
        head.fc2.weight.copy_(torch.cat([eye, -eye], dim=1))  # relu(x) - relu(-x) = x
        head.fc2.bias.zero_()
    trained = head_discriminability(cache, head, split="test")
    raw = head_discriminability(cache, None, split="test")
    # 3 test objects x 6 anchors x 2 positives; the 0.01-area negatives are left out (1 of 3 per anchor)
    assert trained["distance"]["positives"]["n"] == 36 and trained["distance"]["negatives"]["n"] == 36
    assert trained["distance"]["misaligned"]["n"] == 36
    assert trained["auc"] > 0.9 and trained["auc"] > raw["auc"]
    d = trained["distances"]
    assert trained["auc"] == pytest.approx(
        np.mean([[float(p < n) + 0.5 * float(p == n) for n in d["negatives"]] for p in d["positives"]])
    )
    assert trained["mmd"]["positives"] < trained["mmd"]["negatives"]
    pytest.importorskip("matplotlib")
    from scenemetrics.prism.viewmatch import plot_distance_histogram

    png = plot_distance_histogram(trained, tmp_path / "hist.png")
    assert png.stat().st_size > 1000
    with pytest.raises(ValueError, match="no anchors in split 'val'"):
        head_discriminability(prism_tiny.write_synthetic_cache(tmp_path / "noval", val_objects=0), None, split="val")
