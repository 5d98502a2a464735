"""``scenemetrics wireframe eval|properties``.

``eval --pred FILE --gt FILE [--metrics NAME ...] [--threshold T] [--radius R] [--out DIR]`` scores predicted
wireframes against ground truth. A file is JSON holding one house ``{"vertices": [[x, y, z], ...], "edges":
[[i, j], ...]}`` (HoHo's ``wf_vertices``/``wf_edges`` keys also work) or a list of such objects, or an ``.npz`` with
arrays ``vertices`` and ``edges`` (one house); houses are paired by position. The challenges' own formats work as
they are: Building3D OBJ files (``v``/``l`` lines, 1-based) or folders of them paired by file name, with
``--points FILE|DIR --building3d-normalize`` for the Building3D normalisation (centroid and max distance of the
``.xyz`` point cloud applied to both wireframes); S23DR submissions (``order_id``/``wf_vertices``/``wf_edges``
records as ``.jsonl``, a JSON list or ``.parquet``) paired with the ground truth by ``order_id``, with the
challenge's headline score (``--challenge s23dr2025``: mean HSS; ``s23dr2024``: mean WED of the 2024 scorer)
printed next to ours. It prints one row per house and the macro mean (NaNs skipped); ``--out DIR`` also writes
``wireframe_eval.json`` (standard JSON: a NaN is ``null``, listed under ``"non_finite"``) and
``wireframe_eval.csv``, and says so on stderr.

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

from scenemetrics.cliutils import CLIError, add_quiet_arg, show_progress
from scenemetrics.fileio import load_npz
from scenemetrics.jsonio import write_json

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``wireframe`` command and its ``eval``/``properties`` subcommands."""

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
    ev.add_argument("--points", default=None, metavar="FILE|DIR", help="Building3D .xyz point cloud(s) of the GT")
    ev.add_argument(
        "--building3d-normalize", action="store_true", help="apply the Building3D normalisation (needs --points)"
    )
    ev.add_argument(
        "--challenge", choices=("s23dr2024", "s23dr2025"), default="s23dr2025",
        help="headline score reported for S23DR files (default: s23dr2025, mean HSS)",
    )  # fmt: skip
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
    from scenemetrics.wireframe.registry import metric_option_names

    accepted = metric_option_names(name)
    return {k: getattr(args, k) for k in ("threshold", "radius") if k in accepted and getattr(args, k) is not None}


def _missing_option(names: list[str], args: argparse.Namespace) -> str | None:
    from scenemetrics.wireframe.registry import make_metric

    for name in names:
        try:
            make_metric(name, **_options(name, args))
        except ValueError:
            need = "--radius" if name in ("iou", "jaccard_distance") else "--threshold"
            return f"metric {name!r} needs {need} (in the files' unit; there is no default)"
    return None


def _load_houses(path: str, flag: str) -> list:
    import json

    from scenemetrics.wireframe.types import as_wireframe

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{flag} {path}: no such file")
    if p.suffix.lower() == ".npz":
        z = load_npz(p)
        missing = [k for k in ("vertices", "edges") if k not in z]
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


def _kind(path: str) -> str:
    """``"s23dr"`` (order_id records), ``"obj"`` (Building3D OBJ file or folder) or ``"json"`` (our JSON/NPZ)."""
    p = Path(path)
    if p.is_dir() or p.suffix.lower() == ".obj":
        return "obj"
    if p.suffix.lower() in (".jsonl", ".parquet"):
        return "s23dr"
    if p.suffix.lower() == ".json" and p.is_file():
        with open(p, encoding="utf-8") as f:
            head = f.read(4096)
        if '"order_id"' in head:
            return "s23dr"
    return "json"


def _load_pair(args: argparse.Namespace) -> tuple[list[str], list, list, str]:
    """``(house labels, predictions, ground truths, format)`` from --pred/--gt in any supported format."""

    kinds = {_kind(args.pred), _kind(args.gt)}
    if len(kinds) > 1:
        raise CLIError(f"--pred and --gt are in different formats ({' and '.join(sorted(kinds))})")
    kind = kinds.pop()
    if args.building3d_normalize and args.points is None:
        raise CLIError("--building3d-normalize needs --points FILE|DIR (the Building3D .xyz point clouds)")
    if args.points is not None and not args.building3d_normalize:
        raise CLIError("--points is only used with --building3d-normalize")
    if args.building3d_normalize and kind != "obj":
        raise CLIError("--building3d-normalize applies to Building3D OBJ files")
    try:
        if kind == "s23dr":
            from scenemetrics.wireframe.formats import match_by_order_id, read_s23dr

            for path in (args.pred, args.gt):
                if not Path(path).is_file():
                    raise CLIError(f"{path}: no such file")
            labels, preds, gts = match_by_order_id(read_s23dr(args.pred, name="pred"), read_s23dr(args.gt, name="gt"))
            if not labels:
                raise CLIError(f"--gt {args.gt}: no house")
            return labels, preds, gts, kind
        if kind == "obj":
            labels, preds, gts = _load_obj_pair(args)
            return labels, preds, gts, kind
    except ValueError as err:
        raise CLIError(str(err)) from None
    preds, gts = _load_houses(args.pred, "--pred"), _load_houses(args.gt, "--gt")
    if len(preds) != len(gts):
        raise CLIError(
            f"--pred has {_houses(len(preds))} but --gt has {_houses(len(gts))}; houses are paired by position"
        )
    return [str(k) for k in range(len(preds))], preds, gts, kind


