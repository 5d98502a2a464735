"""`scenemetrics eval` outputs: file modes follow the umask, --out inside --root, one line per distinct error, JSON."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from scenemetrics.cli import main
from scenemetrics.evaluation.layout import discover_units

from .conftest import METHODS, PLUGIN, SCENES


def _eval(root: Path, out: Path, *extra: str, metrics: str = "psnr,standin") -> int:
    args = ["eval", "--root", str(root), "--out", str(out), "--metrics", metrics, "--plugin", str(PLUGIN)]
    return main([*args, "--quiet", "--device", "cpu", *extra])


def _strict(text: str) -> dict:
    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_every_output_file_follows_the_umask(tree, tmp_path):
    out = tmp_path / "out"
    old = os.umask(0o027)
    try:
        assert _eval(tree, out, "--random-weights", metrics="psnr,puzzlesim,standin") == 0
    finally:
        os.umask(old)
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".eval.lock"]
    names = {p.relative_to(out).as_posix() for p in files}
    assert {"results.csv", "leaderboard.csv", "results.json", "results.jsonl", "report/index.html"} <= names
    assert any(n.startswith("states/") for n in names) and any(n.startswith("report/thumbs/") for n in names)
    modes = {p.relative_to(out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert modes == dict.fromkeys(modes, 0o640)  # 0666 & ~0027, what open() gives results.json


def test_out_inside_root_is_not_a_method(copy_tree):
    root = copy_tree()
    out = root / "results"
    assert _eval(root, out) == 0
    assert (out / "results.jsonl").is_file()
    before = (out / "results.jsonl").read_text()
    assert _eval(root, out) == 0  # the second run must neither scan results/ as a method nor warn about it
    assert (out / "results.jsonl").read_text() == before  # nothing new to do
    doc = _strict((out / "results.json").read_text())
    assert sorted({s["method"] for s in doc["scenes"]}) == sorted(METHODS)
    # another run's output folder (found by its commit log) is not a method either
    units = discover_units(root)
    assert sorted({u.method for u in units}) == sorted(METHODS)
    assert len(units) == len(METHODS) * len(SCENES)


def test_an_error_of_every_unit_is_printed_once_with_the_cli_flags(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    monkeypatch.setenv("SCENEMETRICS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    out = tmp_path / "out"
    assert _eval(tree, out, metrics="psnr,puzzlesim") == 1
    err = capsys.readouterr().err.strip().splitlines()
    failed = [line for line in err if "puzzlesim failed" in line]
    n = len(METHODS) * len(SCENES)
    assert len(failed) == 1, err
    assert f"puzzlesim failed in {n} units" in failed[0] and "and 3 more" in failed[0]
    assert "--puzzlesim-weights PATH" in failed[0] and "--random-weights" in failed[0]
    assert "weights_path" not in failed[0]
    assert err[-1].startswith(f"scenemetrics: error: {n} (method, scene, metric) result(s) failed above")
    assert sum("WeightsNotFoundError" in line for line in err) == 1
    doc = _strict((out / "results.json").read_text())
    assert all(s["status"]["puzzlesim"] == "error" and s["status"]["psnr"] == "ok" for s in doc["scenes"])


def test_infinite_psnr_is_null_with_its_reason_in_json(tree, tmp_path, capsys):
    out = tmp_path / "out"
    assert _eval(tree, out, "--methods", "m_clean,m_art", metrics="psnr") == 0
    printed = capsys.readouterr().out
    clean_line = next(line for line in printed.splitlines() if line.startswith("m_clean"))
    assert clean_line.split()[-1] == "inf"  # the terminal table shows it
    text = (out / "results.json").read_text()
    doc = _strict(text)
    row = next(r for r in doc["leaderboard"] if r["method"] == "m_clean")
    k = doc["leaderboard"].index(row)
    assert row["mean"]["psnr"] is None and doc["non_finite"][f"/leaderboard/{k}/mean/psnr"] == "Infinity"
    for line in (out / "results.jsonl").read_text().splitlines():
        _strict(line)  # the commit log is standard JSON too
