"""Exact maximum-cosine search of PuzzleSim: the plain chunked search, the projection-bound search (CPU default)
and the bf16-screened search (CPUs with fast bf16).

All functions take **unit** query rows ``Q`` (``M x C``) and unit reference rows ``R`` (``K x C``) and return, per
query, ``max_k <q, r_k>`` without ever materialising the ``M x K`` similarity matrix. :func:`plain_max` is the
exhaustive reference; the others prove, block by block, that most reference vectors cannot hold the maximum and
search only the rest, so they return the same values up to fp32 rounding (tested against the exhaustive search on
random and adversarial banks). :func:`gibbs_mean` is the soft loss's differentiable counterpart (a softmax-weighted
mean instead of the max), streamed over the same kind of tiles.

``chunk_size`` is the memory budget of every search here, in float32 scores: the exhaustive and projection-bound
searches and both passes of :func:`gibbs_mean` hold at most ``2 * 4 * max(chunk_size, 256 * C)`` bytes of working
memory plus 64 bytes per query, besides the reference vectors, their index, the queries and the results.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "BLOCK",
    "BoundIndex",
    "GibbsMean",
    "ScreenIndex",
    "bound_max",
    "cluster_order",
    "default_chunk_size",
    "full_fp32_matmul",
    "gibbs_mean",
    "plain_max",
    "principal_basis",
    "screened_max",
]

BLOCK = 256
"""Reference vectors per block of the screened and bound searches."""

SHIFT = 1.0 + 2.0**-6
"""Subtracted from every coarse similarity (exactly representable in bf16); see :class:`ScreenIndex`."""

_CPU_CHUNK = 1 << 22
_CUDA_CHUNK = 1 << 26


def default_chunk_size(device: torch.device | str) -> int:
    """Similarities materialised at once when ``chunk_size=None``: 2^22 on CPU (16 MB fp32), 2^26 on CUDA."""
    return _CUDA_CHUNK if torch.device(device).type == "cuda" else _CPU_CHUNK


@contextlib.contextmanager
def full_fp32_matmul() -> Iterator[None]:
    """Force IEEE fp32 matmuls (no TF32 on CUDA, no bf16 inside oneDNN on CPU) and restore the user's setting."""
    old = torch.get_float32_matmul_precision()
    if old == "highest":
        yield
        return
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(old)


