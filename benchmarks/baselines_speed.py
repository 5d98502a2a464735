"""Benchmark the baselines (``scenemetrics.baselines``): the Fréchet distance's ``compute()`` and the embedding
throughput of the full-size networks, each against a baseline measured in the same run.

* ``frechet``: the Fréchet distance from the accumulated moments at D = 2048 (FID) and 4096 (JFID): scenemetrics'
  ``frechet_distance_from_moments`` (symmetric ``eigh``) against torchmetrics' ``FrechetInceptionDistance.compute()``
  (general ``eigvals`` of ``S_f S_r``) on the same features; both values are reported, with their relative difference.
* ``embed``: images per second through ``InceptionFeatures`` (FID's InceptionV3, random weights in torch-fidelity's
  layout), ``CLIPFeatures`` (CLIP ViT-L/14-336's configuration) and ``DINOv2Features`` (DINOv2 ViT-L/14's), random
  weights (nothing is downloaded), float32, against the bare network on already preprocessed inputs (the ratio is
  the cost of scenemetrics' preprocessing and wrapping).

Medians of ``--repeats`` runs after one warm-up. Prints one JSON object.

Usage:
    python benchmarks/baselines_speed.py [--device cuda] [--batch 32] [--size 256] [--repeats 5] [--dims 2048 4096]
        [--skip-embed]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))


def _timed(fn, device: str, repeats: int) -> tuple[float, object]:
    import torch

    out = fn()  # warm-up
    times = []
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _frechet(d: int, n: int, device: str, repeats: int) -> dict:
    import torch
    from torch import nn
    from torchmetrics.image.fid import FrechetInceptionDistance

    from scenemetrics.baselines import frechet_distance_from_moments

    class Identity(nn.Module):
        num_features = d

        def forward(self, x):
            return x

    g = torch.Generator().manual_seed(0)
    fake = (torch.randn(n, d, generator=g, dtype=torch.float64) * 0.5 + 0.1).to(device)
    real = torch.randn(n, d, generator=g, dtype=torch.float64).to(device)
    tm = FrechetInceptionDistance(feature=Identity(), normalize=False).to(device)
    tm.update(real, real=True)
    tm.update(fake, real=False)

    # the states both metrics accumulate (sums of the features and of their outer products): not timed
    sums = [(x.sum(0), x.T @ x) for x in (fake, real)]

    def ours():
        moments = []
        for total, outer in sums:  # as FrechetDistance.compute() turns its states into moments
            mean = total / n
            moments += [mean, (outer - n * torch.outer(mean, mean)) / (n - 1)]
        return float(frechet_distance_from_moments(*moments))

    def theirs():
        tm._computed = None  # torchmetrics caches compute(); time the computation itself
        return float(tm.compute())

    t_ours, v_ours = _timed(ours, device, repeats)
    t_theirs, v_theirs = _timed(theirs, device, repeats)
    return {
        "d": d,
        "n_per_set": n,
        "scenemetrics_s": t_ours,
        "torchmetrics_s": t_theirs,
        "speedup": t_theirs / t_ours,
        "value": v_ours,
        "torchmetrics_value": v_theirs,
        "rel_diff": abs(v_ours - v_theirs) / abs(v_theirs),
    }


def _networks(device: str):
    import torch
    import transformers

    from scenemetrics.baselines import (
        CLIPFeatures,
        DINOv2Features,
        load_inception,
        random_inception_checkpoint,
    )

    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp())
    inception = load_inception(random_inception_checkpoint(folder / "inception.pth"), device=device)
    clip_config = transformers.CLIPVisionConfig(
        hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, image_size=336,
        patch_size=14, projection_dim=768,
    )  # fmt: skip
    vision = transformers.CLIPVisionModelWithProjection(clip_config).eval()
    clip = CLIPFeatures(vision.vision_model, vision.visual_projection, 336).to(device).eval()
    dino_config = transformers.Dinov2Config(
        hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, patch_size=14,
        image_size=518,
    )  # fmt: skip
    dino = DINOv2Features(transformers.Dinov2Model(dino_config).eval()).to(device).eval()
    return {"inception": inception, "clip": clip, "dinov2": dino}


def _embed(device: str, batch: int, size: int, repeats: int) -> list[dict]:
    import torch

    images = torch.rand(batch, 3, size, size, generator=torch.Generator().manual_seed(1)).to(device)
    rows = []
    for name, net in _networks(device).items():
        with torch.no_grad():
            if name == "inception":
                quantised = (images * 255).round().to(torch.uint8)
                bare = lambda q=quantised, n=net: n.network(q)  # noqa: E731
            else:
                pixels = net.pixel_values(images)
                bare = lambda p=pixels, n=net: n.embed(p)  # noqa: E731
            t_ours, _ = _timed(lambda n=net: n(images), device, repeats)
            t_bare, _ = _timed(bare, device, repeats)
        rows.append(
            {
                "network": name,
                "batch": batch,
                "image_size": size,
                "images_per_s": batch / t_ours,
                "bare_images_per_s": batch / t_bare,
                "overhead_ratio": t_ours / t_bare,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=256, help="side of the square input images")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dims", type=int, nargs="+", default=[2048, 4096], help="feature sizes of the Fréchet part")
    parser.add_argument("--skip-embed", action="store_true", help="only the Fréchet distance")
    args = parser.parse_args()

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    frechet = []
    for d in args.dims:
        frechet.append(_frechet(d, 1000, device, args.repeats))
        print(json.dumps(frechet[-1]), file=sys.stderr)
    result = {
        "benchmark": "baselines_speed",
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "frechet": frechet,
        "embed": [] if args.skip_embed else _embed(device, args.batch, args.size, args.repeats),
        "note": "medians; speedup = torchmetrics seconds / scenemetrics seconds; overhead_ratio = ours / bare network",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
