"""Background evaluation: the training thread renders, one worker thread scores, draws and logs.

With ``background=True`` (:class:`~scenemetrics.callbacks.SceneMetricsMonitor`, the Lightning and the nerfstudio
callbacks) an evaluation is split where the model stops being needed:

1. **training thread**: render the due views (this needs the model), check their shapes (nothing that reads values,
   so nothing waits for a GPU) and hand **detached copies** to the worker (:meth:`BackgroundWorker.submit`). On
   CUDA the copies are made on a side stream that waits for the training stream through an event; the training
   stream never waits for the copies nor for the evaluation, which runs on a second side stream;
2. **worker** (one thread, evaluations in the order they were handed over): check the views' values, update every
   metric, compute (the collective sync under ``torch.distributed`` runs on a process group of its own, see
   :func:`side_process_group`), draw the pictures (display ranges change in step order, as in the synchronous
   mode), and write to the loggers that are thread-safe (TensorBoard ``SummaryWriter``\\ s);
3. **training thread again**, at its next call (and when it waits, at ``close()``, and before a checkpoint): the
   finished results are handed back in step order (:meth:`BackgroundWorker.poll`) and written to the other loggers,
   each with the step at which its views were rendered; a failure in the worker is raised here as a
   :class:`BackgroundEvaluationError` naming the step and what failed.

At most ``max_pending`` evaluations are in flight; when one more is due, the training thread waits before it renders
(one warning), so at most ``max_pending`` sets of copies exist.

Example:
    >>> import torch
    >>> from scenemetrics.callbacks.evaluation import EvaluationResult
    >>> worker = BackgroundWorker("demo", max_pending=1)
    >>> logged = []
    >>> future = worker.submit(10, torch.ones(3), lambda x: EvaluationResult({"sum": float(x.sum())}),
    ...                        hand_back=lambda result, step: logged.append((step, result.scalars)))
    >>> future.result().scalars
    {'sum': 3.0}
    >>> worker.close()
    >>> logged
    [(10, {'sum': 3.0})]
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.callbacks.evaluation import EvaluationResult
from scenemetrics.callbacks.views import RenderedView

__all__ = [
    "BackgroundEvaluationError",
    "BackgroundWorker",
    "check_max_pending",
    "copy_nbytes",
    "detached_copy",
    "side_process_group",
]

HandBack = Callable[[EvaluationResult, int], None]


class BackgroundEvaluationError(RuntimeError):
    """An evaluation that ran in the background failed; raised in the training thread at its next call.

    The original exception is the ``__cause__`` (its traceback is the worker's).

    Attributes:
        step: the training step at which the views of the failed evaluation were rendered.
        activity: what the evaluation was doing, e.g. ``"computing metric 'psnr'"`` (``""`` when unknown).
        skipped: ``True`` for an evaluation that was not run because an earlier one had failed (its future only;
            the training thread is told about the first failure alone).
    """

    def __init__(self, message: str, step: int, activity: str = "", *, skipped: bool = False) -> None:
        super().__init__(message)
        self.step = step
        self.activity = activity
        self.skipped = skipped


def check_max_pending(value: Any) -> int:
    """``value`` as ``max_pending``: an int >= 1 (``ValueError`` naming ``max_pending`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`max_pending` must be an int >= 1; received {value!r}")
    return value


def detached_copy(obj: Any) -> Any:
    """``obj`` with every tensor detached and cloned (same device; strides kept for dense tensors), through
    :class:`~scenemetrics.callbacks.views.RenderedView`, mappings, tuples and lists; other objects are shared.

    Example:
        >>> t = torch.zeros(2)
        >>> copy = detached_copy({"a": (t, 1)})
        >>> t += 1
        >>> copy["a"][0].tolist(), copy["a"][1]
        ([0.0, 0.0], 1)
    """
    if isinstance(obj, Tensor):
        return obj.detach().clone()
    if isinstance(obj, RenderedView):
        return RenderedView(*(detached_copy(part) for part in obj))
    if isinstance(obj, Mapping):
        return {key: detached_copy(value) for key, value in obj.items()}
    if isinstance(obj, tuple):
        return tuple(detached_copy(part) for part in obj)
    if isinstance(obj, list):
        return [detached_copy(part) for part in obj]
    return obj


def _tensors(obj: Any) -> list[Tensor]:
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, Mapping):
        obj = list(obj.values())
    if isinstance(obj, (tuple, list)):
        return [t for part in obj for t in _tensors(part)]
    return []


def copy_nbytes(obj: Any) -> int:
    """Bytes of the tensors in ``obj`` (what :func:`detached_copy` allocates for it)."""
    return sum(t.numel() * t.element_size() for t in _tensors(obj))


def side_process_group(metrics: Mapping[str, Metric], owner: str) -> Any:
    """Under ``torch.distributed`` (world size > 1): a new gloo process group of all processes, set as the
    ``process_group`` of every metric; ``None`` otherwise.

    Background evaluations run their collectives (the per-metric count all-reduce, torchmetrics' sync in
    ``compute()``) in the worker thread, while the training thread runs its own (DDP's gradient all-reduce). On one
    process group the two threads' collectives could interleave in a different order on each process (a hang or
    mixed-up data); on a group of their own, issued by one worker in evaluation order, every process runs them in
    the same order. Gloo, not NCCL: two NCCL communicators in concurrent use on one GPU can deadlock, and gloo takes
    CUDA tensors too. Every process must call this at the same point (it is a collective).

    Raises:
        ValueError: a metric has a ``process_group`` of its own (background evaluation would have to sync on it from
            the worker thread); or torch has no gloo backend.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return None
    own = [name for name, metric in metrics.items() if getattr(metric, "process_group", None) is not None]
    if own:
        raise ValueError(
            f"{owner}: background=True syncs the metrics on a process group of its own, and metric {own[0]!r} has "
            "its own process_group; build it without process_group= or use background=False"
        )
    if not dist.is_gloo_available():
        raise ValueError(
            f"{owner}: background=True under torch.distributed needs the gloo backend (a process group for the "
            "evaluations' collectives), which this torch build lacks; use background=False"
        )
    group = dist.new_group(backend="gloo")
    for metric in metrics.values():
        metric.process_group = group
    return group


@dataclass
class _Job:
    step: int
    future: Future
    hand_back: HandBack | None


class BackgroundWorker:
    """One worker thread that runs evaluations in the order they are handed over, at most ``max_pending`` at a time.

    Only the training thread calls its methods; the worker runs the ``work`` functions.

    Args:
        owner: names the integration in messages (``"SceneMetricsMonitor"``, ...).
        max_pending: evaluations in flight (handed over, not finished) before :meth:`wait_for_slot` blocks.

    Attributes:
        copy_bytes: bytes of the copies made by the last :meth:`submit` (the memory one pending evaluation holds,
            besides what its metrics allocate).
    """

    def __init__(self, owner: str, max_pending: int = 1) -> None:
        self.owner = owner
        self.max_pending = check_max_pending(max_pending)
        self.copy_bytes = 0
        self._executor: ThreadPoolExecutor | None = None
        self._jobs: deque[_Job] = deque()
        self._failure: BackgroundEvaluationError | None = None  # written by the worker, cleared once reported
        self._warned_wait = False
        self._streams: dict[torch.device, tuple[torch.cuda.Stream, torch.cuda.Stream]] = {}

    @property
    def pending(self) -> int:
        """Evaluations handed over and not finished."""
        return sum(not job.future.done() for job in self._jobs)

    # -- training thread -------------------------------------------------------------------------------------------
    def wait_for_slot(self, step: int, *, stacklevel: int = 2) -> None:
        """Hand back what finished; if ``max_pending`` evaluations still run, wait for the oldest (warn once).

        Args:
            step: the step of the evaluation that is due (in the warning).
            stacklevel: of the warning, counted from the caller of this method (1: the caller).
        """
        self.poll()
        running = [job.future for job in self._jobs if not job.future.done()]
        excess = len(running) - self.max_pending + 1
        if excess > 0:
            if not self._warned_wait:
                self._warned_wait = True
                warnings.warn(
                    f"{self.owner}: an evaluation is due at step {step} while {len(running)} evaluation(s) still run "
                    f"in the background (max_pending={self.max_pending}); the training thread waits for them. "
                    "Evaluate less often, make the evaluation cheaper, or raise max_pending (memory for one more "
                    "set of view copies). Said once.",
                    UserWarning,
                    stacklevel=stacklevel + 1,
                )
            wait(running[:excess])
            self.poll()

    def submit(
        self,
        step: int,
        payload: Any,
        work: Callable[[Any], EvaluationResult],
        *,
        hand_back: HandBack | None = None,
        describe: Callable[[], str] = str,
        device: torch.device | str | None = None,
    ) -> Future:
        """Copy ``payload`` (:func:`detached_copy`) and run ``work(copies)`` in the worker.

        Args:
            step: the training step of the evaluation (in messages and for ``hand_back``).
            payload: what ``work`` needs of the training thread's tensors (the rendered views).
            work: runs in the worker; returns the evaluation's result.
            hand_back: ``hand_back(result, step)``, called in the training thread by :meth:`poll` once ``work``
                has finished (for loggers that must not be written from another thread).
            describe: called in the worker after ``work`` raised: what it was doing (the message names it).
            device: the metrics' device; on CUDA the copies and ``work`` run on side streams of it.

        Returns:
            The future of ``work``'s result (a :class:`BackgroundEvaluationError` if it raised).
        """
        dev = torch.device(device) if device is not None else None
        copies, ready = self._copy(payload, dev)
        self.copy_bytes = copy_nbytes(copies)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scenemetrics-eval")
        future = self._executor.submit(self._run, step, work, copies, describe, ready)
        self._jobs.append(_Job(int(step), future, hand_back))
        return future

    def poll(self) -> None:
        """Hand back the finished evaluations in the order they were submitted; raise the first failure.

        Raises:
            BackgroundEvaluationError: an evaluation failed in the worker (raised once; the evaluations handed over
                after it and before this call were not run).
        """
        while self._jobs and self._jobs[0].future.done():
            job = self._jobs.popleft()
            error = job.future.exception()
            if error is None:
                if job.hand_back is not None:
                    job.hand_back(job.future.result(), job.step)
                continue
            if isinstance(error, BackgroundEvaluationError) and error.skipped:
                continue
            if error is self._failure:
                self._failure = None  # told: evaluations handed over from now on run again
            raise error

    def drain(self) -> None:
        """Wait for every evaluation handed over and hand them back (:meth:`poll`); raise the first failure."""
        if self._jobs:
            wait([job.future for job in self._jobs])
        while self._jobs:
            self.poll()

    def close(self, *, raise_errors: bool = True) -> None:
        """:meth:`drain`, then stop the worker thread (a later :meth:`submit` starts a new one).

        Args:
            raise_errors: raise a failure (else it becomes a warning: used while another exception propagates).
        """
        try:
            if raise_errors:
                self.drain()
            else:
                if self._jobs:
                    wait([job.future for job in self._jobs])
                while self._jobs:
                    try:
                        self.poll()
                    except Exception as err:  # reported, not raised, while another error propagates
                        warnings.warn(f"{self.owner}: {err}", UserWarning, stacklevel=2)
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    # -- the copies --------------------------------------------------------------------------------------------------
    def _copy(
        self, payload: Any, device: torch.device | None
    ) -> tuple[Any, tuple[torch.cuda.Stream, torch.cuda.Event] | None]:
        if device is None or device.type != "cuda":
            return detached_copy(payload), None
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device not in self._streams:
            self._streams[device] = (torch.cuda.Stream(device), torch.cuda.Stream(device))
        copy_stream, work_stream = self._streams[device]
        # the copy stream waits for what the training stream has queued so far (the renders); the training stream
        # waits for nothing
        copy_stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(copy_stream):
            copies = detached_copy(payload)
        for tensor in _tensors(payload):
            if tensor.is_cuda:
                tensor.record_stream(copy_stream)  # the allocator keeps the originals until the copies are made
        for tensor in _tensors(copies):
            if tensor.is_cuda:
                tensor.record_stream(work_stream)  # ... and the copies until the worker's stream is done with them
        ready = torch.cuda.Event()
        ready.record(copy_stream)
        return copies, (work_stream, ready)

    # -- worker thread ---------------------------------------------------------------------------------------------
    def _run(
        self,
        step: int,
        work: Callable[[Any], EvaluationResult],
        copies: Any,
        describe: Callable[[], str],
        ready: tuple[torch.cuda.Stream, torch.cuda.Event] | None,
    ) -> EvaluationResult:
        failure = self._failure
        if failure is not None:
            raise BackgroundEvaluationError(
                f"{self.owner}: the evaluation of step {step} was not run: the background evaluation of step "
                f"{failure.step} failed before it",
                step,
                skipped=True,
            )
        try:
            if ready is None:
                return work(copies)
            work_stream, copied = ready
            work_stream.wait_event(copied)
            with torch.cuda.stream(work_stream):
                return work(copies)
        except Exception as err:
            activity = describe()
            where = f" while {activity}" if activity else ""
            error = BackgroundEvaluationError(
                f"{self.owner}: the background evaluation of step {step} failed{where}: {type(err).__name__}: {err}",
                step,
                activity,
            )
            self._failure = error
            raise error from err
