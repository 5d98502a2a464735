"""Odd but honest inputs to ``scenemetrics eval``: each was a silent wrong answer or an unhelpful error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from PIL import Image

from scenemetrics.cli import main

from .conftest import METHODS, SCENES, read_json


def _eval(root: Path, out: Path, *extra: str, metrics: str = "psnr") -> int:
    return main(["eval", "--root", str(root), "--out", str(out), "--metrics", metrics, "--quiet", "--device", "cpu",
                 *extra])  # fmt: skip


@pytest.mark.parametrize("where", ["method", "scene", "root"])
def test_out_that_is_a_method_or_scene_folder_is_refused(copy_tree, capsys, where):
    """`--out <root>/<method>` used to drop that method from the leaderboard, with exit code 0."""
    root = copy_tree()
    out = {"method": root / METHODS[0], "scene": root / METHODS[0] / SCENES[0], "root": root}[where]
    assert _eval(root, out) == 1
    err = capsys.readouterr().err
    assert f"the output folder {out}" in err and "_eval" in err
    assert not (out / "results.jsonl").exists()
    assert _eval(root, root / "_eval") == 0  # the suggested folder works and keeps every method
    doc = read_json(root / "_eval" / "results.json")
    assert sorted({s["method"] for s in doc["scenes"]}) == sorted(METHODS)


def test_out_inside_a_scene_folder_still_evaluates_the_scene(copy_tree):
    root = copy_tree()
    out = root / METHODS[0] / SCENES[0] / "eval-out"
    assert _eval(root, out) == 0
    doc = read_json(out / "results.json")
    assert len(doc["scenes"]) == len(METHODS) * len(SCENES)


def test_the_docs_puzzlesim_layers_option(tree, tmp_path):
    """`--metric-option puzzlesim.layers=[2,3]` (the docs' own example) failed in every unit: the paper's three
    layer weights stayed; other layers get equal weights, as `scenemetrics puzzlesim --layers` gives them."""
    out = tmp_path / "out"
    assert _eval(tree, out, "--random-weights", "--metric-option", "puzzlesim.layers=[2,3]", metrics="puzzlesim") == 0
    doc = read_json(out / "results.json")
    assert doc["metrics"]["puzzlesim"]["options"]["layers"] == [2, 3]
    assert not doc["problems"]
    # the value is PuzzleSim with layers (2, 3) and weights (1/2, 1/2) on the unit's images
    from scenemetrics.image import read_image
    from scenemetrics.puzzlesim import puzzle_similarity_map, random_checkpoint

    weights = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    scene = tree / METHODS[0] / SCENES[0]
    refs = [read_image(p) for p in sorted((scene / "train").iterdir())]
    maps = [puzzle_similarity_map(read_image(p), refs, layers=(2, 3), layer_weights=(0.5, 0.5), weights_path=weights)
            for p in sorted((scene / "renders").iterdir())]  # fmt: skip
    expected = float(torch.cat(maps).double().mean())
    row = next(s for s in doc["scenes"] if (s["method"], s["scene"]) == (METHODS[0], SCENES[0]))
    assert row["values"]["puzzlesim"] == pytest.approx(expected, abs=1e-5)


def test_lpips_reads_legacy_format_checkpoints(tmp_path):
    """torchvision's older checkpoints use torch's legacy (non-zip) format, which torch.load cannot mmap: read whole."""
    from scenemetrics.fullref import lpips
    from scenemetrics.puzzlesim import random_checkpoint
    from scenemetrics.registry import MetricConfig, get_metric

    zipped = random_checkpoint("alexnet", tmp_path / "zip.pth", include_classifier=False)
    state = torch.load(zipped, weights_only=True)
    legacy = tmp_path / "legacy" / "alexnet-owt-7be5be79.pth"
    legacy.parent.mkdir()
    torch.save(state, legacy, _use_new_zipfile_serialization=False)
    assert not __import__("zipfile").is_zipfile(legacy)
    (tmp_path / "work").mkdir()
    metric = get_metric("lpips").build(MetricConfig("lpips", {"weights": legacy}, "cpu", work_dir=tmp_path / "work"))
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(1, 3, 40, 40, generator=g), torch.rand(1, 3, 40, 40, generator=g)
    metric.update(x, y)
    assert float(metric.compute()) == float(lpips(x, y, weights_path=zipped)[0]) > 0  # the same weights as the zip


def _one_pixel_tree(root: Path) -> Path:
    for sub in ("renders", "gt", "train"):
        (root / "m" / "s" / sub).mkdir(parents=True)
        Image.new("RGB", (1, 1), (100, 50, 20)).save(root / "m" / "s" / sub / "a.png")
    return root


@pytest.mark.parametrize(("metric", "minimum"), [("ssim", 6), ("lpips", 31)])
def test_too_small_images_name_the_minimum_size(tmp_path, metric, minimum):
    """1x1 images reached torch's padding error inside SSIM / LPIPS."""
    root = _one_pixel_tree(tmp_path / "root")
    out = tmp_path / "out"
    assert _eval(root, out, "--random-weights", metrics=metric) == 1
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    error = record["metrics"][metric]["error"]
    assert error.startswith("ValueError") and f"at least {minimum}x{minimum} pixels" in error and "1x1" in error
    big = tmp_path / "big"
    for sub in ("renders", "gt", "train"):
        (big / "m" / "s" / sub).mkdir(parents=True)
        Image.new("RGB", (minimum, minimum), (100, 50, 20)).save(big / "m" / "s" / sub / "a.png")
    assert _eval(big, tmp_path / "out2", "--random-weights", metrics=metric) == 0  # the minimum itself works


def test_osim_thresholds_are_checked_when_parsed(tree, tmp_path, capsys):
    assert _eval(tree, tmp_path / "out", "--osim-conf", "5", metrics="osim") == 2
    assert "--osim-conf: `osim.conf` must be a finite number in [0, 1]; received 5.0" in capsys.readouterr().err
    assert _eval(tree, tmp_path / "out", "--osim-nms", "nan", metrics="osim") == 2
