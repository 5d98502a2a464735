"""The ``scenemetrics`` command. Each room owns its subcommands; this module only assembles them.

A room's CLI module (listed in :data:`ROOM_CLIS`) imports the shared flags and helpers from
:mod:`scenemetrics.cliutils` and defines ``register(subparsers)``, which adds its parser(s) and
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
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from scenemetrics.cliutils import UsageError, weights_message

__all__ = ["ROOM_CLIS", "build_parser", "main"]

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
    "scenemetrics.evaluation.sweep_cli",  # `scenemetrics agreement sweep`: after the agreement command it joins
)
"""Modules whose ``register(subparsers)`` adds subcommands; a module that does not exist is skipped.

Importing one of them (and its room's ``__init__``) must not import torch: ``tests/test_cli_startup.py`` checks it.
"""


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
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage, 130 interrupted by Ctrl-C / SIGINT).

    Args:
        argv: the arguments; ``None`` (the ``scenemetrics`` program) reads ``sys.argv``. The warnings a command raises
            are shown once each after it: as ``scenemetrics: warning:`` lines on stderr when ``argv`` is ``None``,
            and raised again (once each, with a count) for a Python caller. Commands see ``args.program``: whether
            the process is the program (they may then tune it, e.g. :func:`scenemetrics.cliutils.preload`).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help / --version exit 0, usage errors exit 2
        return int(exc.code or 0)
    args.program = argv is None
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    failure: str | None = None  # the last line on stderr, after the warnings
    code: int | None = 1
    with _deferred_warnings() as caught:
        try:
            code = args.func(args)
        except KeyboardInterrupt:
            failure, code = "scenemetrics: interrupted", 130  # 128 + SIGINT, as shells report a stopped program
        except UsageError as err:
            failure, code = f"scenemetrics {args.command}: error: {err}", 2
        except Exception as err:
            if os.environ.get("SCENEMETRICS_DEBUG", "").strip() not in ("", "0"):
                traceback.print_exc()
            failure, code = f"scenemetrics: error: {_error_text(err, args)}", 1
    _print_warnings(caught, program=argv is None)
    if failure is not None:
        print(failure, file=sys.stderr)
        return code if code in (2, 130) else 1
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
