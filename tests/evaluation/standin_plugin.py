"""A stand-in metric registered by the evaluation tests (``--plugin tests/evaluation/standin_plugin.py``).

``standin`` is the mean absolute error of render and ground truth (float64, per image, averaged). Its ``feed`` logs
``<method>/<scene> <view> <pid>`` to the file named by the ``log`` option and sleeps ``delay`` seconds, so tests can
count which units were computed and kill a run midway. After each update it exposes a ``last_result`` with four
"objects" (the image quadrants, r = 1 - quadrant MAE) like OSIM's, which exercises the report's violin plots.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from torchmetrics import Metric

from scenemetrics.registry import Option, register_metric


class StandInMAE(Metric):
    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("abs_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.last_result = None

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        diff = (preds.double() - target.double()).abs()
        self.abs_sum += diff.mean(dim=(1, 2, 3)).sum()
        self.count += preds.shape[0]
        h, w = diff.shape[-2:]
        quads = [
            diff[0, :, : h // 2, : w // 2],
            diff[0, :, : h // 2, w // 2 :],
            diff[0, :, h // 2 :, : w // 2],
            diff[0, :, h // 2 :, w // 2 :],
        ]
        r = torch.stack([1.0 - q.mean() for q in quads]).float()
        self.last_result = SimpleNamespace(r=r, s=torch.ones(4), classes=torch.arange(4))

    def compute(self) -> torch.Tensor:
        return (self.abs_sum / self.count).float()


def _feed(metric: Metric, item, config) -> tuple:
    log = config.options.get("log")
    if log:
        with open(log, "a") as f:
            f.write(f"{item.unit} {item.name} {os.getpid()}\n")
    delay = config.options.get("delay", 0.0)
    if delay:
        time.sleep(delay)
    return (item.render, item.target)


register_metric(
    "standin",
    lambda config: StandInMAE(),
    inputs=("gt",),
    higher_is_better=False,
    description="stand-in: mean absolute error (tests)",
    feed=_feed,
    options=[
        Option("log", Path, None, "file each update appends '<unit> <view> <pid>' to", scores=False),
        Option("delay", float, 0.0, "seconds each update sleeps", low=0, scores=False),
    ],
)
register_metric(
    "standin_scene",
    lambda config: StandInMAE(),
    inputs=("gt",),
    higher_is_better=False,
    description="stand-in without per-view values: only update() and one compute() per scene (tests)",
    per_view=False,
)
