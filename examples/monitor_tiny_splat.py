"""A plain PyTorch training loop (no Lightning, no nerfstudio) with ``SceneMetricsMonitor`` logging to TensorBoard.

The loop is shaped like gsplat's ``examples/simple_trainer.py`` and the original 3DGS ``train.py``: fit Gaussian
parameters to training views one step at a time. The monitor adds two lines: one to build it, one per step
(``monitor.maybe_log(step, render_fn, views)``), which renders the held-out views only when it logs. It writes
``scenemetrics/puzzlesim``, ``scenemetrics/psnr``, the PuzzleSim maps ``scenemetrics/puzzlesim/map/<i>``, the
render | target | error panels ``scenemetrics/panel/<i>`` and view 0's error over time
``scenemetrics/panel_over_time/0``; the colours of each picture keep the range of its first step, so errors
visibly shrink along TensorBoard's step slider.
The renderer is the pure-PyTorch :mod:`scenemetrics.tiny_splat` (CPU); ``examples/monitor_gsplat.py`` is the same
kind of loop with gsplat. Runs from an install (``pip install scenemetrics tensorboard``)::

    python examples/monitor_tiny_splat.py --steps 200 --every-n-steps 50 --random-weights --out runs/monitor
    tensorboard --logdir runs/monitor

``--random-weights`` writes a random-weight SqueezeNet checkpoint so the example runs offline; its PuzzleSim scores
say nothing about quality.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch.utils.tensorboard import SummaryWriter
from torchmetrics.image import PeakSignalNoiseRatio

import scenemetrics as sm
from scenemetrics.callbacks import SceneMetricsMonitor
from scenemetrics.callbacks.pictures import parse_map_range
from scenemetrics.tiny_splat import make_splat_scene, random_gaussians, render_gaussians


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--every-n-steps", type=int, default=50, help="evaluation period (steps)")
    parser.add_argument("--gaussians", type=int, default=1024)
    parser.add_argument("--size", type=int, default=64, help="image side in pixels")
    parser.add_argument("--train-views", type=int, default=16)
    parser.add_argument("--eval-views", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("runs/monitor_tiny_splat"), help="TensorBoard folder")
    parser.add_argument("--weights", type=Path, default=None, help="SqueezeNet 1.1 checkpoint (default: cache)")
    parser.add_argument("--random-weights", action="store_true", help="use random backbone weights (offline demo)")
    parser.add_argument("--panel-map", choices=("abs", "ssim", "lpips", "none"), default="abs", help="panels' map")
    parser.add_argument("--map-range", default="first", help="first, per-map or VMIN,VMAX (colours of maps, panels)")
    parser.add_argument("--background", action="store_true", help="score and log in a worker thread")
    return parser


def main(argv: list[str] | None = None) -> SceneMetricsMonitor:
    args = build_parser().parse_args(argv)
    torch.manual_seed(0)
    weights = args.weights
    if args.random_weights:
        weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", args.out / "random_squeezenet1_1.pth")
    scene = make_splat_scene(num_gaussians=512, num_train=args.train_views, num_eval=args.eval_views, size=args.size)
    init = random_gaussians(args.gaussians, seed=1)
    params = {
        "means": init["means"].clone().requires_grad_(),
        "quats": init["quats"].clone().requires_grad_(),
        "log_scales": init["scales"].log().requires_grad_(),
        "opacity_logits": torch.logit(init["opacities"] * 0.5).requires_grad_(),
        "color_logits": torch.zeros(args.gaussians, 3, requires_grad=True),
    }
    optimizer = torch.optim.Adam(params.values(), lr=0.01)

    def render(viewmat: torch.Tensor) -> torch.Tensor:
        return render_gaussians(params["means"], params["quats"], params["log_scales"].exp(),
                                torch.sigmoid(params["opacity_logits"]), torch.sigmoid(params["color_logits"]),
                                viewmat, scene.K, scene.width, scene.height)  # fmt: skip

    writer = SummaryWriter(str(args.out))
    # (1) build the monitor once, next to the optimizer
    monitor = SceneMetricsMonitor(
        {"puzzlesim": sm.PuzzleSim(weights_path=weights), "psnr": PeakSignalNoiseRatio(data_range=1.0)},
        references=scene.train_images,
        every_n_steps=args.every_n_steps,
        logger=writer,
        panel_map=None if args.panel_map == "none" else args.panel_map,
        map_range=parse_map_range(args.map_range),
        background=args.background,  # the loop only renders; a worker thread scores, draws and logs
    )
    for step in range(1, args.steps + 1):
        i = int(torch.randint(len(scene.train_images), ()))
        loss = (render(scene.train_viewmats[i]) - scene.train_images[i]).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        writer.add_scalar("train/l1", loss.item(), step)
        # (2) one line per step: renders the held-out views only at logging steps
        monitor.maybe_log(step, lambda v: (render(scene.eval_viewmats[v]), scene.eval_images[v]),
                          views=range(len(scene.eval_images)))  # fmt: skip
    monitor.close()  # background: the pending evaluations are logged before the writer closes
    writer.close()
    print(f"logged {monitor.num_evaluations} evaluations to {args.out}")
    return monitor


if __name__ == "__main__":
    main()
