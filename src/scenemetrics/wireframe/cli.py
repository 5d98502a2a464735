"""``scenemetrics wireframe eval|properties``.

``eval --pred FILE --gt FILE [--metrics NAME ...] [--threshold T] [--radius R] [--out DIR]`` scores predicted
wireframes against ground truth. A file is JSON holding one house ``{"vertices": [[x, y, z], ...], "edges":
[[i, j], ...]}`` (HoHo's ``wf_vertices``/``wf_edges`` keys also work) or a list of such objects, or an ``.npz`` with
arrays ``vertices`` and ``edges`` (one house). Houses are paired by position. It prints one row per house and the
macro mean (NaNs skipped); ``--out DIR`` also writes ``wireframe_eval.json`` (standard JSON: a NaN is ``null``, listed
under ``"non_finite"``) and ``wireframe_eval.csv``, and says so on stderr.

``properties --metric NAME [--houses N] [--seed S] [--threshold T] [--radius R]`` runs the property suite of the
paper's Table 2 on ``synthetic_houses(N, seed=S)`` (metres) and prints the table.

``--threshold``/``--radius`` are in the files' unit and have no default; a requested metric that needs one without
it is a usage error (exit 2).

Example:
    >>> from scenemetrics.cli import main
    >>> main(["wireframe", "properties", "--metric", "wed", "--houses", "2", "--quiet"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``wireframe`` command and its ``eval``/``properties`` subcommands."""
    from scenemetrics.cli import add_quiet_arg

    parser = subparsers.add_parser(
        "wireframe",
        help="wireframe metrics: corner/edge F1, WED, spectral, IoU, Hausdorff/Chamfer; Table-2 property suite",
        description="Metrics for structured 3D (wireframe) reconstruction (Langerman et al., ICCV 2025).",
    )
    parser.set_defaults(func=run, wireframe_command=None, _wireframe_parser=parser)
    sub = parser.add_subparsers(dest="wireframe_command", metavar="COMMAND")

    ev = sub.add_parser("eval", help="score predicted wireframes against ground truth")
    ev.add_argument("--pred", required=True, metavar="FILE", help="predicted house(s): .json (one or a list) or .npz")
    ev.add_argument("--gt", required=True, metavar="FILE", help="ground-truth house(s), same formats and count")
    ev.add_argument(
        "--metrics",
        nargs="+",
        default=None,
        metavar="NAME",
        help="registry names (scenemetrics.wireframe.METRIC_NAMES); default: corner/edge P/R/F1 and wed",
    )
    ev.add_argument("--threshold", type=float, default=None, help="corner/edge match distance (files' unit)")
    ev.add_argument("--radius", type=float, default=None, help="tube radius for iou/jaccard_distance (files' unit)")
    ev.add_argument("--out", default=None, metavar="DIR", help="also write wireframe_eval.json and .csv here")
    ev.set_defaults(func=run, _wireframe_parser=ev)

    pr = sub.add_parser("properties", help="run the paper's Table-2 property suite on synthetic houses")
    pr.add_argument("--metric", required=True, metavar="NAME", help="registry name, e.g. wed, corner_f1, iou")
    pr.add_argument("--houses", type=int, default=32, help="number of synthetic houses (default: 32)")
    pr.add_argument("--seed", type=int, default=0, help="seed of the houses and perturbations (default: 0)")
    pr.add_argument("--threshold", type=float, default=None, help="corner/edge match distance in metres")
    pr.add_argument("--radius", type=float, default=None, help="tube radius in metres")
    add_quiet_arg(pr)
    pr.set_defaults(func=run, _wireframe_parser=pr)


def _usage(args: argparse.Namespace, message: str) -> int:
    parser = args._wireframe_parser
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def _options(name: str, args: argparse.Namespace) -> dict[str, float]:
    from scenemetrics.wireframe.metrics import metric_option_names

    accepted = metric_option_names(name)
    return {k: getattr(args, k) for k in ("threshold", "radius") if k in accepted and getattr(args, k) is not None}


def _missing_option(names: list[str], args: argparse.Namespace) -> str | None:
    from scenemetrics.wireframe.metrics import make_metric

    for name in names:
        try:
            make_metric(name, **_options(name, args))
        except ValueError:
            need = "--radius" if name in ("iou", "jaccard_distance") else "--threshold"
            return f"metric {name!r} needs {need} (in the files' unit; there is no default)"
    return None


