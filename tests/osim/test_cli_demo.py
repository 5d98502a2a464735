"""`scenemetrics osim` (in-process and, slow, 2 processes through Lightning Fabric) and the demo hook."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from scenemetrics.cli import main
from scenemetrics.image import read_image
from scenemetrics.osim import detector as detector_module
from scenemetrics.osim.demo import run_demo
from scenemetrics.osim.detector import clear_detector_cache
from scenemetrics.osim.metric import OSIM
from scenemetrics.viz import save_png

from .conftest import REPO, images
from .test_functional import degrade


@pytest.fixture()
def folders(tmp_path: Path) -> tuple[Path, Path]:
    refs, renders = tmp_path / "refs", tmp_path / "renders"
    x = images(3, 96, 128, seed=51)
    y = degrade(x)
    for i, name in enumerate(("a", "b", "sub/c")):
        save_png(x[i], refs / f"{name}.png")
        save_png(y[i], renders / f"{name}.PNG" if name == "a" else renders / f"{name}.png")
    return refs, renders


def test_cli_writes_json_and_overlays(tmp_path, folders, nano_ckpt, capsys) -> None:
    refs, renders = folders
    out = tmp_path / "out"
    code = main(["osim", "--refs", str(refs), "--renders", str(renders), "--out", str(out), "--detector", "yolox_nano",
                 "--weights", str(nano_ckpt), "--device", "cpu", "--quiet"])  # fmt: skip
    assert code == 0
    report = json.loads((out / "osim.json").read_text())
    # the same views through the metric, in-process
    metric = OSIM(detector="yolox_nano", weights_path=nano_ckpt)
    for name in ("a", "b", "sub/c"):
        render = renders / (f"{name}.PNG" if name == "a" else f"{name}.png")
        metric.update(read_image(render)[None], read_image(refs / f"{name}.png")[None])
    assert report["osim"] == pytest.approx(float(metric.compute()), abs=1e-6)
    assert report["num_views"] == 3 and report["detector"] == "yolox_nano" and report["pair_by"] == "name"
    assert [v["render"] for v in report["views"]] == ["a.PNG", "b.png", "sub/c.png"]
    assert report["num_objects"] == len(report["objects"]) == int(metric.count.sum())
    assert {row["name"] for row in report["classes"]} == set(metric.class_scores())
    obj = report["objects"][0]
    assert set(obj) >= {"render", "class", "class_id", "box", "r", "s", "det_score", "below_scene"}
    assert len(obj["box"]) == 4
    for rel in ("a.png", "b.png", "sub/c.png"):
        overlay = read_image(out / "overlays" / rel)
        # the labelled picture: the 96x128 view enlarged 4x (>= 360 px high) with a title, legend and notes around it
        assert overlay.shape[1] > 4 * 96 and overlay.shape[2] >= 4 * 128
    clear_detector_cache()


def test_cli_pairing_and_errors(tmp_path, folders, nano_ckpt, capsys, monkeypatch) -> None:
    refs, renders = folders
    base = ["osim", "--refs", str(refs), "--renders", str(renders), "--detector", "yolox_nano",
            "--weights", str(nano_ckpt), "--quiet", "--device", "cpu"]  # fmt: skip
    (renders / "extra.png").write_bytes((renders / "b.png").read_bytes())
    assert main([*base, "--out", str(tmp_path / "o1")]) == 1
    assert "only in --renders: ['extra']" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "o2"), "--pair-by", "order"]) == 1  # 3 refs vs 4 renders
    (renders / "extra.png").unlink()
    assert main([*base, "--out", str(tmp_path / "o3"), "--pair-by", "order"]) == 0
    save_png(images(1, 50, 60)[0], renders / "b.png")
    assert main([*base, "--out", str(tmp_path / "o4")]) == 1
    assert "same size" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "o5"), "--detector", "yolox_q"]) == 1
    assert main([*base, "--out", str(tmp_path / "o6"), "--layer", "dark9"]) == 2
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    code = main(["osim", "--refs", str(refs), "--renders", str(renders), "--out", str(tmp_path / "o7"), "--quiet"])
    assert code == 1 and "yolox_x.pth" in capsys.readouterr().err
    clear_detector_cache()


@pytest.mark.slow
def test_cli_two_processes_with_fabric(tmp_path, folders, nano_ckpt) -> None:
    pytest.importorskip("lightning")
    refs, renders = folders
    common = ["--refs", str(refs), "--renders", str(renders), "--detector", "yolox_nano", "--weights", str(nano_ckpt),
              "--device", "cpu", "--quiet"]  # fmt: skip
    # both runs as subprocesses with one thread each, so the convolutions round identically in every process
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"}
    base = [sys.executable, "-m", "scenemetrics", "osim", *common]
    for out, extra in (("one", []), ("two", ["--devices", "2", "--strategy", "ddp"])):
        proc = subprocess.run([*base, "--out", str(tmp_path / out), *extra], env=env, capture_output=True, text=True,
                              timeout=240)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
    one = json.loads((tmp_path / "one" / "osim.json").read_text())
    two = json.loads((tmp_path / "two" / "osim.json").read_text())
    assert two["osim"] == pytest.approx(one["osim"], abs=1e-6)
    assert [(c["name"], c["count"]) for c in two["classes"]] == [(c["name"], c["count"]) for c in one["classes"]]
    assert [c["o_l"] for c in two["classes"]] == pytest.approx([c["o_l"] for c in one["classes"]], abs=1e-9)
    assert [o["r"] for o in two["objects"]] == pytest.approx([o["r"] for o in one["objects"]])
    assert sorted(p.name for p in (tmp_path / "two" / "overlays").rglob("*.png")) == ["a.png", "b.png", "c.png"]
    clear_detector_cache()


def _scene(n: int = 2) -> SimpleNamespace:
    targets = images(n, 96, 128, seed=61)
    views = degrade(targets)
    return SimpleNamespace(
        novel_views=list(views), novel_targets=list(targets), names=[f"view_{i:03d}.png" for i in range(n)]
    )


def test_demo_with_random_weights(tmp_path) -> None:
    summary = run_demo(_scene(), tmp_path / "demo", random_weights=True, weights_path=None, device="cpu", quiet=True)
    json.dumps(summary, allow_nan=True)  # JSON-able
    assert summary["weights"] == "random (uncalibrated)" and summary["detector"] == "yolox_nano"
    assert "uncalibrated" in summary["note"]
    assert len(summary["views"]) == 2 and summary["num_views"] == 2
    assert (tmp_path / "demo" / "osim.json").is_file()
    assert json.loads((tmp_path / "demo" / "osim.json").read_text())["osim"] == pytest.approx(
        summary["osim"], nan_ok=True
    )
    for v in summary["views"]:  # paths relative to the report folder (here the demo folder itself)
        assert not Path(v["overlay"]).is_absolute() and Path(v["overlay"]).name.startswith("view_")
        assert (tmp_path / "demo" / v["overlay"]).is_file()
    assert summary["json"] == "osim.json" and summary["overlays"] == "osim_overlays"
    nested = run_demo(_scene(1), tmp_path / "r" / "osim", random_weights=True, quiet=True, report_dir=tmp_path / "r")
    assert nested["views"][0]["overlay"] == "osim/osim_overlays/view_000.png" and nested["json"] == "osim/osim.json"
    assert summary["num_objects"] > 0 and 0 <= summary["osim"] < 1
    clear_detector_cache()


def test_demo_with_given_weights_and_no_detection(tmp_path, nano_ckpt, fixed_detector, monkeypatch) -> None:
    summary = run_demo(_scene(1), tmp_path / "d", random_weights=False, weights_path=nano_ckpt, device="cpu",
                       quiet=True, detector="yolox_nano")  # fmt: skip
    assert summary["weights"] == str(nano_ckpt) and summary["conf_threshold"] == 0.35 and "note" not in summary
    blind = fixed_detector([[]])  # a detector that finds nothing
    monkeypatch.setattr(detector_module, "load_detector", lambda *args, **kwargs: blind)
    with pytest.warns(UserWarning, match="no object"):
        summary = run_demo(_scene(1), tmp_path / "f", random_weights=False, weights_path=nano_ckpt, device="cpu",
                           quiet=False, detector="yolox_nano")  # fmt: skip
    assert math.isnan(summary["osim"]) and "nan_reason" in summary and summary["num_objects"] == 0
    assert (tmp_path / "f" / summary["views"][0]["overlay"]).is_file()
    with pytest.raises(ValueError, match="same length"):
        run_demo(SimpleNamespace(novel_views=[], novel_targets=[torch.zeros(3, 8, 8)], names=[]), tmp_path / "e",
                 random_weights=True, weights_path=None, device="cpu", quiet=True)  # fmt: skip
    clear_detector_cache()
