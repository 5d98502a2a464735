"""The authors' ``test_puzzle_sim.py`` cases, re-written for our API (spec sec. 9 / 10.2)."""

from __future__ import annotations

import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSimMemory, best_match_similarity, puzzle_similarity_map

from .naive import smooth_images

# image sizes that every requested layer of the backbone accepts, kept small
SIZES = {"squeezenet1_1": (48, 56), "alexnet": (64, 72), "vgg16": (32, 40)}
LAYER_SETS = [(1, 2, 3), (2, 3, 4)]


@pytest.mark.parametrize("backbone", ["squeezenet1_1", "alexnet", "vgg16"])
def test_reference_scores_ones_output_shape_and_determinism(backbone, checkpoint):
    h, w = SIZES[backbone]
    refs = smooth_images(3, h, w, seed=20)
    ckpt = checkpoint(backbone)
    for layers in LAYER_SETS:
        weights = (0.67, 0.2, 0.13)
        maps = puzzle_similarity_map(refs[1:], refs, backbone=backbone, layers=layers, weights_path=ckpt)
        assert maps.shape == (2, h, w)
        torch.testing.assert_close(maps, torch.ones(2, h, w), atol=1e-5, rtol=0)
        # determinism: a second call (new memory) and repeated calls on one memory are bitwise equal
        other = smooth_images(1, h + 8, w - 8, seed=21)
        first = puzzle_similarity_map(other, refs, backbone=backbone, layers=layers, weights_path=ckpt)
        second = puzzle_similarity_map(other, refs, backbone=backbone, layers=layers, weights_path=ckpt)
        assert torch.equal(first, second)
        memory = PuzzleSimMemory(refs, backbone=backbone, layers=layers, weights_path=ckpt)
        a = memory.similarity_map(other, layer_weights=weights)
        b = memory.similarity_map(other, layer_weights=weights)
        assert torch.equal(a, b)
        assert torch.equal(a, first)
        assert float(first.min()) < 0.999  # a non-reference image does not score ones: the check above can fail


@pytest.mark.parametrize("backbone", ["squeeze", "alex", "vgg"])
def test_author_backbone_aliases(backbone, checkpoint):
    canonical = {"squeeze": "squeezenet1_1", "alex": "alexnet", "vgg": "vgg16"}[backbone]
    h, w = SIZES[canonical]
    refs = smooth_images(2, h, w, seed=22)
    ckpt = checkpoint(canonical)
    image = smooth_images(1, h, w, seed=23)
    alias = puzzle_similarity_map(image, refs, backbone=backbone, weights_path=ckpt)
    assert torch.equal(alias, puzzle_similarity_map(image, refs, backbone=canonical, weights_path=ckpt))
    assert PuzzleSimMemory(refs, backbone=backbone, weights_path=ckpt).backbone == canonical


CHUNKS = [1, 7, 64, 10_000, None]
SCREENING = ["on", "off", "auto"]


@pytest.mark.parametrize("screening", SCREENING)
@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("signed", [False, True], ids=["relu", "signed"])
def test_raw_features_test_is_one_of_the_references(chunk_size, screening, signed):
    g = torch.Generator().manual_seed(1)
    refs = torch.randn(4, 16, 5, 6, generator=g) if signed else torch.rand(4, 16, 5, 6, generator=g)
    out = best_match_similarity(refs[2], refs, chunk_size=chunk_size, screening=screening)
    assert out.shape == (5, 6)
    torch.testing.assert_close(out, torch.ones(5, 6), atol=1e-6, rtol=0)
    batch = best_match_similarity(refs[1:3] * 3.0, refs, chunk_size=chunk_size, screening=screening)
    assert batch.shape == (2, 5, 6)
    torch.testing.assert_close(batch, torch.ones(2, 5, 6), atol=1e-6, rtol=0)


@pytest.mark.parametrize("screening", SCREENING)
@pytest.mark.parametrize("chunk_size", [97, 10_000, None])
def test_raw_features_many_blocks_test_is_one_of_the_references(chunk_size, screening):
    """Enough reference vectors (> 4 screening blocks) for the screened search to cluster and skip blocks."""
    g = torch.Generator().manual_seed(2)
    refs = torch.rand(8, 32, 12, 12, generator=g)
    out = best_match_similarity(refs[5], refs, chunk_size=chunk_size, screening=screening)
    torch.testing.assert_close(out, torch.ones(12, 12), atol=1e-6, rtol=0)


@pytest.mark.parametrize("screening", SCREENING)
@pytest.mark.parametrize("chunk_size", [1, 5, None])
def test_raw_features_spatial_propagation(chunk_size, screening):
    """References all zero but one position; a test that is that vector everywhere matches it everywhere."""
    g = torch.Generator().manual_seed(3)
    vector = torch.rand(8, generator=g) + 0.1
    refs = torch.zeros(3, 8, 6, 7)
    refs[1, :, 2, 3] = vector
    test = vector.view(8, 1, 1).expand(8, 4, 5).clone()
    out = best_match_similarity(test, refs, chunk_size=chunk_size, screening=screening)
    torch.testing.assert_close(out, torch.ones(4, 5), atol=1e-6, rtol=0)
    # and a scaled copy of it: cosine similarity ignores the length
    out = best_match_similarity(test * 0.01, [refs[0], refs[1:]], chunk_size=chunk_size, screening=screening)
    torch.testing.assert_close(out, torch.ones(4, 5), atol=1e-6, rtol=0)
