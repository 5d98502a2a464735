"""Training-thread time blocked per evaluation: ``SceneMetricsMonitor`` synchronous vs ``background=True``; JSON.

A plain training loop (:mod:`scenemetrics.tiny_splat`, one training view per Adam step, CPU) with a monitor that
scores ``--eval-views`` held-out views with PuzzleSim (SqueezeNet 1.1, random weights: speed does not depend on the
values; the training views as references) and PSNR every ``--every-n-steps`` steps, and writes scalars, maps and the
default ``abs`` panels to a TensorBoard ``SummaryWriter``. Each repeat runs the same loop three times from the same
initialisation: without a monitor, with the synchronous monitor, with the background one. It times:

* ``blocked_s``: per evaluation, how long ``monitor.maybe_log`` holds the training thread at a due step (synchronous:
  render + update + compute + pictures + logging; background: render + shape checks + copies + hand-over, plus any
  wait for ``max_pending``);
* ``render_s``: per evaluation, the time inside the ``render_fn`` calls (what the training thread has to do anyway);
* ``loop_s``: the whole loop (the background run's closing ``monitor.close()``, which waits for the last
  evaluation, is ``close_s``, outside the loop's time);
* ``eval_seconds``: the logged ``scenemetrics/eval_seconds`` (background: render time + the worker's time).

``blocked_ratio`` = background ``blocked_s`` / synchronous ``blocked_s`` (medians, same run). On a CPU the worker
shares the cores with training, so the loop time shows what the evaluation still costs; on a GPU the scoring runs on
side streams (``--device cuda``; the loop's time then ends with a ``torch.cuda.synchronize()``, and ``slowdown``,
the loop time with a monitor over the loop time without, minus one, is the training slowdown). ``copy_bytes``:
memory the copies of one evaluation hold (renders and targets, float32).

Example:
    python benchmarks/background_overhead.py --steps 40 --every-n-steps 10 --repeats 3
    python benchmarks/background_overhead.py --device cuda --steps 500 --every-n-steps 100 --size 256 \
        --gaussians 4096 --train-views 32
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40, help="optimizer steps per loop")
    p.add_argument("--every-n-steps", type=int, default=10, help="evaluation period")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="torch threads (training and the worker share them)")
    p.add_argument("--gaussians", type=int, default=256)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--train-views", type=int, default=8)
    p.add_argument("--eval-views", type=int, default=4)
    p.add_argument("--max-pending", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu, or cuda: everything on the GPU, the worker on side streams")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    from torch.utils.tensorboard import SummaryWriter
    from torchmetrics.image import PeakSignalNoiseRatio

    import scenemetrics as sm
    from scenemetrics.callbacks import SceneMetricsMonitor
    from scenemetrics.tiny_splat import make_splat_scene, random_gaussians, render_gaussians

    tmp = Path(tempfile.mkdtemp(prefix="background_overhead_"))
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp / "squeezenet1_1.pth")
    device = torch.device(args.device)
    scene = make_splat_scene(
        num_gaussians=512, num_train=args.train_views, num_eval=args.eval_views, size=args.size, device=device
    )
    train_images, eval_images = scene.train_images.to(device), scene.eval_images.to(device)
    train_viewmats, eval_viewmats, K = (t.to(device) for t in (scene.train_viewmats, scene.eval_viewmats, scene.K))
    puzzlesim = sm.PuzzleSim(references=train_images, weights_path=weights).to(device)  # embedded once, shared

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def loop(mode: str | None, repeat: int) -> dict:
        init = {k: v.to(device) for k, v in random_gaussians(args.gaussians, seed=repeat).items()}
        params = {
            "means": init["means"].clone().requires_grad_(),
            "quats": init["quats"].clone().requires_grad_(),
            "log_scales": init["scales"].log().requires_grad_(),
            "opacity_logits": torch.logit(init["opacities"] * 0.5).requires_grad_(),
            "color_logits": torch.zeros(args.gaussians, 3, device=device, requires_grad=True),
        }
        optimizer = torch.optim.Adam(params.values(), lr=0.01)
        generator = torch.Generator().manual_seed(repeat)

        def render(viewmat: torch.Tensor) -> torch.Tensor:
            return render_gaussians(params["means"], params["quats"], params["log_scales"].exp(),
                                    torch.sigmoid(params["opacity_logits"]), torch.sigmoid(params["color_logits"]),
                                    viewmat, K, scene.width, scene.height)  # fmt: skip

        render_time = [0.0]

        def render_fn(v: int) -> tuple[torch.Tensor, torch.Tensor]:
            t0 = time.perf_counter()
            out = render(eval_viewmats[v])
            render_time[0] += time.perf_counter() - t0
            return out, eval_images[v]

        writer = SummaryWriter(str(tmp / f"{mode}_{repeat}"))
        monitor = None
        if mode is not None:
            monitor = SceneMetricsMonitor(
                {"puzzlesim": puzzlesim, "psnr": PeakSignalNoiseRatio(data_range=1.0)},
                every_n_steps=args.every_n_steps,
                logger=writer,
                background=mode == "background",
                max_pending=args.max_pending,
            ).to(device)
        blocked, renders, futures, results = [], [], [], []
        sync()
        start = time.perf_counter()
        for step in range(1, args.steps + 1):
            i = int(torch.randint(len(train_images), (), generator=generator))
            loss = (render(train_viewmats[i]) - train_images[i]).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if monitor is not None and monitor.should_log(step):
                render_time[0] = 0.0
                t0 = time.perf_counter()
                out = monitor.maybe_log(step, render_fn, views=range(len(eval_images)))
                blocked.append(time.perf_counter() - t0)
                renders.append(render_time[0])
                (futures if mode == "background" else results).append(out)
        sync()
        loop_s = time.perf_counter() - start
        t0 = time.perf_counter()
        if monitor is not None:
            monitor.close()
        sync()
        close_s = time.perf_counter() - t0
        writer.close()
        results += [f.result() for f in futures]
        out = {"loop_s": loop_s, "close_s": close_s, "blocked": blocked, "render": renders}
        out["eval_seconds"] = [r.scalars["scenemetrics/eval_seconds"] for r in results]
        if monitor is not None and monitor._worker is not None:
            out["copy_bytes"] = monitor._worker.copy_bytes
        return out

    loop(None, -1)  # warm-up: allocator, first backbone passes
    loop("sync", -1)
    runs: dict[str, list[dict]] = {"none": [], "sync": [], "background": []}
    for repeat in range(args.repeats):
        for mode in ("none", "sync", "background"):  # taking turns, so that drifts of the machine hit all alike
            runs[mode].append(loop(None if mode == "none" else mode, repeat))

    def med(mode: str, key: str) -> float:
        values = [v for run in runs[mode] for v in (run[key] if isinstance(run[key], list) else [run[key]])]
        return float(f"{statistics.median(values):.4g}")

    workload = f"tiny_splat {device.type}, {args.gaussians} Gaussians, {args.size}x{args.size}, "
    result = {
        "workload": workload + f"{args.eval_views} eval views, PuzzleSim + PSNR, maps and abs panels to TensorBoard",
        "threads": args.threads,
        "steps": args.steps,
        "every_n_steps": args.every_n_steps,
        "max_pending": args.max_pending,
        "repeats": args.repeats,
        "evaluations_per_loop": len(runs["sync"][0]["blocked"]),
        "train_loop_s": {mode: med(mode, "loop_s") for mode in ("none", "sync", "background")},
        "sync": {
            key: med("sync", k)
            for key, k in (("blocked_s", "blocked"), ("render_s", "render"), ("eval_seconds", "eval_seconds"))
        },
        "background": {
            key: med("background", k)
            for key, k in (
                ("blocked_s", "blocked"),
                ("render_s", "render"),
                ("eval_seconds", "eval_seconds"),
                ("close_s", "close_s"),
            )
        },
    }
    result["background"]["copy_bytes"] = runs["background"][0]["copy_bytes"]
    result["loop_s_per_repeat"] = {mode: [round(run["loop_s"], 3) for run in runs[mode]] for mode in runs}
    result["blocked_ratio"] = float(f"{result['background']['blocked_s'] / result['sync']['blocked_s']:.3g}")
    loops = result["train_loop_s"]
    result["slowdown"] = {mode: float(f"{loops[mode] / loops['none'] - 1:.3g}") for mode in ("sync", "background")}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
