"""Fixtures of the PuzzleSim tests: deterministic random-weight checkpoints built once per session (per worker)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from scenemetrics.puzzlesim import random_checkpoint

from .naive import TORCHVISION_FILES, write_checkpoint


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``checkpoint(name, seed=0, classifier=False)`` -> path of a cached torchvision-layout random checkpoint.

    Built with :func:`scenemetrics.puzzlesim.random_checkpoint`, except VGG16 and the AlexNet file with classifier:
    ``random_checkpoint`` spends seconds initialising torchvision's large classifier (~5 s for VGG16), so the tests
    write the same recipe themselves without that (``naive.write_checkpoint``; equality of the two files is tested in
    ``test_weights.py``).
    """
    root = tmp_path_factory.mktemp("puzzlesim_checkpoints")
    made: dict[tuple, Path] = {}

    def get(name: str = "squeezenet1_1", seed: int = 0, classifier: bool = False) -> Path:
        key = (name, seed, classifier)
        if key not in made:
            path = root / f"{name}-seed{seed}-{'full' if classifier else 'features'}.pth"
            make = (
                write_checkpoint if name == "vgg16" or (classifier and name != "squeezenet1_1") else random_checkpoint
            )
            made[key] = make(name, path, seed=seed, include_classifier=classifier)
        return made[key]

    return get


@pytest.fixture
def squeeze_ckpt(checkpoint: Callable[..., Path]) -> Path:
    """SqueezeNet 1.1 checkpoint (features only, seed 0): the weights of most tests."""
    return checkpoint("squeezenet1_1")


@pytest.fixture
def torchvision_cache() -> Callable[[str, Path], Path]:
    """``install(name, file)`` links ``file`` under torchvision's cache name in this test's ``torch.hub`` dir."""

    def install(name: str, file: Path) -> Path:
        target = Path(torch.hub.get_dir()) / "checkpoints" / TORCHVISION_FILES[name]
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            target.unlink()
        os.symlink(file, target)
        return target

    return install
