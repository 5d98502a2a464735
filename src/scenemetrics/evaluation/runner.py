"""Running the evaluation: plan, shard over processes (Lightning Fabric), evaluate units, commit them atomically.

Flow (every rank runs :func:`run_evaluation`):

1. Rank 0 discovers the units, reads the commit log ``<out>/results.jsonl`` and plans, per unit, the metrics still
   to compute: a (unit, metric) is done when its latest record is ``ok`` or ``skipped`` with the same metric options
   and the same input files (name, size, modification time). The plan is broadcast.
2. The i-th pending unit (units sorted by method, then scene) goes to rank ``i % world_size``. Ranks work in
   rounds: each evaluates one unit, then the results are gathered to rank 0 (``torch.distributed``
   ``all_gather_object`` on Fabric's process group), which commits them: the metric states to
   ``states/<method>/<scene>/<run>.pt`` (write, fsync, rename), map thumbnails to ``report/thumbs/``, then one JSON
   line appended to ``results.jsonl`` with flush + fsync. That line is the commit: a run killed at any point loses
   only the units not yet committed, and a rerun skips the committed ones.
3. A unit is evaluated on one rank with fresh metric states (``reset()``), never synchronised with other ranks
   (``sync_on_compute=False`` and a ``distributed_available_fn`` that says no): the scene score is that rank's
   ``compute()``. A failure of one metric in one unit is recorded (``error`` with the message and
   traceback) and everything else continues; a rerun retries it.
4. Rank 0 then writes the tables and the report (:mod:`scenemetrics.evaluation.report`). Per-method **pooled**
   values combine the states of all the method's units through torchmetrics' own ``Metric.sync`` with a gather
   function that returns the units' states (:func:`pooled_values`): each unit plays a rank.

Example:
    >>> from scenemetrics.evaluation import EvalConfig
    >>> EvalConfig(root="runs", out="results", metrics=("psnr", "ssim")).devices
    '1'
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import secrets
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.layout import Unit, View, discover_units, read_cameras
from scenemetrics.evaluation.registry import (
    MetricConfig,
    MetricEntry,
    ViewItem,
    default_arguments,
    get_metric,
    load_plugins,
    metric_kind,
    resolve_metrics,
)
from scenemetrics.jsonio import dumps, restore

__all__ = [
    "RECORD_FORMAT",
    "RESULTS_FILE",
    "EvalConfig",
    "EvalSummary",
    "append_record",
    "metric_fingerprint",
    "read_records",
    "run_evaluation",
]

RESULTS_FILE = "results.jsonl"
"""The commit log inside ``--out``: one JSON object per line, one line per evaluated unit (per run)."""

RECORD_FORMAT = "scenemetrics.eval.record/1"

RANDOM_BANNER = (
    "RANDOM WEIGHTS: every network is a deterministic random one (--random-weights); the scores are UNCALIBRATED "
    "and only show that the pipeline runs."
)


@dataclass
class EvalConfig:
    """Everything ``scenemetrics eval`` needs (the CLI flags, one to one).

    Attributes:
        root: ``<root>/<method>/<scene>/`` tree (``None`` when only ``predictions`` are scored).
        out: output folder (commit log, states, tables, report).
        metrics: metric names (``("all",)`` for every available one).
        layout: ``auto``, ``scenemetrics``, ``nerfbaselines`` or ``nerfstudio``.
        data: dataset folder ``<data>/<scene>/{gt,train}`` for what scene folders lack.
        split: ns-render split.
        methods, scenes: restrict to these names (of the ``root`` tree).
        predictions: NerfBaselines predictions folders or archives, scored next to the ``root`` tree.
        nerfstudio_configs: trained nerfstudio runs (``config.yml``), rendered on the ``split`` (default test).
        train_views: training views for scenes without them (``<dir>/<scene>/images/``, ``<dir>/<scene>/``, ``<dir>``).
        options: per-metric options, ``{"lpips": {"net": "vgg"}, ...}``.
        plugins: modules or ``.py`` files that register more metrics.
        random_weights: deterministic random networks everywhere (smoke tests; uncalibrated scores).
        background: composite RGBA images onto ``"white"`` or ``"black"`` (``None``: drop alpha, with a warning).
        max_thumbnails: map thumbnails per unit and map-producing metric in the report.
        thumbnail_height: thumbnail height in pixels.
        report: write the HTML report.
        force: recompute everything (a new record overrides the old ones).
        dry_run: only plan and print what would run.
        device: ``--device`` (``None``: Fabric's ``auto``).
        devices, num_nodes, strategy: Lightning Fabric's.
        quiet: no progress bars.
    """

    root: str | os.PathLike | None
    out: str | os.PathLike
    metrics: Sequence[str] = ("psnr", "ssim", "lpips", "puzzlesim")
    layout: str = "auto"
    data: str | os.PathLike | None = None
    split: str | None = None
    methods: Sequence[str] | None = None
    scenes: Sequence[str] | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plugins: Sequence[str] = ()
    random_weights: bool = False
    background: str | None = None
    max_thumbnails: int = 4
    thumbnail_height: int = 96
    report: bool = True
    force: bool = False
    dry_run: bool = False
    device: str | None = None
    devices: str | int = "1"
    num_nodes: int = 1
    strategy: str = "auto"
    quiet: bool = False
    predictions: Sequence[str | os.PathLike] = ()
    train_views: str | os.PathLike | None = None
    nerfstudio_configs: Sequence[str | os.PathLike] = ()


@dataclass
class EvalSummary:
    """What rank 0 returns.

    Attributes:
        out: the output folder.
        evaluated: units evaluated in this run.
        skipped_done: units whose requested metrics were all done before.
        failures: ``"method/scene metric: message"`` for every (unit, metric) whose latest result is an error.
        error_groups: the errors of this run, one entry per distinct (metric, message):
            ``{"metric", "error", "units"}`` (``units``: ``"method/scene"`` in order). Nothing is printed for them
            while the run goes on; ``scenemetrics eval`` prints each group once at the end.
        unavailable: metric name -> why it could not run.
        files: name -> path of what was written (results.csv, leaderboard.csv, results.json, report).
    """

    out: Path
    evaluated: int = 0
    skipped_done: int = 0
    failures: list[str] = field(default_factory=list)
    error_groups: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


# ---- the commit log ------------------------------------------------------------------------------------------------


def read_records(path: str | os.PathLike) -> list[dict]:
    """The records of a commit log, in file order; lines that are not complete JSON records are ignored.

    A line cut short by a killed process (no newline, invalid JSON) is the only expected kind; others get a
    ``UserWarning``.
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
        if isinstance(rec, dict) and rec.get("format") == RECORD_FORMAT:
            records.append(restore(rec))
        else:
            bad += 1
    if bad:
        warnings.warn(f"{p}: ignored {bad} line(s) that are not {RECORD_FORMAT} records", UserWarning, stacklevel=2)
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


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it; put it back at once
    os.umask(mask)
    return mask


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename; the file's mode follows the umask."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode open() would have (0666 & ~umask), like results.json
        with contextlib.suppress(AttributeError, NotImplementedError):
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _atomic_torch_save(obj: Any, path: Path) -> None:
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    _atomic_write_bytes(path, buf.getvalue())


def metric_fingerprint(entry: MetricEntry, options: Mapping[str, Any], random_weights: bool) -> str:
    """A short hash of what changes a metric's scores: its score-relevant options and ``random_weights``."""
    keys = sorted(options) if entry.fingerprint_options is None else sorted(entry.fingerprint_options)
    relevant = {k: options.get(k) for k in keys if options.get(k) is not None}
    text = json.dumps(
        {"metric": entry.name, "options": relevant, "random": bool(random_weights)}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def latest_cells(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, dict]]:
    """``(method, scene) -> metric -> cell`` of the newest record holding that metric (records in file order).

    Each cell is the record's metric entry plus the record's ``run``, ``inputs``, ``states`` and ``thumbs``.
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
            merged["objects"] = (rec.get("objects") or {}).get(name)
            cells.setdefault(key, {})[name] = merged
    return cells


# ---- processes -----------------------------------------------------------------------------------------------------


class _Local:
    """One process without Lightning."""

    rank = 0
    world_size = 1

    def __init__(self, device: Any) -> None:
        self.device = device

    def broadcast(self, obj: Any) -> Any:
        return obj

    def all_gather(self, obj: Any) -> list:
        return [obj]

    def barrier(self) -> None:
        return None


class _FabricDist:
    """Collectives over Fabric's process group."""

    def __init__(self, fabric: Any) -> None:
        self.fabric = fabric
        self.rank = fabric.global_rank
        self.world_size = fabric.world_size
        self.device = fabric.device

    def broadcast(self, obj: Any) -> Any:
        return self.fabric.broadcast(obj, src=0) if self.world_size > 1 else obj

    def all_gather(self, obj: Any) -> list:
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world_size > 1:
            self.fabric.barrier()


def _wants_processes(config: EvalConfig) -> bool:
    devices = str(config.devices).strip().lower()
    return not (devices in ("1", "auto") and config.num_nodes == 1 and config.strategy in ("auto", "single_device"))


def _accelerator(config: EvalConfig) -> tuple[str, Any]:
    devices: Any = str(config.devices).strip()
    if devices.isdigit():
        devices = int(devices)
    device = config.device
    if device is None:
        return "auto", devices
    dev = device.strip().lower()
    if dev in ("cpu", "cuda", "gpu", "mps"):
        return dev, devices
    if dev.startswith("cuda:") and dev[5:].isdigit():
        if devices not in (1, "1", "auto"):
            raise ValueError(f"--device {device!r} names one GPU; use --device cuda --devices {devices} for several")
        return "cuda", [int(dev[5:])]
    raise ValueError(f"--device must be cpu, cuda, cuda:N or mps; received {device!r}")


def _make_fabric(config: EvalConfig) -> Any:
    try:
        from lightning.fabric import Fabric
    except ImportError as err:
        if _wants_processes(config):
            raise ImportError(
                "running on several devices or nodes (--devices/--num-nodes/--strategy) needs Lightning Fabric: "
                'pip install "scenemetrics[lightning]"'
            ) from err
        return None
    accelerator, devices = _accelerator(config)
    fabric = Fabric(
        accelerator=accelerator,
        devices=devices,
        num_nodes=config.num_nodes,
        strategy=config.strategy,
        precision="32-true",
    )
    relaunches = fabric.world_size > 1 and "spawn" not in str(config.strategy) and "LOCAL_RANK" not in os.environ
    if relaunches and "eval" not in sys.argv[1:]:
        raise ValueError(
            f"--strategy {config.strategy!r} with {fabric.world_size} processes starts the others by re-running this "
            "program's command line, which is not `scenemetrics eval ...`; run the command from a shell, or use "
            "--strategy ddp_spawn from Python"
        )
    return fabric


def run_evaluation(config: EvalConfig) -> EvalSummary | None:
    """Evaluate every unit under ``config.root`` with ``config.metrics`` and write tables and a report.

    Runs on one process without Lightning when a single device is asked for and Lightning is missing; otherwise
    through a Lightning Fabric launched with ``config.devices``/``num_nodes``/``strategy`` (``ddp`` re-runs the
    command line in the other processes, as Lightning does).

    Returns:
        The :class:`EvalSummary` on rank 0 (``None`` on the other ranks).

    Raises:
        ValueError: an unknown metric or option, no available metric, nothing to evaluate, or a bad ``--device``.
        ImportError: several processes without ``lightning`` (naming ``pip install "scenemetrics[lightning]"``).
    """
    fabric = _make_fabric(config)
    if fabric is None:
        from scenemetrics.cliutils import resolve_device

        return _worker(_Local(resolve_device(config.device)), config)
    return fabric.launch(_fabric_worker, config)


def _fabric_worker(fabric: Any, config: EvalConfig) -> EvalSummary | None:
    return _worker(_FabricDist(fabric), config)


# ---- planning ------------------------------------------------------------------------------------------------------


@dataclass
class _Plan:
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
    from scenemetrics.evaluation.predictions import read_predictions

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
        )
    extra = []
    if config.predictions:
        extra = read_predictions(config.predictions, out / "inputs", data=config.data, train_views=config.train_views)
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


