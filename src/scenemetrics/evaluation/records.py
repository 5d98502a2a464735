"""The commit log ``<out>/results.jsonl``: reading, appending (flush + fsync), and committing a unit.

One JSON line per evaluated unit is the commit point: the unit's metric states (``states/<method>/<scene>/<run>.pt``)
and map thumbnails are written first (each atomically), then the line is appended. A run killed at any point loses
only the units not yet committed. Method and scene names come from folders and files (``info.json``), so on disk each
is passed through :func:`scenemetrics.fileio.safe_name` (:func:`unit_folder`); the record keeps the real names next
to the paths it wrote.

Example:
    >>> import tempfile, pathlib
    >>> from scenemetrics.evaluation.records import RECORD_FORMAT, append_record, read_records
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
    >>> append_record(log, {"format": RECORD_FORMAT, "method": "m", "scene": "s", "metrics": {}})
    >>> [r["method"] for r in read_records(log)]
    ['m']
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenemetrics.fileio import atomic_write_bytes, safe_name
from scenemetrics.jsonio import dumps, restore

if TYPE_CHECKING:
    from scenemetrics.evaluation.planning import Plan

__all__ = [
    "RECORD_FORMAT",
    "RESULTS_FILE",
    "append_record",
    "atomic_torch_save",
    "commit_unit",
    "latest_cells",
    "read_records",
    "unit_folder",
]

RESULTS_FILE = "results.jsonl"
"""The commit log inside ``--out``: one JSON object per line, one line per evaluated unit (per run)."""

RECORD_FORMAT = "scenemetrics.eval.record/1"


def read_records(path: str | os.PathLike, record_format: str = RECORD_FORMAT) -> list[dict]:
    """The records of a commit log, in file order; lines that are not complete JSON records are ignored.

    A line cut short by a killed process (no newline, invalid JSON) is the only expected kind; others get a
    ``UserWarning``. ``record_format`` is the ``format`` the records carry (``scenemetrics eval``'s by default; the
    sweep's log has its own).
    """
    p = Path(path)
    if not p.is_file():
        return []
    records, bad = [], 0
    raw = p.read_bytes()
    lines = raw.split(b"\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if i != len(lines) - 1:  # an unterminated last line is a write cut short: expected after a kill
                bad += 1
            continue
        if isinstance(rec, dict) and rec.get("format") == record_format:
            records.append(restore(rec))
        else:
            bad += 1
    if bad:
        warnings.warn(f"{p}: ignored {bad} line(s) that are not {record_format} records", UserWarning, stacklevel=2)
    return records


def append_record(path: str | os.PathLike, record: Mapping[str, Any]) -> None:
    """Append one record as one line, then flush and fsync (the commit point of a unit)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = dumps(record, indent=None) + "\n"  # standard JSON: non-finite numbers as null + "non_finite"
    with open(p, "ab+") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":  # a previous write was cut short: start on a fresh line
                line = "\n" + line
        f.write(line.encode())
        f.flush()
        os.fsync(f.fileno())


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` into memory, then :func:`scenemetrics.fileio.atomic_write_bytes`."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def latest_cells(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, dict]]:
    """``(method, scene) -> metric -> cell`` of the newest record holding that metric (records in file order).

    Each cell is the record's metric entry plus the record's ``run``, ``inputs``, ``states``, ``thumbs``, ``panels``,
    ``objects`` and ``sources``.
    """
    cells: dict[tuple[str, str], dict[str, dict]] = {}
    for rec in records:
        key = (str(rec.get("method")), str(rec.get("scene")))
        for name, cell in (rec.get("metrics") or {}).items():
            merged = dict(cell)
            merged["run"] = rec.get("run")
            merged["inputs"] = rec.get("inputs")
            merged["states"] = rec.get("states")
            merged["thumbs"] = (rec.get("thumbs") or {}).get(name, [])
            merged["panels"] = (rec.get("panels") or {}).get(name, [])
            merged["objects"] = (rec.get("objects") or {}).get(name)
            merged["sources"] = rec.get("sources")
            cells.setdefault(key, {})[name] = merged
    return cells


def unit_folder(method: str, scene: str) -> str:
    """``"<method>/<scene>"`` as folders: each name through :func:`~scenemetrics.fileio.safe_name`.

    Example:
        >>> unit_folder("zipnerf", "mipnerf360-garden"), unit_folder("../..", "x")
        ('zipnerf/mipnerf360-garden', '_._..-0cfd1c96/x')
    """
    return f"{safe_name(str(method))}/{safe_name(str(scene))}"


def commit_unit(out: Path, payload: Mapping[str, Any], plan: Plan, rank: int) -> dict:
    """Write a unit's states, thumbnails and panels, then append its record (the commit); returns the record.

    ``rank`` is the process that evaluated the unit (0 for a unit whose views several processes shared; the record's
    ``processes`` says how many).

    The files go to ``states/<method>/<scene>/``, ``report/thumbs/<method>/<scene>/`` and
    ``report/panels/<method>/<scene>/`` with the names made safe
    (:func:`unit_folder`); the record holds the real method and scene names and these relative paths.
    """
    from scenemetrics import viz

    method, scene = payload["method"], payload["scene"]
    key = f"{method}/{scene}"
    folder = unit_folder(method, scene)
    states_rel = None
    if payload["states"]:
        states_rel = f"states/{folder}/{plan.run}.pt"
        atomic_torch_save(dict(payload["states"]), out / states_rel)
    thumbs: dict[str, list[dict]] = {}
    for name, items in payload["thumbs"].items():
        for i, (view, image) in enumerate(items):
            rel = f"report/thumbs/{folder}/{safe_name(name)}-{i:03d}.png"
            viz.save_png(image, out / rel)
            thumbs.setdefault(name, []).append({"view": view, "file": rel})
    panels: dict[str, list[dict]] = {}
    for name, items in (payload.get("panels") or {}).items():
        for i, (view, image, value) in enumerate(items):
            rel = f"report/panels/{folder}/{safe_name(name)}-{i:03d}.png"
            viz.save_png(image, out / rel)
            panels.setdefault(name, []).append({"view": view, "file": rel, "value": float(value)})
    cells = {}
    for name, cell in payload["metrics"].items():
        c = dict(cell)
        c["config"] = plan.fingerprints[name]
        cells[name] = c
    record = {
        "format": RECORD_FORMAT,
        "run": plan.run,
        "method": method,
        "scene": scene,
        "folder": folder,
        "layout": payload["layout"],
        "inputs": plan.inputs[key],
        "num_views": payload["num_views"],
        "rank": rank,
        "processes": payload.get("processes", 1),
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": payload["seconds"],
        "metrics": cells,
        "states": states_rel,
        "thumbs": thumbs,
        "panels": panels,
        "objects": payload["objects"],
        "warnings": payload["warnings"],
        "sources": payload.get("sources", {}),
    }
    append_record(out / RESULTS_FILE, record)
    return record