def _tiles(m: int, k: int, chunk_size: int) -> tuple[int, int]:
    """Rows (<= m) and columns (<= k) per tile so that rows * cols <= chunk_size, rows first."""
    rows = max(1, min(m, chunk_size))
    cols = max(1, min(k, chunk_size // rows))
    return rows, cols


def plain_max(q: Tensor, r: Tensor, chunk_size: int, *, with_indices: bool = False) -> tuple[Tensor, Tensor | None]:
    """Exact ``max_k <q_i, r_k>`` by chunked GEMM and a running max (the exhaustive reference search).

    Args:
        q: ``(M, C)`` query rows.
        r: ``(K, C)`` reference rows, ``K >= 1``.
        chunk_size: maximum number of similarities materialised at once.
        with_indices: also return the argmax ``k`` per query (first maximal index within a chunk; across chunks
            the earliest chunk wins ties).

    Returns:
        ``(values (M,), indices (M,) or None)``.
    """
    m, k = q.shape[0], r.shape[0]
    best = torch.full((m,), -math.inf, dtype=q.dtype, device=q.device)
    idx = torch.zeros(m, dtype=torch.long, device=q.device) if with_indices else None
    if m == 0:
        return best, idx
    rows, cols = _tiles(m, k, chunk_size)
    buf = q.new_empty(rows * cols)  # one similarity buffer, reused: the chunk budget
    with torch.no_grad(), full_fp32_matmul():
        for r0 in range(0, m, rows):
            qs = q[r0 : r0 + rows]
            b = best[r0 : r0 + rows]
            for k0 in range(0, k, cols):
                rc = r[k0 : k0 + cols]
                sim = torch.mm(qs, rc.T, out=buf[: qs.shape[0] * rc.shape[0]].view(qs.shape[0], rc.shape[0]))
                if idx is not None:
                    v, i = sim.max(dim=1)
                    better = v > b
                    b.copy_(torch.where(better, v, b))
                    ib = idx[r0 : r0 + rows]
                    ib.copy_(torch.where(better, i + k0, ib))
                else:
                    torch.maximum(b, sim.amax(dim=1), out=b)
    return best, idx


@dataclass
class ScreenIndex:
    """The cached bf16 screening copy of one layer's reference vectors.

    The reference vectors are first put in a cluster order (a few rounds of spherical k-means, deterministic):
    the max is order-independent, and blocks of similar vectors make the block maxima discriminative, so far
    fewer (query, block) pairs survive the screen when many references are near-duplicates of each other
    (overlapping training views, flat regions).

    The coarse GEMM returns ``s^ - SHIFT`` instead of ``s^`` (one extra row of ``-SHIFT``): bf16 rounds the output
    relative to its magnitude, and values near the max are near 1, so the shifted values are small and round
    finely. ``SHIFT = 1 + 2^-6`` (1 plus a margin) makes every output strictly negative, since
    ``s^ <= (1 + 2^-8)^2 < SHIFT``; then the bf16 bit patterns read as int16 are in reverse order, and the block max
    is a fast integer ``amin`` (a bf16 ``amax`` is several times slower on CPUs).

    Attributes:
        vectors: ``(K, C)`` float32 unit reference rows in cluster order: the exact copy that is rescored (callers
            may adopt it in place of their own copy: same set of vectors, other order).
        aug: ``(K_pad, C_pad)`` bf16: rows ``[bf16(vectors[k]), -SHIFT, 0...]``; padding rows ``[0, -4, 0...]``
            can never survive the screen.
        rho_lo: ``max_k ||r_k - float(bf16(r_k))||`` (float64).
        rho_hi: ``max_k ||bf16(r_k)||`` (float64).
        num: ``K`` (real reference vectors).
        block: vectors per block.
    """

    vectors: Tensor
    aug: Tensor
    rho_lo: float
    rho_hi: float
    num: int
    block: int = BLOCK

    @classmethod
    def build(cls, r: Tensor, block: int = BLOCK, *, reorder: bool = True) -> ScreenIndex:
        """Index ``(K, C)`` float32 unit rows ``r`` (re-ordered by cluster unless ``reorder=False``)."""
        k, c = r.shape
        if reorder:
            r = r[cluster_order(r, max(1, k // (2 * block)))].contiguous()
        k_pad = -(-k // block) * block
        c_pad = c + 1 + (c + 1) % 2  # even inner dimension suits the bf16 pair-dot kernels
        rt = r.to(torch.bfloat16)
        r64, rt64 = r.double(), rt.double()
        rho_lo = float((r64 - rt64).norm(dim=1).max())
        rho_hi = float(rt64.norm(dim=1).max())
        aug = torch.zeros(k_pad, c_pad, dtype=torch.bfloat16, device=r.device)
        aug[:k, :c] = rt
        aug[:k, c] = -SHIFT
        aug[k:, c] = -4.0
        return cls(vectors=r, aug=aug, rho_lo=rho_lo, rho_hi=rho_hi, num=k, block=block)

    @property
    def num_blocks(self) -> int:
        return self.aug.shape[0] // self.block

    @property
    def nbytes(self) -> int:
        return self.aug.numel() * self.aug.element_size()


def principal_basis(r: Tensor, dims: int, sample: int = 16384) -> Tensor:
    """``(C, d)`` fp32 orthonormal columns spanning the top-``d`` principal directions of the rows of ``r``.

    Uncentred (the eigenvectors of ``r^T r``, what inner products see), from at most ``sample`` evenly spaced rows,
    eigen-decomposed in float64. Any orthonormal basis keeps the bounds that use it valid; a good one makes them tight.
    """
    k, c = r.shape
    d = max(1, min(dims, c))
    rows = r[:: max(1, k // sample)]
    gram = torch.zeros(c, c, dtype=torch.float64, device=r.device)
    for i in range(0, rows.shape[0], 2048):  # float64 in slices: no float64 copy of the sample
        part = rows[i : i + 2048].double()
        gram.addmm_(part.T, part)
    _, vecs = torch.linalg.eigh(gram)
    return vecs[:, -d:].flip(1).to(torch.float32).contiguous()


def cluster_order(r: Tensor, clusters: int, rounds: int = 6, coords: Tensor | None = None) -> Tensor:
    """A permutation of the rows of ``r`` grouping similar vectors: sort by spherical k-means label.

    The k-means runs in fp32 on ``coords`` (default: the rows projected on their top-32 principal directions, which
    hold nearly all of the energy of CNN feature vectors), so it costs a small fraction of one exhaustive search.
    """
    k = r.shape[0]
    if clusters < 2 or k < 4 * BLOCK:
        return torch.arange(k, device=r.device)
    x = r @ principal_basis(r, 32) if coords is None else coords
    centers = F.normalize(x[torch.linspace(0, k - 1, clusters, device=r.device).round().long()], dim=1)
    step = max(1, (1 << 22) // clusters)
    labels = torch.empty(k, dtype=torch.long, device=r.device)
    with full_fp32_matmul():
        for _ in range(rounds):
            ct = centers.T
            for i in range(0, k, step):
                labels[i : i + step] = (x[i : i + step] @ ct).argmax(dim=1)
            sums = torch.zeros_like(centers).index_add_(0, labels, x)
            counts = torch.bincount(labels, minlength=clusters)
            # an emptied cluster keeps its old centre
            centers = torch.where((counts > 0).unsqueeze(1), F.normalize(sums, dim=1), centers)
    return torch.argsort(labels, stable=True)


def screened_max(q: Tensor, index: ScreenIndex, chunk_size: int) -> Tensor:
    """Exact ``max_k <q_i, r_k>`` on CPU: a bf16 pass proves which blocks cannot hold the max.

    Args:
        q: ``(M, C)`` float32 unit (or zero) query rows.
        index: :class:`ScreenIndex` of the reference rows.
        chunk_size: maximum number of coarse similarities materialised at once (at least one block's worth).

    Returns:
        ``(M,)`` float32, equal to :func:`plain_max` up to fp32 rounding.
    """
    m, c = q.shape
    best = torch.zeros(m, dtype=torch.float32, device=q.device)
    if m == 0:
        return best
    b = index.block
    with torch.no_grad(), full_fp32_matmul():
        # Zero queries (all-zero feature vectors) have similarity 0 to everything: exact without any search, and
        # they would otherwise make every block survive.
        live = (q != 0).any(dim=1)
        if not bool(live.all()):
            q_live = q[live]
            if q_live.shape[0]:
                best[live] = screened_max(q_live, index, chunk_size)
            return best

        # step 2: per-query error bound of the bf16 dot products
        qt = q.to(torch.bfloat16)
        q64, qt64 = q.double(), qt.double()
        dq = (q64 - qt64).norm(dim=1)
        err = (qt64.norm(dim=1) * index.rho_lo + dq * index.rho_hi + dq * index.rho_lo + 1e-4).float()
        q_aug = torch.zeros(m, index.aug.shape[1], dtype=torch.bfloat16, device=q.device)
        q_aug[:, :c] = qt
        q_aug[:, c] = 1.0
        q_aug_t = q_aug.T

        # step 3: coarse pass, table[j, i] = bf16 max over block j of (<q~_i, r~_k> - SHIFT) < 0. Tiles of about
        # 2^20 scores (2 MB of bf16) keep each GEMM output in cache for the block max that reads it back; for
        # negative bf16 values the int16 view orders in reverse, so the max is an integer min.
        nb = index.num_blocks
        tile = min(chunk_size, _COARSE_TILE)
        cols = min(m, max(1, tile // _COARSE_ROWS))
        rows = max(b, (tile // cols) // b * b)
        table = torch.empty(nb, m, dtype=torch.int16, device=q.device)
        for k0 in range(0, nb * b, rows):
            k1 = min(k0 + rows, nb * b)
            a = index.aug[k0:k1]
            for i0 in range(0, m, cols):
                y = (a @ q_aug_t[:, i0 : i0 + cols]).view(torch.int16)  # (k1 - k0, cols): s^ - SHIFT as bf16 bits
                table[k0 // b : k1 // b, i0 : i0 + cols] = y.view(-1, b, y.shape[1]).amin(dim=1)
        table = table.view(torch.bfloat16)

        # step 4: lower bound L(q) = exact max over the best-looking block
        arange = torch.arange(m, device=q.device)
        jstar = table.argmax(dim=0)
        r = index.vectors
        lower = _exact_block_max(q, r, jstar, arange, b)

        # step 5: rescore every other block that may hold a larger similarity
        thresh = (lower - SHIFT - err) * (1.0 + 2.0**-7)
        surv = table.float() >= thresh.unsqueeze(0)
        surv[jstar, arange] = False
        best = lower
        pairs = surv.nonzero()  # (P, 2) = (block, query), sorted by block
        if pairs.shape[0]:
            cand = _exact_block_max(q, r, pairs[:, 0], pairs[:, 1], b)
            best = best.scatter_reduce(0, pairs[:, 1], cand, reduce="amax")
    return best


_COARSE_TILE = 1 << 20
_COARSE_ROWS = 4096


def _exact_block_max(q: Tensor, r: Tensor, blocks: Tensor, queries: Tensor, b: int) -> Tensor:
    """fp32 ``max_{k in block blocks[p]} <q[queries[p]], r_k>`` for every pair ``p`` (grouped by block)."""
    order = torch.argsort(blocks, stable=True)
    blocks_s, queries_s = blocks[order], queries[order]
    uniq, counts = torch.unique_consecutive(blocks_s, return_counts=True)
    out_s = torch.empty(queries_s.shape[0], dtype=torch.float32, device=q.device)
    start = 0
    for j, n in zip(uniq.tolist(), counts.tolist(), strict=True):
        sims = q.index_select(0, queries_s[start : start + n]) @ r[j * b : (j + 1) * b].T
        out_s[start : start + n] = sims.amax(dim=1)
        start += n
    out = torch.empty_like(out_s)
    out[order] = out_s
    return out


# ------------------------------------------------------------------------------ exact projection-bound search
BOUND_DIMS = 24
"""Principal directions of the coarse pass of :func:`bound_max`."""

BOUND_SLACK = 1e-4
"""Margin added to every coarse upper bound: covers fp32 rounding of the bound and of the exact rescoring."""

_BOUND_TILE = 1 << 20
_BOUND_COLS = 16
_BOUND_FALLBACK = 0.5
_BOUND_MIN_GROUP = 32


@dataclass
class BoundIndex:
    """Cached data of the exact projection-bound search (:func:`bound_max`) for one layer's reference vectors.

    With an orthonormal basis ``P`` (``C x d``) of the references' top principal directions, every unit pair obeys
    ``<q, r> = <P^T q, P^T r> + <q_res, r_res> <= <P^T q, P^T r> + ||q_res|| ||r_res||`` (Cauchy-Schwarz on the
    residuals ``x_res = x - P P^T x``). Augmenting both sides with their residual norm turns that upper bound into
    one GEMM of inner dimension ``d + 1`` instead of ``C``. Blocks are runs of ``block`` vectors in cluster order
    (spherical k-means), so that a block's vectors are alike and its best bound is informative.

    Attributes:
        vectors: ``(K, C)`` float32 unit reference rows, in the caller's order (not copied).
        order: ``(K,)`` cluster order: block ``j`` holds ``vectors[order[j*block : (j+1)*block]]``.
        basis: ``(C, d)`` float32 orthonormal columns.
        coarse_t: ``(d + 1, K_pad)`` float32 columns ``[P^T r, ||r_res||]`` in cluster order, padded to whole blocks
            by repeating the last one (a repeated vector changes no maximum).
        num: ``K``.
        block: vectors per block.

    Extra memory: ``4 (d + 1) K`` bytes plus ``8 K`` for the order (layer 2 of 34 references of 416x628: 18 MB).
    """

    vectors: Tensor
    order: Tensor
    basis: Tensor
    coarse_t: Tensor
    num: int
    block: int = BLOCK

    @classmethod
    def build(cls, r: Tensor, dims: int = BOUND_DIMS, block: int = BLOCK) -> BoundIndex:
        """Index ``(K, C)`` float32 unit rows ``r`` (kept by reference; the cluster order is stored separately)."""
        k = r.shape[0]
        with torch.no_grad(), full_fp32_matmul():
            basis = principal_basis(r, dims)
            proj = r @ basis
            res = torch.empty(k, 1, dtype=r.dtype, device=r.device)
            step = max(1, (1 << 22) // max(1, r.shape[1]))
            for i in range(0, k, step):  # in slices: no K x C temporary
                torch.norm(r[i : i + step] - proj[i : i + step] @ basis.T, dim=1, keepdim=True, out=res[i : i + step])
            order = cluster_order(r, max(1, k // (2 * block)), coords=proj)
            k_pad = -(-k // block) * block
            # written in place, transposed, in cluster order: no concatenated or permuted copies
            coarse_t = torch.empty(proj.shape[1] + 1, k_pad, dtype=r.dtype, device=r.device)
            torch.index_select(proj, 0, order, out=coarse_t[:-1, :k].T)
            torch.index_select(res, 0, order, out=coarse_t[-1:, :k].T)
            if k_pad > k:
                coarse_t[:, k:] = coarse_t[:, k - 1 : k]
        return cls(vectors=r, order=order, basis=basis, coarse_t=coarse_t, num=k, block=block)

    @property
    def coarse(self) -> Tensor:
        """``(K_pad, d + 1)`` view of :attr:`coarse_t`."""
        return self.coarse_t.T

    @property
    def num_blocks(self) -> int:
        return self.coarse_t.shape[1] // self.block

    @property
    def nbytes(self) -> int:
        return (self.coarse_t.numel() + self.basis.numel()) * 4

    def augment(self, q: Tensor) -> Tensor:
        """Query rows ``[P^T q, ||q_res||]`` (``M x (d + 1)``)."""
        proj = q @ self.basis
        return torch.cat([proj, (q - proj @ self.basis.T).norm(dim=1, keepdim=True)], dim=1)

    def upper_bounds(self, q: Tensor, chunk_size: int) -> Tensor:
        """``(M, num_blocks)``: per query and block, the largest coarse upper bound of the block's similarities."""
        m, b = q.shape[0], self.block
        qa = self.augment(q)
        nb = self.num_blocks
        tile = max(b, min(chunk_size // 2, _BOUND_TILE))
        rows = min(m, max(1, tile // (_BOUND_COLS * b)))
        cols = max(b, (tile // rows) // b * b)
        table = torch.empty(m, nb, dtype=torch.float32, device=q.device)
        for i0 in range(0, m, rows):
            qs = qa[i0 : i0 + rows]
            for k0 in range(0, nb * b, cols):
                k1 = min(k0 + cols, nb * b)
                y = qs @ self.coarse_t[:, k0:k1]  # (rows, k1 - k0): this orientation is much faster for small d
                torch.amax(y.view(y.shape[0], -1, b), dim=2, out=table[i0 : i0 + rows, k0 // b : k1 // b])
        return table


def bound_max(
    q: Tensor, index: BoundIndex, chunk_size: int, *, with_indices: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Exact ``max_k <q_i, r_k>`` by branch and bound: a cheap upper bound per block prunes the blocks that cannot
    hold the maximum, and only the others are searched exactly in fp32.

    1. Upper bound of every (query, block) pair from the ``d + 1``-dimensional coarse GEMM (:class:`BoundIndex`).
    2. Lower bound ``L(q)``: the exact max over the block with the largest upper bound.
    3. Every other block whose upper bound reaches ``L(q) - 1e-4`` is searched exactly (queries grouped by block,
       one fp32 GEMM per block); the rest provably holds nothing larger.

    The result equals :func:`plain_max` up to fp32 rounding on any data. When more than half of the pairs survive
    (e.g. references that are all nearly the same vector) it falls back to :func:`plain_max`.

    Queries are processed in groups small enough that a group's table of block bounds holds at most a quarter of
    ``chunk_size`` entries (and its gathered query rows at most a quarter of ``chunk_size`` values), so that the
    working memory stays within the chunk budget. A budget too small for groups of 32 queries runs
    :func:`plain_max` instead (same result, same budget).

    Args:
        q: ``(M, C)`` float32 unit (or zero) query rows.
        index: :class:`BoundIndex` of the reference rows.
        chunk_size: the memory budget: scores (bounds, similarities) materialised at once.
        with_indices: also return an argmax row of ``index.vectors`` per query.

    Returns:
        ``(values (M,), indices (M,) or None)``.
    """
    m, c = q.shape
    best = torch.zeros(m, dtype=torch.float32, device=q.device)
    idx = torch.zeros(m, dtype=torch.long, device=q.device) if with_indices else None
    group = max(1, min(m, chunk_size // (4 * max(index.num_blocks, c, index.block))))
    if group < min(m, _BOUND_MIN_GROUP):  # a budget this small leaves nothing to gain from bounds
        return plain_max(q, index.vectors, chunk_size, with_indices=with_indices)
    for i0 in range(0, m, group):
        v, i = _bound_max_group(q[i0 : i0 + group], index, chunk_size, with_indices)
        best[i0 : i0 + group] = v
        if idx is not None and i is not None:
            idx[i0 : i0 + group] = i
    return best, idx


def _bound_max_group(q: Tensor, index: BoundIndex, chunk_size: int, with_indices: bool) -> tuple[Tensor, Tensor | None]:
    """:func:`bound_max` on one group of queries."""
    m = q.shape[0]
    r, b, k = index.vectors, index.block, index.num
    best = torch.zeros(m, dtype=torch.float32, device=q.device)
    idx = torch.zeros(m, dtype=torch.long, device=q.device) if with_indices else None
    with torch.no_grad(), full_fp32_matmul():
        # all-zero queries have similarity 0 to everything (any index is an argmax): exact without a search
        live = (q != 0).any(dim=1)
        if not bool(live.all()):
            if bool(live.any()):
                v, i = _bound_max_group(q[live], index, chunk_size, with_indices)
                best[live] = v
                if idx is not None and i is not None:
                    idx[live] = i
            return best, idx
        table = index.upper_bounds(q, chunk_size)
        arange = torch.arange(m, device=q.device)
        jstar = table.argmax(dim=1)
        lower, lower_idx = _block_max(q, r, index.order, jstar, arange, b, k, with_indices)
        surv = table >= (lower - BOUND_SLACK).unsqueeze(1)
        del table
        surv[arange, jstar] = False
        pairs = surv.nonzero()  # (P, 2) = (query, block)
        if pairs.shape[0] > _BOUND_FALLBACK * surv.numel():
            return plain_max(q, r, chunk_size, with_indices=with_indices)
        if pairs.shape[0] == 0:
            return lower, lower_idx
        cand, cand_idx = _block_max(q, r, index.order, pairs[:, 1], pairs[:, 0], b, k, with_indices)
        best = lower.scatter_reduce(0, pairs[:, 0], cand, reduce="amax")
        if with_indices:
            idx = lower_idx
            win = cand > lower[pairs[:, 0]]
            win &= cand == best[pairs[:, 0]]
            idx[pairs[win, 0]] = cand_idx[win]
    return best, idx


def _block_max(
    q: Tensor, r: Tensor, order: Tensor, blocks: Tensor, queries: Tensor, b: int, k: int, with_indices: bool
) -> tuple[Tensor, Tensor | None]:
    """fp32 max (and argmax row of ``r``) over block ``blocks[p]`` (rows ``order[j*b:(j+1)*b]`` of ``r``) of
    ``<q[queries[p]], r_k>`` for every pair ``p``."""
    perm = torch.argsort(blocks, stable=True)
    blocks_s, queries_s = blocks[perm], queries[perm]
    uniq, counts = torch.unique_consecutive(blocks_s, return_counts=True)
    vals = torch.empty(queries_s.shape[0], dtype=torch.float32, device=q.device)
    args = torch.empty(queries_s.shape[0], dtype=torch.long, device=q.device) if with_indices else None
    start = 0
    for j, n in zip(uniq.tolist(), counts.tolist(), strict=True):
        rows = order[j * b : min(j * b + b, k)]
        sims = q.index_select(0, queries_s[start : start + n]) @ r.index_select(0, rows).T
        if args is not None:
            v, a = sims.max(dim=1)
            vals[start : start + n] = v
            args[start : start + n] = rows[a]
        else:
            torch.amax(sims, dim=1, out=vals[start : start + n])
        start += n
    out = torch.empty_like(vals)
    out[perm] = vals
    if args is None:
        return out, None
    out_idx = torch.empty_like(args)
    out_idx[perm] = args
    return out, out_idx


# ------------------------------------------------------------------------------ soft (Gibbs-mean) search
SOFT_TILE = 1 << 17
"""Similarities per tile of the soft search (two tiles live at once: 1 MB of fp32, cache-resident)."""


def _soft_tiles(m: int, k: int, chunk_size: int, device: torch.device) -> tuple[int, int]:
    """Tile shape of :func:`gibbs_mean`: two ``rows x cols`` buffers within ``chunk_size`` (on CPU also within
    :data:`SOFT_TILE`, so that the elementwise passes run in cache; GPUs prefer the largest tiles)."""
    if device.type == "cuda":
        tile = max(1, chunk_size // 2)
        rows = max(1, min(m, tile))
    else:
        tile = max(1, min(chunk_size // 2, SOFT_TILE))
        rows = max(1, min(m, 256, tile))
    return rows, max(1, min(k, tile // rows))


class GibbsMean(torch.autograd.Function):
    """Softmax-weighted mean of similarities, streamed over cache-sized tiles in both passes.

    Forward, per query row and in units of ``1 / T``: a running maximum ``mu`` of ``s / T``, ``Z = sum_k e_k`` and
    ``Z D = sum_k e_k x_k`` with ``x_k = s_k / T - mu`` and ``e_k = exp(x_k)`` (exponents never above 0; both sums
    are rescaled when ``mu`` grows), so ``soft = T (mu + D)``. Backward recomputes each tile of ``x`` and
    accumulates ``d soft / d q = sum_k e_k (1 + x_k - D) r_k / Z`` (which is ``sum_k pi_k (1 + (s_k - soft) / T)
    r_k``). Only ``(q, r, mu, Z, D)`` are saved: memory ``O(tile)`` besides the vectors in both passes, one GEMM in
    the forward and two in the backward.
    """

    @staticmethod
    def forward(ctx, q: Tensor, r: Tensor, temperature: float, chunk: int) -> Tensor:  # type: ignore[override]
        m, k = q.shape[0], r.shape[0]
        rows, cols = _soft_tiles(m, k, chunk, q.device)
        inv_t = 1.0 / temperature
        mu = torch.empty(m, dtype=q.dtype, device=q.device)
        z = torch.empty_like(mu)
        zd = torch.empty_like(mu)
        xbuf = q.new_empty(rows * cols)
        ebuf = q.new_empty(rows * cols)
        with torch.no_grad(), full_fp32_matmul():
            for r0 in range(0, m, rows):
                qs = q[r0 : r0 + rows] * inv_t
                n = qs.shape[0]
                mu_s, z_s, zd_s = mu[r0 : r0 + n], z[r0 : r0 + n], zd[r0 : r0 + n]
                for k0 in range(0, k, cols):
                    rc = r[k0 : k0 + cols]
                    x = torch.mm(qs, rc.T, out=xbuf[: n * rc.shape[0]].view(n, rc.shape[0]))  # s / T
                    tmax = x.amax(dim=1)
                    if k0 == 0:
                        mu_s.copy_(tmax)
                        x.sub_(mu_s.unsqueeze(1))
                        e = torch.exp(x, out=ebuf[: x.numel()].view_as(x))
                        torch.sum(e, dim=1, out=z_s)
                        zd_s.copy_(torch.linalg.vecdot(e, x, dim=1))
                        continue
                    new_mu = torch.maximum(mu_s, tmax)
                    delta = mu_s - new_mu  # <= 0: old terms' exponents shift by delta
                    x.sub_(new_mu.unsqueeze(1))
                    e = torch.exp(x, out=ebuf[: x.numel()].view_as(x))
                    scale = torch.exp(delta)
                    # sum_old e' x' with e' = e scale, x' = x + delta
                    zd_s.add_(delta * z_s).mul_(scale).add_(torch.linalg.vecdot(e, x, dim=1))
                    z_s.mul_(scale).add_(e.sum(dim=1))
                    mu_s.copy_(new_mu)
            d = zd / z
            soft = (mu + d) * temperature
        ctx.save_for_backward(q, r, mu, z, d)
        ctx.temperature = temperature
        ctx.tiles = (rows, cols)
        return soft

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, None, None, None]:  # type: ignore[override]
        q, r, mu, z, d = ctx.saved_tensors
        inv_t = 1.0 / ctx.temperature
        rows, cols = ctx.tiles
        m, k = q.shape[0], r.shape[0]
        grad_q = torch.zeros_like(q)
        xbuf = q.new_empty(rows * cols)
        ebuf = q.new_empty(rows * cols)
        neg_mu, one_minus_d = -mu.unsqueeze(1), (1.0 - d).unsqueeze(1)
        with torch.no_grad(), full_fp32_matmul():
            for r0 in range(0, m, rows):
                qs = q[r0 : r0 + rows] * inv_t
                n = qs.shape[0]
                g = grad_q[r0 : r0 + n]
                bias, c = neg_mu[r0 : r0 + n], one_minus_d[r0 : r0 + n]
                for k0 in range(0, k, cols):
                    rc = r[k0 : k0 + cols]
                    x = torch.addmm(bias, qs, rc.T, out=xbuf[: n * rc.shape[0]].view(n, rc.shape[0]))  # s/T - mu
                    e = torch.exp(x, out=ebuf[: x.numel()].view_as(x))
                    g.addmm_(x.add_(c).mul_(e), rc)  # e_k (1 + x_k - D), summed against r_k
            grad_q.mul_((grad / z).unsqueeze(1))
        return grad_q, None, None, None


def gibbs_mean(q: Tensor, r: Tensor, temperature: float, chunk_size: int) -> Tensor:
    """``sum_k softmax(s / T)_k s_k`` with ``s_k = <q_i, r_k>`` per query row, differentiable w.r.t. ``q``.

    Args:
        q: ``(M, C)`` query rows (float32 or float64; autograd follows them).
        r: ``(K, C)`` reference rows of the same dtype (constants), ``K >= 1``.
        temperature: ``T > 0``.
        chunk_size: maximum number of similarities materialised at once (the search's memory budget).

    Returns:
        ``(M,)``, never above the hard max; stable down to ``T = 1e-4`` (exponents are never positive).
    """
    return GibbsMean.apply(q, r, temperature, chunk_size)
