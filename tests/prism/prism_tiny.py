"""Tiny random-weight Zero123 diffusers folders in both public layouts, for the PRISM tests.

The components are real diffusers / transformers classes with small configs (spec §12.1), saved with their own
``save_pretrained`` and loaded back through :meth:`Zero123Features.from_pretrained`, the code path a user's
download takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

TINY_FEATURE_DIM = 208  # 2 * (8 + 16 + 32 + 32) + 32

MODEL_INDEX = {
    "cc_projection": {
        "_class_name": "Zero1to3StableDiffusionPipeline",
        "_diffusers_version": "0.18.2",
        "cc_projection": ["pipeline_zero1to3", "CCProjection"],
        "feature_extractor": ["transformers", "CLIPImageProcessor"],
        "image_encoder": ["transformers", "CLIPVisionModelWithProjection"],
        "requires_safety_checker": True,
        "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
        "scheduler": ["diffusers", "DDIMScheduler"],
        "unet": ["diffusers", "UNet2DConditionModel"],
        "vae": ["diffusers", "AutoencoderKL"],
    },
    "clip_camera_projection": {
        "_class_name": "Zero123Pipeline",
        "_diffusers_version": "0.19.0",
        "clip_camera_projection": ["zero123", "CLIPCameraProjection"],
        "feature_extractor": ["transformers", "CLIPImageProcessor"],
        "image_encoder": ["transformers", "CLIPVisionModelWithProjection"],
        "requires_safety_checker": False,
        "safety_checker": [None, None],
        "scheduler": ["diffusers", "DDIMScheduler"],
        "unet": ["diffusers", "UNet2DConditionModel"],
        "vae": ["diffusers", "AutoencoderKL"],
    },
}


def build_components(seed: int = 0) -> dict:
    """Random-weight components with the tiny configs of spec §12.1 (seeded)."""
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=32,
        in_channels=8,
        out_channels=4,
        down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
        up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
        block_out_channels=(8, 16, 32, 32),
        layers_per_block=1,
        norm_num_groups=4,
        cross_attention_dim=16,
        attention_head_dim=2,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        norm_num_groups=4,
        sample_size=256,
        scaling_factor=0.18215,
    )
    clip = CLIPVisionModelWithProjection(
        CLIPVisionConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
            projection_dim=16,
        )
    )
    projection = nn.Linear(16 + 4, 16)
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        num_train_timesteps=1000,
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    return {"unet": unet, "vae": vae, "image_encoder": clip, "projection": projection, "scheduler": scheduler}


def save_folder(root: Path, parts: dict, layout: str, *, pickled: bool) -> Path:
    """Write ``parts`` as a diffusers folder in ``layout``; ``pickled`` writes .bin files as kxic's main branch."""
    root.mkdir(parents=True, exist_ok=True)
    parts["unet"].save_pretrained(root / "unet", safe_serialization=not pickled)
    parts["vae"].save_pretrained(root / "vae", safe_serialization=not pickled)
    parts["image_encoder"].save_pretrained(root / "image_encoder")
    parts["scheduler"].save_pretrained(root / "scheduler")
    proj_dir = root / layout
    proj_dir.mkdir()
    prefix = "projection." if layout == "cc_projection" else "proj."
    state = {prefix + k: v.detach().clone().contiguous() for k, v in parts["projection"].state_dict().items()}
    if layout == "cc_projection":
        config = {"_class_name": "CCProjection", "_diffusers_version": "0.18.2"}
    else:
        config = {"_class_name": "CLIPCameraProjection", "embedding_dim": 768, "additional_embeddings": 4}
    (proj_dir / "config.json").write_text(json.dumps(config))
    if pickled:
        torch.save(state, proj_dir / "diffusion_pytorch_model.bin")
    else:
        from safetensors.torch import save_file

        save_file(state, str(proj_dir / "diffusion_pytorch_model.safetensors"))
    (root / "model_index.json").write_text(json.dumps(MODEL_INDEX[layout], indent=2))
    return root


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
