"""Small builders shared by the OpenLex3D tests."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np


def sample(oid: int, syn=(), dep=(), vis=(), clutter=(), **extra: Any) -> dict:
    attrs = {"synonyms": list(syn), "depictions": list(dep), "vis_sim": list(vis), "clutter": list(clutter)}
    return {"object_id": oid, "name": extra.pop("name", ""), "labels": {"image_attributes": attrs, **extra}}


def categories_dict(*samples: dict) -> dict:
    return {"dataset": {"samples": list(samples)}}


def on_x(values) -> np.ndarray:
    return np.array([[x, 0.0, 0.0] for x in values], dtype=np.float64)


PROMPTS = ["chair", "arm chair", "armchair", "table", "lamp", "sofa", "wall", "dog", "cat", "bed", "rug", "desk"]


def random_scene(seed: int, *, dense: bool, voxel: float | None) -> dict:
    """A small random scene kept away from ties (spec §11.7); loops over seeds derived from ``seed`` until the
    tie-free conditions hold."""
    from .ol3_reference import downsample

    for attempt in range(100):
        rng = np.random.default_rng(seed * 1000 + attempt)
        m, d = len(PROMPTS), 6
        text = rng.normal(size=(m, d))
        labels = [*PROMPTS, "unknown label", "arm  chair"]
        samples = []

        def pick(k: int, rng: np.random.Generator = rng, labels: list[str] = labels) -> list[str]:
            return [str(x) for x in rng.choice(labels, size=k, replace=False)]

        for oid in range(1, 7):
            syn = ["wall"] if oid == 6 else pick(int(rng.integers(0, 3)))
            samples.append(
                {
                    "object_id": oid,
                    "labels": {
                        "image_attributes": {
                            "synonyms": syn,
                            "depictions": pick(int(rng.integers(0, 2))),
                            "vis_sim": pick(int(rng.integers(0, 3))),
                            "clutter": [str(c) for c in rng.choice([1, 2, 3, 4, 5, 6, 99], size=2, replace=False)],
                        }
                    },
                }
            )
        centers = rng.uniform(0, 0.6, size=(8, 3))
        gt_ids = rng.choice([1, 2, 3, 4, 5, 6, -100, 42], size=50)
        owner = {o: i for i, o in enumerate([1, 2, 3, 4, 5, 6, -100, 42])}
        gt = centers[[owner[o] for o in gt_ids]] + rng.normal(0, 0.05, size=(50, 3))
        pred = gt[rng.integers(0, 50, size=70)] + rng.normal(0, 0.04, size=(70, 3))
        if voxel is not None:
            frac = pred / voxel - np.floor(pred / voxel)
            pred = pred[((frac > 1e-3) & (frac < 1 - 1e-3)).all(axis=1)]
            keys = np.floor(pred / voxel)
            _, first, inverse, counts = np.unique(
                keys, axis=0, return_index=True, return_inverse=True, return_counts=True
            )
            pred = pred[(counts[inverse.ravel()] != 2) | np.isin(np.arange(len(pred)), first)]
        n_rows = len(pred) if dense else 7
        index = np.arange(len(pred)) if dense else rng.integers(0, n_rows, size=len(pred))
        feats = rng.normal(size=(n_rows, d))
        logits = (feats / np.linalg.norm(feats, axis=1, keepdims=True)) @ (
            text / np.linalg.norm(text, axis=1, keepdims=True)
        ).T
        if (np.diff(np.sort(logits, axis=1), axis=1) <= 1e-5).any():
            continue
        ds_pts, _ = downsample(pred, index, voxel)
        dist = np.sort(np.linalg.norm(gt[:, None, :] - np.asarray(ds_pts)[None], axis=2), axis=1)
        if (np.abs(dist[:, 0] - 0.05) < 1e-5).any() or (dist[:, 1] - dist[:, 0] < 1e-5).any():
            continue
        return {
            "pred_points": pred,
            "pred_features": feats.astype(np.float32),
            "pred_index": None if dense else index,
            "text_features": text.astype(np.float32),
            "prompts": PROMPTS,
            "gt_points": gt,
            "gt_ids": gt_ids,
            "categories": {"dataset": {"samples": samples}},
        }
    raise RuntimeError("no tie-free scene found")


def write_pcd(path, points, *, mode="binary", extra_rgb=True, dtype="f4"):
    fields = "x y z rgb" if extra_rgb else "x y z"
    size = dtype[1]
    n_fields = 4 if extra_rgb else 3
    header = (
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
        f"FIELDS {fields}\nSIZE {' '.join([size] * 3 + (['4'] if extra_rgb else []))}\n"
        f"TYPE {' '.join(['F'] * 3 + (['U'] if extra_rgb else []))}\nCOUNT {' '.join(['1'] * n_fields)}\n"
        f"WIDTH {len(points)}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {len(points)}\nDATA {mode}\n"
    )
    with open(path, "wb") as f:
        f.write(header.encode())
        if mode == "ascii":
            for p in points:
                f.write((" ".join(repr(float(v)) for v in p) + (" 4278190335" if extra_rgb else "") + "\n").encode())
        else:
            rec = [("x", "<" + dtype), ("y", "<" + dtype), ("z", "<" + dtype)] + ([("rgb", "<u4")] if extra_rgb else [])
            data = np.zeros(len(points), dtype=rec)
            for i, c in enumerate("xyz"):
                data[c] = points[:, i]
            if extra_rgb:
                data["rgb"] = 0xFF00FF00
            f.write(data.tobytes())


def write_ply(path, points, fmt):
    header = (
        f"ply\nformat {fmt} 1.0\ncomment test\nelement camera 1\nproperty float a\nproperty uchar b\n"
        f"element vertex {len(points)}\nproperty double x\nproperty float nx\nproperty double y\n"
        "property double z\nproperty uchar red\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
    )
    with open(path, "wb") as f:
        f.write(header.encode())
        if fmt == "ascii":
            f.write(b"1.5 3\n")
            for p in points:
                f.write(f"{float(p[0])!r} 0.5 {float(p[1])!r} {float(p[2])!r} 200\n".encode())
            f.write(b"3 0 1 2\n")
        else:
            e = "<" if fmt == "binary_little_endian" else ">"
            f.write(struct.pack(e + "fB", 1.5, 3))
            for p in points:
                f.write(struct.pack(e + "dfddB", p[0], 0.5, p[1], p[2], 200))
            f.write(struct.pack(e + "B3i", 3, 0, 1, 2))
