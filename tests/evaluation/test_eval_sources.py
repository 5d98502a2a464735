"""Other pipelines' outputs as written: NerfBaselines predictions (folders, .tar.gz, .zip, masks, info.json) and the
original 3DGS ``render.py`` layout with ``--train-views``."""

from __future__ import annotations

import json
import math
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.evaluation.layout import discover_units
from scenemetrics.evaluation.predictions import read_predictions, safe_extract
from scenemetrics.synthetic import make_scene

from .conftest import read_csv, read_json, read_png

SIZE = (40, 56)


def gt_name(i: int) -> str:
    return f"{i:05d}.jpg" if i else f"{i:05d}.png"  # ground truth may have another extension than the render


def write_predictions(folder: Path, *, seed: int, method: str, scene: str, mask: bool) -> None:
    """A NerfBaselines predictions folder: color/, gt-color/ (nested relative paths), mask/, info.json."""
    sc = make_scene(num_train=2, num_novel=2, size=SIZE, seed=seed)
    for i, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
        viz.save_png(art, folder / "color" / "cam" / f"{i:05d}.png")
        viz.save_png(gt, folder / "gt-color" / "cam" / gt_name(i))
        if mask:
            m = torch.zeros(1, *SIZE)
            m[:, : SIZE[0] // 2] = 1.0  # only the top half is scored
            viz.save_png(m.expand(3, -1, -1), folder / "mask" / "cam" / f"{i:05d}.png")
    info = {"method": method, "dataset_metadata": {"name": "blender", "scene": scene}, "evaluation_protocol": "nerf"}
    (folder / "info.json").write_text(json.dumps(info))


def _masked_psnr(render: np.ndarray, gt: np.ndarray, mask: np.ndarray | None) -> float:
    if mask is not None:
        render, gt = render * mask, gt * mask
    mse = float(((render - gt) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(1.0 / mse)


def test_predictions_folder_tar_and_zip_in_one_report(tmp_path):
    src = tmp_path / "src"
    write_predictions(src / "a", seed=0, method="zipnerf", scene="lego", mask=True)
    write_predictions(src / "b", seed=1, method="gsplat", scene="lego", mask=False)
    write_predictions(src / "c", seed=2, method="instant-ngp", scene="ship", mask=False)
    with tarfile.open(tmp_path / "b.tar.gz", "w:gz") as tar:
        tar.add(src / "b", arcname=".")
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as zf:
        for f in sorted((src / "c").rglob("*")):
            if f.is_file():
                zf.write(f, f"predictions/{f.relative_to(src / 'c').as_posix()}")  # wrapped in one folder
    out = tmp_path / "out"
    argv = ["eval", "--predictions", str(src / "a"), str(tmp_path / "b.tar.gz"), str(tmp_path / "c.zip"),
            "--out", str(out), "--metrics", "psnr", "--quiet", "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    rows = read_csv(out / "results.csv")
    assert [(r["method"], r["scene"]) for r in rows] == [
        ("gsplat", "blender-lego"), ("instant-ngp", "blender-ship"), ("zipnerf", "blender-lego")]  # fmt: skip
    folders = {"zipnerf": src / "a", "gsplat": src / "b", "instant-ngp": src / "c"}
    for row in rows:
        d = folders[row["method"]]
        values = []
        for i in range(2):
            gt_file = d / "gt-color" / "cam" / gt_name(i)
            mask = read_png(d / "mask" / "cam" / f"{i:05d}.png")[..., :1] if (d / "mask").is_dir() else None
            values.append(_masked_psnr(read_png(d / "color" / "cam" / f"{i:05d}.png"), read_png(gt_file), mask))
        assert float(row["psnr"]) == pytest.approx(np.mean(values), rel=1e-4), row
    # the mask matters: unmasked PSNR of the same folder differs
    a = src / "a"
    unmasked = np.mean(
        [
            _masked_psnr(
                read_png(a / "color" / "cam" / f"{i:05d}.png"), read_png(a / "gt-color" / "cam" / gt_name(i)), None
            )
            for i in range(2)
        ]
    )
    zip_row = next(r for r in rows if r["method"] == "zipnerf")
    assert abs(float(zip_row["psnr"]) - unmasked) > 0.5
    doc = read_json(out / "results.json")
    assert len(doc["predictions"]) == 3
    assert len(list((out / "inputs").iterdir())) == 2  # the two archives, unpacked once


def _tar_with(path: Path, member: tarfile.TarInfo, data: bytes = b"x") -> None:
    import io

    with tarfile.open(path, "w:gz") as tar:
        good = tarfile.TarInfo("color/0.png")
        good.size = 1
        tar.addfile(good, io.BytesIO(b"x"))
        if member.isfile():
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        else:
            tar.addfile(member)


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("../evil.png", tarfile.REGTYPE, "escapes the archive's root"),
        ("/etc/evil.png", tarfile.REGTYPE, "has an absolute path"),
        ("color/link.png", tarfile.SYMTYPE, "is a link"),
        ("color/hard.png", tarfile.LNKTYPE, "is a link"),
        ("color/dev", tarfile.CHRTYPE, "is a special file"),
    ],
)
def test_unsafe_tar_members_are_refused_before_writing(tmp_path, name, kind, message):
    member = tarfile.TarInfo(name)
    member.type = kind
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        member.linkname = "/etc/passwd"
    archive = tmp_path / "p.tar.gz"
    _tar_with(archive, member)
    dest = tmp_path / "dest"
    with pytest.raises(ValueError, match=message):
        safe_extract(archive, dest)
    assert not dest.exists() and not (tmp_path / "dest.partial").exists()
    assert not (tmp_path / "evil.png").exists()


def test_unsafe_zip_members_are_refused(tmp_path):
    archive = tmp_path / "p.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("color/0.png", b"x")
        zf.writestr("../../evil.png", b"x")
    with pytest.raises(ValueError, match=r"'\.\./\.\./evil\.png' escapes"):
        safe_extract(archive, tmp_path / "dest")
    link = zipfile.ZipInfo("color/link.png")
    link.external_attr = 0o120777 << 16
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(link, "/etc/passwd")
    with pytest.raises(ValueError, match="is a symbolic link"):
        safe_extract(archive, tmp_path / "dest")


def test_prediction_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        read_predictions([tmp_path / "missing"], tmp_path / "cache")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a NerfBaselines predictions folder"):
        read_predictions([tmp_path / "empty"], tmp_path / "cache")
    write_predictions(tmp_path / "a", seed=0, method="m", scene="s", mask=False)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with pytest.raises(ValueError, match="both name 'm/blender-s'"):
        read_predictions([tmp_path / "a", tmp_path / "b"], tmp_path / "cache")


def test_gaussian_splatting_layout_with_train_views(tmp_path):
    root, dataset = tmp_path / "root", tmp_path / "dataset"
    sc = make_scene(num_train=3, num_novel=2, size=SIZE, seed=5)
    for it in (7000, 30000):
        base = root / "3dgs" / "garden" / "test" / f"ours_{it}"
        for i, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
            viz.save_png(art if it == 30000 else gt, base / "renders" / f"{i:05d}.png")
            viz.save_png(gt, base / "gt" / f"{i:05d}.png")
    for i, t in enumerate(sc.train_views):
        viz.save_png(t, dataset / "garden" / "images" / f"DSC{i:04d}.png")
    units = discover_units(root, train_views=dataset)
    (unit,) = units
    assert unit.layout == "gaussian-splatting" and unit.folder.name == "ours_30000"
    assert [v.name for v in unit.views] == ["00000", "00001"] and len(unit.train) == 3
    out = tmp_path / "out"
    argv = ["eval", "--root", str(root), "--train-views", str(dataset), "--out", str(out), "--metrics",
            "psnr,puzzlesim", "--random-weights", "--quiet", "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    (row,) = read_csv(out / "results.csv")
    assert row["method"] == "3dgs" and row["scene"] == "garden"
    assert math.isfinite(float(row["psnr"])) and 0.0 <= float(row["puzzlesim"]) <= 1.0
    assert main(["eval", "--out", str(out), "--metrics", "psnr", "--quiet"]) == 1  # neither --root nor --predictions


def test_nerfstudio_config_paths_resolve_from_the_training_folder(tmp_path, monkeypatch):
    """config.yml stores paths relative to where ns-train ran; they are resolved from the config's location."""
    from types import SimpleNamespace

    from scenemetrics.evaluation.nerfstudio_source import _fix_paths

    run = tmp_path / "project" / "outputs" / "exp" / "nerfacto" / "2025-01-01"
    run.mkdir(parents=True)
    (tmp_path / "project" / "data" / "lego").mkdir(parents=True)
    datamanager = SimpleNamespace(data=Path("data/lego"), dataparser=SimpleNamespace(data=Path("data/lego")))
    config = SimpleNamespace(output_dir=Path("outputs"), pipeline=SimpleNamespace(datamanager=datamanager))
    monkeypatch.chdir(tmp_path)  # not the training folder: data/lego does not resolve from here
    _fix_paths(config, run / "config.yml")
    assert config.output_dir == tmp_path / "project" / "outputs"
    assert datamanager.data == tmp_path / "project" / "data" / "lego" == datamanager.dataparser.data


def test_nerfstudio_config_errors(tmp_path):
    from scenemetrics.evaluation.nerfstudio_source import render_nerfstudio

    with pytest.raises(ValueError, match="`split` for a nerfstudio model must be one of test, val"):
        render_nerfstudio(tmp_path / "config.yml", tmp_path, split="train")
    with pytest.raises(FileNotFoundError, match="no such file"):
        render_nerfstudio(tmp_path / "config.yml", tmp_path)


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("!!python/object/apply:os.system ['touch {marker}']", "nerfstudio's loader would call it"),
        ("!!python/object/apply:subprocess.call [['touch', '{marker}']]", "would call it"),
        ("!!python/object/new:os.system ['touch {marker}']", "would call it"),
        ("!!python/module:os", "would import it"),
        ("!!python/object/apply:pathlib.Path.touch [!!python/object/apply:pathlib.PosixPath ['{marker}']]",
         "names nothing importable"),
        ("!!python/object/apply:torch.save [0, '{marker}']", "only paths and enum members"),
        ("!!python/object:torch.nn.Linear {{}}", "not a config dataclass"),
    ],
)  # fmt: skip
def test_a_nerfstudio_config_that_would_run_code_is_refused(tmp_path, tag, message):
    """nerfstudio reads config.yml with PyYAML's full loader: the tags are checked before it sees the file."""
    import yaml

    from scenemetrics.evaluation.nerfstudio_source import check_nerfstudio_config

    marker = tmp_path / "PWNED"
    text = f"method_name: nerfacto\nexperiment_name: lego\nx: {tag.format(marker=marker)}\n"
    if "os.system" in tag and "new" not in tag:  # control: the full loader does run it
        control = tmp_path / "control"
        yaml.load(text.replace(str(marker), str(control)), Loader=yaml.Loader)  # the unsafe loader, on purpose
        assert control.exists()
    config = tmp_path / "config.yml"
    config.write_text(text)
    with pytest.raises(ValueError, match=rf"config\.yml, line 3: refusing the tag .*{message}"):
        check_nerfstudio_config(config)
    assert not marker.exists()


@pytest.mark.nerfstudio
def test_the_configs_ns_train_writes_pass_the_check(tmp_path):
    import yaml
    from nerfstudio.configs.method_configs import all_methods

    from scenemetrics.evaluation.nerfstudio_source import check_nerfstudio_config

    for name in ("nerfacto", "splatfacto", "nerfacto-scenemetrics"):
        path = tmp_path / f"{name}.yml"
        path.write_text(yaml.dump(all_methods[name]))  # what TrainerConfig.save_config writes
        check_nerfstudio_config(path)
    path.write_text("!!python/object/apply:nerfstudio.utils.scripts.run_command ['touch x']\n")
    with pytest.raises(ValueError, match="only paths and enum members"):
        check_nerfstudio_config(path)


@pytest.mark.nerfstudio
def test_eval_never_hands_a_config_that_would_run_code_to_nerfstudio(tmp_path, capsys):
    """Through the command, where nerfstudio's own loader would read the file: the payload never runs."""
    marker = tmp_path / "PWNED"
    config = tmp_path / "outputs" / "lego" / "nerfacto" / "2024-01-01_000000" / "config.yml"
    config.parent.mkdir(parents=True)
    config.write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    argv = ["eval", "--nerfstudio-config", str(config), "--out", str(tmp_path / "out"), "--metrics", "psnr",
            "--quiet", "--device", "cpu"]  # fmt: skip
    code = main(argv)
    assert not marker.exists()  # nerfstudio's loader would have run `touch` (it does on the code before issue 26)
    assert code == 1 and "line 1: refusing the tag !!python/object/apply:os.system" in capsys.readouterr().err


def test_nerfstudio_runs_are_refused_where_torch_would_unpickle_their_checkpoint(tmp_path, monkeypatch):
    """nerfstudio's eval_setup calls torch.load(ckpt) without weights_only: before torch 2.6 that unpickles."""
    from scenemetrics.evaluation.nerfstudio_source import render_nerfstudio

    config = tmp_path / "config.yml"
    config.write_text("method_name: nerfacto\n")
    monkeypatch.setattr(torch, "__version__", "2.5.1+cu121")
    with pytest.raises(ImportError, match=r"needs torch >= 2\.6 \(this is 2\.5\.1\+cu121\).*unpickles"):
        render_nerfstudio(config, tmp_path / "cache")
    monkeypatch.setattr(torch, "__version__", "2.10.0")  # past the check (then nerfstudio, or its absence, decides)
    with pytest.raises(Exception) as info:
        render_nerfstudio(config, tmp_path / "cache")
    assert "needs torch" not in str(info.value)
