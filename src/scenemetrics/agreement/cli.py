"""``scenemetrics agreement table|pairwise|maps|stability|corrupt``: agreement of metrics with human judgments.

* ``table --scores FILE --human FILE [--protocol NAME] ...`` correlates every metric with mean opinion scores
  (``osim``, ``iqa``) and writes ``agreement.json`` and ``agreement.csv`` (one row per metric).
* ``pairwise --scores FILE --comparisons FILE [--protocol wireframe|prism]`` measures agreement with pairwise
  preferences (per aspect for ``prism``).
* ``maps --maps FILE.npz`` compares metric maps with human artifact maps (PuzzleSim protocol).
* ``stability --comparisons FILE --unit rater|house|comparison`` runs the Kendall-tau stability study.
* ``corrupt --gt FILE --kind K --level L`` writes a corrupted ground-truth wireframe ``{kind}_{level}.json``.
* ``sweep --views DIR --metrics LIST --degradations blur,hue,noise,saltpepper --levels 3 --out DIR`` runs
  controlled-degradation sweeps of registered metrics (defined in :mod:`scenemetrics.evaluation.sweep_cli`, which
  sits above the metric registry, and added here through :func:`add_command`).

``--plots`` (needs ``pip install "scenemetrics[viz]"``) adds PNGs: ``scatter_<metric>.png``, ``ranking.png``,
``stability_<unit>.png``. Exit codes: 0 success, 1 error, 2 usage error.

Example:
    >>> from scenemetrics.cli import main
    >>> main(["agreement", "table", "--scores", "s.csv", "--human", "h.csv", "--out", "out"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scenemetrics.fileio import safe_name

__all__ = ["PROTOCOL_NAMES", "add_command", "register", "run"]

PROTOCOL_NAMES = ("osim", "wireframe", "prism", "puzzlesim", "iqa")  # == PROTOCOLS' keys (checked by a test)
_FITS = ("none", "linear", "logistic5", "logistic5-maxcorr")


def _ci(text: str) -> float | None:
    if text.strip().casefold() in ("none", "0", "off"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 0.9, 0.95, 0.99 or none, got {text!r}") from None
    if value not in (0.9, 0.95, 0.99):
        raise argparse.ArgumentTypeError(f"expected 0.9, 0.95, 0.99 or none, got {text!r}")
    return value


def _common(p: argparse.ArgumentParser, plots: bool = True) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created; JSON, CSV and PNGs inside)")
    if plots:
        p.add_argument("--plots", action="store_true", help='also write PNG plots (needs "scenemetrics[viz]")')
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def register(subparsers: Any) -> None:
    """Add the ``agreement`` command and its subcommands (nothing heavy is imported here)."""
    parser = subparsers.add_parser(
        "agreement",
        help="how well metrics agree with people: MOS correlations, pairwise agreement, maps, stability, corruptions",
        description="Meta-evaluation of metrics against human judgments, with one protocol preset per paper.",
    )
    parser.set_defaults(func=run, agreement_command=None, _agreement_parser=parser)
    sub = parser.add_subparsers(dest="agreement_command", metavar="COMMAND")
    parser.set_defaults(_agreement_commands=sub)

    t = sub.add_parser("table", help="correlate metric scores with human (mean opinion) scores")
    t.add_argument("--scores", required=True, metavar="FILE", help="metric scores: CSV item,metric,score[,group]"
                   "[,higher_is_better] or JSON")  # fmt: skip
    t.add_argument("--human", required=True, metavar="FILE", help="human scores: CSV item,human or "
                   "item,rater,rating[,criterion], or JSON")  # fmt: skip
    t.add_argument("--protocol", choices=PROTOCOL_NAMES, default="iqa", help="protocol preset (default: iqa)")
    t.add_argument("--criterion", default=None, help="which rating criterion to use (default: overall)")
    t.add_argument("--fit", choices=_FITS, default=None, help="PLCC fit (default: the protocol's)")
    t.add_argument("--groups", choices=("pooled", "mean"), default=None, help="pool all samples or average groups")
    t.add_argument("--ci", type=_ci, default=argparse.SUPPRESS, help="bootstrap level 0.9/0.95/0.99 or none "
                   "(default: the protocol's)")  # fmt: skip
    t.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates (default: the protocol's)")
    t.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    t.add_argument("--exclude", nargs="*", default=None, metavar="ITEM", help="items to leave out")
    t.add_argument("--paper", default=None, metavar="KEY", help="compare with a paper's numbers, e.g. osim_recon")
    _common(t)
    t.set_defaults(func=run, _agreement_parser=t)

    pw = sub.add_parser("pairwise", help="agreement of metrics with pairwise human preferences")
    pw.add_argument("--scores", required=True, metavar="FILE", help="metric scores; the group column is the house")
    pw.add_argument("--comparisons", required=True, metavar="FILE", help="CSV rater,house,a,b,y[,aspect], JSON, NPZ")
    pw.add_argument("--protocol", choices=("wireframe", "prism"), default="wireframe", help="default: wireframe")
    pw.add_argument("--tie-tol", type=float, default=0.0, help="metric differences up to this are a tie")
    pw.add_argument("--drop-ties", action="store_true", help="leave out judgments with a tie on either side")
    pw.add_argument("--paper", default=None, metavar="KEY", help="compare with a paper's numbers, e.g. prism_table3")
    _common(pw)
    pw.set_defaults(func=run, _agreement_parser=pw)

    mp = sub.add_parser("maps", help="agreement of metric maps with human artifact maps (PuzzleSim protocol)")
    mp.add_argument("--maps", required=True, metavar="FILE", help="NPZ with pred, human or human_masks[, group]")
    mp.add_argument("--metric", default="metric", help="the metric's name in the outputs")
    orient = mp.add_mutually_exclusive_group()
    orient.add_argument("--pred-is-quality", dest="pred_is_quality", action="store_true", default=True,
                        help="metric maps are high = plausible (default)")  # fmt: skip
    orient.add_argument("--pred-is-artifact", dest="pred_is_quality", action="store_false",
                        help="metric maps are high = artifact")  # fmt: skip
    mp.add_argument("--fit", choices=_FITS, default="logistic5", help="PLCC fit (default: logistic5)")
    mp.add_argument("--seed", type=int, default=0, help="seed of the fit's pixel subset")
    mp.add_argument("--paper", default=None, metavar="KEY", help="e.g. puzzlesim_table1")
    _common(mp)
    mp.set_defaults(func=run, _agreement_parser=mp)

    st = sub.add_parser("stability", help="Kendall-tau stability of the win-rate ranking under subsampling")
    st.add_argument("--comparisons", required=True, metavar="FILE", help="CSV rater,house,a,b,y, JSON or NPZ")
    st.add_argument("--unit", choices=("rater", "house", "comparison"), required=True, help="what to subsample")
    st.add_argument("--n", type=int, default=500, help="resamples per size (default: 500)")
    st.add_argument("--sizes", type=int, nargs="+", default=None, help="sizes to test (default: all / 30 steps)")
    st.add_argument("--threshold", type=float, default=0.95, help="tau the ranking must reach (default: 0.95)")
    st.add_argument("--criterion", choices=("mean", "low"), default="mean", help="mean tau or the CI's lower end")
    st.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    _common(st)
    st.set_defaults(func=run, _agreement_parser=st)

    co = sub.add_parser("corrupt", help="write a corrupted ground-truth wireframe (wireframe study, Pool 2)")
    co.add_argument("--gt", required=True, metavar="FILE", help='JSON {"vertices", "edges"} or NPZ')
    co.add_argument("--kind", choices=("deform", "perturb", "add", "remove", "all"), required=True)
    co.add_argument("--level", choices=("low", "medium", "med", "high", "all"), required=True)
    co.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    _common(co, plots=False)
    co.set_defaults(func=run, _agreement_parser=co)


def add_command(subparsers: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A new ``scenemetrics agreement NAME`` subcommand, for commands that live above this layer.

    ``scenemetrics agreement sweep`` runs metrics from the registry, which this package may not import; its module
    (:mod:`scenemetrics.evaluation.sweep_cli`) adds its parser here after :func:`register` ran and sets its own
    ``func``.

    Args:
        subparsers: the ``scenemetrics`` command's subparsers (holding ``agreement``).
        name: the subcommand.
        kwargs: ``add_parser`` arguments (help, description, ...).

    Raises:
        ValueError: the ``agreement`` command is not registered yet.
    """
    parent = subparsers.choices.get("agreement")
    commands = None if parent is None else parent.get_default("_agreement_commands")
    if commands is None:
        raise ValueError("register the `agreement` command (scenemetrics.agreement.cli.register) first")
    return commands.add_parser(name, **kwargs)


