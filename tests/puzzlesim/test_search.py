"""Exact search equivalence (spec sec. 6.2, 6.3, 10.5): chunk sizes, bf16 screening on normal and adversarial data,
zero vectors, the internals ``plain_max`` / ``screened_max`` / ``ScreenIndex``, and the chunk memory bound."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from scenemetrics.puzzlesim import PuzzleSimMemory, best_match_similarity, puzzle_similarity_map
from scenemetrics.puzzlesim import search as S
from scenemetrics.puzzlesim.functional import soft_best_match_similarity

from .naive import smooth_images


def exact_max(q: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Float64 max cosine of each row of q to any row of r (both normalised here, full matrix)."""
    qn = F.normalize(q.double(), dim=1, eps=1e-12)
    rn = F.normalize(r.double(), dim=1, eps=1e-12)
    return (qn @ rn.T).max(dim=1).values


def unit(x: torch.Tensor) -> torch.Tensor:
    return F.normalize(x, dim=1, eps=1e-12)


# ---------------------------------------------------------------------------------------------- data sets
def near_duplicates(seed: int = 0, c: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Adversarial references: thousands of vectors within ~1e-3 of each other (below bf16 resolution), so that
    almost every block may hold the max; plus unrelated vectors. Queries sit in the same tight cone."""
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(c, generator=g) + 0.5
    protos = base + 0.03 * torch.rand(12, c, generator=g)  # cosines ~0.9995 between prototypes
    copies = protos.repeat_interleave(250, dim=0)
    copies = copies * (1 + 1e-3 * torch.randn(copies.shape, generator=g))  # tiny perturbations
    exact_dups = copies[:400].clone()  # exact duplicates as well
    others = torch.rand(800, c, generator=g)
    refs = unit(torch.cat([copies, exact_dups, others])[torch.randperm(4200, generator=g)])
    queries = protos.repeat_interleave(30, dim=0) * (1 + 1e-3 * torch.randn(360, c, generator=g))
    queries = unit(torch.cat([queries, torch.rand(40, c, generator=g), copies[:20]]))
    return queries, refs


def dense_signed(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Signed vectors in few dimensions: the top similarities of each query are packed closely together."""
    g = torch.Generator().manual_seed(seed)
    return unit(torch.randn(500, 6, generator=g)), unit(torch.randn(6000, 6, generator=g))


def relu_features(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return unit(torch.rand(700, 48, generator=g) ** 3), unit(torch.rand(3000, 48, generator=g) ** 3)


DATASETS = {"near_duplicates": near_duplicates, "dense_signed": dense_signed, "relu": relu_features}


def blocks_near_best(q: torch.Tensor, index: S.ScreenIndex, within: float = 1e-3) -> torch.Tensor:
    """Per query: how many blocks of the index hold a vector within ``within`` of the query's best similarity."""
    sims = q.double() @ index.vectors.double().T
    best = sims.max(dim=1, keepdim=True).values
    k = sims.shape[1]
    pad = -(-k // index.block) * index.block - k
    close = F.pad(sims >= best - within, (0, pad)).view(q.shape[0], -1, index.block)
    return close.any(dim=2).sum(dim=1)


# ---------------------------------------------------------------------------------------------- screened search
@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("chunk_size", [256, 5000, 1 << 22])
def test_screened_max_is_exact(name, chunk_size):
    q, r = DATASETS[name]()
    index = S.ScreenIndex.build(r)
    got = S.screened_max(q, index, chunk_size)
    assert got.shape == (q.shape[0],) and got.dtype == torch.float32
    expected = exact_max(q, r)
    torch.testing.assert_close(got.double(), expected, atol=1e-6, rtol=0)
    plain, _ = S.plain_max(q, r, chunk_size)
    torch.testing.assert_close(got, plain, atol=1e-6, rtol=0)


def test_adversarial_data_makes_many_blocks_survive():
    """The adversarial set really is adversarial: most queries have near-maximal vectors in many blocks."""
    q, r = near_duplicates()
    index = S.ScreenIndex.build(r)
    counts = blocks_near_best(q, index)
    assert index.num_blocks >= 16
    assert float(counts.float().median()) >= 4


@pytest.mark.parametrize("name", list(DATASETS))
def test_best_match_similarity_screening_on_equals_off(name):
    q, r = DATASETS[name]()
    # as feature maps: (C, h, w) queries against (N, C, h', w') references
    c = q.shape[1]
    feats = q[:396].reshape(18, 22, c).permute(2, 0, 1)
    refs = r[:2800].reshape(4, 7, 100, c).permute(0, 3, 1, 2)
    on = best_match_similarity(feats, refs, screening="on")
    off = best_match_similarity(feats, refs, screening="off")
    assert on.shape == off.shape == (18, 22)
    torch.testing.assert_close(on, off, atol=1e-6, rtol=0)
    expected = exact_max(q[:396], r[:2800]).view(18, 22)
    torch.testing.assert_close(on.double(), expected, atol=1e-6, rtol=0)
    vectors = r[:2800]
    # (K, C) vectors are accepted as references too
    torch.testing.assert_close(best_match_similarity(feats, vectors, screening="on"), on, atol=1e-6, rtol=0)


def test_screen_index_layout():
    g = torch.Generator().manual_seed(3)
    r = unit(torch.rand(1300, 20, generator=g))
    index = S.ScreenIndex.build(r)
    k, c, b = 1300, 20, index.block
    assert index.num == k and b == S.BLOCK == 256
    assert index.aug.dtype == torch.bfloat16 and index.aug.shape[0] % b == 0 and index.aug.shape[0] >= k
    assert index.num_blocks == index.aug.shape[0] // b == 6
    # the vectors are the same set, in another (cluster) order
    proj = torch.randn(c, generator=g, dtype=torch.float64)
    a_sorted = r[torch.argsort(r.double() @ proj)]
    b_sorted = index.vectors[torch.argsort(index.vectors.double() @ proj)]
    assert torch.equal(a_sorted, b_sorted)
    # augmented rows [bf16(r), -SHIFT, 0...]; padding rows [0, -4, 0...]. SHIFT is exact in bf16 and larger than
    # any bf16 dot product of two (rounded) unit vectors, so every coarse score is strictly negative.
    assert float(torch.tensor(S.SHIFT).to(torch.bfloat16)) == S.SHIFT
    assert S.SHIFT > (1 + 2**-8) ** 2
    aug = index.aug.float()
    assert torch.equal(index.aug[:k, :c], index.vectors.to(torch.bfloat16))
    assert bool((aug[:k, c] == -S.SHIFT).all()) and bool((aug[k:, c] == -4).all())
    assert bool((aug[k:, :c] == 0).all()) and bool((aug[:, c + 1 :] == 0).all())
    rt = index.vectors.to(torch.bfloat16).double()
    assert index.rho_lo == pytest.approx(float((index.vectors.double() - rt).norm(dim=1).max()), rel=1e-12)
    assert index.rho_hi == pytest.approx(float(rt.norm(dim=1).max()), rel=1e-12)
    assert 0 < index.rho_lo < 2**-7 and index.rho_hi == pytest.approx(1, abs=1e-2)


def test_screened_max_zero_queries_and_zero_references():
    g = torch.Generator().manual_seed(4)
    r = unit(torch.rand(1100, 16, generator=g))
    r[::7] = 0  # zero reference vectors stay zero: similarity 0 to everything
    q = unit(torch.rand(90, 16, generator=g))
    q[::3] = 0
    index = S.ScreenIndex.build(r)
    got = S.screened_max(q, index, 4096)
    assert bool((got[::3] == 0).all())
    torch.testing.assert_close(got.double(), exact_max(q, r), atol=1e-6, rtol=0)
    # all-zero references: every similarity is 0
    zero_index = S.ScreenIndex.build(torch.zeros(600, 16))
    assert torch.equal(S.screened_max(q, zero_index, 4096), torch.zeros(90))
    assert S.screened_max(q[:0], index, 4096).shape == (0,)


@pytest.mark.parametrize("screening", ["on", "off", "auto"])
def test_zero_feature_vectors_give_zero(screening):
    g = torch.Generator().manual_seed(5)
    feats = torch.rand(2, 16, 6, 7, generator=g)
    feats[0, :, 2, 3] = 0
    feats[1, :, :, 0] = 0
    refs = torch.rand(3, 16, 9, 9, generator=g)
    refs[:, :, 4:, :] = 0
    out = best_match_similarity(feats, refs, screening=screening)
    assert out[0, 2, 3] == 0 and bool((out[1, :, 0] == 0).all())
    assert bool(torch.isfinite(out).all()) and float(out[0, 0, 0]) > 0.5
    q = feats.permute(0, 2, 3, 1).reshape(-1, 16)
    torch.testing.assert_close(
        out.double().flatten(), exact_max(q, refs.permute(0, 2, 3, 1).reshape(-1, 16)), atol=1e-6, rtol=0
    )
    assert torch.equal(
        best_match_similarity(feats, torch.zeros(2, 16, 3, 3), screening=screening), torch.zeros(2, 6, 7)
    )


# ---------------------------------------------------------------------------------------------- plain search
@pytest.mark.parametrize("chunk_size", [1, 3, 97, 1000, 10_000, 1 << 22])
def test_plain_max_values_and_indices(chunk_size):
    g = torch.Generator().manual_seed(6)
    q = unit(torch.randn(30, 12, generator=g))
    r = unit(torch.randn(200, 12, generator=g))
    values, idx = S.plain_max(q, r, chunk_size, with_indices=True)
    torch.testing.assert_close(values.double(), exact_max(q, r), atol=1e-6, rtol=0)
    assert idx.dtype == torch.long and idx.shape == (30,)
    torch.testing.assert_close((q * r[idx]).sum(dim=1), values, atol=1e-6, rtol=0)  # the index attains the max
    values_only, none = S.plain_max(q, r, chunk_size)
    assert none is None and torch.equal(values_only, values)
    empty, empty_idx = S.plain_max(q[:0], r, chunk_size, with_indices=True)
    assert empty.shape == empty_idx.shape == (0,)


def test_plain_max_float64():
    g = torch.Generator().manual_seed(7)
    q = unit(torch.randn(50, 5, generator=g, dtype=torch.float64))
    r = unit(torch.randn(300, 5, generator=g, dtype=torch.float64))
    values, _ = S.plain_max(q, r, 64)
    assert values.dtype == torch.float64
    torch.testing.assert_close(values, exact_max(q, r), atol=1e-12, rtol=0)


# ---------------------------------------------------------------------------------------------- pipeline level
def test_chunk_sizes_and_screening_agree_on_maps(squeeze_ckpt):
    refs = smooth_images(6, 112, 144, seed=60)  # > 1024 layer-2 vectors: the screened search clusters
    images = smooth_images(2, 64, 72, seed=61)
    memory = PuzzleSimMemory(refs, weights_path=squeeze_ckpt)
    assert memory.features(2).shape[0] > 4 * S.BLOCK
    before = memory.features(2).clone()
    base = memory.similarity_map(images, screening="off")
    for screening in ("on", "off", "auto"):
        for chunk in (97, 10_000, None):
            got = memory.similarity_map(images, chunk_size=chunk, screening=screening)
            torch.testing.assert_close(got, base, atol=1e-6, rtol=0)
    for layer, value in memory.layer_maps(images, screening="on", chunk_size=97).items():
        torch.testing.assert_close(value, memory.layer_maps(images, screening="off")[layer], atol=1e-6, rtol=0)
    # the screened search may re-order the stored vectors, never change them
    after = memory.features(2)
    proj = torch.randn(after.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.equal(before[torch.argsort(before.double() @ proj)], after[torch.argsort(after.double() @ proj)])
    # the functional API gives the same
    for screening in ("on", "off"):
        torch.testing.assert_close(
            puzzle_similarity_map(images, refs, weights_path=squeeze_ckpt, screening=screening, chunk_size=5000),
            base,
            atol=1e-6,
            rtol=0,
        )


def test_chunk_size_one_on_maps(squeeze_ckpt):
    memory = PuzzleSimMemory(smooth_images(2, 48, 48, seed=62), weights_path=squeeze_ckpt)
    image = smooth_images(1, 40, 40, seed=63)
    base = memory.similarity_map(image, screening="off")
    for screening in ("on", "off"):
        torch.testing.assert_close(
            memory.similarity_map(image, chunk_size=1, screening=screening), base, atol=1e-6, rtol=0
        )


# ---------------------------------------------------------------------------------------------- helpers
@pytest.mark.bf16_probe
def test_bf16_probe_is_cached_and_complete():
    probe = S.bf16_probe()
    assert S.bf16_probe() is probe
    assert set(probe) >= {"speedup", "max_error", "fast", "accurate", "enabled"}
    assert probe["fast"] == (probe["speedup"] >= 1.5)
    assert probe["accurate"] == (probe["max_error"] <= 2.0**-6)
    assert probe["enabled"] == (probe["fast"] and probe["accurate"])


def test_default_chunk_size_and_fp32_matmul_guard():
    assert S.default_chunk_size("cpu") == 2**22
    assert S.default_chunk_size(torch.device("cuda", 0)) == 2**26
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        with S.full_fp32_matmul():
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "medium"
        with pytest.raises(RuntimeError, match="boom"), S.full_fp32_matmul():
            raise RuntimeError("boom")
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(old)


class _LargestTensor(TorchFunctionMode):
    """Records the largest tensor any torch function returns while active."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("chunk_size", [1000, 5000])
def test_search_memory_is_bounded_by_the_chunk_budget(chunk_size):
    """No M x K similarity matrix on the plain search or the soft search (forward and backward)."""
    g = torch.Generator().manual_seed(8)
    m, k, c = 100, 3000, 4
    q = unit(torch.rand(m, c, generator=g))
    r = unit(torch.rand(k, c, generator=g))
    bound = max(chunk_size, k * c, m * c)
    assert bound * 20 < m * k
    with _LargestTensor() as mode:
        S.plain_max(q, r, chunk_size, with_indices=True)
    assert mode.largest <= bound
    feats = q.T.reshape(c, 10, 10).clone().requires_grad_(True)
    with _LargestTensor() as mode:
        soft = soft_best_match_similarity(feats, r, 0.05, chunk_size=chunk_size)
        soft.sum().backward()
    assert feats.grad is not None and mode.largest <= bound
