"""Train a tiny 3DGS-style model with Lightning on the CPU and watch PuzzleSim scores and maps in TensorBoard.

A random "ground-truth" Gaussian scene is rendered from 16 training cameras and a few held-out cameras; a
``LightningModule`` holding Gaussian parameters is fitted to the training views with the pure-PyTorch renderer
:mod:`scenemetrics.tiny_splat`, while :class:`scenemetrics.callbacks.SceneMetricsCallback` renders the held-out views
every ``--every-n-steps`` steps and logs ``scenemetrics/puzzlesim`` and colormapped ``scenemetrics/puzzlesim/map/<i>``.

Runs from an install (``pip install "scenemetrics[lightning]"``)::

    python examples/callbacks_lightning_tiny_splat.py --steps 200 --every-n-steps 50 --random-weights --out runs/splat
    tensorboard --logdir runs/splat

``--random-weights`` writes a random-weight SqueezeNet checkpoint so the example runs offline; its scores say
nothing about quality. Without it the real SqueezeNet 1.1 weights are used (downloaded once into the cache, or
``--weights PATH``). ``--wandb`` also logs to Weights & Biases (offline unless you are logged in).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import lightning.pytorch as pl
import torch
from torch import Tensor, nn

import scenemetrics as sm
from scenemetrics.callbacks import RenderedView, SceneMetricsCallback
from scenemetrics.tiny_splat import SplatScene, make_splat_scene, random_gaussians, render_gaussians

Rasterize = Callable[..., Tensor]


class TinySplatModule(pl.LightningModule):
    """Gaussian-splat parameters fitted to a scene's training views (one view per step, L1 loss, Adam).

    Implements the :class:`scenemetrics.callbacks.SceneRenderable` protocol: ``render_view(i)`` renders held-out view
    ``i`` (with its ground truth as target), ``reference_views()`` returns the training images, ``eval_views()`` the
    held-out view indices.

    Args:
        scene: the views to fit and evaluate.
        num_gaussians: number of Gaussians, initialised at random.
        lr: Adam learning rate.
        seed: initialisation seed.
        rasterize: ``fn(means, quats, scales, opacities, colors, viewmat, K, width, height) -> (3, H, W)``
            (default: the pure-PyTorch renderer; see ``callbacks_lightning_gsplat.py`` for gsplat).
    """

    def __init__(
        self,
        scene: SplatScene,
        num_gaussians: int = 1024,
        lr: float = 0.01,
        seed: int = 0,
        rasterize: Rasterize = render_gaussians,
    ) -> None:
        super().__init__()
        init = random_gaussians(num_gaussians, seed=seed + 1)
        self.means = nn.Parameter(init["means"])
        self.quats = nn.Parameter(init["quats"])
        self.log_scales = nn.Parameter(init["scales"].log())
        self.opacity_logits = nn.Parameter(torch.logit(init["opacities"] * 0.5))
        self.color_logits = nn.Parameter(torch.zeros(num_gaussians, 3))
        self.register_buffer("train_images", scene.train_images, persistent=False)
        self.register_buffer("train_viewmats", scene.train_viewmats, persistent=False)
        self.register_buffer("eval_images", scene.eval_images, persistent=False)
        self.register_buffer("eval_viewmats", scene.eval_viewmats, persistent=False)
        self.register_buffer("K", scene.K, persistent=False)
        self.width, self.height = scene.width, scene.height
        self.lr = lr
        self.rasterize = rasterize

    def render(self, viewmat: Tensor) -> Tensor:
        """``(3, H, W)`` render from a world->camera matrix (unclamped, like a real splatting renderer)."""
        return self.rasterize(
            self.means,
            self.quats,
            self.log_scales.exp(),
            torch.sigmoid(self.opacity_logits),
            torch.sigmoid(self.color_logits),
            viewmat,
            self.K,
            self.width,
            self.height,
        )

    def training_step(self, batch: Tensor, batch_idx: int) -> Tensor:
        i = int(batch.reshape(-1)[0])
        loss = (self.render(self.train_viewmats[i]) - self.train_images[i]).abs().mean()
        self.log("train/l1", loss, prog_bar=True)
        return loss

    def train_dataloader(self) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(torch.arange(len(self.train_images)), batch_size=1, shuffle=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    # SceneRenderable protocol
    def render_view(self, view: int) -> RenderedView:
        return RenderedView(self.render(self.eval_viewmats[view]), self.eval_images[view])

    def reference_views(self) -> Tensor:
        return self.train_images

    def eval_views(self) -> list[int]:
        return list(range(len(self.eval_images)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--every-n-steps", type=int, default=50, help="evaluation period (steps)")
    parser.add_argument("--gaussians", type=int, default=1024)
    parser.add_argument("--size", type=int, default=64, help="image side in pixels")
    parser.add_argument("--train-views", type=int, default=16)
    parser.add_argument("--eval-views", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("runs/callbacks_tiny_splat"), help="log folder")
    parser.add_argument("--weights", type=Path, default=None, help="SqueezeNet 1.1 checkpoint (default: cache)")
    parser.add_argument("--random-weights", action="store_true", help="use random backbone weights (offline demo)")
    parser.add_argument("--wandb", action="store_true", help="also log to Weights & Biases")
    return parser


def main(argv: list[str] | None = None) -> SceneMetricsCallback:
    args = build_parser().parse_args(argv)
    torch.manual_seed(0)
    weights = args.weights
    if args.random_weights:
        weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", args.out / "random_squeezenet1_1.pth")
    scene = make_splat_scene(num_gaussians=512, num_train=args.train_views, num_eval=args.eval_views, size=args.size)
    model = TinySplatModule(scene, num_gaussians=args.gaussians)
    callback = SceneMetricsCallback({"puzzlesim": sm.PuzzleSim(weights_path=weights)}, every_n_steps=args.every_n_steps)
    loggers: list = [pl.loggers.TensorBoardLogger(args.out, name="tiny_splat")]
    if args.wandb:
        loggers.append(pl.loggers.WandbLogger(project="scenemetrics-tiny-splat", save_dir=str(args.out)))
    trainer = pl.Trainer(
        max_steps=args.steps,
        accelerator="cpu",
        logger=loggers,
        callbacks=[callback],
        enable_checkpointing=False,
        log_every_n_steps=10,
    )
    trainer.fit(model)
    print(f"logged {callback.num_evaluations} evaluations to {args.out}")
    return callback


if __name__ == "__main__":
    main()