def run(args: argparse.Namespace) -> int:
    """Dispatch ``scenemetrics agreement <command>``."""
    command = args.agreement_command
    if command is None:
        args._agreement_parser.print_help(sys.stderr)
        return 2
    if getattr(args, "plots", False):
        from scenemetrics.agreement.viz import _plt

        _plt()  # fail before any work when matplotlib is missing
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return {"table": _table, "pairwise": _pairwise, "maps": _maps, "stability": _stability, "corrupt": _corrupt}[
        command
    ](args, out)


def _write_json(path: Path, obj: Any) -> None:
    from scenemetrics.jsonio import write_json

    write_json(path, obj)  # standard JSON (NaN -> null + reason), NumPy scalars as numbers, written atomically


def _cell(v: Any) -> Any:
    import numpy as np

    if v is None:
        return ""
    return f"{float(v):.6g}" if isinstance(v, (float, np.floating)) else v


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    import csv

    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([_cell(v) for v in r])


def _print(table: dict, stats: tuple[str, ...], quiet: bool) -> None:
    names = table["ranking"]
    width = max(8, *(len(n) for n in names))
    print(f"{'metric':<{width}}  " + "  ".join(f"{s:>10}" for s in stats))
    for n in names:
        vals = [table["metrics"][n].get(s) for s in stats]
        print(f"{n:<{width}}  " + "  ".join(f"{'n/a' if v is None else f'{v:.4f}':>10}" for v in vals))


