"""``import scenemetrics.prism`` works with the core dependencies only; missing extras name themselves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenemetrics.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"

_BLOCKED = r"""
import importlib.abc, sys

# torchmetrics imports transformers itself when it is installed; import it first, then forget the optional packages
# so that any import of them from scenemetrics fails as on a machine without the extras
import torchmetrics
BLOCKED = {"diffusers", "transformers", "safetensors", "huggingface_hub", "lightning"}
for mod in [m for m in sys.modules if m.split(".")[0] in BLOCKED]:
    del sys.modules[mod]

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked for this test")
        return None

sys.meta_path.insert(0, Block())

import torch
import scenemetrics as sm
import scenemetrics.prism as prism
from scenemetrics.stats import mmd_rbf

assert prism.BLOCK_NAMES[4] == "mid" and prism.DEFAULT_MODEL == "ashawkey/zero123-xl-diffusers"
x, y = torch.randn(6, 3), torch.randn(5, 3)
metric = sm.PRISMMMD(anchors=y)
metric.add_embeddings(x)
assert abs(float(metric.compute()) - float(mmd_rbf(x, y))) < 1e-6
assert prism.ProjectionHead(in_dim=8, out_dim=4, hidden_dim=4)(torch.randn(2, 8)).shape == (2, 4)
for call in (lambda: prism.Zero123Features.from_pretrained("someone/zero123"),
             lambda: prism.Zero123Features.from_pretrained("."),
             lambda: prism.ProjectionHead().save("head.safetensors")):
    try:
        call()
    except ImportError as err:
        # the message of spec §1: "... needs the [prism] extra: pip install 'scenemetrics[prism]'"
        assert "needs the [prism] extra: pip install 'scenemetrics[prism]'" in str(err), err
    else:
        raise AssertionError("no ImportError")
try:
    prism.train_head
except ImportError as err:
    # spec §1: "the same kind of ImportError naming [lightning]"; DESIGN.md: pip install "scenemetrics[lightning]"
    assert 'needs the [lightning] extra: pip install "scenemetrics[lightning]"' in str(err), err
else:
    raise AssertionError("no ImportError")
for name in ("diffusers", "transformers", "lightning", "safetensors", "huggingface_hub"):
    assert name not in sys.modules, name
print("ok")
"""


@pytest.mark.slow  # a fresh interpreter importing torch and torchmetrics: ~15 s on a loaded 2-core machine
def test_core_only_import_and_extra_errors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCKED], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")


def test_prism_without_subcommand_is_a_usage_error(capsys):
    assert main(["prism"]) == 2
    assert "train-head" in capsys.readouterr().err
