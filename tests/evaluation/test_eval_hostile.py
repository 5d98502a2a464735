"""Hostile predictions: names that try to leave ``--out``, compression bombs, sparse members, odd member layouts."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.evaluation.predictions import (
    ARCHIVE_MAX_RATIO,
    extraction_limit,
    parse_size,
    read_predictions,
    safe_extract,
)
from scenemetrics.fileio import safe_name

from .conftest import read_json, read_jsonl

SIZE = (24, 32)


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _predictions_zip(path: Path, info: dict) -> Path:
    """A NerfBaselines predictions archive (two views, one training view) whose info.json says ``info``."""
    g = torch.Generator().manual_seed(0)
    folder = path.parent / (path.stem + "-src")
    for i in range(2):
        gt = torch.rand(3, *SIZE, generator=g)
        viz.save_png((gt + 0.1 * torch.rand(3, *SIZE, generator=g)).clamp(0, 1), folder / "color" / f"{i}.png")
        viz.save_png(gt, folder / "gt-color" / f"{i}.png")
    viz.save_png(torch.rand(3, *SIZE, generator=g), folder / "train" / "t0.png")
    (folder / "info.json").write_text(json.dumps(info))
    with zipfile.ZipFile(path, "w") as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(folder).as_posix())
    return path


def test_names_from_info_json_never_leave_out(tmp_path):
    """info.json names `method: ../../../../x`: every file stays inside --out; the report keeps the real names."""
    method, scene = "../../../../x", "../../y/../z"
    archive = _predictions_zip(tmp_path / "evil.zip", {"method": method, "scene": scene})
    out = tmp_path / "d1" / "d2" / "d3" / "d4" / "out"
    before = _files(tmp_path)
    train = str(tmp_path / "evil-src" / "train")
    argv = ["eval", "--predictions", str(archive), "--out", str(out), "--metrics", "psnr,puzzlesim",
            "--random-weights", "--quiet", "--device", "cpu", "--train-views", train]  # fmt: skip
    assert main(argv) == 0
    created = _files(tmp_path) - before
    outside = sorted(str(p) for p in created if not p.is_relative_to(out))
    assert outside == []
    # the unit's files are under <out>/states/<safe>/<safe>/ and <out>/report/thumbs/<safe>/<safe>/
    folder = f"{safe_name(method)}/{safe_name(scene)}"
    assert "/" not in safe_name(method) and ".." not in folder.split("/")
    assert any(p.is_relative_to(out / "states" / folder) for p in created)
    assert any(p.is_relative_to(out / "report" / "thumbs" / folder) for p in created)
    # the real names map to the on-disk folder in the commit log and in results.json
    (record,) = read_jsonl(out / "results.jsonl")
    assert (record["method"], record["scene"], record["folder"]) == (method, scene, folder)
    assert record["states"].startswith(f"states/{folder}/")
    (entry,) = read_json(out / "results.json")["scenes"]
    assert (entry["method"], entry["scene"], entry["folder"]) == (method, scene, folder)
    assert method in (out / "report" / "index.html").read_text().replace("&#x27;", "'")


def test_a_states_path_outside_out_in_the_commit_log_is_not_read(tmp_path):
    archive = _predictions_zip(tmp_path / "p.zip", {"method": "m", "scene": "s"})
    out = tmp_path / "out"
    argv = ["eval", "--predictions", str(archive), "--out", str(out), "--metrics", "psnr", "--quiet",
            "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    log = out / "results.jsonl"
    record = json.loads(log.read_text().splitlines()[0])
    record["states"] = "../elsewhere.pt"  # a tampered log
    torch.save({"psnr": {}}, tmp_path / "elsewhere.pt")
    log.write_text(json.dumps(record) + "\n")
    assert main(argv) == 0
    notes = read_json(out / "results.json")["notes"]
    assert any("outside" in n and "elsewhere.pt" in n for n in notes), notes


def test_a_picture_path_outside_the_report_in_the_commit_log_is_not_linked(tmp_path):
    """The report links map thumbnails named by results.jsonl only when they lie inside its own folder."""
    archive = _predictions_zip(tmp_path / "p.zip", {"method": "m", "scene": "s"})
    out = tmp_path / "out"
    argv = ["eval", "--predictions", str(archive), "--out", str(out), "--metrics", "puzzlesim", "--random-weights",
            "--quiet", "--device", "cpu", "--train-views", str(tmp_path / "p-src" / "train")]  # fmt: skip
    assert main(argv) == 0
    log = out / "results.jsonl"
    record = json.loads(log.read_text().splitlines()[0])
    good = record["thumbs"]["puzzlesim"][0]["file"]
    assert (out / good).is_file() and f'src="{good.removeprefix("report/")}"' in (out / "report/index.html").read_text()
    viz.save_png(torch.rand(3, 8, 8), tmp_path / "elsewhere.png")
    record["thumbs"]["puzzlesim"][0]["file"] = "report/../../elsewhere.png"  # a tampered log
    log.write_text(json.dumps(record) + "\n")
    assert main(argv) == 0
    html = (out / "report" / "index.html").read_text()
    assert "elsewhere.png" in html and "lies outside the report folder" in html
    assert 'src="../../elsewhere.png"' not in html and 'src="..%2F' not in html


# ---- archive bombs ------------------------------------------------------------------------------------------------


def _zip_bomb(path: Path, size: int) -> Path:
    """A zip holding one member of ``size`` zero bytes, deflated (about 1000:1)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf, zf.open("color/0.png", "w") as f:
        block = bytes(1 << 20)
        for _ in range(size >> 20):
            f.write(block)
    return path


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path):
    """The ratio is checked whatever the size limit: with the default limit (64 MiB fits) and with a huge one."""
    archive = _zip_bomb(tmp_path / "bomb.zip", 64 << 20)  # 64 MiB of zeros in about 64 KiB
    assert archive.stat().st_size < (64 << 20) // 200
    dest = tmp_path / "dest"
    for limit in ({}, {"max_bytes": 1 << 40}):
        with pytest.raises(ValueError, match=r"member 'color/0.png' expands \d+ times .*refused"):
            safe_extract(archive, dest, **limit)
        assert not dest.exists() and not dest.with_name("dest.partial").exists()
    assert ARCHIVE_MAX_RATIO == 200  # the documented ratio (SECURITY.md)


