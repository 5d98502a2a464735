"""Benchmark: one ``OSIM.update`` per 640x480 view pair, split into detector passes, GBVS and the rest.

The detector is YOLOX (default yolox_x, the paper's) with random weights in the official layout (no download):
speed does not depend on the weight values. In the same run the two detector passes (reference: backbone + PAFPN +
head + NMS; render: backbone to the compared layer) and GBVS are timed alone, so the JSON shows how much of an
update is irreducible network time (``overhead_ratio`` = update time / time of the two passes). CPU always, CUDA
when present; peak memory is the process's max RSS on CPU and ``torch.cuda.max_memory_allocated`` on CUDA.

Usage:
    PYTHONPATH=src python benchmarks/osim_metric.py [--detector yolox_x] [--threads 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch


def bench(device: torch.device, variant: str, repeats: int, ckpt: Path) -> dict:
    from scenemetrics.osim.boxes import letterbox_tensor
    from scenemetrics.osim.functional import _content_rgb
    from scenemetrics.osim.metric import OSIM
    from scenemetrics.osim.random import synthetic_images
    from scenemetrics.osim.saliency import gbvs
    from scenemetrics.osim.yolox import YOLOX

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model = YOLOX.from_official(variant, weights_path=ckpt, device=device)
    ref = synthetic_images(1, (480, 640), seed=1).to(device)
    test = (ref * 0.8 + 0.1).clamp(0, 1)
    metric = OSIM(model=model).to(device)
    S = model.input_size
    lb_ref = letterbox_tensor(ref, S, True)
    lb_test = letterbox_tensor(test, S, True)
    content = _content_rgb(lb_ref)

    def extract() -> None:
        with torch.no_grad():
            model.extract(lb_test.canvas, ("dark5",))

    parts: dict[str, Callable[[], object]] = {
        "update_ms": lambda: metric.update(test, ref),
        "detect_reference_ms": lambda: model.detect_letterbox(lb_ref),
        "extract_render_ms": extract,
        "gbvs_ms": lambda: gbvs(content),
    }
    for fn in parts.values():  # warm-up
        fn()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    # the parts are interleaved within each repeat, so load drift on a shared machine hits them alike
    times: dict[str, list[float]] = {k: [] for k in parts}
    for _ in range(repeats):
        for key, fn in parts.items():
            t0 = time.perf_counter()
            fn()
            sync()
            times[key].append((time.perf_counter() - t0) * 1e3)
    out: dict = {"device": str(device), "detector": variant, "input_size": S}
    out.update({k: statistics.median(v) for k, v in times.items()})
    passes = out["detect_reference_ms"] + out["extract_render_ms"]
    out["rest_ms"] = out["update_ms"] - passes - out["gbvs_ms"]
    out["overhead_ratio"] = out["update_ms"] / passes
    out["objects_per_view"] = int(metric.last_result.r.numel())
    if device.type == "cuda":
        out["peak_memory_mib"] = torch.cuda.max_memory_allocated() / 2**20
    else:
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    from scenemetrics.osim.random import random_checkpoint

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--detector", default="yolox_x")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res: dict = {"benchmark": "osim_metric", "image": "640x480", "threads": args.threads, "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = random_checkpoint(args.detector, Path(tmp) / f"{args.detector}.pth", seed=0)
        res["cpu"] = bench(torch.device("cpu"), args.detector, args.repeats, ckpt)
        if torch.cuda.is_available():
            res["cuda"] = bench(torch.device("cuda"), args.detector, max(args.repeats, 10), ckpt)
            res["cuda"]["name"] = torch.cuda.get_device_name()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
