"""Controlled-degradation sweeps of any registered metric (``scenemetrics agreement sweep``).

Each paper of this library checks that its metric gets worse as a view is degraded on purpose (PRISM: Gaussian blur,
hue shift, Gaussian noise, salt-and-pepper at three levels each; OSIM: objects blurred one by one). A sweep runs that
check on your views for any metric of the registry (:mod:`scenemetrics.registry`): every view is degraded at levels
1..L of each degradation (:func:`scenemetrics.agreement.degrade`; level 0 is the view itself), each metric scores it,
and :func:`scenemetrics.agreement.sweep_statistics` says whether the score gets monotonically worse.

**What a metric compares** (from its adapter, the same dispatch as ``scenemetrics eval``): a full-reference metric
(``inputs`` holding ``gt``) compares each degraded view with its original; a metric fed by references (PuzzleSim)
scores the degraded view against the scene's training views (``--train-views``); a reference-free metric scores the
degraded view. Metrics that need cameras (PRISM) are left out: the sweep has no source views and poses.

**Items.** A metric that reports a value per view (``per_view`` adapters: PSNR, SSIM, LPIPS, PuzzleSim) gives one
row of scores per view; a scene-level metric (OSIM and its patch baselines, distribution metrics) is computed over
all the views of a scene at each level and gives one row per scene. ``spearman`` is Spearman's rho of score against
level over all rows and levels pooled, sign as computed (a higher-is-better metric that degrades gives a negative
value); ``monotone_fraction`` is the fraction of rows whose score gets strictly worse at every level.

**Scenes.** ``--views DIR`` holding images directly is one scene (its images, searched recursively, keyed by their
relative path without extension); otherwise every sub-folder holding images is a scene. ``--train-views DIR`` holds
the training views of a single scene, or one sub-folder per scene (``DIR/<scene>/``).

**Seeds.** The random degradations (noise, salt-and-pepper) of view ``v`` of scene ``s`` draw from the seed
``sha256(f"{seed}/{s}/{v}")`` (its first 7 bytes): the same numbers on every run, machine and device, whatever the
order the views are processed in, and a different draw per view.

**Resuming.** Like ``scenemetrics eval``, the work is cut into units (one scene at one level of one degradation; level
0 is one shared unit) and each finished unit is committed as one line of ``<out>/sweep.jsonl``. A rerun skips the
(unit, metric) pairs whose latest record is ``ok`` with the same metric options (the registry's fingerprint), the
same degradation parameter (and seed, for noise and salt-and-pepper) and the same input files (name, size,
modification time); ``force`` recomputes. ``sweep.json``, ``sweep.csv`` and ``sweep.png`` are then written from the
log.

Example:
    >>> import os, tempfile
    >>> from scenemetrics import synthetic, viz
    >>> from scenemetrics.evaluation.sweep import SweepConfig, run_sweep
    >>> root = tempfile.mkdtemp()
    >>> scene = synthetic.make_scene(num_train=1, num_novel=2, size=(32, 32), seed=0)
    >>> for i, v in enumerate(scene.novel_targets):
    ...     _ = viz.save_png(v, os.path.join(root, "views", f"v{i}.png"))
    >>> out = run_sweep(SweepConfig(os.path.join(root, "views"), os.path.join(root, "out"), metrics=("psnr",),
    ...                             degradations=("noise",), quiet=True))
    >>> out.table["psnr"]["noise"]["monotone_fraction"], out.table["psnr"]["noise"]["spearman"] < 0
    (1.0, True)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import sys
import tempfile
import traceback
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.layout import list_image_files
from scenemetrics.evaluation.records import append_record, read_records
from scenemetrics.evaluation.states import scalars
from scenemetrics.registry import MetricAdapter, MetricConfig, UnusableViewError, ViewItem

__all__ = [
    "SWEEP_LOG",
    "SWEEP_RECORD",
    "SweepConfig",
    "SweepResult",
    "SweepScene",
    "discover_scenes",
    "format_table",
    "run_sweep",
    "sweep_table",
    "view_seed",
]

SWEEP_LOG = "sweep.jsonl"
"""The commit log inside ``out``: one JSON line per finished unit (scene, degradation, level)."""

SWEEP_RECORD = "scenemetrics.sweep.record/1"
SWEEP_FORMAT = "scenemetrics.sweep/1"
_BASE = "none"  # the degradation name of level 0, shared by every degradation
_RANDOM = ("noise", "saltpepper")  # the degradations that draw from the seed (a new seed redoes only these)


@dataclass
class SweepConfig:
    """What a sweep is asked to do (the ``scenemetrics agreement sweep`` flags, one to one).

    Attributes:
        views: folder of views (one scene) or of scene sub-folders.
        out: output folder (``sweep.jsonl``, ``sweep.json``, ``sweep.csv``, ``sweep.png``).
        metrics: registered metric names (``("all",)``: every metric that can run without cameras).
        degradations: names from :data:`scenemetrics.agreement.DEGRADATIONS`.
        levels: levels 1..``levels`` of each degradation (at most 3, the papers' count).
        seed: seed of the random degradations (see the module).
        train_views: training views for metrics fed by references (one scene, or ``<dir>/<scene>/``).
        options: per-metric options ``{"lpips": {"net": "vgg"}}`` (checked against each metric's schema).
        plugins: modules or ``.py`` files that register more metrics.
        random_weights: deterministic random networks everywhere (smoke tests; uncalibrated scores).
        device: ``cpu``, ``cuda``, ``cuda:1`` ... (``None``: CUDA when available).
        force: recompute everything.
        plots: also write ``sweep.png`` (needs matplotlib).
        quiet: no progress bars.
        background: composite RGBA views onto ``"white"`` or ``"black"`` (``None``: drop alpha).
    """

    views: str | os.PathLike
    out: str | os.PathLike
    metrics: Sequence[str] = ("psnr", "ssim", "lpips")
    degradations: Sequence[str] = ("blur", "hue", "noise", "saltpepper")
    levels: int = 3
    seed: int = 0
    train_views: str | os.PathLike | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plugins: Sequence[str] = ()
    random_weights: bool = False
    device: str | None = None
    force: bool = False
    plots: bool = False
    quiet: bool = False
    background: str | None = None


@dataclass(frozen=True)
class SweepScene:
    """One scene of a sweep: its views (name -> file) and training views."""

    name: str
    views: Mapping[str, Path]
    train: tuple[Path, ...] = ()

    def fingerprint(self) -> str:
        """A short hash of the scene's input files (relative name, size, modification time)."""
        h = hashlib.sha256()
        for role, files in (("view", [self.views[k] for k in sorted(self.views)]), ("train", list(self.train))):
            for f in files:
                st = f.stat()
                h.update(f"{role}\0{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()[:16]


@dataclass
class SweepResult:
    """What :func:`run_sweep` returns.

    Attributes:
        out: the output folder.
        table: ``metric -> degradation -> {"spearman", "monotone_fraction", "n", "n_omitted", "unit", "mean"}``.
        units_run: units computed in this run; units_done: units already in the log.
        unavailable: metric -> why it could not run.
        errors: ``"scene/degradation/level metric: message"`` of the (unit, metric) pairs that failed.
        files: name -> path of what was written.
    """

    out: Path
    table: dict[str, dict[str, dict[str, Any]]]
    units_run: int = 0
    units_done: int = 0
    unavailable: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    directions: dict[str, bool | None] = field(default_factory=dict)


def view_seed(seed: int, scene: str, view: str) -> int:
    """The seed of the random degradations of one view: the first 7 bytes of ``sha256(f"{seed}/{scene}/{view}")``.

    Example:
        >>> view_seed(0, "garden", "v0") == view_seed(0, "garden", "v0") != view_seed(1, "garden", "v0")
        True
    """
    return int.from_bytes(hashlib.sha256(f"{int(seed)}/{scene}/{view}".encode()).digest()[:7], "big")


def _has_images(folder: Path) -> bool:
    from scenemetrics.image import IMAGE_EXTENSIONS

    return any(p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS for p in folder.iterdir())


def discover_scenes(views: str | os.PathLike, train_views: str | os.PathLike | None = None) -> list[SweepScene]:
    """The scenes of ``views`` (see the module) with their training views.

    Raises:
        ValueError: ``views`` is not a folder or holds no image; a scene without training views when
            ``train_views`` is a folder of scene sub-folders that lacks it.
    """
    root = Path(views)
    if not root.is_dir():
        raise ValueError(f"--views {os.fspath(views)!r} is not a folder")
    if _has_images(root):
        groups = {root.name or "scene": list_image_files(root)}
    else:
        subs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))
        groups = {d.name: list_image_files(d) for d in subs}
        groups = {k: v for k, v in groups.items() if v}
    if not groups:
        raise ValueError(f"--views {os.fspath(views)!r} holds no image (directly or in scene sub-folders)")
    train_root = None if train_views is None else Path(train_views)
    if train_root is not None and not train_root.is_dir():
        raise ValueError(f"--train-views {os.fspath(train_views)!r} is not a folder")
    scenes = []
    for name, files in groups.items():
        train: list[Path] = []
        if train_root is not None:
            folder = train_root / name if (train_root / name).is_dir() else train_root
            if len(groups) > 1 and folder == train_root and not _has_images(train_root):
                raise ValueError(f"--train-views {os.fspath(train_root)!r} has no folder for scene {name!r}")
            train = [files_[1] for files_ in sorted(list_image_files(folder).items())]
            if not train:
                raise ValueError(f"--train-views {os.fspath(folder)!r} holds no image for scene {name!r}")
        scenes.append(SweepScene(name, dict(sorted(files.items())), tuple(train)))
    return scenes


# ---- running --------------------------------------------------------------------------------------------------------


def _unavailable_here(entry: MetricAdapter, scenes: Sequence[SweepScene]) -> str | None:
    if "cameras" in entry.inputs:
        return "needs cameras (a source view and pose per view); a sweep degrades views without any"
    if "train" in entry.inputs and not all(s.train for s in scenes):
        return "needs training views as references: pass --train-views DIR"
    return None


def _main_value(values: Mapping[str, float], name: str) -> float:
    """The metric's number: its own column, or the only one, or the first (a mapping result)."""
    if name in values:
        return values[name]
    return next(iter(values.values()))


class _Metrics:
    """The sweep's metric instances, built once on first use (a failed build is remembered)."""

    def __init__(self, config: SweepConfig, device: Any, work_dir: Path) -> None:
        self.config, self.device, self.work_dir = config, device, work_dir
        self.built: dict[str, Any] = {}
        self.configs: dict[str, MetricConfig] = {}
        self.failed: dict[str, BaseException] = {}
        self.references: dict[str, str] = {}  # metric -> the scene whose training views it holds

    def config_of(self, entry: MetricAdapter) -> MetricConfig:
        if entry.name not in self.configs:
            options = dict(self.config.options.get(entry.name, {}))
            base = MetricConfig(entry.name, options, self.device, self.config.random_weights, self.work_dir)
            self.configs[entry.name] = entry.configure(base)
        return self.configs[entry.name]

    def get(self, entry: MetricAdapter) -> Any:
        if entry.name in self.failed:
            raise self.failed[entry.name]
        if entry.name not in self.built:
            try:
                metric = entry.build(self.config_of(entry))
                metric.sync_on_compute = False  # one process: compute() never waits for others
                self.built[entry.name] = metric.to(self.device)
            except BaseException as err:
                self.failed[entry.name] = err
                raise
        return self.built[entry.name]


def _error(err: BaseException) -> str:
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _score_unit(
    entry: MetricAdapter, metric: Any, mconfig: MetricConfig, scene: SweepScene, originals: dict, degraded: dict
) -> dict[str, Any]:
    """One metric on one unit: ``{"status": "ok", "per_view": {...}}`` or ``{"status": "ok", "value": x}``."""
    metric.reset()
    per_view: dict[str, float] = {}
    for name, image in degraded.items():
        item = ViewItem(name, f"sweep/{scene.name}", image[None], originals[name][None])
        args = entry.update_args(metric, item, mconfig)
        if entry.per_view:
            per_view[name] = _main_value(scalars(metric(*args), entry.name), entry.name)
        else:
            metric.update(*args)
    if entry.per_view:
        return {"status": "ok", "per_view": per_view}
    return {"status": "ok", "value": _main_value(scalars(metric.compute(), entry.name), entry.name)}


def _units(config: SweepConfig) -> list[tuple[str, int]]:
    return [(_BASE, 0)] + [(kind, level) for kind in config.degradations for level in range(1, config.levels + 1)]


def _param(kind: str, level: int) -> float | None:
    from scenemetrics.agreement.degrade import DEGRADATION_PARAMS

    return None if level == 0 else float(DEGRADATION_PARAMS[kind][level - 1])


def _latest(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], dict[str, dict]]:
    """``(scene, degradation, level) -> metric -> cell`` of the newest record holding it, with the record's keys."""
    cells: dict[tuple[str, str, int], dict[str, dict]] = {}
    for rec in records:
        key = (str(rec.get("scene")), str(rec.get("degradation")), int(rec.get("level", -1)))
        for name, cell in (rec.get("metrics") or {}).items():
            merged = dict(cell)
            for k in ("inputs", "param", "seed"):
                merged[k] = rec.get(k)
            cells.setdefault(key, {})[name] = merged
    return cells


