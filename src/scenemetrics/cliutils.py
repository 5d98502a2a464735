"""Helpers shared by every ``scenemetrics`` subcommand: the shared flags, errors, device, progress and JSON output.

Each room's CLI module imports what it needs from here; :mod:`scenemetrics.cli` only assembles the subcommands (and
re-exports these names). Importing this module imports no torch, so building the parser stays fast.

Shared flags: ``--out DIR`` (:func:`add_out_arg`), ``--weights PATH`` / ``--random-weights`` (:func:`add_weights_arg`),
``--device`` (:func:`add_device_arg`), ``--quiet`` (:func:`add_quiet_arg`) and ``--devices/--num-nodes/--strategy``
(:func:`add_distributed_args`). A :class:`CLIError` is reported as one line on stderr with exit code 1.

Example:
    >>> import argparse
    >>> from scenemetrics.cliutils import add_out_arg, add_quiet_arg
    >>> parser = argparse.ArgumentParser()
    >>> add_out_arg(parser, default="results")
    >>> add_quiet_arg(parser)
    >>> parser.parse_args(["--quiet"])
    Namespace(out='results', quiet=True)
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "RANDOM_BANNER",
    "CLIError",
    "UsageError",
    "add_device_arg",
    "add_distributed_args",
    "add_out_arg",
    "add_quiet_arg",
    "add_weights_arg",
    "announce",
    "preload",
    "progress",
    "random_weights_banner",
    "resolve_device",
    "scratch_dir",
    "show_progress",
    "unit_interval",
    "weights_message",
]

RANDOM_BANNER = (
    "!! RANDOM WEIGHTS: the networks are uncalibrated random ones; the numbers and maps below only show that "
    "the pipeline runs. Run without --random-weights (online once) for meaningful scores. !!"
)
"""Printed on stderr (and written into the outputs) whenever a command runs with ``--random-weights``."""


class CLIError(Exception):
    """An error to report as one line on stderr with exit code 1."""


class UsageError(CLIError):
    """A usage error found after the arguments were parsed (an option the metric does not have, a plugin that does not
    import): one line on stderr with exit code 2, like argparse's own usage errors."""


