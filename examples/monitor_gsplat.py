"""A gsplat training loop shaped like gsplat's ``examples/simple_trainer.py``, watched by ``SceneMetricsMonitor``.

The loop has simple_trainer's pieces under the same names: a ``splats`` ``ParameterDict`` (``means``, log ``scales``,
``quats``, logit ``opacities``, SH colours ``sh0`` / ``shN``) with one Adam per parameter and simple_trainer's
learning rates, ``rasterize_splats(camtoworlds, Ks, width, height, sh_degree)`` calling ``rasterization(...,
viewmats=inverse(camtoworlds), ...)``, a 0-based ``for step in range(max_steps)`` loop with the SH-degree schedule,
and a train / val split whose items hold ``camtoworld``, ``K`` and ``image``. The monitor adds two lines, exactly
where docs/callbacks.md puts them in simple_trainer: build it next to the ``SummaryWriter``, and call
``monitor.maybe_log(step + 1, render_val, views=range(len(valset)))`` after the optimizer step (``step + 1``: the
number of optimizer steps the evaluated weights have seen).

The scene is a random Gaussian scene rendered from orbiting cameras (:mod:`scenemetrics.tiny_splat`), so nothing is
downloaded. Runs from an install::

    pip install "scenemetrics[gsplat]" tensorboard
    python examples/monitor_gsplat.py --steps 2000 --every-n-steps 500 --random-weights --out runs/monitor_gsplat
    python examples/monitor_gsplat.py --backend tiny --size 32 --gaussians 256 --steps 100 --every-n-steps 25 \\
        --random-weights   # CPU: scenemetrics.tiny_splat.rasterization, gsplat's signature in pure PyTorch
    tensorboard --logdir runs/monitor_gsplat

``--backend gsplat`` needs CUDA (gsplat has no CPU rasterizer; its kernels compile at the first call unless gsplat
came as a prebuilt wheel). ``--random-weights`` writes a random-weight SqueezeNet for PuzzleSim (offline; scores
uncalibrated). ``benchmarks/gpu_check.py`` times this loop with and without the monitor.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

import scenemetrics as sm
from scenemetrics.callbacks import SceneMetricsMonitor
from scenemetrics.tiny_splat import make_splat_scene, random_gaussians

Rasterize = Callable[..., tuple[Tensor, Tensor, dict]]
"""``gsplat.rasterization`` or anything with its signature (``scenemetrics.tiny_splat.rasterization`` on the CPU)."""

SH_C0 = math.sqrt(1 / (4 * math.pi))  # the degree-0 spherical harmonic: colour = SH_C0 * sh0 + 0.5


@dataclass
class Views:
    """A split laid out like gsplat's ``Dataset`` items: ``camtoworld`` (OpenCV camera), ``K``, ``image`` in [0, 1]."""

    camtoworlds: Tensor  # [N, 4, 4]
    Ks: Tensor  # [N, 3, 3]
    images: Tensor  # [N, H, W, 3]

    def __len__(self) -> int:
        return len(self.images)


@dataclass
class TrainResult:
    """What :func:`train` measured: the loss of every step and the wall time of the loop (CUDA synchronised)."""

    losses: list[float]
    seconds: float


def gsplat_rasterization() -> Rasterize:
    """``gsplat.rasterization`` (imported here: gsplat is optional)."""
    from gsplat import rasterization

    return rasterization


def make_dataset(
    rasterize: Rasterize, *, num_train: int, num_eval: int, size: int, num_gaussians: int = 512, device: str = "cpu"
) -> tuple[Views, Views]:
    """Ground-truth views of a random Gaussian scene rendered by ``rasterize``: (trainset, valset) on ``device``."""

    def render_one(means, quats, scales, opacities, colors, viewmat, K, width, height):
        white = torch.ones(1, 3, device=means.device)
        out, _, _ = rasterize(means, quats, scales, opacities, colors, viewmat[None], K[None], width, height,
                              backgrounds=white)  # fmt: skip
        return out[0].permute(2, 0, 1)

    scene = make_splat_scene(num_gaussians, num_train, num_eval, size, render_fn=render_one, device=device)

    def split(viewmats: Tensor, images: Tensor) -> Views:
        return Views(
            camtoworlds=torch.linalg.inv(viewmats).to(device),
            Ks=scene.K.expand(len(viewmats), 3, 3).contiguous().to(device),
            images=images.permute(0, 2, 3, 1).contiguous().to(device),
        )

    return split(scene.train_viewmats, scene.train_images), split(scene.eval_viewmats, scene.eval_images)


