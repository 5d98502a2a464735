"""Working memory of the PuzzleSim searches: ``chunk_size`` is a memory budget, and the searches honour it.

The peak is measured with :class:`TensorMemoryPeak`, a dispatch mode that sees every tensor an operation returns
and keeps the bytes of the storages allocated inside the block that are still alive (storages that existed before,
such as the reference bank and the queries, are not counted). It sees torch's tensors only, not a kernel's private
scratch space (e.g. a BLAS packing buffer of a few hundred KB), which the budgets below leave room for.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.puzzlesim import search as S

from .tracking import TensorMemoryPeak


def bank(k: int, c: int, seed: int, clusters: int, spread: float) -> torch.Tensor:
    """Clustered non-negative unit vectors (like CNN features)."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.rand(clusters, c, generator=g) ** 6
    rows = centres[torch.randint(0, clusters, (k,), generator=g)] + spread * torch.rand(k, c, generator=g)
    return F.normalize(rows, dim=1)


def measure(fn, *existing: torch.Tensor) -> tuple[TensorMemoryPeak, object]:
    mode = TensorMemoryPeak()
    mode.track_existing(*existing)
    with mode:
        out = fn()
    return mode, out


def test_the_tracker_sees_allocations_and_frees():
    a = torch.rand(1000, 100)

    def work():
        b = a * 2  # 400 KB, freed
        del b
        c = a @ a.T  # 4 MB, returned
        return c.sum()

    mode, _ = measure(work, a)
    assert 4_000_000 <= mode.peak <= 4_000_000 + 400_000 + 1024
    assert mode.largest == 4_000_000


M, K, C = 600, 8000, 32
BANKS = {"tight clusters": (400, 0.01), "broad clusters": (40, 0.05)}


def budget_bytes(chunk_size: int, m: int, c: int) -> int:
    """The documented bound: ``4 * max(chunk_size, 256 * C)`` bytes, at most twice over (one buffer of scores plus
    as much again for tables, pair lists and gathered rows), plus 64 bytes per query for per-query results."""
    return 2 * 4 * max(chunk_size, 256 * c) + 64 * m


@pytest.fixture(scope="module", params=list(BANKS))
def data(request):
    clusters, spread = BANKS[request.param]
    r = bank(K, C, 0, clusters, spread)
    q = bank(M, C, 1, clusters, spread)
    q[::97] = 0  # some all-zero queries
    return q, r, S.BoundIndex.build(r)


@pytest.mark.parametrize("chunk_size", [1 << 12, 1 << 16, 1 << 22])
@pytest.mark.parametrize("search", ["plain", "bound", "bound with indices"])
def test_hard_searches_stay_within_the_chunk_budget(data, search, chunk_size):
    q, r, index = data
    torch.set_num_threads(1)
    if search == "plain":
        mode, (vals, _) = measure(lambda: S.plain_max(q, r, chunk_size), q, r)
    else:
        mode, (vals, _) = measure(
            lambda: S.bound_max(q, index, chunk_size, with_indices=search != "bound"),
            q,
            r,
            index.coarse_t,
            index.order,
            index.basis,
        )
    assert mode.peak <= budget_bytes(chunk_size, M, C), (mode.peak, budget_bytes(chunk_size, M, C))
    exact = (q @ r.T).amax(dim=1)
    torch.testing.assert_close(vals, exact, atol=1e-6, rtol=0)


@pytest.mark.parametrize("chunk_size", [1 << 14, 1 << 20])
def test_soft_forward_and_backward_stay_within_the_chunk_budget(data, chunk_size):
    q, r, _ = data
    x = q.clone().requires_grad_(True)

    def forward_backward():
        out = S.gibbs_mean(x, r, 0.05, chunk_size)
        out.sum().backward()
        return out

    mode, _ = measure(forward_backward, q, r, x)
    gradient = 4 * M * C  # the (M, C) gradient the backward returns
    assert mode.peak <= budget_bytes(chunk_size, M, C) + gradient


def test_the_budget_is_what_a_large_search_uses():
    """The knob is not slack: the exhaustive search fills the budget it is given (one buffer of chunk_size scores)."""
    q, r = bank(M, C, 1, 40, 0.05), bank(K, C, 0, 40, 0.05)
    for chunk_size in (1 << 14, 1 << 20):
        mode, _ = measure(lambda c=chunk_size: S.plain_max(q, r, c), q, r)
        assert 0.9 * 4 * chunk_size <= mode.peak <= budget_bytes(chunk_size, M, C)
