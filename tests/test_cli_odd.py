"""Odd inputs to the room commands and to the process: each was a silent wrong answer or an unhelpful exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.puzzlesim import random_checkpoint

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def folders(tmp_path):
    g = torch.Generator().manual_seed(0)
    for name in ("r0", "r1"):
        viz.save_png(torch.rand(3, 24, 24, generator=g), tmp_path / "refs" / f"{name}.png")
    viz.save_png(torch.rand(3, 24, 24, generator=g), tmp_path / "imgs" / "a.png")
    return tmp_path / "refs", tmp_path / "imgs"


def test_puzzlesim_refuses_two_images_with_one_stem(folders, tmp_path, capsys):
    """`a.png` and `a.jpg` were both written as `a` (scores.json key, maps): one result was silently lost."""
    refs, imgs = folders
    from PIL import Image

    Image.open(imgs / "a.png").save(imgs / "a.jpg")
    weights = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    argv = ["puzzlesim", "--refs", str(refs), "--images", str(imgs), "--out", str(tmp_path / "out"), "--weights",
            str(weights), "--quiet"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "'a.jpg' and 'a.png' would both be written as 'a'" in err and not (tmp_path / "out").exists()
    (imgs / "a.jpg").rename(imgs / "b.jpg")
    assert main(argv) == 0


@pytest.mark.parametrize("flag", ["--conf", "--nms"])
@pytest.mark.parametrize("value", ["5", "-0.1", "nan", "x"])
def test_osim_thresholds_outside_0_1_are_usage_errors(folders, tmp_path, capsys, flag, value):
    """`osim --conf 5` was accepted and wrote `"osim": null`."""
    refs, imgs = folders
    argv = ["osim", "--refs", str(refs), "--renders", str(imgs), "--out", str(tmp_path / "out"), "--random-weights",
            "--quiet", flag, value]  # fmt: skip
    assert main(argv) == 2
    assert f"{flag}: must be a number in [0, 1]" in capsys.readouterr().err


def test_agreement_exclude_names_unknown_items(tmp_path, capsys):
    """`agreement table --exclude <typo>` excluded nothing, silently."""
    (tmp_path / "scores.csv").write_text(
        "item,metric,score,higher_is_better\n"
        + "".join(f"{i},psnr,{s},true\n" for i, s in zip("abcd", (30, 25, 20, 21), strict=True))
    )
    (tmp_path / "human.csv").write_text("item,human\na,4\nb,3\nc,1\nd,2\n")
    argv = ["agreement", "table", "--scores", str(tmp_path / "scores.csv"), "--human", str(tmp_path / "human.csv"),
            "--out", str(tmp_path / "out"), "--quiet", "--ci", "none", "--fit", "none"]  # fmt: skip
    assert main([*argv, "--exclude", "COLMPA"]) == 1
    err = capsys.readouterr().err
    assert "--exclude 'COLMPA': no such item" in err and "'a', 'b', 'c', 'd'" in err
    assert main([*argv, "--exclude", "d"]) == 0
    import json

    assert json.loads((tmp_path / "out" / "agreement.json").read_text())["config"]["exclude"] == ["d"]


def test_ctrl_c_exits_130(monkeypatch, capsys):
    """An interrupted command exits 130 (128 + SIGINT), as shells report Ctrl-C, not 1 like an error."""
    from scenemetrics.puzzlesim import cli as puzzlesim_cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(puzzlesim_cli, "run", interrupted)
    assert main(["puzzlesim", "--refs", "r", "--images", "i", "--out", "o"]) == 130
    assert capsys.readouterr().err.strip().endswith("scenemetrics: interrupted")


def _run_killed(code: str, tmp: Path, cwd: Path) -> int:
    """Run ``code`` in a fresh Python with TMPDIR=tmp; it ends by SIGKILLing itself. Returns the exit status."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(tmp), "SCENEMETRICS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    return proc.returncode


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_a_killed_command_leaves_no_temporary_folder(folders, tmp_path):
    """SIGKILL skips every cleanup: commands create no scratch folder unless they need one."""
    refs, imgs = folders
    weights = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    code = f"""
        import os, signal
        from scenemetrics.puzzlesim import cli
        from scenemetrics.cli import main

        def killed(args, scratch):
            os.kill(os.getpid(), signal.SIGKILL)

        cli._run = killed
        main(["puzzlesim", "--refs", {str(refs)!r}, "--images", {str(imgs)!r}, "--out", "out", "--weights",
              {str(weights)!r}])
    """
    assert _run_killed(code, tmp, tmp_path) == -signal.SIGKILL
    assert list(tmp.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_a_killed_eval_leaves_its_scratch_in_out_and_the_next_run_removes_it(folders, tmp_path):
    root = tmp_path / "root" / "m" / "s"
    g = torch.Generator().manual_seed(1)
    for sub in ("renders", "gt", "train"):
        viz.save_png(torch.rand(3, 24, 24, generator=g), root / sub / "v.png")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    out = tmp_path / "out"
    code = f"""
        import os, signal
        from scenemetrics.evaluation import runner
        from scenemetrics.cli import main

        def killed(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        runner.evaluate_unit_safely = killed
        main(["eval", "--root", {str(tmp_path / "root")!r}, "--out", {str(out)!r}, "--metrics", "psnr", "--quiet",
              "--device", "cpu"])
    """
    assert _run_killed(code, tmp, tmp_path) == -signal.SIGKILL
    assert list(tmp.iterdir()) == []  # nothing in the system's temporary folder
    assert len(list((out / ".work").iterdir())) == 1  # the killed run's scratch, inside --out
    argv = ["eval", "--root", str(tmp_path / "root"), "--out", str(out), "--metrics", "psnr", "--quiet", "--device",
            "cpu"]  # fmt: skip
    assert main(argv) == 0
    assert list((out / ".work").iterdir()) == []