def _table(args: argparse.Namespace, out: Path) -> int:
    from scenemetrics.agreement.io import read_comparisons, read_human, read_scores
    from scenemetrics.agreement.protocols import PROTOCOLS, agreement_table, align_mos
    from scenemetrics.agreement.stats import Logistic5Fit

    proto = PROTOCOLS[args.protocol]
    if proto.human == "maps":
        raise ValueError("the puzzlesim protocol compares maps: use `scenemetrics agreement maps --maps FILE.npz`.")
    scores = read_scores(args.scores)
    overrides: dict[str, Any] = {"seed": args.seed, "show_progress": not args.quiet}
    if args.fit is not None:
        overrides["fit"] = args.fit
    if args.groups is not None:
        overrides["aggregate"] = args.groups
    if hasattr(args, "ci"):
        overrides["ci"] = args.ci
    if args.n_boot is not None:
        overrides["n_boot"] = args.n_boot
    if args.exclude is not None:
        known = {str(item) for entry in scores.values() for item in getattr(entry, "items", ())}
        unknown = [e for e in args.exclude if e not in known]
        if unknown:  # a typo would otherwise exclude nothing, silently
            shown = ", ".join(repr(k) for k in sorted(known)[:10]) + (" ..." if len(known) > 10 else "")
            names = ", ".join(map(repr, unknown))
            raise ValueError(f"--exclude {names}: no such item in {args.scores} (its items: {shown})")
        overrides["exclude"] = tuple(args.exclude)
    if args.paper:
        overrides["paper"] = args.paper
    if proto.human == "comparisons":
        human: Any = read_comparisons(args.human)
    else:
        human = read_human(args.human, criterion=args.criterion)
    table = agreement_table(scores, human, protocol=args.protocol, **overrides)
    table["config"].update({"scores": str(args.scores), "human": str(args.human)})
    _write_json(out / "agreement.json", table)
    if proto.human == "comparisons":
        return _pairwise_outputs(table, args, out)
    stats = ("plcc", "srcc", "krcc", "rmse")
    rows = []
    for name in table["ranking"]:
        m = table["metrics"][name]
        ci = m.get("ci") or {}
        rows.append([name, *(m.get(s) for s in stats), *((ci.get(s) or [None, None])[k] for s in stats for k in (0, 1)),
                     m.get("n")])  # fmt: skip
    header = ["metric", *stats, *(f"{s}_ci_{e}" for s in stats for e in ("low", "high")), "n"]
    _write_csv(out / "agreement.csv", header, rows)
    if not args.quiet:
        _print(table, stats, args.quiet)
    if args.plots:
        from scenemetrics.agreement.viz import ranking_plot, scatter_plot

        cfg = table["config"]
        for name, entry in scores.items():
            m = table["metrics"][name]
            _, x, y, _ = align_mos(entry, human, pool_items=cfg["pool_items"], exclude=tuple(cfg["exclude"]))
            x = x if m["higher_is_better"] else -x
            fit = Logistic5Fit(tuple(m["fit_params"]), True) if m.get("fit_params") else None
            label = name if m["higher_is_better"] else f"-{name}"
            scatter_plot(x, y, out / f"scatter_{safe_name(name)}.png", metric=label, fit=fit, plcc=m["plcc"],
                         srcc=m["srcc"])  # fmt: skip
        main = proto.main
        ranking_plot({n: table["metrics"][n][main] for n in table["ranking"]}, out / "ranking.png",
                     statistic=main.upper(), ci={n: (table["metrics"][n].get("ci") or {}).get(main) for n in
                     table["ranking"]}, title=f"Agreement with human scores ({args.protocol} protocol)")  # fmt: skip
    return 0