def unit_interval(text: str) -> float:
    """An argparse ``type=`` for thresholds in [0, 1] (a usage error, exit code 2, otherwise).

    Example:
        >>> unit_interval("0.35")
        0.35
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1]; received {text!r}")
    return value


def add_out_arg(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """Add ``--out DIR``, the output folder of every command (required when there is no ``default``)."""
    parser.add_argument(
        "--out",
        required=default is None,
        default=default,
        metavar="DIR",
        help="output folder (created; JSON and PNGs are written inside)"
        + (f" (default: {default})" if default else ""),
    )


def add_weights_arg(
    parser: argparse.ArgumentParser,
    *,
    random: bool = True,
    help: str = "checkpoint file or folder (default: the scenemetrics cache, downloading on first use)",
) -> None:
    """Add ``--weights PATH`` and (``random=True``) ``--random-weights``, the flags of every weight-loading command.

    Weight errors of the command (:class:`scenemetrics.hub.WeightsNotFoundError`) are reworded by :func:`main` to
    name these flags (:func:`weights_message`).
    """
    parser.add_argument("--weights", metavar="PATH", default=None, help=help)
    if random:
        parser.add_argument(
            "--random-weights",
            action="store_true",
            help="deterministic random networks instead of pretrained ones (offline; uncalibrated, a smoke test only)",
        )
    parser.set_defaults(_weights_flags=("--weights", "--random-weights" if random else None))


def random_weights_banner(args: argparse.Namespace) -> bool:
    """Print :data:`RANDOM_BANNER` on stderr when ``args.random_weights`` is set (and not ``--weights`` too).

    Returns:
        Whether random weights are used.

    Raises:
        CLIError: ``--weights`` and ``--random-weights`` are both given.
    """
    if not getattr(args, "random_weights", False):
        return False
    if getattr(args, "weights", None) is not None:
        raise CLIError("--weights and --random-weights exclude each other; pass one of them")
    print(RANDOM_BANNER, file=sys.stderr)
    return True


def weights_message(
    err: BaseException | str, flag: str = "--weights", random_flag: str | None = "--random-weights"
) -> str:
    """The text of a weight error reworded for the command line: the CLI flag instead of the Python argument.

    Example:
        >>> weights_message(FileNotFoundError("No x.pth; pass weights_path= pointing at it."), random_flag=None)
        'No x.pth; pass --weights PATH pointing at it.'
    """
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    text = re.sub(r"\bpass weights_path=", f"pass {flag} PATH", text)
    text = re.sub(r"\bweights_path=?", flag, text)
    if random_flag and random_flag not in text:
        text += f" Offline, {random_flag} runs with uncalibrated random networks (a smoke test only)."
    return text


def preload(*modules: str) -> None:
    """Import ``modules`` (those a command will need anyway) with Python's cyclic garbage collector paused, then move
    every object that exists into its permanent generation (:func:`gc.freeze`).

    Importing torch and torchmetrics creates about 750,000 objects; the collections that this triggers find almost
    nothing to free but cost about 1.5 CPU seconds, a third of the import. The few objects of import-time reference
    cycles (about 12,000) are kept instead of collected; frozen objects are skipped by later collections and are not
    copied by forked processes that only read them. A module that cannot be imported is left for the command to
    report. Only the command-line program calls this (``args.program``), never a Python caller of
    :func:`scenemetrics.cli.main` or a library function: a frozen object is never collected.

    Example:
        >>> import gc
        >>> preload("json")
        >>> gc.isenabled(), gc.get_freeze_count() > 0
        (True, True)
        >>> gc.unfreeze()  # only in this example: the program keeps them frozen
    """
    import gc
    import importlib

    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in modules:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()


def add_device_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--device`` (a torch device string; read it with :func:`resolve_device`)."""
    parser.add_argument(
        "--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 (default: cuda when available, else cpu)"
    )


def add_quiet_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--quiet``: no progress bars (see :func:`show_progress`, :func:`progress`, :func:`announce`)."""
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def add_distributed_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--devices``, ``--num-nodes`` and ``--strategy``, the flags of work that Lightning Fabric distributes."""
    parser.add_argument("--devices", default="1", help="devices per node for Lightning Fabric (int, 'auto', list)")
    parser.add_argument("--num-nodes", type=int, default=1, help="number of nodes (Lightning Fabric)")
    parser.add_argument("--strategy", default="auto", help="Lightning Fabric strategy, e.g. ddp")


def resolve_device(device: str | None) -> Any:
    """``--device`` as a ``torch.device`` (default: cuda when available); an unusable device is a :class:`CLIError`.

    The rule is :func:`scenemetrics.devices.resolve_device`'s; this wrapper only turns its ``ValueError`` into the
    CLI's one-line error.
    """
    from scenemetrics import devices

    try:
        return devices.resolve_device(device)
    except ValueError as err:
        raise CLIError(str(err)) from None


def show_progress(quiet: bool = False) -> bool:
    """Whether to draw progress bars: not ``--quiet`` and stderr is a terminal (a log file gets no bar debris)."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable: Iterable, *, quiet: bool, desc: str, total: int | None = None) -> Iterable:
    """A tqdm bar on stderr when :func:`show_progress`; otherwise the iterable itself."""
    if not show_progress(quiet):
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, file=sys.stderr)


def announce(message: str, *, quiet: bool = False) -> None:
    """One line on stderr saying what a long step does (``"loading YOLOX-X ..."``), unless ``quiet``."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def scratch_dir(needed: bool, prefix: str) -> Iterator[Path | None]:
    """A temporary folder, created only when ``needed`` (``None`` otherwise), removed on exit.

    Commands that need scratch space only sometimes (random checkpoints) create none otherwise, so a command killed
    with SIGKILL, which skips every cleanup, leaves no empty folder behind in the temporary directory.
    """
    if not needed:
        yield None
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)
