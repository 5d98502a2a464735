"""The callbacks examples and the overhead benchmark run (scaled down) and produce what they promise."""

from __future__ import annotations

import glob
import importlib.util
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("lightning.pytorch")
pytest.importorskip("tensorboard")

ROOT = Path(__file__).resolve().parents[2]


def _load(relative: str):
    """Import a script from the repository by path (examples and benchmarks are not packages), as Python runs it:
    its folder first on ``sys.path`` (sibling scripts import), the module registered (dataclasses look it up)."""
    path = ROOT / relative
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


SMALL = ["--gaussians", "24", "--size", "24", "--train-views", "3", "--eval-views", "2"]


def test_lightning_tiny_splat_example(tmp_path) -> None:
    example = _load("examples/callbacks_lightning_tiny_splat.py")
    args = ["--steps", "4", "--every-n-steps", "2", *SMALL, "--random-weights", "--out", str(tmp_path)]
    callback = example.main(args)
    assert callback.num_evaluations == 2
    assert len(glob.glob(str(tmp_path / "tiny_splat" / "version_0" / "events.out.tfevents.*"))) == 1


def test_gsplat_example_cpu_backend(tmp_path) -> None:
    example = _load("examples/callbacks_lightning_gsplat.py")
    args = [
        "--backend",
        "tiny",
        "--steps",
        "2",
        "--every-n-steps",
        "2",
        *SMALL,
        "--random-weights",
        "--out",
        str(tmp_path),
    ]
    assert example.main(args).num_evaluations == 1


def test_monitor_gsplat_example_tiny_backend(tmp_path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    example = _load("examples/monitor_gsplat.py")
    args = ["--backend", "tiny", "--steps", "4", "--every-n-steps", "2", "--gaussians", "24", "--size", "24",
            "--train-views", "3", "--eval-views", "2", "--random-weights", "--out", str(tmp_path)]  # fmt: skip
    assert example.main(args).num_evaluations == 2
    (events,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    acc = EventAccumulator(events, size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("scenemetrics/psnr")] == [2, 4]
    assert [e.step for e in acc.Images("scenemetrics/puzzlesim/map/0")] == [2, 4]


def test_overhead_benchmark_smoke(capsys) -> None:
    bench = _load("benchmarks/callback_overhead.py")
    out = bench.main(["--steps", "2", "--every-n-steps", "1", "--repeats", "1", "--threads", "1", *SMALL])
    assert out["workload"] == "R-CPU"
    for key in ("train_step_s", "eval_s", "reference_embed_s"):
        assert math.isfinite(out[key]) and out[key] > 0, key
    for n in ("500", "50"):  # amortised cost = one evaluation / (n training steps)
        assert out["overhead_at"][n] == pytest.approx(out["eval_s"] / (int(n) * out["train_step_s"]), rel=1e-2)
    assert capsys.readouterr().out.strip().startswith("{")


@pytest.mark.slow  # builds three metrics and writes TensorBoard images at every variant (about 30 s on 2 busy cores)
def test_panel_overhead_benchmark_smoke(capsys) -> None:
    bench = _load("benchmarks/panel_overhead.py")
    out = bench.main(["--sizes", "32", "--repeats", "1"])
    entry = out["sizes"]["32"]
    assert math.isfinite(entry["baseline_s"]) and entry["baseline_s"] > 0
    for name in ("abs", "ssim", "lpips"):
        assert entry[name]["overhead_s"] == pytest.approx(entry[name]["seconds"] - entry["baseline_s"])
        assert entry[name]["ratio"] == pytest.approx(entry[name]["seconds"] / entry["baseline_s"])
    assert capsys.readouterr().out.strip().startswith("{")


@pytest.mark.nerfstudio
def test_nerfstudio_scripted_example_config(tmp_path) -> None:
    example = _load("examples/callbacks_nerfstudio_scripted.py")
    args = example.argparse.Namespace(
        method="nerfacto", metrics=["puzzlesim"], every_n_steps=10, eval_views=1, puzzlesim_weights=None,
        data=tmp_path, blender=True, iterations=30, out=tmp_path / "out", cpu=True,
    )  # fmt: skip
    cfg = example.build_config(args)
    assert type(cfg.pipeline).__name__ == "SceneMetricsPipelineConfig"
    assert cfg.pipeline.scenemetrics.every_n_steps == 10 and cfg.machine.device_type == "cpu"
    assert type(cfg.pipeline.datamanager.dataparser).__name__ == "BlenderDataParserConfig"
