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
from typing import Any

from scenemetrics import cliutils as _cli

__all__ = ["options_from_args", "register", "run"]

_EPILOG = """\
layout: <root>/<method>/<scene>/{renders,gt,train}/ [+ cameras.json]; NerfBaselines predictions (color/, gt-color/)
and ns-render output (<split>/rgb/, <split>/gt-rgb/) are recognised too. Results go to <out>/results.jsonl (one line
per finished unit; a rerun skips what is done), results.csv, leaderboard.csv, results.json and report/index.html.
See docs/eval.md.
"""

# named flag -> (metrics it applies to, option key)
_NAMED = {
    "puzzlesim_weights": (("puzzlesim",), "weights"),
    "puzzlesim_backbone": (("puzzlesim",), "backbone"),
    "lpips_weights": (("lpips",), "weights"),
    "lpips_net": (("lpips",), "net"),
    "osim_weights": (("osim",), "weights"),
    "osim_detector": (("osim",), "detector"),
    "osim_conf": (("osim",), "conf"),
    "osim_nms": (("osim",), "nms"),
    "osim_saliency": (("osim",), "saliency"),
    "prism_model": (("prism", "prism_mmd"), "model"),
    "prism_head": (("prism", "prism_mmd"), "head"),
    "prism_anchors": (("prism_mmd",), "anchors"),
    "prism_center_crop": (("prism", "prism_mmd"), "center_crop"),
}

