"""Score a scene with OSIM, optimise a render with OSIMLoss, and save the red-mask overlays.

Runs offline: without ``--weights`` it writes a random-weight YOLOX-nano checkpoint in the official layout (the
scores are then uncalibrated, but every code path of a real checkpoint runs). With the real Megvii checkpoint:

    python examples/osim_scene.py --detector yolox_x --weights ~/.cache/torch/hub/scenemetrics/osim/yolox_x.pth
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

import scenemetrics as sm
from scenemetrics.osim.random import random_checkpoint, synthetic_images


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--detector", default="yolox_nano")
    ap.add_argument("--weights", default=None, help="YOLOX checkpoint (default: random weights)")
    ap.add_argument("--out", default="osim_example")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()

    weights = args.weights or random_checkpoint(args.detector, Path(tempfile.mkdtemp()) / f"{args.detector}.pth")
    references = synthetic_images(4, (240, 320), seed=0)  # the scene's ground-truth views
    renders = F.avg_pool2d(references, 7, stride=1, padding=3, count_include_pad=False)  # blurry "renders"

    metric = sm.OSIM(detector=args.detector, weights_path=weights)
    for i in range(len(references)):  # one view per update, as a training loop would
        metric.update(renders[i : i + 1], references[i : i + 1])
    score = float(metric.compute())
    print(f"scene OSIM of the blurred renders: {score:.4f}")
    print("worst classes:", sorted(metric.class_scores().items(), key=lambda kv: kv[1])[:3])
    overlay = sm.osim.draw_low_objects(renders[-1], metric.last_result, threshold=score)
    print("overlay of the last view:", sm.viz.save_png(overlay, Path(args.out) / "overlay_view3.png"))

    loss_fn = sm.losses.OSIMLoss(references, detector=args.detector, weights_path=weights)
    render = renders.clone().requires_grad_(True)
    opt = torch.optim.Adam([render], lr=0.01)
    for step in range(args.steps):
        opt.zero_grad()
        loss = loss_fn(render)
        loss.backward()
        opt.step()
        if step % 5 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  1 - OSIM = {loss.item():.4f}")


if __name__ == "__main__":
    main()
