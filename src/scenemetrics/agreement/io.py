"""Reading metric scores, human scores, pairwise comparisons and maps (CSV / JSON / NPZ).

* **Scores** CSV (one row per item and metric): ``item,metric,score[,group][,higher_is_better]``; or JSON
  ``{"metrics": {name: {"higher_is_better": bool, "scores": {item: score}, "groups": {item: group}}}}``.
* **Human scores** CSV: ``item,human`` (already averaged) or ``item,rater,rating[,criterion]`` (the mean opinion
  score is the mean per item, per criterion); an optional ``group`` column keys the scores by ``(group, item)``.
  JSON: ``{"human": {item: score}}``.
* **Comparisons** CSV: ``rater,house,a,b,y[,aspect]`` with ``y`` in {1, 0, 0.5} or {``a``, ``b``, ``equal``};
  raters, houses and items are mapped to integer ids in first-seen order. JSON: a list of such row objects. NPZ:
  an array ``comparisons`` of ``(K, 3)``, ``(K, 4)`` or ``(K, 5)`` numeric rows.
* **Maps** NPZ: ``pred`` ``(N, h, w)`` (or ``pred_0``, ``pred_1``, ... of any sizes), ``human`` ``(N, H, W)`` or
  ``human_masks`` ``(N, R, H, W)``, optional ``group`` ``(N,)`` strings. Read with ``allow_pickle=False``.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.agreement import read_scores
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.csv")
    >>> _ = open(path, "w").write("item,metric,score,higher_is_better\\na,psnr,30,true\\nb,psnr,25,true\\n")
    >>> s = read_scores(path)["psnr"]
    >>> s.items, s.scores.tolist(), s.higher_is_better
    (['a', 'b'], [30.0, 25.0], True)
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.agreement._checks import comparison_table
from scenemetrics.fileio import load_npz

__all__ = ["Comparisons", "MetricScores", "read_comparisons", "read_human", "read_maps", "read_scores"]


class MetricScores(NamedTuple):
    """One metric's scores as read from a file.

    Attributes:
        higher_is_better: the metric's orientation (``None`` when the file does not say).
        items: item name per row.
        scores: float64 score per row.
        groups: group label per row (``None`` where the file has no group).
    """

    higher_is_better: bool | None
    items: list[str]
    scores: np.ndarray
    groups: list[str | None]


class Comparisons(NamedTuple):
    """Pairwise judgments as read from a file.

    Attributes:
        table: ``(K, 5)`` float64 rows ``(rater, house, i, j, y)`` with integer ids.
        raters: rater name per id.
        houses: house (scene, object) name per id.
        items: item name per id.
        aspects: aspect per row (``None`` without an ``aspect`` column).
    """

    table: np.ndarray
    raters: list[str]
    houses: list[str]
    items: list[str]
    aspects: list[str] | None = None

    @classmethod
    def from_table(cls, table: np.ndarray) -> Comparisons:
        """Wrap a ``(K, 5)`` table whose ids have no names (each id is named by its number)."""

        def names(col: np.ndarray) -> list[str]:
            return [str(k) for k in range(int(col.max()) + 1)]

        return cls(table, names(table[:, 0]), names(table[:, 1]), names(table[:, 2:4]))


def _suffix(path: str | os.PathLike) -> str:
    return Path(path).suffix.lower()


def _csv_rows(path: str | os.PathLike, required: tuple[str, ...], what: str) -> tuple[list[dict[str, str]], set[str]]:
    # utf-8-sig: spreadsheets start their CSV files with a byte-order mark, which must not become part of a name
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        try:
            cols = {c.strip() for c in (reader.fieldnames or [])}
            rows = [{(k or "").strip(): (v or "").strip() for k, v in r.items()} for r in reader]
        except csv.Error as err:
            raise ValueError(f"{os.fspath(path)}, line {reader.line_num}: not a CSV table ({err}).") from None
    missing = [c for c in required if c not in cols]
    if missing:
        raise ValueError(f"{os.fspath(path)}: the {what} CSV needs the columns {list(required)}; missing {missing}.")
    return rows, cols


def _read_json(path: str | os.PathLike) -> Any:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f)
    except (json.JSONDecodeError, RecursionError) as err:  # RecursionError: nesting deeper than Python's stack
        raise ValueError(f"{os.fspath(path)}: not valid JSON ({type(err).__name__}: {err}).") from None


def _float(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a number.") from None


def _bool(text: Any, where: str) -> bool | None:
    if isinstance(text, bool):
        return text
    t = str(text).strip().casefold()
    if t == "":
        return None
    if t in ("true", "1", "yes", "higher"):
        return True
    if t in ("false", "0", "no", "lower"):
        return False
    raise ValueError(f"{where}: higher_is_better must be true or false, got {text!r}.")


def read_scores(path: str | os.PathLike) -> dict[str, MetricScores]:
    """Metric scores from a CSV or JSON file (see the module doc), ``{metric: MetricScores}`` in file order.

    Raises:
        ValueError: a required column is missing, a score is not a number, a metric has conflicting
            ``higher_is_better`` values, or an ``(item, metric[, group])`` row appears twice.
    """
    p = os.fspath(path)
    if _suffix(path) == ".json":
        data = _read_json(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("metrics"), Mapping):
            raise ValueError(f'{p}: expected {{"metrics": {{name: {{"higher_is_better": ..., "scores": {{...}}}}}}}}.')
        out = {}
        for name, entry in data["metrics"].items():
            if not isinstance(entry, Mapping) or not isinstance(entry.get("scores"), Mapping):
                raise ValueError(f'{p}: metrics[{name!r}] needs a "scores" mapping item -> score.')
            items = [str(k) for k in entry["scores"]]
            vals = np.array([_float(str(v), f"{p}: metrics[{name!r}][{k!r}]") for k, v in entry["scores"].items()])
            groups_map = entry.get("groups") or {}
            out[str(name)] = MetricScores(
                _bool(entry.get("higher_is_better", ""), f"{p}: metrics[{name!r}]"),
                items,
                vals,
                [str(groups_map[i]) if i in groups_map else None for i in items],
            )
        return out
    rows, cols = _csv_rows(path, ("item", "metric", "score"), "scores")
    acc: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str, str | None]] = set()
    for n, r in enumerate(rows, start=2):
        where = f"{p}, line {n}"
        metric, item = r["metric"], r["item"]
        group = r.get("group") or None if "group" in cols else None
        key = (item, metric, group)
        if key in seen:
            raise ValueError(
                f"{where}: duplicate row for item {item!r}, metric {metric!r}"
                + (f", group {group!r}" if group is not None else "")
                + "; give each (item, metric, group) once."
            )
        seen.add(key)
        m = acc.setdefault(metric, {"hib": None, "items": [], "scores": [], "groups": []})
        if "higher_is_better" in cols:
            hib = _bool(r["higher_is_better"], where)
            if hib is not None:
                if m["hib"] is not None and m["hib"] != hib:
                    raise ValueError(f"{where}: metric {metric!r} has conflicting higher_is_better values.")
                m["hib"] = hib
        m["items"].append(item)
        m["scores"].append(_float(r["score"], where))
        m["groups"].append(group)
    return {k: MetricScores(v["hib"], v["items"], np.asarray(v["scores"], dtype=np.float64), v["groups"])
            for k, v in acc.items()}  # fmt: skip


def read_human(path: str | os.PathLike, *, criterion: str | None = None) -> dict[Any, float]:
    """Human (mean opinion) scores per item from a CSV or JSON file (see the module doc).

    Args:
        path: the file.
        criterion: with a ``criterion`` column, which one to use (default: ``"overall"`` when present, else the
            only one; several without ``"overall"`` is an error).

    Returns:
        ``{item: score}``, or ``{(group, item): score}`` when the file has a ``group`` column.
    """
    p = os.fspath(path)
    if _suffix(path) == ".json":
        data = _read_json(path)
        data = data.get("human", data) if isinstance(data, Mapping) else data
        if not isinstance(data, Mapping):
            raise ValueError(f'{p}: expected {{"human": {{item: score}}}}.')
        return {str(k): _float(str(v), f"{p}: human[{k!r}]") for k, v in data.items()}
    with open(path, newline="", encoding="utf-8-sig") as f:
        try:
            header = {c.strip() for c in (csv.DictReader(f).fieldnames or [])}
        except csv.Error as err:
            raise ValueError(f"{p}: not a CSV table ({err}).") from None
    if "human" in header:
        rows, cols = _csv_rows(path, ("item", "human"), "human-score")
        value_col = "human"
    else:
        rows, cols = _csv_rows(path, ("item", "rater", "rating"), "human-score (item,human or item,rater,rating)")
        value_col = "rating"
    if "criterion" in cols:
        crits = list(dict.fromkeys(r["criterion"] for r in rows))
        if criterion is None:
            if "overall" in crits:
                criterion = "overall"
            elif len(crits) == 1:
                criterion = crits[0]
            else:
                raise ValueError(f"{p}: several criteria {crits} and none is 'overall'; choose one with criterion=.")
        if criterion not in crits:
            raise ValueError(f"{p}: criterion {criterion!r} not in the file's criteria {crits}.")
        rows = [r for r in rows if r["criterion"] == criterion]
    elif criterion is not None:
        raise ValueError(f"{p}: the file has no criterion column, but criterion={criterion!r} was given.")
    sums: dict[Any, list[float]] = {}
    for n, r in enumerate(rows, start=2):
        key = (r["group"], r["item"]) if "group" in cols else r["item"]
        if value_col == "human" and key in sums:
            raise ValueError(f"{p}, line {n}: duplicate human score for {key!r}.")
        sums.setdefault(key, []).append(_float(r[value_col], f"{p}, line {n}"))
    return {k: float(np.mean(v)) for k, v in sums.items()}


_Y_WORDS = {"a": 1.0, "b": 0.0, "equal": 0.5, "tie": 0.5}


def read_comparisons(path: str | os.PathLike) -> Comparisons:
    """Pairwise judgments from a CSV, JSON or NPZ file (see the module doc).

    Raises:
        ValueError: a required column is missing, ``y`` is not 1/0/0.5/a/b/equal, or a row compares an item with
            itself.
    """
    p = os.fspath(path)
    if _suffix(path) == ".npz":
        z = load_npz(path)
        if "comparisons" not in z:
            raise ValueError(f"{p}: the NPZ needs an array 'comparisons' of rows (rater, house, i, j, y).")
        return Comparisons.from_table(comparison_table(z["comparisons"], f"{p}: comparisons"))
    if _suffix(path) == ".json":
        data = _read_json(path)
        if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
            raise ValueError(f'{p}: expected a list of {{"rater", "house", "a", "b", "y"}} objects.')
        rows = [{str(k): str(v) for k, v in r.items()} for r in data]
        cols = set().union(*(r.keys() for r in rows)) if rows else set()
        missing = [c for c in ("rater", "house", "a", "b", "y") if any(c not in r for r in rows) or not rows]
        if missing:
            raise ValueError(f"{p}: every comparison needs the fields rater, house, a, b, y; missing {missing}.")
    else:
        rows, cols = _csv_rows(path, ("rater", "house", "a", "b", "y"), "comparisons")
    ids: dict[str, dict[str, int]] = {"rater": {}, "house": {}, "item": {}}

    def code(kind: str, name: str) -> int:
        return ids[kind].setdefault(name, len(ids[kind]))

    table = np.empty((len(rows), 5))
    for n, r in enumerate(rows):
        where = f"{p}, row {n + 1}"
        if r["a"] == r["b"]:
            raise ValueError(f"{where}: item {r['a']!r} is compared with itself.")
        y_text = r["y"].strip().casefold()
        y = _Y_WORDS.get(y_text)
        if y is None:
            y = _float(r["y"], where)
            if y not in (0.0, 0.5, 1.0):
                raise ValueError(f"{where}: y must be 1, 0, 0.5 or a, b, equal; got {r['y']!r}.")
        table[n] = (code("rater", r["rater"]), code("house", r["house"]), code("item", r["a"]),
                    code("item", r["b"]), y)  # fmt: skip
    if not len(rows):
        raise ValueError(f"{p}: no comparison in the file.")
    aspects = [r.get("aspect", "") for r in rows] if "aspect" in cols else None
    return Comparisons(table, list(ids["rater"]), list(ids["house"]), list(ids["item"]), aspects)


def read_maps(path: str | os.PathLike) -> tuple[list[np.ndarray], np.ndarray, list[str] | None]:
    """Metric maps and human maps from an NPZ file (see the module doc).

    Returns:
        ``(pred_maps, human_maps, groups)``: a list of 2-D metric maps, the ``(N, H, W)`` human maps (the mean of
        ``human_masks`` when only masks are stored), and the group labels or ``None``.
    """
    from scenemetrics.agreement.maps import human_map_from_masks

    p = os.fspath(path)
    z = load_npz(path)
    keys = set(z)
    if "pred" in keys:
        pred = list(np.asarray(z["pred"], dtype=np.float64))
    else:
        numbered = sorted((k for k in keys if k.startswith("pred_") and k[5:].isdigit()), key=lambda k: int(k[5:]))
        if not numbered:
            raise ValueError(f"{p}: the NPZ needs 'pred' (N, h, w) or 'pred_0', 'pred_1', ... maps.")
        pred = [np.asarray(z[k], dtype=np.float64) for k in numbered]
    if "human" in keys:
        human = np.asarray(z["human"], dtype=np.float64)
    elif "human_masks" in keys:
        human = human_map_from_masks(z["human_masks"])
    else:
        raise ValueError(f"{p}: the NPZ needs 'human' (N, H, W) maps or 'human_masks' (N, R, H, W).")
    groups = [str(g) for g in z["group"].reshape(-1)] if "group" in keys else None
    return pred, human, groups
