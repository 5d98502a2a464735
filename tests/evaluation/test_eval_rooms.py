"""`scenemetrics eval` with the OSIM and PRISM rooms (skipped until those rooms are part of the package).

The expected values come from the rooms' own functional APIs (``scenemetrics.osim.osim``,
``scenemetrics.prism.prism_distance``) on the same images and the same random-weight checkpoints; the runner only
has to feed, pool and tabulate them correctly.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import shutil
import warnings
from pathlib import Path

import pytest
import torch

from scenemetrics.cli import main

from .conftest import METHODS, SCENES, VIEWS, read_csv, read_json, read_png


def _room(module: str, attr: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), attr)
    except ImportError:
        return False


needs_osim = pytest.mark.skipif(not _room("scenemetrics.osim", "OSIM"), reason="the OSIM room is not merged yet")
needs_prism = pytest.mark.skipif(
    not (_room("scenemetrics.prism", "PRISMDistance") and importlib.util.find_spec("diffusers") is not None),
    reason="the PRISM room (or the [prism] extra) is not available",
)


def _images(root: Path, method: str, scene: str, sub: str) -> torch.Tensor:
    return torch.stack(
        [torch.from_numpy(read_png(root / method / scene / sub / f"{v}.png")).permute(2, 0, 1).float() for v in VIEWS]
    )


@needs_osim
def test_osim_scores_objects_and_pooling(tree, tmp_path):
    osim = importlib.import_module("scenemetrics.osim")
    out = tmp_path / "out"
    args = ["eval", "--root", str(tree), "--out", str(out), "--metrics", "osim", "--random-weights", "--quiet"]
    assert main([*args, "--osim-conf", "0.3", "--device", "cpu"]) == 0
    # the same random detector the runner builds (yolox_nano, seed 0), through the same loader
    weights = osim.random_checkpoint("yolox_nano", tmp_path / "yolox_nano.pth")
    model = osim.load_detector("yolox_nano", weights)
    rows = {(r["method"], r["scene"]): r for r in read_csv(out / "results.csv")}
    doc = read_json(out / "results.json")
    lb = {r["method"]: r for r in doc["leaderboard"]}
    for method in METHODS:
        preds_all, target_all = [], []
        for scene in SCENES:
            preds, target = _images(tree, method, scene, "renders"), _images(tree, method, scene, "gt")
            preds_all.append(preds)
            target_all.append(target)
            expected = float(osim.osim(preds, target, conf_threshold=0.3, model=model).score)
            assert float(rows[(method, scene)]["osim"]) == pytest.approx(expected, rel=1e-5, abs=1e-6)
        pooled = float(osim.osim(torch.cat(preds_all), torch.cat(target_all), conf_threshold=0.3, model=model).score)
        assert lb[method]["pooled"]["osim"] == pytest.approx(pooled, rel=1e-5, abs=1e-6)
    assert all(float(rows[("m_clean", s)]["osim"]) == pytest.approx(1.0, abs=1e-5) for s in SCENES)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    objects = [o for r in records for o in r["objects"].get("osim", [])]
    assert objects and all(-1.0 <= o["r"] <= 1.0 + 1e-6 and o["class_name"] in osim.COCO_CLASSES for o in objects)
    assert any(s["class_scores"].get("osim") for s in doc["scenes"])
    assert (out / "report" / "osim_violin_all.png").is_file()


@needs_prism
def test_prism_requirements_name_the_missing_flag():
    from scenemetrics.registry import get_metric

    assert get_metric("prism").unavailable_reason({}) is None
    assert "--prism-model" in get_metric("prism").unavailable_reason({}, random_weights=True)
    assert get_metric("prism").unavailable_reason({"model": "dir"}, random_weights=True) is None
    assert "--prism-anchors" in get_metric("prism_mmd").unavailable_reason({"model": "dir"})


@needs_prism
def test_prism_distance_and_mmd_from_cameras(copy_tree, tmp_path):
    prism = importlib.import_module("scenemetrics.prism")
    root = copy_tree()
    model = prism.random_checkpoint(tmp_path / "zero123")  # spec 12.1 tiny configuration, random weights
    for method in METHODS:
        # alpha: explicit poses; beta: the same poses from spherical cameras; m_noise/beta: no cameras.json
        for scene in SCENES:
            views = {}
            for i, v in enumerate(VIEWS):
                if scene == "alpha":
                    views[v] = {"source": "train/t0.png", "pose": [0.0, 30.0 * (i + 1), 0.0]}
                else:
                    views[f"{v}.png"] = {
                        "source": "train/t0.png",
                        "source_camera": {"polar_deg": 60.0, "azimuth_deg": 10.0, "radius": 2.0},
                        "target_camera": {"polar_deg": 60.0, "azimuth_deg": 10.0 + 30.0 * (i + 1), "radius": 2.0},
                    }
            if (method, scene) != ("m_noise", "beta"):
                (root / method / scene / "cameras.json").write_text(json.dumps({"views": views}))
    anchors = torch.nn.functional.normalize(torch.randn(12, 208, generator=torch.Generator().manual_seed(0)), dim=-1)
    prism.save_anchors(anchors, tmp_path / "anchors.safetensors")
    out = tmp_path / "out"
    args = [
        "eval", "--root", str(root), "--out", str(out), "--metrics", "prism,prism_mmd", "--quiet", "--device", "cpu",
        "--prism-model", str(model), "--prism-center-crop", "--prism-anchors", str(tmp_path / "anchors.safetensors"),
        "--metric-option", "prism.image_size=64", "--metric-option", "prism_mmd.image_size=64",
    ]  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(args) == 0
    skips = sorted(str(w.message).split(" (")[0] for w in caught if "skipped for" in str(w.message))
    assert skips == ["prism skipped for 1 unit(s)", "prism_mmd skipped for 1 unit(s)"]
    reasons = " ".join(str(w.message) for w in caught)  # each names its own metric, not a family's package
    for name in ("prism", "prism_mmd"):
        assert f"no cameras.json ({name} needs the source view of each render" in reasons
    extractor = prism.Zero123Features.from_pretrained(model, resize=True, image_size=64)
    rows = {(r["method"], r["scene"]): r for r in read_csv(out / "results.csv")}
    for method in METHODS:
        for scene in SCENES:
            if (method, scene) == ("m_noise", "beta"):
                assert rows[(method, scene)]["prism"] == ""
                continue
            src = torch.from_numpy(read_png(root / method / scene / "train" / "t0.png")).permute(2, 0, 1).float()
            crop = slice(8, 56)  # 48x64 -> central 48x48
            preds = _images(root, method, scene, "renders")[..., crop]
            target = _images(root, method, scene, "gt")[..., crop]
            source = src[None, ..., crop].expand(len(VIEWS), -1, -1, -1)
            pose = torch.tensor([[0.0, 30.0 * (i + 1), 0.0] for i in range(len(VIEWS))])
            d = prism.prism_distance(extractor, None, source, preds, target, pose)
            assert float(rows[(method, scene)]["prism"]) == pytest.approx(float(d.mean()), rel=1e-4, abs=1e-6)
            assert math.isfinite(float(rows[(method, scene)]["prism_mmd"]))
    assert all(float(rows[("m_clean", s)]["prism"]) <= 1e-6 for s in SCENES)
    lb = {r["method"]: r for r in read_json(out / "results.json")["leaderboard"]}
    assert lb["m_noise"]["count"]["prism"] == 1 and math.isfinite(lb["m_art"]["pooled"]["prism_mmd"])
    shutil.rmtree(model)
