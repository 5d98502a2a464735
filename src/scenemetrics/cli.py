"""The ``scenemetrics`` command. Each room owns its subcommands; this module only assembles them.

A room's CLI module (listed in :data:`ROOM_CLIS`) defines ``register(subparsers)``, which adds its parser(s) and
sets ``func=<callable(args) -> int | None>`` as parser default. Room CLI modules import torch and friends inside
their ``func`` so that ``scenemetrics --help`` stays fast.

Shared flags (DESIGN.md): ``--refs DIR``, ``--renders DIR`` / ``--images DIR``, ``--out DIR``, ``--weights PATH``,
``--device``, ``--quiet``. Exit codes: 0 success, 1 error (one line on stderr; the traceback with
``SCENEMETRICS_DEBUG=1``), 2 usage error.

Example:
    >>> from scenemetrics.cli import main
    >>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ROOM_CLIS",
    "CLIError",
    "add_device_arg",
    "add_distributed_args",
    "add_out_arg",
    "add_quiet_arg",
    "add_weights_arg",
    "build_parser",
    "main",
    "resolve_device",
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
    "scenemetrics.agreement.cli",
)
"""Modules whose ``register(subparsers)`` adds subcommands; a module that does not exist is skipped."""


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


def add_weights_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--weights",
        metavar="PATH",
        default=None,
        help="checkpoint file or folder (default: the scenemetrics cache, downloading on first use)",
    )


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


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON (NaN kept as ``NaN``, as Python's json does), creating parent folders."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")
    tmp.replace(p)
    return p


def progress(iterable: Iterable, *, quiet: bool, desc: str, total: int | None = None) -> Iterable:
    """A tqdm bar on stderr unless ``quiet``."""
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, disable=quiet, file=sys.stderr)


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
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help / --version exit 0, usage errors exit 2
        return int(exc.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        print("scenemetrics: interrupted", file=sys.stderr)
        return 1
    except Exception as err:
        if os.environ.get("SCENEMETRICS_DEBUG", "").strip() not in ("", "0"):
            traceback.print_exc()
        text = " ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
        print(f"scenemetrics: error: {text}", file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
