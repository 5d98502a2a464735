"""Approximate search with faiss (spec sec. 6.6, 10.13): never above the exact map, close to it on average."""

from __future__ import annotations

import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSim, PuzzleSimMemory, puzzle_similarity_map
from scenemetrics.puzzlesim.approximate import faiss_max

from .naive import smooth_images

faiss = pytest.importorskip("faiss")

REFS = [smooth_images(4, 64, 72, seed=120), smooth_images(2, 56, 64, seed=121)]
IMAGES = smooth_images(2, 60, 64, seed=122)


@pytest.mark.parametrize(
    "options", [None, {"index": "HNSW32", "ef_search": 64}, {"index": "IVF8,Flat", "nprobe": 2}], ids=str
)
def test_faiss_map_is_below_and_close_to_the_exact_map(squeeze_ckpt, options):
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    exact = memory.similarity_map(IMAGES, screening="off")
    approx = memory.similarity_map(IMAGES, search="faiss", faiss_options=options)
    assert approx.shape == exact.shape and approx.dtype == torch.float32
    assert bool((approx <= exact + 1e-5).all())
    assert float((approx - exact).abs().mean()) <= 0.01
    # the index is built once and reused: a second call gives the same map
    torch.testing.assert_close(memory.similarity_map(IMAGES, search="faiss", faiss_options=options), approx)
    functional = puzzle_similarity_map(IMAGES, REFS, weights_path=squeeze_ckpt, search="faiss", faiss_options=options)
    assert bool((functional <= exact + 1e-5).all())


def test_faiss_values_are_true_similarities():
    g = torch.Generator().manual_seed(0)
    r = torch.nn.functional.normalize(torch.rand(3000, 32, generator=g), dim=1)
    q = torch.nn.functional.normalize(torch.rand(200, 32, generator=g), dim=1)
    exact = (q.double() @ r.double().T).max(dim=1).values
    values, index = faiss_max(q, r, None)
    assert values.shape == (200,) and values.dtype == torch.float32
    assert bool((values.double() <= exact + 1e-5).all())
    assert float((exact - values.double()).mean()) <= 0.01
    again, same_index = faiss_max(q, r, None, index)  # a given index is reused, not rebuilt
    assert same_index is index and torch.equal(again, values)
    # a reference vector queried for itself is found
    self_values, _ = faiss_max(r[:50], r, {"index": "HNSW32", "ef_search": 256}, None)
    torch.testing.assert_close(self_values, torch.ones(50), atol=1e-5, rtol=0)


def test_metric_with_faiss(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt, search="faiss")
    metric.update(IMAGES)
    exact = puzzle_similarity_map(IMAGES, REFS, weights_path=squeeze_ckpt).mean()
    assert float(metric.compute()) <= float(exact) + 1e-5
    assert float(metric.compute()) == pytest.approx(float(exact), abs=0.01)


def test_bad_faiss_options(squeeze_ckpt):
    memory = PuzzleSimMemory(REFS[1], weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=r"`faiss_options`.*unknown keys.*\['efsearch'\]"):
        memory.similarity_map(IMAGES, search="faiss", faiss_options={"efsearch": 3})
    with pytest.raises(ValueError, match=r"`faiss_options\['index'\]`.*HNSW.*IVF.*'PQ16'"):
        memory.similarity_map(IMAGES, search="faiss", faiss_options={"index": "PQ16"})
