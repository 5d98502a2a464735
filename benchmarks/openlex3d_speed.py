"""Speed of the OpenLex3D metrics on a seeded reference scene, against the authors' toolkit on the same scene.

The scene is built from a seed: 148 boxes (edges U(0.1, 0.6) m) in an 8 x 6 m room plus a floor and a wall,
200,000 GT points uniform on the faces (2 % relabelled -100), 300,000 predicted points sampled independently on
the same surfaces with 5 mm noise, dense D = 64 features (a mix of the object's label embeddings plus noise),
1,500 prompts and about 8 labels per object. Retrieval uses the same clouds with the prediction split into 300
instances and 1,500 queries.

Prints one JSON object: median wall and CPU (process) times of ``evaluate_segmentation(top_n=(5,),
set_ranking=True)``, of ``topn_frequency`` + ``set_ranking`` as two calls and of ``retrieval_ap``, their peak
extra resident memory, the ratio against the authors' toolkit, and a fixed calibration workload (a numpy row sort)
that shows how loaded the machine was. The authors' toolkit is not on the package registry (it is installed from
its repository and needs Open3D, FAISS and Hydra), so it is not timed here: the ratio uses a one-off measurement of
the toolkit on this scene (131 s of CPU time on 2 cores for Top-5 plus set ranking, commit 3dbad2b, Open3D 0.20,
torch 2.13 CPU). CPU times include every thread; timings on a shared machine are noisy, compare them with the
calibration workload.

Usage:
    PYTHONPATH=src python benchmarks/openlex3d_speed.py [--scale 1.0] [--repeats 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

TOOLKIT_REFERENCE_CPU_S = 131.0  # measured once: Top-5 + set ranking, toolkit commit 3dbad2b, 2 cores


def _sample_box_faces(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    size = hi - lo
    areas = np.array([size[1] * size[2], size[1] * size[2], size[0] * size[2], size[0] * size[2],
                      size[0] * size[1], size[0] * size[1]])  # fmt: skip
    face = rng.choice(6, size=n, p=areas / areas.sum())
    pts = lo + rng.random((n, 3)) * size
    axis = face // 2
    side = face % 2
    pts[np.arange(n), axis] = np.where(side == 1, hi[axis], lo[axis])
    return pts


def build_scene(seed: int = 0, scale: float = 1.0, dim: int = 64, n_prompts: int = 1500) -> dict[str, Any]:
    """The reference scene (``scale`` < 1 shrinks the point counts, not the room or the prompts)."""
    rng = np.random.default_rng(seed)
    n_boxes = 148
    sizes = rng.uniform(0.1, 0.6, size=(n_boxes, 3))
    centers = np.column_stack([rng.uniform(0.4, 7.6, n_boxes), rng.uniform(0.4, 5.6, n_boxes), sizes[:, 2] / 2])
    lows, highs = centers - sizes / 2, centers + sizes / 2
    box_area = 2 * (sizes[:, 0] * sizes[:, 1] + sizes[:, 1] * sizes[:, 2] + sizes[:, 0] * sizes[:, 2])
    floor_area, wall_area = 8.0 * 6.0, 8.0 * 2.5
    areas = np.concatenate([box_area, [floor_area, wall_area]])

    def sample(n_total: int) -> tuple[np.ndarray, np.ndarray]:
        counts = rng.multinomial(n_total, areas / areas.sum())
        pts, ids = [], []
        for b in range(n_boxes):
            pts.append(_sample_box_faces(rng, lows[b], highs[b], counts[b]))
            ids.append(np.full(counts[b], b + 1))
        floor = np.column_stack([rng.uniform(0, 8, counts[-2]), rng.uniform(0, 6, counts[-2]), np.zeros(counts[-2])])
        wall = np.column_stack(
            [rng.uniform(0, 8, counts[-1]), np.full(counts[-1], 6.0), rng.uniform(0, 2.5, counts[-1])]
        )
        pts += [floor, wall]
        ids += [np.full(counts[-2], n_boxes + 1), np.full(counts[-1], n_boxes + 2)]
        return np.concatenate(pts), np.concatenate(ids)

    n_gt, n_pred = int(200_000 * scale), int(300_000 * scale)
    gt_points, gt_ids = sample(n_gt)
    gt_ids = gt_ids.copy()
    gt_ids[rng.random(len(gt_ids)) < 0.02] = -100
    pred_points, pred_obj = sample(n_pred)
    pred_points = pred_points + rng.normal(0, 0.005, pred_points.shape)

    prompts = ["floor", "wall"] + [f"label {i:04d}" for i in range(n_prompts - 2)]
    text = rng.normal(size=(n_prompts, dim))
    text /= np.linalg.norm(text, axis=1, keepdims=True)
    samples, labels_of = [], {}
    for oid in range(1, n_boxes + 3):
        if oid == n_boxes + 1:
            syn, dep, vis = ["floor"], [], []
        elif oid == n_boxes + 2:
            syn, dep, vis = ["wall"], [], []
        else:
            pick = rng.choice(np.arange(2, n_prompts), size=8, replace=False)
            names = [prompts[i] for i in pick]
            syn, dep, vis = names[:3], names[3:5], names[5:8]
        neighbours = rng.choice(np.arange(1, n_boxes + 1), size=2, replace=False)
        labels_of[oid] = [prompts.index(s) for s in syn + dep + vis]
        samples.append({"object_id": oid, "name": syn[0], "labels": {"image_attributes": {
            "synonyms": syn, "depictions": dep, "vis_sim": vis, "clutter": [str(c) for c in neighbours]}}})  # fmt: skip
    categories = {"dataset": {"samples": samples}}

    first_label = np.array([labels_of[o][0] for o in range(1, n_boxes + 3)])
    other_label = np.array([labels_of[o][rng.integers(len(labels_of[o]))] for o in range(1, n_boxes + 3)])
    features = (
        0.6 * text[first_label[pred_obj - 1]]
        + 0.3 * text[other_label[pred_obj - 1]]
        + 0.4 * rng.normal(size=(n_pred, dim)) / np.sqrt(dim)
    )

    # retrieval: the prediction split into 300 instances (boxes in two halves along x, floor and wall whole)
    half = (pred_points[:, 0] > centers[np.minimum(pred_obj, n_boxes) - 1, 0]).astype(np.int64)
    instance = np.where(pred_obj <= n_boxes, (pred_obj - 1) * 2 + half, 2 * n_boxes + (pred_obj - n_boxes - 1))
    inst_obj = np.concatenate([np.repeat(np.arange(1, n_boxes + 1), 2), [n_boxes + 1, n_boxes + 2]])
    inst_features = text[first_label[inst_obj - 1]] + 0.5 * rng.normal(size=(len(inst_obj), dim)) / np.sqrt(dim)

    from scenemetrics.openlex3d import RetrievalQuery, generate_queries

    queries = generate_queries(categories)
    index_of = {p: i for i, p in enumerate(prompts)}
    embedding = {}
    for sample in samples:
        attrs = sample["labels"]["image_attributes"]
        for s in attrs["synonyms"]:
            embedding[s] = text[index_of[s]]
            for d in attrs["depictions"]:
                embedding[f"{d} {s}"] = text[index_of[d]] + text[index_of[s]]
    q_features = [embedding[q.text] for q in queries]
    while len(queries) < 1500:  # top up with distractor queries naming random objects
        o = int(rng.integers(1, n_boxes + 1))
        queries.append(RetrievalQuery(f"level1_extra {len(queries)}", f"extra {len(queries)}", (o,)))
        q_features.append(text[first_label[o - 1]] + rng.normal(size=dim) / np.sqrt(dim))
    return {
        "pred_points": pred_points,
        "pred_features": torch.from_numpy(features.astype(np.float32)),
        "text_features": torch.from_numpy(text.astype(np.float32)),
        "prompts": prompts,
        "gt_points": gt_points,
        "gt_ids": gt_ids,
        "categories": categories,
        "instance_index": instance,
        "instance_features": torch.from_numpy(inst_features.astype(np.float32)),
        "queries": queries[:1500],
        "query_features": torch.from_numpy(np.asarray(q_features[:1500], dtype=np.float32)),
    }


def _time(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - w)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}, out


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_extra_mb(fn: Callable[[], Any]) -> float | None:
    """Peak resident memory above the level before ``fn``, sampled every 2 ms (Linux only)."""
    if not os.path.exists("/proc/self/statm"):
        return None
    base = _rss()
    peak, done = [base], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.002)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        fn()
    finally:
        done.set()
        thread.join()
    return (peak[0] - base) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="point-count scale (1.0 = the full reference scene)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from scenemetrics import openlex3d as ol3
    from scenemetrics.openlex3d.categories import Categories

    scene = build_scene(args.seed, args.scale)
    cats = Categories.from_dict(scene["categories"])
    seg_args = (scene["pred_points"], scene["pred_features"], None, scene["text_features"], scene["prompts"],
                scene["gt_points"], scene["gt_ids"], cats)  # fmt: skip

    # a fixed workload timed in the same run, to judge how loaded the machine was
    calib = np.random.default_rng(1).random((50_000, 1500), dtype=np.float32)
    t_calib, _ = _time(lambda: np.sort(calib, axis=1), args.repeats)
    t_seg, seg = _time(lambda: ol3.evaluate_segmentation(*seg_args, top_n=(5,), set_ranking=True), args.repeats)
    t_two, _ = _time(lambda: (ol3.topn_frequency(*seg_args, top_n=5), ol3.set_ranking(*seg_args)), args.repeats)
    ret_args = (scene["pred_points"], scene["instance_features"], scene["instance_index"], scene["query_features"],
                scene["queries"], scene["gt_points"], scene["gt_ids"])  # fmt: skip
    t_ret, ret = _time(lambda: ol3.retrieval_ap(*ret_args, top_k=10), args.repeats)

    mem_seg = _peak_extra_mb(lambda: ol3.evaluate_segmentation(*seg_args, top_n=(5,), set_ranking=True))
    mem_ret = _peak_extra_mb(lambda: ol3.retrieval_ap(*ret_args, top_k=10))

    from scenemetrics.openlex3d.geometry import downsample_predictions

    centroids, _ = downsample_predictions(scene["pred_points"])
    result = {
        "benchmark": "openlex3d_speed",
        "scale": args.scale,
        "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "scene": {
            "gt_points": len(scene["gt_points"]),
            "pred_points": len(scene["pred_points"]),
            "downsampled_points": len(centroids),
            "prompts": len(scene["prompts"]),
            "queries": len(scene["queries"]),
            "instances": int(scene["instance_index"].max()) + 1,
        },
        "calibration_np_sort_50000x1500": t_calib,
        "evaluate_segmentation_top5_set_ranking": t_seg,
        "topn_frequency_plus_set_ranking": t_two,
        "retrieval_ap": t_ret,
        "peak_extra_memory_mb": {"evaluate_segmentation": mem_seg, "retrieval_ap": mem_ret},
        "toolkit_cpu_s": TOOLKIT_REFERENCE_CPU_S if args.scale == 1.0 else None,
        "toolkit_source": "a one-off measurement of the authors' toolkit (commit 3dbad2b) on this scene, not this run",
        "speedup_cpu_vs_toolkit": TOOLKIT_REFERENCE_CPU_S / t_seg["cpu_s"] if args.scale == 1.0 else None,
        "values": {
            "top5": seg.topn[5].frequencies,
            "set_ranking_overall": seg.set_ranking.scores["overall"],
            "ap": ret.ap,
            "ap50": ret.ap50,
            "ap25": ret.ap25,
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
