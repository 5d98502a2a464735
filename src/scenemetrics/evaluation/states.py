"""Metric values and states: flattening a ``compute()`` result to columns, CPU copies of states, pooling units.

Example:
    >>> import torch
    >>> from scenemetrics.evaluation.states import scalars
    >>> scalars({"a": torch.tensor(1.0), "b": 2}, "m")
    {'m/a': 1.0, 'm/b': 2.0}
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["combined", "cpu_states", "pooled_values", "scalars"]


def scalars(value: Any, tag: str) -> dict[str, float]:
    """A compute()/forward() result as ``{column: float}`` (the callbacks' rule: scalar, mapping, or ``.score``)."""
    from torch import Tensor

    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for key, sub in value.items():
            out.update(scalars(sub, f"{tag}/{key}"))
        return out
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{tag}: compute() returned a tensor of shape {tuple(value.shape)}, not a scalar")
        return {tag: float(value.detach().reshape(()).cpu())}
    if isinstance(value, (bool, int, float)):
        return {tag: float(value)}
    score = getattr(value, "score", None)
    if score is not None:
        return scalars(score, tag)
    raise ValueError(f"{tag}: compute() returned {type(value).__name__}; expected a scalar, a mapping or `.score`")


def cpu_states(metric: Any) -> dict[str, Any]:
    from torch import Tensor

    out: dict[str, Any] = {}
    for attr, value in metric.metric_state.items():
        if isinstance(value, Tensor):
            out[attr] = value.detach().cpu()
        elif isinstance(value, list):
            out[attr] = [v.detach().cpu() for v in value]
    return out


@contextlib.contextmanager
def combined(metric: Any, unit_states: Sequence[Mapping[str, Any]], tag: str) -> Iterator[dict[str, Any]]:
    """``metric`` holding the states of several units (or of several processes' parts of one unit) combined by
    torchmetrics' own sync, each playing a rank; yields the combined states (CPU copies, list states as lists).

    ``metric.sync(dist_sync_fn=...)`` runs torchmetrics' DDP synchronisation with a gather function that returns the
    given states instead of the processes': each state is then reduced with its ``dist_reduce_fx`` (sum, mean, max,
    min, cat, or ``None``: the list of values), exactly as after a multi-process ``compute()``; list states are
    concatenated in the given order. Inside, ``type(metric).compute(metric)`` is the value of the whole (the
    instance's wrapped ``compute`` would try to sync again). The metric is reset before and after.

    Raises:
        ValueError: no states, or states that lack one of the metric's states.
    """
    import torch

    if not unit_states:
        raise ValueError(f"{tag}: no unit states to pool")
    metric.reset()
    gathered: dict[int, list] = {}
    lists = set()
    synced = False
    try:
        for attr, default in metric.metric_state.items():
            values = []
            for states in unit_states:
                if attr not in states:
                    raise ValueError(f"{tag}: stored states lack {attr!r}; rerun with --force")
                values.append(states[attr])
            if isinstance(default, list):
                # as torchmetrics does before gathering: one rank's list is concatenated into one tensor
                parts = [torch.cat([t.reshape(-1) if t.ndim == 0 else t for t in v]) for v in values if v]
                placeholder = torch.empty(0, device=metric.device)
                setattr(metric, attr, [placeholder])
                gathered[id(placeholder)] = [t.to(metric.device) for t in parts]
                lists.add(attr)
            else:
                placeholder = values[0].to(metric.device).clone()
                setattr(metric, attr, placeholder)
                gathered[id(placeholder)] = [v.to(metric.device) for v in values]

        def gather(tensor: Any, group: Any = None) -> list:
            return gathered[id(tensor)]

        metric.sync(dist_sync_fn=gather, should_sync=True, distributed_available=lambda: True)
        synced = True
        states = cpu_states(metric)
        for attr in lists:  # a reduced list state is one tensor (cat) or a list (None): stored as a list
            states[attr] = [states[attr]] if isinstance(states[attr], torch.Tensor) else states[attr]
        yield states
    finally:
        if synced:
            metric.unsync()  # back to the placeholders (list states must be lists again for reset())
        metric.reset()


def pooled_values(metric: Any, unit_states: Sequence[Mapping[str, Any]], tag: str) -> dict[str, float]:
    """``compute()`` over the states of several units combined by torchmetrics' own sync, each unit playing a rank
    (:func:`combined`).

    Raises:
        ValueError: no unit, or a unit's states lack one of the metric's states.
    """
    with combined(metric, unit_states, tag):
        return scalars(type(metric).compute(metric), tag)
