"""``scenemetrics prism build-dataset`` (posed views -> ViewMatch-style dataset), ``embed`` (dataset -> feature cache
[+ anchor file]), ``train-head`` (cache -> head) and ``evaluate-head`` (head -> AUC, MMD², histogram).

All print human-readable progress to stderr; their last stdout line is one JSON object.

Example:
    >>> from scenemetrics.cli import main
    >>> main(["prism", "build-dataset", "--views", "renders/", "--out", "vm/"])  # doctest: +SKIP
    >>> main(["prism", "embed", "vm/", "--model", "zero123-xl-diffusers/", "--out", "cache/"])  # doctest: +SKIP
    >>> main(["prism", "train-head", "cache/", "--out", "runs/head"])  # doctest: +SKIP
    >>> main(["prism", "evaluate-head", "--data", "cache/", "--head", "runs/head/head.safetensors",
    ...       "--out", "runs/eval"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from scenemetrics.cliutils import RANDOM_BANNER, CLIError, announce, resolve_device, scratch_dir, show_progress
from scenemetrics.jsonio import dumps

__all__ = ["register", "run_build_dataset", "run_embed", "run_evaluate_head", "run_train_head"]


def _devices(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def register(subparsers: Any) -> None:
    """Add ``prism embed`` and ``prism train-head`` to the ``scenemetrics`` command."""
    prism = subparsers.add_parser(
        "prism",
        help="PRISM: Zero123 feature cache and projection-head training",
        description="PRISM (task-aware NVS evaluation): build feature caches and train the projection head.",
    )
    sub = prism.add_subparsers(dest="prism_command", metavar="SUBCOMMAND")

    def usage(_args: argparse.Namespace) -> int:
        prism.print_help(sys.stderr)
        return 2

    prism.set_defaults(func=usage)

    train = sub.add_parser(
        "train-head",
        help="train a projection head on a feature cache",
        description="Train the PRISM projection head (triplet loss, AdamW, early stopping) on a feature cache.",
    )
    train.add_argument("cache_dir", metavar="CACHE_DIR", help="feature cache (scenemetrics prism embed)")
    train.add_argument("--out", required=True, metavar="DIR", help="output folder (checkpoints, logs, head)")
    train.add_argument("--epochs", type=int, default=100, help="total epochs (default 100)")
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate (default 1e-4; paper's is lost)")
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--margin", type=float, default=1.0)
    train.add_argument("--hidden-dim", type=int, default=None, help="default 2048, or the --init-head file's")
    train.add_argument("--out-dim", type=int, default=None, help="default 2048, or the --init-head file's")
    train.add_argument("--patience", type=int, default=10, help="early-stopping patience on val/loss")
    train.add_argument("--val-fraction", type=float, default=0.1)
    train.add_argument("--min-mask-area", type=float, default=0.02)
    train.add_argument("--full-mask-area", type=float, default=0.2)
    train.add_argument("--max-misaligned", type=int, default=None, metavar="N")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--resume", default=None, metavar="last|PATH", help="resume from last.ckpt or a checkpoint")
    train.add_argument(
        "--init-head", default=None, metavar="HEAD.safetensors", help="fine-tune: start from this head's weights"
    )
    train.add_argument("--accelerator", default="auto")
    train.add_argument("--devices", type=_devices, default="auto", metavar="auto|N")
    train.add_argument("--num-workers", type=int, default=0)
    train.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true", help="no progress bars")
    train.set_defaults(func=run_train_head)

    embed = sub.add_parser(
        "embed",
        help="run Zero123 once per triplet of an image dataset and write a feature cache",
        description="Build a PRISM feature cache from a scenemetrics.prism.dataset/1 folder.",
    )
    embed.add_argument("dataset_dir", metavar="DATASET_DIR")
    embed.add_argument(
        "--weights",
        "--model",
        dest="model",
        default=None,
        metavar="PATH_OR_REPO",
        help="Zero123 diffusers folder or Hugging Face repo id (default: ashawkey/zero123-xl-diffusers)",
    )
    embed.add_argument(
        "--random-weights",
        action="store_true",
        help="a tiny deterministic random Zero123 instead (offline; uncalibrated 208-d features, a smoke test only)",
    )
    embed.set_defaults(_weights_flags=("--weights", "--random-weights"))
    embed.add_argument("--out", required=True, metavar="CACHE_DIR", help="output feature-cache folder")
    embed.add_argument("--timestep", type=int, default=0)
    embed.add_argument("--noise-seed", type=int, default=0)
    embed.add_argument("--image-size", type=int, default=256)
    embed.add_argument("--batch-size", type=int, default=16)
    embed.add_argument("--device", default=None, metavar="auto|cpu|cuda|cuda:N")
    embed.add_argument("--fp16", action="store_true", help="run the model in float16 (CUDA only)")
    embed.add_argument("--store-dtype", choices=("float16", "float32"), default="float16")
    embed.add_argument("--revision", default=None, help="hub revision (e.g. refs/pr/1 for kxic's safetensors)")
    embed.add_argument("--head", default=None, metavar="HEAD.safetensors", help="head for --anchors-out")
    embed.add_argument("--anchors-out", default=None, metavar="ANCHORS.safetensors", help="also write an anchor file")
    embed.add_argument("--anchor-split", choices=("train", "val", "test"), default="test")
    embed.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true", help="no progress bars")
    embed.set_defaults(func=run_embed)
    _register_build(sub)
    _register_evaluate(sub)


def _register_build(sub: Any) -> None:
    b = sub.add_parser(
        "build-dataset",
        help="build ViewMatch-style training triplets (masks + inpaintings) from posed views with depth",
        description=(
            "Build a PRISM training dataset from posed views with depth (nerfstudio / Blender transforms.json): "
            "visibility / invisibility / epipolar masks per ordered view pair, plausible and implausible "
            "inpaintings, misaligned-view negatives. Resumable per pair; skips are logged in build_log.jsonl."
        ),
    )
    b.add_argument("--views", required=True, metavar="DIR", help="object folder with transforms.json, or their parent")
    b.add_argument("--out", required=True, metavar="DIR", help="dataset folder (read by `scenemetrics prism embed`)")
    b.add_argument("--inpainter", choices=("diffusers", "flux", "opencv"), default="diffusers")
    b.add_argument("--model", default=None, metavar="ID_OR_DIR", help="diffusers inpainting pipeline (SD 1.5 default)")
    b.add_argument("--flux-base", default="black-forest-labs/FLUX.1-dev", metavar="ID")
    b.add_argument("--flux-controlnet", default="alimama-creative/FLUX.1-dev-Controlnet-Inpainting-Beta", metavar="ID")
    b.add_argument("--flux-lora", default="alimama-creative/FLUX.1-Turbo-Alpha", metavar="ID")
    b.add_argument(
        "--flux-code", default=None, metavar="DIR", help="clone of alimama-creative/FLUX-Controlnet-Inpainting"
    )
    b.add_argument("--flux-cpu-offload", action="store_true", help="FLUX: model CPU offload (smaller GPUs)")
    b.add_argument("--size", type=int, default=None, help="working size (default: the backend's, 512 / 768)")
    b.add_argument("--steps", type=int, default=None, help="inference steps (default: 25 / 8)")
    b.add_argument("--guidance", type=float, default=None, help="guidance scale (default: 7.5 / 3.5)")
    b.add_argument(
        "--strength", type=float, default=None, help="diffusers: strength (1.0); flux: ControlNet scale (0.9)"
    )
    b.add_argument("--seed", type=int, default=45, help="completion k uses seed + k (default 45, the paper's)")
    b.add_argument("--captioner", choices=("auto", "blip", "none"), default="auto")
    b.add_argument("--blip-model", default="Salesforce/blip-image-captioning-base", metavar="ID_OR_DIR")
    b.add_argument("--prompt", default="", help="prompt without a captioner")
    b.add_argument("--prompt-template", default="{caption}")
    b.add_argument("--negative-prompt", default=None, metavar="TEXT", help="default: the PRISM paper's")
    b.add_argument("--num-positives", type=int, default=4)
    b.add_argument("--num-negatives", type=int, default=4)
    b.add_argument("--pairs", default="all", metavar="all|N", help="all ordered pairs, or N random ones per object")
    b.add_argument("--misaligned", choices=("all", "none"), default="all")
    b.add_argument("--min-negative-area", type=float, default=0.02)
    b.add_argument("--min-visible-fraction", type=float, default=0.01)
    b.add_argument("--test-fraction", type=float, default=0.2)
    b.add_argument("--val-fraction", type=float, default=0.0)
    b.add_argument("--split-seed", type=int, default=0)
    b.add_argument("--splits", default=None, metavar="FILE", help='JSON {"train": [...], "val": [...], "test": [...]}')
    b.add_argument("--rel-tol", type=float, default=0.002)
    b.add_argument("--abs-tol", type=float, default=None, metavar="T", help="default: 2 x the depth quantisation step")
    b.add_argument("--close-radius", type=int, default=4)
    b.add_argument("--open-radius", type=int, default=10)
    b.add_argument("--epipolar-close-radius", type=int, default=3)
    b.add_argument("--silhouette-dilate-radius", type=int, default=20)
    b.add_argument("--radius-scale", type=float, default=1.0)
    b.add_argument("--max-ray-samples", type=int, default=2048)
    b.add_argument("--world-up", choices=("z", "y"), default="z")
    b.add_argument("--depth-kind", choices=("z", "ray"), default="z")
    b.add_argument("--depth-scale", type=float, default=None, metavar="S")
    b.add_argument("--far", type=float, default=1e4)
    b.add_argument("--view-names", choices=("index", "stem"), default="index")
    b.add_argument("--no-masks", action="store_true", help="do not write the mask PNGs")
    b.add_argument("--device", default=None, metavar="auto|cpu|cuda|cuda:N")
    b.add_argument("--overwrite", action="store_true", help="rebuild the objects (deletes their folders)")
    b.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true", help="no progress bar")
    b.set_defaults(func=run_build_dataset)


def _register_evaluate(sub: Any) -> None:
    e = sub.add_parser(
        "evaluate-head",
        help="AUC and MMD² of a head between plausible and implausible views (JSON + histogram)",
        description=(
            "Discriminability of a PRISM head on a feature cache: the PRISM distance of positives, inpainted "
            "negatives and misaligned views to their ground truth, the AUC of telling positives from negatives, and "
            "the MMD² of positives and of negatives against an anchor set. Writes evaluation.json and "
            "histogram.png."
        ),
    )
    e.add_argument("--data", required=True, metavar="CACHE_DIR", help="feature cache (scenemetrics prism embed)")
    e.add_argument("--head", default=None, metavar="HEAD.safetensors", help="the head (omit: raw features)")
    e.add_argument("--out", required=True, metavar="DIR", help="output folder (evaluation.json, histogram.png)")
    e.add_argument("--split", choices=("train", "val", "test", "all"), default="test")
    e.add_argument("--anchors", default=None, metavar="ANCHORS.safetensors", help="MMD anchor file")
    e.add_argument("--anchor-split", choices=("train", "val", "test", "all"), default=None, help="default: --split")
    e.add_argument("--min-mask-area", type=float, default=0.02)
    e.add_argument("--no-raw", action="store_true", help="skip the raw-feature baseline")
    e.set_defaults(func=run_evaluate_head)


def _backend(args: argparse.Namespace) -> Any:
    from scenemetrics.prism.viewmatch.backends import (
        DEFAULT_INPAINTING_MODEL,
        DiffusersBackend,
        FluxControlNetBackend,
        OpenCVBackend,
    )

    tuning = {"size": args.size, "steps": args.steps, "guidance": args.guidance, "strength": args.strength}
    if args.inpainter == "opencv":
        given = [k for k, v in tuning.items() if v is not None]
        if given or args.model is not None:
            raise CLIError(f"--inpainter opencv takes no {', '.join('--' + k for k in given) or '--model'}")
        return OpenCVBackend()
    device = None if args.device in (None, "auto") else args.device
    if args.inpainter == "diffusers":
        opts = {
            "size": args.size,
            "num_inference_steps": args.steps,
            "guidance_scale": args.guidance,
            "strength": args.strength,
        }
        return DiffusersBackend(
            args.model or DEFAULT_INPAINTING_MODEL, device=device, **{k: v for k, v in opts.items() if v is not None}
        )
    opts = {
        "size": args.size,
        "num_inference_steps": args.steps,
        "guidance_scale": args.guidance,
        "controlnet_conditioning_scale": args.strength,
    }
    return FluxControlNetBackend(
        args.flux_base,
        args.flux_controlnet,
        args.flux_lora,
        args.flux_code,
        cpu_offload=args.flux_cpu_offload,
        device=device,
        **{k: v for k, v in opts.items() if v is not None},
    )


def run_build_dataset(args: argparse.Namespace) -> int:
    """``scenemetrics prism build-dataset``."""
    from scenemetrics.prism.viewmatch.builder import build_viewmatch_dataset
    from scenemetrics.prism.viewmatch.config import PAPER_NEGATIVE_PROMPT, BuildConfig

    if args.pairs == "all":
        pairs: str | int = "all"
    elif args.pairs.isdigit() and int(args.pairs) > 0:
        pairs = int(args.pairs)
    else:
        print(
            f"scenemetrics prism build-dataset: error: --pairs must be 'all' or N > 0, not {args.pairs!r}",
            file=sys.stderr,
        )
        return 2
    splits = None
    if args.splits is not None:
        try:
            splits = json.loads(open(args.splits).read())  # noqa: SIM115
        except (OSError, json.JSONDecodeError) as err:
            raise CLIError(f"--splits {args.splits!r} is not a readable JSON file: {err}") from err
        if not isinstance(splits, dict):
            raise CLIError(f"--splits {args.splits!r} must hold a JSON object {{split: [objects]}}")
    config = BuildConfig(
        seed=args.seed,
        captioner=args.captioner,
        blip_model=args.blip_model,
        prompt=args.prompt,
        prompt_template=args.prompt_template,
        negative_prompt=PAPER_NEGATIVE_PROMPT if args.negative_prompt is None else args.negative_prompt,
        num_positives=args.num_positives,
        num_negatives=args.num_negatives,
        pairs=pairs,
        misaligned=args.misaligned,
        min_negative_area=args.min_negative_area,
        min_visible_fraction=args.min_visible_fraction,
        test_fraction=args.test_fraction,
        val_fraction=args.val_fraction,
        split_seed=args.split_seed,
        splits=splits,
        rel_tol=args.rel_tol,
        abs_tol=args.abs_tol,
        close_radius=args.close_radius,
        open_radius=args.open_radius,
        epipolar_close_radius=args.epipolar_close_radius,
        silhouette_dilate_radius=args.silhouette_dilate_radius,
        radius_scale=args.radius_scale,
        max_ray_samples=args.max_ray_samples,
        world_up=args.world_up,
        depth_kind=args.depth_kind,
        depth_scale=args.depth_scale,
        far=args.far,
        view_names=args.view_names,
        save_masks=not args.no_masks,
        device=None if args.device in (None, "auto") else args.device,
        overwrite=args.overwrite,
    )
    report = build_viewmatch_dataset(
        args.views, args.out, inpainter=_backend(args), config=config, progress=not args.no_progress
    )
    summary = report.summary()
    print(
        f"built {summary['objects']} object(s), {summary['pairs_done']} pairs, {summary['positives']} positives, "
        f"{summary['negatives']} negatives in {report.seconds:.1f} s; skips: {summary['skipped_by_reason'] or 'none'}",
        file=sys.stderr,
    )
    print(json.dumps(summary))
    return 0


def run_evaluate_head(args: argparse.Namespace) -> int:
    """``scenemetrics prism evaluate-head``."""

    from scenemetrics.prism.head import ProjectionHead
    from scenemetrics.prism.viewmatch.evaluate import head_discriminability, json_ready, plot_distance_histogram

    head = ProjectionHead.load(args.head) if args.head is not None else None
    split = None if args.split == "all" else args.split
    anchor_split = None if args.anchor_split in (None, "all") else args.anchor_split
    if args.anchor_split is None:
        anchor_split = split
    opts = {"split": split, "anchor_split": anchor_split, "min_mask_area": args.min_mask_area}
    if args.anchors is not None and head is None:
        raise CLIError("--anchors holds embeddings of a head: pass that --head too")
    result = head_discriminability(args.data, head, anchors=args.anchors, **opts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png = plot_distance_histogram(result, out / "histogram.png")
    summary = {k: v for k, v in result.items() if k != "distances"}
    summary["head_file"] = args.head
    if head is not None and not args.no_raw:
        raw = head_discriminability(args.data, None, **opts)
        summary["raw"] = {k: raw[k] for k in ("auc", "auc_misaligned", "auc_all_negatives", "mmd", "distance")}
    summary["histogram"] = str(png)
    summary = json_ready(summary)
    (out / "evaluation.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"AUC {summary['auc']} (positives vs inpainted negatives), MMD² positives {summary['mmd']['positives']} vs "
        f"negatives {summary['mmd']['negatives']}; wrote {out / 'evaluation.json'} and {png}",
        file=sys.stderr,
    )
    print(json.dumps(summary))
    return 0


def run_train_head(args: argparse.Namespace) -> int:
    """``scenemetrics prism train-head``."""
    from scenemetrics.prism.training import train_head

    with contextlib.redirect_stdout(sys.stderr):  # Lightning's bars and summaries go to stderr
        result = train_head(
            args.cache_dir,
            args.out,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=args.lr,
            weight_decay=args.weight_decay,
            margin=args.margin,
            hidden_dim=args.hidden_dim,
            out_dim=args.out_dim,
            patience=args.patience,
            val_fraction=args.val_fraction,
            min_mask_area=args.min_mask_area,
            full_mask_area=args.full_mask_area,
            max_misaligned=args.max_misaligned,
            seed=args.seed,
            resume=args.resume,
            init_head=args.init_head,
            accelerator=args.accelerator,
            devices=args.devices,
            num_workers=args.num_workers,
            progress=show_progress(args.no_progress),
        )
    summary = {
        "epochs_completed": result.epochs_completed,
        "best_val_loss": result.best_val_loss,
        "head": str(result.head_path),
        "best_checkpoint": str(result.best_checkpoint),
        "last_checkpoint": str(result.last_checkpoint),
    }
    print(dumps(summary, indent=None))
    return 0


def run_embed(args: argparse.Namespace) -> int:
    """``scenemetrics prism embed``."""
    from scenemetrics.prism.head import ProjectionHead

    if args.head is not None and args.anchors_out is None:
        print("scenemetrics prism embed: error: --head is only used with --anchors-out", file=sys.stderr)
        return 2
    if args.random_weights and args.model is not None:
        raise CLIError("--weights and --random-weights exclude each other; pass one of them")
    device = resolve_device(None if args.device in (None, "auto") else args.device)
    head = ProjectionHead.load(args.head) if args.head is not None else None
    with scratch_dir(args.random_weights, "scenemetrics-prism-") as tmp:
        model = args.model
        if tmp is not None:
            from scenemetrics.prism.random import random_checkpoint

            print(RANDOM_BANNER, file=sys.stderr)
            model = str(random_checkpoint(tmp / "zero123-random"))
        announce(f"loading the Zero123 model {model or 'ashawkey/zero123-xl-diffusers'} ...", quiet=args.no_progress)
        return _embed(args, model, device, head)


def _embed(args: argparse.Namespace, model: str | None, device: Any, head: Any) -> int:
    import torch

    from scenemetrics.prism.anchors import save_anchors
    from scenemetrics.prism.data import anchor_embeddings_from_cache, build_feature_cache, read_feature_cache
    from scenemetrics.prism.features import Zero123Features

    extractor = Zero123Features.from_pretrained(
        model,
        timestep=args.timestep,
        noise_seed=args.noise_seed,
        image_size=args.image_size,
        torch_dtype=torch.float16 if args.fp16 else torch.float32,
        device=device,
        revision=args.revision,
    )
    out = build_feature_cache(
        args.dataset_dir,
        args.out,
        extractor,
        batch_size=args.batch_size,
        store_dtype=args.store_dtype,
        progress=show_progress(args.no_progress),
    )
    index, _ = read_feature_cache(out)
    summary: dict[str, Any] = {
        "rows": index["num_rows"],
        "anchors": len(index["anchors"]),
        "feature_dim": index["feature_dim"],
        "out": str(out),
    }
    if args.anchors_out is not None:
        announce(f"embedding the {args.anchor_split} anchors ...", quiet=args.no_progress)
        anchors = anchor_embeddings_from_cache(out, head, split=args.anchor_split)
        if anchors.shape[0] == 0:
            raise CLIError(f"the dataset has no anchors in split {args.anchor_split!r}; choose --anchor-split")
        head_meta = (
            "raw"
            if head is None
            else json.dumps(
                {"in_dim": head.in_dim, "hidden_dim": head.hidden_dim, "out_dim": head.out_dim}, sort_keys=True
            )
        )
        save_anchors(
            anchors,
            args.anchors_out,
            metadata={"extractor": json.dumps(extractor.provenance(), sort_keys=True), "head": head_meta},
        )
        summary["anchors_file"] = str(args.anchors_out)
    if args.random_weights:
        summary["warning"] = RANDOM_BANNER
    print(dumps(summary, indent=None))
    return 0
