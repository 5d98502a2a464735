"""``scenemetrics eval``: every metric over ``<root>/<method>/<scene>/``, resumable, on one or many devices.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="scenemetrics")
    >>> register(parser.add_subparsers())
    >>> args = parser.parse_args(["eval", "--root", "runs", "--out", "res", "--lpips-net", "vgg"])
    >>> options_from_args(args)["lpips"]
    {'net': 'vgg'}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from scenemetrics import cliutils as _cli
from scenemetrics.registry import (
    Option,
    OptionFlag,
    apply_protocol,
    load_plugins,
    option_flags,
    parse_metric_option,
    protocol_names,
)

__all__ = ["options_from_args", "register", "run"]

_EPILOG = """\
layout: <root>/<method>/<scene>/{renders,gt,train}/ [+ cameras.json]; NerfBaselines predictions (color/, gt-color/;
nerfbaselines train's predictions-<step>.tar.gz), ns-render output (<split>/rgb/, <split>/gt-rgb/) and 3DGS model
folders (test/ours_<iteration>/{renders,gt}/) are recognised too. Results go to <out>/results.jsonl (one line
per finished unit; a rerun skips what is done), results.csv, leaderboard.csv, results.json and report/index.html.
See docs/eval.md.
"""

_METAVARS = {str: "NAME", int: "N", float: "F"}


def _metavar(opt: Option) -> str:
    if opt.choices is not None and not isinstance(opt.choices, str):
        return "{" + ",".join(map(str, opt.choices)) + "}"
    if opt.type in _METAVARS:
        return _METAVARS[opt.type]
    return "PATH" if "path" in opt.type_text else "LIST"


def _flag_help(flag: OptionFlag) -> str:
    opt = flag.option
    text = opt.help
    if opt.default is not None and not opt.is_flag:
        text += f" (default: {opt.default})"
    if len(flag.metrics) > 1:
        text += f" [{', '.join(flag.metrics)}]"
    return text.replace("%", "%%")


def _flag_type(flag: OptionFlag) -> Any:
    from scenemetrics.registry import get_metric

    adapter = get_metric(flag.metrics[0])

    def parse(text: str) -> Any:
        try:
            return adapter.parse_option(flag.key, text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def _add_option_flags(group: argparse._ArgumentGroup) -> tuple[OptionFlag, ...]:
    """One ``--<family>-<key>`` flag per option of the metrics registered now (the built-in ones)."""
    flags = tuple(option_flags())
    for flag in flags:
        name = "--" + flag.name.replace("_", "-")
        if flag.option.is_flag:
            help_text = _flag_help(flag)
            group.add_argument(name, dest=flag.name, action="store_const", const=True, default=None, help=help_text)
        else:
            group.add_argument(
                name, dest=flag.name, type=_flag_type(flag), metavar=_metavar(flag.option), help=_flag_help(flag)
            )
    return flags


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _step(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a step number >= 0; received {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate every method x scene of a results tree with several metrics (resumable, multi-GPU)",
        description=(
            "Score every <root>/<method>/<scene>/ with the named metrics (PSNR/SSIM/LPIPS from torchmetrics, "
            "PuzzleSim, OSIM, PRISM, and registered plugins), shard the scenes over processes with Lightning "
            "Fabric, commit each finished scene atomically, and write a leaderboard (CSV/JSON) and an HTML report."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--root", metavar="DIR", help="folder with one folder per method")
    p.add_argument(
        "--predictions",
        nargs="+",
        default=[],
        metavar="PATH",
        help="NerfBaselines predictions folders or .tar.gz/.zip archives (named by their info.json)",
    )
    p.add_argument(
        "--max-archive-size",
        metavar="SIZE",
        help="the most one predictions archive may unpack to, e.g. 100G (default: half the free space at --out, "
        "at most 64G)",
    )
    p.add_argument(
        "--nerfstudio-config",
        nargs="+",
        default=[],
        metavar="CONFIG",
        help="trained nerfstudio runs (outputs/<exp>/<method>/<time>/config.yml): render --split (test) and score",
    )
    p.add_argument(
        "--train-views",
        metavar="DIR",
        help="training views of every scene (PuzzleSim's references; they win over a scene folder's own): "
        "DIR/<scene>/images/, DIR/<scene>/ or DIR; held-out test views are dropped where the split is known",
    )
    p.add_argument(
        "--step",
        type=_step,
        metavar="N",
        help="the training step (NerfBaselines predictions-<N>) or iteration (3DGS ours_<N>) to score "
        "(default: the highest)",
    )
    _cli.add_out_arg(p)
    p.add_argument(
        "--metrics",
        default="psnr,ssim,lpips,puzzlesim",
        metavar="LIST",
        help="comma-separated metric names, or 'all' (default: psnr,ssim,lpips,puzzlesim; also osim, prism, "
        "prism_mmd, and the baselines fid, kid, cmmd, fd_dinov2, jfid, jcmmd, jfd_dinov2, clip_s, clip_s_src, "
        "dino_sim, dino_sim_src)",
    )
    p.add_argument(
        "--protocol",
        choices=protocol_names(),
        help="score SSIM and LPIPS as one published table did: 3dgs (ssim_3dgs, lpips_3dgs), nerfbaselines "
        "(ssim_nerfbaselines, LPIPS AlexNet) or scenemetrics (ssim, lpips); replaces ssim and lpips in --metrics",
    )
    p.add_argument(
        "--layout",
        default="auto",
        choices=("auto", "scenemetrics", "nerfbaselines", "nerfstudio", "gaussian-splatting"),
        help="scene folder layout (default: detected per folder)",
    )
    p.add_argument("--data", metavar="DIR", help="dataset <data>/<scene>/{gt,train}/ for what a scene folder lacks")
    p.add_argument("--split", help="ns-render split folder (default: test, else val); --nerfstudio-config's split")
    p.add_argument("--methods", type=_csv_list, metavar="LIST", help="only these methods (comma-separated)")
    p.add_argument("--scenes", type=_csv_list, metavar="LIST", help="only these scenes (comma-separated)")

    w = p.add_argument_group("metric options (each metric's own; --metric-option for any metric, plugins included)")
    flags = _add_option_flags(w)
    w.add_argument(
        "--metric-option",
        action="append",
        default=[],
        metavar="METRIC.KEY=VALUE",
        help="an option of any metric, e.g. puzzlesim.layers=[2,3] (VALUE: JSON, a list as 2,3, or text), repeatable",
    )
    w.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import a module that registers more metrics (scenemetrics.registry.register_metric), repeatable",
    )
    _cli.add_weights_arg(
        w,
        help="folder searched for their checkpoint files by the metrics with a weights option (a metric's own "
        "--<metric>-weights wins)",
    )

    r = p.add_argument_group("inputs and outputs")
    r.add_argument(
        "--background",
        choices=("white", "black"),
        help="composite RGBA images onto this colour (default: the background the folder's pipeline recorded, "
        "e.g. NerfBaselines' info.json; else the alpha channel is dropped, with a warning)",
    )
    r.add_argument("--thumbnails", type=int, default=4, metavar="N", help="map thumbnails per scene in the report")
    r.add_argument(
        "--panels",
        type=int,
        default=2,
        metavar="N",
        help="render | ground truth | map panels of each method's N worst views in the report, per full-reference "
        "map metric (ssim_map, lpips_map, abs_error)",
    )
    r.add_argument("--no-report", action="store_true", help="write the tables but no HTML report")
    r.add_argument("--force", action="store_true", help="recompute everything, even what is already committed")
    r.add_argument("--dry-run", action="store_true", help="list the units and what would be computed, then stop")
    _cli.add_device_arg(p)
    _cli.add_distributed_args(p)
    _cli.add_quiet_arg(p)
    p.set_defaults(func=run, option_flags=flags)


def options_from_args(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per-metric options from the ``--<family>-<key>`` flags, ``--weights DIR`` (for every metric with a
    ``weights`` option) and ``--metric-option`` (checked against the metric's schema; plugins must be loaded).

    Raises:
        scenemetrics.cliutils.UsageError: a malformed ``--metric-option``, an unknown metric or key, or a bad value
            (the message names the metric, the key and the valid keys).
    """
    options: dict[str, dict[str, Any]] = {}
    flags = getattr(args, "option_flags", ())
    for flag in flags:
        value = getattr(args, flag.name, None)
        if value is not None:
            for name in flag.metrics:
                options.setdefault(name, {})[flag.key] = value
    if getattr(args, "weights", None) is not None:
        for flag in flags:
            if flag.key == "weights":
                for name in flag.metrics:
                    options.setdefault(name, {}).setdefault("weights", args.weights)
    for spec in args.metric_option:
        try:
            name, key, value = parse_metric_option(spec)
        except ValueError as err:
            raise _cli.UsageError(f"--metric-option: {err}") from None
        options.setdefault(name, {})[key] = value
    return options


def _print_leaderboard(results_json: Any) -> None:
    from scenemetrics.evaluation.report import format_value
    from scenemetrics.jsonio import restore

    doc = restore(json.loads(results_json.read_text()))
    cols = doc["columns"]
    table = [["method", "scenes", *cols]]
    for row in doc["leaderboard"]:
        table.append(
            [row["method"], str(row["scenes"])]
            + [
                format_value(row["mean"][c]) + ("" if row["count"][c] == row["scenes"] else f" ({row['count'][c]})")
                for c in cols
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def run(args: argparse.Namespace) -> int:
    program = getattr(args, "program", False)
    if program:  # every evaluation needs torch and torchmetrics (the metrics are torchmetrics classes)
        _cli.preload("torch", "torchmetrics", "scenemetrics.evaluation.runner")
    from scenemetrics.evaluation.config import EvalConfig
    from scenemetrics.evaluation.processes import wants_processes
    from scenemetrics.evaluation.runner import run_evaluation

    if args.thumbnails < 0:
        raise _cli.CLIError(f"--thumbnails must be >= 0; received {args.thumbnails}")
    if args.panels < 0:
        raise _cli.CLIError(f"--panels must be >= 0; received {args.panels}")
    if args.root is None and not args.predictions and not args.nerfstudio_config:
        raise _cli.CLIError("nothing to evaluate: give --root DIR, --predictions PATH ... or --nerfstudio-config ...")
    max_archive_bytes = None
    if args.max_archive_size is not None:
        from scenemetrics.evaluation.predictions import parse_size

        try:
            max_archive_bytes = parse_size(args.max_archive_size, "--max-archive-size")
        except ValueError as err:
            raise _cli.CLIError(str(err)) from None
    if not args.dry_run:
        _cli.random_weights_banner(args)
    elif args.random_weights and args.weights is not None:
        raise _cli.CLIError("--weights and --random-weights exclude each other; pass one of them")
    try:
        load_plugins(args.plugin)
    except (ImportError, FileNotFoundError) as err:
        raise _cli.UsageError(str(err)) from None
    options = options_from_args(args)
    if args.protocol is not None:
        try:
            apply_protocol(args.protocol, _csv_list(args.metrics), options)
        except ValueError as err:
            raise _cli.UsageError(f"--protocol: {err}") from None
    config = EvalConfig(
        root=args.root,
        predictions=tuple(args.predictions),
        max_archive_bytes=max_archive_bytes,
        nerfstudio_configs=tuple(args.nerfstudio_config),
        train_views=args.train_views,
        step=args.step,
        protocol=args.protocol,
        out=args.out,
        metrics=_csv_list(args.metrics),
        layout=args.layout,
        data=args.data,
        split=args.split,
        methods=args.methods,
        scenes=args.scenes,
        options=options,
        plugins=tuple(args.plugin),
        random_weights=args.random_weights,
        background=args.background,
        max_thumbnails=args.thumbnails,
        max_panels=args.panels,
        report=not args.no_report,
        force=args.force,
        dry_run=args.dry_run,
        device=args.device,
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        quiet=args.quiet,
    )
    if program and wants_processes(config):
        _cli.preload("lightning.fabric")
    summary = run_evaluation(config)
    if summary is None or config.dry_run:  # a non-zero rank, or nothing evaluated
        return 0
    _print_leaderboard(summary.files["results.json"])
    if not args.quiet:
        print(
            f"{summary.evaluated} unit(s) evaluated, {summary.skipped_done} already done; results in {summary.out}",
            file=sys.stderr,
        )
    if summary.failures:
        for group in summary.error_groups:
            print(f"scenemetrics: error: {_group_text(group, args.option_flags)}", file=sys.stderr)
        listed = " above" if summary.error_groups else ""
        raise _cli.CLIError(
            f"{len(summary.failures)} (method, scene, metric) result(s) failed{listed}; every result is in "
            f"{summary.files['results.json']} (a rerun retries the failed ones)"
        )
    return 0


def _weights_flag(metric: str, flags: Sequence[OptionFlag]) -> tuple[str, bool]:
    """How ``metric``'s weights are set on this command line, and whether ``--weights DIR`` reaches them too."""
    for flag in flags:
        if flag.key == "weights" and metric in flag.metrics:
            return "--" + flag.name.replace("_", "-"), True
    return f"--metric-option {metric}.weights=", False


def _group_text(group: dict[str, Any], flags: Sequence[OptionFlag] = ()) -> str:
    """One line for one distinct error: the metric, how many units (the first few named) and the message.

    A missing checkpoint names the command's flags (``--puzzlesim-weights PATH``, ``--random-weights``) instead of
    the Python argument.
    """
    metric, message, units = group["metric"], group["error"], group["units"]
    names = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
    if message.startswith("WeightsNotFoundError:"):
        flag, folder = _weights_flag(metric, flags)
        message = _cli.weights_message(message, flag)
        if folder:
            message = message.replace(f"pass {flag} PATH", f"pass {flag} PATH (or --weights DIR)")
    return f"{metric} failed in {len(units)} unit{'' if len(units) == 1 else 's'} ({names}): {message}"
