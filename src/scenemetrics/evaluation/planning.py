"""Planning a run: the units to evaluate and, per unit, the metrics not yet done with the same options and inputs.

A (unit, metric) is done when its latest record in the commit log is ``ok`` or ``skipped`` with the same metric
fingerprint (:meth:`~scenemetrics.registry.MetricAdapter.fingerprint`) and the same input files (name, size,
modification time); ``force`` recomputes everything.
"""

from __future__ import annotations

import datetime as _dt
import secrets
from dataclasses import dataclass
from pathlib import Path

from scenemetrics.evaluation.config import EvalConfig
from scenemetrics.evaluation.layout import Unit, discover_units
from scenemetrics.evaluation.records import RESULTS_FILE, latest_cells, read_records
from scenemetrics.registry import MetricAdapter

__all__ = ["Plan", "make_plan"]


@dataclass
class Plan:
    """One run's plan: its id, the units, per unit the metrics to compute, fingerprints and input stamps."""

    run: str
    units: list[Unit]
    todo: dict[str, list[str]]
    fingerprints: dict[str, str]
    inputs: dict[str, str]
    entries: list[str]
    unavailable: dict[str, str]


def _unit_inputs(unit: Unit) -> str:
    try:
        return unit.fingerprint()
    except OSError:
        return "unreadable"


def _units(config: EvalConfig, out: Path) -> list[Unit]:
    """The ``root`` tree's units, then the NerfBaselines predictions' (one key may come from one source only)."""
    import functools

    from scenemetrics.evaluation.predictions import read_predictions, unpack_predictions

    if config.root is None and not config.predictions and not config.nerfstudio_configs:
        raise ValueError("nothing to evaluate: give a results tree, NerfBaselines predictions or a nerfstudio run")
    units = []
    if config.root is not None:
        units = discover_units(
            config.root,
            layout=config.layout,
            data=config.data,
            split=config.split,
            methods=config.methods,
            scenes=config.scenes,
            exclude=[out],
            train_views=config.train_views,
            step=config.step,
            unpack=functools.partial(unpack_predictions, cache=out / "inputs", max_bytes=config.max_archive_bytes),
        )
    extra = []
    if config.predictions:
        extra = read_predictions(
            config.predictions,
            out / "inputs",
            data=config.data,
            train_views=config.train_views,
            max_archive_bytes=config.max_archive_bytes,
        )
    if config.nerfstudio_configs:
        from scenemetrics.evaluation.nerfstudio_source import render_nerfstudio

        split = config.split or "test"
        extra += [
            render_nerfstudio(c, out / "inputs", split=split, quiet=config.quiet) for c in config.nerfstudio_configs
        ]
    if extra:
        clash = sorted({u.key for u in units} & {u.key for u in extra})
        if clash:
            raise ValueError(f"{', '.join(clash)} come both from the results tree and from predictions")
        units = sorted([*units, *extra], key=lambda u: (u.method, u.scene))
    return units


def make_plan(config: EvalConfig, entries: list[MetricAdapter], unavailable: dict[str, str]) -> Plan:
    """Discover the units and decide what each still needs (rank 0 only; the plan is broadcast)."""
    out = Path(config.out)
    units = _units(config, out)
    fingerprints = {e.name: e.fingerprint(config.options.get(e.name, {}), config.random_weights) for e in entries}
    cells = latest_cells(read_records(out / RESULTS_FILE))
    todo, inputs = {}, {}
    for unit in units:
        inputs[unit.key] = _unit_inputs(unit)
        done = cells.get((unit.method, unit.scene), {})
        todo[unit.key] = [
            e.name
            for e in entries
            if config.force
            or not (
                done.get(e.name, {}).get("status") in ("ok", "skipped")
                and done[e.name].get("config") == fingerprints[e.name]
                and done[e.name].get("inputs") == inputs[unit.key]
            )
        ]
    run = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    return Plan(run, units, todo, fingerprints, inputs, [e.name for e in entries], unavailable)
