"""One unit shared by several processes: the parts each evaluated, merged into the unit's payload (rank 0).

Units are dealt whole to the processes while there are at least as many as processes; the units left over (all of
them when there are fewer units than processes, e.g. the one folder of ``--predictions``) are each split over every
process: process ``r`` of ``n`` evaluates the ``r``-th contiguous block of the unit's views
(:func:`~scenemetrics.evaluation.unit.view_block`) and returns a part — its metric states, not values. Rank 0
combines the parts' states with torchmetrics' own synchronisation (:func:`~scenemetrics.evaluation.states.combined`,
each part playing a rank, states in view order) and computes each metric once on the whole: the value a
multi-process torchmetrics ``compute()`` gives, equal to one process's to float rounding (partial sums are added in
another order). Per-view values, thumbnails (the unit's first views), objects and warnings are concatenated in view
order; of the parts' worst views the worst ``--panels`` are kept.

Example:
    >>> from scenemetrics.evaluation.shards import split_units
    >>> split_units(5, 2), split_units(1, 4), split_units(3, 1)
    (4, 0, 3)
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from scenemetrics.evaluation.states import combined, scalars
from scenemetrics.evaluation.unit import UnitMetrics, error_text, higher_is_better, input_warnings
from scenemetrics.registry import MetricAdapter

__all__ = ["merge_parts", "split_units"]


def split_units(num_units: int, world_size: int) -> int:
    """How many of ``num_units`` pending units are dealt whole to ``world_size`` processes (full rounds); the units
    after them are each split over every process."""
    return num_units if world_size <= 1 else num_units - num_units % world_size


def _merged_cell(name: str, cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The parts' cells of one metric as one: the first error, else the skip, else ``ok`` with every per-view value
    (in view order) and the seconds of all parts."""
    for cell in cells:
        if cell.get("status") == "error":
            return dict(cell)
    for cell in cells:
        if cell.get("status") != "ok":
            return dict(cell)
    out: dict[str, Any] = {"status": "ok"}
    per_view = {k: v for cell in cells for k, v in (cell.get("per_view") or {}).items()}
    if per_view:
        out["per_view"] = per_view
    out["seconds"] = round(sum(float(cell.get("seconds", 0.0)) for cell in cells), 4)
    return out


def _compute(
    name: str, adapter: MetricAdapter, metrics: UnitMetrics, states: Sequence[Mapping[str, Any]], cell: dict[str, Any]
) -> tuple[dict[str, Any], Any, list[str]]:
    """``compute()`` of one metric over its parts' states: ``(cell with values, combined states, warnings)``."""
    import warnings

    t0 = time.perf_counter()
    messages: list[str] = []
    unit_states = None
    try:
        metric = metrics.get(adapter)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with combined(metric, states, name) as unit_states:
                values = scalars(type(metric).compute(metric), name)
                class_scores = getattr(metric, "class_scores", None)
                extra = dict(class_scores()) if callable(class_scores) else None
        messages = [f"{name}: {w.message}" for w in caught]
        out = {"status": "ok", "values": values, **{k: v for k, v in cell.items() if k != "status"}}
        if extra:
            out["class_scores"] = extra
    except Exception as err:
        out = {"status": "error", "error": error_text(err), "traceback": traceback.format_exc()[-4000:]}
        unit_states = None
    out["seconds"] = round(float(cell.get("seconds", 0.0)) + time.perf_counter() - t0, 4)
    return out, unit_states, messages


def _worst(panels: list[tuple[str, Any, float]], hib: bool | None, keep: int) -> list[tuple[str, Any, float]]:
    """The ``keep`` worst of the parts' panels (lowest first for a similarity, highest first otherwise)."""
    return sorted(panels, key=lambda p: p[2], reverse=hib is not True)[:keep]


def merge_parts(
    parts: Sequence[Mapping[str, Any]],
    adapters: Mapping[str, MetricAdapter],
    metrics: UnitMetrics,
    warnings_of_unit: Sequence[str],
    max_panels: int,
) -> dict[str, Any]:
    """The payload of a unit from the parts its processes evaluated (in the order of their blocks of views).

    Args:
        parts: the parts (:func:`~scenemetrics.evaluation.unit.evaluate_unit` with ``part=``), blocks in view order.
        adapters: metric -> adapter, for every metric of the unit.
        metrics: this process's metric instances (each metric's ``compute()`` runs on one of them).
        warnings_of_unit: the unit's own warnings (from its layout), stated once.
        max_panels: worst-view panels kept per metric.
    """
    t0 = time.perf_counter()
    first = parts[0]
    cells: dict[str, Any] = {}
    states: dict[str, Any] = {}
    messages: list[str] = []
    for p in parts:
        messages.extend(m for m in p["warnings"] if m not in messages)
    for name in first["metrics"]:
        cell = _merged_cell(name, [p["metrics"][name] for p in parts])
        if cell.get("status") == "ok":
            cell, unit_states, notes = _compute(name, adapters[name], metrics, [p["states"][name] for p in parts], cell)
            if unit_states is not None:
                states[name] = unit_states
            messages.extend(m for m in notes if m not in messages)
        cells[name] = cell
    ok = {name for name, cell in cells.items() if cell.get("status") == "ok"}
    thumbs = {name: [t for p in parts for t in p["thumbs"].get(name, [])] for name in ok}
    objects = {name: [o for p in parts for o in p["objects"].get(name, [])] for name in ok}
    panels = {}
    for name in ok:
        found = [x for p in parts for x in p["panels"].get(name, [])]
        if found:
            panels[name] = _worst(found, higher_is_better(adapters[name], metrics.built(name)), max_panels)
    leaks = [tuple(pair) for p in parts for pair in p["part"]["leaks"]]
    messages.extend(m for m in input_warnings(any(p["part"]["alpha"] for p in parts), leaks) if m not in messages)
    messages.extend(m for m in warnings_of_unit if m not in messages)
    return {
        "method": first["method"],
        "scene": first["scene"],
        "layout": first["layout"],
        "num_views": first["num_views"],
        "metrics": cells,
        "states": states,
        "thumbs": {k: v for k, v in thumbs.items() if v},
        "panels": panels,
        "objects": {k: v for k, v in objects.items() if v},
        "warnings": messages,
        "seconds": round(max(float(p["seconds"]) for p in parts) + time.perf_counter() - t0, 4),
        "sources": first["sources"],
        "processes": len(parts),
    }
