"""``scenemetrics osim``: scene OSIM of a folder of renders against a folder of references.

All files form one scene. The command writes ``osim.json`` (scene score, per-class table, per-view scores and
per-object rows) and ``overlays/<render path>.png`` (red masks on the objects below the scene score) into
``--out``. ``--boxes FILE`` adds regions of your own (objects the detector misses) next to the detector's: a JSON or
CSV boxes file keyed by the reference's path relative to ``--refs`` without extension (format:
:mod:`scenemetrics.osim.regions`); each given box is scored as a detection with that box and class. With
``--devices N`` / ``--num-nodes`` the views are sharded over processes by Lightning Fabric and the metric states are
summed across them.

Example:
    scenemetrics osim --refs gt/ --renders renders/ --out osim_report/ --detector yolox_x
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from scenemetrics.cliutils import (
    RANDOM_BANNER,
    CLIError,
    add_device_arg,
    add_distributed_args,
    add_out_arg,
    add_quiet_arg,
    add_weights_arg,
    announce,
    progress,
    random_weights_banner,
    resolve_device,
    scratch_dir,
    unit_interval,
)
from scenemetrics.devices import end_process_group
from scenemetrics.jsonio import write_json

__all__ = ["pair_images", "read_class_names", "read_view_boxes", "register", "run"]

EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
_VARIANTS = "yolox_nano, yolox_tiny, yolox_s, yolox_m, yolox_l, yolox_x"
_LAYERS = ("dark3", "dark4", "dark5", "p3", "p4", "p5")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "osim",
        help="OSIM (objectness similarity) of renders against their references",
        description=(
            "Scene OSIM (Uchida et al.): YOLOX detects objects on the references; each object is scored by the "
            "cosine similarity of reference and render features over its box; classes are pooled over all views "
            "with GBVS saliency weights. Writes osim.json and overlays/ into --out."
        ),
    )
    p.add_argument("--refs", required=True, metavar="DIR", help="reference (ground-truth) views")
    p.add_argument("--renders", required=True, metavar="DIR", help="test images rendered from the same cameras")
    add_out_arg(p)
    add_weights_arg(p)
    add_device_arg(p)
    add_quiet_arg(p)
    p.add_argument(
        "--detector",
        default=None,
        help=f"YOLOX variant ({_VARIANTS}; default yolox_x, or yolox_nano with --random-weights)",
    )
    p.add_argument(
        "--conf", type=unit_interval, default=0.35, help="detection confidence threshold in [0, 1] (default 0.35)"
    )
    p.add_argument(
        "--nms", type=unit_interval, default=0.45, help="class-agnostic NMS IoU threshold in [0, 1] (default 0.45)"
    )
    p.add_argument("--layer", default="dark5", choices=_LAYERS, help="feature map compared (default dark5)")
    p.add_argument("--saliency", default="gbvs", choices=("gbvs", "uniform"), help="object weights (default gbvs)")
    p.add_argument(
        "--class-names",
        default=None,
        metavar="FILE",
        help="text file with one class name per line, in the order of the detector head (for a YOLOX trained on "
        "your own classes; default: the COCO names)",
    )
    p.add_argument(
        "--boxes",
        default=None,
        metavar="FILE",
        help="JSON or CSV file of regions of your own (objects the detector misses), per reference view: "
        'JSON {"views": {"<view>": [{"box": [x1, y1, x2, y2], "class": "chair"}, ...]}} or CSV '
        "view,x1,y1,x2,y2[,class] in original pixels; a box without a class is pooled as 'unlabelled'",
    )
    p.add_argument(
        "--pair-by",
        default="name",
        choices=("name", "order"),
        help="pair files by relative path without extension (default) or by sorted order",
    )
    add_distributed_args(p)
    p.set_defaults(func=run)


def _list_images(folder: str, flag: str) -> list[Path]:
    root = Path(folder)
    if not root.is_dir():
        raise CLIError(f"{flag} {folder!r} is not a folder")
    files = sorted(
        (p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    if not files:
        raise CLIError(f"{flag} {folder!r} holds no image ({' '.join(EXTENSIONS)})")
    return files


def _keyed(files: list[Path], root: Path, flag: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for f in files:
        key = f.relative_to(root).with_suffix("").as_posix()
        if key in out:
            raise ValueError(f"{flag}: {out[key].name} and {f.name} have the same name; pairing by name is ambiguous")
        out[key] = f
    return out


def pair_images(refs: str, renders: str, pair_by: str = "name") -> list[tuple[Path, Path]]:
    """(reference, render) file pairs of two folders (searched recursively, extensions case-insensitive).

    ``pair_by="name"`` pairs files with the same relative path up to the extension (``gt/a.jpg`` with
    ``renders/a.png``) and raises ``ValueError`` when the two sets differ; ``"order"`` pairs the sorted lists.
    """
    ref_files, render_files = _list_images(refs, "--refs"), _list_images(renders, "--renders")
    if pair_by == "order":
        if len(ref_files) != len(render_files):
            raise ValueError(
                f"--pair-by order needs as many renders as references; found {len(render_files)} and {len(ref_files)}"
            )
        return list(zip(ref_files, render_files, strict=True))
    a = _keyed(ref_files, Path(refs), "--refs")
    b = _keyed(render_files, Path(renders), "--renders")
    if a.keys() != b.keys():
        only_refs, only_renders = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        raise ValueError(
            "--pair-by name: the folders do not hold the same views; "
            f"only in --refs: {only_refs[:5]}{' ...' if len(only_refs) > 5 else ''}; "
            f"only in --renders: {only_renders[:5]}{' ...' if len(only_renders) > 5 else ''} "
            "(use --pair-by order to pair sorted lists)"
        )
    return [(a[k], b[k]) for k in sorted(a)]


def read_class_names(path: str | Path) -> list[str]:
    """Class names from a text file, one per line in head order (trailing blank lines are ignored).

    Raises:
        CLIError: the file cannot be read, or holds a blank line between names.
    """
    try:
        lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as err:
        raise CLIError(f"--class-names {str(path)!r}: {err}") from None
    while lines and not lines[-1]:
        lines.pop()
    blank = [i + 1 for i, line in enumerate(lines) if not line]
    if blank or not lines:
        where = f"line {blank[0]} is blank" if blank else "the file holds no name"
        raise CLIError(f"--class-names {str(path)!r}: {where}; write one class name per line, in head order")
    return lines


def _parse_devices(devices: str) -> int | str:
    return int(devices) if str(devices).strip().isdigit() else devices


def run(args: argparse.Namespace) -> int:
    with scratch_dir(getattr(args, "random_weights", False), "scenemetrics-osim-") as tmp:
        return _run(args, tmp)


def _run(args: argparse.Namespace, tmp: Path | None) -> int:
    import torch

    from scenemetrics.osim.checkpoints import normalize_variant
    from scenemetrics.osim.detector import load_detector
    from scenemetrics.osim.random import random_checkpoint

    random_weights = random_weights_banner(args)
    detector = args.detector or ("yolox_nano" if random_weights else "yolox_x")
    try:
        variant = normalize_variant(detector)
    except ValueError as err:
        raise CLIError(f"--detector: {err}") from None
    class_names = read_class_names(args.class_names) if args.class_names is not None else None
    pairs = pair_images(args.refs, args.renders, args.pair_by)
    boxes = read_view_boxes(args.boxes, pairs, args.refs) if args.boxes is not None else None
    distributed = not (str(args.devices).strip() == "1" and args.num_nodes == 1)
    rank, world, fabric = 0, 1, None
    if distributed:
        try:
            from lightning.fabric import Fabric
        except ImportError:
            raise ImportError(
                'multi-process OSIM needs Lightning Fabric: pip install "scenemetrics[lightning]"'
            ) from None
        accelerator = "auto" if args.device is None else resolve_device(args.device).type
        fabric = Fabric(
            accelerator=accelerator,
            devices=_parse_devices(args.devices),
            num_nodes=args.num_nodes,
            strategy=args.strategy,
        )
        fabric.launch()
        rank, world, device = fabric.global_rank, fabric.world_size, fabric.device
    else:
        device = resolve_device(args.device)
    weights = args.weights
    quiet = args.quiet or rank != 0
    if random_weights:
        assert tmp is not None  # created for --random-weights
        announce(f"building a random {variant} detector ...", quiet=quiet)
        weights = str(random_checkpoint(variant, tmp / f"{variant}-random.pth"))
    announce(f"loading the {variant} detector ...", quiet=quiet)
    model = load_detector(variant, weights, device)
    shard = pairs[rank::world]
    shard_boxes = None if boxes is None else boxes[rank::world]
    report = _evaluate(args, shard, model, device, class_names, shard_boxes, quiet=args.quiet or rank != 0)
    if world > 1:
        gathered: list[Any] = [None] * world
        torch.distributed.all_gather_object(gathered, (report["views"], report["objects"]))
        report["views"] = [v for views, _ in gathered for v in views]
        report["objects"] = [o for _, objects in gathered for o in objects]
        order = {render.relative_to(args.renders).as_posix(): i for i, (_, render) in enumerate(pairs)}
        report["views"].sort(key=lambda v: order[v["render"]])
        report["objects"].sort(key=lambda o: (order[o["render"]], o["index"]))
    if rank == 0:
        if random_weights:
            weights = "random (uncalibrated)"
        else:
            weights = str(args.weights) if args.weights is not None else f"cache ({variant}.pth)"
        report = {
            **({"warning": RANDOM_BANNER} if random_weights else {}),
            "osim": report["osim"],
            "num_views": len(pairs),
            "num_objects": len(report["objects"]),
            "detector": variant,
            "num_classes": model.num_classes,
            "weights": weights,
            "layer": args.layer,
            "conf_threshold": args.conf,
            "nms_threshold": args.nms,
            "saliency": args.saliency,
            "pair_by": args.pair_by,
            "boxes": None if args.boxes is None else str(args.boxes),
            "num_given": sum(1 for o in report["objects"] if o["given"]),
            "classes": report["classes"],
            "views": report["views"],
            "objects": report["objects"],
        }
        path = write_json(Path(args.out) / "osim.json", report)
        if not args.quiet:
            print(f"OSIM = {report['osim']:.4f} over {len(pairs)} view(s), {report['num_objects']} object(s); {path}")
        if random_weights:
            print(RANDOM_BANNER, file=sys.stderr)
    if fabric is not None:
        fabric.barrier()
        end_process_group()
    return 0


def read_view_boxes(path: str | Path, pairs: list[tuple[Path, Path]], refs: str | Path) -> list[Any]:
    """The regions of a boxes file for each (reference, render) pair, keyed by the reference's path relative to
    ``refs`` without extension.

    Raises:
        ValueError: a bad file, a ``scenes`` section (this command scores one scene), or a view the file names that
            is not among the references (a typo would otherwise add nothing, silently).
    """
    from scenemetrics.osim.regions import read_boxes_file, view_key

    boxes_file = read_boxes_file(path)
    if boxes_file.scenes:
        raise ValueError(
            f"--boxes {str(path)!r}: this command scores one scene; put its boxes under 'views' (no 'scenes' section, "
            "no CSV scene column)"
        )
    keys = [view_key(ref.relative_to(refs).as_posix()) for ref, _ in pairs]
    unknown = sorted(set(boxes_file.views) - set(keys))
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise ValueError(f"--boxes {str(path)!r} names view(s) that are not in --refs: {shown} (keys are the "
                         "references' paths relative to --refs, without extension)")  # fmt: skip
    return [boxes_file.views.get(k) for k in keys]


def _evaluate(
    args: argparse.Namespace,
    pairs: list[tuple[Path, Path]],
    model: Any,
    device: Any,
    class_names: list[str] | None,
    boxes: list[Any] | None,
    quiet: bool,
) -> dict:
    """Update an OSIM metric view by view, then write the overlays of these views; returns the report parts."""
    import torch

    from scenemetrics.image import read_image
    from scenemetrics.osim.functional import class_name, scene_score
    from scenemetrics.osim.metric import OSIM
    from scenemetrics.osim.viz import low_objects_picture

    metric = OSIM(
        layer=args.layer,
        conf_threshold=args.conf,
        nms_threshold=args.nms,
        saliency=args.saliency,
        model=model,
        class_names=class_names,
    ).to(device)
    names = metric.pool_names
    results = []
    for k, (ref_path, render_path) in enumerate(progress(pairs, quiet=quiet, desc="osim")):
        ref, render = read_image(ref_path), read_image(render_path)
        if ref.shape != render.shape:
            raise ValueError(
                f"{render_path} is {render.shape[1]}x{render.shape[2]} px but its reference {ref_path} is "
                f"{ref.shape[1]}x{ref.shape[2]}; renders must come from the reference cameras at the same size"
            )
        given = None if boxes is None else [boxes[k]]
        try:
            metric.update(render[None].to(device), ref[None].to(device), given)
        except ValueError as err:
            if given is None or "`boxes" not in str(err):
                raise
            raise ValueError(f"--boxes {str(args.boxes)!r}, view {ref_path.name}: {err}") from None
        results.append(metric.last_result)
    with metric.sync_context():  # sums over every process (a no-op without torch.distributed)
        r_sum, s_sum, count = (t.detach().cpu().clone() for t in (metric.r_sum, metric.s_sum, metric.count))
    score = float(scene_score(r_sum, s_sum, count, warn=not quiet, conf_threshold=args.conf))
    table = [
        {
            "class_id": c,
            "name": class_name(c, names),
            "o_l": float(r_sum[c] / count[c]),
            "s_l": float(s_sum[c] / count[c]),
            "count": int(count[c]),
        }
        for c in torch.nonzero(count > 0).flatten().tolist()
    ]
    table.sort(key=lambda row: (row["o_l"], row["class_id"]))
    views, objects = [], []
    renders_root = Path(args.renders)
    refs_root = Path(args.refs)
    for (ref_path, render_path), res in zip(pairs, results, strict=True):
        rel = render_path.relative_to(renders_root)
        view_score = res.view_scores(1)[0]
        views.append(
            {
                "render": rel.as_posix(),
                "reference": ref_path.relative_to(refs_root).as_posix(),
                "num_objects": int(res.r.numel()),
                "osim": view_score,
            }
        )
        for k in range(res.r.numel()):
            r = float(res.r[k])
            objects.append(
                {
                    "render": rel.as_posix(),
                    "index": k,
                    "class_id": int(res.classes[k]),
                    "class": class_name(int(res.classes[k]), names),
                    "box": [round(float(v), 3) for v in res.boxes[k]],
                    "det_score": None if bool(res.given[k]) else float(res.det_scores[k]),
                    "given": bool(res.given[k]),
                    "r": r,
                    "s": float(res.s[k]),
                    "below_scene": (not math.isnan(score)) and r < score,
                }
            )
        picture = low_objects_picture(
            read_image(render_path),
            res,
            threshold=score,
            title=f"OSIM {rel.as_posix()}: view score {view_score:.4f}, scene score {score:.4f}",
        )
        picture.save(Path(args.out) / "overlays" / rel.with_suffix(".png"))
    return {"osim": score, "classes": table, "views": views, "objects": objects}
