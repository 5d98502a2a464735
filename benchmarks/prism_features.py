"""Benchmark ``Zero123Features`` throughput (triplets/s) against the bare model passes it wraps, in one run.

By default the components are random-weight modules with the real Zero123-XL configurations (SD1.x U-Net with 8
input channels, SD VAE, CLIP ViT-L/14 image encoder, 772 -> 768 projection), so nothing is downloaded; ``--model``
loads a real diffusers folder instead.

The baseline is the same computation without the extractor's bookkeeping: VAE-encode of target and source, CLIP
image embedding + pose projection, one U-Net forward; no forward hooks, no pooling, no input checks. The ratio
``extractor_seconds / baseline_seconds`` is the extractor's overhead (expected <= 1.05).

On CUDA: batch sizes 1, 8, 32 in float32 and float16, with ``torch.cuda.max_memory_allocated``. Without a GPU only
batch size 1 in float32 runs (the full-size model costs seconds per triplet on a CPU). Prints one JSON object
(medians of ``--repeats`` timed runs after one warm-up).

Usage:
    python benchmarks/prism_features.py [--model PATH] [--repeats 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch


def _random_zero123_xl(device: torch.device):
    """Zero123-XL-sized components with random weights (:func:`scenemetrics.prism.random.random_components`)."""
    from scenemetrics.prism import Zero123Features
    from scenemetrics.prism.random import random_components
    from scenemetrics.prism.zero123 import alphas_cumprod_from_config

    parts = random_components("full", device=device)
    alphas = alphas_cumprod_from_config(dict(parts["scheduler"].config))
    return Zero123Features(parts["vae"], parts["unet"], parts["image_encoder"], parts["projection"], alphas)


def _baseline(m, src: torch.Tensor, tgt: torch.Tensor, pose4: torch.Tensor) -> None:
    """The bare passes: no checks, hooks or pooling (hooks are removed around the call by the caller)."""
    dtype = m.dtype
    x_src, x_tgt = (src * 2 - 1).to(dtype), (tgt * 2 - 1).to(dtype)
    z0 = m.vae.encode(x_tgt).latent_dist.mode() * m.vae.config.scaling_factor
    c = m.vae.encode(x_src).latent_dist.mode()
    xc = torch.nn.functional.interpolate(x_src, size=(224, 224), mode="bicubic", align_corners=True)
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073], device=xc.device, dtype=dtype).view(1, 3, 1, 1)
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711], device=xc.device, dtype=dtype).view(1, 3, 1, 1)
    emb = m.image_encoder(pixel_values=((xc + 1) / 2 - mean) / std).image_embeds[:, None, :]
    ehs = m.camera_projection(torch.cat([emb, pose4[:, None, :].to(dtype)], dim=-1))
    t = torch.zeros(src.shape[0], dtype=torch.long, device=src.device)
    m.unet(torch.cat([z0, c], dim=1), t, encoder_hidden_states=ehs)


def _time(fn, repeats: int, device: torch.device) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="a Zero123 diffusers folder (default: random Zero123-XL)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    args = parser.parse_args()

    from scenemetrics.prism import Zero123Features, encode_pose

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    base = Zero123Features.from_pretrained(args.model, device=device) if args.model else _random_zero123_xl(device)
    configs = [(1, torch.float32)]
    if device.type == "cuda":
        configs = [(b, dt) for dt in (torch.float32, torch.float16) for b in (1, 8, 32)]
    results = []
    for batch, dtype in configs:
        m = base.to(dtype=dtype)
        g = torch.Generator().manual_seed(0)
        src = torch.rand(batch, 3, 256, 256, generator=g).to(device)
        tgt = torch.rand(batch, 3, 256, 256, generator=g).to(device)
        pose = torch.tensor([0.0, 90.0, 0.0], device=device).expand(batch, 3)
        pose4 = encode_pose(pose)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            ours = _time(lambda m=m, s=src, t=tgt, p=pose: m(s, t, p), args.repeats, device)
            peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
            hooks = {n: dict(b._forward_hooks) for n, b in _blocks(m)}
            for _, b in _blocks(m):
                b._forward_hooks.clear()
            try:
                bare = _time(lambda m=m, s=src, t=tgt, p=pose4: _baseline(m, s, t, p), args.repeats, device)
            finally:
                for n, b in _blocks(m):
                    b._forward_hooks.update(hooks[n])
        row = {
            "batch": batch,
            "dtype": str(dtype).removeprefix("torch."),
            "triplets_per_s": batch / ours,
            "baseline_triplets_per_s": batch / bare,
            "seconds": ours,
            "baseline_seconds": bare,
            "ratio_vs_baseline": ours / bare,
        }
        if peak is not None:
            row["max_memory_allocated_mib"] = peak
        results.append(row)
        print(json.dumps(row), file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "prism_features",
                "device": device.type if device.type == "cpu" else torch.cuda.get_device_name(device),
                "model": args.model or "random-weight Zero123-XL configs",
                "torch_threads": torch.get_num_threads(),
                "repeats": args.repeats,
                "results": results,
            }
        )
    )


def _blocks(m):
    names = ("down0", "down1", "down2", "down3", "mid", "up0", "up1", "up2", "up3")
    return list(zip(names, [*m.unet.down_blocks, m.unet.mid_block, *m.unet.up_blocks], strict=True))


if __name__ == "__main__":
    main()