def _sparse_tar(path: Path, realsize: int) -> Path:
    """An old-GNU sparse tar of 2.5 KiB whose one member is all hole: it unpacks to ``realsize`` zero bytes."""
    member = tarfile.TarInfo("color/0.png")
    member.type = tarfile.GNUTYPE_SPARSE
    member.size = 0  # no data block stored
    raw = bytearray(member.tobuf(format=tarfile.GNU_FORMAT))
    raw[483:495] = tarfile.itn(realsize, 12, tarfile.GNU_FORMAT)  # the old GNU header's "realsize" field
    raw[148:156] = b" " * 8  # checksum computed over the header with its own field as spaces
    raw[148:155] = f"{sum(raw[:512]):06o}\0".encode()
    path.write_bytes(bytes(raw) + bytes(1024))
    return path


@pytest.mark.parametrize("realsize", [64 << 20, 1 << 40])
def test_a_sparse_tar_declaring_a_huge_member_is_refused(tmp_path, realsize):
    archive = _sparse_tar(tmp_path / "sparse.tar", realsize)
    with tarfile.open(archive) as tf:  # what tarfile (and so an extraction) sees
        (m,) = tf.getmembers()
        assert m.size == realsize and m.sparse is not None
    assert archive.stat().st_size < 4096
    dest = tmp_path / "dest"
    size = "64.0 MiB" if realsize == 64 << 20 else "1.0 TiB"
    for limit in ({}, {"max_bytes": 1 << 50}):  # refused as sparse before the size is compared with any limit
        with pytest.raises(ValueError, match=rf"'color/0.png' is a sparse file declaring {size}; refused"):
            safe_extract(archive, dest, **limit)
        assert not dest.exists() and not dest.with_name("dest.partial").exists()


def test_the_declared_total_is_checked_against_the_limit(tmp_path):
    archive = tmp_path / "big.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for i in range(3):
            zf.writestr(f"color/{i}.png", os.urandom(100_000))
    with pytest.raises(ValueError, match=r"declare 293\.0 KiB .* more than the extraction limit of 200\.0 KiB"):
        safe_extract(archive, tmp_path / "dest", max_bytes=200 * 1024)
    assert not (tmp_path / "dest").exists() and not (tmp_path / "dest.partial").exists()
    assert safe_extract(archive, tmp_path / "dest", max_bytes=400 * 1024) == tmp_path / "dest"
    assert len(list((tmp_path / "dest" / "color").iterdir())) == 3


