"""Tables and the HTML report of ``scenemetrics eval`` (written by rank 0 from the commit log).

Files in ``--out``:

* ``results.csv``: one row per (method, scene), one column per metric value (empty when not available).
* ``leaderboard.csv``: one row per method: per column the mean over scenes (``<col>``), the number of scenes it
  averages (``<col>_n``) and the pooled value over all the method's views (``<col>_pooled``).
* ``results.json``: everything (metrics and their settings, leaderboard, per-scene values and per-view values,
  problems, unavailable metrics, whether the weights were random).
* ``report/index.html``: leaderboard, per-scene table, per-object violin plots (OSIM), map thumbnails (PuzzleSim,
  the full-reference maps), render | ground truth | map panels of each method's worst views (``ssim_map``,
  ``lpips_map``, ``abs_error``), problems; PNGs next to it (matplotlib for the plots, ``[viz]`` extra).

Example:
    >>> format_value(23.456789), format_value(0.123456), format_value(float("nan"))
    ('23.46', '0.1235', 'NaN')
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import html
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from scenemetrics.evaluation.config import RANDOM_BANNER, EvalConfig, EvalSummary
from scenemetrics.evaluation.records import RESULTS_FILE, latest_cells, read_records, unit_folder
from scenemetrics.evaluation.states import pooled_values
from scenemetrics.fileio import atomic_write_bytes, safe_name
from scenemetrics.jsonio import restore
from scenemetrics.registry import get_metric

__all__ = ["RESULTS_FORMAT", "finalize", "format_value", "write_html"]

RESULTS_FORMAT = "scenemetrics.eval.results/1"


def format_value(value: float | None) -> str:
    """A score for a table: 2 decimals from 10 up, 4 below; ``NaN``/``inf`` spelled out; ``None`` as an em dash."""
    if value is None:
        return "\u2014"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.2f}" if abs(value) >= 10 else f"{value:.4f}"


def _mean(values: Sequence[float]) -> float | None:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else None


def _columns(names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: list[str] = []
    for name in names:
        keys = {k for row in rows for k in row["values"] if k == name or k.startswith(name + "/")}
        cols.extend(([name] if name in keys else []) + sorted(k for k in keys if k != name))
        if not keys:
            cols.append(name)
    return cols


def _metric_of(column: str) -> str:
    return column.split("/", 1)[0]


def _pooled(
    out: Path, plan: Any, metrics: Any, rows: Sequence[Mapping[str, Any]], previous: Mapping[str, Any]
) -> tuple[dict[str, dict[str, float]], dict[str, Any], list[str]]:
    import torch

    pooled: dict[str, dict[str, float]] = {}
    cache: dict[str, Any] = {}
    notes: list[str] = []
    loaded: dict[str, Any] = {}
    by_method: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    for method, method_rows in by_method.items():
        pooled[method] = {}
        for name in plan.entries:
            sources = sorted(
                (row["scene"], row["cells"][name]["run"], row["cells"][name]["states"])
                for row in method_rows
                if row["cells"].get(name, {}).get("status") == "ok" and row["cells"][name].get("states")
            )
            if not sources:
                continue
            key = hashlib.sha256(json.dumps([plan.fingerprints[name], sources]).encode()).hexdigest()[:16]
            old = previous.get(method, {}).get(name)
            if isinstance(old, Mapping) and old.get("key") == key:
                values = dict(old["values"])
            else:
                try:
                    unit_states = []
                    for _, _, rel in sources:
                        if rel not in loaded:
                            loaded[rel] = torch.load(_inside(out, rel), map_location="cpu", weights_only=True)
                        unit_states.append(loaded[rel][name])
                    values = pooled_values(metrics.get(get_metric(name)), unit_states, name)
                except Exception as err:
                    notes.append(f"{method} {name}: pooled value not computed ({type(err).__name__}: {err})")
                    continue
            cache.setdefault(method, {})[name] = {"key": key, "values": values}
            pooled[method].update(values)
    return pooled, cache, notes


def _inside(out: Path, rel: str) -> Path:
    """``out / rel`` where ``rel`` (read from the commit log) stays inside ``out``; else ``ValueError``."""
    path = (out / rel).resolve()
    if not path.is_relative_to(out.resolve()):
        raise ValueError(f"{RESULTS_FILE} names the file {rel!r}, which lies outside {out}; refused")
    return path


def _higher_is_better(name: str, metrics: Any) -> bool | None:
    entry = get_metric(name)
    if entry.higher_is_better is not None:
        return entry.higher_is_better
    value = getattr(metrics.built(name), "higher_is_better", None)
    return value if isinstance(value, bool) else None


def finalize(config: EvalConfig, plan: Any, metrics: Any, summary: EvalSummary) -> EvalSummary:
    """Write ``results.csv``, ``leaderboard.csv``, ``results.json`` and the HTML report; fill ``summary``."""
    out = Path(config.out)
    cells = latest_cells(read_records(out / RESULTS_FILE))
    rows = []
    for unit in plan.units:
        unit_cells = {n: c for n, c in cells.get((unit.method, unit.scene), {}).items() if n in plan.entries}
        values: dict[str, float] = {}
        for name in plan.entries:
            cell = unit_cells.get(name)
            if cell is not None and cell.get("status") == "ok":
                values.update(cell.get("values", {}))
        sources = next((c["sources"] for c in unit_cells.values() if c.get("sources")), None)
        rows.append(
            {
                "method": unit.method,
                "scene": unit.scene,
                "layout": unit.layout,
                "views": len(unit.views),
                "values": values,
                "cells": unit_cells,
                "sources": sources if sources is not None else unit.sources(),
            }
        )
    columns = _columns(plan.entries, rows)
    methods = sorted({r["method"] for r in rows})
    scenes = sorted({r["scene"] for r in rows})
    previous: Mapping[str, Any] = {}
    results_path = out / "results.json"
    if results_path.is_file():
        try:
            previous = restore(json.loads(results_path.read_text())).get("pooled_cache", {})
        except (OSError, json.JSONDecodeError):
            previous = {}
    pooled, pooled_cache, notes = _pooled(out, plan, metrics, rows, previous)
    hib = {name: _higher_is_better(name, metrics) for name in plan.entries}

    leaderboard = []
    for method in methods:
        method_rows = [r for r in rows if r["method"] == method]
        mean, count = {}, {}
        for col in columns:
            vals = [r["values"][col] for r in method_rows if col in r["values"]]
            mean[col] = _mean(vals)
            count[col] = len([v for v in vals if not math.isnan(v)])
        leaderboard.append(
            {
                "method": method,
                "scenes": len(method_rows),
                "mean": mean,
                "count": count,
                "pooled": pooled.get(method, {}),
            }
        )

    problems = []
    for r in rows:
        for name in plan.entries:
            cell = r["cells"].get(name)
            if cell is None:
                problems.append(
                    {
                        "method": r["method"],
                        "scene": r["scene"],
                        "metric": name,
                        "status": "missing",
                        "message": "no result recorded",
                    }
                )
            elif cell.get("status") in ("error", "skipped"):
                problems.append(
                    {
                        "method": r["method"],
                        "scene": r["scene"],
                        "metric": name,
                        "status": cell["status"],
                        "message": cell.get("error") or cell.get("reason", ""),
                    }
                )
    summary.failures = [
        f"{p['method']}/{p['scene']} {p['metric']}: {p['message']}" for p in problems if p["status"] == "error"
    ]

    # results.csv
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["method", "scene", *columns])
    for r in rows:
        w.writerow([r["method"], r["scene"], *[_csv(r["values"].get(c)) for c in columns]])
    atomic_write_bytes(out / "results.csv", buf.getvalue().encode())
    # leaderboard.csv
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["method", "scenes", *[x for c in columns for x in (c, f"{c}_n", f"{c}_pooled")]])
    for row in leaderboard:
        w.writerow(
            [row["method"], row["scenes"]]
            + [x for c in columns for x in (_csv(row["mean"][c]), row["count"][c], _csv(row["pooled"].get(c)))]
        )
    atomic_write_bytes(out / "leaderboard.csv", buf.getvalue().encode())

    metric_info = {}
    for name in plan.entries:
        entry = get_metric(name)
        metric_info[name] = {
            "description": entry.description,
            "higher_is_better": hib[name],
            "inputs": sorted(entry.inputs),
            "options": {k: v for k, v in config.options.get(name, {}).items() if v is not None},
            "config": plan.fingerprints[name],
        }
    doc = {
        "format": RESULTS_FORMAT,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "root": os.fspath(Path(config.root).resolve()) if config.root is not None else None,
        "predictions": [os.fspath(Path(p).resolve()) for p in config.predictions],
        "random_weights": bool(config.random_weights),
        "protocol": config.protocol,
        "metrics": metric_info,
        "unavailable": dict(plan.unavailable),
        "columns": columns,
        "leaderboard": leaderboard,
        "scenes": [
            {
                "method": r["method"],
                "scene": r["scene"],
                "folder": unit_folder(r["method"], r["scene"]),
                "layout": r["layout"],
                "views": r["views"],
                "sources": r["sources"],
                "values": r["values"],
                "status": {n: c.get("status") for n, c in r["cells"].items()},
                "per_view": {n: c["per_view"] for n, c in r["cells"].items() if c.get("per_view")},
                "class_scores": {n: c["class_scores"] for n, c in r["cells"].items() if c.get("class_scores")},
            }
            for r in rows
        ],
        "problems": problems,
        "notes": notes,
        "pooled_cache": pooled_cache,
    }
    from scenemetrics.jsonio import write_json

    write_json(results_path, doc)
    summary.files.update(
        {"results.csv": out / "results.csv", "leaderboard.csv": out / "leaderboard.csv", "results.json": results_path}
    )
    if config.report:
        summary.files["report"] = write_html(out, doc, rows, methods, scenes, columns, hib, config.max_panels)
    return summary


def _csv(value: float | None) -> str:
    return "" if value is None else repr(float(value))


# ---- HTML ----------------------------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
h1 { margin-bottom: 0.2em; } .meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0 1.6em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child, td.name { text-align: left; }
thead th { background: #f2f2f2; }
td.best { font-weight: bold; background: #e8f5e9; }
td.skipped { color: #888; } td.error { color: #b00020; font-weight: bold; } td.missing { color: #aaa; }
.banner { padding: 0.8em 1em; margin: 1em 0; border-radius: 4px; }
.banner.random { background: #fff3cd; border: 2px solid #d39e00; font-weight: bold; }
.banner.info { background: #eef4fb; border: 1px solid #9bbbe0; }
figure { display: inline-block; margin: 0.3em; text-align: center; }
figcaption { font-size: 0.8em; color: #555; }
img { image-rendering: auto; border: 1px solid #ddd; }
.panels img { max-width: 100%; height: auto; image-rendering: pixelated; }
.note { color: #666; font-size: 0.9em; }
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _best(values: Mapping[str, float | None], higher: bool | None) -> set[str]:
    if higher is None:
        return set()
    # infinities (the PSNR of a render identical to its ground truth) are shown as inf but never highlighted
    finite = {k: v for k, v in values.items() if v is not None and math.isfinite(v)}
    if len(finite) < 2:
        return set()
    target = max(finite.values()) if higher else min(finite.values())
    return {k for k, v in finite.items() if v == target}


def _arrow(higher: bool | None) -> str:
    return "" if higher is None else (" \u2191" if higher else " \u2193")


def _png_size(path: Path) -> tuple[int, int] | None:
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.size
    except OSError:
        return None


def _img(report_dir: Path, rel: str, alt: str) -> str:
    if not (report_dir / rel).resolve().is_relative_to(report_dir.resolve()):  # a tampered commit log
        return f"<span>{_esc(alt)}: not shown (its file {_esc(rel)} lies outside the report folder)</span>"
    size = _png_size(report_dir / rel)
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    return f'<img src="{quote(rel)}" alt="{_esc(alt)}"{dims} loading="lazy">'


def _violin(path: Path, groups: Sequence[tuple[str, Sequence[float]]], title: str, ylabel: str) -> None:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.0, 1.2 * len(groups) + 1.5), 3.4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    rng = np.random.default_rng(0)
    positions = list(range(1, len(groups) + 1))
    spread = [(p, list(vals)) for p, (_, vals) in zip(positions, groups, strict=True) if len(set(vals)) >= 2]
    if spread:
        parts = ax.violinplot([v for _, v in spread], positions=[p for p, _ in spread], showmedians=True, widths=0.8)
        for body in parts["bodies"]:
            body.set_alpha(0.35)
    for p, (_, vals) in zip(positions, groups, strict=True):
        if vals:
            ax.scatter(p + rng.uniform(-0.12, 0.12, len(vals)), vals, s=8, color="#1f4e79", alpha=0.7, zorder=3)
    ax.set_xticks(positions, [f"{name}\n(n={len(vals)})" for name, vals in groups], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    lo = min([min(v) for _, v in groups if v] + [0.0])
    ax.set_ylim(min(lo, 0.0) - 0.02, 1.02)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")


def _violin_section(
    report_dir: Path, rows: Sequence[Mapping[str, Any]], methods: Sequence[str], scenes: Sequence[str], name: str
) -> str:
    objs = {(r["method"], r["scene"]): (r["cells"].get(name) or {}).get("objects") for r in rows}
    if not any(objs.values()):
        return ""
    parts = [f"<h2>{_esc(name)}: per-object scores</h2>"]
    parts.append(
        '<p class="note">Each point is one object detected on a ground-truth view; its value is the object\'s '
        "feature similarity r (eq. 1 of the OSIM paper) between render and ground truth. Violins need at least two "
        "distinct values.</p>"
    )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return (
            "".join(parts) + '<p class="note">matplotlib is not installed (pip install "scenemetrics[viz]"): '
            "no violin plots.</p>"
        )
    all_groups = [(m, [o["r"] for s in scenes for o in (objs.get((m, s)) or [])]) for m in methods]
    rel = f"{safe_name(name)}_violin_all.png"
    _violin(report_dir / rel, all_groups, f"{name}: per-object r, all scenes", "per-object r")
    parts.append(f'<div class="violins">{_img(report_dir, rel, f"{name} per-object violin plot, all scenes")}')
    for i, scene in enumerate(scenes):
        groups = [(m, [o["r"] for o in (objs.get((m, scene)) or [])]) for m in methods if (m, scene) in objs]
        if not any(v for _, v in groups):
            continue
        rel = f"{safe_name(name)}_violin_{i:03d}.png"
        _violin(report_dir / rel, groups, f"{name}: per-object r, scene {scene}", "per-object r")
        parts.append(_img(report_dir, rel, f"{name} per-object violin plot, scene {scene}"))
    parts.append("</div>")
    return "".join(parts)


def _thumbs_section(
    report_dir: Path, rows: Sequence[Mapping[str, Any]], methods: Sequence[str], scenes: Sequence[str], name: str
) -> str:
    by_unit = {(r["method"], r["scene"]): r for r in rows}
    if not any((r["cells"].get(name) or {}).get("thumbs") for r in rows):
        return ""
    parts = [f"<h2>{_esc(name)}: maps</h2>"]
    parts.append(
        '<p class="note">Render (left) and its map (right; warm = worse: reversed jet for similarities such as '
        "PuzzleSim, jet for errors). Each map's colours span its own 2nd-98th percentile, so compare maps by the "
        "values on their colour bars. The value under each pair is the view's score.</p>"
    )
    for scene in scenes:
        parts.append(f'<h3>{_esc(scene)}</h3><table class="thumbs"><tbody>')
        for method in methods:
            row = by_unit.get((method, scene))
            cell = (row["cells"].get(name) or {}) if row else {}
            thumbs = cell.get("thumbs") or []
            if not thumbs:
                continue
            per_view = cell.get("per_view") or {}
            figs = []
            for t in thumbs:
                rel = t["file"].removeprefix("report/")
                value = (per_view.get(t["view"]) or {}).get(name)
                caption = f"{t['view']}" + (f" \u2014 {format_value(value)}" if value is not None else "")
                alt = f"{name} map of {method}/{scene} view {t['view']}"
                figs.append(f"<figure>{_img(report_dir, rel, alt)}<figcaption>{_esc(caption)}</figcaption></figure>")
            parts.append(f'<tr><td class="name">{_esc(method)}</td><td class="name">{"".join(figs)}</td></tr>')
        parts.append("</tbody></table>")
    return "".join(parts)


def _panels_section(
    report_dir: Path,
    rows: Sequence[Mapping[str, Any]],
    methods: Sequence[str],
    name: str,
    higher: bool | None,
    count: int,
) -> str:
    """Each method's ``count`` worst views for metric ``name``: render | ground truth | map, at full resolution."""
    found = {
        method: [
            (p, r["scene"])
            for r in rows
            if r["method"] == method
            for p in ((r["cells"].get(name) or {}).get("panels") or [])
            if (r["cells"].get(name) or {}).get("status") == "ok"
        ]
        for method in methods
    }
    if not any(found.values()) or count == 0:
        return ""
    worst = "lowest" if higher is True else "highest"
    parts = [f"<h2>{_esc(name)}: worst views</h2>"]
    parts.append(
        f'<p class="note">For each method, the {count} view(s) with the {worst} {_esc(name)} over its scenes: the '
        "render, its ground truth and the map, each at the view's own resolution (the page may shrink them; open "
        "the image for its pixels). Warm = worse; each map's colours span its 2nd-98th percentile widened to a "
        "perfect render's value, given on its colour bar.</p>"
    )
    for method in methods:
        items = sorted(found[method], key=lambda pair: pair[0]["value"], reverse=higher is not True)[:count]
        if not items:
            continue
        figs = []
        for panel, scene in items:
            rel = panel["file"].removeprefix("report/")
            alt = f"{name} panel of {method}/{scene} view {panel['view']}"
            caption = f"{scene} / {panel['view']} \u2014 {format_value(panel['value'])}"
            figs.append(
                f'<figure><a href="{quote(rel)}">{_img(report_dir, rel, alt)}</a>'
                f"<figcaption>{_esc(caption)}</figcaption></figure>"
            )
        parts.append(f'<h3>{_esc(method)}</h3><div class="panels">{"".join(figs)}</div>')
    return "".join(parts)


