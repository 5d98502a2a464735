"""``scenemetrics openlex3d eval [segmentation|retrieval]``: evaluate prediction folders against OpenLex3D GT.

Ground truth comes in one of two forms:

- the benchmark's own files: ``--dataset {replica,scannetpp,hm3d} --dataset-root DIR`` (the dataset as
  distributed, read by :func:`scenemetrics.openlex3d.load_gt_scene`) and ``--labels DIR`` (the OpenLex3D label
  release: ``<labels>/<dataset>/<scene>/gt_categories.json``, ``gt_visible_cloud.pcd``, the query mappings, and
  ``<labels>/<dataset>/prompt_list.txt``). Segmentation is scored on the visible cloud when the release has it (ids
  transferred from the dataset's cloud by nearest neighbour within 5 cm), retrieval on the dataset's full cloud,
  as the authors' toolkit does;
- or prepared folders: ``--gt-root DIR`` with ``<gt-root>/<scene>/gt_categories.json`` and ``gt_cloud.npz`` (arrays
  ``points``, ``object_ids``), optional ``gt_categories_query_to_object_mapping_<level>.json``.

Predictions: ``<pred>/<scene>/`` with ``embeddings.npy``, ``index.npy`` and a point cloud (toolkit layout); for a
single scene ``--pred`` may also be that scene's folder. ``eval`` without a task, given ``--dataset``, runs both
tasks and prints the paper-style table (one row per scene and the mean). Results are fractions (x100 for the
paper's tables).

Example:
    >>> from scenemetrics.cli import main
    >>> main(["openlex3d", "eval", "segmentation", "--gt-root", "gt", "--pred-root", "pred",
    ...       "--prompts", "prompt_list.txt", "--text-features", "prompts.npy", "--set-ranking"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from scenemetrics.cliutils import (
    CLIError,
    add_device_arg,
    add_distributed_args,
    add_quiet_arg,
    progress,
    resolve_device,
)
from scenemetrics.devices import end_process_group
from scenemetrics.fileio import safe_name

DATASETS = ("replica", "scannetpp", "hm3d")  # scenemetrics.openlex3d.datasets.DATASETS, without importing numpy

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("openlex3d", help="OpenLex3D open-vocabulary segmentation and retrieval metrics")
    sub = parser.add_subparsers(dest="openlex3d_command", metavar="COMMAND")
    parser.set_defaults(func=run, _parser=parser)
    ev = sub.add_parser(
        "eval",
        help="evaluate prediction folders against OpenLex3D ground truth",
        description="Without a TASK and with --dataset: Top-N frequencies, set ranking and retrieval AP of the "
        "benchmark's scenes, printed as the paper's table.",
    )
    ev.set_defaults(func=run, _parser=ev, task=None)
    _common(ev)
    _segmentation_args(ev, features_required=False)
    ev.add_argument("--query-features", metavar="FILE", help="retrieval: .npz with arrays `texts` and `features`")
    ev.add_argument("--level", choices=("all", "l0", "l1"), default="all", help="retrieval query levels (all)")
    ev.add_argument("--top-k", type=int, default=10, help="retrieval: predicted instances per query (default 10)")
    ev.add_argument("--alignment-threshold", type=float, default=0.001, help="retrieval mask distance, m^2 (0.001)")
    _ap_range_arg(ev)
    tasks = ev.add_subparsers(dest="task", metavar="TASK")

    seg = tasks.add_parser("segmentation", help="Top-N category frequency and set ranking")
    _common(seg)
    _segmentation_args(seg, features_required=True)
    seg.set_defaults(func=run, _parser=seg)

    ret = tasks.add_parser("retrieval", help="object retrieval AP / AP50 / AP25")
    _common(ret)
    ret.add_argument("--level", choices=("all", "l0", "l1"), default="all", help="query levels (default all)")
    src = ret.add_mutually_exclusive_group(required=True)
    src.add_argument("--query-features", metavar="FILE", help=".npz with arrays `texts` and `features`")
    src.add_argument("--clip", action="store_true", help="encode the queries with OpenCLIP ViT-H-14 ([clip] extra)")
    ret.add_argument("--top-k", type=int, default=10, help="predicted instances per query (default 10)")
    ret.add_argument(
        "--alignment-threshold", type=float, default=0.001, help="squared distance (m^2) for masks (0.001)"
    )
    _ap_range_arg(ret)
    ret.set_defaults(func=run, _parser=ret)
    for task in (seg, ret):
        _keep_values_given_before(task)


def _keep_values_given_before(task: argparse.ArgumentParser) -> None:
    """Options given before TASK (``eval --out F segmentation``) must not be reset to the task parser's defaults.

    argparse copies every option of a sub-command's namespace over the parent's, defaults included; with
    ``SUPPRESS`` defaults an option the task's own arguments leave out keeps the parent's value (or the parent's
    default). The task's "one of" groups are checked after parsing (:func:`_check_required`), across both places.
    """
    for action in task._actions:
        if action.dest != "help":
            action.default = argparse.SUPPRESS
    for group in task._mutually_exclusive_groups:
        group.required = False


def _ap_range_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ap-range",
        choices=("toolkit", "paper"),
        default="toolkit",
        help="retrieval AP over IoU 0.50:0.05:0.90 (toolkit, the published numbers; default) or 0.50:0.05:0.95 (the "
        "range the paper writes)",
    )


def _segmentation_args(seg: argparse.ArgumentParser, *, features_required: bool) -> None:
    seg.add_argument(
        "--prompts", metavar="FILE", default=None, help="prompt_list.txt (default with --labels: the release's)"
    )
    src = seg.add_mutually_exclusive_group(required=features_required)
    src.add_argument(
        "--text-features",
        metavar="FILE",
        help=".npy (M, D) aligned with the prompt list, or .npz with arrays `texts` and `features`",
    )
    src.add_argument("--clip", action="store_true", help="encode the prompts with OpenCLIP ViT-H-14 ([clip] extra)")
    seg.add_argument("--top-n", type=int, nargs="+", default=[5], metavar="N", help="Top-N values (default: 5)")
    seg.add_argument(
        "--topn-form",
        choices=("frequency", "iou"),
        default="frequency",
        help="Top-N as the toolkit's category frequency (the published numbers; default) or the paper's IoU "
        "TP / (TP + FP + FN) per label tier",
    )
    seg.add_argument("--set-ranking", action="store_true", help="also compute set ranking")
    seg.add_argument("--compat", choices=("corrected", "toolkit"), default="corrected", help="set-ranking mode")
    vox = seg.add_mutually_exclusive_group()
    vox.add_argument("--voxel-size", type=float, default=0.05, help="downsampling voxel in metres (default 0.05)")
    vox.add_argument("--no-downsample", action="store_true", help="do not downsample the prediction")
    seg.add_argument("--missing-threshold", type=float, default=0.05, help="missing distance in metres (0.05)")
    seg.add_argument("--viz", metavar="DIR", default=None, help="write <scene>_top<N>.ply/.png category colourings")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gt-root", metavar="DIR", default=None, help="prepared GT: one sub-folder per scene")
    p.add_argument("--dataset", choices=DATASETS, default=None, help="benchmark dataset whose own files hold the GT")
    p.add_argument("--dataset-root", metavar="DIR", default=None, help="the dataset as distributed (with --dataset)")
    p.add_argument("--labels", metavar="DIR", default=None, help="the OpenLex3D label release (with --dataset)")
    p.add_argument(
        "--pred-root", "--pred", dest="pred_root", default=None, metavar="DIR",
        help="folder with one prediction folder per scene (or, for one scene, that scene's folder)",
    )  # fmt: skip
    p.add_argument(
        "--scenes", "--scene", dest="scenes", nargs="+", default=None, metavar="S",
        help="scenes, or 'all' for the benchmark's list with --dataset (default: every folder of --pred)",
    )  # fmt: skip
    p.add_argument("--clip-weights", default=None, metavar="PATH", help="OpenCLIP checkpoint file or folder")
    p.add_argument(
        "--out", default=None, metavar="PATH", help="JSON file, or a folder for openlex3d_<task>.json (default: stdout)"
    )
    add_device_arg(p)
    add_distributed_args(p)
    add_quiet_arg(p)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "task", None) is None:
        if getattr(args, "dataset", None) is None:
            args._parser.print_help(sys.stderr)
            return 2
        args.task = "benchmark"
    try:
        _check_required(args)
    except CLIError as err:  # a missing required option is a usage error, as argparse reports it
        args._parser.print_usage(sys.stderr)
        print(f"{args._parser.prog}: error: {err}", file=sys.stderr)
        return 2
    _check_gt_args(args)
    devices = _num_devices(args.devices)
    config = {k: v for k, v in vars(args).items() if k not in ("func", "_parser")}
    if devices * args.num_nodes > 1:
        return _launch_distributed(config, devices)
    return _evaluate(None, config)


def _num_devices(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        if value == "auto":
            import torch

            return max(1, torch.cuda.device_count())
        raise CLIError(f"--devices must be an int or 'auto'; received {value!r}") from None
    if n < 1:
        raise CLIError(f"--devices must be >= 1; received {n}")
    return n


def _launch_distributed(config: dict[str, Any], devices: int) -> int:
    try:
        from lightning.fabric import Fabric
    except ImportError as err:
        raise ImportError(
            f'--devices {devices} needs Lightning Fabric: pip install "scenemetrics[lightning]" ({err})'
        ) from err

    accelerator = "cpu" if resolve_device(config["device"]).type == "cpu" else "gpu"
    strategy = "ddp_spawn" if config["strategy"] == "auto" else config["strategy"]
    fabric = Fabric(accelerator=accelerator, devices=devices, num_nodes=config["num_nodes"], strategy=strategy)
    code = fabric.launch(partial(_evaluate_rank, config=config))
    return int(code or 0)


def _evaluate_rank(fabric: Any, config: dict[str, Any]) -> int:
    """:func:`_evaluate` on one of Fabric's processes, which then ends its process group."""
    try:
        return _evaluate(fabric, config)
    finally:
        end_process_group()


