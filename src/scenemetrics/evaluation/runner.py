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
   only the units not yet committed, and a rerun skips the committed ones. The units that do not fill a last
   round (all of them when there are fewer units than ranks, e.g. the one folder of ``--predictions``) are shared
   instead, one after another: every rank evaluates a contiguous block of the unit's views and rank 0 merges the
   parts (:mod:`~scenemetrics.evaluation.shards`) before committing the unit.
3. A unit (or a rank's block of it) is evaluated with fresh metric states (``reset()``), never synchronised with
   other ranks through the process group (``sync_on_compute=False`` and a ``distributed_available_fn`` that says
   no): the scene score is that rank's ``compute()``, or for a shared unit the ``compute()`` of the parts' states
   combined on rank 0. A failure of one metric in one unit is recorded (``error`` with the message and traceback)
   and everything else continues; a rerun retries it.
4. Rank 0 then writes the tables and the report (:mod:`scenemetrics.evaluation.report`). Per-method **pooled**
   values combine the states of all the method's units through torchmetrics' own ``Metric.sync`` with a gather
   function that returns the units' states (:func:`pooled_values`): each unit plays a rank.

The jobs live in their own modules: :mod:`~scenemetrics.evaluation.config` (``EvalConfig``, ``EvalSummary``),
:mod:`~scenemetrics.evaluation.planning`, :mod:`~scenemetrics.evaluation.processes` (one process or Fabric),
:mod:`~scenemetrics.evaluation.unit` (one unit, stage by stage), :mod:`~scenemetrics.evaluation.records` (the commit
log), :mod:`~scenemetrics.evaluation.states` (values, states, pooling) and :mod:`~scenemetrics.evaluation.report`.
This module drives them.

Example:
    >>> from scenemetrics.evaluation import EvalConfig
    >>> EvalConfig(root="runs", out="results", metrics=("psnr", "ssim")).devices
    '1'
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import shutil
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.config import EvalConfig, EvalSummary
from scenemetrics.evaluation.layout import Unit, check_output_folder
from scenemetrics.evaluation.planning import Plan, make_plan
from scenemetrics.evaluation.processes import FabricProcesses, LocalProcess, make_fabric, wants_processes
from scenemetrics.evaluation.records import commit_unit
from scenemetrics.evaluation.shards import merge_parts, split_units
from scenemetrics.evaluation.unit import UnitMetrics, error_text, evaluate_unit_safely, print_line
from scenemetrics.registry import (
    MetricAdapter,
    apply_protocol,
    check_metric_options,
    load_plugins,
    resolve_metrics,
)

__all__ = ["run_evaluation"]

WORK_DIR = ".work"
"""Scratch folder inside ``--out`` (random checkpoints, LPIPS's completed checkpoint): each rank's run removes its
own; a killed run's leftovers are removed by the next run, under the output lock."""


def run_evaluation(config: EvalConfig) -> EvalSummary | None:
    """Evaluate every unit under ``config.root`` with ``config.metrics`` and write tables and a report.

    Runs on one plain process (Lightning not even imported) when a single device is asked for and no launcher
    (torchrun, SLURM) started several processes; otherwise through a Lightning Fabric launched with
    ``config.devices``/``num_nodes``/``strategy`` (``ddp`` re-runs the command line in the other processes, as
    Lightning does; several CPU processes of one Linux machine are forked, ``ddp_fork``, unless a strategy is given:
    :func:`~scenemetrics.evaluation.processes.fabric_strategy`).

    Returns:
        The :class:`EvalSummary` on rank 0 (``None`` on the other ranks).

    Raises:
        ValueError: an unknown metric or option, no available metric, nothing to evaluate, or a bad ``--device``.
        ImportError: several processes without ``lightning`` (naming ``pip install "scenemetrics[lightning]"``).
    """
    fabric = make_fabric(config) if wants_processes(config) else None
    if fabric is None:
        from scenemetrics.devices import resolve_device

        return _worker(LocalProcess(resolve_device(config.device)), config)
    outcome = fabric.launch(_fabric_worker, config)
    return outcome.unwrap() if isinstance(outcome, _Outcome) else None


@dataclasses.dataclass
class _Outcome:
    """What rank 0's worker hands back to the process that launched Fabric (the same process, or through a queue
    from a forked or spawned one): the summary or the failure, and the warnings raised meanwhile."""

    summary: EvalSummary | None = None
    failure: BaseException | None = None
    traceback: str = ""
    warnings: list[tuple[str, type[Warning], str, int]] = dataclasses.field(default_factory=list)

    def unwrap(self) -> EvalSummary | None:
        """Raise the warnings again here (the CLI shows them), then the failure, or return the summary."""
        for message, category, filename, lineno in self.warnings:
            warnings.warn_explicit(message, category, filename, lineno)
        if self.failure is not None:
            raise self.failure from _WorkerTracebackError(self.traceback)
        return self.summary


class _WorkerTracebackError(Exception):
    """The traceback of a failure in a Fabric worker process, as text (shown with ``SCENEMETRICS_DEBUG=1``)."""

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


class _StoppedByRankZeroError(RuntimeError):
    """Raised on the other ranks when rank 0 failed: rank 0 reports the failure, the others stop quietly."""


def _fabric_worker(fabric: Any, config: EvalConfig) -> _Outcome | None:
    """:func:`_worker` on one of Fabric's processes. Rank 0 returns an :class:`_Outcome` (a failure and the warnings
    are values: a forked or spawned rank 0 reaches the launching process only through its return value); the other
    ranks return ``None``, stop quietly when rank 0 failed and raise their own failures. Every rank ends its
    process group (:func:`~scenemetrics.devices.end_process_group`)."""
    from scenemetrics.devices import end_process_group

    try:
        return _fabric_rank(fabric, config)
    finally:
        end_process_group()


def _fabric_rank(fabric: Any, config: EvalConfig) -> _Outcome | None:
    if fabric.global_rank != 0:
        with contextlib.suppress(_StoppedByRankZeroError):
            _worker(FabricProcesses(fabric), config)
        return None
    outcome = _Outcome()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome.summary = _worker(FabricProcesses(fabric), config)
        except Exception as err:
            outcome.failure = _picklable(err)
            outcome.traceback = traceback.format_exc()
    outcome.warnings = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    return outcome


def _picklable(err: BaseException) -> BaseException:
    """``err``, or a ``RuntimeError`` with its text when it cannot travel between processes."""
    import pickle

    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:
        return RuntimeError(error_text(err))


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
    """The evaluation on one rank: check, plan (rank 0), evaluate in rounds and commit, report (rank 0)."""
    config, entries, unavailable = _checked(config)
    rank0 = dist.rank == 0
    with contextlib.ExitStack() as stack:
        plan = _plan(dist, config, entries, unavailable, stack)
        pending = [u for u in plan.units if plan.todo[u.key]]
        if config.dry_run:
            if rank0:
                _print_plan(plan, entries)
            return EvalSummary(out=Path(config.out), unavailable=dict(unavailable)) if rank0 else None
        if rank0 and not config.quiet:
            _print_training_views(pending, plan, entries)
        summary = EvalSummary(
            out=Path(config.out), skipped_done=len(plan.units) - len(pending), unavailable=dict(unavailable)
        )
        out = Path(config.out)
        (out / WORK_DIR).mkdir(parents=True, exist_ok=True)
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"rank{dist.rank}-", dir=out / WORK_DIR)))
        talk = rank0 and not config.quiet
        metrics = UnitMetrics(config, dist.device, work, announce=talk)
        outcomes = _evaluate_in_rounds(dist, config, plan, pending, entries, metrics, summary, stack, talk)
        _report_outcomes(outcomes, summary)
        dist.barrier()
        if not rank0:
            return None
        from scenemetrics.evaluation.report import finalize

        return finalize(config, plan, metrics, summary)