def _check(config: SweepConfig) -> None:
    from scenemetrics.agreement.degrade import DEGRADATION_PARAMS, DEGRADATIONS
    from scenemetrics.checks import check_int

    bad = [d for d in config.degradations if d not in DEGRADATIONS]
    if bad or not config.degradations:
        names = ", ".join(DEGRADATIONS)
        raise ValueError(f"--degradations must name some of {names}; received {list(config.degradations)}")
    if len(set(config.degradations)) != len(config.degradations):
        raise ValueError(f"--degradations names a degradation twice: {list(config.degradations)}")
    most = min(len(v) for v in DEGRADATION_PARAMS.values())
    check_int(config.levels, "levels", low=1, high=most)
    check_int(config.seed, "seed", low=0)


def run_sweep(config: SweepConfig) -> SweepResult:
    """Run (or resume) a sweep and write ``sweep.json``, ``sweep.csv`` (and ``sweep.png`` with ``plots``).

    Raises:
        ValueError: bad degradations, levels or seed, an unknown metric or option, views that cannot be found, or no
            metric that can run.
    """
    import torch

    from scenemetrics.agreement.degrade import degrade
    from scenemetrics.cliutils import resolve_device
    from scenemetrics.image import read_image
    from scenemetrics.registry import load_plugins, resolve_metrics

    _check(config)
    out = Path(config.out)
    load_plugins(config.plugins)
    entries, unavailable = resolve_metrics(list(config.metrics), config.options, config.random_weights)
    scenes = discover_scenes(config.views, config.train_views)
    for entry in list(entries):
        reason = _unavailable_here(entry, scenes)
        if reason is not None:
            unavailable[entry.name] = reason
            entries.remove(entry)
    if not entries:
        raise ValueError("no metric can run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    out.mkdir(parents=True, exist_ok=True)
    log = out / SWEEP_LOG
    device = resolve_device(config.device)
    fingerprints = {e.name: e.fingerprint(config.options.get(e.name, {}), config.random_weights) for e in entries}
    result = SweepResult(out, {}, unavailable=dict(unavailable))
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    with tempfile.TemporaryDirectory(prefix="scenemetrics-sweep-") as tmp:
        metrics = _Metrics(config, device, Path(tmp))
        cells = _latest(read_records(log, SWEEP_RECORD))
        for scene in _progress(scenes, config.quiet, "scenes"):
            inputs = scene.fingerprint()
            todo: dict[tuple[str, int], list[MetricAdapter]] = {}
            for kind, level in _units(config):
                done = cells.get((scene.name, kind, level), {})
                todo[(kind, level)] = [
                    e
                    for e in entries
                    if config.force
                    or not (
                        done.get(e.name, {}).get("status") == "ok"
                        and done[e.name].get("config") == fingerprints[e.name]
                        and done[e.name].get("inputs") == inputs
                        and done[e.name].get("param") == _param(kind, level)
                        and (kind not in _RANDOM or done[e.name].get("seed") == config.seed)
                    )
                ]
            if not any(todo.values()):
                result.units_done += len(todo)
                continue
            originals = {k: read_image(p, background=config.background).to(device) for k, p in scene.views.items()}
            for (kind, level), wanted in _progress(list(todo.items()), config.quiet, scene.name):
                if not wanted:
                    result.units_done += 1
                    continue
                cells_out: dict[str, dict] = {}
                degraded = {}
                for name, image in originals.items():
                    seed = view_seed(config.seed, scene.name, name)
                    degraded[name] = image if level == 0 else degrade(image[None], kind, level, seed=seed)[0]
                with torch.no_grad():
                    for entry in wanted:
                        cells_out[entry.name] = _run_metric(entry, metrics, scene, originals, degraded, config)
                        cells_out[entry.name]["config"] = fingerprints[entry.name]
                        if cells_out[entry.name]["status"] == "error":
                            message = cells_out[entry.name]["error"]
                            result.errors.append(f"{scene.name}/{kind}/{level} {entry.name}: {message}")
                append_record(log, {"format": SWEEP_RECORD, "run": run_id, "scene": scene.name, "degradation": kind,
                                    "level": level, "param": _param(kind, level), "seed": config.seed,
                                    "inputs": inputs, "metrics": cells_out})  # fmt: skip
                result.units_run += 1
        directions = {e.name: _direction(e, metrics) for e in entries}
    result.directions = directions
    result.table = sweep_table(read_records(log, SWEEP_RECORD), entries, scenes, config, directions)
    _write_outputs(result, config, entries)
    return result


def _direction(entry: MetricAdapter, metrics: _Metrics) -> bool | None:
    if entry.higher_is_better is not None:
        return entry.higher_is_better
    return getattr(metrics.built.get(entry.name), "higher_is_better", None)


def _run_metric(
    entry: MetricAdapter, metrics: _Metrics, scene: SweepScene, originals: dict, degraded: dict, config: SweepConfig
) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one line per failure is reported; per-view warnings would flood
            metric = metrics.get(entry)
            mconfig = metrics.config_of(entry)
            if entry.update_kind(metric) == "references" and metrics.references.get(entry.name) != scene.name:
                from scenemetrics.image import read_image

                refs = [read_image(p, background=config.background).to(metrics.device) for p in scene.train]
                metric.set_references(refs)
                metrics.references[entry.name] = scene.name
            return _score_unit(entry, metric, mconfig, scene, originals, degraded)
    except UnusableViewError as err:
        return {"status": "error", "error": _error(err)}
    except Exception as err:
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))[-4000:]
        return {"status": "error", "error": _error(err), "traceback": tb}