def _cell_html(row: Mapping[str, Any], col: str, best: bool) -> str:
    name = _metric_of(col)
    cell = row["cells"].get(name)
    if cell is None:
        return '<td class="missing" title="not evaluated">\u2014</td>'
    status = cell.get("status")
    if status == "skipped":
        return f'<td class="skipped" title="{_esc(cell.get("reason", ""))}">skipped</td>'
    if status == "error":
        return f'<td class="error" title="{_esc(cell.get("error", ""))}">error</td>'
    value = row["values"].get(col)
    return f'<td class="{"best" if best else "value"}">{_esc(format_value(value))}</td>'


def write_html(
    out: Path,
    doc: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    methods: Sequence[str],
    scenes: Sequence[str],
    columns: Sequence[str],
    hib: Mapping[str, bool | None],
    max_panels: int = 2,
) -> Path:
    """Write ``<out>/report/index.html`` (and its PNGs) from the finalized results; returns its path."""
    report_dir = out / "report"
    report_dir.mkdir(parents=True, exist_ok=True)
    p: list[str] = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>scenemetrics evaluation</title><style>{_CSS}</style></head><body>",
        "<h1>scenemetrics evaluation</h1>",
        f'<p class="meta">{_esc(doc["root"])} \u2014 {len(methods)} method(s), {len(scenes)} scene(s), '
        f"{len(rows)} unit(s) \u2014 generated {_esc(doc['generated'])}</p>",
    ]
    if doc["random_weights"]:
        p.append(f'<div class="banner random" id="random-weights">{_esc(RANDOM_BANNER)}</div>')
    if doc["unavailable"]:
        items = "".join(f"<li><b>{_esc(n)}</b>: {_esc(why)}</li>" for n, why in doc["unavailable"].items())
        p.append(f'<div class="banner info" id="unavailable">Metrics not evaluated:<ul>{items}</ul></div>')

    header = "".join(f"<th>{_esc(c)}{_arrow(hib.get(_metric_of(c)))}</th>" for c in columns)
    # leaderboard: mean over scenes; best among methods that cover every scene
    p.append("<h2>Leaderboard</h2>")
    p.append(
        '<p class="note">Mean over scenes. A value marked <sup>n/N</sup> averages only the n scenes (of N) where the '
        "metric has a value; the best value of each column is highlighted among methods that cover every scene. "
        "An infinite value (e.g. the PSNR of renders identical to their ground truth) is shown as inf and is never "
        "highlighted: the best finite value is.</p>"
    )
    p.append(f'<table id="leaderboard"><thead><tr><th>method</th><th>scenes</th>{header}</tr></thead><tbody>')
    lb = {row["method"]: row for row in doc["leaderboard"]}
    best_cols = {}
    for col in columns:
        complete = {m: lb[m]["mean"][col] for m in methods if lb[m]["count"][col] == lb[m]["scenes"]}
        best_cols[col] = _best(complete, hib.get(_metric_of(col)))
    for method in methods:
        row = lb[method]
        tds = []
        for col in columns:
            n, total = row["count"][col], row["scenes"]
            mark = f"<sup>{n}/{total}</sup>" if n != total else ""
            cls = "best" if method in best_cols[col] else "value"
            tds.append(f'<td class="{cls}">{_esc(format_value(row["mean"][col]))}{mark}</td>')
        p.append(
            f'<tr data-method="{_esc(method)}"><td class="name">{_esc(method)}</td><td>{row["scenes"]}</td>'
            f"{''.join(tds)}</tr>"
        )
    p.append("</tbody></table>")
    if any(row["pooled"] for row in doc["leaderboard"]):
        p.append("<h3>Pooled over all views of a method</h3>")
        p.append(
            '<p class="note">The metric computed once over the union of the method\'s scenes (its per-scene states '
            "combined as torchmetrics combines processes), e.g. OSIM pooled per class over the whole dataset.</p>"
        )
        p.append(f'<table id="pooled"><thead><tr><th>method</th>{header}</tr></thead><tbody>')
        for method in methods:
            tds = "".join(f"<td>{_esc(format_value(lb[method]['pooled'].get(c)))}</td>" for c in columns)
            p.append(f'<tr data-method="{_esc(method)}"><td class="name">{_esc(method)}</td>{tds}</tr>')
        p.append("</tbody></table>")

    p.append("<h2>Per scene</h2>")
    p.append(f'<table id="per-scene"><thead><tr><th>scene</th><th>method</th>{header}</tr></thead><tbody>')
    for scene in scenes:
        scene_rows = [r for r in rows if r["scene"] == scene]
        best = {
            col: _best({r["method"]: r["values"].get(col) for r in scene_rows}, hib.get(_metric_of(col)))
            for col in columns
        }
        for r in scene_rows:
            tds = "".join(_cell_html(r, col, r["method"] in best[col]) for col in columns)
            p.append(
                f'<tr data-method="{_esc(r["method"])}" data-scene="{_esc(scene)}"><td class="name">{_esc(scene)}</td>'
                f'<td class="name">{_esc(r["method"])}</td>{tds}</tr>'
            )
    p.append("</tbody></table>")

    for name in doc["metrics"]:
        p.append(_violin_section(report_dir, rows, methods, scenes, name))
    for name in doc["metrics"]:
        p.append(_thumbs_section(report_dir, rows, methods, scenes, name))
    for name in doc["metrics"]:
        p.append(_panels_section(report_dir, rows, methods, name, hib.get(name), max_panels))

    if doc["problems"]:
        p.append("<h2>Problems</h2>")
        p.append(
            '<table id="problems"><thead><tr><th>method</th><th>scene</th><th>metric</th><th>status</th>'
            "<th>message</th></tr></thead><tbody>"
        )
        for prob in doc["problems"]:
            p.append(
                f'<tr><td class="name">{_esc(prob["method"])}</td><td class="name">{_esc(prob["scene"])}</td>'
                f'<td class="name">{_esc(prob["metric"])}</td><td class="name">{_esc(prob["status"])}</td>'
                f'<td class="name">{_esc(prob["message"])}</td></tr>'
            )
        p.append("</tbody></table>")
    for note in doc["notes"]:
        p.append(f'<p class="note">{_esc(note)}</p>')
    p.append("<h2>Metrics</h2><ul>")
    for name, info in doc["metrics"].items():
        opts = ", ".join(f"{k}={v}" for k, v in info["options"].items())
        p.append(
            f"<li><b>{_esc(name)}</b>{_arrow(info['higher_is_better'])}: {_esc(info['description'])}"
            + (f' <span class="note">({_esc(opts)})</span>' if opts else "")
            + "</li>"
        )
    p.append("</ul></body></html>\n")
    path = report_dir / "index.html"
    atomic_write_bytes(path, "\n".join(x for x in p if x).encode("utf-8"))
    return path