# ---------------------------------------------------------------------------------------------------------------


def _check_required(args: argparse.Namespace) -> None:
    """The options a task needs, wherever on the command line they were given (before or after TASK)."""
    if args.task == "segmentation" and args.text_features is None and not args.clip:
        raise CLIError("segmentation needs prompt embeddings: --text-features FILE or --clip")
    if args.task == "retrieval" and args.query_features is None and not args.clip:
        raise CLIError("retrieval needs query embeddings: --query-features FILE or --clip")
    if args.clip and (args.text_features is not None or args.query_features is not None):
        raise CLIError("--clip encodes the texts itself: give it or --text-features / --query-features, not both")
    if args.pred_root is None:
        raise CLIError("--pred DIR is required (the prediction folders, one per scene)")


def _check_gt_args(args: argparse.Namespace) -> None:
    """Exactly one ground-truth source: ``--gt-root``, or ``--dataset`` with ``--dataset-root`` and ``--labels``."""
    benchmark = [getattr(args, k) for k in ("dataset", "dataset_root", "labels")]
    if args.gt_root is not None and any(v is not None for v in benchmark):
        raise CLIError("give either --gt-root or --dataset/--dataset-root/--labels, not both")
    if args.gt_root is None and not all(v is not None for v in benchmark):
        raise CLIError("ground truth needed: --gt-root DIR, or --dataset NAME --dataset-root DIR --labels DIR")
    for flag, value in (("--gt-root", args.gt_root), ("--dataset-root", args.dataset_root), ("--labels", args.labels)):
        if value is not None and not Path(value).is_dir():
            raise CLIError(f"{flag} {value} is not a folder")
    if args.task in ("segmentation", "benchmark") and args.prompts is None and args.labels is None:
        raise CLIError("--prompts FILE is required with --gt-root")
    if args.task == "benchmark" and args.text_features is None and not args.clip:
        raise CLIError("the benchmark table needs prompt embeddings: --text-features FILE or --clip")