def _progress(items: Sequence[Any], quiet: bool, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, disable=quiet or not sys.stderr.isatty(), leave=False, file=sys.stderr)


# ---- statistics and outputs -----------------------------------------------------------------------------------------


def sweep_table(
    records: Sequence[Mapping[str, Any]],
    entries: Sequence[MetricAdapter],
    scenes: Sequence[SweepScene],
    config: SweepConfig,
    directions: Mapping[str, bool | None],
) -> dict[str, dict[str, dict[str, Any]]]:
    """``metric -> degradation -> statistics`` from the latest records of the log (see the module).

    Each row (a view, or a scene for scene-level metrics) holds the scores at levels 0..L; a row with a missing or
    NaN score is left out of the statistics (``n_omitted``). ``mean`` is the mean score per level over the rows used
    (``+inf`` when a score is, e.g. PSNR at level 0).
    """
    import numpy as np

    from scenemetrics.agreement.degrade import sweep_statistics

    cells = _latest(records)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        per_kind: dict[str, dict[str, Any]] = {}
        for kind in config.degradations:
            rows, labels = [], []
            for scene in scenes:
                units = [(_BASE, 0)] + [(kind, lv) for lv in range(1, config.levels + 1)]
                got = [cells.get((scene.name, k, lv), {}).get(entry.name, {}) for k, lv in units]
                if entry.per_view:
                    for view in scene.views:
                        rows.append([_cell_value(c, view) for c in got])
                        labels.append(f"{scene.name}/{view}")
                else:
                    rows.append([_cell_value(c, None) for c in got])
                    labels.append(scene.name)
            arr = np.array(rows, dtype=np.float64).reshape(len(rows), config.levels + 1)
            keep = ~np.isnan(arr).any(axis=1)
            stats: dict[str, Any] = {"spearman": float("nan"), "monotone_fraction": float("nan")}
            if keep.any():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a constant score: NaN rho, said in the table
                    s = sweep_statistics(arr[keep], higher_is_better=directions.get(entry.name))
                stats = {"spearman": s.spearman, "monotone_fraction": s.monotone_fraction}
            with np.errstate(invalid="ignore"):
                mean = [float(v) for v in arr[keep].mean(axis=0)] if keep.any() else [float("nan")] * arr.shape[1]
            per_kind[kind] = {
                **stats,
                "n": int(keep.sum()),
                "n_omitted": int((~keep).sum()),
                "unit": "view" if entry.per_view else "scene",
                "levels": list(range(config.levels + 1)),
                "params": [_param(kind, lv) for lv in range(config.levels + 1)],
                "mean": mean,
                "rows": {label: [float(v) for v in row] for label, row in zip(labels, arr, strict=True)},
            }
        table[entry.name] = per_kind
    return table