def _load_obj_pair(args: argparse.Namespace) -> tuple[list[str], list, list]:
    from scenemetrics.wireframe.formats import building3d_normalize, read_obj_wireframe, read_xyz_points

    pred, gt = Path(args.pred), Path(args.gt)
    if pred.is_dir() != gt.is_dir():
        raise CLIError("--pred and --gt must both be OBJ files or both folders of OBJ files")
    if gt.is_dir():
        stems = sorted(p.stem for p in gt.glob("*.obj"))
        if not stems:
            raise CLIError(f"--gt {gt}: no .obj file")
        missing = [s for s in stems if not (pred / f"{s}.obj").is_file()]
        if missing:
            raise CLIError(f"--pred {pred}: no prediction for {len(missing)} house(s), e.g. {missing[0]}.obj")
        pairs = [(s, pred / f"{s}.obj", gt / f"{s}.obj") for s in stems]
    else:
        for flag, path in (("--pred", pred), ("--gt", gt)):
            if not path.is_file():
                raise CLIError(f"{flag} {path}: no such file")
        pairs = [(gt.stem, pred, gt)]
    labels, preds, gts = [], [], []
    for stem, p_path, g_path in pairs:
        p_wf, g_wf = read_obj_wireframe(p_path, name="pred"), read_obj_wireframe(g_path, name="gt")
        if args.building3d_normalize:
            points_path = Path(args.points) / f"{stem}.xyz" if Path(args.points).is_dir() else Path(args.points)
            if not points_path.is_file():
                raise CLIError(f"--points: no point cloud {points_path}")
            points = read_xyz_points(points_path)
            p_wf, g_wf = building3d_normalize(p_wf, points), building3d_normalize(g_wf, points)
        labels.append(stem)
        preds.append(p_wf)
        gts.append(g_wf)
    return labels, preds, gts


def _challenge_score(challenge: str, preds: list, gts: list) -> dict:
    """The S23DR leaderboard's headline number: 2025 mean HSS, 2024 mean WED (the 2024 scorer's variant)."""
    import numpy as np

    from scenemetrics.wireframe.edit_distance import wed
    from scenemetrics.wireframe.tubes import hss

    if challenge == "s23dr2025":
        values = [hss(p.vertices, p.edges, g.vertices, g.edges).hss for p, g in zip(preds, gts, strict=True)]
        name, definition = "S23DR-2025 score", "mean HSS, vert_thresh=0.5, edge_thresh=0.5, higher is better"
    else:
        values = [
            wed(p.vertices, p.edges, g.vertices, g.edges, variant="s23dr2024") for p, g in zip(preds, gts, strict=True)
        ]
        name, definition = "S23DR-2024 score", "mean WED of the 2024 scorer, lower is better"
    return {"name": name, "definition": definition, "score": float(np.mean(values)), "n_houses": len(values)}


def _fmt(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.6g}"


def _run_eval(args: argparse.Namespace) -> int:
    import csv
    import warnings

    from scenemetrics.wireframe.metric import DEFAULT_METRICS, WireframeMetrics
    from scenemetrics.wireframe.registry import METRIC_NAMES

    names = list(args.metrics) if args.metrics else list(DEFAULT_METRICS)
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown:
        return _usage(args, f"unknown metric(s) {unknown}; choose from {', '.join(METRIC_NAMES)}")
    if len(set(names)) != len(names):
        return _usage(args, f"--metrics lists a name twice: {names}")
    problem = _missing_option(names, args)
    if problem:
        return _usage(args, problem)
    labels, preds, gts, kind = _load_pair(args)
    metric = WireframeMetrics(names, threshold=args.threshold, radius=args.radius)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # per-house NaNs are shown in the table itself
        metric.update(preds, gts)
        mean = {k: float(v) for k, v in metric.compute().items()}
    rows = metric.last_values
    header = ["house", *names]
    table = [[label, *(_fmt(r[n]) for n in names)] for label, r in zip(labels, rows, strict=True)]
    table.append(["mean", *(_fmt(mean[n]) for n in names)])
    widths = [max(len(h), *(len(row[c]) for row in table)) for c, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in table:
        print("  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)))
    challenge = _challenge_score(args.challenge, preds, gts) if kind == "s23dr" else None
    if challenge is not None:
        print(f"{challenge['name']} ({challenge['definition']}): {_fmt(challenge['score'])}")
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
        result = {"per_house": rows, "mean": mean, "config": config, "houses": labels}
        if challenge is not None:
            result["challenge"] = challenge
        config["format"] = kind
        config["building3d_normalize"] = bool(args.building3d_normalize)
        json_path = write_json(out / "wireframe_eval.json", result)
        csv_path = out / "wireframe_eval.csv"
        with open(csv_path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(table)
        print(f"wrote {json_path} and {csv_path} ({_houses(len(rows))})", file=sys.stderr)
    return 0


def _run_properties(args: argparse.Namespace) -> int:
    from scenemetrics.wireframe.properties import format_property_table, property_suite
    from scenemetrics.wireframe.registry import METRIC_NAMES, make_metric
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
