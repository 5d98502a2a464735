"""Shared pytest configuration: marker handling and test isolation from the user's caches."""

from __future__ import annotations

import importlib.util

import pytest
import torch


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_cuda = pytest.mark.skip(reason="needs a CUDA device")
    no_ns = pytest.mark.skip(reason="needs the [nerfstudio] extra (pip install 'scenemetrics[nerfstudio]')")
    has_ns = importlib.util.find_spec("nerfstudio") is not None
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_cuda)
        if "nerfstudio" in item.keywords and not has_ns:
            item.add_marker(no_ns)


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point every cache at an empty folder and forbid downloads: tests never touch the network."""
    home = tmp_path_factory.mktemp("scenemetrics_home")
    monkeypatch.setenv("SCENEMETRICS_HOME", str(home / "sm"))
    monkeypatch.setenv("TORCH_HOME", str(home / "torch"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(torch.hub, "_hub_dir", str(home / "torch" / "hub"), raising=False)

    def _no_download(url, dst, progress=True):  # pragma: no cover - reached only by a bug
        raise RuntimeError(f"tests must not download ({url})")

    import scenemetrics.hub

    monkeypatch.setattr(scenemetrics.hub, "_download", _no_download)