def _scenes(config: dict[str, Any]) -> list[str]:
    pred_root = Path(config["pred_root"])
    if not pred_root.is_dir():
        raise CLIError(f"--pred {pred_root} is not a folder")
    scenes = config["scenes"]
    if scenes == ["all"]:
        if config["dataset"] is None:
            raise CLIError("--scenes all needs --dataset (it names the benchmark's scene list)")
        from .datasets import BENCHMARK_SCENES

        return list(BENCHMARK_SCENES[config["dataset"]])
    scenes = scenes or sorted(p.name for p in pred_root.iterdir() if p.is_dir())
    if not scenes:
        raise CLIError(f"no scene folder in --pred {pred_root}")
    return list(scenes)


def _pred_dir(config: dict[str, Any], scene: str, n_scenes: int) -> Path:
    pred_root = Path(config["pred_root"])
    if (pred_root / scene).is_dir():
        return pred_root / scene
    if n_scenes == 1 and (pred_root / "embeddings.npy").is_file():  # --pred names the one scene's folder
        return pred_root
    raise CLIError(f"missing prediction folder {pred_root / scene}")


def _labels_dir(config: dict[str, Any], scene: str) -> Path:
    """Where the scene's ``gt_categories.json`` and query mappings are."""
    if config["dataset"] is not None:
        return Path(config["labels"]) / config["dataset"] / scene
    return Path(config["gt_root"]) / scene


