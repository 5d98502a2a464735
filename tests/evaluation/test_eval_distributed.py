"""`python -m scenemetrics eval` as a real command: 2 CPU processes (gloo) vs 1, and a run killed midway."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenemetrics.cli import main
from scenemetrics.evaluation.records import RESULTS_FILE

from .conftest import METHODS, PLUGIN, PYTHON, SCENES, VIEWS, read_csv, read_jsonl, subprocess_env

pytestmark = pytest.mark.slow

METRICS = "psnr,ssim,puzzlesim,standin,standin_scene"


def _args(root: Path, out: Path, log: Path, *extra: str) -> list[str]:
    return [
        "eval", "--root", str(root), "--out", str(out), "--metrics", METRICS, "--plugin", str(PLUGIN),
        "--random-weights", "--quiet", "--device", "cpu", "--metric-option", f"standin.log={log}", *extra,
    ]  # fmt: skip


def _same_table(a: list[dict[str, str]], b: list[dict[str, str]]) -> None:
    assert a and list(a[0]) == list(b[0])
    assert [(r["method"], r.get("scene")) for r in a] == [(r["method"], r.get("scene")) for r in b]
    for ra, rb in zip(a, b, strict=True):
        for key in ra:
            if key in ("method", "scene"):
                continue
            va, vb = float(ra[key]), float(rb[key])
            assert va == vb or (math.isfinite(va) and va == pytest.approx(vb, rel=1e-5, abs=1e-7)), (key, ra, rb)


@pytest.fixture(scope="module")
def one_process(tree, tmp_path_factory) -> Path:
    """The one-process run both tests compare against, computed once per worker (its own private caches, offline)."""
    base = tmp_path_factory.mktemp("one_process")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in subprocess_env(base).items():
            if name.startswith(("SCENEMETRICS_", "HF_", "TORCH_HOME")):
                mp.setenv(name, value)
        assert main(_args(tree, base / "out", base / "one.log")) == 0
    return base / "out"


def test_two_processes_give_the_table_of_one(tree, tmp_path, one_process):
    out2, log2 = tmp_path / "ddp", tmp_path / "ddp.log"
    cmd = [PYTHON, "-m", "scenemetrics", *_args(tree, out2, log2, "--devices", "2", "--strategy", "ddp")]
    proc = subprocess.run(cmd, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out1 = one_process

    _same_table(read_csv(out2 / "results.csv"), read_csv(out1 / "results.csv"))
    _same_table(read_csv(out2 / "leaderboard.csv"), read_csv(out1 / "leaderboard.csv"))
    # deterministic sharding: the i-th unit (sorted by method, scene) ran on rank i % 2; rank 0 wrote every line
    records = read_jsonl(out2 / RESULTS_FILE)
    order = [f"{m}/{s}" for m in METHODS for s in SCENES]
    assert {f"{r['method']}/{r['scene']}": r["rank"] for r in records} == {u: i % 2 for i, u in enumerate(order)}
    pids = {}
    for line in log2.read_text().splitlines():
        unit, _, pid = line.split()
        pids.setdefault(unit, set()).add(pid)
    assert all(len(p) == 1 for p in pids.values()) and len({next(iter(p)) for p in pids.values()}) == 2
    assert sorted(pids) == sorted(order)


def test_a_unit_left_over_is_shared_by_both_processes(tree, tmp_path, one_process):
    """3 units on 2 processes: one round of whole units, then the third unit's views split between both processes
    (one view each) and merged on rank 0; the table is the one-process table."""
    out2, log2 = tmp_path / "ddp", tmp_path / "ddp.log"
    extra = ("--scenes", "alpha", "--devices", "2", "--strategy", "ddp")
    cmd = [PYTHON, "-m", "scenemetrics", *_args(tree, out2, log2, *extra)]
    proc = subprocess.run(cmd, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = [row for row in read_csv(one_process / "results.csv") if row["scene"] == "alpha"]
    _same_table(read_csv(out2 / "results.csv"), expected)
    records = {f"{r['method']}/{r['scene']}": (r["rank"], r["processes"]) for r in read_jsonl(out2 / RESULTS_FILE)}
    assert records == {"m_art/alpha": (0, 1), "m_clean/alpha": (1, 1), "m_noise/alpha": (0, 2)}
    logged: dict[str, list[tuple[str, str]]] = {}
    for line in log2.read_text().splitlines():
        unit, view, pid = line.split()
        logged.setdefault(unit, []).append((view, pid))
    assert all(sorted(v for v, _ in lines) == sorted(VIEWS) for lines in logged.values())  # every view once
    assert len({pid for _, pid in logged["m_noise/alpha"]}) == 2  # one view on each process
    assert len({pid for _, pid in logged["m_art/alpha"]}) == len({pid for _, pid in logged["m_clean/alpha"]}) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked processes: Linux only")
def test_cpu_processes_are_forked_from_python_with_warnings_and_errors(tree, tmp_path, one_process):
    """Without --strategy, several CPU processes are forked (ddp_fork): it works from a Python program (the command
    line is not re-run), the warnings raised in the processes reach the caller, and a failure is one clean line."""
    out2, log2 = tmp_path / "fork", tmp_path / "fork.log"
    args = [*_args(tree, out2, log2, "--scenes", "alpha", "--devices", "2"), "--metrics", METRICS + ",prism"]
    code = f"import os, sys; print('parent', os.getpid()); from scenemetrics.cli import main; sys.exit(main({args!r}))"
    proc = subprocess.run([PYTHON, "-c", code], env=subprocess_env(tmp_path), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    parent = proc.stdout.split("parent ", 1)[1].split()[0]
    expected = [row for row in read_csv(one_process / "results.csv") if row["scene"] == "alpha"]
    _same_table(read_csv(out2 / "results.csv"), expected)
    assert "metric 'prism' is unavailable" in proc.stderr  # warned in a forked process, shown by the caller
    pids = {line.split()[2] for line in log2.read_text().splitlines()}
    assert len(pids) == 2 and parent not in pids  # both ranks are forked processes
    bad = [*_args(tmp_path / "missing", tmp_path / "out3", log2, "--devices", "2")]
    code = f"import sys; from scenemetrics.cli import main; sys.exit(main({bad!r}))"
    proc = subprocess.run([PYTHON, "-c", code], env=subprocess_env(tmp_path), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("scenemetrics: error: `root`")
    assert "Traceback" not in proc.stderr and "ProcessRaisedException" not in proc.stderr


def test_killed_run_resumes_without_recomputing(tree, tmp_path, one_process):
    out, log1 = tmp_path / "out", tmp_path / "first.log"
    cmd = [PYTHON, "-m", "scenemetrics", *_args(tree, out, log1, "--metric-option", "standin.delay=0.5")]
    proc = subprocess.Popen(cmd, env=subprocess_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = out / RESULTS_FILE
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    committed = {f"{r['method']}/{r['scene']}" for r in read_jsonl(results)}
    assert 1 <= len(committed) < len(METHODS) * len(SCENES)
    assert not (out / "results.csv").exists()  # the table comes at the end

    log2 = tmp_path / "second.log"
    assert main(_args(tree, out, log2)) == 0
    rerun = [line.split()[0] for line in log2.read_text().splitlines()]
    assert not committed & set(rerun)  # finished units were not recomputed
    assert sorted(set(rerun) | committed) == sorted(f"{m}/{s}" for m in METHODS for s in SCENES)
    assert all(rerun.count(u) == len(VIEWS) for u in set(rerun))
    first = [line.split()[0] for line in log1.read_text().splitlines()]
    assert all(first.count(u) == len(VIEWS) for u in committed)
    reference = one_process
    _same_table(read_csv(out / "results.csv"), read_csv(reference / "results.csv"))
    _same_table(read_csv(out / "leaderboard.csv"), read_csv(reference / "leaderboard.csv"))
