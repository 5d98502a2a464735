"""Run `scenemetrics eval` on a generated results tree (3 methods x 2 scenes) and print where the report is.

The tree comes from the package's procedural scene: method ``clean`` renders exactly the ground truth, ``artifacts``
renders it with planted artifacts, ``noisy`` adds Gaussian noise. ``--random-weights`` keeps everything offline
(the scores of the learned metrics are then uncalibrated); drop it to use the pretrained weights.

    python examples/eval_synthetic.py [OUT_DIR] [--random-weights]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.synthetic import make_scene


def write_tree(root: Path) -> Path:
    for s, scene in enumerate(("garden", "street")):
        sc = make_scene(num_train=4, num_novel=3, size=(96, 128), seed=s)
        for method in ("artifacts", "clean", "noisy"):
            folder = root / method / scene
            for i, view in enumerate(sc.train_views):
                viz.save_png(view, folder / "train" / f"train_{i:03d}.png")
            for i, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
                noise = 0.04 * torch.randn(gt.shape, generator=torch.Generator().manual_seed(i))
                render = {"artifacts": art, "clean": gt, "noisy": (gt + noise).clamp(0, 1)}[method]
                viz.save_png(render, folder / "renders" / f"test_{i:03d}.png")
                viz.save_png(gt, folder / "gt" / f"test_{i:03d}.png")
    return root


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="scenemetrics-eval-"))
    root = write_tree(out / "tree")
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    code = main(["eval", "--root", str(root), "--out", str(out / "results"), *flags])
    print(f"report: {out / 'results' / 'report' / 'index.html'}")
    raise SystemExit(code)
