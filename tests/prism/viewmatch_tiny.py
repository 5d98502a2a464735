"""Tiny random-weight Stable Diffusion inpainting and BLIP folders, saved with ``save_pretrained``.

They load through the same code as a hub download (``AutoPipelineForInpainting.from_pretrained`` /
``BlipProcessor`` + ``BlipForConditionalGeneration.from_pretrained`` on a folder); the tokenizers are built from
hand-written vocabularies, so nothing is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch


def _clip_alphabet() -> list[str]:
    # CLIP's byte-level alphabet: printable bytes stand for themselves, the others are shifted past 255
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    shifted = [b for b in range(256) if b not in printable]
    return [chr(b) for b in printable] + [chr(256 + i) for i in range(len(shifted))]


def tiny_sd_inpainting(root: Path, seed: int = 0) -> Path:
    """A ``StableDiffusionInpaintPipeline`` folder (U-Net with 9 input channels, tiny VAE / CLIP text encoder)."""
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    root.mkdir(parents=True, exist_ok=True)
    chars = _clip_alphabet()
    vocab = {t: i for i, t in enumerate([*chars, *(c + "</w>" for c in chars), "<|startoftext|>", "<|endoftext|>"])}
    (root / "vocab.json").write_text(json.dumps(vocab))
    (root / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(root / "vocab.json"), str(root / "merges.txt"), model_max_length=16)
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=16,
            projection_dim=16,
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=vocab["<|endoftext|>"],
            pad_token_id=vocab["<|endoftext|>"],
        )
    )
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=9,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        cross_attention_dim=16,
        attention_head_dim=2,
        norm_num_groups=4,
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
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipe = StableDiffusionInpaintPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(root / "sd-inpainting")
    return root / "sd-inpainting"


def tiny_blip(root: Path, seed: int = 0) -> Path:
    """A ``BlipForConditionalGeneration`` + ``BlipProcessor`` folder with a 16-word BERT vocabulary."""
    from transformers import BertTokenizer, BlipConfig, BlipForConditionalGeneration, BlipImageProcessor, BlipProcessor

    root.mkdir(parents=True, exist_ok=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", "a", "red", "cube", "sphere", "on", "white"]
    words += ["toy", "photo", "of", "the"]
    (root / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizer(str(root / "vocab.txt"), bos_token="[DEC]", model_max_length=32)
    processor = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tokenizer)
    torch.manual_seed(seed)
    text = dict(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1)
    text.update(num_attention_heads=2, max_position_embeddings=32, bos_token_id=5, sep_token_id=3, pad_token_id=0)
    text.update(eos_token_id=3)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=32)
    vision.update(patch_size=8)
    model = BlipForConditionalGeneration(BlipConfig(text_config=text, vision_config=vision, projection_dim=16))
    model.save_pretrained(root / "blip")
    processor.save_pretrained(root / "blip")
    return root / "blip"