def _checked(config: EvalConfig) -> tuple[EvalConfig, list[MetricAdapter], dict[str, str]]:
    """Load the plugins; check the options against each metric's schema, the metrics and the other settings.

    Returns:
        ``(config with checked options, the metrics that can run, {metric: why it cannot})``.

    Raises:
        ValueError: an option of an unknown metric, an unknown key or a bad value; a bad ``background`` or
            ``max_thumbnails``; no metric that can run.
    """
    load_plugins(config.plugins)
    config = dataclasses.replace(config, options=check_metric_options(config.options))
    if config.protocol is not None:
        config = dataclasses.replace(config, metrics=apply_protocol(config.protocol, config.metrics, config.options))
    entries, unavailable = resolve_metrics(config.metrics, config.options, config.random_weights)
    if config.background not in (None, "white", "black"):
        raise ValueError(f"`background` must be 'white', 'black' or None; received {config.background!r}")
    if not (isinstance(config.max_thumbnails, int) and config.max_thumbnails >= 0):
        raise ValueError(f"`max_thumbnails` must be an int >= 0; received {config.max_thumbnails!r}")
    if not (isinstance(config.max_panels, int) and config.max_panels >= 0):
        raise ValueError(f"`max_panels` must be an int >= 0; received {config.max_panels!r}")
    if not entries:
        raise ValueError(
            "none of the requested metrics can run here: " + "; ".join(f"{n}: {why}" for n, why in unavailable.items())
        )
    return config, entries, unavailable


