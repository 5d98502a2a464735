"""Soft relaxation (spec sec. 5, 10.10): ``soft_best_match_similarity`` and ``SoftPuzzleSimLoss``."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.losses import SoftPuzzleSimLoss
from scenemetrics.puzzlesim import (
    PuzzleSimMemory,
    best_match_similarity,
    load_backbone,
    puzzle_similarity,
    puzzle_similarity_map,
    soft_best_match_similarity,
)

from .naive import NaivePuzzleSim, smooth_images

REFS = [smooth_images(2, 40, 48, seed=100), smooth_images(1, 48, 40, seed=101)]
TEMPERATURES = (1e-4, 1e-3, 0.01, 0.05, 0.2, 1.0)


def naive_soft(features: torch.Tensor, references: torch.Tensor, temperature: float) -> torch.Tensor:
    """Materialised softmax-weighted mean of all similarities; autograd does the rest."""
    c = features.shape[-3]
    q = F.normalize(features.reshape(-1, c, *features.shape[-2:]).permute(0, 2, 3, 1).reshape(-1, c), dim=1)
    r = F.normalize(references.permute(0, 2, 3, 1).reshape(-1, c), dim=1)
    s = q @ r.T
    soft = (torch.softmax(s / temperature, dim=1) * s).sum(dim=1)
    return soft.view(*features.shape[:-3], *features.shape[-2:])


def raw_case(dtype=torch.float64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    feats = torch.rand(2, 6, 3, 4, generator=g, dtype=dtype) ** 2
    refs = torch.rand(3, 6, 4, 3, generator=g, dtype=dtype) ** 2
    return feats, refs


# ------------------------------------------------------------------------------------------------ raw features
@pytest.mark.parametrize("temperature", [0.5, 0.05, 0.01])
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_gradcheck_float64(temperature, chunk_size):
    g = torch.Generator().manual_seed(0)
    feats = (torch.rand(1, 4, 2, 3, generator=g, dtype=torch.float64) ** 2).requires_grad_(True)
    refs = torch.rand(2, 4, 3, 3, generator=g, dtype=torch.float64) ** 2
    assert torch.autograd.gradcheck(
        lambda f: soft_best_match_similarity(f, refs, temperature, chunk_size=chunk_size),
        (feats,),
        eps=1e-6,
        atol=1e-6,
        rtol=1e-5,
    )


@pytest.mark.parametrize("temperature", [1.0, 0.05, 0.002])
@pytest.mark.parametrize("chunk_size", [None, 7])
def test_values_and_gradients_equal_the_materialised_softmax(temperature, chunk_size):
    feats, refs = raw_case(seed=1)
    weights = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    a = feats.clone().requires_grad_(True)
    got = soft_best_match_similarity(a, refs, temperature, chunk_size=chunk_size)
    (got * weights).sum().backward()
    b = feats.clone().requires_grad_(True)
    expected = naive_soft(b, refs, temperature)
    (expected * weights).sum().backward()
    assert got.shape == (2, 3, 4) and got.dtype == torch.float64
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(a.grad, b.grad, atol=1e-10, rtol=1e-8)
    # a (C, h, w) input gives an (h, w) output
    torch.testing.assert_close(soft_best_match_similarity(feats[0], refs, temperature), expected[0].detach())


def test_soft_is_below_hard_monotone_and_converges_on_raw_features():
    feats, refs = raw_case(dtype=torch.float32, seed=3)
    hard = best_match_similarity(feats, refs, screening="off")
    softs = [soft_best_match_similarity(feats, refs, t) for t in TEMPERATURES]
    for soft in softs:
        assert bool((soft <= hard + 1e-6).all())
    for colder, warmer in itertools.pairwise(softs):
        assert bool((warmer <= colder + 1e-6).all())  # non-increasing in T
    k = refs.shape[0] * refs.shape[2] * refs.shape[3]
    for t, soft in zip(TEMPERATURES, softs, strict=True):
        assert float((hard - soft).max()) <= t * torch.log(torch.tensor(float(k))) + 1e-6  # worst-case gap
    assert float((hard - softs[0]).abs().max()) <= 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_chunked_gradients_equal_unchunked(dtype):
    g = torch.Generator().manual_seed(4)
    feats = torch.rand(2, 16, 5, 6, generator=g, dtype=dtype)
    refs = [torch.rand(3, 16, 7, 5, generator=g, dtype=dtype), torch.rand(16, 4, 4, generator=g, dtype=dtype)]
    grads = {}
    values = {}
    for chunk in (None, 1, 7, 100, 10_000):
        f = feats.clone().requires_grad_(True)
        out = soft_best_match_similarity(f, refs, 0.05, chunk_size=chunk)
        out.sum().backward()
        grads[chunk], values[chunk] = f.grad, out.detach()
    scale = float(grads[None].abs().max())
    assert scale > 0
    # float32: rounding only (the gradient's factor (s - soft) / T amplifies it by 1 / T); float64: identical
    tol = 5e-5 * scale if dtype == torch.float32 else 1e-13
    for chunk in (1, 7, 100, 10_000):
        torch.testing.assert_close(values[chunk], values[None], atol=1e-6 if dtype == torch.float32 else 1e-14, rtol=0)
        torch.testing.assert_close(grads[chunk], grads[None], atol=tol, rtol=0)


def test_stable_at_tiny_temperature():
    g = torch.Generator().manual_seed(5)
    feats = (torch.rand(1, 32, 6, 6, generator=g) ** 2).requires_grad_(True)
    refs = torch.rand(4, 32, 6, 6, generator=g) ** 2
    out = soft_best_match_similarity(feats, refs, 1e-4, chunk_size=13)
    out.sum().backward()
    out = out.detach()
    assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(feats.grad).all())
    hard = best_match_similarity(feats.detach(), refs)
    assert bool((out <= hard + 1e-6).all()) and float((hard - out).max()) < 1e-2


# ------------------------------------------------------------------------------------------------ loss module
@pytest.fixture(scope="module")
def ckpt(checkpoint):
    return checkpoint("squeezenet1_1")


@pytest.fixture(scope="module")
def memory(ckpt):
    return PuzzleSimMemory(REFS, weights_path=ckpt)


def test_soft_below_hard_per_layer_and_position(memory, ckpt):
    images = smooth_images(2, 44, 52, seed=102)
    net = load_backbone("squeezenet1_1", weights_path=ckpt)
    with torch.no_grad():
        feats = net(images, (2, 3, 4))
    for layer, f in feats.items():
        hard = best_match_similarity(f, memory.features(layer))
        torch.testing.assert_close(hard, memory.layer_maps(images)[layer], atol=1e-6, rtol=0)
        for t in (0.002, 0.05, 0.3):
            soft = soft_best_match_similarity(f, memory.features(layer), t)
            assert soft.shape == hard.shape
            assert bool((soft <= hard + 1e-6).all())


def test_loss_bounds_monotonicity_and_convergence(memory):
    images = smooth_images(2, 44, 52, seed=103)
    hard_map = memory.similarity_map(images)
    score = hard_map.mean(dim=(1, 2))
    loss_fn = SoftPuzzleSimLoss(memory, weights_path=memory.weights_path, reduction="none")
    maps, losses = [], []
    for t in (1.0, 0.2, 0.05, 0.01, 0.002, 1e-4):
        loss_fn.temperature = t
        with torch.no_grad():
            soft_map = loss_fn.soft_map(images)
            loss = loss_fn(images)
        assert soft_map.shape == hard_map.shape and loss.shape == (2,)
        assert bool((soft_map <= hard_map + 1e-6).all())
        assert bool((loss >= 1 - score - 1e-6).all())
        torch.testing.assert_close(loss, 1 - soft_map.mean(dim=(1, 2)), atol=1e-6, rtol=0)
        maps.append(soft_map)
        losses.append(loss)
    for warmer, colder in itertools.pairwise(maps):
        assert bool((warmer <= colder + 1e-6).all())  # soft is non-increasing in T
    gaps = [float((loss - (1 - score)).abs().max()) for loss in losses[2:]]  # T = 0.05, 0.01, 0.002, 1e-4
    assert all(a > b for a, b in itertools.pairwise(gaps)), gaps
    assert gaps[-1] <= 1e-3


def test_loss_matches_the_naive_float64_soft_pipeline_and_its_gradient(ckpt):
    naive = NaivePuzzleSim("squeezenet1_1", ckpt)
    image = smooth_images(1, 40, 44, seed=104)
    loss_fn = SoftPuzzleSimLoss(REFS, 0.03, weights_path=ckpt, layer_weights=(0.5, 0.3, 0.2))
    x = image.clone().requires_grad_(True)
    soft_map = loss_fn.soft_map(x)
    soft_map.sum().backward()
    x64 = image.double().requires_grad_(True)
    expected = naive.similarity_map(x64[0], REFS, weights=(0.5, 0.3, 0.2), temperature=0.03)
    expected.sum().backward()
    torch.testing.assert_close(soft_map[0].double(), expected.detach(), atol=1e-5, rtol=0)
    scale = float(x64.grad.abs().max())
    assert scale > 0
    torch.testing.assert_close(x.grad.double(), x64.grad, atol=1e-3 * scale, rtol=1e-3)


def test_loss_gradient_reaches_the_image_only(memory, ckpt):
    loss_fn = SoftPuzzleSimLoss(memory, weights_path=ckpt)
    assert list(loss_fn.parameters()) == [] and list(loss_fn.buffers()) == []
    assert loss_fn.state_dict() == {}
    x = smooth_images(2, 40, 40, seed=105).requires_grad_(True)
    loss = loss_fn(x)
    assert loss.ndim == 0 and loss.requires_grad
    loss.backward()
    assert bool(torch.isfinite(x.grad).all()) and float(x.grad.abs().max()) > 0
    net = load_backbone("squeezenet1_1", weights_path=ckpt)
    assert all(p.grad is None and not p.requires_grad for p in net.parameters())


def test_reductions_and_empty_batch(memory, ckpt):
    images = smooth_images(3, 40, 40, seed=106)
    per_image = SoftPuzzleSimLoss(memory, weights_path=ckpt, reduction="none")(images)
    assert per_image.shape == (3,)
    torch.testing.assert_close(SoftPuzzleSimLoss(memory, weights_path=ckpt)(images), per_image.mean())
    torch.testing.assert_close(SoftPuzzleSimLoss(memory, weights_path=ckpt, reduction="sum")(images), per_image.sum())
    # every image alone gives its own loss
    single = SoftPuzzleSimLoss(memory, weights_path=ckpt, reduction="none")
    for i in range(3):
        torch.testing.assert_close(single(images[i]), per_image[i : i + 1], atol=1e-6, rtol=0)
    empty = torch.zeros(0, 3, 40, 40)
    assert single.soft_map(empty).shape == (0, 40, 40)
    assert single(empty).shape == (0,)
    assert float(SoftPuzzleSimLoss(memory, weights_path=ckpt, reduction="sum")(empty)) == 0


def test_temperature_change_takes_effect_and_references_as_tensors(ckpt):
    image = smooth_images(1, 40, 44, seed=107)
    loss_fn = SoftPuzzleSimLoss(REFS, 0.05, weights_path=ckpt)
    warm = float(loss_fn(image))
    loss_fn.temperature = 0.005
    cold = float(loss_fn(image))
    assert cold < warm
    fresh = SoftPuzzleSimLoss(REFS, 0.005, weights_path=ckpt)
    assert float(fresh(image)) == pytest.approx(cold, abs=1e-6)


def test_gradient_descent_on_the_loss_raises_the_hard_score(ckpt):
    g = torch.Generator().manual_seed(0)
    refs = F.interpolate(torch.rand(3, 3, 6, 12, generator=g), size=(96, 192), mode="bicubic", align_corners=True)
    refs = refs.clamp(0, 1)
    start = refs[:1].clone()
    start[:, :, 32:64, 16:48] = torch.rand(1, 3, 32, 32, generator=g)
    loss_fn = SoftPuzzleSimLoss(refs, 0.02, weights_path=ckpt)
    x = start.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([x], lr=0.02)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = loss_fn(x)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            x.clamp_(0, 1)
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    before = float(puzzle_similarity(start, refs, weights_path=ckpt))
    after = float(puzzle_similarity(x.detach(), refs, weights_path=ckpt))
    assert after > before + 2e-4


def test_hard_and_soft_maps_agree_in_shape_with_the_functional_api(memory, ckpt):
    image = smooth_images(1, 50, 42, seed=108)
    loss_fn = SoftPuzzleSimLoss(REFS, 1e-4, weights_path=ckpt)
    hard = puzzle_similarity_map(image, REFS, weights_path=ckpt)
    soft = loss_fn.soft_map(image)
    assert soft.shape == hard.shape == (1, 50, 42)
    torch.testing.assert_close(soft, hard, atol=1e-3, rtol=0)


def test_soft_map_with_resize_and_a_layer_subset_of_a_memory(ckpt):
    memory = PuzzleSimMemory(REFS, layers=(1, 2, 3, 4), weights_path=ckpt, resize=(48, 56))
    image = smooth_images(1, 30, 70, seed=109)
    with pytest.raises(ValueError, match=r"`resize`"):
        SoftPuzzleSimLoss(memory, 1e-4, layers=(2, 4), layer_weights=(0.6, 0.4), weights_path=ckpt, resize=56)
    loss_fn = SoftPuzzleSimLoss(
        memory, 1e-4, layers=(2, 4), layer_weights=(0.6, 0.4), weights_path=ckpt, resize=(48, 56)
    )
    soft = loss_fn.soft_map(image)
    hard = memory.similarity_map(image, layers=(2, 4), layer_weights=(0.6, 0.4))
    assert soft.shape == hard.shape == (1, 30, 70)
    torch.testing.assert_close(soft, hard, atol=1e-3, rtol=0)
    assert bool((soft <= hard + 1e-6).all())
