"""The `scenemetrics` entry point: subcommand registry, exit codes, the puzzlesim subcommand end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.cliutils import RANDOM_BANNER
from scenemetrics.puzzlesim import puzzle_similarity_map, random_checkpoint


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory):
    return random_checkpoint("squeezenet1_1", tmp_path_factory.mktemp("w") / "sq.pth")


@pytest.fixture()
def folders(tmp_path):
    g = torch.Generator().manual_seed(0)
    refs, imgs = tmp_path / "refs", tmp_path / "imgs"
    ref_tensors = [torch.rand(3, 48, 64, generator=g), torch.rand(3, 56, 40, generator=g)]
    for i, t in enumerate(ref_tensors):
        viz.save_png(t, refs / f"r{i}.png")
    viz.save_png(torch.rand(3, 40, 52, generator=g), imgs / "a.png")
    viz.save_png(ref_tensors[0], imgs / "b.png")  # identical to a reference: map of ones
    return refs, imgs


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    assert "puzzlesim" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert "scenemetrics" in capsys.readouterr().out


def test_no_command_is_usage_error():
    assert main([]) == 2


def test_unknown_flag_is_usage_error():
    assert main(["puzzlesim", "--no-such-flag"]) == 2


def test_puzzlesim_writes_maps_and_scores(folders, tmp_path, weights, capsys):
    refs, imgs = folders
    out = tmp_path / "out"
    rc = main(
        [
            "puzzlesim",
            "--refs",
            str(refs),
            "--images",
            str(imgs),
            "--out",
            str(out),
            "--weights",
            str(weights),
            "--quiet",
            "--save-raw",
        ]
    )
    assert rc == 0
    report = json.loads((out / "scores.json").read_text())
    assert set(report["images"]) == {"a", "b"}
    for name in ("a", "b"):
        entry = report["images"][name]
        assert (out / entry["map"]).is_file() and (out / entry["overlay"]).is_file()
        raw = np.load(out / entry["raw"])
        assert abs(entry["score"] - raw.mean()) < 1e-6
    # independent check: the same images through the functional API
    from scenemetrics.image import read_image

    ref_t = [read_image(p) for p in sorted(refs.iterdir())]
    expected = puzzle_similarity_map(read_image(imgs / "a.png"), ref_t, weights_path=weights)[0]
    assert np.abs(np.load(out / "raw" / "a.npy") - expected.numpy()).max() < 1e-5
    assert report["images"]["b"]["score"] == pytest.approx(1.0, abs=1e-4)
    assert report["mean_score"] == pytest.approx((report["images"]["a"]["score"] + 1.0) / 2, abs=1e-4)


def test_puzzlesim_missing_folder_is_error(tmp_path, capsys):
    rc = main(["puzzlesim", "--refs", str(tmp_path / "nope"), "--images", str(tmp_path), "--out", str(tmp_path / "o")])
    assert rc == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--refs" in err[0] and "not a folder" in err[0]


def test_puzzlesim_offline_without_weights_names_the_file(folders, tmp_path, monkeypatch, capsys):
    refs, imgs = folders
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    rc = main(["puzzlesim", "--refs", str(refs), "--images", str(imgs), "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "squeezenet1_1-b8a52dc0.pth" in err and "https://download.pytorch.org/models/" in err
    assert len(err.strip().splitlines()) == 1
    # the command's flags, not the Python argument
    assert "--weights PATH" in err and "--random-weights" in err and "weights_path" not in err


def test_debug_prints_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCENEMETRICS_DEBUG", "1")
    rc = main(["puzzlesim", "--refs", str(tmp_path / "nope"), "--images", str(tmp_path), "--out", str(tmp_path / "o")])
    assert rc == 1
    assert "Traceback" in capsys.readouterr().err


def test_bad_device_is_error(folders, tmp_path, capsys):
    refs, imgs = folders
    rc = main(
        ["puzzlesim", "--refs", str(refs), "--images", str(imgs), "--out", str(tmp_path / "o"), "--device", "nonsense"]
    )
    assert rc == 1
    assert "--device" in capsys.readouterr().err


def test_module_entry_point_runs():
    res = subprocess.run(
        [sys.executable, "-m", "scenemetrics", "--version"], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0 and res.stdout.startswith("scenemetrics ")


def test_puzzlesim_random_weights_says_so_loudly(folders, tmp_path, capsys):
    refs, imgs = folders
    out = tmp_path / "out"
    assert main(["puzzlesim", "--refs", str(refs), "--images", str(imgs), "--out", str(out), "--random-weights"]) == 0
    err = capsys.readouterr().err
    assert err.count(RANDOM_BANNER) == 2  # before the work and again after the results
    report = json.loads((out / "scores.json").read_text())
    assert report["warning"] == RANDOM_BANNER and report["settings"]["weights"] == "random (uncalibrated)"
    # not a terminal: plain lines say what the long steps do; no progress-bar debris
    assert "embedding 2 reference views" in err
    assert "\r" not in err and "\x1b" not in err and "it/s" not in err


def test_weights_and_random_weights_exclude_each_other(folders, tmp_path, weights, capsys):
    refs, imgs = folders
    args = ["--refs", str(refs), "--out", str(tmp_path / "o"), "--weights", str(weights), "--random-weights"]
    assert main(["puzzlesim", "--images", str(imgs), *args]) == 1
    assert "--weights and --random-weights exclude each other" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["demo", "puzzlesim", "osim", "inpaint", "eval", "prism embed"])
def test_every_weight_loading_command_takes_both_weight_flags(command, capsys):
    assert main([*command.split(), "--help"]) == 0
    text = capsys.readouterr().out
    assert "--weights" in text and "--random-weights" in text


def test_warnings_of_a_command_are_shown_once_after_its_output(tmp_path):
    (tmp_path / "warner_cli.py").write_text(
        "import warnings\n"
        "def run(args):\n"
        "    for i in range(5):\n"
        "        warnings.warn('the same thing', UserWarning)\n"
        "    warnings.warn('another thing', UserWarning)\n"
        "    print('output line')\n"
        "    return 0\n"
        "def register(sub):\n"
        "    sub.add_parser('warner').set_defaults(func=run)\n"
    )
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import scenemetrics.cli as cli\n"
        "cli.ROOM_CLIS = (*cli.ROOM_CLIS, 'warner_cli')\n"
        "sys.argv = ['scenemetrics', 'warner']\n"
        "raise SystemExit(cli.main())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0 and res.stdout == "output line\n"
    assert res.stderr.splitlines() == [
        "scenemetrics: warning: the same thing (5 times)",
        "scenemetrics: warning: another thing",
    ]


@pytest.mark.slow
def test_osim_random_weights_uses_a_random_nano_detector(tmp_path, capsys):
    g = torch.Generator().manual_seed(1)
    img = torch.rand(3, 64, 64, generator=g)
    viz.save_png(img, tmp_path / "refs" / "v0.png")
    viz.save_png((img * 0.8).clamp(0, 1), tmp_path / "renders" / "v0.png")
    out = tmp_path / "out"
    args = ["osim", "--refs", str(tmp_path / "refs"), "--renders", str(tmp_path / "renders"), "--out", str(out)]
    assert main([*args, "--random-weights", "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert err.count(RANDOM_BANNER) == 2 and "yolox_nano detector" in err
    report = json.loads((out / "osim.json").read_text())
    assert report["detector"] == "yolox_nano" and report["weights"] == "random (uncalibrated)"
    assert report["warning"] == RANDOM_BANNER


def test_a_python_caller_gets_the_warnings_once_each(monkeypatch):
    def run(args):
        for _ in range(3):
            warnings.warn("repeated", UserWarning, stacklevel=2)
        return 0

    import scenemetrics.wireframe.cli as wcli

    monkeypatch.setattr(wcli, "run", run)
    with pytest.warns(UserWarning) as caught:
        assert main(["wireframe"]) == 0
    assert [str(w.message) for w in caught] == ["repeated (3 times)"]


def test_shared_helpers_live_in_cliutils_only():
    import ast

    import scenemetrics.cli as cli
    import scenemetrics.cliutils as cliutils

    assert not set(cli.__all__) & set(cliutils.__all__)  # one import path per name: no re-exports
    # the dependency points one way: room CLIs (and every other module) import the helpers, never the assembler
    src = Path(cli.__file__).parent
    importers = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module == "scenemetrics":
                names += [f"scenemetrics.{a.name}" for a in node.names]
            if "scenemetrics.cli" in names:
                importers.append(path.relative_to(src).as_posix())
    assert importers == ["__main__.py"], importers