def _cell_value(cell: Mapping[str, Any], view: str | None) -> float:
    if cell.get("status") != "ok":
        return float("nan")
    value = cell.get("value") if view is None else (cell.get("per_view") or {}).get(view)
    return float("nan") if value is None else float(value)


def _write_outputs(result: SweepResult, config: SweepConfig, entries: Sequence[MetricAdapter]) -> None:
    import csv
    import io

    from scenemetrics import __version__
    from scenemetrics.agreement.degrade import DEGRADATION_PARAMS
    from scenemetrics.fileio import atomic_write_text
    from scenemetrics.jsonio import write_json

    out = result.out
    doc = {
        "format": SWEEP_FORMAT,
        "config": {
            "views": os.fspath(config.views),
            "train_views": None if config.train_views is None else os.fspath(config.train_views),
            "metrics": [e.name for e in entries],
            "degradations": list(config.degradations),
            "levels": config.levels,
            "params": {k: list(DEGRADATION_PARAMS[k][: config.levels]) for k in config.degradations},
            "seed": config.seed,
            "options": {k: dict(v) for k, v in config.options.items()},
            "random_weights": config.random_weights,
            "version": __version__,
        },
        "metrics": {
            e.name: {
                "higher_is_better": result.directions.get(e.name),
                "description": e.description,
                **result.table[e.name],
            }
            for e in entries
        },
        "unavailable": result.unavailable,
        "errors": result.errors,
    }
    result.files["sweep.json"] = write_json(out / "sweep.json", doc)
    lines = []
    header = ["metric", "degradation", "spearman", "monotone_fraction", "n", "n_omitted", "unit"]
    header += [f"mean_level{lv}" for lv in range(config.levels + 1)]
    for name, per_kind in result.table.items():
        for kind, s in per_kind.items():
            lines.append([name, kind, s["spearman"], s["monotone_fraction"], s["n"], s["n_omitted"], s["unit"],
                          *s["mean"]])  # fmt: skip
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in lines:
        writer.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in row])
    result.files["sweep.csv"] = atomic_write_text(out / "sweep.csv", buf.getvalue())
    if config.plots:
        from scenemetrics.agreement.viz import sweep_plot

        directions = {name: doc["metrics"][name]["higher_is_better"] for name in result.table}
        result.files["sweep.png"] = sweep_plot(result.table, out / "sweep.png", higher_is_better=directions)


def format_table(table: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The monotonicity table as text: one line per (metric, degradation)."""
    width = max([6, *(len(n) for n in table)])
    lines = [f"{'metric':<{width}}  {'degradation':<11}  {'spearman':>8}  {'monotone':>8}  {'n':>4}"]
    for name, per_kind in table.items():
        for kind, s in per_kind.items():
            rho = "n/a" if s["spearman"] != s["spearman"] else f"{s['spearman']:+.3f}"
            mono = "n/a" if s["monotone_fraction"] != s["monotone_fraction"] else f"{100 * s['monotone_fraction']:.0f}%"
            lines.append(f"{name:<{width}}  {kind:<11}  {rho:>8}  {mono:>8}  {s['n']:>4}")
    return "\n".join(lines)
