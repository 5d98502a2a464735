"""Benchmark: every wireframe registry metric on synthetic house pairs; WED against a naive pure-Python reference.

GT = ``synthetic_houses(N, seed=0)`` (metres); prediction = GT with N(0, 0.2 m) vertex noise, 10 % of the edges dropped
and 2 random extra vertices with one edge each. For each metric: the median over ``--runs`` runs of the mean time per
pair (``iou``/``jaccard_distance`` at radius 0.5, resolution 4; corner/edge threshold 0.5; ``hss`` with the HSS-2025 IoU
on the first ``--hss-pairs`` pairs, if trimesh + manifold3d are installed; the one-to-one ``edge_matching`` on the
first ``--matching-pairs`` pairs: one assignment on about 1,000 x 1,000 edge samples per pair), as wall-clock and CPU
(process) time, next to reference points measured once with a straightforward prototype on one CPU core (a regression
of more than 2x deserves a look; the one-to-one forms have none); CPU time is the steadier number on a shared machine.
Then WED ``corrected`` against a dict-and-loop implementation written here, on the same pairs, in the same run: speed
ratio and maximum absolute difference (must be < 1e-12).

Prints one JSON object. Usage::

    PYTHONPATH=src python benchmarks/wireframe.py [--pairs 1000] [--runs 3] [--hss-pairs 100] [--matching-pairs 100]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

from scenemetrics.wireframe import METRIC_NAMES, make_metric, synthetic_houses, wed

# reference points: per-pair times of a straightforward prototype on one CPU core (ms), measured once
SPEC_REFERENCE_MS = {
    "corner_precision": 0.02,
    "corner_recall": 0.02,
    "corner_f1": 0.02,
    "corner_offset": 0.02,
    "edge_precision": 0.5,
    "edge_recall": 0.5,
    "edge_f1": 0.5,
    "wed": 0.3,
    "wed_prereg": 0.3,
    "wed_mnn": 0.3,
    "wed_nearest": 0.3,
    "wed_ap": 0.3,
    "spectral_l1": 0.5,
    "spectral_l2": 0.5,
    "iou": 160.0,
    "jaccard_distance": 160.0,
    "hausdorff": 3.0,
    "chamfer": 3.0,
    "hss": 115.0,
}

NO_THRESHOLD = ("corner_chamfer", "corner_matching", "edge_matching")


def make_pairs(n: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    pairs = []
    for k, (gv, ge) in enumerate(synthetic_houses(n, seed=0)):
        rng = np.random.default_rng([1, k])
        pv = gv + rng.normal(0.0, 0.2, gv.shape)
        keep = np.sort(rng.choice(len(ge), len(ge) - round(0.1 * len(ge)), replace=False))
        pe = ge[keep]
        extra = gv[rng.choice(len(gv), 2, replace=False)] + rng.normal(0.0, 1.0, (2, 3))
        attach = rng.choice(len(gv), 2, replace=False)
        pe = np.vstack([pe, [[len(gv), attach[0]], [len(gv) + 1, attach[1]]]])
        pairs.append((np.vstack([pv, extra]), pe, gv, ge))
    return pairs


def naive_wed(pv, pe, gv, ge, cv_ins=-0.5, cv_del=-0.25, ce=1.0) -> float:
    """WED ``corrected`` with Python loops and dicts (the assignment itself is scipy's Hungarian solver)."""
    gpts = [tuple(map(float, p)) for p in gv]
    ppts = [tuple(map(float, p)) for p in pv]
    diam = max((math.dist(a, b) for a in gpts for b in gpts), default=0.0)
    c_ins = -cv_ins * diam if cv_ins < 0 else cv_ins
    c_del = -cv_del * diam if cv_del < 0 else cv_del
    dist = [[math.dist(p, g) for g in gpts] for p in ppts]
    rows, cols = linear_sum_assignment(np.array(dist).reshape(len(ppts), len(gpts)))
    to_gt = {int(r): int(c) for r, c in zip(rows, cols, strict=True)}
    cost = sum(dist[r][c] for r, c in to_gt.items())
    cost += c_del * (len(ppts) - len(to_gt)) + c_ins * (len(gpts) - len(to_gt))
    gt_edges = {frozenset((int(a), int(b))): math.dist(gpts[a], gpts[b]) for a, b in ge}
    hit = set()
    for a, b in pe:
        a, b = int(a), int(b)
        key = frozenset((to_gt[a], to_gt[b])) if a in to_gt and b in to_gt else None
        if key is not None and key in gt_edges:
            hit.add(key)
        else:
            cost += ce * math.dist(ppts[a], ppts[b])
    cost += ce * sum(length for key, length in gt_edges.items() if key not in hit)
    return cost / sum(gt_edges.values())


def time_metric(fn, pairs, runs: int) -> tuple[float, float, list[float]]:
    """Median over runs of the wall-clock and the CPU (process) time per pair, in ms; and the last run's values."""
    wall, cpu = [], []
    values: list[float] = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        values = [fn(*p) for p in pairs]
        cpu.append((time.process_time() - c0) / len(pairs) * 1000.0)
        wall.append((time.perf_counter() - t0) / len(pairs) * 1000.0)
    return statistics.median(wall), statistics.median(cpu), values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hss-pairs", type=int, default=100)
    parser.add_argument("--matching-pairs", type=int, default=100)
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    pairs = make_pairs(args.pairs)
    has_hss = all(importlib.util.find_spec(m) is not None for m in ("trimesh", "manifold3d"))
    results = {}
    for name in METRIC_NAMES:
        opts: dict = {}
        subset = pairs
        if name.startswith(("corner", "edge")) and name not in NO_THRESHOLD:
            opts["threshold"] = 0.5
        if name in ("iou", "jaccard_distance"):
            opts.update(radius=0.5, resolution=4)
        if name == "hss":
            if not has_hss:
                results[name] = {"skipped": "trimesh/manifold3d not installed"}
                continue
            subset = pairs[: args.hss_pairs]
        if name == "edge_matching":
            subset = pairs[: args.matching_pairs]
        wall, cpu, values = time_metric(make_metric(name, **opts), subset, args.runs)
        ref = SPEC_REFERENCE_MS.get(name)  # the one-to-one forms have no spec reference point
        results[name] = {
            "ms_per_pair": round(wall, 4),
            "cpu_ms_per_pair": round(cpu, 4),
            "pairs": len(subset),
            "spec_reference_ms": ref,
            "cpu_ratio_vs_spec_reference": None if ref is None else round(cpu / ref, 3),
            "mean_value": float(np.nanmean(values)),
        }
    ours_ms, ours_cpu, ours = time_metric(lambda *p: wed(*p), pairs, args.runs)
    naive_ms, naive_cpu, naive = time_metric(naive_wed, pairs, args.runs)
    out = {
        "benchmark": "wireframe",
        "pairs": args.pairs,
        "runs": args.runs,
        "threads": os.environ.get("OMP_NUM_THREADS", "unset"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "metrics": results,
        "wed_vs_naive": {
            "ours_ms_per_pair": round(ours_ms, 4),
            "naive_ms_per_pair": round(naive_ms, 4),
            "ours_cpu_ms_per_pair": round(ours_cpu, 4),
            "naive_cpu_ms_per_pair": round(naive_cpu, 4),
            "speedup_cpu": round(naive_cpu / ours_cpu, 2),
            "max_abs_diff": float(np.max(np.abs(np.array(ours) - np.array(naive)))),
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
