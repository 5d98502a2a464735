"""``scenemetrics puzzlesim --refs DIR --images DIR --out DIR``: PuzzleSim maps and scores for a folder of images."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scenemetrics import cliutils as _cli
from scenemetrics.jsonio import write_json

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "puzzlesim",
        help="PuzzleSim artifact maps of images against unaligned reference (training) views",
        description=(
            "Score every image of --images against all views of --refs with PuzzleSim (Hermann et al., ICCV 2025). "
            "Writes <out>/scores.json (per-image mean map value and the mean over all images), "
            "<out>/maps/<name>_raw.npy (the exact float32 map, for programs), and pictures for people: "
            "<out>/maps/<name>.png (the map, warm = likely artifact) and <out>/overlays/<name>.png (the image "
            "coloured where the map is low), each with a title and a colour bar of real values; colours span the "
            "2nd-98th percentile of each map."
        ),
    )
    p.add_argument("--refs", required=True, metavar="DIR", help="folder of reference / training views")
    p.add_argument(
        "--images",
        "--renders",
        dest="images",
        required=True,
        metavar="DIR",
        help="folder of images to score (e.g. novel-view renders)",
    )
    _cli.add_out_arg(p)
    _cli.add_weights_arg(p)
    _cli.add_device_arg(p)
    _cli.add_quiet_arg(p)
    p.add_argument("--backbone", default="squeezenet1_1", help="squeezenet1_1 (default), alexnet or vgg16")
    p.add_argument("--layers", type=int, nargs="+", default=None, metavar="L", help="LPIPS slice indices (2 3 4)")
    p.add_argument(
        "--layer-weights",
        type=float,
        nargs="+",
        default=None,
        metavar="W",
        help="one weight per layer (default 0.67 0.2 0.13)",
    )
    p.add_argument(
        "--resize",
        type=int,
        nargs=2,
        default=None,
        metavar=("H", "W"),
        help="resize references and images before the backbone (maps keep the original size)",
    )
    p.add_argument("--colormap", default="jet_r", help="colormap of the map PNGs (default jet_r: warm = artifact)")
    p.add_argument("--save-raw", action="store_true", help="also save each float map as <out>/raw/<name>.npy")
    p.add_argument("--panels", action="store_true", help="also write <out>/panels/<name>.png: image | map | overlay")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with _cli.scratch_dir(getattr(args, "random_weights", False), "scenemetrics-puzzlesim-") as tmp:
        return _run(args, tmp)


def _run(args: argparse.Namespace, tmp: Path | None) -> int:
    import numpy as np
    import torch

    from scenemetrics.image import list_images, read_image
    from scenemetrics.puzzlesim import DEFAULT_LAYER_WEIGHTS, DEFAULT_LAYERS, PuzzleSimMemory, random_checkpoint
    from scenemetrics.puzzlesim.pictures import save_map_pngs

    random_weights = _cli.random_weights_banner(args)
    device = _cli.resolve_device(args.device)
    layers = tuple(args.layers) if args.layers else DEFAULT_LAYERS
    weights = (
        tuple(args.layer_weights)
        if args.layer_weights
        else (DEFAULT_LAYER_WEIGHTS if layers == DEFAULT_LAYERS else None)
    )
    out = Path(args.out)
    ref_files = list_images(args.refs, "--refs")
    image_files = list_images(args.images, "--images")
    by_stem: dict[str, Path] = {}
    for f in image_files:  # results and pictures are named after the stem: a.png and a.jpg would share them
        if f.stem in by_stem:
            raise _cli.CLIError(
                f"--images {args.images}: {by_stem[f.stem].name!r} and {f.name!r} would both be written as {f.stem!r} "
                "(scores.json key and map files); rename one"
            )
        by_stem[f.stem] = f
    refs = [read_image(f) for f in _cli.progress(ref_files, quiet=args.quiet, desc="reading references")]
    weights_path = args.weights
    if random_weights:
        assert tmp is not None  # created for --random-weights
        weights_path = str(random_checkpoint(args.backbone, tmp / f"{args.backbone}-random.pth"))
    _cli.announce(
        f"loading the {args.backbone} backbone and embedding {len(refs)} reference view"
        f"{'' if len(refs) == 1 else 's'} ...",
        quiet=args.quiet,
    )
    memory = PuzzleSimMemory(
        refs,
        backbone=args.backbone,
        layers=layers,
        weights_path=weights_path,
        resize=tuple(args.resize) if args.resize else None,
        device=device,
        progress=_cli.show_progress(args.quiet),
    )
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for f in _cli.progress(image_files, quiet=args.quiet, desc="scoring images"):
        img = read_image(f).to(device)
        with torch.no_grad():
            sim_map = memory.similarity_map(img, layer_weights=weights)[0].cpu()
        entry: dict[str, Any] = {"score": float(sim_map.mean()), "min": float(sim_map.min()), "file": str(f)}
        entry.update(save_map_pngs(img.cpu(), sim_map, out, f.stem, args.colormap, panel=args.panels))
        if args.save_raw:
            (out / "raw").mkdir(exist_ok=True)
            np.save(out / "raw" / f"{f.stem}.npy", sim_map.numpy())
            entry["raw"] = f"raw/{f.stem}.npy"
        results[f.stem] = entry
    scores = [e["score"] for e in results.values()]
    write_json(
        out / "scores.json",
        {
            **({"warning": _cli.RANDOM_BANNER} if random_weights else {}),
            "metric": "puzzlesim",
            "mean_score": float(np.mean(scores)),
            "higher_is_better": True,
            "images": results,
            "settings": {
                "backbone": memory.backbone,
                "layers": list(memory.layers),
                "layer_weights": list(weights) if weights else None,
                "resize": list(args.resize) if args.resize else None,
                "weights": "random (uncalibrated)"
                if random_weights
                else (args.weights or "hub cache (torchvision ImageNet)"),
                "references": [str(f) for f in ref_files],
                "device": str(device),
            },
        },
    )
    if not args.quiet:
        print(f"PuzzleSim mean score {np.mean(scores):.4f} over {len(scores)} image(s); results in {out}")
    if random_weights:
        print(_cli.RANDOM_BANNER, file=sys.stderr)
    return 0