def _share(dist: Any, value: Any, failure: BaseException | None) -> Any:
    """Broadcast rank 0's ``value`` and failure: every rank raises when rank 0 failed (none waits in a collective)."""
    value, message = dist.broadcast((value, None if failure is None else error_text(failure)))
    if failure is not None:
        raise failure
    if message is not None:
        raise _StoppedByRankZeroError(f"rank 0 stopped the evaluation: {message}")
    return value


def _plan(
    dist: Any,
    config: EvalConfig,
    entries: list[MetricAdapter],
    unavailable: dict[str, str],
    stack: contextlib.ExitStack,
) -> Plan:
    """Rank 0 takes the output folder's lock, warns about unavailable metrics and plans; every rank gets the plan."""
    plan, failure = None, None
    if dist.rank == 0:
        try:
            if not config.dry_run:
                out = Path(config.out)
                if config.root is not None:  # before the lock file marks the folder as an output folder
                    check_output_folder(config.root, out, config.split)
                stack.enter_context(_out_lock(out))
                # scratch files of a run that was killed (SIGKILL skips every cleanup): ours now, under the lock
                shutil.rmtree(out / WORK_DIR, ignore_errors=True)
            for name, why in unavailable.items():
                warnings.warn(f"metric {name!r} is unavailable and is not evaluated: {why}", UserWarning, stacklevel=4)
            plan = make_plan(config, entries, unavailable)
        except Exception as err:
            failure = err
    return _share(dist, plan, failure)


def _uses_training_views(unit: Unit, plan: Plan, entries: Sequence[MetricAdapter]) -> bool:
    by_name = {e.name: e for e in entries}
    return any("train" in by_name[name].inputs for name in plan.todo[unit.key])


def _print_plan(plan: Plan, entries: Sequence[MetricAdapter]) -> None:
    for u in plan.units:
        what = ", ".join(plan.todo[u.key]) or "(done)"
        print(f"{u.key} [{u.layout}, {len(u.views)} views]: {what}")
        if _uses_training_views(u, plan, entries):
            print(f"  training views: {u.train_origin}")


def _print_training_views(units: Sequence[Unit], plan: Plan, entries: Sequence[MetricAdapter]) -> None:
    """Where each unit's training views (the references) come from, one line per unit that uses them."""
    for u in units:
        if _uses_training_views(u, plan, entries):
            print_line(f"{u.key}: training views: {u.train_origin}")


@dataclasses.dataclass
class _Outcomes:
    """What rank 0 tells the user after the rounds: grouped warnings, skips and errors (each once)."""

    warnings: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # message -> units
    skipped: dict[tuple[str, str], list[str]] = dataclasses.field(default_factory=dict)  # (metric, reason) -> units
    errors: dict[tuple[str, str], list[str]] = dataclasses.field(default_factory=dict)  # (metric, message) -> units