def _plan(config: EvalConfig, entries: list[MetricEntry], unavailable: dict[str, str]) -> _Plan:
    out = Path(config.out)
    units = _units(config, out)
    fingerprints = {
        e.name: metric_fingerprint(e, config.options.get(e.name, {}), config.random_weights) for e in entries
    }
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
    return _Plan(run, units, todo, fingerprints, inputs, [e.name for e in entries], unavailable)


# ---- metrics per process -------------------------------------------------------------------------------------------


def _not_distributed() -> bool:
    return False


class _Metrics:
    """Metric instances of this process, built on first use (a failed build is remembered, not retried)."""

    def __init__(self, config: EvalConfig, device: Any, work_dir: Path, announce: bool = False) -> None:
        self.config = config
        self.device = device
        self.work_dir = work_dir
        self.announce = announce  # say what a (possibly multi-second) first build does
        self._built: dict[str, Any] = {}
        self._failed: dict[str, BaseException] = {}

    def get(self, name: str) -> Any:
        if name in self._failed:
            raise self._failed[name]
        if name not in self._built:
            entry = get_metric(name)
            cfg = MetricConfig(
                name=name,
                options=dict(self.config.options.get(name, {})),
                device=self.device,
                random_weights=self.config.random_weights,
                work_dir=self.work_dir,
            )
            if self.announce:
                weights = "random weights" if self.config.random_weights else "loading its weights"
                _print(f"building {name} on {self.device} ({weights}) ...")
            try:
                metric = entry.factory(cfg)
                from torchmetrics import Metric

                if not isinstance(metric, Metric):
                    raise TypeError(
                        f"the factory of metric {name!r} returned {type(metric).__name__}, not a torchmetrics.Metric"
                    )
                # a unit is scored on one process: its compute() must never sync with the units of other ranks
                metric.sync_on_compute = False
                metric.distributed_available_fn = _not_distributed
                metric.to(self.device)
            except BaseException as err:
                self._failed[name] = err
                raise
            self._built[name] = metric
        return self._built[name]