def create_splats_with_optimizers(
    num_gaussians: int, *, sh_degree: int = 3, scene_scale: float = 1.0, device: str = "cpu", seed: int = 1
) -> tuple[nn.ParameterDict, dict[str, torch.optim.Optimizer]]:
    """Random initial Gaussians and one Adam per parameter, with gsplat simple_trainer's default learning rates."""
    init = random_gaussians(num_gaussians, seed=seed)
    colors = torch.zeros(num_gaussians, (sh_degree + 1) ** 2, 3)
    colors[:, 0] = (init["colors"] - 0.5) / SH_C0
    params = [  # name, value, learning rate
        ("means", init["means"], 1.6e-4 * scene_scale),
        ("scales", init["scales"].log(), 5e-3),
        ("quats", init["quats"], 1e-3),
        ("opacities", torch.logit(torch.full((num_gaussians,), 0.1)), 5e-2),
        ("sh0", colors[:, :1], 2.5e-3),
        ("shN", colors[:, 1:], 2.5e-3 / 20),
    ]
    splats = nn.ParameterDict({name: nn.Parameter(value) for name, value, _ in params}).to(device)
    optimizers = {name: torch.optim.Adam([splats[name]], lr=lr, eps=1e-15) for name, _, lr in params}
    return splats, optimizers


def rasterize_splats(
    splats: nn.ParameterDict,
    rasterize: Rasterize,
    camtoworlds: Tensor,
    Ks: Tensor,
    width: int,
    height: int,
    sh_degree: int,
) -> tuple[Tensor, Tensor, dict]:
    """simple_trainer's ``Runner.rasterize_splats``: post-activation parameters, SH colours, white background."""
    return rasterize(
        means=splats["means"],
        quats=splats["quats"],
        scales=torch.exp(splats["scales"]),
        opacities=torch.sigmoid(splats["opacities"]),
        colors=torch.cat([splats["sh0"], splats["shN"]], 1),
        viewmats=torch.linalg.inv(camtoworlds),
        Ks=Ks,
        width=width,
        height=height,
        sh_degree=sh_degree,
        backgrounds=torch.ones(len(camtoworlds), 3, device=camtoworlds.device),
    )


