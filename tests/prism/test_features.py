"""Zero123Features: shapes, determinism, sensitivity, the numerical contract of spec §4.3, input errors."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from . import prism_tiny

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

from scenemetrics.prism import BLOCK_NAMES, Zero123Features

POSE = torch.tensor([[0.0, 30.0, 0.0], [-10.0, 200.0, 0.3], [5.0, 90.0, -0.2]])


def _images(b: int, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, size, size, generator=g), torch.rand(b, 3, size, size, generator=g)


def _reference_features(m: Zero123Features, source, target, pose, timestep: int) -> torch.Tensor:
    """Spec §4.3 written out with the diffusers modules, diffusers' add_noise and hooks of its own."""
    from diffusers import DDIMScheduler

    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", num_train_timesteps=1000)
    x_src, x_tgt = 2 * source - 1, 2 * target - 1
    z0 = m.vae.encode(x_tgt).latent_dist.mode() * m.vae.config.scaling_factor
    c = m.vae.encode(x_src).latent_dist.mode()
    eps = torch.randn((1, *z0.shape[1:]), generator=torch.Generator().manual_seed(m.noise_seed))
    t = torch.full((source.shape[0],), timestep, dtype=torch.long)
    z_t = sched.add_noise(z0, eps.expand_as(z0), t)
    xc = F.interpolate(x_src, size=(32, 32), mode="bicubic", align_corners=True)
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(1, 3, 1, 1)
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(1, 3, 1, 1)
    emb = m.image_encoder(pixel_values=((xc + 1) / 2 - mean) / std).image_embeds
    rad = torch.deg2rad(pose.double())
    pose4 = torch.stack([rad[:, 0], torch.sin(rad[:, 1]), torch.cos(rad[:, 1]), pose[:, 2].double()], 1).float()
    ehs = m.camera_projection(torch.cat([emb, pose4], dim=-1))[:, None, :]
    outs = []
    blocks = [*m.unet.down_blocks, m.unet.mid_block, *m.unet.up_blocks]
    handles = [
        b.register_forward_hook(lambda mod, inp, out: outs.append(out[0] if isinstance(out, tuple) else out))
        for b in blocks
    ]
    try:
        m.unet(torch.cat([z_t, c], dim=1), t, encoder_hidden_states=ehs)
    finally:
        for h in handles:
            h.remove()
    m._captured.clear()  # the extractor's own hooks fired too
    pooled = []
    for f in outs:
        n = f / f.norm(dim=1, keepdim=True).clamp_min(1e-12)
        pooled.append(n.mean(dim=(2, 3)))
    return torch.cat(pooled, dim=1)


def test_shapes_and_block_slices(extractor256):
    m = extractor256
    src, tgt = _images(2, 256, 0)
    with torch.no_grad():
        out = m(src, tgt, POSE[:2])
    assert out.shape == (2, prism_tiny.TINY_FEATURE_DIM) and out.dtype == torch.float32
    assert m.feature_dim == 208 and m.block_names == BLOCK_NAMES
    assert m.block_channels == (8, 16, 32, 32, 32, 32, 32, 16, 8)
    start = 0
    for name, ch in zip(BLOCK_NAMES, m.block_channels, strict=True):
        assert m.block_slices[name] == slice(start, start + ch)
        start += ch
    assert start == 208
    # every pooled block vector is a mean of unit vectors
    for sl in m.block_slices.values():
        assert bool((out[:, sl].norm(dim=1) <= 1 + 1e-5).all())
    assert m._captured == {}  # hooks keep no activations between calls


def test_single_image_and_empty_batch(extractor64):
    src, tgt = _images(1, 64, 1)
    with torch.no_grad():
        batch = extractor64(src, tgt, POSE[:1])
        single = extractor64(src[0], tgt[0], POSE[0])
        empty = extractor64(src[:0], tgt[:0], POSE[:0])
    assert torch.equal(batch, single)
    assert empty.shape == (0, 208) and empty.dtype == torch.float32


def test_deterministic_and_batch_independent(extractor64):
    src, tgt = _images(3, 64, 2)
    with torch.no_grad():
        a = extractor64(src, tgt, POSE)
        b = extractor64(src, tgt, POSE)
        alone = torch.cat([extractor64(src[i : i + 1], tgt[i : i + 1], POSE[i]) for i in range(3)])
    assert torch.equal(a, b)
    assert torch.allclose(a, alone, atol=1e-5, rtol=0)


def test_features_react_to_every_input(tiny_folders, extractor64):
    src, tgt = _images(2, 64, 3)
    other_src, other_tgt = _images(2, 64, 4)
    with torch.no_grad():
        base = extractor64(src, tgt, POSE[:2])
        changed = {
            "pose": extractor64(src, tgt, POSE[:2] + torch.tensor([0.0, 45.0, 0.0])),
            "source": extractor64(other_src, tgt, POSE[:2]),
            "target": extractor64(src, other_tgt, POSE[:2]),
        }
        for kwargs in ({"timestep": 500}, {"noise_seed": 1}):
            m = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64, **kwargs)
            changed[str(kwargs)] = m(src, tgt, POSE[:2])
    for name, feats in changed.items():
        assert (feats - base).abs().max() > 1e-4, name


@pytest.mark.parametrize("timestep", [0, 900])
def test_numerical_contract(tiny_folders, timestep):
    m = Zero123Features.from_pretrained(tiny_folders["clip_camera_projection"], timestep=timestep, image_size=64)
    src, tgt = _images(2, 64, 5)
    with torch.no_grad():
        ours = m(src, tgt, POSE[:2])
        ref = _reference_features(m, src, tgt, POSE[:2], timestep)
    assert torch.allclose(ours, ref, atol=1e-5, rtol=0)