def _prompts_path(config: dict[str, Any]) -> Path:
    if config["prompts"] is not None:
        return _require(Path(config["prompts"]))
    return _require(Path(config["labels"]) / config["dataset"] / "prompt_list.txt")


def _scene_gt(config: dict[str, Any], scene: str, *, visible: bool) -> tuple[Any, Any]:
    """The scene's GT cloud and ids; ``visible``: the release's visible cloud where it has one (segmentation)."""
    from .io import load_gt_cloud

    if config["dataset"] is None:
        return load_gt_cloud(_require(Path(config["gt_root"]) / scene / "gt_cloud.npz"))
    from .datasets import load_gt_scene
    from .io import read_point_cloud, transfer_labels

    try:
        points, ids = load_gt_scene(config["dataset"], config["dataset_root"], scene)
    except FileNotFoundError as err:
        raise CLIError(str(err)) from None
    visible_cloud = _labels_dir(config, scene) / "gt_visible_cloud.pcd"
    if visible and visible_cloud.is_file():
        visible_points = read_point_cloud(visible_cloud)
        return visible_points, transfer_labels(visible_points, points, ids)
    return points, ids


def _require(path: Path) -> Path:
    if not path.is_file():
        raise CLIError(f"missing file {path}")
    return path


def _features_by_text(path: Path, texts: list[str], what: str) -> Any:
    from scenemetrics.fileio import load_npz

    data = load_npz(path)
    if "texts" not in data or "features" not in data:
        raise CLIError(f"{path}: an .npz of {what} needs arrays `texts` and `features`")
    keys, feats = [str(t) for t in data["texts"]], data["features"]
    if feats.ndim != 2 or len(keys) != len(feats):
        raise CLIError(f"{path}: `features` must be (len(texts), D); received {feats.shape} for {len(keys)} texts")
    row = {t: i for i, t in enumerate(keys)}
    missing = [t for t in dict.fromkeys(texts) if t not in row]
    if missing:
        raise CLIError(
            f"{path}: no embedding for {len(missing)} {what} text(s): "
            + ", ".join(repr(t) for t in missing[:10])
            + (" ..." if len(missing) > 10 else "")
        )
    return feats[[row[t] for t in texts]]


def _encode(config: dict[str, Any], texts: list[str], device: Any) -> Any:
    from .text import encode_prompts

    return encode_prompts(texts, weights_path=config["clip_weights"], device=device)


def _prompt_features(config: dict[str, Any], prompts: list[str], device: Any) -> Any:
    from scenemetrics.fileio import load_npy

    if config["clip"]:
        return _encode(config, prompts, device)
    path = _require(Path(config["text_features"]))
    if path.suffix == ".npz":
        return _features_by_text(path, prompts, "prompt")
    feats = load_npy(path)
    if feats.ndim != 2 or len(feats) != len(prompts):
        raise CLIError(
            f"{path}: expected ({len(prompts)}, D) prompt embeddings, one per prompt; received {feats.shape}"
        )
    return feats


