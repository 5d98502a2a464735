"""The tiny Lightning 3DGS loop with gsplat's CUDA rasterizer (``--backend gsplat``) or the CPU renderer (``tiny``).

Same ``TinySplatModule`` and ``SceneMetricsCallback`` as ``callbacks_lightning_tiny_splat.py`` (imported from the
script beside this one: keep the two files together); only the rasterizer changes. gsplat (``pip install
"scenemetrics[lightning,gsplat]"``) needs CUDA. Larger scenes than the CPU example make sense here::

    python examples/callbacks_lightning_gsplat.py --backend gsplat --size 256 --gaussians 20000 --steps 2000 \\
        --every-n-steps 500 --random-weights --out runs/gsplat
    tensorboard --logdir runs/gsplat

Add ``--osim`` to also log OSIM scores, per-class scores and overlays (needs the OSIM detector weights).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lightning.pytorch as pl
import torch
from callbacks_lightning_tiny_splat import TinySplatModule  # the script beside this one (Python puts its folder first)
from torch import Tensor

import scenemetrics as sm
from scenemetrics.callbacks import SceneMetricsCallback
from scenemetrics.tiny_splat import make_splat_scene, render_gaussians


def gsplat_rasterize(
    means: Tensor,
    quats: Tensor,
    scales: Tensor,
    opacities: Tensor,
    colors: Tensor,
    viewmat: Tensor,
    K: Tensor,
    width: int,
    height: int,
    background: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> Tensor:
    """``gsplat.rasterization`` for one camera with the tiny renderer's signature; returns ``(3, H, W)``."""
    from gsplat import rasterization

    bg = torch.tensor([background], dtype=means.dtype, device=means.device)
    colors_out, _alphas, _meta = rasterization(
        means, quats, scales, opacities, colors, viewmat[None], K[None], width, height, backgrounds=bg
    )
    return colors_out[0].permute(2, 0, 1)


def main(argv: list[str] | None = None) -> SceneMetricsCallback:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("gsplat", "tiny"), default="gsplat")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--every-n-steps", type=int, default=500)
    parser.add_argument("--gaussians", type=int, default=20000)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--train-views", type=int, default=32)
    parser.add_argument("--eval-views", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("runs/callbacks_gsplat"))
    parser.add_argument("--weights", type=Path, default=None, help="SqueezeNet 1.1 checkpoint (default: cache)")
    parser.add_argument("--random-weights", action="store_true", help="random PuzzleSim backbone (offline demo)")
    parser.add_argument("--osim", action="store_true", help="also run OSIM (YOLOX-X weights from the cache)")
    args = parser.parse_args(argv)
    if args.backend == "gsplat" and not torch.cuda.is_available():
        parser.error("--backend gsplat needs a CUDA device; use --backend tiny on the CPU")
    weights = args.weights
    if args.random_weights:
        weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", args.out / "random_squeezenet1_1.pth")
    rasterize = gsplat_rasterize if args.backend == "gsplat" else render_gaussians
    scene = make_splat_scene(
        num_gaussians=1024,
        num_train=args.train_views,
        num_eval=args.eval_views,
        size=args.size,
        render_fn=rasterize,
        device="cuda" if args.backend == "gsplat" else "cpu",
    )
    model = TinySplatModule(scene, num_gaussians=args.gaussians, rasterize=rasterize)
    metrics = {"puzzlesim": sm.PuzzleSim(weights_path=weights)}
    if args.osim:
        metrics["osim"] = sm.OSIM()
    callback = SceneMetricsCallback(metrics, every_n_steps=args.every_n_steps, max_logged_images=4)
    trainer = pl.Trainer(
        max_steps=args.steps,
        accelerator="gpu" if args.backend == "gsplat" else "cpu",
        devices=1,
        logger=pl.loggers.TensorBoardLogger(args.out, name=f"splat_{args.backend}"),
        callbacks=[callback],
        enable_checkpointing=False,
    )
    trainer.fit(model)
    print(f"logged {callback.num_evaluations} evaluations to {args.out}")
    return callback


if __name__ == "__main__":
    main()