# ---- evaluating one unit --------------------------------------------------------------------------------------------


def _load_mask(path: Path, shape: Any) -> Any:
    """A mask image as ``(1, H, W)`` float in [0, 1] (any mode, converted to grey), the size of the render."""
    import numpy as np
    import torch
    from PIL import Image

    with Image.open(path) as im:
        arr = np.asarray(im.convert("L"), dtype=np.uint8).copy()
    if arr.shape != tuple(shape[-2:]):
        raise ValueError(f"mask {path} is {arr.shape[1]}x{arr.shape[0]}; the render is {shape[-1]}x{shape[-2]}")
    return torch.from_numpy(arr)[None].float().div_(255.0)


def _load_image(path: Path, background: str | None, notes: list[str]) -> Any:
    import numpy as np
    import torch
    from PIL import Image

    with Image.open(path) as im:
        has_alpha = im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info)
        if has_alpha and background is not None:
            rgba = im.convert("RGBA")
            canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255) if background == "white" else (0, 0, 0, 255))
            im_rgb = Image.alpha_composite(canvas, rgba).convert("RGB")
        else:
            if has_alpha and "alpha" not in notes:
                notes.append("alpha")
            im_rgb = im.convert("RGB")
        arr = np.asarray(im_rgb, dtype=np.uint8).copy()
    return torch.from_numpy(arr).permute(2, 0, 1).float().div_(255.0)


