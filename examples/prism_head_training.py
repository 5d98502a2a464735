"""Train a PRISM projection head on a synthetic ViewMatch-like dataset and rank two fake NVS models.

The whole PRISM pipeline on files, as a user runs it:

1. write an image dataset in the ``scenemetrics.prism.dataset/1`` format: objects rendered at 8 azimuths, and for
   some (source, target) pairs plausible "inpaintings" (a masked region refilled smoothly: positives) and
   implausible ones (the region filled with noise or another object's texture: negatives with their mask area);
2. run Zero123 once per distinct triplet into a feature cache (``build_feature_cache``, = ``scenemetrics prism
   embed``);
3. train the projection head on the cache (``train_head``, = ``scenemetrics prism train-head``), checkpoints and
   TensorBoard logs included, and evaluate it on the held-out test objects;
4. score two fake "NVS models" on the test objects, each right except for one hallucinated region that ``sharp``
   fills smoothly and ``broken`` with noise; both with ``PRISMDistance`` (reference-based) and ``PRISMMMD``
   (reference-free, anchors = the training objects' ground-truth triplets, taken from the cache).

Without ``--model`` a tiny random-weight Zero123 stand-in (built here, nothing downloaded) replaces Zero123-XL: the
scores then only demonstrate the pipeline. With ``--model path/to/zero123-xl-diffusers --image-size 256`` it runs on
the real model (a GPU is advisable). Either way these are not the paper's numbers: no PRISM head was published.

Usage:
    python examples/prism_head_training.py [--out DIR] [--model PATH] [--image-size 64] [--epochs 30]
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

import scenemetrics as sm
from scenemetrics.prism import (
    ProjectionHead,
    Zero123Features,
    anchor_embeddings_from_cache,
    build_feature_cache,
    evaluate_head,
    load_view,
    random_checkpoint,
    train_head,
)

AZIMUTHS = [i * 45.0 for i in range(8)]


def _panorama(rng: np.random.Generator, size: int) -> np.ndarray:
    """A smooth random texture wrapped around a cylinder: 4 view-widths wide."""
    coarse = torch.from_numpy(rng.random((1, 3, 6, 24), dtype=np.float32))
    coarse = coarse * torch.from_numpy(rng.random((1, 3, 1, 1), dtype=np.float32))  # object-specific colours
    fine = F.interpolate(coarse, size=(size, 4 * size), mode="bicubic", align_corners=False).clamp(0, 1)
    return fine[0].permute(1, 2, 0).numpy()


def _render(pano: np.ndarray, azimuth: float, size: int) -> np.ndarray:
    """The object seen from ``azimuth``: a window of the panorama inside a round silhouette, RGBA uint8."""
    start = round(azimuth / 360.0 * pano.shape[1])
    cols = (np.arange(size) + start) % pano.shape[1]
    rgb = pano[:, cols]
    yy, xx = np.mgrid[:size, :size]
    alpha = ((yy - size / 2) ** 2 + (xx - size / 2) ** 2 <= (0.42 * size) ** 2).astype(np.float32)
    return np.concatenate([rgb * 255, alpha[..., None] * 255], axis=-1).round().astype(np.uint8)


def _blob(rng: np.random.Generator, size: int, alpha: np.ndarray) -> np.ndarray:
    """A random elliptic mask inside the silhouette."""
    yy, xx = np.mgrid[:size, :size]
    cy, cx = rng.uniform(0.3, 0.7, 2) * size
    ry, rx = rng.uniform(0.08, 0.3, 2) * size
    return (((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1) & (alpha > 0)


def _inpaint(view: np.ndarray, mask: np.ndarray, fill: np.ndarray) -> np.ndarray:
    out = view.copy()
    out[mask, :3] = fill[mask]
    return out


def write_dataset(root: Path, size: int, num_objects: int = 14, seed: int = 0) -> Path:
    """Objects 0-3 are the test split, 4-5 validation, the rest training."""
    rng = np.random.default_rng(seed)
    panoramas = [_panorama(rng, size) for _ in range(num_objects)]
    for o, pano in enumerate(panoramas):
        obj = root / f"obj_{o:02d}"
        (obj / "views").mkdir(parents=True)
        (obj / "inpainted").mkdir()
        views = {}
        renders = []
        for i, az in enumerate(AZIMUTHS):
            rgba = _render(pano, az, size)
            Image.fromarray(rgba, "RGBA").save(obj / "views" / f"{i:03d}.png")
            views[f"{i:03d}"] = {"file": f"views/{i:03d}.png", "polar_deg": 60.0, "azimuth_deg": az, "radius": 2.7}
            renders.append(rgba)
        (obj / "cameras.json").write_text(json.dumps({"views": views}))
        pairs = []
        for s in range(len(AZIMUTHS)):
            t = (s + 1 + int(rng.integers(0, 3))) % len(AZIMUTHS)
            target = renders[t]
            alpha = target[..., 3]
            silhouette = float((alpha > 127).sum())
            entry = {"source": f"{s:03d}", "target": f"{t:03d}", "positives": [], "negatives": [], "misaligned": "all"}
            for k in range(2):  # plausible: the masked region refilled with a blurred copy of itself
                mask = _blob(rng, size, alpha)
                smooth = F.avg_pool2d(torch.from_numpy(target[..., :3]).permute(2, 0, 1)[None].float(), 5, 1, 2)
                fill = smooth[0].permute(1, 2, 0).numpy().round().astype(np.uint8)
                name = f"inpainted/{s:03d}_{t:03d}_pos{k}.png"
                Image.fromarray(_inpaint(target, mask, fill), "RGBA").save(obj / name)
                entry["positives"].append({"file": name, "mask_area": float(mask.sum()) / silhouette})
            for k in range(2):  # implausible: noise, or another object's texture
                mask = _blob(rng, size, alpha)
                if k == 0:
                    fill = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                else:
                    other = panoramas[(o + 1 + int(rng.integers(0, num_objects - 1))) % num_objects]
                    fill = _render(other, float(rng.uniform(0, 360)), size)[..., :3]
                name = f"inpainted/{s:03d}_{t:03d}_neg{k}.png"
                Image.fromarray(_inpaint(target, mask, fill), "RGBA").save(obj / name)
                entry["negatives"].append({"file": name, "mask_area": float(mask.sum()) / silhouette})
            pairs.append(entry)
        (obj / "pairs.json").write_text(json.dumps({"pairs": pairs}))
    splits = {"test": [f"obj_{i:02d}" for i in range(4)], "val": ["obj_04", "obj_05"]}
    (root / "dataset.json").write_text(json.dumps({"format": "scenemetrics.prism.dataset/1", "splits": splits}))
    return root


def fake_nvs(kind: str, target: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Two fake NVS models that both get the view right except for one hallucinated region.

    ``sharp`` fills the region smoothly (like the plausible inpaintings), ``broken`` with noise (like the
    implausible ones).
    """
    size = target.shape[-1]
    silhouette = (target < 0.999).any(dim=0).numpy()
    mask = torch.from_numpy(_blob(rng, size, silhouette.astype(np.float32)))
    if kind == "sharp":
        fill = F.avg_pool2d(target[None], 5, 1, 2)[0]
    else:
        fill = torch.from_numpy(rng.random((3, size, size), dtype=np.float32))
    return torch.where(mask, fill, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="working folder (default: a temporary folder)")
    parser.add_argument("--model", default=None, help="a Zero123 diffusers folder (default: tiny random stand-in)")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    out = Path(args.out or tempfile.mkdtemp(prefix="prism_example_"))
    out.mkdir(parents=True, exist_ok=True)
    model = args.model or random_checkpoint(out / "tiny_zero123")  # random weights: uncalibrated
    extractor = Zero123Features.from_pretrained(model, image_size=args.image_size, device=args.device)
    dataset = write_dataset(out / "dataset", args.image_size)
    cache = build_feature_cache(dataset, out / "cache", extractor, batch_size=16)

    small = args.model is None
    result = train_head(
        cache,
        out / "head_run",
        epochs=args.epochs,
        lr=1e-3,
        hidden_dim=256 if small else 2048,
        out_dim=64 if small else 2048,
        patience=10,
    )
    head = ProjectionHead.load(result.head_path)
    untrained = evaluate_head(cache, None, split="test")
    trained = evaluate_head(cache, head, split="test")

    # two fake NVS models on the test objects' (source, target) pairs
    # MMD anchors: ground-truth triplets of other objects (the paper's protocol uses held-out objects too)
    anchors = anchor_embeddings_from_cache(cache, head, split="train")
    scores = {}
    test_pairs = []
    for obj in [f"obj_{i:02d}" for i in range(4)]:
        cams = json.loads((dataset / obj / "cameras.json").read_text())["views"]
        for pair in json.loads((dataset / obj / "pairs.json").read_text())["pairs"]:
            s, t = cams[pair["source"]], cams[pair["target"]]
            pose = sm.prism.relative_pose(
                torch.tensor([s["polar_deg"], s["azimuth_deg"], s["radius"]]),
                torch.tensor([t["polar_deg"], t["azimuth_deg"], t["radius"]]),
            )
            views = [load_view(dataset / obj / cam["file"], args.image_size) for cam in (s, t)]
            test_pairs.append((*views, pose))
    source = torch.stack([p[0] for p in test_pairs]).to(args.device)
    target = torch.stack([p[1] for p in test_pairs]).to(args.device)
    pose = torch.stack([p[2] for p in test_pairs]).to(args.device)
    for kind in ("sharp", "broken"):
        rng = np.random.default_rng(1)
        pred = torch.stack([fake_nvs(kind, t, rng) for t in target.cpu()]).to(args.device)
        distance = sm.PRISMDistance(extractor, head).to(args.device)
        mmd = sm.PRISMMMD(extractor, head, anchors=anchors).to(args.device)
        distance.update(source, pred, target, pose)
        mmd.update(source, pred, pose)
        scores[kind] = {"prism_distance": float(distance.compute()), "prism_mmd": float(mmd.compute())}

    summary = {
        "out": str(out),
        "model": str(model),
        "feature_dim": extractor.feature_dim,
        "epochs_completed": result.epochs_completed,
        "head": str(result.head_path),
        "test_triplet_acc_raw_features": untrained["triplet_acc"],
        "test_triplet_acc_trained_head": trained["triplet_acc"],
        "nvs_models": scores,
        "sharp_ranks_better": all(scores["sharp"][k] < scores["broken"][k] for k in scores["sharp"]),
    }
    print(json.dumps(summary, indent=2))
    if not all(math.isfinite(v) for s in scores.values() for v in s.values()):
        raise SystemExit("non-finite score")


if __name__ == "__main__":
    main()
