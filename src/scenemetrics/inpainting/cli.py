"""``scenemetrics inpaint --refs DIR --image PATH --out DIR``: PuzzleSim-guided artifact inpainting of one image."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scenemetrics import cliutils as _cli
from scenemetrics.jsonio import write_json

__all__ = ["build_inpainter", "list_references", "register", "run"]

INPAINTERS = ("lama", "opencv", "diffusers")
REF_EXTENSIONS = (".png", ".jpg", ".jpeg")
"""``--refs`` reads every ``*.png|*.jpg|*.jpeg`` directly in DIR (sorted, not recursive), not every extension the shared
image reader knows."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inpaint",
        help="inpaint the artifacts PuzzleSim finds in an image, keeping only changes that raise its quality",
        description=(
            "Progressive PuzzleSim-guided inpainting (Hermann et al., ICCV 2025, Sec. 5): candidate masks from "
            "thresholds of the PuzzleSim map of --image against the views of --refs are inpainted, re-scored, and "
            "the best one kept while it helps. Writes <out>/<stem>_inpainted.png, <stem>_mask.png (white = "
            "inpainted), <stem>_panel.png (before | map | after | mask) and <stem>.json (history and qualities)."
        ),
    )
    p.add_argument("--refs", required=True, metavar="DIR", help="folder of reference / training views")
    p.add_argument("--image", required=True, metavar="PATH", help="the image to repair (e.g. a novel-view render)")
    _cli.add_out_arg(p)
    p.add_argument(
        "--inpainter",
        choices=INPAINTERS,
        default=None,
        help="backend: lama (big-LaMa, the paper's; default), opencv (offline, needs the [inpaint] extra; the "
        "default with --random-weights), diffusers (Stable Diffusion inpainting, needs the [prism] extra)",
    )
    _cli.add_weights_arg(
        p, help="PuzzleSim backbone checkpoint file or folder (default: the scenemetrics cache, downloading once)"
    )
    p.add_argument("--lama-weights", metavar="PATH", default=None, help="big-lama.pt file or its folder")
    p.add_argument(
        "--i-trust-this-file",
        action="store_true",
        help="load a --lama-weights file that is not the published big-lama.pt: TorchScript runs code stored in "
        "the file when it is loaded, so only do this for a file you made or trust",
    )
    p.add_argument(
        "--diffusers-model",
        metavar="ID_OR_DIR",
        default="stable-diffusion-v1-5/stable-diffusion-inpainting",
        help="Hugging Face id or local folder of a Stable Diffusion inpainting pipeline",
    )
    p.add_argument("--prompt", default="", help="text prompt of the diffusers backend (default: empty)")
    p.add_argument("--backbone", default="squeezenet1_1", help="PuzzleSim backbone: squeezenet1_1, alexnet, vgg16")
    p.add_argument("--n-candidates", type=int, default=50, help="thresholds of the first round (paper: 50)")
    p.add_argument("--refine-candidates", type=int, default=10, help="thresholds per refinement round")
    p.add_argument("--max-iters", type=int, default=10, help="rounds at most")
    p.add_argument("--alpha", type=float, default=0.25, help="refinement half-width in units of the map's std")
    p.add_argument(
        "--size-penalty",
        type=float,
        default=1.0,
        help="weight of the mask-area regulariser, in units of the input map's std (scale-free)",
    )
    p.add_argument("--mask-dilation", type=int, default=0, help="square dilation radius of the masks in pixels")
    p.add_argument("--batch-size", type=int, default=8, help="candidates per inpainter / PuzzleSim call")
    _cli.add_device_arg(p)
    _cli.add_quiet_arg(p)
    p.set_defaults(func=run)


def build_inpainter(args: argparse.Namespace, device: Any) -> Any:
    """The backend named by ``--inpainter``; LaMa and diffusers are loaded now, so missing weights fail early."""
    from scenemetrics import hub
    from scenemetrics.inpainting.inpainters import DiffusersInpainter, LaMaInpainter, OpenCVInpainter

    if args.inpainter == "opencv":
        return OpenCVInpainter()
    if args.inpainter == "lama":
        lama = LaMaInpainter(weights_path=args.lama_weights, device=device, trust_file=args.i_trust_this_file)
        try:
            lama.load()
        except hub.WeightsNotFoundError as err:
            text = _cli.weights_message(err, "--lama-weights", random_flag=None)
            raise _cli.CLIError(f"{text} To inpaint without LaMa, pass --inpainter opencv (works offline).") from None
        return lama
    diffusion = DiffusersInpainter(model=args.diffusers_model, prompt=args.prompt, device=device)
    try:
        diffusion.load()
    except hub.WeightsNotFoundError as err:
        raise _cli.CLIError(f"{err} Pass --inpainter opencv (works offline) or --inpainter lama.") from None
    return diffusion


