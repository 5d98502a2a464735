"""Metrics whose behaviour under a degradation is known by construction, for the sweep tests (a plugin file).

* ``sweep_mse_up``: the MSE of each view against its original, declared *higher is better* although it grows with
  every degradation: a sweep must find it never monotone (in its declared direction) and a positive rho.
* ``sweep_scene_mse``: the same MSE pooled over a scene (``per_view=False``): one row per scene.
* ``sweep_constant``: always 0.5: rho is undefined (NaN) and no row gets worse.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric

from scenemetrics.registry import register_metric


class SweepMSE(Metric):
    higher_is_better = True  # wrong on purpose (see the module)
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        self.total += ((preds.double() - target.double()) ** 2).mean(dim=(1, 2, 3)).sum()
        self.count += preds.shape[0]

    def compute(self) -> torch.Tensor:
        return self.total / self.count


class SweepConstant(SweepMSE):
    def compute(self) -> torch.Tensor:
        return torch.tensor(0.5)


register_metric("sweep_mse_up", SweepMSE, higher_is_better=True, update="paired", metric_class=SweepMSE)
register_metric("sweep_scene_mse", SweepMSE, higher_is_better=False, update="paired", per_view=False)
register_metric("sweep_constant", SweepConstant, higher_is_better=True, update="paired", metric_class=SweepConstant)
