"""The human-alignment numbers the papers of this library published, and a comparison of a table with them.

:data:`PAPER_TARGETS` is read from the package data file ``targets.json``; each entry names its source (paper,
table). Keys: ``osim_recon``, ``osim_gen``, ``osim_layers`` (variants ``recon`` and ``gen``), ``osim_table4`` (the
model-level metric means and MOS, used to recompute Table 2's Spearman values), ``wireframe_table1``,
``prism_table3``, ``prism_viewmatch``, ``prism_ranking``, ``puzzlesim_table1``, ``puzzlesim_table2``.

Example:
    >>> from scenemetrics.agreement import PAPER_TARGETS
    >>> PAPER_TARGETS["osim_recon"]["values"]["OSIM"]["srcc"]
    0.82
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = ["PAPER_TARGETS", "compare_to_paper", "paper_keys"]


def _freeze(obj: Any) -> Any:
    if isinstance(obj, dict):
        return MappingProxyType({k: _freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(_freeze(v) for v in obj)
    return obj


def _load() -> Mapping[str, Any]:
    text = resources.files("scenemetrics.agreement").joinpath("targets.json").read_text(encoding="utf-8")
    return _freeze(json.loads(text))


PAPER_TARGETS: Mapping[str, Any] = _load()
"""Read-only nested mapping of the papers' numbers (see the module doc)."""


def paper_keys() -> list[str]:
    """Every valid ``paper`` argument of :func:`compare_to_paper` (variants as ``key/variant``).

    Example:
        >>> "osim_layers/recon" in paper_keys()
        True
    """
    keys = []
    for key, entry in PAPER_TARGETS.items():
        if "variants" in entry:
            keys.extend(f"{key}/{v}" for v in entry["variants"])
        if "values" in entry:
            keys.append(key)
    return keys


def _entry(paper: str) -> Mapping[str, Any]:
    key, _, variant = paper.partition("/")
    entry = PAPER_TARGETS.get(key)
    if entry is not None and variant:
        entry = entry.get("variants", {}).get(variant)
    if entry is None or "values" not in entry:
        raise ValueError(f"paper must be one of {paper_keys()}, got {paper!r}.")
    return entry


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", name.casefold())


def _lookup(cell: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(cell, Mapping) or part not in cell:
            return None
        cell = cell[part]
    return cell


def compare_to_paper(table: Mapping[str, Any], paper: str) -> dict[str, Any]:
    """Put a table's numbers next to the paper's: ``{"paper": value, "ours": value, "diff": ours - paper}`` per cell.

    Metric names are matched exactly, else ignoring case and punctuation (``"clip_sim"`` finds ``"CLIP-sim"``).
    Statistic keys may be dotted paths into a metric's entry (``"per_group.bicycle.plcc"``,
    ``"vote_correlation.VP"``). Cells the table lacks get ``"ours": None``.

    Args:
        table: an :func:`~scenemetrics.agreement.agreement_table` result (``{"metrics": {name: {...}}}``).
        paper: a key of :data:`PAPER_TARGETS`, or ``key/variant`` (e.g. ``"osim_layers/recon"``).

    Returns:
        ``{"key", "source", "cells": {metric: {statistic: {"paper", "ours", "diff"}}}, "matched": n}``.

    Example:
        >>> t = {"metrics": {"osim": {"srcc": 0.8}}}
        >>> c = compare_to_paper(t, "osim_recon")["cells"]["OSIM"]["srcc"]
        >>> c["paper"], c["ours"], round(c["diff"], 3)
        (0.82, 0.8, -0.02)
    """
    entry = _entry(paper)
    ours_metrics = table.get("metrics", {}) if isinstance(table, Mapping) else {}
    by_norm = {_norm(str(k)): k for k in ours_metrics}
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    matched = 0
    for metric, stats in entry["values"].items():
        name = metric if metric in ours_metrics else by_norm.get(_norm(metric))
        mine = ours_metrics.get(name) if name is not None else None
        row = {}
        for stat, value in stats.items():
            ours = _lookup(mine, stat) if mine is not None else None
            ok = isinstance(ours, (int, float)) and not isinstance(ours, bool) and math.isfinite(ours)
            matched += ok
            row[stat] = {"paper": value, "ours": ours if ok else None, "diff": (ours - value) if ok else None}
        cells[metric] = row
    return {"key": paper, "source": entry.get("source", PAPER_TARGETS[paper.partition("/")[0]].get("source")),
            "cells": cells, "matched": matched}  # fmt: skip
