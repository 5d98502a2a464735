"""``scenemetrics prism embed`` (image dataset -> feature cache [+ anchor file]) and ``scenemetrics prism train-head``.

Both print human-readable progress to stderr; their last stdout line is one JSON object.

Example:
    >>> from scenemetrics.cli import main
    >>> main(["prism", "embed", "dataset/", "--model", "zero123-xl-diffusers/", "--out", "cache/"])  # doctest: +SKIP
    >>> main(["prism", "train-head", "cache/", "--out", "runs/head"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from scenemetrics.cli import RANDOM_BANNER, CLIError, announce, show_progress
from scenemetrics.jsonio import dumps

__all__ = ["register", "run_embed", "run_train_head"]


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
    train.add_argument("--hidden-dim", type=int, default=2048)
    train.add_argument("--out-dim", type=int, default=2048)
    train.add_argument("--patience", type=int, default=10, help="early-stopping patience on val/loss")
    train.add_argument("--val-fraction", type=float, default=0.1)
    train.add_argument("--min-mask-area", type=float, default=0.02)
    train.add_argument("--full-mask-area", type=float, default=0.2)
    train.add_argument("--max-misaligned", type=int, default=None, metavar="N")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--resume", default=None, metavar="last|PATH", help="resume from last.ckpt or a checkpoint")
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
    from scenemetrics.cli import resolve_device
    from scenemetrics.prism.head import ProjectionHead

    if args.head is not None and args.anchors_out is None:
        print("scenemetrics prism embed: error: --head is only used with --anchors-out", file=sys.stderr)
        return 2
    if args.random_weights and args.model is not None:
        raise CLIError("--weights and --random-weights exclude each other; pass one of them")
    device = resolve_device(None if args.device in (None, "auto") else args.device)
    head = ProjectionHead.load(args.head) if args.head is not None else None
    with tempfile.TemporaryDirectory(prefix="scenemetrics-prism-") as tmp:
        model = args.model
        if args.random_weights:
            from scenemetrics.prism.random import random_checkpoint

            print(RANDOM_BANNER, file=sys.stderr)
            model = str(random_checkpoint(Path(tmp) / "zero123-random"))
        announce(f"loading the Zero123 model {model or 'ashawkey/zero123-xl-diffusers'} ...", quiet=args.no_progress)
        return _embed(args, model, device, head)


def _embed(args: argparse.Namespace, model: str | None, device: Any, head: Any) -> int:
    import torch

    from scenemetrics.prism.data import anchor_embeddings_from_cache, build_feature_cache, read_feature_cache
    from scenemetrics.prism.features import Zero123Features
    from scenemetrics.prism.mmd import save_anchors

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
