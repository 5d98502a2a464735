"""Fixtures of the baselines tests: the official layouts with random weights, built once per run by the library's
own writers (``save_pretrained`` for CLIP and DINOv2, a torch-fidelity-layout state dict for the FID Inception)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def clip_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scenemetrics.baselines import random_clip_folder

    return random_clip_folder(tmp_path_factory.mktemp("clip") / "tiny-clip", seed=0)


@pytest.fixture(scope="session")
def dinov2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scenemetrics.baselines import random_dinov2_folder

    return random_dinov2_folder(tmp_path_factory.mktemp("dinov2") / "tiny-dinov2", seed=0)


@pytest.fixture(scope="session")
def inception_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scenemetrics.baselines import random_inception_checkpoint

    return random_inception_checkpoint(tmp_path_factory.mktemp("inception") / "inception.pth", seed=0)
