"""Small torchmetrics stand-ins with the call contracts of OSIM and PRISM (specs/osim.md, specs/prism.md).

The integrations find how to feed a metric instance in the metric-adapter registry; these classes are registered
there at import (``register_metric(..., metric_class=...)``, no factory), exactly as a plugin declares its metric, with
the update kinds and pictures of the real ones. Each records the shapes and devices it was called with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.registry import Option, register_metric

__all__ = ["OSIM", "PRISMMMD", "FakeOSIMResult", "MeanRender", "PRISMDistance"]


@dataclass
class FakeOSIMResult:
    """What the callback reads of an ``OSIMResult``: only that it exists (it is handed to ``draw_low_objects``)."""

    score: Tensor
    views: int
    calls: list = field(default_factory=list)


class OSIM(Metric):
    """``update(preds, target)``; score = 1 - mean |preds - target|; has ``class_scores()`` and ``last_result``."""

    full_state_update = False
    higher_is_better = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("err_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.last_result: FakeOSIMResult | None = None
        self.calls: list[tuple] = []

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.calls.append((tuple(preds.shape), tuple(target.shape), preds.device.type))
        err = (preds - target).abs().mean(dim=(1, 2, 3))
        self.err_sum += err.sum().double()
        self.count += preds.shape[0]
        self.last_result = FakeOSIMResult(score=1 - err.mean(), views=preds.shape[0])

    def compute(self) -> Tensor:
        return (1 - self.err_sum / self.count).float()

    def class_scores(self) -> dict[str, float]:
        score = float(self.compute())
        return {"potted plant": score, "cup": score / 2}


class PRISMMMD(Metric):
    """``update(source, pred, pose)``; a list state (``dist_reduce_fx="cat"``) like the real PRISMMMD."""

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("embeddings", [], dist_reduce_fx="cat")
        self.calls: list[tuple] = []

    def update(self, source: Tensor, pred: Tensor, pose: Tensor) -> None:
        self.calls.append((tuple(source.shape), tuple(pred.shape), tuple(pose.shape)))
        self.embeddings.append(torch.cat([pred.mean(dim=(2, 3)), source.mean(dim=(2, 3))], dim=1))

    def compute(self) -> Tensor:
        emb = torch.cat(self.embeddings) if isinstance(self.embeddings, list) else self.embeddings
        return emb[:, :3].mean() - emb[:, 3:].mean()


class PRISMDistance(Metric):
    """``update(source, pred, target, pose)``; returns a dict to exercise ``{prefix}{name}/{key}`` tags."""

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("dist_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.calls: list[tuple] = []
        self.inputs: list[tuple[Tensor, Tensor, Tensor, Tensor]] = []

    def update(self, source: Tensor, pred: Tensor, target: Tensor, pose: Tensor) -> None:
        self.calls.append((tuple(source.shape), tuple(pred.shape), tuple(target.shape), tuple(pose.shape)))
        self.inputs.append((source.clone(), pred.clone(), target.clone(), pose.clone()))
        self.dist_sum += (pred - target).abs().mean(dim=(1, 2, 3)).sum().double()
        self.count += pred.shape[0]

    def compute(self) -> dict[str, Tensor]:
        mean = (self.dist_sum / self.count).float()
        return {"mean": mean, "nested": {"double": 2 * mean}}


class MeanRender(Metric):
    """A reference-free metric with ``update(render, target)`` that ignores the target: mean render value."""

    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor | None = None) -> None:
        self.total += preds.mean(dim=(1, 2, 3)).sum().double()
        self.count += preds.shape[0]

    def compute(self) -> Tensor:
        return (self.total / self.count).float()


register_metric(
    "standin_osim", None, metric_class=OSIM, update="paired", pictures=("objects",),
    overlay="scenemetrics.osim:low_objects_picture",
)  # fmt: skip
_CROP = [Option("center_crop", bool, False, "crop the views to their centred square")]
register_metric(
    "standin_prism_mmd", None, metric_class=PRISMMMD, inputs=("cameras",), update="prism_mmd", square=True,
    options=_CROP, pose="scenemetrics.prism:camera_pose",
)  # fmt: skip
register_metric(
    "standin_prism", None, metric_class=PRISMDistance, inputs=("gt", "cameras"), update="prism_distance", square=True,
    options=_CROP, pose="scenemetrics.prism:camera_pose",
)  # fmt: skip
