"""`scenemetrics demo`: the procedural scene, the report folder, offline behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from scenemetrics.cli import main
from scenemetrics.demo import _auc
from scenemetrics.synthetic import make_scene


def test_scene_is_deterministic_and_valid():
    a = make_scene(num_train=3, num_novel=2, size=(48, 64), seed=3)
    b = make_scene(num_train=3, num_novel=2, size=(48, 64), seed=3)
    for x, y in zip(a.train_views + a.novel_views, b.train_views + b.novel_views, strict=True):
        assert torch.equal(x, y)
        assert x.shape == (3, 48, 64) and float(x.min()) >= 0 and float(x.max()) <= 1
    assert all(m.any() for m in a.artifact_masks)
    # artifacts are planted only inside their masks
    for img, clean, mask in zip(a.novel_views, a.novel_targets, a.artifact_masks, strict=True):
        changed = (img - clean).abs().amax(dim=0) > 1e-6
        assert not bool((changed & ~mask).any())


def test_scene_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_train"):
        make_scene(num_train=0)
    with pytest.raises(ValueError, match="size"):
        make_scene(size=(8, 8))


def test_auc_hand_computed():
    # artifact pixels score lower than clean pixels in 3 of 4 pairs, one tie: (3 + 0.5) / 4... with ties counted 1/2
    pos = torch.tensor([0.1, 0.5])
    neg = torch.tensor([0.5, 0.9])
    # pairs: (0.1<0.5) 1, (0.1<0.9) 1, (0.5=0.5) 0.5, (0.5<0.9) 1 -> 3.5 / 4
    assert _auc(pos, neg) == pytest.approx(3.5 / 4)


@pytest.mark.slow
def test_demo_random_weights_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--random-weights", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "RANDOM WEIGHTS" in captured.err and "RANDOM WEIGHTS" in captured.out
    report = json.loads((out / "report.json").read_text())
    assert report["weights"] == "random (uncalibrated)" and "RANDOM WEIGHTS" in report["warning"]
    ps = report["sections"]["puzzlesim"]
    assert len(ps["views"]) == 4
    for name, view in ps["views"].items():
        for key in ("map", "overlay", "panel", "map_raw"):
            assert view[key].startswith("puzzlesim/") and (out / view[key]).is_file()
        assert (out / "scene" / "novel" / f"{name}.png").is_file()
        assert 0.0 <= view["score"] <= 1.0 + 1e-6
    # every file path in report.json is relative to the report folder
    paths = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str) and x.endswith((".png", ".npy", ".json")):
            paths.append(x)

    walk(report["sections"])
    assert len(paths) >= 4 * 4 + 1
    assert all(not Path(p).is_absolute() and (out / p).is_file() for p in paths), paths
    # even with random weights, planted artifacts rank lower than clean pixels more often than chance
    assert ps["mean_artifact_auc"] > 0.6


def test_demo_offline_fails_with_hub_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    assert main(["demo", "--out", str(tmp_path / "demo"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "squeezenet1_1-b8a52dc0.pth" in err and "--random-weights" in err


def test_demo_uses_public_room_functions_not_room_clis():
    import ast

    import scenemetrics.demo as demo

    tree = ast.parse(Path(demo.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert "scenemetrics.osim.demo" in imported and "scenemetrics.puzzlesim" in imported  # the walk sees the imports
    assert not {m for m in imported if m.endswith(".cli") or m == "importlib"}, imported


def test_save_map_pngs_is_one_public_function():
    import scenemetrics.puzzlesim as ps
    import scenemetrics.puzzlesim.cli as ps_cli
    from scenemetrics.puzzlesim.pictures import save_map_pngs

    assert ps.save_map_pngs is save_map_pngs and not hasattr(ps_cli, "save_map_pngs")  # one import path
