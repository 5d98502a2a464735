"""Random-weight Zero123 diffusers folders in the two public layouts (for tests, examples, benchmarks).

A stand-in for a download, loadable by :meth:`Zero123Features.from_pretrained`: the
components are the real diffusers / transformers classes, saved with their own ``save_pretrained`` in the layout of
``kxic/zero123-xl`` (``cc_projection``, pickled ``.bin``) or ``ashawkey/zero123-xl-diffusers``
(``clip_camera_projection``, safetensors), so loading one goes through the same code path as the real checkpoint.
Scores computed with random weights are uncalibrated.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from scenemetrics.prism import Zero123Features, random_checkpoint
    >>> folder = random_checkpoint(Path(tempfile.mkdtemp()) / "zero123")  # doctest: +SKIP
    >>> Zero123Features.from_pretrained(folder).feature_dim  # doctest: +SKIP
    208
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["MODEL_INDEX", "TINY_FEATURE_DIM", "random_checkpoint", "random_components", "save_zero123_folder"]

TINY_FEATURE_DIM = 208
"""Pooled feature size of the ``"tiny"`` configuration: ``2 * (8 + 16 + 32 + 32) + 32``."""

MODEL_INDEX: dict[str, dict[str, Any]] = {
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
"""``model_index.json`` of each public layout (the projection's folder is named after the layout)."""

_SCHEDULER = {
    "beta_start": 0.00085,
    "beta_end": 0.012,
    "beta_schedule": "scaled_linear",
    "num_train_timesteps": 1000,
    "clip_sample": False,
    "set_alpha_to_one": False,
    "steps_offset": 1,
}

_CONFIGS: dict[str, dict[str, dict[str, Any]]] = {
    # a tiny configuration: a forward pass takes seconds on a CPU
    "tiny": {
        "unet": {
            "block_out_channels": (8, 16, 32, 32),
            "layers_per_block": 1,
            "norm_num_groups": 4,
            "cross_attention_dim": 16,
            "attention_head_dim": 2,
        },
        "vae": {"block_out_channels": (8, 8, 8, 8), "layers_per_block": 1, "norm_num_groups": 4},
        "clip": {
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "projection_dim": 16,
        },
    },
    # Zero123-XL's configuration: SD 1.x U-Net (8 input channels), SD VAE, CLIP ViT-L/14, 772 -> 768 projection
    "full": {
        "unet": {
            "block_out_channels": (320, 640, 1280, 1280),
            "layers_per_block": 2,
            "cross_attention_dim": 768,
            "attention_head_dim": 8,
        },
        "vae": {"block_out_channels": (128, 256, 512, 512), "layers_per_block": 2},
        "clip": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "image_size": 224,
            "patch_size": 14,
            "projection_dim": 768,
        },
    },
}


def random_components(size: str = "tiny", *, seed: int = 0, device: str | torch.device | None = None) -> dict:
    """Random-weight Zero123 components: ``unet``, ``vae``, ``image_encoder``, ``projection`` and ``scheduler``.

    Args:
        size: ``"tiny"`` (runs in seconds on a CPU, 208-d features) or ``"full"`` (Zero123-XL's configuration,
            8320-d features; the U-Net, VAE and projection are materialised from the meta device with N(0, 0.02)
            weights, much faster than their default initialisation).
        seed: seeds the weights.
        device: where the ``"full"`` modules are materialised (default CPU); ``"tiny"`` ones are built on the CPU.

    Raises:
        ValueError: unknown ``size``.
    """
    if size not in _CONFIGS:
        raise ValueError(f"`size` must be one of {sorted(_CONFIGS)}; received {size!r}")
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    config = _CONFIGS[size]
    torch.manual_seed(seed)

    def build() -> tuple[nn.Module, nn.Module, nn.Module]:
        unet = UNet2DConditionModel(
            sample_size=32,
            in_channels=8,
            out_channels=4,
            down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
            up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
            **config["unet"],
        )
        vae = AutoencoderKL(
            in_channels=3,
            out_channels=3,
            latent_channels=4,
            down_block_types=("DownEncoderBlock2D",) * 4,
            up_block_types=("UpDecoderBlock2D",) * 4,
            sample_size=256,
            scaling_factor=0.18215,
            **config["vae"],
        )
        width = config["clip"]["projection_dim"]
        return unet, vae, nn.Linear(width + 4, width)

    if size == "tiny":
        unet, vae, projection = build()
    else:
        target = torch.device(device) if device is not None else torch.device("cpu")
        with torch.device("meta"):
            meta = build()
        generator = torch.Generator(device="cpu").manual_seed(seed)
        materialised = []
        for module in meta:
            module = module.to_empty(device=target)
            with torch.no_grad():
                for p in module.parameters():
                    p.copy_((torch.randn(p.shape, generator=generator) * 0.02).to(target))
                for b in module.buffers():
                    if b.is_floating_point():
                        b.zero_()
            materialised.append(module)
        unet, vae, projection = materialised
    # CLIP is built normally: it holds integer position-id buffers that to_empty() would leave uninitialised
    clip = CLIPVisionModelWithProjection(CLIPVisionConfig(**config["clip"]))
    if size == "full" and device is not None:
        clip = clip.to(device)
    return {
        "unet": unet,
        "vae": vae,
        "image_encoder": clip,
        "projection": projection,
        "scheduler": DDIMScheduler(**_SCHEDULER),
    }


def save_zero123_folder(
    root: str | os.PathLike, parts: dict, layout: str = "clip_camera_projection", *, pickled: bool = False
) -> Path:
    """Write components (as from :func:`random_components`) as a diffusers folder in a public layout.

    Args:
        root: the folder to write (created).
        parts: the components.
        layout: ``"clip_camera_projection"`` (ashawkey/zero123-xl-diffusers) or ``"cc_projection"`` (kxic/zero123-xl).
        pickled: write the U-Net, VAE and projection as pickled ``.bin`` files, as kxic's main branch does.

    Raises:
        ValueError: unknown ``layout``.
    """
    if layout not in MODEL_INDEX:
        raise ValueError(f"`layout` must be one of {sorted(MODEL_INDEX)}; received {layout!r}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    parts["unet"].save_pretrained(root / "unet", safe_serialization=not pickled)
    parts["vae"].save_pretrained(root / "vae", safe_serialization=not pickled)
    parts["image_encoder"].save_pretrained(root / "image_encoder")
    parts["scheduler"].save_pretrained(root / "scheduler")
    proj_dir = root / layout
    proj_dir.mkdir(exist_ok=True)
    prefix = "projection." if layout == "cc_projection" else "proj."
    state = {prefix + k: v.detach().clone().contiguous() for k, v in parts["projection"].state_dict().items()}
    if layout == "cc_projection":
        config: dict[str, Any] = {"_class_name": "CCProjection", "_diffusers_version": "0.18.2"}
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


def random_checkpoint(
    root: str | os.PathLike, *, layout: str = "clip_camera_projection", size: str = "tiny", seed: int = 0
) -> Path:
    """A random-weight Zero123 diffusers folder at ``root`` (see the module docstring); returns ``root``.

    Raises:
        ValueError: unknown ``layout`` or ``size``.
    """
    if layout not in MODEL_INDEX:
        raise ValueError(f"`layout` must be one of {sorted(MODEL_INDEX)}; received {layout!r}")
    return save_zero123_folder(root, random_components(size, seed=seed), layout)