def _json_value(v: Any) -> float:
    return float(v)  # a NaN is written as null and listed under "non_finite" (scenemetrics.jsonio)


def _write(config: dict[str, Any], payload: dict[str, Any]) -> None:
    from scenemetrics.jsonio import dumps, write_json

    out = config["out"]
    if out is None:
        print(dumps(payload))
        return
    p = Path(out)
    if p.is_dir() or p.suffix.lower() != ".json":
        p = p / f"openlex3d_{config['task']}.json"
    write_json(p, payload)
    if not config["quiet"]:
        print(f"wrote {p}", file=sys.stderr)


def _gather(per_scene: dict[str, Any]) -> dict[str, Any]:
    """Per-scene results of every rank (a no-op without torch.distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return per_scene
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, per_scene)
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    return merged


def _evaluate(fabric: Any, config: dict[str, Any]) -> int:
    """Evaluate every scene (``fabric`` is ``None``) or this rank's share (called by ``Fabric.launch``)."""
    if config["task"] == "segmentation":
        payload = _evaluate_segmentation(config, fabric)
    elif config["task"] == "retrieval":
        payload = _evaluate_retrieval(config, fabric)
    else:
        payload = _evaluate_benchmark(config, fabric)
    if payload is not None:  # rank 0
        if config["task"] != "benchmark":
            _write(config, payload)
        else:  # the table on stdout; the JSON only into --out
            if config["out"] is not None:
                _write(config, payload)
            print(benchmark_table(payload))
    return 0


def _evaluate_benchmark(config: dict[str, Any], fabric: Any) -> dict[str, Any] | None:
    """Segmentation (Top-N + set ranking) and, given query features or --clip, retrieval: one payload."""
    segmentation = _evaluate_segmentation({**config, "set_ranking": True}, fabric)
    retrieval = None
    if config["query_features"] is not None or config["clip"]:
        retrieval = _evaluate_retrieval(config, fabric)
    if segmentation is None:
        return None
    payload: dict[str, Any] = {"dataset": config["dataset"], "segmentation": segmentation, "retrieval": retrieval}
    if retrieval is None:
        payload["retrieval_skipped"] = "no --query-features (or --clip) given"
    return payload


_TOPN_FORM_CAPTION = {
    "frequency": "Top-N = category frequency (the toolkit's form, the published numbers)",
    "iou": "Top-N = IoU TP / (TP + FP + FN) per label tier (the paper's form)",
}
_AP_RANGE_CAPTION = {
    "toolkit": "AP over IoU 0.50:0.05:0.90 (the toolkit's range, the published numbers)",
    "paper": "AP over IoU 0.50:0.05:0.95 (the range the paper writes)",
}


def benchmark_table(payload: dict[str, Any]) -> str:
    """The paper-style table of a benchmark payload: a caption, one row per scene and the mean, values x100.

    The caption line says which Top-N form (category frequency or IoU) and which AP threshold range the table shows.
    Columns: the Top-N values (frequency form: synonyms, depictions, vis_sim, clutter, missing, incorrect; IoU form:
    the four tiers, in ``top_<N>_iou`` columns) for each N, the set-ranking scores, and retrieval AP / AP50 / AP25
    when retrieval ran.
    """
    seg, ret = payload["segmentation"], payload.get("retrieval")
    caption = [_TOPN_FORM_CAPTION[seg["config"].get("topn_form", "frequency")]]
    if ret:
        caption.append(_AP_RANGE_CAPTION[ret["config"].get("ap_range", "toolkit")])
    scenes = list(seg["per_scene"])
    groups: list[tuple[str, list[str]]] = []
    for key, values in seg["mean"].items():
        groups.append((key, list(values)))
    columns = [(group, name) for group, names in groups for name in names]
    header = ["scene", *(f"{g}:{n}" for g, n in columns)] + (["AP", "AP50", "AP25"] if ret else [])

    def cells(seg_row: dict[str, Any], ret_row: dict[str, Any] | None) -> list[str]:
        out = [_percent(seg_row.get(g, {}).get(n)) for g, n in columns]
        if ret:
            out += [_percent((ret_row or {}).get(k)) for k in ("ap", "ap50", "ap25")]
        return out

    rows = [[scene, *cells(seg["per_scene"][scene], ret["per_scene"].get(scene) if ret else None)] for scene in scenes]
    rows.append(["mean", *cells(seg["mean"], ret["scene_mean"] if ret else None)])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    return "\n".join(["OpenLex3D, values x100. " + "; ".join(caption) + ".", *lines])


