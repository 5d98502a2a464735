"""Fixtures of the PRISM tests: tiny random-weight Zero123 folders in both hub layouts, built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.utils.extras import need

from . import prism_tiny


@pytest.fixture(scope="session")
def tiny_parts() -> dict:
    need("prism")  # diffusers builds the U-Net: every test using a tiny Zero123 skips, naming the extra, without it
    return prism_tiny.build_components(seed=0)


@pytest.fixture(scope="session")
def tiny_folders(tiny_parts: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same weights saved as kxic's layout (pickled .bin files) and as ashawkey's layout (safetensors)."""
    root = tmp_path_factory.mktemp("zero123_tiny")
    return {
        "cc_projection": prism_tiny.save_folder(root / "kxic", tiny_parts, "cc_projection", pickled=True),
        "clip_camera_projection": prism_tiny.save_folder(
            root / "ashawkey", tiny_parts, "clip_camera_projection", pickled=False
        ),
    }


@pytest.fixture(scope="session")
def extractor64(tiny_folders: dict[str, Path]):
    from scenemetrics.prism import Zero123Features

    return Zero123Features.from_pretrained(tiny_folders["clip_camera_projection"], image_size=64)


@pytest.fixture(scope="session")
def extractor256(tiny_folders: dict[str, Path]):
    from scenemetrics.prism import Zero123Features

    return Zero123Features.from_pretrained(tiny_folders["cc_projection"])
