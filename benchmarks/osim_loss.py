"""Benchmark: ``OSIMLoss`` forward + backward at 640 for ``layer="dark5"`` (CSPDarknet only) against ``"p5"``.

``p5`` runs the PAFPN as well: it is the baseline in the same run, and ``speedup_dark5_vs_p5`` and the memory
ratios show what computing the paper's layer only saves. The detector (default yolox_x) has random weights in the
official layout. CUDA when present (peak ``max_memory_allocated`` above the resident model and references),
otherwise CPU. On both, ``saved_for_backward_mib`` sums the storages autograd keeps for the backward pass (the
activation memory a training step pays for the loss; the process RSS on CPU is too coarse to split by layer).

Usage:
    PYTHONPATH=src python benchmarks/osim_loss.py [--detector yolox_x] [--threads 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch


def bench(device: torch.device, variant: str, layer: str, repeats: int, ckpt: Path) -> dict:
    from scenemetrics.osim.loss import OSIMLoss
    from scenemetrics.osim.random import synthetic_images
    from scenemetrics.osim.yolox import YOLOX

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model = YOLOX.from_official(variant, weights_path=ckpt, device=device)
    refs = synthetic_images(1, (640, 640), seed=2).to(device)
    loss_fn = OSIMLoss(refs, model=model, layer=layer, saliency="uniform")
    render = (refs * 0.9).requires_grad_(True)

    def step() -> None:
        render.grad = None
        loss_fn(render).backward()
        sync()

    step()
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn(render)
    del loss
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    out = {
        "layer": layer,
        "forward_backward_ms": statistics.median(times),
        "saved_for_backward_mib": sum(saved.values()) / 2**20,
        "objects": int(loss_fn.masks.shape[0]),
    }
    if device.type == "cuda":
        out["peak_memory_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    return out


def main() -> None:
    from scenemetrics.osim.random import random_checkpoint

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--detector", default="yolox_x")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    res: dict = {"benchmark": "osim_loss", "image": "640x640", "detector": args.detector, "device": str(device)}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = random_checkpoint(args.detector, Path(tmp) / f"{args.detector}.pth", seed=0)
        p5 = bench(device, args.detector, "p5", args.repeats, ckpt)
        dark5 = bench(device, args.detector, "dark5", args.repeats, ckpt)
    res["dark5"], res["p5"] = dark5, p5
    res["speedup_dark5_vs_p5"] = p5["forward_backward_ms"] / dark5["forward_backward_ms"]
    res["saved_memory_ratio_dark5_vs_p5"] = dark5["saved_for_backward_mib"] / p5["saved_for_backward_mib"]
    if device.type == "cuda":
        res["peak_memory_ratio_dark5_vs_p5"] = dark5["peak_memory_mib"] / p5["peak_memory_mib"]
    if device.type == "cuda":
        res["cuda_name"] = torch.cuda.get_device_name()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