def list_references(folder: str) -> list[Path]:
    """The ``*.png``, ``*.jpg`` and ``*.jpeg`` files directly in ``folder`` (case-insensitive), sorted by name.

    Raises:
        CLIError: ``folder`` is not a folder, or holds no such file.
    """
    p = Path(folder)
    if not p.is_dir():
        raise _cli.CLIError(f"--refs {folder!r} is not a folder")
    files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in REF_EXTENSIONS)
    if not files:
        raise _cli.CLIError(f"--refs {folder!r} holds no image ({', '.join(REF_EXTENSIONS)})")
    return files


def run(args: argparse.Namespace) -> int:

    random_weights = _cli.random_weights_banner(args)
    if args.inpainter is None:
        args.inpainter = "opencv" if random_weights else "lama"
    if random_weights and args.inpainter != "opencv":
        raise _cli.CLIError(
            f"--random-weights replaces the PuzzleSim backbone only; --inpainter {args.inpainter} has no random "
            "stand-in (use --inpainter opencv)"
        )
    with _cli.scratch_dir(random_weights, "scenemetrics-inpaint-") as tmp:
        if tmp is not None:
            from scenemetrics.puzzlesim import random_checkpoint

            args.weights = str(random_checkpoint(args.backbone, tmp / f"{args.backbone}-random.pth"))
        code = _run(args)
    if random_weights:
        print(_cli.RANDOM_BANNER, file=sys.stderr)
    return code


def _run(args: argparse.Namespace) -> int:
    import torch

    from scenemetrics import viz
    from scenemetrics.image import read_image
    from scenemetrics.inpainting.loop import puzzle_inpaint
    from scenemetrics.inpainting.picture import inpainting_picture

    device = _cli.resolve_device(args.device)
    image_path = Path(args.image)
    if not image_path.is_file():
        raise _cli.CLIError(f"--image {args.image!r} is not a file")
    ref_files = list_references(args.refs)
    refs = [read_image(f) for f in _cli.progress(ref_files, quiet=args.quiet, desc="reading references")]
    image = read_image(image_path).to(device)
    inpainter = build_inpainter(args, device)

    _cli.announce(
        f"inpainting {image_path.name} against {len(refs)} reference view{'' if len(refs) == 1 else 's'} "
        f"({args.inpainter}; {args.n_candidates} candidate masks, at most {args.max_iters} rounds) ...",
        quiet=args.quiet,
    )
    result = puzzle_inpaint(
        image,
        refs,
        inpainter,
        n_candidates=args.n_candidates,
        alpha=args.alpha,
        refine_candidates=args.refine_candidates,
        max_iters=args.max_iters,
        mask_dilation=args.mask_dilation,
        size_penalty=args.size_penalty,
        batch_size=args.batch_size,
        backbone=args.backbone,
        weights_path=args.weights,
        progress=_cli.show_progress(args.quiet),
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = image_path.stem
    after = result.image.cpu()
    mask = result.mask.cpu().to(torch.float32)
    files = {
        "inpainted": viz.save_png(after, out / f"{stem}_inpainted.png"),
        "mask": viz.save_png(mask, out / f"{stem}_mask.png"),
        "panel": inpainting_picture(image.cpu(), result, name=image_path.name).save(out / f"{stem}_panel.png"),
    }
    write_json(
        out / f"{stem}.json",
        {
            "image": str(image_path),
            "quality_before": result.quality_before,
            "quality_after": result.quality_after,
            "higher_is_better": True,
            "mask_fraction": result.mask_fraction,
            "rounds": len(result.history),
            "accepted_rounds": result.accepted_rounds,
            "history": result.history,
            "files": {k: v.name for k, v in files.items()},
            "settings": {
                "inpainter": args.inpainter,
                "references": [str(f) for f in ref_files],
                "backbone": args.backbone,
                "weights": "random (uncalibrated)"
                if args.random_weights
                else (args.weights or "hub cache (torchvision ImageNet)"),
                "n_candidates": args.n_candidates,
                "refine_candidates": args.refine_candidates,
                "max_iters": args.max_iters,
                "alpha": args.alpha,
                "size_penalty": args.size_penalty,
                "mask_dilation": args.mask_dilation,
                "batch_size": args.batch_size,
                "device": str(device),
            },
        },
    )
    print(
        f"quality {result.quality_before:.4f} -> {result.quality_after:.4f}, {len(result.history)} rounds, "
        f"{100 * result.mask_fraction:.1f}% of pixels inpainted"
    )
    return 0
