"""The ``scenemetrics`` command. Each room owns its subcommands; this module only assembles them.

A room's CLI module (listed in :data:`ROOM_CLIS`) defines ``register(subparsers)``, which adds its parser(s) and
sets ``func=<callable(args) -> int | None>`` as parser default. Building the parser imports no torch: room CLI
modules import torch and friends inside their ``func``, so ``--help`` and usage errors answer in well under a second.

Shared flags: ``--refs DIR``, ``--renders DIR`` / ``--images DIR``, ``--out DIR``, ``--weights PATH``,
``--random-weights``, ``--device``, ``--quiet``. Exit codes: 0 success, 1 error (one line on stderr; the traceback
with ``SCENEMETRICS_DEBUG=1``), 2 usage error. Warnings raised while a command runs are shown once each, with a count,
after it (never in the middle of a progress bar); progress bars are drawn only on a terminal.

Example:
    >>> from scenemetrics.cli import main
    >>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from scenemetrics.jsonio import write_json

__all__ = [
    "RANDOM_BANNER",
    "ROOM_CLIS",
    "CLIError",
    "add_device_arg",
    "add_distributed_args",
    "add_out_arg",
    "add_quiet_arg",
    "add_weights_arg",
    "announce",
    "build_parser",
    "main",
    "random_weights_banner",
    "resolve_device",
    "show_progress",
    "weights_message",
    "write_json",
]

ROOM_CLIS = (
    "scenemetrics.demo",
    "scenemetrics.puzzlesim.cli",
    "scenemetrics.osim.cli",
    "scenemetrics.prism.cli",
    "scenemetrics.wireframe.cli",
    "scenemetrics.openlex3d.cli",
    "scenemetrics.inpainting.cli",
    "scenemetrics.evaluation.cli",
    "scenemetrics.weights_cli",
    "scenemetrics.agreement.cli",
)
"""Modules whose ``register(subparsers)`` adds subcommands; a module that does not exist is skipped.

Importing one of them (and its room's ``__init__``) must not import torch: ``tests/test_cli_startup.py`` checks it.
"""

RANDOM_BANNER = (
    "!! RANDOM WEIGHTS: the networks are uncalibrated random ones; the numbers and maps below only show that "
    "the pipeline runs. Run without --random-weights (online once) for meaningful scores. !!"
)
"""Printed on stderr (and written into the outputs) whenever a command runs with ``--random-weights``."""


class CLIError(Exception):
    """An error to report as one line on stderr with exit code 1."""


def add_out_arg(parser: argparse.ArgumentParser, default: str | None = None) -> None:
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


def add_device_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 (default: cuda when available, else cpu)"
    )


def add_quiet_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def add_distributed_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--devices", default="1", help="devices per node for Lightning Fabric (int, 'auto', list)")
    parser.add_argument("--num-nodes", type=int, default=1, help="number of nodes (Lightning Fabric)")
    parser.add_argument("--strategy", default="auto", help="Lightning Fabric strategy, e.g. ddp")


def resolve_device(device: str | None) -> Any:
    """``--device`` as a ``torch.device`` (default: cuda when available); an unusable device is a :class:`CLIError`."""
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as err:
        raise CLIError(f"--device {device!r} is not a torch device: {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CLIError(f"--device {device!r}: CUDA is not available on this machine")
    return dev


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
def _deferred_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Collect the warnings of a command; :func:`main` prints each distinct one once, with a count, afterwards."""
    with warnings.catch_warnings(record=True) as caught:
        # appended: the filters already in place (-W, PYTHONWARNINGS, the caller's) still win; the rest is counted
        warnings.simplefilter("always", append=True)
        yield caught


def _print_warnings(caught: Sequence[warnings.WarningMessage], program: bool) -> None:
    """Each distinct warning once, with a count: as the program, one ``scenemetrics: warning:`` line each on stderr;
    called from Python (``main([...])``), raised again for the caller's own warning handling."""
    groups: dict[tuple[type[Warning], str], list[warnings.WarningMessage]] = {}
    for w in caught:
        text = " ".join(line.strip() for line in str(w.message).splitlines() if line.strip())
        groups.setdefault((w.category, text), []).append(w)
    for (category, text), items in groups.items():
        message = text + (f" ({len(items)} times)" if len(items) > 1 else "")
        if program:
            label = "" if category is UserWarning else f"{category.__name__}: "
            print(f"scenemetrics: warning: {label}{message}", file=sys.stderr)
        else:
            warnings.warn_explicit(message, category, items[0].filename, items[0].lineno)


def _error_text(err: BaseException, args: argparse.Namespace) -> str:
    hub = sys.modules.get("scenemetrics.hub")
    flags = getattr(args, "_weights_flags", None)
    if hub is not None and flags and isinstance(err, hub.WeightsNotFoundError):
        return weights_message(err, *flags)
    return " ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__


def build_parser() -> argparse.ArgumentParser:
    from scenemetrics import __version__

    parser = argparse.ArgumentParser(
        prog="scenemetrics",
        description="Perceptual and structural metrics for 3D reconstruction and novel view synthesis.",
    )
    parser.add_argument("--version", action="version", version=f"scenemetrics {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in ROOM_CLIS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is not None and name.startswith(err.name):  # the room has no CLI (yet)
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage).

    Args:
        argv: the arguments; ``None`` (the ``scenemetrics`` program) reads ``sys.argv``. The warnings a command raises
            are shown once each after it: as ``scenemetrics: warning:`` lines on stderr when ``argv`` is ``None``,
            and raised again (once each, with a count) for a Python caller.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help / --version exit 0, usage errors exit 2
        return int(exc.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    failure: str | None = None
    with _deferred_warnings() as caught:
        try:
            code = args.func(args)
        except KeyboardInterrupt:
            failure = "interrupted"
        except Exception as err:
            if os.environ.get("SCENEMETRICS_DEBUG", "").strip() not in ("", "0"):
                traceback.print_exc()
            failure = f"error: {_error_text(err, args)}"
    _print_warnings(caught, program=argv is None)
    if failure is not None:  # the last line on stderr, after the warnings
        print(f"scenemetrics: {failure}", file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
