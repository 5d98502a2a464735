"""Overhead of `scenemetrics eval` over a plain loop calling the same metrics, on a generated tree.

Both run in this process on the same tree (random-weight PuzzleSim backbone, so nothing is downloaded):

* baseline: for every (method, scene), read the images, ``update`` PSNR, SSIM and PuzzleSim one view at a time and
  ``compute()`` — the minimum any evaluation script does;
* eval: ``run_evaluation`` with the same metrics (planning, per-view values, map thumbnails, atomic commits with
  fsync, tables and the HTML report), one process, a fresh output folder each repetition.

Prints one JSON object: median wall times over ``--repeats`` runs and their ratio (eval / baseline).

    python benchmarks/eval_overhead.py [--methods 3] [--scenes 2] [--views 4] [--size 96 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch

from scenemetrics import viz
from scenemetrics.evaluation import EvalConfig, discover_units, run_evaluation
from scenemetrics.image import read_image
from scenemetrics.puzzlesim import PuzzleSim, random_checkpoint
from scenemetrics.synthetic import make_scene


def write_tree(root: Path, methods: int, scenes: int, views: int, size: tuple[int, int]) -> Path:
    for s in range(scenes):
        sc = make_scene(num_train=4, num_novel=views, size=size, seed=s)
        for m in range(methods):
            d = root / f"method{m}" / f"scene{s}"
            for i, t in enumerate(sc.train_views):
                viz.save_png(t, d / "train" / f"t{i:03d}.png")
            for i, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
                viz.save_png(art if m % 2 else gt, d / "renders" / f"v{i:03d}.png")
                viz.save_png(gt, d / "gt" / f"v{i:03d}.png")
    return root


def baseline(root: Path, weights: Path) -> float:
    from torchmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure

    t0 = time.perf_counter()
    psnr = PeakSignalNoiseRatio(data_range=1.0, dim=(1, 2, 3))
    ssim = StructuralSimilarityIndexMeasure(data_range=1.0)
    puzzle = PuzzleSim(weights_path=weights)
    for unit in discover_units(root):
        for m in (psnr, ssim, puzzle):
            m.reset()
        puzzle.set_references([read_image(p) for p in unit.train])
        for view in unit.views:
            render, gt = read_image(view.render)[None], read_image(view.gt)[None]
            psnr.update(render, gt)
            ssim.update(render, gt)
            puzzle.update(render)
        for m in (psnr, ssim, puzzle):
            float(m.compute())
    return time.perf_counter() - t0


def evaluate(root: Path, out: Path, weights: Path) -> float:
    config = EvalConfig(
        root=root,
        out=out,
        metrics=("psnr", "ssim", "puzzlesim"),
        options={"puzzlesim": {"weights": str(weights)}},
        device="cpu",
        quiet=True,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_evaluation(config)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", type=int, default=3)
    parser.add_argument("--scenes", type=int, default=2)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--size", type=int, nargs=2, default=(96, 128))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = write_tree(work / "tree", args.methods, args.scenes, args.views, tuple(args.size))
        weights = random_checkpoint("squeezenet1_1", work / "squeezenet1_1-random.pth")
        baseline(root, weights)  # warm-up: backbone load, first-call allocations
        evaluate(root, work / "warmup", weights)
        base = [baseline(root, weights) for _ in range(args.repeats)]
        ev = [evaluate(root, work / f"out{i}", weights) for i in range(args.repeats)]
    result = {
        "benchmark": "eval_overhead",
        "units": args.methods * args.scenes,
        "views_per_unit": args.views,
        "size": list(args.size),
        "metrics": ["psnr", "ssim", "puzzlesim"],
        "repeats": args.repeats,
        "baseline_loop_s": round(statistics.median(base), 4),
        "scenemetrics_eval_s": round(statistics.median(ev), 4),
        "ratio_eval_over_baseline": round(statistics.median(ev) / statistics.median(base), 3),
        "torch_threads": torch.get_num_threads(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
