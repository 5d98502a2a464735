"""Gradients of the hard PuzzleSim map (spec sec. 6.5, 10.11): the argmax gather equals autograd through ``max``."""

from __future__ import annotations

import torch

from scenemetrics.puzzlesim import PuzzleSimMemory, best_match_similarity, load_backbone, puzzle_similarity_map

from .naive import NaivePuzzleSim, smooth_images

REFS = [smooth_images(2, 40, 48, seed=110), smooth_images(1, 48, 40, seed=111)]


def test_map_gradient_equals_autograd_through_a_naive_max(squeeze_ckpt):
    naive = NaivePuzzleSim("squeezenet1_1", squeeze_ckpt)
    weights = (0.5, 0.3, 0.2)
    image = smooth_images(1, 44, 52, seed=112)
    upstream = torch.rand(1, 44, 52, generator=torch.Generator().manual_seed(0))
    x = image.clone().requires_grad_(True)
    maps = puzzle_similarity_map(x, REFS, weights_path=squeeze_ckpt, layer_weights=weights)
    assert maps.requires_grad
    (maps * upstream).sum().backward()
    x64 = image.double().requires_grad_(True)
    expected = naive.similarity_map(x64[0], REFS, weights=weights)
    (expected * upstream[0].double()).sum().backward()
    torch.testing.assert_close(maps[0].detach().double(), expected.detach(), atol=1e-5, rtol=0)
    scale = float(x64.grad.abs().max())
    assert scale > 0
    torch.testing.assert_close(x.grad.double(), x64.grad, atol=1e-3 * scale, rtol=1e-3)
    # the values with gradients equal the values without
    with torch.no_grad():
        plain = puzzle_similarity_map(image, REFS, weights_path=squeeze_ckpt, layer_weights=weights)
    torch.testing.assert_close(maps.detach(), plain, atol=1e-6, rtol=0)


def test_batch_gradients_are_per_image_and_nothing_else_gets_gradients(squeeze_ckpt):
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    images = smooth_images(2, 40, 40, seed=113)
    x = images.clone().requires_grad_(True)
    memory.similarity_map(x).sum().backward()
    scale = float(x.grad.abs().max())
    for i in range(2):
        xi = images[i : i + 1].clone().requires_grad_(True)
        memory.similarity_map(xi).sum().backward()
        torch.testing.assert_close(x.grad[i : i + 1], xi.grad, atol=1e-5 * scale, rtol=0)  # fp32 rounding
    assert bool(torch.isfinite(x.grad).all()) and float(x.grad.abs().max()) > 0
    net = load_backbone("squeezenet1_1", weights_path=squeeze_ckpt)
    assert all(p.grad is None for p in net.parameters())
    assert all(not v.requires_grad for v in (memory.features(layer) for layer in memory.layers))
    # no graph without grad mode, or for inputs that do not require grad
    with torch.no_grad():
        assert not memory.similarity_map(x).requires_grad
    assert not memory.similarity_map(images).requires_grad


def test_raw_feature_gradient_equals_autograd_through_max():
    g = torch.Generator().manual_seed(1)
    feats = torch.rand(2, 8, 5, 4, generator=g, dtype=torch.float64)
    refs = [
        torch.rand(3, 8, 6, 6, generator=g, dtype=torch.float64),
        torch.rand(8, 2, 9, generator=g, dtype=torch.float64),
    ]
    a = feats.clone().requires_grad_(True)
    for chunk in (None, 3):
        a.grad = None
        out = best_match_similarity(a, refs, chunk_size=chunk)
        out.sum().backward()
        b = feats.clone().requires_grad_(True)
        q = torch.nn.functional.normalize(b.permute(0, 2, 3, 1).reshape(-1, 8), dim=1)
        r = torch.cat([refs[0].permute(0, 2, 3, 1).reshape(-1, 8), refs[1].permute(1, 2, 0).reshape(-1, 8)])
        expected = (q @ torch.nn.functional.normalize(r, dim=1).T).max(dim=1).values
        expected.sum().backward()
        torch.testing.assert_close(out.detach().flatten(), expected.detach(), atol=1e-12, rtol=0)
        torch.testing.assert_close(a.grad, b.grad, atol=1e-12, rtol=0)
