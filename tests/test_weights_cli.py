"""``scenemetrics weights list|download|verify|path|convert``, with the network call replaced by a fake server."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from scenemetrics import hub
from scenemetrics.cli import main

REAL_DOWNLOAD = hub.fetch._download  # the root conftest replaces it with one that refuses to download


def body(url: str) -> bytes:
    return f"weights served from {url}\n".encode() * 50


@pytest.fixture
def server(monkeypatch) -> list[str]:
    """Every URL serves ``body(url)``; returns the list of requested URLs."""
    requested: list[str] = []

    def urlopen(url: str, start: int):
        requested.append(url)
        resp = io.BytesIO(body(url)[start:])
        resp.status = 206 if start else 200
        resp.headers = {"Content-Length": str(len(body(url)) - start)}
        return resp

    monkeypatch.setattr(hub.fetch, "_download", REAL_DOWNLOAD)
    monkeypatch.setattr(hub.fetch, "_urlopen", urlopen)
    return requested


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["weights", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_does_not_import_torch():
    """The weights commands import torch only when they run (the other rooms' parsers are not part of this check)."""
    code = (
        "import argparse, sys; import scenemetrics.weights_cli as w; p = argparse.ArgumentParser(prog='x'); "
        "w.register(p.add_subparsers()); p.print_help(); "
        "[sp.print_help() for a in p._subparsers._group_actions for sp in a.choices.values()]; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "download" in res.stdout and "convert" in res.stdout


def test_list_download_verify_path(capsys, server):
    code, out, _ = run(capsys, "list")
    assert code == 0
    bundled = set()
    for key, ck in hub.CHECKPOINTS.items():
        line = next(row for row in out.splitlines() if row.startswith(key + " "))
        assert ck.filename in line and ck.url in line and ck.room in line
        # torchvision's cache is empty here; the LPIPS linear layers ship with torchmetrics (found, hash checked)
        if any((extra() / ck.filename).is_file() for extra in ck.extra_dirs):
            bundled.add(key)
            assert re.search(r"\syes\s+yes\s", line), line  # cached, hash ok
        else:
            assert " no " in line, line
    assert bundled == {"fullref/lpips_alex", "fullref/lpips_vgg", "fullref/lpips_squeeze"}
    # osim files have no published hash: download records it; the others would fail their published hash here
    code, out, err = run(capsys, "download", "yolox_nano", "osim/yolox_s", "--quiet")
    assert code == 0, err
    nano = hub.cache_dir("osim") / "yolox_nano.pth"
    assert nano.read_bytes() == body(hub.CHECKPOINTS["osim/yolox_nano"].url)
    assert f"osim/yolox_nano: {nano}" in out
    assert hub.read_sidecar(nano) == hub.file_hash(nano)
    code, out, _ = run(capsys, "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)["checkpoints"]}
    assert rows["osim/yolox_nano"]["cached"] and rows["osim/yolox_nano"]["hash_ok"]
    assert rows["osim/yolox_nano"]["size"] == nano.stat().st_size
    assert rows["osim/yolox_nano"]["recorded_sha256"] == hub.file_hash(nano)
    assert rows["osim/yolox_nano"]["sidecar"] == str(hub.sidecar_path(nano))
    assert not rows["osim/yolox_x"]["cached"] and rows["osim/yolox_x"]["hash_ok"] is None
    code, out, _ = run(capsys, "list", "--family", "osim")
    assert "yolox_nano.pth.sha256" in out and "puzzlesim" not in out.split("\n", 1)[1]
    # path
    code, out, _ = run(capsys, "path", "yolox_nano.pth")
    assert code == 0 and out.strip() == str(nano)
    code, out, err = run(capsys, "path", "yolox_x")
    assert code == 1 and out.strip() == str(hub.cache_dir("osim") / "yolox_x.pth") and "not cached" in err
    # verify, then tamper
    code, out, _ = run(capsys, "verify")
    assert code == 0 and "ok" in out and "osim/yolox_nano" in out and "osim/yolox_s" in out
    nano.write_bytes(b"swapped")
    code, out, err = run(capsys, "verify")
    assert code == 1 and "FAILED" in out and hub.file_hash(nano) in out and "osim/yolox_nano" in err
    code, out, _ = run(capsys, "list")
    line = next(row for row in out.splitlines() if row.startswith("osim/yolox_nano "))
    assert " no " in line.split("yolox_nano.pth", 1)[1]  # cached yes, hash ok no
    # a second download of a cached, verified file does not reach the network unless --force
    before = len(server)
    assert run(capsys, "download", "yolox_s", "--quiet")[0] == 0 and len(server) == before
    assert run(capsys, "download", "yolox_s", "--quiet", "--force")[0] == 0 and len(server) == before + 1


def test_download_family_all_and_errors(capsys, server, monkeypatch):
    code, _out, err = run(capsys, "download", "--family", "osim", "--quiet")
    assert code == 0, err
    assert sorted(p.name for p in hub.cache_dir("osim").glob("*.pth")) == sorted(
        f"{v}.pth" for v in ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")
    )
    # --all: the fake bytes fail the published hashes of the torchvision and LaMa files: reported, exit 1
    code, _, err = run(capsys, "download", "--all", "--quiet")
    assert code == 1 and "failed" in err and "puzzlesim/squeezenet1_1" in err and "b8a52dc0" in err
    assert not (hub.cache_dir("puzzlesim") / "squeezenet1_1-b8a52dc0.pth").exists()
    assert run(capsys, "download")[0] == 1  # nothing named
    code, _, err = run(capsys, "download", "nope")
    assert code == 1 and "'nope' is not a known checkpoint" in err
    code, _, err = run(capsys, "download", "--family", "nowhere")
    assert code == 1 and "'nowhere' is not a metric family with checkpoints; families: " in err and "osim" in err
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    code, _, err = run(capsys, "download", "yolox_x")
    assert code == 1 and "SCENEMETRICS_OFFLINE" in err


class Legacy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(2, 3)


class Opaque:
    pass


def test_convert_requires_the_flag_and_keeps_the_layout(capsys, tmp_path):
    src = tmp_path / "train.pth"
    model = Legacy()
    torch.save(
        {
            "model": model,  # a whole pickled module
            "start_epoch": 7,
            "args": argparse.Namespace(lr=0.1, size=torch.Size([2, 3])),
            "stats": np.arange(4.0),
            "best": np.float64(0.5),
            "hook": Opaque(),
        },
        src,
    )
    dst = tmp_path / "train.safe.pth"
    code, _, err = run(capsys, "convert", str(src), str(dst))
    assert code == 2 and "--i-trust-this-file" in err and not dst.exists()
    code, out, err = run(capsys, "convert", str(src), str(dst), "--i-trust-this-file")
    assert code == 0, err
    assert "dropped: <root>['hook']" in out and "Opaque" in out
    safe = torch.load(dst, weights_only=True)
    assert sorted(safe) == ["args", "best", "model", "start_epoch", "stats"]
    assert torch.equal(safe["model"]["fc.weight"], model.fc.weight.detach())
    assert safe["args"] == {"lr": 0.1, "size": (2, 3)} and safe["best"] == 0.5 and safe["start_epoch"] == 7
    assert torch.equal(safe["stats"], torch.arange(4.0, dtype=torch.float64))
    assert hub.load_torch_checkpoint(dst)["start_epoch"] == 7
    code, _, err = run(capsys, "convert", str(src), str(dst), "--i-trust-this-file")
    assert code == 1 and "exists" in err  # never overwrites
    code, _, err = run(capsys, "convert", str(tmp_path / "missing.pth"), str(tmp_path / "x.pth"), "--i-trust-this-file")
    assert code == 1 and "missing.pth" in err


def test_weights_subcommand_is_required(capsys):
    assert main(["weights"]) == 2
    assert Path(hub.scenemetrics_home()).name == "sm"  # the tests' isolated cache