def _percent(value: Any) -> str:
    if value is None:
        return "-"
    value = float(value)
    return "nan" if value != value else f"{100 * value:.1f}"


def _evaluate_segmentation(config: dict[str, Any], fabric: Any) -> dict[str, Any] | None:
    import torch

    from .categories import load_categories
    from .io import load_prediction_folder, load_prompt_list
    from .metric import OpenLex3DSetRanking, OpenLex3DTopN
    from .segmentation import evaluate_segmentation
    from .viz import save_category_ply, save_category_png

    scenes = _scenes(config)
    device = resolve_device(config["device"]) if fabric is None else fabric.device
    rank0 = fabric is None or fabric.global_rank == 0
    mine = scenes if fabric is None else scenes[fabric.global_rank :: fabric.world_size]
    prompts = load_prompt_list(_prompts_path(config))
    text = torch.as_tensor(_prompt_features(config, prompts, device))
    voxel = None if config["no_downsample"] else config["voxel_size"]
    top_ns = list(dict.fromkeys(config["top_n"]))
    form = config["topn_form"]
    key_suffix = "" if form == "frequency" else "_iou"
    topn_metrics = {
        n: OpenLex3DTopN(
            text, prompts, top_n=n, voxel_size=voxel, missing_threshold=config["missing_threshold"], form=form
        )
        for n in top_ns
    }
    for m in topn_metrics.values():
        m.to(device)
    ranking = OpenLex3DSetRanking(text, prompts, voxel_size=voxel, compat=config["compat"]).to(device)
    per_scene: dict[str, Any] = {}
    for scene in progress(mine, quiet=config["quiet"] or not rank0, desc="openlex3d segmentation"):
        categories = load_categories(_require(_labels_dir(config, scene) / "gt_categories.json"))
        gt_points, gt_ids = _scene_gt(config, scene, visible=True)
        points, features, index = load_prediction_folder(_pred_dir(config, scene, len(scenes)))
        result = evaluate_segmentation(
            points,
            torch.as_tensor(features).to(device),
            index,
            text,
            prompts,
            gt_points,
            gt_ids,
            categories,
            top_n=top_ns,
            set_ranking=config["set_ranking"],
            voxel_size=voxel,
            missing_threshold=config["missing_threshold"],
            compat=config["compat"],
            topn_form="frequency" if form == "frequency" else "both",  # the pictures show the frequency categories
        )
        entry: dict[str, Any] = {}
        for n, res in result.topn.items():
            if form == "frequency":
                topn_metrics[n].update_from_result(res)
                entry[f"top_{n}"] = {k: _json_value(v) for k, v in res.frequencies.items()}
            else:
                iou = result.topn_iou[n]
                topn_metrics[n].update_from_result(iou)
                entry[f"top_{n}_iou"] = {k: _json_value(v) for k, v in iou.ious.items()}
            if config["viz"]:
                base = Path(config["viz"]) / safe_name(f"{scene}_top{n}")
                save_category_ply(base.with_name(base.name + ".ply"), gt_points, res.point_categories)
                save_category_png(
                    base.with_name(base.name + ".png"),
                    gt_points,
                    res.point_categories,
                    title=f"OpenLex3D {scene}: Top-{n} category of each ground-truth point (top-down view)",
                )
        if result.set_ranking is not None:
            ranking.update_from_result(result.set_ranking)
            entry["set_ranking"] = {k: _json_value(v) for k, v in result.set_ranking.scores.items()}
        per_scene[scene] = entry

    mean: dict[str, Any] = {}
    for n, metric in topn_metrics.items():
        values = metric.compute()
        mean[f"top_{n}{key_suffix}"] = {k: _json_value(v) for k, v in values.items() if k != "n_scenes"}
    if config["set_ranking"]:
        mean["set_ranking"] = {k: _json_value(v) for k, v in ranking.compute().items()}
    per_scene = _gather(per_scene)
    if rank0:
        keys = ("top_n", "topn_form", "set_ranking", "compat", "missing_threshold", "prompts")
        settings = {k: config[k] for k in keys}
        settings["voxel_size"] = voxel
        return {"config": settings, "per_scene": {s: per_scene[s] for s in scenes}, "mean": mean}
    return None