def _pairwise(args: argparse.Namespace, out: Path) -> int:
    from scenemetrics.agreement.io import read_comparisons, read_scores
    from scenemetrics.agreement.protocols import agreement_table

    scores = read_scores(args.scores)
    comps = read_comparisons(args.comparisons)
    overrides: dict[str, Any] = {"tie_tol": args.tie_tol}
    if args.protocol == "wireframe":
        overrides["drop_ties"] = args.drop_ties
    elif args.drop_ties:
        raise ValueError("--drop-ties applies to the wireframe protocol only.")
    if args.paper:
        overrides["paper"] = args.paper
    table = agreement_table(scores, comps, protocol=args.protocol, **overrides)
    table["config"].update({"scores": str(args.scores), "comparisons": str(args.comparisons)})
    _write_json(out / "agreement.json", table)
    return _pairwise_outputs(table, args, out)


def _pairwise_outputs(table: dict, args: argparse.Namespace, out: Path) -> int:
    if table["protocol"] == "prism":
        aspects = table["human"]["aspects"]
        stats = ("vote_correlation_mean",)
        rows = [[n, *(table["metrics"][n]["vote_correlation"].get(a) for a in aspects),
                 table["metrics"][n]["vote_correlation_mean"]] for n in table["ranking"]]  # fmt: skip
        _write_csv(out / "agreement.csv", ["metric", *aspects, "mean"], rows)
        reference = None
        main, label = "vote_correlation_mean", "Pearson with majority vote (mean over aspects)"
    else:
        stats = ("agreement", "agreement_no_ties", "pooled")
        rows = [[n, *(table["metrics"][n].get(s) for s in (*stats, "n", "n_human_ties", "n_metric_ties"))]
                for n in table["ranking"]]  # fmt: skip
        _write_csv(out / "agreement.csv", ["metric", *stats, "n", "n_human_ties", "n_metric_ties"], rows)
        reference = table["human"].get("rater_agreement_mean")
        main, label = "agreement", "agreement with raters (mean over raters)"
    if not args.quiet:
        _print(table, stats, args.quiet)
    if args.plots:
        from scenemetrics.agreement.viz import ranking_plot

        ranking_plot({n: table["metrics"][n][main] for n in table["ranking"]}, out / "ranking.png", statistic=label,
                     reference=reference, title=f"Pairwise agreement ({table['protocol']} protocol)")  # fmt: skip
    return 0


def _maps(args: argparse.Namespace, out: Path) -> int:
    import numpy as np

    from scenemetrics.agreement.io import read_maps
    from scenemetrics.agreement.maps import _resize
    from scenemetrics.agreement.protocols import agreement_table

    pred, human, groups = read_maps(args.maps)
    overrides: dict[str, Any] = {"fit": args.fit, "pred_is_quality": args.pred_is_quality, "seed": args.seed,
                                 "groups": groups}  # fmt: skip
    if args.paper:
        overrides["paper"] = args.paper
    table = agreement_table({args.metric: pred}, human, protocol="puzzlesim", **overrides)
    table["config"].update({"maps": str(args.maps), "groups": None})
    _write_json(out / "agreement.json", table)
    m = table["metrics"][args.metric]
    rows = [[k, groups[k] if groups else "", r.get("plcc"), r.get("srcc"), r.get("krcc"), r.get("n_pixels")]
            for k, r in enumerate(m["per_image"])]  # fmt: skip
    _write_csv(out / "agreement.csv", ["image", "group", "plcc", "srcc", "krcc", "n_pixels"], rows)
    if not args.quiet:
        _print(table, ("plcc", "plcc_std", "srcc", "srcc_std"), args.quiet)
    if args.plots:
        from scenemetrics.agreement.viz import scatter_plot

        xs, ys = [], []
        for p, h in zip(pred, human, strict=False):
            p = p if p.shape == h.shape else _resize(p, h.shape)
            xs.append((-p if args.pred_is_quality else p).reshape(-1))
            ys.append(h.reshape(-1))
        x, y = np.concatenate(xs), np.concatenate(ys)
        if len(x) > 200_000:
            keep = np.random.default_rng(args.seed).choice(len(x), 200_000, replace=False)
            x, y = x[keep], y[keep]
        label = f"-{args.metric}" if args.pred_is_quality else args.metric
        xlabel = f"{label} (metric map value{', negated: high = artifact' if args.pred_is_quality else ''})"
        scatter_plot(x, y, out / f"scatter_{safe_name(args.metric)}.png", metric=label, plcc=m["plcc"], srcc=m["srcc"],
                     human_label="human artifact probability (pixel)", hexbin=True, xlabel=xlabel)  # fmt: skip
    return 0


