"""`scenemetrics --help`, every `<subcommand> --help` and usage errors answer without importing torch.

Building the parser must stay import-light: a room's ``cli.py`` (and its package ``__init__``) may import torch only
inside the command functions. The checks run in fresh interpreters, where nothing has imported torch yet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "torchmetrics", "torchvision", "lightning", "numpy", "PIL", "matplotlib")

_PROBE = """
import argparse, contextlib, io, json, sys
from scenemetrics.cli import build_parser, main

paths = [[]]
def walk(parser, prefix):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append(prefix + [name])
                walk(sub, prefix + [name])
walk(build_parser(), [])
codes = {}
for path in paths:
    for suffix in (["--help"], ["--no-such-flag"]):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            codes[" ".join(path + suffix)] = main(path + suffix)
heavy = sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTHONWARNINGS", None)
    return env


def test_every_help_and_usage_error_imports_no_torch():
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY)], env=_env(), capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    codes = result["codes"]
    # the walk reached the nested subcommands, not just the top level
    for cmd in ("demo", "puzzlesim", "osim", "eval", "inpaint", "prism train-head", "prism embed", "wireframe eval"):
        assert f"{cmd} --help" in codes, sorted(codes)
    assert "openlex3d eval segmentation --help" in codes
    assert all(code == 0 for cmd, code in codes.items() if cmd.endswith("--help")), codes
    assert all(code == 2 for cmd, code in codes.items() if cmd.endswith("--no-such-flag")), codes
    assert result["heavy"] == [], f"building the parser imported {result['heavy']}"


def test_importtime_of_help_lists_no_torch():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "scenemetrics", "--help"],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "usage: scenemetrics" in proc.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "scenemetrics.cli" in imported  # the listing is real: our own modules are in it
    assert not {"torch", "torchmetrics", "torchvision"} & imported


def test_missing_required_flag_is_a_usage_error_without_torch():
    code = (
        "import sys, contextlib, io\n"
        "from scenemetrics.cli import main\n"
        "with contextlib.redirect_stderr(io.StringIO()) as err:\n"
        "    rc = main(['puzzlesim', '--images', 'x'])\n"
        "print(rc, 'torch' in sys.modules, '--refs' in err.getvalue())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=False)
    assert proc.stdout.split() == ["2", "False", "True"], proc.stderr[-2000:]