def _queries(config: dict[str, Any], gt_dir: Path, categories: Any) -> list[Any]:
    from .io import load_query_mapping
    from .retrieval import generate_queries

    mapping = gt_dir / f"gt_categories_query_to_object_mapping_{config['level']}.json"
    return load_query_mapping(mapping) if mapping.is_file() else generate_queries(categories, config["level"])


def _evaluate_retrieval(config: dict[str, Any], fabric: Any) -> dict[str, Any] | None:
    import torch

    from .categories import load_categories
    from .io import load_prediction_folder
    from .metric import OpenLex3DRetrieval
    from .retrieval import retrieval_ap

    scenes = _scenes(config)
    device = resolve_device(config["device"]) if fabric is None else fabric.device
    rank0 = fabric is None or fabric.global_rank == 0
    mine = scenes if fabric is None else scenes[fabric.global_rank :: fabric.world_size]
    scene_queries = {}
    for scene in mine:
        gt_dir = _labels_dir(config, scene)
        scene_queries[scene] = _queries(config, gt_dir, load_categories(_require(gt_dir / "gt_categories.json")))
    texts = list(dict.fromkeys(q.text for qs in scene_queries.values() for q in qs))
    if config["clip"]:
        table = dict(zip(texts, _encode(config, texts, device), strict=True)) if texts else {}
    else:
        path = _require(Path(config["query_features"]))
        if path.suffix != ".npz":
            raise CLIError(f"--query-features {path}: expected an .npz with arrays `texts` and `features`")
        table = dict(zip(texts, torch.as_tensor(_features_by_text(path, texts, "query")), strict=True)) if texts else {}

    metric = OpenLex3DRetrieval(
        top_k=config["top_k"], alignment_threshold=config["alignment_threshold"], ap_range=config["ap_range"]
    ).to(device)
    per_scene: dict[str, Any] = {}
    for scene in progress(mine, quiet=config["quiet"] or not rank0, desc="openlex3d retrieval"):
        gt_points, gt_ids = _scene_gt(config, scene, visible=False)
        points, features, index = load_prediction_folder(_pred_dir(config, scene, len(scenes)))
        queries = scene_queries[scene]
        feats = torch.as_tensor(features).to(device)
        if queries:
            qf = torch.stack([torch.as_tensor(table[q.text]) for q in queries])
        else:
            qf = feats.new_zeros(0, feats.shape[1])
        res = retrieval_ap(
            points,
            feats,
            index,
            qf,
            queries,
            gt_points,
            gt_ids,
            top_k=config["top_k"],
            alignment_threshold=config["alignment_threshold"],
            ap_range=config["ap_range"],
        )
        metric.update_from_result(res)
        per_scene[scene] = {"ap": _json_value(res.ap), "ap50": _json_value(res.ap50), "ap25": _json_value(res.ap25)}
    values = metric.compute()
    per_scene = _gather(per_scene)
    if rank0:
        settings = {k: config[k] for k in ("level", "top_k", "alignment_threshold", "ap_range")}
        payload = {
            "config": settings,
            "per_scene": {s: per_scene[s] for s in scenes},
            "pooled": {k: _json_value(values[k]) for k in ("ap", "ap50", "ap25")},
            "scene_mean": {k: _json_value(values[f"{k}_scene_mean"]) for k in ("ap", "ap50", "ap25")},
        }
        return payload
    return None
