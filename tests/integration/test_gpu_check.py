"""``benchmarks/gpu_check.py --tiny`` runs on the CPU (so the GPU check cannot rot) and writes the promised table:
the same rows and columns as on a GPU, the CUDA-only rows skipped with a reason that names CUDA."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # about 40 s on an idle 2-core machine (an `eval` subprocess, OSIM, PRISM, PuzzleSim)

ROOT = Path(__file__).resolve().parents[2]

COLUMNS = ["check", "variant", "device", "status", "max_abs_diff", "time_s", "baseline", "baseline_time_s", "ratio",
           "note"]  # fmt: skip
ROWS = {  # check -> variants, in order
    "PuzzleSim search": ["{search} (auto) vs exhaustive fp32", "ours (auto) vs puzzle-sim"],
    "gsplat example training": [
        "first rasterization",
        "without monitor",
        "monitor every 5, synchronous",
        "monitor every 5, background",
    ],
    "autocast": [
        f"{name}: {dtype} vs fp32"
        for name in ("OSIM score", "PRISM distance", "SSIM map", "LPIPS map (alex)", "abs error map")
        for dtype in ("float16", "bfloat16")
    ],
    "scenemetrics eval": [
        "cpu run (wall, incl. start-up)",
        "cuda run (wall, incl. start-up)",
        *(f"{m}: cuda vs cpu" for m in ("psnr", "ssim", "lpips", "puzzlesim")),
    ],
    "ns-train splatfacto-scenemetrics": ["200 iterations, evaluation every 100"],
}
CUDA_ONLY = {
    ("gsplat example training", "first rasterization"),
    ("scenemetrics eval", "cuda run (wall, incl. start-up)"),
    *(("scenemetrics eval", f"{m}: cuda vs cpu") for m in ("psnr", "ssim", "lpips", "puzzlesim")),
    ("ns-train splatfacto-scenemetrics", "200 iterations, evaluation every 100"),
}


def _load(path: Path):
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def test_tiny_gpu_check_writes_one_table_with_every_row(tmp_path, capsys) -> None:
    gpu_check = _load(ROOT / "benchmarks" / "gpu_check.py")
    env, hub = dict(os.environ), torch.hub.get_dir()
    report = gpu_check.main(["--tiny", "--device", "cpu", "--out", str(tmp_path / "out")])
    assert dict(os.environ) == env and torch.hub.get_dir() == hub  # its private caches are undone
    data = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert data == report and data["columns"] == COLUMNS == list(gpu_check.COLUMNS)
    rows = data["rows"]
    assert all(list(row) == COLUMNS for row in rows)

    search = rows[0]["variant"].split(" ")[0]  # the CPU's automatic search (the Triton kernel needs CUDA)
    expected = [(check, v.format(search=search)) for check, variants in ROWS.items() for v in variants]
    assert [(r["check"], r["variant"]) for r in rows] == expected
    assert {r["device"] for r in rows} == {"cpu"}
    assert not [r for r in rows if r["status"] == "failed"], [r for r in rows if r["status"] == "failed"]
    for row in rows:
        key = (row["check"], row["variant"])
        if key in CUDA_ONLY:
            assert row["status"] == "skipped" and "CUDA" in row["note"], row
        elif row["status"] == "skipped":  # only an absent extra may skip the rest, and it says which
            assert "extra" in row["note"], row
        else:
            assert row["time_s"] > 0 and math.isfinite(row["time_s"]), row
            if row["baseline_time_s"] is not None:
                assert row["ratio"] == pytest.approx(row["time_s"] / row["baseline_time_s"])
            if row["check"] in ("PuzzleSim search", "autocast"):
                assert row["max_abs_diff"] is not None and math.isfinite(row["max_abs_diff"]), row
    by_key = {(r["check"], r["variant"]): r for r in rows}
    # PuzzleSim's searches are exact: the automatic one equals the exhaustive search, and the authors' code
    assert by_key[("PuzzleSim search", f"{search} (auto) vs exhaustive fp32")]["max_abs_diff"] <= 1e-5
    if by_key[("PuzzleSim search", "ours (auto) vs puzzle-sim")]["status"] == "ok":
        assert by_key[("PuzzleSim search", "ours (auto) vs puzzle-sim")]["max_abs_diff"] <= 1e-4
    for mode in ("synchronous", "background"):  # the background row runs since the monitor has background=True
        row = by_key[("gsplat example training", f"monitor every 5, {mode}")]
        assert row["status"] == "ok" and row["baseline"] == "without monitor", row
        assert "2 evaluations" in row["note"], row
    assert by_key[("scenemetrics eval", "cpu run (wall, incl. start-up)")]["status"] == "ok"

    md = (tmp_path / "out" / "gpu_check.md").read_text().splitlines()
    header = md.index("| " + " | ".join(COLUMNS) + " |")
    table = md[header + 2 :]
    assert md[header + 1] == "|" + "---|" * len(COLUMNS)
    assert [line.split(" | ")[:2] for line in table] == [[f"| {c}", v] for c, v in expected]
    assert "| " + " | ".join(COLUMNS) + " |" in capsys.readouterr().out