def _scalars(value: Any, tag: str) -> dict[str, float]:
    """A compute()/forward() result as ``{column: float}`` (the callbacks' rule: scalar, mapping, or ``.score``)."""
    from torch import Tensor

    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for key, sub in value.items():
            out.update(_scalars(sub, f"{tag}/{key}"))
        return out
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{tag}: compute() returned a tensor of shape {tuple(value.shape)}, not a scalar")
        return {tag: float(value.detach().reshape(()).cpu())}
    if isinstance(value, (bool, int, float)):
        return {tag: float(value)}
    score = getattr(value, "score", None)
    if score is not None:
        return _scalars(score, tag)
    raise ValueError(f"{tag}: compute() returned {type(value).__name__}; expected a scalar, a mapping or `.score`")


def _cpu_states(metric: Any) -> dict[str, Any]:
    from torch import Tensor

    out: dict[str, Any] = {}
    for attr, value in metric.metric_state.items():
        if isinstance(value, Tensor):
            out[attr] = value.detach().cpu()
        elif isinstance(value, list):
            out[attr] = [v.detach().cpu() for v in value]
    return out


def _thumbnail(render: Any, sim_map: Any, height: int, name: str = "map", view: str = "") -> Any:
    """Render and map side by side at ``height`` px, titled, with a colour bar of the map's real values."""
    import torch.nn.functional as F

    from scenemetrics import viz

    h, w = render.shape[-2:]
    size = (height, max(1, round(w * height / h)))
    small = F.interpolate(render[None].float().cpu(), size=size, mode="bilinear", antialias=True, align_corners=False)
    small_map = F.interpolate(sim_map[None, None].float().cpu(), size=size, mode="bilinear", align_corners=False)
    full = sim_map.detach().float().cpu()
    return viz.map_picture(
        small_map[0, 0],
        image=small[0].clamp(0, 1),
        show=("image", "map"),
        labels={"image": "render"},
        title=f"{name}: {view} (mean {float(full.mean()):.4f})",
        display_range=viz.robust_range(full),
        value_label=name,
        min_height=0,
        font_size=10,
    ).image


