"""``scenemetrics agreement sweep``: controlled-degradation sweeps of registered metrics (does a metric get worse?).

The command belongs with the other ``scenemetrics agreement`` commands, but it builds metrics from the registry,
which the agreement package sits below: its parser is defined here, in the integration layer, and added to the
``agreement`` command through :func:`scenemetrics.agreement.cli.add_command`.

Example:
    scenemetrics agreement sweep --views views/ --metrics psnr,ssim,lpips --degradations blur,hue,noise,saltpepper \\
        --levels 3 --out sweep/ --plots
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scenemetrics import cliutils as _cli
from scenemetrics.evaluation.cli import _add_option_flags, _csv_list, options_from_args

__all__ = ["DEGRADATION_NAMES", "register", "run"]

DEGRADATION_NAMES = ("blur", "hue", "noise", "saltpepper")
"""== :data:`scenemetrics.agreement.DEGRADATIONS` (checked by a test): known here without importing torch."""

_EPILOG = """\
Each view is degraded at levels 1..L (level 0: the view itself); full-reference metrics compare the degraded view
with its original, PuzzleSim scores it against --train-views, reference-free metrics score it alone. Outputs in
--out: sweep.jsonl (one line per finished unit; a rerun resumes), sweep.json (per metric and degradation: spearman,
monotone_fraction, mean per level, every row), sweep.csv (the table), sweep.png with --plots.
"""


def register(subparsers: Any) -> None:
    """Add ``scenemetrics agreement sweep`` (nothing heavy is imported here)."""
    from scenemetrics.agreement.cli import add_command

    p = add_command(
        subparsers,
        "sweep",
        help="controlled-degradation sweeps: does each metric get worse as the views are blurred, noised, ...?",
        description=(
            "Degrade every view at increasing levels (PRISM's Gaussian blur, hue shift, Gaussian noise, "
            "salt-and-pepper), score it with registered metrics, and report Spearman's rho of score vs level and "
            "the fraction of views (scenes, for scene-level metrics) whose score gets worse at every level."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--views", required=True, metavar="DIR", help="views (one scene), or one sub-folder per scene")
    p.add_argument("--metrics", default="psnr,ssim,lpips", metavar="LIST",
                   help="comma-separated registered metrics, or 'all' (default: psnr,ssim,lpips)")  # fmt: skip
    p.add_argument("--degradations", default="blur,hue,noise,saltpepper", metavar="LIST",
                   help="comma-separated: blur, hue, noise, saltpepper (default: all four)")  # fmt: skip
    p.add_argument(
        "--levels", type=int, default=3, choices=(1, 2, 3), help="levels 1..N of each degradation (default 3)"
    )
    p.add_argument("--train-views", metavar="DIR", help="training views for PuzzleSim (DIR, or DIR/<scene>/)")
    p.add_argument("--seed", type=int, default=0, help="seed of the noise and salt-and-pepper draws (default 0)")
    _cli.add_out_arg(p)
    p.add_argument("--plots", action="store_true", help='also write sweep.png (needs "scenemetrics[viz]")')
    w = p.add_argument_group("metric options (each metric's own; --metric-option for any metric, plugins included)")
    flags = _add_option_flags(w)
    w.add_argument("--metric-option", action="append", default=[], metavar="METRIC.KEY=VALUE",
                   help="an option of any metric, e.g. lpips.net=vgg, repeatable")  # fmt: skip
    w.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py",
                   help="import a module that registers more metrics, repeatable")  # fmt: skip
    _cli.add_weights_arg(w, help="folder searched for the metrics' checkpoint files (a metric's own flag wins)")
    p.add_argument("--background", choices=("white", "black"), help="composite RGBA views onto this colour")
    p.add_argument("--force", action="store_true", help="recompute everything, even what sweep.jsonl holds")
    _cli.add_device_arg(p)
    _cli.add_quiet_arg(p)
    p.set_defaults(func=run, option_flags=flags, agreement_command="sweep")


def run(args: argparse.Namespace) -> int:
    from scenemetrics.evaluation.sweep import SweepConfig, format_table, run_sweep
    from scenemetrics.registry import load_plugins

    if args.plots:  # fail before any work when matplotlib is missing
        from scenemetrics.agreement.viz import VIZ_HINT

        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError(VIZ_HINT) from None
    degradations = _csv_list(args.degradations)
    unknown = [d for d in degradations if d not in DEGRADATION_NAMES]
    if unknown or not degradations:
        names = ", ".join(DEGRADATION_NAMES)
        raise _cli.UsageError(f"--degradations: unknown {unknown or degradations}; choose from {names}")
    if args.seed < 0:
        raise _cli.UsageError(f"--seed must be >= 0; received {args.seed}")
    _cli.random_weights_banner(args)
    try:
        load_plugins(args.plugin)
    except (ImportError, FileNotFoundError) as err:
        raise _cli.UsageError(str(err)) from None
    config = SweepConfig(
        views=args.views,
        out=args.out,
        metrics=_csv_list(args.metrics),
        degradations=degradations,
        levels=args.levels,
        seed=args.seed,
        train_views=args.train_views,
        options=options_from_args(args),
        plugins=tuple(args.plugin),
        random_weights=args.random_weights,
        device=args.device,
        force=args.force,
        plots=args.plots,
        quiet=args.quiet,
        background=args.background,
    )
    result = run_sweep(config)
    print(format_table(result.table))
    for name, why in result.unavailable.items():
        print(f"scenemetrics: warning: {name} was not run: {why}", file=sys.stderr)
    if not args.quiet:
        print(f"{result.units_run} unit(s) computed, {result.units_done} already done; results in {result.out}",
              file=sys.stderr)  # fmt: skip
    if result.errors:
        for line in result.errors[:5]:
            print(f"scenemetrics: error: {line}", file=sys.stderr)
        raise _cli.CLIError(f"{len(result.errors)} (unit, metric) result(s) failed; a rerun retries them")
    return 0