def train(
    splats: nn.ParameterDict,
    optimizers: dict[str, torch.optim.Optimizer],
    trainset: Views,
    valset: Views,
    rasterize: Rasterize,
    *,
    max_steps: int,
    monitor: SceneMetricsMonitor | None = None,
    sh_degree: int = 3,
    sh_degree_interval: int = 1000,
    seed: int = 0,
) -> TrainResult:
    """simple_trainer's step loop (one random training view per step, L1 loss), with the monitor's one line."""
    height, width = trainset.images.shape[1:3]
    generator = torch.Generator().manual_seed(seed)
    cuda = trainset.images.is_cuda

    def render_val(i: int) -> tuple[Tensor, Tensor]:  # [1, 3, H, W] render and ground truth, as the monitor wants
        colors, _, _ = rasterize_splats(splats, rasterize, valset.camtoworlds[i : i + 1], valset.Ks[i : i + 1],
                                        width, height, sh_degree)  # fmt: skip
        return colors.permute(0, 3, 1, 2), valset.images[i : i + 1].permute(0, 3, 1, 2)

    losses = []
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for step in range(max_steps):
        i = int(torch.randint(len(trainset), (), generator=generator))
        camtoworlds, Ks = trainset.camtoworlds[i : i + 1], trainset.Ks[i : i + 1]  # [1, 4, 4], [1, 3, 3]
        pixels = trainset.images[i : i + 1]  # [1, H, W, 3]
        sh_degree_to_use = min(step // sh_degree_interval, sh_degree)
        renders, _alphas, _info = rasterize_splats(splats, rasterize, camtoworlds, Ks, width, height, sh_degree_to_use)
        loss = (renders - pixels).abs().mean()
        loss.backward()
        for optimizer in optimizers.values():
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        # the monitor: renders the val views only when an evaluation is due (step + 1 = optimizer steps seen)
        if monitor is not None:
            monitor.maybe_log(step + 1, render_val, views=range(len(valset)))
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return TrainResult([float(v) for v in losses], seconds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("gsplat", "tiny"), default="gsplat", help="rasterizer (tiny: CPU)")
    parser.add_argument("--steps", type=int, default=2000, help="optimizer steps")
    parser.add_argument("--every-n-steps", type=int, default=500, help="evaluation period (steps)")
    parser.add_argument("--gaussians", type=int, default=20000)
    parser.add_argument("--size", type=int, default=256, help="image side in pixels")
    parser.add_argument("--train-views", type=int, default=32)
    parser.add_argument("--eval-views", type=int, default=4)
    parser.add_argument("--sh-degree", type=int, default=3)
    parser.add_argument("--sh-degree-interval", type=int, default=1000, help="raise the SH degree every N steps")
    parser.add_argument("--out", type=Path, default=Path("runs/monitor_gsplat"), help="TensorBoard folder")
    parser.add_argument("--weights", type=Path, default=None, help="SqueezeNet 1.1 checkpoint (default: cache)")
    parser.add_argument("--random-weights", action="store_true", help="random PuzzleSim backbone (offline demo)")
    parser.add_argument("--background", action="store_true", help="score and log in a worker thread")
    return parser


def main(argv: list[str] | None = None) -> SceneMetricsMonitor:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.backend == "gsplat" and not torch.cuda.is_available():
        parser.error("--backend gsplat needs a CUDA device (gsplat has no CPU rasterizer); use --backend tiny")
    from torch.utils.tensorboard import SummaryWriter
    from torchmetrics.image import PeakSignalNoiseRatio

    device = "cuda" if args.backend == "gsplat" else "cpu"
    if args.backend == "gsplat":
        rasterize = gsplat_rasterization()
    else:
        from scenemetrics.tiny_splat import rasterization as rasterize
    torch.manual_seed(0)
    trainset, valset = make_dataset(
        rasterize, num_train=args.train_views, num_eval=args.eval_views, size=args.size, device=device
    )
    scene_scale = 1.1 * float(trainset.camtoworlds[:, :3, 3].norm(dim=-1).max())  # as simple_trainer: camera extent
    splats, optimizers = create_splats_with_optimizers(
        args.gaussians, sh_degree=args.sh_degree, scene_scale=scene_scale, device=device
    )
    weights = args.weights
    if args.random_weights:
        weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", args.out / "random_squeezenet1_1.pth")

    writer = SummaryWriter(str(args.out))
    # (1) the monitor, built once next to the writer; references = the training images, embedded at the first log
    monitor = SceneMetricsMonitor(
        {"puzzlesim": sm.PuzzleSim(weights_path=weights), "psnr": PeakSignalNoiseRatio(data_range=1.0)},
        references=trainset.images.permute(0, 3, 1, 2),
        max_reference_views=32,
        every_n_steps=args.every_n_steps,
        logger=writer,
        background=args.background,  # the loop only renders; a worker thread (a side CUDA stream) does the rest
    ).to(device)
    result = train(
        splats, optimizers, trainset, valset, rasterize,
        max_steps=args.steps, monitor=monitor, sh_degree=args.sh_degree, sh_degree_interval=args.sh_degree_interval,
    )  # fmt: skip
    monitor.close()  # background: the pending evaluations are logged before the writer closes
    writer.close()
    print(
        f"{args.steps} steps in {result.seconds:.1f} s, L1 {result.losses[0]:.4f} -> {result.losses[-1]:.4f}; "
        f"logged {monitor.num_evaluations} evaluations to {args.out}"
    )
    return monitor


if __name__ == "__main__":
    main()