def _objects(metric: Any, result: Any, view: str) -> list[dict]:
    import importlib

    names = None
    if "OSIM" in {cls.__name__ for cls in type(metric).__mro__}:
        with contextlib.suppress(ImportError, AttributeError):
            names = importlib.import_module("scenemetrics.osim").COCO_CLASSES
    classes = [int(c) for c in result.classes.tolist()]
    return [
        {
            "view": view,
            "class": c,
            "class_name": names[c] if names is not None and 0 <= c < len(names) else str(c),
            "r": float(r),
            "s": float(s),
        }
        for c, r, s in zip(classes, result.r.tolist(), result.s.tolist(), strict=True)
    ]


def _missing_input(entry: MetricEntry, unit: Unit) -> tuple[str, str] | None:
    """``("skipped"|"error", why)`` when the unit cannot feed the metric, else ``None``."""
    render_problems = [msg for kind, msg in unit.problems if kind == "renders"]
    if render_problems:
        return "error", "; ".join(render_problems)
    if "gt" in entry.inputs:
        if not unit.has_gt:
            return "skipped", "no ground-truth views (gt/ folder)"
        gt_problems = [msg for kind, msg in unit.problems if kind == "gt"]
        if gt_problems:
            return "error", "; ".join(gt_problems)
    if "train" in entry.inputs:
        train_problems = [msg for kind, msg in unit.problems if kind == "train"]
        if train_problems:
            return "error", "; ".join(train_problems)
        if not unit.train:
            return "skipped", "no training views (train/ folder) to use as references"
    if "cameras" in entry.inputs and unit.cameras is None:
        return "skipped", "no cameras.json (PRISM needs the source view and relative pose of each render)"
    return None


def _pose_tensor(cam: Any) -> Any:
    import importlib

    import torch

    if cam.pose is not None:
        return torch.tensor([cam.pose], dtype=torch.float32)
    prism = importlib.import_module("scenemetrics.prism")

    def spherical(c: Mapping[str, Any]) -> Any:
        if "c2w" in c:
            return prism.spherical_from_c2w(torch.tensor(c["c2w"], dtype=torch.float64))
        return torch.tensor([c["polar_deg"], c["azimuth_deg"], c["radius"]], dtype=torch.float64)

    return prism.relative_pose(spherical(cam.source_camera), spherical(cam.target_camera)).reshape(1, 3).float()


