"""Benchmark ``scenemetrics.stats.mmd_rbf`` (PRISM's MMD): time and peak memory against two baselines in one run.

Baselines:

* ``chunked_f32``: a straightforward chunked float32 implementation: one blocked pass building a histogram of all
  pair distances, one pass collecting the median's bin (exact lower median), one kernel pass accumulating in
  float32.
* ``dense``: the full ``N x N`` distance matrix in float32 (only where ``N = m + n <= 8000``).

Each configuration runs in a fresh subprocess so the peak RSS (``resource.getrusage``) or
``torch.cuda.max_memory_allocated`` belongs to that one computation. Prints one JSON object (medians of
``--repeats`` runs, ratios = baseline time / scenemetrics time).

Usage:
    python benchmarks/prism_mmd.py [--sizes 1000 5000 10000] [--dims 256 2048] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _chunked_f32(x, y, chunk: int = 2048):
    import torch

    z = torch.cat([x, y]).float()
    z = z - z.mean(0)
    sq = (z * z).sum(1)
    n_all, m, n = z.shape[0], x.shape[0], y.shape[0]

    def tiles():
        for a in range(0, n_all, chunk):
            for b in range(a, n_all, chunk):
                d2 = sq[a : a + chunk, None] + sq[None, b : b + chunk] - 2 * z[a : a + chunk] @ z[b : b + chunk].T
                d2 = d2.clamp_min(0)
                rows = torch.arange(a, min(a + chunk, n_all), device=z.device)[:, None]
                cols = torch.arange(b, min(b + chunk, n_all), device=z.device)[None, :]
                yield d2, rows, cols

    hi = float(4 * sq.max())
    bins = 1 << 16
    hist = torch.zeros(bins, dtype=torch.long, device=z.device)
    for d2, rows, cols in tiles():
        v = d2[cols > rows]
        hist += torch.bincount((v / hi * (bins - 1)).long().clamp_max(bins - 1), minlength=bins)
    k = (n_all * (n_all - 1) // 2 - 1) // 2
    cum = torch.cumsum(hist, 0)
    b = int(torch.searchsorted(cum, torch.tensor([k], device=z.device), right=True)[0])
    below = int(cum[b - 1]) if b > 0 else 0
    vals = []
    for d2, rows, cols in tiles():
        v = d2[cols > rows]
        vals.append(v[(v / hi * (bins - 1)).long().clamp_max(bins - 1) == b])
    sigma2 = float(torch.kthvalue(torch.cat(vals), k - below + 1).values)
    sxx = syy = sxy = torch.zeros((), device=z.device)
    for d2, rows, cols in tiles():
        kern = torch.exp(-d2 / (2 * sigma2))
        upper = kern * (cols > rows)
        in_x_r, in_x_c = rows < m, cols < m
        sxx = sxx + (upper * (in_x_r & in_x_c)).sum()
        syy = syy + (upper * (~in_x_r & ~in_x_c)).sum()
        sxy = sxy + (kern * (in_x_r & ~in_x_c)).sum()
    return 2 * sxx / (m * (m - 1)) + 2 * syy / (n * (n - 1)) - 2 * sxy / (m * n)


def _dense(x, y):
    import torch

    z = torch.cat([x, y]).float()
    m, n = x.shape[0], y.shape[0]
    d2 = torch.cdist(z, z).pow_(2)
    sigma2 = float(torch.median(d2[torch.triu(torch.ones_like(d2, dtype=torch.bool), 1)]))
    k = torch.exp(-d2 / (2 * sigma2))
    kxx = (k[:m, :m].sum() - k[:m, :m].trace()) / (m * (m - 1))
    kyy = (k[m:, m:].sum() - k[m:, m:].trace()) / (n * (n - 1))
    return kxx + kyy - 2 * k[:m, m:].mean()


def _one(method: str, size: int, dim: int, device: str) -> dict:
    """Runs in a child process: one timing and the peak memory of that computation."""
    import torch

    from scenemetrics.stats import mmd_rbf

    g = torch.Generator().manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(size, dim, generator=g), dim=1).to(device)
    y = torch.nn.functional.normalize(torch.randn(size, dim, generator=g) + 0.05, dim=1).to(device)
    fn = {"scenemetrics": mmd_rbf, "chunked_f32": _chunked_f32, "dense": _dense}[method]
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    value = float(fn(x, y))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    out = {"seconds": seconds, "value": value}
    if device.startswith("cuda"):
        out["peak_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    else:
        out["peak_mib"] = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000], help="m = n")
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 2048])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--child", nargs=4, metavar=("METHOD", "SIZE", "DIM", "DEVICE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, size, dim, device = args.child
        print(json.dumps(_one(method, int(size), int(dim), device)))
        return

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    results = []
    for size in args.sizes:
        for dim in args.dims:
            row: dict = {"m": size, "n": size, "d": dim}
            methods = ["scenemetrics", "chunked_f32"] + (["dense"] if 2 * size <= 8000 else [])
            for method in methods:
                runs = []
                for _ in range(args.repeats):
                    proc = subprocess.run(
                        [sys.executable, __file__, "--child", method, str(size), str(dim), device],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=True,
                    )
                    runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
                row[method] = {
                    "seconds": statistics.median(r["seconds"] for r in runs),
                    "peak_mib": statistics.median(r["peak_mib"] for r in runs),
                    "value": runs[0]["value"],
                }
            ours = row["scenemetrics"]["seconds"]
            for method in methods[1:]:
                row[f"speedup_vs_{method}"] = row[method]["seconds"] / ours
                ref = row[method]["value"]
                row[f"rel_diff_vs_{method}"] = abs(row["scenemetrics"]["value"] - ref) / max(abs(ref), 1e-12)
            results.append(row)
            print(json.dumps(row), file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "prism_mmd",
                "device": device,
                "torch_threads": torch.get_num_threads(),
                "repeats": args.repeats,
                "results": results,
                "note": "times are medians; speedup = baseline seconds / scenemetrics seconds",
            }
        )
    )


if __name__ == "__main__":
    main()
