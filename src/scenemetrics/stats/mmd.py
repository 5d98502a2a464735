"""Unbiased RBF-kernel MMD² with the median heuristic, exact and in bounded memory.

``mmd_rbf(x, y)`` is the unbiased estimator of Gretton et al. (2012, Lemma 6) with
``k(a, b) = exp(-||a - b||² / (2 σ²))`` and σ either given or the lower median of the distances between all distinct
pairs of the pooled set. Nothing of size ``N x N`` is ever materialised: distances are computed in
``chunk_size x chunk_size`` tiles (only the upper triangle), the median is found by exact selection, and the kernel
sums accumulate in float64.

It sits in the core so that every room can use it without importing another: PRISM's reference-free score
(``PRISMMMD``, paper App. 13: the median heuristic) and the CMMD baselines (``scenemetrics.baselines``: σ = 10 on
CLIP embeddings, scaled by 1000) share this one implementation.

Example:
    >>> import torch
    >>> from scenemetrics.stats import mmd_rbf
    >>> g = torch.Generator().manual_seed(0)
    >>> x, y = torch.randn(50, 8, generator=g), torch.randn(60, 8, generator=g) + 1.0
    >>> bool(mmd_rbf(x, y) > mmd_rbf(x, torch.randn(60, 8, generator=g)))
    True
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from scenemetrics.checks import check_positive_int

__all__ = [
    "MMDOptions",
    "check_bandwidth",
    "check_chunk_size",
    "median_bandwidth",
    "mmd_rbf",
    "mmd_rbf_with_bandwidth",
    "mmd_with_options",
]

_SMALL_PAIRS = 4096 * 4095 // 2
"""Up to this many pairs (N = 4096) every pair distance is collected and the median taken directly."""
_COLLECT_BYTES = 128 << 20
"""Most bytes of pair distances one selection pass collects."""
_BRACKET_POINTS = 2048
"""Points of the deterministic subsample whose pair distances bracket the median."""
_HIST_BINS = 1024


def _check_sets(x: Tensor, y: Tensor) -> torch.dtype:
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor of shape (N, d); received {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"`{name}` must be a floating-point tensor; received dtype {t.dtype}")
        if t.ndim != 2:
            raise ValueError(f"`{name}` must have shape (N, d); received shape {tuple(t.shape)}")
        if t.shape[0] < 2:
            raise ValueError(f"`{name}` needs at least 2 samples for the unbiased MMD; received {t.shape[0]}")
        if t.shape[1] == 0:
            raise ValueError(f"`{name}` has zero-dimensional samples (shape {tuple(t.shape)})")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"`x` and `y` must have the same dimension d; received {x.shape[1]} and {y.shape[1]}")
    if x.device != y.device:
        raise ValueError(f"`x` and `y` must be on the same device; received {x.device} and {y.device}")
    for name, t in (("x", x), ("y", y)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"`{name}` contains NaN or infinite values")
    return torch.float64 if torch.float64 in (x.dtype, y.dtype) else torch.float32


def check_chunk_size(chunk_size: int) -> int:
    """Validate ``chunk_size`` (a positive int) or raise ``ValueError``."""
    return check_positive_int(chunk_size, "chunk_size")


def check_bandwidth(bandwidth: str | float) -> str | float:
    """Validate ``bandwidth`` (``"median"`` or a positive finite number) or raise ``ValueError``."""
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"`bandwidth` must be 'median' or a positive number; received {bandwidth!r}")
        return bandwidth
    if (
        isinstance(bandwidth, bool)
        or not isinstance(bandwidth, numbers.Real)
        or not math.isfinite(float(bandwidth))
        or float(bandwidth) <= 0
    ):
        raise ValueError(f"`bandwidth` must be 'median' or a positive finite number; received {bandwidth!r}")
    return float(bandwidth)


@dataclass(frozen=True)
class MMDOptions:
    """The options of an RBF MMD, validated once when the record is built (PRISM's MMD keeps one).

    Attributes:
        bandwidth: ``"median"`` (the pooled lower median distance) or σ as a positive float.
        squared: report MMD² (as PRISM's paper) or ``sqrt(max(MMD², 0))`` (applied by the caller).
        chunk_size: tile side of the blocked computation.
        unbiased: the unbiased U-statistic (self-pairs excluded; the default) or the biased V-statistic (the mean
            over all pairs, self-pairs included, Gretton et al. 2012 Eq. 5, which CMMD's reference code computes).

    Example:
        >>> MMDOptions(bandwidth=2)
        MMDOptions(bandwidth=2.0, squared=True, chunk_size=2048, unbiased=True)
    """

    bandwidth: str | float = "median"
    squared: bool = True
    chunk_size: int = 2048
    unbiased: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidth", check_bandwidth(self.bandwidth))
        object.__setattr__(self, "chunk_size", check_chunk_size(self.chunk_size))
        object.__setattr__(self, "squared", bool(self.squared))
        object.__setattr__(self, "unbiased", bool(self.unbiased))


@dataclass
class _Tile:
    kind: str  # "xx", "yy" or "xy"
    diagonal: bool  # a tile of a block against itself: only its strict upper triangle holds distinct pairs
    d2: Tensor


class _PooledPairs:
    """Squared distances between the distinct pairs of Z = X ∪ Y, tile by tile (upper triangle only).

    Rows are centred by the pooled mean (computed in ``mean_dtype``) and cast to ``dtype`` one block at a time, so
    no ``N x d`` copy is made. A squared distance at most ``4 sqrt(d) eps (|a|² + |b|²)`` (the rounding error of the
    expansion) is set to 0, so duplicate points are at distance exactly 0 and negative values cannot occur.
    """

    def __init__(self, x: Tensor, y: Tensor, chunk_size: int, dtype: torch.dtype, mean_dtype: torch.dtype) -> None:
        self.x, self.y = x, y
        self.m, self.n = x.shape[0], y.shape[0]
        self.size = self.m + self.n
        self.num_pairs = self.size * (self.size - 1) // 2
        self.dtype = dtype
        self.device = x.device
        # distances are translation invariant; centring cuts the cancellation in |a|² + |b|² - 2 a.b
        total = x.sum(dim=0, dtype=mean_dtype) + y.sum(dim=0, dtype=mean_dtype)
        self.mean = (total / self.size).to(dtype)
        # blocks never straddle the X/Y boundary, so every tile is purely XX, XY or YY
        self.blocks = [(a, min(a + chunk_size, self.m), "x") for a in range(0, self.m, chunk_size)]
        self.blocks += [(a, min(a + chunk_size, self.n), "y") for a in range(0, self.n, chunk_size)]
        self.sq = [(r * r).sum(dim=1) for r in map(self.rows, range(len(self.blocks)))]
        self.sq_max = [float(s.max()) for s in self.sq]
        self.noise_floor = 4.0 * math.sqrt(x.shape[1]) * torch.finfo(dtype).eps
        self._masks: dict[tuple[int, bool], Tensor] = {}

    def rows(self, block: int) -> Tensor:
        a0, a1, kind = self.blocks[block]
        src = self.x if kind == "x" else self.y
        return src[a0:a1].to(self.dtype) - self.mean

    def _mask(self, size: int, upper: bool) -> Tensor:
        if (size, upper) not in self._masks:
            ones = torch.ones(size, size, dtype=torch.bool, device=self.device)
            self._masks[size, upper] = ones.triu_(1) if upper else ones.tril_(0)
        return self._masks[size, upper]

    def tiles(self) -> Iterator[_Tile]:
        for bi in range(len(self.blocks)):
            za, ka = self.rows(bi), self.blocks[bi][2]
            for bj in range(bi, len(self.blocks)):
                zb = za if bj == bi else self.rows(bj)
                norms = self.sq[bi][:, None] + self.sq[bj][None, :]
                d2 = torch.addmm(norms, za, zb.T, alpha=-2.0)
                if bi == bj:
                    d2.fill_diagonal_(math.inf)  # self-pairs are never used; keep them out of the check below
                # values within the rounding error of |a|² + |b|² - 2 a.b become 0 (identical points get exactly 0,
                # negative values cannot remain); the cheap min() test skips the mask for most tiles
                if float(d2.min()) <= self.noise_floor * (self.sq_max[bi] + self.sq_max[bj]):
                    d2.masked_fill_(d2 <= norms.mul_(self.noise_floor), 0.0)
                yield _Tile(kind=ka + self.blocks[bj][2], diagonal=bi == bj, d2=d2)

    def values(self, tile: _Tile) -> Tensor:
        """The tile's distinct-pair values, flattened (a copy for diagonal tiles)."""
        return tile.d2[self._mask(tile.d2.shape[0], True)] if tile.diagonal else tile.d2.reshape(-1)

    def masked_values(self, tile: _Tile) -> Tensor:
        """The tile's values flattened, NaN (which no comparison selects) where a pair is not distinct."""
        if tile.diagonal:
            tile.d2.masked_fill_(self._mask(tile.d2.shape[0], False), math.nan)
        return tile.d2.reshape(-1)


@dataclass
class _PassResult:
    below_window: int = 0  # values < window[0]
    in_window: int = 0  # values in [window[0], window[1]]
    collected: Tensor | None = None  # those values (None after an overflow of the cap)
    below_range: int = 0  # values < lo
    counts: Tensor | None = None  # histogram of the values in [lo, hi], with each bin's min and max
    mins: Tensor | None = None
    maxs: Tensor | None = None


def _select_pass(
    pairs: _PooledPairs,
    window: tuple[float, float] | None,
    cap: int,
    hist: tuple[float, float, float] | None = None,
) -> _PassResult:
    """One blocked pass over the pairs.

    ``window = (w0, w1)``: count the values below ``w0``, count and collect (up to ``cap``) those in ``[w0, w1]``.
    ``hist = (lo, hi, span)``: count the values below ``lo`` and histogram those in ``[lo, hi]`` into
    ``_HIST_BINS`` bins of ``floor((v - lo) * bins / span)`` (clamped; in float64 except on MPS). That map is
    monotone in ``v``, so each bin holds a contiguous run of the sorted values and ``[min, max]`` of a bin holds
    exactly its values.
    """
    res = _PassResult()
    # pages of an empty buffer are only committed when written, so this costs what is collected, with no copy
    buffer: Tensor | None = torch.empty(cap, dtype=pairs.dtype, device=pairs.device) if window is not None else None
    nb = _HIST_BINS
    counts = torch.zeros(nb, dtype=torch.long, device=pairs.device)
    mins = torch.full((nb,), math.inf, dtype=pairs.dtype, device=pairs.device)
    maxs = torch.full((nb,), -math.inf, dtype=pairs.dtype, device=pairs.device)
    bin_dtype = torch.float32 if pairs.device.type == "mps" else torch.float64
    for tile in pairs.tiles():
        v = pairs.masked_values(tile)
        if window is not None:
            below = v < window[0]
            res.below_window += int(torch.count_nonzero(below))
            inside = v[(v <= window[1]) & ~below]
            start = res.in_window
            res.in_window += inside.numel()
            if buffer is not None:
                if res.in_window > cap:
                    buffer = None
                else:
                    buffer[start : res.in_window] = inside
        if hist is not None:
            lo, hi, span = hist
            res.below_range += int(torch.count_nonzero(v < lo))
            inside = v[(v >= lo) & (v <= hi)]
            idx = ((inside.to(bin_dtype) - lo) * (nb / span)).floor_().clamp_(0, nb - 1).long()
            counts += torch.bincount(idx, minlength=nb)
            mins.scatter_reduce_(0, idx, inside, reduce="amin")
            maxs.scatter_reduce_(0, idx, inside, reduce="amax")
    if buffer is not None:
        res.collected = buffer[: res.in_window]
    if hist is not None:
        res.counts, res.mins, res.maxs = counts, mins, maxs
    return res


def _bracket(pairs: _PooledPairs, chunk_size: int, cap: int) -> tuple[float, float]:
    """A window of values around the median, from the pair distances of a deterministic subsample of points."""
    s = min(pairs.size, _BRACKET_POINTS)
    idx = torch.linspace(0, pairs.size - 1, s, device=pairs.device).round().long().unique()
    zs = torch.cat([pairs.x[idx[idx < pairs.m]], pairs.y[idx[idx >= pairs.m] - pairs.m]])
    sub = _PooledPairs(zs, zs[:0], chunk_size, pairs.dtype, pairs.dtype)
    vals = torch.sort(torch.cat([sub.values(t) for t in sub.tiles()])).values
    # the subsample median's rank fraction has a spread of about 1/sqrt(s); the window keeps within the cap
    half = min(0.5, 3.0 / math.sqrt(len(idx)), 0.45 * cap / pairs.num_pairs)
    last = len(vals) - 1
    return float(vals[max(0, round((0.5 - half) * last))]), float(vals[min(last, round((0.5 + half) * last))])


def _adjacent(value: float, toward: float, dtype: torch.dtype) -> float:
    """The representable ``dtype`` number next to ``value`` in the direction of ``toward``."""
    return float(torch.tensor(value, dtype=dtype).nextafter(torch.tensor(toward, dtype=dtype)))


def _lower_median_sq(pairs: _PooledPairs, chunk_size: int) -> Tensor:
    """Exact lower median of the pooled distinct-pair squared distances (0-based rank ``(P - 1) // 2``)."""
    k = (pairs.num_pairs - 1) // 2
    cap = max(1, _COLLECT_BYTES // torch.empty((), dtype=pairs.dtype).element_size())

    def kth(values: Tensor, rank: int) -> Tensor:
        """The rank-th smallest value (0-based); may reorder ``values``."""
        if values.device.type == "cuda":
            return torch.kthvalue(values, rank + 1).values
        # NumPy's in-place partition needs no index array and no copy (kthvalue allocates both)
        arr = values.cpu().numpy()
        arr.partition(rank)
        return torch.tensor(arr[rank], dtype=pairs.dtype, device=pairs.device)

    if pairs.num_pairs <= _SMALL_PAIRS:
        return kth(torch.cat([pairs.values(t) for t in pairs.tiles()]), k)
    # common case: one pass collecting a window that holds the median's rank
    window = _bracket(pairs, chunk_size, cap)
    res = _select_pass(pairs, window, cap)
    if res.collected is not None and res.below_window <= k < res.below_window + res.in_window:
        return kth(res.collected, k - res.below_window)
    # otherwise narrow down with histograms over the part of the value range that holds the rank
    if k < res.below_window:
        lo, hi = 0.0, _adjacent(window[0], -math.inf, pairs.dtype)
    elif k >= res.below_window + res.in_window:
        lo, hi = _adjacent(window[1], math.inf, pairs.dtype), math.inf
    else:
        lo, hi = window
    # d² <= (|a| + |b|)² <= 4 max |z|², up to rounding; larger values still land in the last bin
    top = 4.0 * max(pairs.sq_max)
    while True:
        span = (min(hi, top) if math.isfinite(hi) else top) - lo
        res = _select_pass(pairs, None, cap, hist=(lo, hi, span if span > 0 else 1.0))
        assert res.counts is not None and res.mins is not None and res.maxs is not None
        cum = res.below_range + torch.cumsum(res.counts, 0)
        b = int(torch.searchsorted(cum, torch.tensor([k], device=cum.device), right=True)[0])
        lo, hi = float(res.mins[b]), float(res.maxs[b])
        if lo == hi:
            return res.mins[b].clone()
        if int(res.counts[b]) <= cap:
            res = _select_pass(pairs, (lo, hi), cap)
            assert res.collected is not None  # a histogram bin's [min, max] holds exactly its counted values
            return kth(res.collected, k - res.below_window)


def median_bandwidth(x: Tensor, y: Tensor, *, chunk_size: int = 2048) -> Tensor:
    """The median-heuristic σ that ``mmd_rbf(x, y, "median")`` uses.

    σ is the lower median (0-based rank ``(P - 1) // 2``, as ``torch.median``) of the Euclidean distances of all
    ``P = N (N - 1) / 2`` distinct pairs of the pooled set ``Z = X ∪ Y`` (``N = m + n``; duplicate points count, at
    distance 0), computed exactly in bounded memory.

    Args:
        x: ``(m, d)`` floating tensor, ``m >= 2``.
        y: ``(n, d)``, same ``d``, ``n >= 2``.
        chunk_size: tile side of the blocked distance computation.

    Returns:
        0-dim tensor in the working dtype (float64 if an input is float64, else float32) on the inputs' device.

    Example:
        >>> import torch
        >>> float(median_bandwidth(torch.tensor([[0.0], [1.0]]), torch.tensor([[3.0], [7.0]])))
        3.0
    """
    dtype = _check_sets(x, y)
    chunk_size = check_chunk_size(chunk_size)
    acc = torch.float32 if x.device.type == "mps" else torch.float64
    with torch.no_grad():
        pairs = _PooledPairs(x, y, chunk_size, dtype, acc)
        return _lower_median_sq(pairs, chunk_size).sqrt()


def mmd_rbf(
    x: Tensor, y: Tensor, bandwidth: str | float = "median", *, chunk_size: int = 2048, unbiased: bool = True
) -> Tensor:
    """Unbiased MMD² between two sets with an RBF kernel ``exp(-||a - b||² / (2 σ²))``.

    ``MMD²_u = 1/(m(m-1)) Σ_{i≠i'} k(x_i, x_i') + 1/(n(n-1)) Σ_{j≠j'} k(y_j, y_j') - 2/(mn) Σ_{i,j} k(x_i, y_j)``
    (Gretton et al. 2012, Lemma 6). The estimate is returned unclamped: it can be slightly negative when both sets
    come from one distribution. ``unbiased=False`` gives the biased V-statistic instead (Eq. 5: every mean over all
    ``m²`` / ``n²`` pairs, self-pairs with ``k = 1`` included), always ``>= 0``.

    Memory stays bounded: squared distances (``|a|² + |b|² - 2 a.b`` on data centred by the pooled mean, clamped at
    0) are computed in ``chunk_size x chunk_size`` tiles of the upper triangle; kernel sums accumulate in float64
    (float32 on devices without float64, such as MPS). float16/bfloat16 inputs are upcast to float32.

    Args:
        x: ``(m, d)`` generated embeddings, ``m >= 2``.
        y: ``(n, d)`` anchors, ``n >= 2``.
        bandwidth: ``"median"`` (see :func:`median_bandwidth`) or σ itself as a positive number.
        chunk_size: tile side.
        unbiased: the U-statistic (default) or the V-statistic.

    Returns:
        0-dim MMD² in the working dtype (float64 if an input is float64, else float32) on the inputs' device; NaN
        with a ``UserWarning`` when the median σ is 0 (more than half the pooled pairs coincide).

    Raises:
        TypeError: a non-tensor or non-floating input.
        ValueError: wrong rank, ``m < 2`` or ``n < 2``, different ``d`` or devices, non-finite values, or an invalid
            ``bandwidth`` / ``chunk_size``.

    Example:
        >>> import torch
        >>> x = torch.tensor([[0.0], [1.0]])
        >>> round(float(mmd_rbf(x, x + 10.0, bandwidth=1.0)), 4)
        1.2131
    """
    return mmd_rbf_with_bandwidth(x, y, bandwidth, chunk_size=chunk_size, unbiased=unbiased)[0]


def mmd_rbf_with_bandwidth(
    x: Tensor, y: Tensor, bandwidth: str | float = "median", *, chunk_size: int = 2048, unbiased: bool = True
) -> tuple[Tensor, Tensor]:
    """:func:`mmd_rbf` that also returns the σ it used (0-dim tensors in the working dtype)."""
    return mmd_with_options(x, y, MMDOptions(bandwidth=bandwidth, chunk_size=chunk_size, unbiased=unbiased))


def mmd_with_options(x: Tensor, y: Tensor, options: MMDOptions) -> tuple[Tensor, Tensor]:
    """:func:`mmd_rbf_with_bandwidth` with a validated :class:`MMDOptions` (only the two sets are checked here);
    ``options.squared`` is not applied (the caller takes the square root)."""
    dtype = _check_sets(x, y)
    chunk_size, bandwidth = options.chunk_size, options.bandwidth
    device = x.device
    acc = torch.float32 if device.type == "mps" else torch.float64
    with torch.no_grad():
        if bandwidth == "median":
            sigma2 = float(_lower_median_sq(_PooledPairs(x, y, chunk_size, dtype, acc), chunk_size))
            if sigma2 == 0.0:
                warnings.warn(
                    "mmd_rbf: the median distance between the pooled points is 0 (more than half the pairs "
                    "coincide), so the median-heuristic bandwidth is undefined; returning NaN",
                    UserWarning,
                    stacklevel=3,
                )
                zero = torch.zeros((), dtype=dtype, device=device)
                return torch.full((), math.nan, dtype=dtype, device=device), zero
        else:
            sigma2 = float(bandwidth) ** 2
        gamma = 1.0 / (2.0 * sigma2)
        sums = {kind: torch.zeros((), dtype=acc, device=device) for kind in ("xx", "yy", "xy")}
        # float32 distances leave ~1e-8 absolute error in each kernel value, too much for small sets: the kernel
        # pass computes its distances in the accumulation dtype
        pairs = _PooledPairs(x, y, chunk_size, acc, acc)
        for tile in pairs.tiles():
            k = tile.d2.mul_(-gamma).exp_()
            if tile.diagonal:
                k.triu_(1)
            sums[tile.kind] += k.sum(dtype=acc)
        m, n = pairs.m, pairs.n
        if options.unbiased:
            value = 2.0 * sums["xx"] / (m * (m - 1)) + 2.0 * sums["yy"] / (n * (n - 1)) - 2.0 * sums["xy"] / (m * n)
        else:  # the m (n) self-pairs add k(a, a) = 1 each
            value = (2.0 * sums["xx"] + m) / (m * m) + (2.0 * sums["yy"] + n) / (n * n) - 2.0 * sums["xy"] / (m * n)
    sigma = torch.tensor(sigma2, dtype=torch.float64).sqrt().to(dtype=dtype, device=device)
    return value.to(dtype), sigma