class _Capture:
    """Collects the warnings raised while calling a metric, attributed to it."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    @contextlib.contextmanager
    def __call__(self, label: str) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        for w in caught:
            text = f"{label}: {w.message}"
            if text not in self.messages:
                self.messages.append(text)


def _error_text(err: BaseException) -> str:
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _evaluate_unit(
    unit: Unit, names: Sequence[str], metrics: _Metrics, config: EvalConfig, show_progress: bool
) -> dict[str, Any]:
    import torch

    t_start = time.perf_counter()
    capture = _Capture()
    cells: dict[str, dict[str, Any]] = {}
    states: dict[str, Any] = {}
    thumbs: dict[str, list] = {}
    objects: dict[str, list] = {}
    active: dict[str, Any] = {}
    per_view: dict[str, dict[str, dict[str, float]]] = {}
    timings: dict[str, float] = {}
    notes: list[str] = []

    def fail(name: str, err: BaseException | str) -> None:
        if isinstance(err, BaseException):
            cells[name] = {
                "status": "error",
                "error": _error_text(err),
                "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__))[-4000:],
            }
        else:
            cells[name] = {"status": "error", "error": err}
        active.pop(name, None)

    for name in names:
        entry = get_metric(name)
        missing = _missing_input(entry, unit)
        if missing is not None:
            status, why = missing
            cells[name] = {"status": status, "error" if status == "error" else "reason": why}
            continue
        try:
            with capture(name):
                metric = metrics.get(name)
                metric.reset()
            active[name] = metric
            timings[name] = 0.0
        except Exception as err:
            fail(name, err)

    cameras: dict[str, Any] = {}
    sources: dict[Path, Any] = {}
    if any("cameras" in get_metric(n).inputs for n in active):
        try:
            cameras = read_cameras(unit.cameras)
            missing_views = [v.name for v in unit.views if v.name not in cameras]
            if missing_views:
                raise ValueError(
                    f"{unit.cameras} has no entry for {len(missing_views)} render(s): {', '.join(missing_views[:5])}"
                )
        except Exception as err:
            for n in [n for n in active if "cameras" in get_metric(n).inputs]:
                fail(n, err)

    with torch.no_grad():
        ref_metrics = [n for n in active if metric_kind(active[n]) == "references"]
        if ref_metrics:
            try:
                refs = [_load_image(p, config.background, notes).to(metrics.device) for p in unit.train]
            except Exception as err:
                for n in ref_metrics:
                    fail(n, err)
                refs = []
            for n in ref_metrics:
                if n not in active:
                    continue
                t0 = time.perf_counter()
                try:
                    with capture(n):
                        active[n].set_references(refs)
                except Exception as err:
                    fail(n, err)
                timings[n] = timings.get(n, 0.0) + time.perf_counter() - t0
            del refs

        from tqdm.auto import tqdm

        views: Sequence[View] = unit.views
        bar = tqdm(views, desc=unit.key, total=len(views), disable=not show_progress, leave=False, file=sys.stderr)
        for index, view in enumerate(bar):
            if not active:
                break
            needs_gt = any("gt" in get_metric(n).inputs for n in active)
            try:
                render = _load_image(view.render, config.background, notes).to(metrics.device)
                target = None
                if needs_gt and view.gt is not None:
                    target = _load_image(view.gt, config.background, notes).to(metrics.device)
                source = pose = None
                if view.name in cameras:
                    cam = cameras[view.name]
                    if cam.source not in sources:  # many views usually share one source view
                        sources[cam.source] = _load_image(cam.source, config.background, notes).to(metrics.device)
                    source = sources[cam.source][None]
                    pose = _pose_tensor(cam).to(metrics.device)
            except Exception as err:
                for n in list(active):
                    fail(n, ValueError(f"view {view.name!r}: {_error_text(err)}"))
                break
            item = ViewItem(view.name, unit.key, render[None], None if target is None else target[None], source, pose)
            masked = item
            if view.mask is not None and target is not None:
                try:
                    mask = _load_mask(view.mask, render.shape).to(metrics.device)
                except Exception as err:
                    for n in list(active):
                        fail(n, ValueError(f"view {view.name!r}: {_error_text(err)}"))
                    break
                masked = dataclasses.replace(item, render=(render * mask)[None], target=(target * mask)[None])
            for name in list(active):
                entry = get_metric(name)
                metric = active[name]
                t0 = time.perf_counter()
                try:
                    if "gt" in entry.inputs and target is not None and target.shape != render.shape:
                        raise ValueError(
                            f"view {view.name!r}: render {tuple(render.shape)} and ground truth {tuple(target.shape)} "
                            "differ in size (nothing is resized)"
                        )
                    view_item = masked if "gt" in entry.inputs else item  # masks restrict full-reference scores
                    args = (entry.arguments or default_arguments)(metric, view_item, config.options.get(name, {}))
                    with capture(name):
                        if entry.per_view:
                            value = metric(*args)
                            per_view.setdefault(name, {})[view.name] = _scalars(value, name)
                        else:
                            metric.update(*args)
                    maps = getattr(metric, "last_maps", None)
                    if isinstance(maps, torch.Tensor) and maps.ndim == 3 and index < config.max_thumbnails:
                        thumbs.setdefault(name, []).append(
                            (view.name, _thumbnail(render, maps[0].detach(), config.thumbnail_height, name, view.name))
                        )
                    result = getattr(metric, "last_result", None)
                    if result is not None and hasattr(result, "r") and hasattr(result, "classes"):
                        objects.setdefault(name, []).extend(_objects(metric, result, view.name))
                except Exception as err:
                    fail(name, err)
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0

        for name in list(active):
            metric = active[name]
            t0 = time.perf_counter()
            try:
                with capture(name):
                    values = _scalars(metric.compute(), name)
                    class_scores = getattr(metric, "class_scores", None)
                    extra = dict(class_scores()) if callable(class_scores) else None
                cell: dict[str, Any] = {"status": "ok", "values": values}
                if name in per_view:
                    cell["per_view"] = per_view[name]
                if extra:
                    cell["class_scores"] = extra
                cells[name] = cell
                states[name] = _cpu_states(metric)
            except Exception as err:
                fail(name, err)
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0

    if "alpha" in notes:
        capture.messages.append(
            "images have an alpha channel that was dropped (pass --background white|black to composite them)"
        )
    for name, cell in cells.items():
        if name in timings:
            cell["seconds"] = round(timings[name], 4)
    return {
        "method": unit.method,
        "scene": unit.scene,
        "layout": unit.layout,
        "num_views": len(unit.views),
        "metrics": cells,
        "states": states,
        "thumbs": {k: v for k, v in thumbs.items() if cells.get(k, {}).get("status") == "ok"},
        "objects": {k: v for k, v in objects.items() if cells.get(k, {}).get("status") == "ok"},
        "warnings": capture.messages,
        "seconds": round(time.perf_counter() - t_start, 4),
    }


def _commit(out: Path, payload: Mapping[str, Any], plan: _Plan, rank: int) -> dict:
    from scenemetrics import viz

    method, scene = payload["method"], payload["scene"]
    key = f"{method}/{scene}"
    states_rel = None
    if payload["states"]:
        states_rel = f"states/{method}/{scene}/{plan.run}.pt"
        _atomic_torch_save(dict(payload["states"]), out / states_rel)
    thumbs: dict[str, list[dict]] = {}
    for name, items in payload["thumbs"].items():
        for i, (view, image) in enumerate(items):
            rel = f"report/thumbs/{method}/{scene}/{name}-{i:03d}.png"
            viz.save_png(image, out / rel)
            thumbs.setdefault(name, []).append({"view": view, "file": rel})
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
        "layout": payload["layout"],
        "inputs": plan.inputs[key],
        "num_views": payload["num_views"],
        "rank": rank,
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": payload["seconds"],
        "metrics": cells,
        "states": states_rel,
        "thumbs": thumbs,
        "objects": payload["objects"],
        "warnings": payload["warnings"],
    }
    append_record(out / RESULTS_FILE, record)
    return record


@contextlib.contextmanager
def _out_lock(out: Path) -> Iterator[None]:
    """Refuse a second run writing into the same folder (POSIX advisory lock, released by the kernel on a kill)."""
    out.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    with open(out / ".eval.lock", "w") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError(f"another `scenemetrics eval` is writing to {out} (lock {out / '.eval.lock'})") from None
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _print(msg: str) -> None:
    """One line on stderr that does not break the progress bars."""
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def _worker(dist: Any, config: EvalConfig) -> EvalSummary | None:
    load_plugins(config.plugins)
    entries, unavailable = resolve_metrics(config.metrics, config.options, config.random_weights)
    for name, value in config.options.items():
        get_metric(name)  # an option for an unknown metric is a usage error
        if not isinstance(value, Mapping):
            raise ValueError(f"options of metric {name!r} must be a mapping; received {type(value).__name__}")
    if config.background not in (None, "white", "black"):
        raise ValueError(f"`background` must be 'white', 'black' or None; received {config.background!r}")
    if not (isinstance(config.max_thumbnails, int) and config.max_thumbnails >= 0):
        raise ValueError(f"`max_thumbnails` must be an int >= 0; received {config.max_thumbnails!r}")
    out = Path(config.out)
    rank0 = dist.rank == 0
    if not entries:
        raise ValueError(
            "none of the requested metrics can run here: " + "; ".join(f"{n}: {why}" for n, why in unavailable.items())
        )
    with contextlib.ExitStack() as stack:
        # rank-0-only steps (lock, planning, commits) broadcast their failure, so no rank waits in a collective
        plan, failure = None, None
        if rank0:
            try:
                if not config.dry_run:
                    stack.enter_context(_out_lock(out))
                for name, why in unavailable.items():
                    warnings.warn(
                        f"metric {name!r} is unavailable and is not evaluated: {why}", UserWarning, stacklevel=2
                    )
                plan = _plan(config, entries, unavailable)
            except Exception as err:
                failure = err
        plan, message = dist.broadcast((plan, None if failure is None else _error_text(failure)))
        if failure is not None:
            raise failure
        if message is not None:
            raise RuntimeError(f"rank 0 stopped the evaluation: {message}")
        pending = [u for u in plan.units if plan.todo[u.key]]
        if config.dry_run:
            if rank0:
                for u in plan.units:
                    what = ", ".join(plan.todo[u.key]) or "(done)"
                    print(f"{u.key} [{u.layout}, {len(u.views)} views]: {what}")
            return EvalSummary(out=out, unavailable=dict(unavailable)) if rank0 else None
        summary = EvalSummary(out=out, skipped_done=len(plan.units) - len(pending), unavailable=dict(unavailable))
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scenemetrics-eval-")))
        talk = rank0 and not config.quiet
        show = talk and _is_terminal()  # bars only on a terminal; a log gets one plain line per unit instead
        metrics = _Metrics(config, dist.device, work, announce=talk)
        from tqdm.auto import tqdm

        overall = stack.enter_context(tqdm(total=len(pending), desc="units", disable=not show, file=sys.stderr))
        skipped: dict[tuple[str, str], list[str]] = {}
        errors: dict[tuple[str, str], list[str]] = {}  # (metric, message) -> units, printed once after the bar
        unit_warnings: dict[str, list[str]] = {}
        for k in range(math.ceil(len(pending) / dist.world_size)):
            i = k * dist.world_size + dist.rank
            payload = None
            if i < len(pending):
                payload = _evaluate_unit_safely(pending[i], plan.todo[pending[i].key], metrics, config, show)
            gathered = dist.all_gather(payload)
            if rank0:
                try:
                    for r, p in enumerate(gathered):
                        if p is None:
                            continue
                        record = _commit(out, p, plan, r)
                        summary.evaluated += 1
                        where = f"{record['method']}/{record['scene']}"
                        for msg in record["warnings"]:
                            unit_warnings.setdefault(msg, []).append(where)
                        for name, cell in record["metrics"].items():
                            if cell["status"] == "error":
                                errors.setdefault((name, cell["error"]), []).append(where)
                            elif cell["status"] == "skipped":
                                key = (name, cell["reason"])
                                skipped.setdefault(key, []).append(f"{record['method']}/{record['scene']}")
                        overall.update(1)
                        if talk and not show:
                            _print(f"[{summary.evaluated}/{len(pending)}] {where} done ({record['seconds']:.1f} s)")
                except Exception as err:
                    failure = err
            message = dist.broadcast(None if failure is None else _error_text(failure))
            if failure is not None:
                raise failure
            if message is not None:
                raise RuntimeError(f"rank 0 stopped the evaluation: {message}")
        overall.close()
        for msg, units in unit_warnings.items():
            _print(f"warning: {msg} ({_units_text(units)})")
        for (name, reason), units in skipped.items():
            where = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
            warnings.warn(f"{name} skipped for {len(units)} unit(s) ({where}): {reason}", UserWarning, stacklevel=2)
        summary.error_groups = [
            {"metric": name, "error": message, "units": units} for (name, message), units in errors.items()
        ]
        dist.barrier()
        if not rank0:
            return None
        from scenemetrics.evaluation.report import finalize

        return finalize(config, plan, metrics, summary)


def _units_text(units: Sequence[str]) -> str:
    """``"3 units: a/x, a/y, b/x"`` (the first three named)."""
    names = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
    return f"{len(units)} unit{'' if len(units) == 1 else 's'}: {names}"


def _evaluate_unit_safely(
    unit: Unit, names: Sequence[str], metrics: _Metrics, config: EvalConfig, show_progress: bool
) -> dict[str, Any]:
    """:func:`_evaluate_unit`, turning an unexpected failure into an error for every metric of the unit."""
    try:
        return _evaluate_unit(unit, names, metrics, config, show_progress)
    except Exception as err:
        cell = {"status": "error", "error": _error_text(err), "traceback": traceback.format_exc()[-4000:]}
        return {
            "method": unit.method,
            "scene": unit.scene,
            "layout": unit.layout,
            "num_views": len(unit.views),
            "metrics": {name: dict(cell) for name in names},
            "states": {},
            "thumbs": {},
            "objects": {},
            "warnings": [],
            "seconds": 0.0,
        }


def pooled_values(metric: Any, unit_states: Sequence[Mapping[str, Any]], tag: str) -> dict[str, float]:
    """``compute()`` over the states of several units combined by torchmetrics' own sync, each unit playing a rank.

    ``metric.sync(dist_sync_fn=...)`` runs torchmetrics' DDP synchronisation with a gather function that returns the
    units' states instead of the processes': each state is then reduced with its ``dist_reduce_fx`` (sum, mean, max,
    min, cat, or ``None``: the list of values), exactly as after a multi-process ``compute()``. The metric is reset
    before and after.

    Raises:
        ValueError: no unit, or a unit's states lack one of the metric's states.
    """
    import torch

    if not unit_states:
        raise ValueError(f"{tag}: no unit states to pool")
    metric.reset()
    gathered: dict[int, list] = {}
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
            else:
                placeholder = values[0].to(metric.device).clone()
                setattr(metric, attr, placeholder)
                gathered[id(placeholder)] = [v.to(metric.device) for v in values]

        def gather(tensor: Any, group: Any = None) -> list:
            return gathered[id(tensor)]

        metric.sync(dist_sync_fn=gather, should_sync=True, distributed_available=lambda: True)
        synced = True
        # the class's own compute on the synced states (the instance's wrapped compute would try to sync again)
        return _scalars(type(metric).compute(metric), tag)
    finally:
        if synced:
            metric.unsync()  # back to the placeholders (list states must be lists again for reset())
        metric.reset()
