"""Tiny random-weight Zero123 diffusers folders in both public layouts, for the PRISM tests.

The components are real diffusers / transformers classes with small configs (spec §12.1), saved with their own
``save_pretrained`` and loaded back through :meth:`Zero123Features.from_pretrained`, the code path a user's
download takes.
"""

from __future__ import annotations

import json
from pathlib import Path

from scenemetrics.prism.random import MODEL_INDEX, TINY_FEATURE_DIM, random_components, save_zero123_folder

__all__ = ["MODEL_INDEX", "TINY_FEATURE_DIM", "build_components", "save_folder", "write_synthetic_cache"]


def build_components(seed: int = 0) -> dict:
    """Random-weight components with the tiny configs of spec §12.1 (seeded)."""
    return random_components("tiny", seed=seed)


def save_folder(root: Path, parts: dict, layout: str, *, pickled: bool) -> Path:
    """Write ``parts`` as a diffusers folder in ``layout``; ``pickled`` writes .bin files as kxic's main branch."""
    return save_zero123_folder(root, parts, layout, pickled=pickled)


def write_synthetic_cache(
    cache_dir: Path,
    *,
    num_objects: int = 10,
    anchors_per_object: int = 4,
    dim: int = 32,
    val_objects: int = 2,
    test_objects: int = 0,
    seed: int = 0,
    dtype: str = "float32",
    shift: float = 1.5,
    noise: float = 0.7,
) -> Path:
    """A feature cache (``scenemetrics.prism.feature-cache/1``) whose triplets a trained head can separate.

    Every anchor's ground truth ``g`` is random. Positives are ``g`` plus strong noise in the first 3/4 of the
    dimensions ("nuisance"), negatives are ``g`` shifted by ``shift`` along a fixed direction in the last quarter
    plus the same nuisance noise, so raw distances barely separate them while a head that looks at the last quarter
    does.
    Each anchor has one inpainted negative with a tiny mask (weight 0), one with mask_area 0.11 (weight 0.5), one
    with 0.5 (weight 1), and two misaligned negatives (other anchors' ground truths of the same object).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    nuisance = dim * 3 // 4
    direction = np.zeros(dim)
    direction[nuisance:] = rng.standard_normal(dim - nuisance)
    direction /= np.linalg.norm(direction)
    noise_scale = np.where(np.arange(dim) < nuisance, noise, 0.05)
    rows, anchors, feats = [], [], []

    def add(vec: np.ndarray, obj: str, candidate: str) -> int:
        feats.append(vec)
        rows.append({"object": obj, "source": "000", "candidate": candidate, "pose": [0.0, 90.0, 0.0]})
        return len(feats) - 1

    for o in range(num_objects):
        obj = f"obj_{o:02d}"
        split = "val" if o < val_objects else ("test" if o < val_objects + test_objects else "train")
        gts = [add(0.3 * rng.standard_normal(dim), obj, f"views/{a:03d}.png") for a in range(anchors_per_object)]
        for a, gt in enumerate(gts):
            g = feats[gt]
            pos = [add(g + noise_scale * rng.standard_normal(dim), obj, f"inpainted/{a}_pos{k}.png") for k in range(2)]
            negs = []
            for k, area in enumerate((0.01, 0.11, 0.5)):
                vec = g + shift * direction + noise_scale * rng.standard_normal(dim)
                negs.append({"row": add(vec, obj, f"inpainted/{a}_neg{k}.png"), "mask_area": area})
            mis = [gts[(a + 1) % anchors_per_object], gts[(a + 2) % anchors_per_object]]
            anchors.append(
                {
                    "object": obj,
                    "split": split,
                    "source": "000",
                    "target": f"{a:03d}",
                    "gt": gt,
                    "positives": pos,
                    "negatives": negs,
                    "misaligned": mis,
                }
            )
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(cache_dir / "features.npy", np.asarray(feats, dtype=dtype))
    index = {
        "format": "scenemetrics.prism.feature-cache/1",
        "feature_dim": dim,
        "num_rows": len(feats),
        "extractor": {"model": "synthetic", "timestep": 0, "noise_seed": 0, "image_size": 64},
        "rows": rows,
        "anchors": anchors,
    }
    (cache_dir / "index.json").write_text(json.dumps(index))
    return cache_dir
