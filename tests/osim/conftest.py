"""Fixtures of the OSIM tests: random-weight YOLOX checkpoints in the official layout, loaded the way a user's are."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest
import torch

from scenemetrics.osim.boxes import Detections, Letterbox, YOLOXOutput
from scenemetrics.osim.random import random_checkpoint
from scenemetrics.osim.yolox import YOLOX

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def nano_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A calibrated random-weight yolox_nano checkpoint ``{"model": ..., "start_epoch": 0}``."""
    return random_checkpoint("yolox_nano", tmp_path_factory.mktemp("osim_ckpt") / "yolox_nano.pth", seed=0)


@pytest.fixture(scope="session")
def _nano_session(nano_ckpt: Path) -> YOLOX:
    return YOLOX.from_official("yolox_nano", weights_path=nano_ckpt)


@pytest.fixture()
def nano(_nano_session: YOLOX) -> YOLOX:
    """The shared nano detector (eval, frozen), reset to its official input size for every test."""
    _nano_session.input_size = 416
    return _nano_session


def images(n: int, h: int = 120, w: int = 160, seed: int = 0) -> torch.Tensor:
    """Deterministic RGB test scenes in [0, 1] (smooth gradients with rectangles and discs)."""
    from scenemetrics.osim.random import synthetic_images

    return synthetic_images(n, (h, w), seed=seed)


class FixedDetector(YOLOX):
    """A yolox_nano whose detections are given by the test; features still come from the network.

    ``boxes[i]`` lists ``(x1, y1, x2, y2, class)`` in letterbox pixels for view i of each call.
    """

    def __init__(self, state_dict: dict, boxes: Sequence[Sequence[tuple[float, float, float, float, int]]]) -> None:
        super().__init__("yolox_nano")
        self.load_state_dict(state_dict)
        self.eval().requires_grad_(False)
        self.boxes = [list(b) for b in boxes]

    def _detect_letterbox(self, lb: Letterbox, *args) -> YOLOXOutput:  # the detection step OSIM and its loss call
        out = super()._detect_letterbox(lb, *args)
        dets = []
        for i in range(lb.canvas.shape[0]):
            rows = self.boxes[i] if i < len(self.boxes) else []
            dev = lb.canvas.device
            b = torch.tensor([r[:4] for r in rows], dtype=torch.float32, device=dev).view(-1, 4)
            n = b.shape[0]
            dets.append(
                Detections(
                    boxes=b / lb.ratio,
                    boxes_letterbox=b,
                    scores=torch.linspace(0.9, 0.5, n, device=dev),
                    classes=torch.tensor([r[4] for r in rows], dtype=torch.int64, device=dev),
                    objectness=torch.ones(n, device=dev),
                    class_conf=torch.linspace(0.9, 0.5, n, device=dev),
                )
            )
        out.detections = dets
        return out


@pytest.fixture()
def fixed_detector(_nano_session: YOLOX):
    """Factory: ``fixed_detector(boxes)`` -> a :class:`FixedDetector` with the shared nano weights."""

    def make(boxes: Sequence[Sequence[tuple[float, float, float, float, int]]]) -> FixedDetector:
        return FixedDetector(_nano_session.state_dict(), boxes)

    return make


def load_benchmark(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` (its naive reference implementations serve as independent oracles)."""
    key = f"_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, REPO / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