def _evaluate_in_rounds(
    dist: Any,
    config: EvalConfig,
    plan: Plan,
    pending: Sequence[Unit],
    entries: Sequence[MetricAdapter],
    metrics: UnitMetrics,
    summary: EvalSummary,
    stack: contextlib.ExitStack,
    talk: bool,
) -> _Outcomes:
    """Unit ``i`` of the full rounds goes to rank ``i % world_size``; each unit after them is shared by every rank
    (a block of its views each). After each round rank 0 commits what was gathered."""
    from tqdm.auto import tqdm

    show = talk and _is_terminal()  # bars only on a terminal; a log gets one plain line per unit instead
    overall = stack.enter_context(tqdm(total=len(pending), desc="units", disable=not show, file=sys.stderr))
    by_name = {e.name: e for e in entries}
    outcomes = _Outcomes()
    whole = split_units(len(pending), dist.world_size)

    def commit(payloads: Callable[[], Sequence[dict[str, Any] | None]]) -> None:
        # rank 0 commits payloads() (called there only); every rank then learns whether that failed (and raises)
        failure = None
        if dist.rank == 0:
            try:
                _commit_round(Path(config.out), payloads(), plan, summary, outcomes, len(pending), overall, talk, show)
            except Exception as err:
                failure = err
        _share(dist, None, failure)

    for k in range(math.ceil(whole / dist.world_size)):
        i = k * dist.world_size + dist.rank
        payload = None
        if i < whole:
            adapters = [by_name[name] for name in plan.todo[pending[i].key]]
            payload = evaluate_unit_safely(pending[i], adapters, metrics, config, show)
        gathered = dist.all_gather(payload)
        commit(lambda gathered=gathered: gathered)
    for unit in pending[whole:]:
        shared = {name: by_name[name] for name in plan.todo[unit.key]}
        part = evaluate_unit_safely(unit, list(shared.values()), metrics, config, show, (dist.rank, dist.world_size))
        parts = dist.all_gather(part)
        merge = functools.partial(merge_parts, parts, shared, metrics, unit.warnings, config.max_panels)
        commit(lambda merge=merge: [merge()])
    overall.close()
    return outcomes


def _commit_round(
    out: Path,
    gathered: Sequence[dict[str, Any] | None],
    plan: Plan,
    summary: EvalSummary,
    outcomes: _Outcomes,
    total: int,
    bar: Any,
    talk: bool,
    show: bool,
) -> None:
    """Commit every unit of a round (rank 0) and note its warnings, skips and errors."""
    for r, p in enumerate(gathered):
        if p is None:
            continue
        record = commit_unit(out, p, plan, r)
        summary.evaluated += 1
        where = f"{record['method']}/{record['scene']}"
        for msg in record["warnings"]:
            outcomes.warnings.setdefault(msg, []).append(where)
        for name, cell in record["metrics"].items():
            if cell["status"] == "error":
                outcomes.errors.setdefault((name, cell["error"]), []).append(where)
            elif cell["status"] == "skipped":
                outcomes.skipped.setdefault((name, cell["reason"]), []).append(where)
        bar.update(1)
        if talk and not show:
            print_line(f"[{summary.evaluated}/{total}] {where} done ({record['seconds']:.1f} s)")


def _report_outcomes(outcomes: _Outcomes, summary: EvalSummary) -> None:
    """One line per distinct warning, one warning per distinct skip; the errors go to ``summary.error_groups``."""
    for msg, units in outcomes.warnings.items():
        print_line(f"warning: {msg} ({_units_text(units)})")
    for (name, reason), units in outcomes.skipped.items():
        where = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
        warnings.warn(f"{name} skipped for {len(units)} unit(s) ({where}): {reason}", UserWarning, stacklevel=3)
    summary.error_groups = [
        {"metric": name, "error": message, "units": units} for (name, message), units in outcomes.errors.items()
    ]


def _units_text(units: Sequence[str]) -> str:
    """``"3 units: a/x, a/y, b/x"`` (the first three named)."""
    names = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
    return f"{len(units)} unit{'' if len(units) == 1 else 's'}: {names}"
