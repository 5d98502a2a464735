"""What a render | target | error panel adds to an evaluation, per view; prints one JSON object.

For each image size and each ``panel_map`` (``abs``, ``ssim``, ``lpips``), the same evaluation of one view is timed
with and without the panel: ``MetricRunner.begin`` / ``update`` / ``finish`` (the callbacks' evaluation: metric
update and compute, the map and the panel drawn, the panel over time updated) followed by writing every image to a
TensorBoard ``SummaryWriter`` (PNG encoding included), as the callbacks log them. The metrics are those of a typical
run: PSNR (no map, no network) at every size, plus PuzzleSim (SqueezeNet 1.1, random weights: speed does not depend on
the values, 8 references) at the R-CPU size of 64 x 64, where the view is rendered by the tiny Gaussian-splat renderer
of :mod:`scenemetrics.tiny_splat` (1024 Gaussians) and one Adam step of that model is timed too, to put the panel's
cost next to a training step.

Reported per size (medians over ``--repeats`` timings, each of a fresh evaluation, the variants taking turns):

* ``baseline_s``: one view's evaluation without a panel (``panel_map=None``);
* ``<panel_map>.seconds`` and ``<panel_map>.overhead_s``: with the panel, and the difference;
* ``<panel_map>.ratio``: with / without;
* at 64 x 64 also ``train_step_s`` and ``render_s`` and, per panel map, ``overhead_at_500``: the panels of
  ``--views`` logged views every 500 training steps as a fraction of the training time
  (``views * overhead_s / (500 * train_step_s)``).

Example:
    python benchmarks/panel_overhead.py --sizes 64 512 1024 --repeats 5 --threads 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

PANEL_MAPS = ("abs", "ssim", "lpips")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 512, 1024], help="square view sides (pixels)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: on a shared machine more thrash)")
    p.add_argument("--views", type=int, default=4, help="logged views per evaluation (for overhead_at_500)")
    return p


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _psnr_only() -> dict:
    from torchmetrics.image import PeakSignalNoiseRatio

    return {"psnr": PeakSignalNoiseRatio(data_range=1.0)}


def _tiny_splat_view(repeats: int, squeeze: Path) -> tuple[torch.Tensor, torch.Tensor, dict, Callable[[], dict]]:
    """The R-CPU view (64 x 64, 1024 Gaussians), the times of an Adam step and of a render, and its metrics."""
    from torchmetrics.image import PeakSignalNoiseRatio

    import scenemetrics as sm
    from scenemetrics.tiny_splat import make_splat_scene, random_gaussians, render_gaussians

    size = 64
    scene = make_splat_scene(num_gaussians=512, num_train=8, num_eval=1, size=size, seed=0)
    init = random_gaussians(1024, seed=1)
    means, quats, scales, opacities, colors = (
        init[k].clone().requires_grad_() for k in ("means", "quats", "scales", "opacities", "colors")
    )
    optimizer = torch.optim.Adam([means, quats, scales, opacities, colors], lr=0.01)

    def render() -> torch.Tensor:
        return render_gaussians(means, quats, scales.abs() + 1e-4, opacities.clamp(0.01, 0.99), colors.clamp(0, 1),
                                scene.train_viewmats[0], scene.K, size, size)  # fmt: skip

    steps, renders = [], []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        loss = (render() - scene.train_images[0]).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with torch.no_grad():
            image = render()
        renders.append(time.perf_counter() - t0)
    refs = scene.train_images

    def metrics() -> dict:
        return {"psnr": PeakSignalNoiseRatio(data_range=1.0), "puzzlesim": sm.PuzzleSim(refs, weights_path=squeeze)}

    extra = {"train_step_s": _median(steps[1:]), "render_s": _median(renders[1:])}
    return image[None].clamp(0, 1), scene.eval_images[0][None], extra, metrics


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    from torch.utils.tensorboard import SummaryWriter

    import scenemetrics as sm
    from scenemetrics.callbacks import RenderedView
    from scenemetrics.callbacks.evaluation import MetricRunner
    from scenemetrics.callbacks.logging import log_to_summary_writer
    from scenemetrics.callbacks.views import prepare_view
    from scenemetrics.registry import MetricConfig

    tmp = Path(tempfile.mkdtemp(prefix="panel_overhead_"))
    alexnet = sm.puzzlesim.random_checkpoint("alexnet", tmp / "alexnet.pth", include_classifier=False)
    squeeze = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp / "squeezenet1_1.pth")
    lpips_config = MetricConfig("lpips_map", {"weights": str(alexnet)}, None)
    writer = SummaryWriter(str(tmp / "tb"))
    out: dict = {
        "workload": "one view per evaluation; PSNR (+ PuzzleSim at 64 px); images written to TensorBoard",
        "threads": args.threads,
        "repeats": args.repeats,
        "sizes": {},
    }

    for size in args.sizes:
        if size == 64:  # R-CPU: a tiny-splat render, PuzzleSim as in the callbacks' reference workload
            view_render, target, extra, metrics_factory = _tiny_splat_view(args.repeats, squeeze)
        else:
            g = torch.Generator().manual_seed(size)
            target = torch.rand(1, 3, size, size, generator=g)
            view_render = (target + 0.1 * torch.randn(target.shape, generator=g)).clamp(0, 1)
            extra, metrics_factory = {}, _psnr_only
        view = prepare_view(RenderedView(view_render, target), "benchmark", 0)
        runners = {
            None: MetricRunner(metrics_factory(), panel_map=None),
            **{
                name: MetricRunner(
                    metrics_factory(), panel_map=name, panel_config=lpips_config if name == "lpips" else None
                )
                for name in PANEL_MAPS
            },
        }
        times: dict = {name: [] for name in runners}
        for repeat in range(args.repeats + 1):  # the first round warms up (allocations, the networks' first run)
            for name, runner in runners.items():
                t0 = time.perf_counter()
                runner.begin(collect_images=True, step=repeat)
                runner.update(0, view)
                result = runner.finish()
                log_to_summary_writer(writer, result, repeat)
                elapsed = time.perf_counter() - t0
                if repeat:
                    times[name].append(elapsed)
        baseline = _median(times[None])
        entry: dict = {"baseline_s": baseline, **extra}
        for name in PANEL_MAPS:
            seconds = _median(times[name])
            entry[name] = {"seconds": seconds, "overhead_s": seconds - baseline, "ratio": seconds / baseline}
            if "train_step_s" in extra:
                entry[name]["overhead_at_500"] = args.views * (seconds - baseline) / (500 * extra["train_step_s"])
        out["sizes"][str(size)] = entry
    writer.close()
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