def test_uint8_input_equals_float_input(extractor64):
    g = torch.Generator().manual_seed(6)
    src8 = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8, generator=g)
    tgt8 = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8, generator=g)
    with torch.no_grad():
        a = extractor64(src8, tgt8, POSE[:2])
        b = extractor64(src8.float() / 255, tgt8.float() / 255, POSE[:2])
    assert torch.equal(a, b)


def test_resize_option(tiny_folders):
    m = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64, resize=True)
    src, tgt = _images(1, 96, 7)
    with torch.no_grad():
        out = m(src, tgt, POSE[0])
        ref = m(
            F.interpolate(src, size=(64, 64), mode="bilinear", antialias=True, align_corners=False),
            F.interpolate(tgt, size=(64, 64), mode="bilinear", antialias=True, align_corners=False),
            POSE[0],
        )
    assert torch.equal(out, ref)
    with pytest.raises(ValueError, match=r"square"):
        m(torch.rand(1, 3, 64, 96), torch.rand(1, 3, 64, 96), POSE[0])


@pytest.mark.parametrize(
    ("source", "target", "pose", "match"),
    [
        (torch.rand(1, 3, 32, 32), torch.rand(1, 3, 32, 32), POSE[0], "64x64"),
        (torch.rand(1, 3, 64, 96), torch.rand(1, 3, 64, 96), POSE[0], "square"),
        (torch.rand(1, 3, 64, 64) + 1.0, torch.rand(1, 3, 64, 64), POSE[0], "source.*\\[0, 1\\]"),
        (torch.rand(1, 3, 64, 64), torch.full((1, 3, 64, 64), float("nan")), POSE[0], "target.*NaN"),
        (torch.rand(1, 3, 64, 64), torch.rand(2, 3, 64, 64), POSE[0], "same shape"),
        (torch.rand(1, 4, 64, 64), torch.rand(1, 4, 64, 64), POSE[0], "3 \\(RGB\\) channels"),
        (torch.rand(2, 3, 64, 64), torch.rand(2, 3, 64, 64), torch.zeros(2, 2), "pose.*\\(2, 3\\)"),
        (torch.rand(2, 3, 64, 64), torch.rand(2, 3, 64, 64), torch.zeros(3, 3), "pose.*\\(2, 3\\)"),
        (torch.rand(1, 3, 64, 64), torch.rand(1, 3, 64, 64), torch.tensor([0.0, float("inf"), 0.0]), "pose"),
        (torch.rand(1, 3, 64, 64), torch.randint(0, 9, (1, 3, 64, 64), dtype=torch.int32), POSE[0], "dtype"),
    ],
)
def test_bad_inputs_raise_valueerror(extractor64, source, target, pose, match):
    with pytest.raises(ValueError, match=match):
        extractor64(source, target, pose)


def test_gradients_flow_to_target_but_not_parameters(extractor64):
    src, tgt = _images(1, 64, 8)
    tgt.requires_grad_(True)
    extractor64(src, tgt, POSE[0]).sum().backward()
    assert tgt.grad is not None and torch.isfinite(tgt.grad).all() and tgt.grad.abs().sum() > 0
    assert all(p.grad is None for p in extractor64.parameters())


def test_half_precision_on_cpu_raises(tiny_folders):
    m = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64).to(torch.float16)
    src, tgt = _images(1, 64, 9)
    with pytest.raises(ValueError, match=r"half precision"):
        m(src, tgt, POSE[0])


def test_deepcopy_keeps_its_own_hooks(extractor64):
    clone = copy.deepcopy(extractor64)
    src, tgt = _images(1, 64, 10)
    with torch.no_grad():
        assert torch.equal(clone(src, tgt, POSE[0]), extractor64(src, tgt, POSE[0]))
    assert clone._captured == {} and extractor64._captured == {}


def test_train_mode_is_ignored(extractor64):
    extractor64.train()
    assert not extractor64.training and not extractor64.unet.training


@pytest.mark.gpu
def test_fp16_on_cuda_is_close_to_fp32(tiny_folders):
    m32 = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64, device="cuda")
    m16 = Zero123Features.from_pretrained(
        tiny_folders["cc_projection"], image_size=64, device="cuda", torch_dtype=torch.float16
    )
    src, tgt = _images(2, 64, 11)
    with torch.no_grad():
        a, b = m32(src, tgt, POSE[:2]), m16(src, tgt, POSE[:2])
        cpu = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64)(src, tgt, POSE[:2])
    assert a.device == src.device and b.dtype == torch.float32
    assert torch.allclose(a, cpu, atol=1e-4)
    assert torch.allclose(a, b, atol=2e-2)


def test_random_checkpoint_loads_through_from_pretrained(tmp_path):
    from scenemetrics.prism import Zero123Features, random_checkpoint

    folder = random_checkpoint(tmp_path / "z")
    assert (folder / "clip_camera_projection" / "diffusion_pytorch_model.safetensors").is_file()
    model = Zero123Features.from_pretrained(folder)
    assert model.feature_dim == prism_tiny.TINY_FEATURE_DIM
    with pytest.raises(ValueError, match="`layout`"):
        random_checkpoint(tmp_path / "bad", layout="nope")
    with pytest.raises(ValueError, match="`size`"):
        random_checkpoint(tmp_path / "bad", size="huge")