def _stability(args: argparse.Namespace, out: Path) -> int:
    from scenemetrics.agreement.bootstrap import kendall_stability
    from scenemetrics.agreement.io import read_comparisons
    from scenemetrics.agreement.stats import _json_ready

    comps = read_comparisons(args.comparisons)
    res = kendall_stability(
        comps, unit=args.unit, sizes=args.sizes, n=args.n, seed=args.seed, threshold=args.threshold,
        criterion=args.criterion, show_progress=not args.quiet,
    )  # fmt: skip
    obj = _json_ready({"unit": res.unit, "sizes": res.sizes, "tau_mean": res.tau_mean, "tau_low": res.tau_low,
                       "tau_high": res.tau_high, "min_size": res.min_size, "threshold": res.threshold,
                       "criterion": res.criterion, "n": args.n, "seed": args.seed,
                       "comparisons": str(args.comparisons)})  # fmt: skip
    _write_json(out / f"stability_{args.unit}.json", obj)
    _write_csv(out / f"stability_{args.unit}.csv", ["size", "tau_mean", "tau_low", "tau_high"],
               [[int(s), float(a), float(b), float(c)] for s, a, b, c in
                zip(res.sizes, res.tau_mean, res.tau_low, res.tau_high, strict=False)])  # fmt: skip
    if not args.quiet:
        print(f"smallest stable size ({args.unit}, {args.criterion} tau >= {args.threshold:g}): {res.min_size}")
    if args.plots:
        from scenemetrics.agreement.viz import stability_plot

        stability_plot(res, out / f"stability_{args.unit}.png")
    return 0


def _read_wireframes(path: str) -> list[Any]:

    from scenemetrics.wireframe import as_wireframe

    if Path(path).suffix.lower() == ".npz":
        from scenemetrics.fileio import load_npz

        z = load_npz(path)
        if "vertices" not in z or "edges" not in z:
            raise ValueError(f"{path}: the NPZ needs arrays 'vertices' and 'edges'.")
        return [as_wireframe((z["vertices"], z["edges"]), name="gt")]
    data = json.loads(Path(path).read_text())
    houses = data if isinstance(data, list) else [data]
    return [as_wireframe(h, name=f"gt[{k}]" if isinstance(data, list) else "gt") for k, h in enumerate(houses)]


def _corrupt(args: argparse.Namespace, out: Path) -> int:
    import numpy as np

    from scenemetrics.agreement.corrupt import CORRUPTION_KINDS, CORRUPTION_LEVELS, corrupt

    gts = _read_wireframes(args.gt)
    kinds = CORRUPTION_KINDS if args.kind == "all" else (args.kind,)
    levels = CORRUPTION_LEVELS if args.level == "all" else ({"med": "medium"}.get(args.level, args.level),)
    for kind in kinds:
        for level in levels:
            k = CORRUPTION_KINDS.index(kind) * len(CORRUPTION_LEVELS) + CORRUPTION_LEVELS.index(level)
            houses = []
            for h, gt in enumerate(gts):
                # one house: the same draw as corruption_pool(gt, seed=args.seed); several: one stream per house
                rng = np.random.default_rng([args.seed, k] if len(gts) == 1 else [args.seed, k, h])
                w = corrupt(gt, kind, level, rng)
                houses.append({"vertices": w.vertices.tolist(), "edges": w.edges.tolist()})
            path = out / f"{kind}_{level}.json"
            _write_json(path, houses if len(gts) > 1 else houses[0])
            if not args.quiet:
                print(f"wrote {path}")
    return 0