def test_the_default_limit_is_half_the_free_space_at_most_64_gib(tmp_path, monkeypatch):
    """Free space is read once, at the nearest existing folder (other processes change it between two reads)."""
    import collections

    from scenemetrics.evaluation import predictions

    seen = []
    usage = collections.namedtuple("usage", "total used free")

    free = {"bytes": 10_000_001}

    def fake(path):
        seen.append(Path(path))
        return usage(2 * free["bytes"], free["bytes"], free["bytes"])

    monkeypatch.setattr(predictions.shutil, "disk_usage", fake)
    assert extraction_limit(tmp_path / "x" / "y") == 5_000_000  # half, rounded down
    assert seen == [tmp_path]  # walked up from the folders that do not exist yet
    free["bytes"] = 200 << 30
    assert extraction_limit(tmp_path) == 64 << 30  # capped


def test_written_bytes_are_counted_while_unpacking(tmp_path, monkeypatch):
    """A member holding more than its directory entry declares is cut off; nothing is left behind."""
    from scenemetrics.evaluation import predictions

    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("color/0.png", os.urandom(300_000))
    real = predictions._members

    def lying(path):  # the sizes a lying central directory would declare
        return [(n, m, 10) for n, m, _ in real(path)]

    monkeypatch.setattr(predictions, "_members", lying)
    with pytest.raises(ValueError, match="holds more than the 10 bytes it declares"):
        safe_extract(archive, tmp_path / "dest", max_bytes=1 << 30)
    assert not (tmp_path / "dest").exists() and not (tmp_path / "dest.partial").exists()
    # the running total of written bytes stops the copy at the archive's limit
    with pytest.raises(ValueError, match=r"unpacking stopped at the extraction limit of 195\.3 KiB"):
        predictions._copy(io.BytesIO(bytes(300_000)), tmp_path / "t", 0, 200_000, 1 << 30, archive, "m")
    assert (tmp_path / "t").stat().st_size == 0  # the 1 MiB block that would cross the limit is not written


def test_eval_max_archive_size_flag(tmp_path, capsys):
    archive = _predictions_zip(tmp_path / "p.zip", {"method": "m", "scene": "s"})
    argv = ["eval", "--predictions", str(archive), "--out", str(tmp_path / "out"), "--metrics", "psnr", "--quiet",
            "--device", "cpu"]  # fmt: skip
    assert main([*argv, "--max-archive-size", "1K"]) == 1
    err = capsys.readouterr().err
    assert "more than the extraction limit of 1.0 KiB (--max-archive-size" in err and "p.zip" in err
    assert main([*argv, "--max-archive-size", "lots"]) == 1
    assert "--max-archive-size` must be a positive size" in capsys.readouterr().err
    assert main([*argv, "--max-archive-size", "10M"]) == 0
    assert parse_size("2G") == 2 << 30 and parse_size("512") == 512 and parse_size("1.5m") == 3 << 19


# ---- odd member layouts ------------------------------------------------------------------------------------------


def test_a_member_under_a_file_path_is_refused_and_leaves_nothing(tmp_path):
    archive = tmp_path / "clash.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("color/0.png", b"x")
        zf.writestr("color/0.png/inner.png", b"y")
    with pytest.raises(ValueError, match=r"'color/0.png/inner.png' lies under 'color/0.png', which is a file"):
        safe_extract(archive, tmp_path / "dest")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clash.zip"]


def test_duplicate_members_are_refused(tmp_path):
    archive = tmp_path / "dup.tar"
    with tarfile.open(archive, "w") as tf:
        for data in (b"a", b"bb"):
            info = tarfile.TarInfo("color/0.png")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="are the same file"):
        safe_extract(archive, tmp_path / "dest")


def test_a_failure_while_writing_removes_the_partial_folder(tmp_path, monkeypatch):
    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("color/0.png", b"x" * 10)
    from scenemetrics.evaluation import predictions

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(predictions, "_copy", boom)
    with pytest.raises(OSError, match="No space left"):
        safe_extract(archive, tmp_path / "dest")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.zip"]


def test_read_predictions_with_a_hostile_method_name_keeps_it(tmp_path):
    archive = _predictions_zip(tmp_path / "p.zip", {"method": "a/../../b", "scene": "s"})
    (unit,) = read_predictions([archive], tmp_path / "cache")
    assert unit.method == "a/../../b"
    assert all(p.is_relative_to(tmp_path / "cache") for p in _files(tmp_path / "cache"))