_WEIGHTS_FOLDER_METRICS = ("puzzlesim", "lpips", "osim")
"""Metrics that search ``--weights DIR`` for their checkpoint file when their own weights flag is not given."""


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


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
        help="training views for scenes without them: DIR/<scene>/images/, DIR/<scene>/ or DIR (PuzzleSim references)",
    )
    _cli.add_out_arg(p)
    p.add_argument(
        "--metrics",
        default="psnr,ssim,lpips,puzzlesim",
        metavar="LIST",
        help="comma-separated metric names, or 'all' (default: psnr,ssim,lpips,puzzlesim; also osim, prism, prism_mmd)",
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

    w = p.add_argument_group("metric weights and options")
    w.add_argument("--puzzlesim-weights", metavar="PATH", help="PuzzleSim backbone checkpoint (file or folder)")
    w.add_argument("--puzzlesim-backbone", metavar="NAME", help="squeezenet1_1 (default), alexnet or vgg16")
    w.add_argument("--lpips-weights", metavar="PATH", help="torchvision checkpoint of LPIPS's backbone")
    w.add_argument("--lpips-net", choices=("alex", "vgg", "squeeze"), help="LPIPS backbone (default alex)")
    w.add_argument("--osim-weights", metavar="PATH", help="YOLOX checkpoint (file or folder)")
    w.add_argument("--osim-detector", metavar="NAME", help="YOLOX variant (yolox_x; yolox_nano when random)")
    w.add_argument(
        "--osim-conf", type=_cli.unit_interval, metavar="F", help="OSIM detection confidence in [0, 1] (0.35)"
    )
    w.add_argument("--osim-nms", type=_cli.unit_interval, metavar="F", help="OSIM NMS IoU threshold in [0, 1] (0.45)")
    w.add_argument("--osim-saliency", choices=("gbvs", "uniform"), help="OSIM saliency weighting (gbvs)")
    w.add_argument("--prism-model", metavar="DIR|REPO", help="Zero123 diffusers folder or hub id (PRISM)")
    w.add_argument("--prism-head", metavar="FILE", help="PRISM projection head (.safetensors); omitted: raw mode")
    w.add_argument("--prism-anchors", metavar="FILE", help="anchor embeddings for prism_mmd (scenemetrics prism embed)")
    w.add_argument(
        "--prism-center-crop",
        action="store_const",
        const=True,
        default=None,
        help="crop source, render and ground truth to their central square before PRISM (non-square views)",
    )
    w.add_argument(
        "--metric-option",
        action="append",
        default=[],
        metavar="METRIC.KEY=VALUE",
        help="any metric option (VALUE parsed as JSON when it is JSON), repeatable",
    )
    w.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import a module that registers more metrics (scenemetrics.evaluation.register_metric), repeatable",
    )
    _cli.add_weights_arg(
        w,
        help="folder searched by PuzzleSim, LPIPS and OSIM for their checkpoint files (a metric's own "
        "--<metric>-weights wins)",
    )

    r = p.add_argument_group("inputs and outputs")
    r.add_argument(
        "--background",
        choices=("white", "black"),
        help="composite RGBA images onto this colour (default: the alpha channel is dropped, with a warning)",
    )
    r.add_argument("--thumbnails", type=int, default=4, metavar="N", help="map thumbnails per scene in the report")
    r.add_argument("--no-report", action="store_true", help="write the tables but no HTML report")
    r.add_argument("--force", action="store_true", help="recompute everything, even what is already committed")
    r.add_argument("--dry-run", action="store_true", help="list the units and what would be computed, then stop")
    _cli.add_device_arg(p)
    _cli.add_distributed_args(p)
    _cli.add_quiet_arg(p)
    p.set_defaults(func=run)


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def options_from_args(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per-metric options from the named flags and ``--metric-option``; ``CLIError`` for a malformed option."""
    options: dict[str, dict[str, Any]] = {}
    for attr, (names, key) in _NAMED.items():
        value = getattr(args, attr, None)
        if value is not None:
            for name in names:
                options.setdefault(name, {})[key] = value
    if getattr(args, "weights", None) is not None:
        for name in _WEIGHTS_FOLDER_METRICS:
            options.setdefault(name, {}).setdefault("weights", args.weights)
    for spec in args.metric_option:
        name, dot, rest = spec.partition(".")
        key, eq, value = rest.partition("=")
        if not (dot and eq and name and key):
            raise _cli.CLIError(f"--metric-option must look like METRIC.KEY=VALUE; received {spec!r}")
        options.setdefault(name, {})[key] = _parse_value(value)
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
    from scenemetrics.evaluation.runner import EvalConfig, run_evaluation

    if args.thumbnails < 0:
        raise _cli.CLIError(f"--thumbnails must be >= 0; received {args.thumbnails}")
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
    config = EvalConfig(
        root=args.root,
        predictions=tuple(args.predictions),
        max_archive_bytes=max_archive_bytes,
        nerfstudio_configs=tuple(args.nerfstudio_config),
        train_views=args.train_views,
        out=args.out,
        metrics=_csv_list(args.metrics),
        layout=args.layout,
        data=args.data,
        split=args.split,
        methods=args.methods,
        scenes=args.scenes,
        options=options_from_args(args),
        plugins=tuple(args.plugin),
        random_weights=args.random_weights,
        background=args.background,
        max_thumbnails=args.thumbnails,
        report=not args.no_report,
        force=args.force,
        dry_run=args.dry_run,
        device=args.device,
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        quiet=args.quiet,
    )
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
            print(f"scenemetrics: error: {_group_text(group)}", file=sys.stderr)
        listed = " above" if summary.error_groups else ""
        raise _cli.CLIError(
            f"{len(summary.failures)} (method, scene, metric) result(s) failed{listed}; every result is in "
            f"{summary.files['results.json']} (a rerun retries the failed ones)"
        )
    return 0


def _weights_flag(metric: str) -> str:
    return f"--{metric}-weights" if f"{metric}_weights" in _NAMED else f"--metric-option {metric}.weights="


def _group_text(group: dict[str, Any]) -> str:
    """One line for one distinct error: the metric, how many units (the first few named) and the message.

    A missing checkpoint names the command's flags (``--puzzlesim-weights PATH``, ``--random-weights``) instead of
    the Python argument.
    """
    metric, message, units = group["metric"], group["error"], group["units"]
    names = ", ".join(units[:3]) + (f" and {len(units) - 3} more" if len(units) > 3 else "")
    if message.startswith("WeightsNotFoundError:"):
        flag = _weights_flag(metric)
        message = _cli.weights_message(message, flag)
        if metric in _WEIGHTS_FOLDER_METRICS:
            message = message.replace(f"pass {flag} PATH", f"pass {flag} PATH (or --weights DIR)")
    return f"{metric} failed in {len(units)} unit{'' if len(units) == 1 else 's'} ({names}): {message}"
