"""Shared pytest configuration: marker handling and test isolation from the user's caches."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import torch

from tests.utils import extras

# The tests compare PuzzleSim with exact fp32 references; the plain fp32 search makes that comparison independent of
# the CPU the suite runs on (bf16 screening is exact too, but only taken where the CPU has fast bf16). Set here, at
# import, so subprocesses (CLI runs, DDP ranks, ns-train) inherit it; tests/puzzlesim/test_bf16.py sets its own value.
os.environ.setdefault("SCENEMETRICS_BF16", "off")

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_cuda = pytest.mark.skip(reason="needs a CUDA device")
    no_hoho = pytest.mark.skip(reason="needs hoho2025 (pip install --no-deps hoho2025==0.2.2; CI's full set has it)")
    has_hoho = importlib.util.find_spec("hoho2025") is not None
    for item in items:
        if INTEGRATION in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_cuda)
        needed = [name for mark in item.iter_markers("extra") for name in mark.args]
        if "nerfstudio" in item.keywords:
            needed.append("nerfstudio")
        if "hoho2025" in item.keywords and not has_hoho:
            item.add_marker(no_hoho)
        absent = extras.missing(*needed)
        if absent:
            item.add_marker(pytest.mark.skip(reason=extras.reason(absent[0])))


@pytest.fixture(autouse=True)
def _fp32_on_cuda(request: pytest.FixtureRequest):
    """CUDA tests compare with the CPU in true float32: PyTorch runs convolutions in TF32 by default on Ampere and
    newer GPUs (``torch.backends.cudnn.allow_tf32``), which moves results by about 1e-3 relative (docs: devices)."""
    if "gpu" not in request.keywords:
        yield
        return
    flags = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


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

    import scenemetrics.hub.fetch

    monkeypatch.setattr(scenemetrics.hub.fetch, "_download", _no_download)
