"""PuzzleSim-guided artifact inpainting on a procedural scene: training views, a novel view with planted artifacts.

Runs :func:`scenemetrics.inpainting.puzzle_inpaint` on each novel view of :func:`scenemetrics.synthetic.make_scene`
and writes, per view, ``before | PuzzleSim map | after | mask`` panels and a JSON summary.

    python examples/inpainting_synthetic.py --out inpainting_demo                   # ImageNet SqueezeNet (downloaded)
    python examples/inpainting_synthetic.py --out inpainting_demo --random-weights  # offline, uncalibrated maps
    python examples/inpainting_synthetic.py --out inpainting_demo --inpainter lama  # the paper's backend (big-LaMa)

With ``--random-weights`` the backbone is a random-weight SqueezeNet: its maps say nothing about perceptual quality,
but at the shallow layers 0-1 (strides 2 and 4) planted noise still stands out, so the example uses those layers.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from scenemetrics.inpainting import LaMaInpainter, OpenCVInpainter, puzzle_inpaint
from scenemetrics.inpainting.picture import inpainting_picture
from scenemetrics.puzzlesim import PuzzleSimMemory, random_checkpoint
from scenemetrics.synthetic import make_scene


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="inpainting_demo", help="output folder")
    parser.add_argument("--random-weights", action="store_true", help="random SqueezeNet weights (no download)")
    parser.add_argument("--inpainter", choices=("opencv", "lama"), default="opencv")
    parser.add_argument("--size", type=int, nargs=2, default=(64, 96), metavar=("H", "W"))
    parser.add_argument("--views", type=int, default=2, help="novel views to repair")
    args = parser.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scene = make_scene(num_train=4, num_novel=args.views, size=tuple(args.size), seed=0, artifacts_per_view=1)
    if args.random_weights:
        print("RANDOM WEIGHTS: the PuzzleSim maps are uncalibrated; using the shallow layers 0-1")
        weights = random_checkpoint("squeezenet1_1", Path(tempfile.mkdtemp()) / "squeezenet_random.pth")
        # layer 0 has stride 2: many vectors, so fewer candidates keep the example quick on a CPU
        options = {"weights_path": weights, "layers": (0, 1), "layer_weights": (0.5, 0.5), "n_candidates": 20}
    else:
        options = {}
    memory_options = {k: v for k, v in options.items() if k in ("weights_path", "layers")}
    memory = PuzzleSimMemory(scene.train_views, **memory_options)  # references embedded once, reused per view
    inpainter = LaMaInpainter() if args.inpainter == "lama" else OpenCVInpainter()

    summary = {}
    for name, view, artifact in zip(scene.names, scene.novel_views, scene.artifact_masks, strict=True):
        result = puzzle_inpaint(view, memory, inpainter, mask_dilation=1, **options)
        found = float((result.mask & artifact).sum()) / max(1, int(artifact.sum()))
        inpainting_picture(view, result, name=name).save(out / f"{name}_panel.png")
        summary[name] = {
            "quality_before": result.quality_before,
            "quality_after": result.quality_after,
            "rounds": len(result.history),
            "mask_fraction": result.mask_fraction,
            "artifact_pixels_inpainted": found,
            "artifact_kind": scene.artifacts[scene.names.index(name)][0]["kind"],
        }
        print(
            f"{name}: quality {result.quality_before:.4f} -> {result.quality_after:.4f}, "
            f"{100 * result.mask_fraction:.1f}% inpainted, {100 * found:.0f}% of the planted artifact covered"
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"panels and summary.json in {out}")


if __name__ == "__main__":
    main()
