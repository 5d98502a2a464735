"""The exact projection-bound search (``bound_max``): equal to the exhaustive search on random and adversarial
banks, its upper bound valid for every (query, block) pair, pruning effective where the data allow it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.puzzlesim import PuzzleSimMemory, best_match_similarity, bf16
from scenemetrics.puzzlesim import search as S
from scenemetrics.puzzlesim.functional import search_method

from .naive import smooth_images
from .test_search import DATASETS, exact_max, unit


def one_cluster(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Every reference within a few degrees of one direction: the bounds cannot separate the blocks."""
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(32, generator=g)
    return unit(base + 0.02 * torch.randn(300, 32, generator=g)), unit(base + 0.02 * torch.randn(2000, 32, generator=g))


def all_equal(seed: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """1100 copies of one vector (every similarity ties) and queries around it, one of them equal to it."""
    g = torch.Generator().manual_seed(seed)
    v = unit(torch.rand(1, 40, generator=g))
    q = unit(torch.cat([v, v + 0.1 * torch.rand(50, 40, generator=g)]))
    return q, v.expand(1100, 40).contiguous()


def ties(seed: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """The best vector of each query appears in many blocks (exact duplicates spread over the bank)."""
    g = torch.Generator().manual_seed(seed)
    r = unit(torch.rand(1500, 24, generator=g) ** 2)
    r = torch.cat([r, r[:300], r[:300]])[torch.randperm(2100, generator=g)]
    return r[:200].clone(), r


def clustered(seed: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-negative features in 40 well separated clusters, queries near members: pruning should work."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(40, 64, generator=g) ** 4
    r = unit(centres.repeat_interleave(100, 0) + 0.05 * torch.rand(4000, 64, generator=g))
    q = unit(r[torch.randint(0, 4000, (300,), generator=g)] + 0.02 * torch.rand(300, 64, generator=g))
    return q, r


BANKS = {**DATASETS, "one_cluster": one_cluster, "all_equal": all_equal, "ties": ties, "clustered": clustered}


@pytest.mark.parametrize("name", list(BANKS))
@pytest.mark.parametrize("chunk_size", [1 << 15, 1 << 22])
def test_bound_max_equals_the_exhaustive_search(name, chunk_size):
    q, r = BANKS[name]()
    index = S.BoundIndex.build(r)
    got, idx = S.bound_max(q, index, chunk_size, with_indices=True)
    expected = exact_max(q, r)
    torch.testing.assert_close(got.double(), expected, atol=1e-6, rtol=0)
    plain, _ = S.plain_max(q, r, 1 << 22)
    torch.testing.assert_close(got, plain, atol=1e-6, rtol=0)
    # the index names a row of index.vectors that attains the maximum
    torch.testing.assert_close((q.double() * index.vectors[idx].double()).sum(1), expected, atol=1e-6, rtol=0)
    values_only, none = S.bound_max(q, index, chunk_size)
    assert none is None and torch.equal(values_only, got)


@pytest.mark.parametrize("name", list(BANKS))
def test_upper_bound_holds_for_every_pair(name):
    q, r = BANKS[name]()
    index = S.BoundIndex.build(r)
    table = index.upper_bounds(q, 1 << 22)
    assert table.shape == (q.shape[0], index.num_blocks)
    sims = q.double() @ index.vectors[index.order].double().T
    pad = index.num_blocks * index.block - index.num
    sims = torch.cat([sims, sims[:, -1:].expand(-1, pad)], dim=1)  # padding repeats the last vector
    block_max = sims.view(q.shape[0], index.num_blocks, index.block).amax(dim=2)
    assert bool((table.double() >= block_max - 2e-6).all())  # fp32 rounding of the coarse GEMM only
    # and it is a true bound of the Cauchy-Schwarz form, never looser than the trivial bound 1 (+ rounding)
    assert float(table.max()) <= 1 + 1e-5


def test_index_structure():
    _, r = DATASETS["relu"]()
    index = S.BoundIndex.build(r, dims=8)
    k, c = r.shape
    assert index.vectors is r  # no copy of the bank
    assert torch.equal(torch.sort(index.order).values, torch.arange(k))  # a permutation
    assert index.basis.shape == (c, 8) and index.coarse.shape == (index.num_blocks * S.BLOCK, 9)
    torch.testing.assert_close(index.basis.T @ index.basis, torch.eye(8), atol=1e-5, rtol=0)
    ordered = r[index.order]
    proj = ordered @ index.basis
    torch.testing.assert_close(index.coarse[:k, :8], proj, atol=1e-6, rtol=0)
    res = (ordered - proj @ index.basis.T).norm(dim=1)
    torch.testing.assert_close(index.coarse[:k, 8], res, atol=1e-6, rtol=0)
    assert torch.equal(index.coarse[k:], index.coarse[k - 1 : k].expand(index.coarse.shape[0] - k, -1))


def test_pruning_happens_on_clustered_data_and_falls_back_on_one_cluster(monkeypatch):
    calls = []
    real = S.plain_max
    monkeypatch.setattr(S, "plain_max", lambda *a, **k: calls.append(1) or real(*a, **k))
    q, r = clustered()
    index = S.BoundIndex.build(r)
    table = index.upper_bounds(q, 1 << 22)
    best = exact_max(q, r).float()
    surviving = float((table >= best[:, None] - S.BOUND_SLACK).float().mean())
    assert surviving < 0.2, surviving  # most blocks are proven irrelevant
    S.bound_max(q, index, 1 << 22)
    assert calls == []
    q1, r1 = all_equal()
    got, _ = S.bound_max(q1, S.BoundIndex.build(r1), 1 << 22)
    assert calls == [1]  # every block survives: the exhaustive search is cheaper
    torch.testing.assert_close(got.double(), exact_max(q1, r1), atol=1e-6, rtol=0)


def test_zero_queries_and_zero_references():
    q, r = DATASETS["relu"]()
    q = q.clone()
    q[::7] = 0
    r = r.clone()
    r[::5] = 0
    got, idx = S.bound_max(q, S.BoundIndex.build(r), 4096, with_indices=True)
    torch.testing.assert_close(got.double(), exact_max(q, r), atol=1e-6, rtol=0)
    torch.testing.assert_close((q * r[idx]).sum(1), got, atol=1e-6, rtol=0)
    assert bool((got[::7] == 0).all())
    zero = S.BoundIndex.build(torch.zeros(1300, 48))
    assert torch.equal(S.bound_max(q, zero, 4096)[0], torch.zeros(q.shape[0]))
    assert S.bound_max(q[:0], zero, 4096)[0].shape == (0,)


def test_search_method_policy(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    big, small = 4 * S.BLOCK, 4 * S.BLOCK - 1
    for enabled in (False, True):
        monkeypatch.setattr(bf16, "bf16_decision", lambda mode=None, e=enabled: {"enabled": e})
        assert search_method("auto", cpu, big, False) == ("bf16" if enabled else "bound")
        assert search_method("auto", cpu, big, True) == "bound"  # gradients: the bound search gives the argmax
        assert search_method("auto", cpu, small, False) == "plain"  # too few vectors to prune
        assert search_method("auto", cuda, big, False) == "plain"  # GPUs: the chunked GEMM (fastest measured)
        assert search_method("auto", cuda, big, True) == "plain"
        assert search_method("on", cpu, big, False) == "bf16"
        assert search_method("off", cpu, big, False) == "plain"
        assert search_method("auto", cuda, big, False, "float16") == "plain"


def test_maps_and_gradients_through_the_bound_search(squeeze_ckpt, monkeypatch):
    monkeypatch.setenv("SCENEMETRICS_BF16", "off")
    memory = PuzzleSimMemory(smooth_images(6, 128, 128, seed=7), weights_path=squeeze_ckpt)
    assert memory.features(2).shape[0] >= 4 * S.BLOCK
    image = smooth_images(1, 80, 80, seed=8)
    calls = []
    real = S.bound_max
    monkeypatch.setattr(S, "bound_max", lambda *a, **k: calls.append(1) or real(*a, **k))
    auto = memory.similarity_map(image)
    assert calls  # the default CPU path
    plain = memory.similarity_map(image, screening="off")
    torch.testing.assert_close(auto, plain, atol=1e-6, rtol=0)
    grads = []
    for screening in ("auto", "off"):
        x = image.clone().requires_grad_(True)
        memory.similarity_map(x, screening=screening).sum().backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)
    feats, refs = torch.rand(8, 20, 20), torch.rand(3, 8, 20, 20)
    torch.testing.assert_close(
        best_match_similarity(feats, refs), best_match_similarity(feats, refs, screening="off"), atol=1e-6, rtol=0
    )
    f = feats.clone().requires_grad_(True)
    best_match_similarity(f, refs).sum().backward()
    f2 = feats.clone().requires_grad_(True)
    best_match_similarity(f2, refs, screening="off").sum().backward()
    torch.testing.assert_close(f.grad, f2.grad, atol=1e-5, rtol=1e-4)
    assert F.cosine_similarity(f.grad.flatten(), f2.grad.flatten(), dim=0) > 0.999
