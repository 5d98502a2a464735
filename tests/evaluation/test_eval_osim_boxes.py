"""``scenemetrics eval --osim-boxes FILE``: the given regions reach OSIM and its patch baselines per view and per
scene, and give what the functional API gives with the same boxes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from scenemetrics.cli import main

from .conftest import METHODS, SCENES, VIEWS, read_csv, read_png

osim = pytest.importorskip("scenemetrics.osim")

# boxes of the 48x64 views: every scene takes 'views'; scene beta has its own section for v1
BOXES = {
    "views": {"v0": [{"box": [4, 4, 30, 26], "class": "cat"}, [20, 10, 60, 44]], "v1.png": [[0, 0, 16, 16]]},
    "scenes": {"beta": {"v1": [{"box": [30, 20, 64, 48], "class": 2}]}},
}


def _images(root: Path, method: str, scene: str, sub: str) -> torch.Tensor:
    return torch.stack(
        [torch.from_numpy(read_png(root / method / scene / sub / f"{v}.png")).permute(2, 0, 1).float() for v in VIEWS]
    )


def _boxes(scene: str) -> list:
    views = {k.removesuffix(".png"): _entry(v) for k, v in BOXES["views"].items()}
    scenes = {s: {k: _entry(v) for k, v in per.items()} for s, per in BOXES["scenes"].items()}
    f = osim.BoxesFile("test", views, scenes)
    return [f.for_view(v, scene) for v in VIEWS]


def _entry(items: list) -> dict:
    boxes = [i["box"] if isinstance(i, dict) else i for i in items]
    return {"boxes": boxes, "classes": [i.get("class") if isinstance(i, dict) else None for i in items]}


@pytest.mark.slow
def test_eval_osim_and_patch_psnr_with_given_boxes(tree, tmp_path):
    (tmp_path / "boxes.json").write_text(json.dumps(BOXES))
    out = tmp_path / "out"
    args = ["eval", "--root", str(tree), "--out", str(out), "--metrics", "osim,osim_patch_psnr", "--random-weights",
            "--quiet", "--device", "cpu", "--osim-boxes", str(tmp_path / "boxes.json"), "--osim-conf", "1",
            "--osim-saliency", "uniform"]  # fmt: skip
    assert main(args) == 0
    weights = osim.random_checkpoint("yolox_nano", tmp_path / "yolox_nano.pth")  # the runner's random detector
    model = osim.load_detector("yolox_nano", weights)
    rows = {(r["method"], r["scene"]): r for r in read_csv(out / "results.csv")}
    for method in METHODS:
        for scene in SCENES:
            preds, target = _images(tree, method, scene, "renders"), _images(tree, method, scene, "gt")
            boxes = _boxes(scene)
            expected = osim.osim(preds, target, model=model, conf_threshold=1.0, saliency="uniform", boxes=boxes)
            assert expected.r.numel() == 3 and bool(expected.given.all())  # no detection at conf 1: only the boxes
            assert float(rows[(method, scene)]["osim"]) == pytest.approx(float(expected.score), abs=1e-5)
            # PSNR per box (floor / inclusive pixel window), pooled per class, classes averaged (uniform saliency)
            pools: dict[object, list[float]] = {}
            for i, entry in enumerate(boxes):
                for (x1, y1, x2, y2), cls in zip(entry["boxes"], entry["classes"], strict=True):
                    ys = range(math.floor(y1), min(math.floor(y2), 47) + 1)
                    xs = range(math.floor(x1), min(math.floor(x2), 63) + 1)
                    d = [float(preds[i, c, y, x] - target[i, c, y, x]) ** 2 for c in range(3) for y in ys for x in xs]
                    mse = sum(d) / len(d)
                    pools.setdefault(cls, []).append(10 * math.log10(1 / mse) if mse > 0 else math.inf)
            means = [sum(v) / len(v) for v in pools.values()]
            psnr = sum(means) / len(means)
            got = float(rows[(method, scene)]["osim_patch_psnr"])
            assert got == pytest.approx(psnr, rel=1e-4) if math.isfinite(psnr) else got == math.inf
    assert float(rows[("m_clean", "alpha")]["osim"]) == pytest.approx(1.0, abs=1e-5)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    names = {o["class_name"] for r in records for o in r["objects"].get("osim", [])}
    assert names == {"cat", "car", "unlabelled"}  # beta's v1 box has class 2 (car); boxes without a class: unlabelled


def test_a_bad_boxes_file_is_the_metrics_error(tree, tmp_path):
    (tmp_path / "boxes.json").write_text('{"views": {"v0": [[0, 0, 1]]}}')
    out = tmp_path / "out"
    args = ["eval", "--root", str(tree), "--out", str(out), "--metrics", "osim,psnr", "--random-weights", "--quiet",
            "--device", "cpu", "--osim-boxes", str(tmp_path / "boxes.json")]  # fmt: skip
    main(args)
    rows = read_csv(out / "results.csv")
    assert rows and all(r["psnr"] for r in rows)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    errors = {r["metrics"]["osim"]["error"] for r in records}
    assert len(errors) == 1 and "four numbers" in errors.pop()