def _load_houses(path: str, flag: str) -> list:
    import json

    import numpy as np

    from scenemetrics.cli import CLIError
    from scenemetrics.wireframe.types import as_wireframe

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{flag} {path}: no such file")
    if p.suffix.lower() == ".npz":
        with np.load(p, allow_pickle=False) as z:
            missing = [k for k in ("vertices", "edges") if k not in z.files]
            if missing:
                raise CLIError(f"{flag} {path}: the .npz needs arrays 'vertices' and 'edges' (missing {missing})")
            raw: list = [{"vertices": z["vertices"], "edges": z["edges"]}]
    else:
        try:
            data = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CLIError(f"{flag} {path}: not valid JSON ({err})") from None
        raw = data if isinstance(data, list) else [data]
        if not raw:
            raise CLIError(f"{flag} {path}: the list of houses is empty")
        if not all(isinstance(h, dict) for h in raw):
            raise CLIError(f"{flag} {path}: expected a house object with 'vertices' and 'edges', or a list of them")
    houses = []
    name = "pred" if flag == "--pred" else "gt"
    for k, h in enumerate(raw):
        try:
            houses.append(as_wireframe(h, name=name))
        except (ValueError, TypeError) as err:
            where = f"house {k}: " if len(raw) > 1 else ""
            raise CLIError(f"{flag} {path}: {where}{err}") from None
    return houses


def _houses(n: int) -> str:
    return f"{n} house" if n == 1 else f"{n} houses"


def _fmt(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.6g}"


def _run_eval(args: argparse.Namespace) -> int:
    import csv
    import warnings

    from scenemetrics.cli import CLIError, write_json
    from scenemetrics.wireframe.metric import DEFAULT_METRICS, WireframeMetrics
    from scenemetrics.wireframe.metrics import METRIC_NAMES

    names = list(args.metrics) if args.metrics else list(DEFAULT_METRICS)
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown:
        return _usage(args, f"unknown metric(s) {unknown}; choose from {', '.join(METRIC_NAMES)}")
    if len(set(names)) != len(names):
        return _usage(args, f"--metrics lists a name twice: {names}")
    problem = _missing_option(names, args)
    if problem:
        return _usage(args, problem)
    preds, gts = _load_houses(args.pred, "--pred"), _load_houses(args.gt, "--gt")
    if len(preds) != len(gts):
        raise CLIError(
            f"--pred has {_houses(len(preds))} but --gt has {_houses(len(gts))}; houses are paired by position"
        )
    metric = WireframeMetrics(names, threshold=args.threshold, radius=args.radius)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # per-house NaNs are shown in the table itself
        metric.update(preds, gts)
        mean = {k: float(v) for k, v in metric.compute().items()}
    rows = metric.last_values
    header = ["house", *names]
    table = [[str(k), *(_fmt(r[n]) for n in names)] for k, r in enumerate(rows)]
    table.append(["mean", *(_fmt(mean[n]) for n in names)])
    widths = [max(len(h), *(len(row[c]) for row in table)) for c, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in table:
        print("  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)

        config = {
            "pred": str(args.pred),
            "gt": str(args.gt),
            "metrics": names,
            "threshold": args.threshold,
            "radius": args.radius,
            "average": "macro",
            "n_houses": len(rows),
        }
        result = {"per_house": rows, "mean": mean, "config": config}
        json_path = write_json(out / "wireframe_eval.json", result)
        csv_path = out / "wireframe_eval.csv"
        with open(csv_path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(table)
        print(f"wrote {json_path} and {csv_path} ({_houses(len(rows))})", file=sys.stderr)
    return 0


def _run_properties(args: argparse.Namespace) -> int:
    from scenemetrics.cli import show_progress
    from scenemetrics.wireframe.metrics import METRIC_NAMES, make_metric
    from scenemetrics.wireframe.properties import format_property_table, property_suite
    from scenemetrics.wireframe.synthetic import synthetic_houses

    if args.metric not in METRIC_NAMES:
        return _usage(args, f"unknown metric {args.metric!r}; choose from {', '.join(METRIC_NAMES)}")
    if args.houses < 2:
        return _usage(args, f"--houses must be >= 2 (the triangle test pairs houses), got {args.houses}")
    problem = _missing_option([args.metric], args)
    if problem:
        return _usage(args, problem)
    metric = make_metric(args.metric, **_options(args.metric, args))
    houses = synthetic_houses(args.houses, seed=args.seed)
    table = property_suite(metric, houses, seed=args.seed, show_progress=show_progress(args.quiet))
    print(format_property_table({args.metric: table}))
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch ``scenemetrics wireframe <command>``; returns the exit code."""
    if args.wireframe_command == "eval":
        return _run_eval(args)
    if args.wireframe_command == "properties":
        return _run_properties(args)
    args._wireframe_parser.print_help(sys.stderr)
    return 2
