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

The jobs live in their own modules: :mod:`~scenemetrics.evaluation.config` (``EvalConfig``, ``EvalSummary``),
:mod:`~scenemetrics.evaluation.planning`, :mod:`~scenemetrics.evaluation.processes` (one process or Fabric),
:mod:`~scenemetrics.evaluation.unit` (one unit, stage by stage), :mod:`~scenemetrics.evaluation.records` (the commit
log), :mod:`~scenemetrics.evaluation.states` (values, states, pooling) and :mod:`~scenemetrics.evaluation.report`.
This module drives them and keeps every public name it has always had.

Example:
    >>> from scenemetrics.evaluation import EvalConfig
    >>> EvalConfig(root="runs", out="results", metrics=("psnr", "ssim")).devices
    '1'
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.config import RANDOM_BANNER, EvalConfig, EvalSummary
from scenemetrics.evaluation.layout import check_output_folder
from scenemetrics.evaluation.planning import make_plan
from scenemetrics.evaluation.processes import FabricProcesses, LocalProcess, make_fabric
from scenemetrics.evaluation.records import (
    RECORD_FORMAT,
    RESULTS_FILE,
    append_record,
    commit_unit,
    latest_cells,
    metric_fingerprint,
    read_records,
)
from scenemetrics.evaluation.states import pooled_values
from scenemetrics.evaluation.unit import UnitMetrics, error_text, evaluate_unit_safely, print_line
from scenemetrics.registry import get_metric, load_plugins, resolve_metrics

__all__ = [
    "RANDOM_BANNER",
    "RECORD_FORMAT",
    "RESULTS_FILE",
    "EvalConfig",
    "EvalSummary",
    "append_record",
    "latest_cells",
    "metric_fingerprint",
    "pooled_values",
    "read_records",
    "run_evaluation",
]

WORK_DIR = ".work"
"""Scratch folder inside ``--out`` (random checkpoints, LPIPS's completed checkpoint): each rank's run removes its
own; a killed run's leftovers are removed by the next run, under the output lock."""


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
    fabric = make_fabric(config)
    if fabric is None:
        from scenemetrics.devices import resolve_device

        return _worker(LocalProcess(resolve_device(config.device)), config)
    return fabric.launch(_fabric_worker, config)


def _fabric_worker(fabric: Any, config: EvalConfig) -> EvalSummary | None:
    return _worker(FabricProcesses(fabric), config)


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
                    if config.root is not None:  # before the lock file marks the folder as an output folder
                        check_output_folder(config.root, out, config.split)
                    stack.enter_context(_out_lock(out))
                    # scratch files of a run that was killed (SIGKILL skips every cleanup): ours now, under the lock
                    shutil.rmtree(out / WORK_DIR, ignore_errors=True)
                for name, why in unavailable.items():
                    warnings.warn(
                        f"metric {name!r} is unavailable and is not evaluated: {why}", UserWarning, stacklevel=2
                    )
                plan = make_plan(config, entries, unavailable)
            except Exception as err:
                failure = err
        plan, message = dist.broadcast((plan, None if failure is None else error_text(failure)))
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
        (out / WORK_DIR).mkdir(parents=True, exist_ok=True)
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"rank{dist.rank}-", dir=out / WORK_DIR)))
        talk = rank0 and not config.quiet
        show = talk and _is_terminal()  # bars only on a terminal; a log gets one plain line per unit instead
        metrics = UnitMetrics(config, dist.device, work, announce=talk)
        from tqdm.auto import tqdm

        overall = stack.enter_context(tqdm(total=len(pending), desc="units", disable=not show, file=sys.stderr))
        skipped: dict[tuple[str, str], list[str]] = {}
        errors: dict[tuple[str, str], list[str]] = {}  # (metric, message) -> units, printed once after the bar
        unit_warnings: dict[str, list[str]] = {}
        for k in range(math.ceil(len(pending) / dist.world_size)):
            i = k * dist.world_size + dist.rank
            payload = None
            if i < len(pending):
                payload = evaluate_unit_safely(pending[i], plan.todo[pending[i].key], metrics, config, show)
            gathered = dist.all_gather(payload)
            if rank0:
                try:
                    for r, p in enumerate(gathered):
                        if p is None:
                            continue
                        record = commit_unit(out, p, plan, r)
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
                            print_line(f"[{summary.evaluated}/{len(pending)}] {where} done ({record['seconds']:.1f} s)")
                except Exception as err:
                    failure = err
            message = dist.broadcast(None if failure is None else error_text(failure))
            if failure is not None:
                raise failure
            if message is not None:
                raise RuntimeError(f"rank 0 stopped the evaluation: {message}")
        overall.close()
        for msg, units in unit_warnings.items():
            print_line(f"warning: {msg} ({_units_text(units)})")
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
