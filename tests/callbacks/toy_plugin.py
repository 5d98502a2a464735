"""A third-party metric plugin, as a user would write one: two toy metrics declared to the scenemetrics registry.

* ``toy_refs`` — fed by references: ``set_references(training views)`` once, then ``update(render)``; the score is
  the mean absolute difference between each render's mean colour and the references' mean colour; a ``last_maps``
  picture (per-pixel distance to that colour).
* ``toy_paired`` — declared ``paired`` although its class also has a ``set_references`` method (for something
  else): only the registry's declaration, not duck typing, feeds it ``update(render, target)``. Score: mean absolute
  error of render and target.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric

from scenemetrics.registry import register_metric


class ToyReferenceColour(Metric):
    full_state_update = False
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.colour: torch.Tensor | None = None
        self.last_maps: torch.Tensor | None = None

    def set_references(self, references) -> None:
        refs = references if isinstance(references, torch.Tensor) else torch.stack(list(references))
        self.colour = refs.double().mean(dim=(0, 2, 3))

    def update(self, render: torch.Tensor) -> None:
        colour = self.colour.to(render.device)
        self.total += (render.double().mean(dim=(2, 3)) - colour).abs().mean(dim=1).sum()
        self.count += render.shape[0]
        self.last_maps = (render.double() - colour[:, None, None]).abs().mean(dim=1).float()

    def compute(self) -> torch.Tensor:
        return (self.total / self.count).float()


class ToyPairedError(Metric):
    full_state_update = False
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")

    def set_references(self, references) -> None:  # unrelated to how it is fed: the registry says "paired"
        raise AssertionError("toy_paired is declared paired; set_references must not be called")

    def update(self, render: torch.Tensor, target: torch.Tensor) -> None:
        self.total += (render.double() - target.double()).abs().mean(dim=(1, 2, 3)).sum()
        self.count += render.shape[0]

    def compute(self) -> torch.Tensor:
        return (self.total / self.count).float()


register_metric(
    "toy_refs",
    lambda cfg: ToyReferenceColour(),
    inputs=("train",),
    update="references",
    metric_class=ToyReferenceColour,
    pictures=("map",),
    higher_is_better=False,
    description="toy: |render mean colour - references' mean colour|",
)
register_metric(
    "toy_paired",
    lambda cfg: ToyPairedError(),
    inputs=("gt",),
    update="paired",
    metric_class=ToyPairedError,
    higher_is_better=False,
    description="toy: mean absolute error of render and target",
)
