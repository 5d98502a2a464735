"""Fixtures of the evaluation tests: a generated results tree (3 methods x 2 scenes) and helpers."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics import viz
from scenemetrics.jsonio import restore
from scenemetrics.synthetic import make_scene

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / "standin_plugin.py"
SRC = HERE.parents[1] / "src"
METHODS = ("m_art", "m_clean", "m_noise")
SCENES = ("alpha", "beta")
VIEWS = ("v0", "v1")
SIZE = (48, 64)


def write_tree(root: Path) -> Path:
    """``<root>/<method>/<scene>/{renders,gt,train}``: clean renders (= gt), renders with planted artifacts, noisy."""
    for si, scene in enumerate(SCENES):
        sc = make_scene(num_train=3, num_novel=len(VIEWS), size=SIZE, seed=si)
        for method in METHODS:
            d = root / method / scene
            for i, t in enumerate(sc.train_views):
                viz.save_png(t, d / "train" / f"t{i}.png")
            for i, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
                noise = 0.05 * torch.randn(gt.shape, generator=torch.Generator().manual_seed(10 * si + i))
                render = {"m_art": art, "m_clean": gt, "m_noise": (gt + noise).clamp(0, 1)}[method]
                viz.save_png(render, d / "renders" / f"{VIEWS[i]}.png")
                viz.save_png(gt, d / "gt" / f"{VIEWS[i]}.png")
    return root


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated tree (read-only: copy it with ``copy_tree`` before changing it)."""
    return write_tree(tmp_path_factory.mktemp("tree") / "root")


@pytest.fixture()
def copy_tree(tree: Path, tmp_path: Path):
    def make(name: str = "root") -> Path:
        return Path(shutil.copytree(tree, tmp_path / name))

    return make


def read_png(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _reject(token: str) -> None:
    raise AssertionError(f"non-standard JSON token {token}")


def read_json(path: Path) -> dict:
    """A JSON file parsed strictly (a NaN/Infinity token fails), with its non-finite numbers put back."""
    return restore(json.loads(Path(path).read_text(), parse_constant=_reject))


def read_jsonl(path: Path) -> list[dict]:
    lines = Path(path).read_text().splitlines()
    return [restore(json.loads(line, parse_constant=_reject)) for line in lines if line.strip()]


def subprocess_env(tmp_path: Path) -> dict[str, str]:
    """Environment for `python -m scenemetrics` subprocesses: this checkout, offline, private caches, one thread."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(
        {
            "SCENEMETRICS_OFFLINE": "1",
            "HF_HUB_OFFLINE": "1",
            "SCENEMETRICS_HOME": str(tmp_path / "sm_home"),
            "TORCH_HOME": str(tmp_path / "torch_home"),
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


PYTHON = sys.executable
