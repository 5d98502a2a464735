"""PuzzleSim as pure functions (Hermann, Condor, Didyk, ICCV 2025, "Puzzle Similarity", arXiv 2411.17489).

Every position of a test image's CNN feature map is compared with every feature vector of every reference image
of the same layer; the best cosine similarity is its score ("can this puzzle piece be found anywhere in the
references?"). Low values mark artifacts. No aligned ground truth is needed.

Numerics (float32, CPU): within 1e-4 of the authors' ``puzzle-sim`` 1.0.1 (observed ~5e-7); screened and plain
search agree to 1e-6, as do different ``chunk_size``; repeated calls are bitwise equal on CPU. CPU vs CUDA
float32: 1e-3 (cuDNN convolutions); CUDA float16 / bfloat16 vs float32: 2e-3 / 1e-2.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.puzzlesim import search as _search
from scenemetrics.puzzlesim.memory import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    SCREENING,
    Precision,
    PuzzleSimMemory,
    Screening,
    Search,
    check_choice,
    check_chunk_size,
    search_method,
)
from scenemetrics.puzzlesim.triton_search import triton_max

__all__ = [
    "best_match_similarity",
    "check_temperature",
    "puzzle_similarity",
    "puzzle_similarity_map",
    "soft_best_match_similarity",
]


def _memory_for(
    images: Tensor,
    references: Tensor | Sequence[Tensor] | PuzzleSimMemory,
    *,
    backbone: str,
    layers: Sequence[int],
    weights_path: str | os.PathLike | None,
    resize: int | tuple[int, int] | None,
    precision: Precision,
    batch_size: int,
    progress: bool,
) -> PuzzleSimMemory:
    if isinstance(references, PuzzleSimMemory):
        references.check_compatible(
            backbone=backbone, layers=layers, weights_path=weights_path, resize=resize, precision=precision
        )
        return references
    device = images.device if isinstance(images, Tensor) else None
    return PuzzleSimMemory(
        references,
        backbone=backbone,
        layers=layers,
        weights_path=weights_path,
        resize=resize,
        precision=precision,
        device=device,
        batch_size=batch_size,
        progress=progress,
    )


def puzzle_similarity_map(
    images: Tensor,
    references: Tensor | Sequence[Tensor] | PuzzleSimMemory,
    *,
    backbone: str = "squeezenet1_1",
    layers: Sequence[int] = DEFAULT_LAYERS,
    layer_weights: Sequence[float] | None = DEFAULT_LAYER_WEIGHTS,
    weights_path: str | os.PathLike | None = None,
    resize: int | tuple[int, int] | None = None,
    chunk_size: int | None = None,
    precision: Precision = "float32",
    screening: Screening = "auto",
    search: Search = "exact",
    faiss_options: dict | None = None,
    batch_size: int = 8,
    progress: bool = False,
) -> Tensor:
    """PuzzleSim maps of test images against unaligned references: ``(B, H, W)`` in [0, 1], high = plausible.

    ``S(I) = sum_i w_i * Upsample(S_{l_i}(I))`` where ``S_l(I)[p]`` is the best cosine similarity of the test
    feature at ``p`` to any feature vector of any reference at layer ``l`` (paper Eq. 1-3).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)``; float in [0, 1] or uint8. Each image is scored independently.
        references: ``(N, 3, h, w)``, a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors of any sizes, or a
            :class:`PuzzleSimMemory` (then ``backbone``, ``weights_path``, ``resize`` and ``precision`` must equal
            the memory's and ``layers`` must be a subset of its layers).
        backbone: ``"squeezenet1_1"`` (default), ``"alexnet"`` or ``"vgg16"``. The default layer weights were tuned
            by the authors for SqueezeNet only; nothing tuned exists for AlexNet / VGG16.
        layers: 0-based LPIPS slice indices (default ``(2, 3, 4)``).
        layer_weights: one weight per layer, applied as given (default ``(0.67, 0.2, 0.13)``); ``None`` = ``1/m``.
        weights_path: backbone checkpoint file or folder (default: the hub cache, downloading on first use).
        resize: ``None`` or ``(h, w)`` / ``n``: resize references and test images before the backbone (bilinear,
            antialiased); maps keep the original test size.
        chunk_size: maximum number of similarities materialised at once (``None``: 2^22 on CPU, 2^26 on CUDA).
        precision: ``"float32"``; ``"float16"`` / ``"bfloat16"`` on CUDA only.
        screening: ``"auto"`` picks the fastest exact search: on CUDA a fused Triton kernel (when Triton is
            installed); on CPU, for banks of at least 1024 vectors, the projection-bound branch-and-bound search, or
            the exact bf16-screened search on CPUs with a fast and accurate bf16 GEMM
            (float32, exact search, no gradients); the CPU is judged once per machine from its capabilities (x86
            AVX512-BF16 / AMX-BF16), with a millisecond probe where those do not settle it, and the answer is
            cached in ``$SCENEMETRICS_HOME/puzzlesim/bf16.json``; the environment variable ``SCENEMETRICS_BF16`` =
            ``auto`` | ``on`` | ``off`` overrides that judgement. ``"on"`` forces the screened search, ``"off"``
            runs the exhaustive search (the reference implementation). The result is exact in every case.
        search: ``"exact"`` or ``"faiss"`` (approximate, optional extra ``[faiss]``; maps <= exact maps).
        faiss_options: e.g. ``{"index": "HNSW32", "ef_search": 128}`` or ``{"index": "IVF1024,Flat", "nprobe": 16}``.
        batch_size: images per backbone pass when embedding references.
        progress: progress bar while embedding references.

    Returns:
        ``(B, H, W)`` float32 on the images' device. Differentiable w.r.t. ``images`` when they require grad
        (sub-gradient of the max, computed via the argmax without an ``M x K`` graph).

    Raises:
        ValueError: bad images, references or options (the message names the argument).
        scenemetrics.hub.WeightsNotFoundError: no backbone checkpoint (offline or download failed).
        ImportError: ``search="faiss"`` without faiss.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.puzzlesim import puzzle_similarity_map, random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> refs = torch.rand(4, 3, 64, 64)
        >>> maps = puzzle_similarity_map(refs[:2], refs, weights_path=w)
        >>> maps.shape, bool((maps - 1).abs().max() < 1e-4)
        (torch.Size([2, 64, 64]), True)
    """
    memory = _memory_for(
        images,
        references,
        backbone=backbone,
        layers=layers,
        weights_path=weights_path,
        resize=resize,
        precision=precision,
        batch_size=batch_size,
        progress=progress,
    )
    return memory.similarity_map(
        images,
        layers=layers,
        layer_weights=layer_weights,
        chunk_size=chunk_size,
        screening=screening,
        search=search,
        faiss_options=faiss_options,
    )


def puzzle_similarity(images: Tensor, references: Tensor | Sequence[Tensor] | PuzzleSimMemory, **kwargs) -> Tensor:
    """Per-image PuzzleSim score ``(B,)``: the mean of :func:`puzzle_similarity_map` over the image's pixels.

    (The authors' code produces no scalar; the mean of the map is our definition.) Keywords as
    :func:`puzzle_similarity_map`.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.puzzlesim import puzzle_similarity, random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> puzzle_similarity(torch.rand(2, 3, 48, 48), torch.rand(3, 3, 48, 48), weights_path=w).shape
        torch.Size([2])
    """
    return puzzle_similarity_map(images, references, **kwargs).mean(dim=(1, 2))


# ------------------------------------------------------------------------------------------- raw-feature level
def _query_rows(features: Tensor, name: str = "features") -> tuple[Tensor, tuple[int, ...]]:
    if not isinstance(features, Tensor) or features.ndim not in (3, 4):
        shape = tuple(features.shape) if isinstance(features, Tensor) else type(features).__name__
        raise ValueError(f"`{name}` must be a (C, h, w) or (B, C, h, w) tensor; received {shape}")
    if not features.is_floating_point():
        raise ValueError(f"`{name}` must be a floating-point tensor; received dtype {features.dtype}")
    f = features if features.ndim == 4 else features.unsqueeze(0)
    rows = F.normalize(f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]), p=2, dim=1, eps=1e-12)
    out_shape = (f.shape[0], f.shape[2], f.shape[3]) if features.ndim == 4 else (f.shape[2], f.shape[3])
    return rows, out_shape


def _reference_rows(
    reference_features: Tensor | Sequence[Tensor], channels: int, dtype: torch.dtype, device: torch.device
) -> Tensor:
    def rows(t: Tensor, name: str) -> Tensor:
        if not isinstance(t, Tensor) or t.ndim not in (2, 3, 4) or not t.is_floating_point():
            shape = (tuple(t.shape), t.dtype) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"`{name}` must be float (K, C), (C, h, w) or (N, C, h, w) tensors; received {shape}")
        if t.ndim == 2:
            r = t
        else:
            t4 = t if t.ndim == 4 else t.unsqueeze(0)
            r = t4.permute(0, 2, 3, 1).reshape(-1, t4.shape[1])
        if r.shape[1] != channels:
            raise ValueError(f"`{name}` has {r.shape[1]} channels but `features` has {channels}")
        return r

    if isinstance(reference_features, Tensor):
        parts = [rows(reference_features, "reference_features")]
    elif isinstance(reference_features, (list, tuple)):
        parts = [rows(t, f"reference_features[{i}]") for i, t in enumerate(reference_features)]
    else:
        raise ValueError(
            f"`reference_features` must be a tensor or a list of tensors; received {type(reference_features).__name__}"
        )
    r = torch.cat([p.to(device, dtype) for p in parts]) if parts else torch.empty(0, channels)
    if r.shape[0] == 0:
        raise ValueError("`reference_features` must hold at least one reference vector; received none")
    return F.normalize(r, p=2, dim=1, eps=1e-12).contiguous()


def best_match_similarity(
    features: Tensor,
    reference_features: Tensor | Sequence[Tensor],
    *,
    chunk_size: int | None = None,
    screening: Screening = "auto",
) -> Tensor:
    """Eq. 1 on given (raw, un-normalised) features: best cosine of each test position to any reference vector.

    Correct for any test/reference sizes (the authors' ``find_best_matching_piece``, without its equal-size
    restriction). Vectors are L2-normalised with ``eps=1e-12``, so an all-zero vector has similarity 0.

    Args:
        features: ``(C, h, w)`` or ``(B, C, h, w)`` test features.
        reference_features: ``(N, C, h', w')``, a list of ``(C, h, w)`` / ``(n, C, h, w)`` tensors, or ``(K, C)``
            vectors.
        chunk_size: maximum similarities materialised at once.
        screening: ``"auto"`` / ``"on"`` / ``"off"`` (see :func:`puzzle_similarity_map`); float32 only.

    Returns:
        ``(h, w)`` or ``(B, h, w)``, float32 (float64 for float64 inputs with plain search).

    Example:
        >>> import torch
        >>> refs = torch.rand(3, 8, 5, 6)
        >>> best_match_similarity(refs[1], refs).min() > 0.9999
        tensor(True)
    """
    chunk_size = check_chunk_size(chunk_size)
    check_choice(screening, "screening", SCREENING)
    need_grad = features.requires_grad and torch.is_grad_enabled() if isinstance(features, Tensor) else False
    if screening == "on" and need_grad:
        raise ValueError("`screening`='on' cannot be used when gradients are required (use 'auto' or 'off')")
    q, out_shape = _query_rows(features)
    r = _reference_rows(reference_features, q.shape[1], q.dtype, q.device)
    chunk = chunk_size or _search.default_chunk_size(q.device)
    if screening == "on" and q.dtype != torch.float32:
        raise ValueError(f"`screening`='on' needs float32 features; received {q.dtype}")
    method = search_method(screening, q.device, r.shape[0], need_grad) if q.dtype == torch.float32 else "plain"
    if need_grad:
        with torch.no_grad():
            if method == "bound":
                _, idx = _search.bound_max(q.detach(), _search.BoundIndex.build(r.detach()), chunk, with_indices=True)
            elif method == "triton":
                _, idx = triton_max(q.detach(), r.detach(), with_indices=True)
            else:
                _, idx = _search.plain_max(q.detach(), r, chunk, with_indices=True)
        vals = (q * r[idx]).sum(dim=1)
    elif method == "bf16":
        vals = _search.screened_max(q, _search.ScreenIndex.build(r), chunk)
    elif method == "bound":
        vals = _search.bound_max(q, _search.BoundIndex.build(r), chunk)[0]
    elif method == "triton":
        vals = triton_max(q, r)[0].to(q.dtype)
    else:
        vals = _search.plain_max(q, r, chunk)[0]
    return vals.view(out_shape)


# ------------------------------------------------------------------------------------------------ soft search
def check_temperature(temperature: float) -> float:
    """A finite float > 0, else ``ValueError`` naming ``temperature``."""
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"`temperature` must be a finite float > 0; received {temperature!r}") from None
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"`temperature` must be a finite float > 0; received {temperature!r}")
    return t


class _GibbsMean(torch.autograd.Function):
    """Streaming softmax-weighted mean of similarities; the backward recomputes the chunks (O(chunk) memory)."""

    @staticmethod
    def forward(ctx, q: Tensor, r: Tensor, temperature: float, chunk: int) -> Tensor:  # type: ignore[override]
        m, k = q.shape[0], r.shape[0]
        rows = max(1, min(m, chunk))
        cols = max(1, min(k, chunk // rows))
        mu = torch.full((m,), -math.inf, dtype=q.dtype, device=q.device)
        z = torch.zeros(m, dtype=q.dtype, device=q.device)
        a = torch.zeros(m, dtype=q.dtype, device=q.device)
        with _search.full_fp32_matmul():
            for r0 in range(0, m, rows):
                qs = q[r0 : r0 + rows]
                mu_s, z_s, a_s = mu[r0 : r0 + rows], z[r0 : r0 + rows], a[r0 : r0 + rows]
                for k0 in range(0, k, cols):
                    s = qs @ r[k0 : k0 + cols].T
                    new_mu = torch.maximum(mu_s, s.amax(dim=1))
                    rescale = torch.exp((mu_s - new_mu) / temperature)  # exp(-inf) = 0 on the first chunk
                    e = torch.exp((s - new_mu.unsqueeze(1)) / temperature)
                    z_s.mul_(rescale).add_(e.sum(dim=1))
                    a_s.mul_(rescale).add_((e * s).sum(dim=1))
                    mu_s.copy_(new_mu)
        soft = a / z
        ctx.save_for_backward(q, r, mu, z, soft)
        ctx.temperature = temperature
        ctx.tiles = (rows, cols)
        return soft

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, None, None, None]:  # type: ignore[override]
        q, r, mu, z, soft = ctx.saved_tensors
        t = ctx.temperature
        rows, cols = ctx.tiles
        grad_q = torch.zeros_like(q)
        with _search.full_fp32_matmul():
            for r0 in range(0, q.shape[0], rows):
                qs = q[r0 : r0 + rows]
                mu_s, z_s, soft_s = mu[r0 : r0 + rows, None], z[r0 : r0 + rows, None], soft[r0 : r0 + rows, None]
                g = grad_q[r0 : r0 + rows]
                for k0 in range(0, r.shape[0], cols):
                    rc = r[k0 : k0 + cols]
                    s = qs @ rc.T
                    p = torch.exp((s - mu_s) / t) / z_s
                    g.addmm_(p * (1.0 + (s - soft_s) / t), rc)  # d soft / d s_k = pi_k (1 + (s_k - soft) / T)
        return grad_q * grad.unsqueeze(1), None, None, None


def soft_gibbs_max(q: Tensor, r: Tensor, temperature: float, chunk_size: int | None = None) -> Tensor:
    """Softmax-weighted mean of ``<q_i, r_k>`` over ``k`` at ``temperature`` for unit rows (differentiable in q)."""
    chunk = chunk_size or _search.default_chunk_size(q.device)
    return _search.gibbs_mean(q, r.to(q.dtype), check_temperature(temperature), chunk)


def soft_best_match_similarity(
    features: Tensor,
    reference_features: Tensor | Sequence[Tensor],
    temperature: float,
    *,
    chunk_size: int | None = None,
) -> Tensor:
    """The soft relaxation of :func:`best_match_similarity` (a Gibbs mean), differentiable w.r.t. ``features``.

    Per test position, the max over reference vectors is replaced by the Gibbs mean
    ``soft = sum_k pi_k s_k`` with ``pi = softmax(s / T)``. It never exceeds the hard max, is non-increasing in
    ``T`` and tends to the max as ``T -> 0`` (gap at most ``T log K``). Computed streaming over reference chunks
    (no ``M x K`` matrix, also in the backward pass); numerically stable down to ``T = 1e-4``.

    Args:
        features: ``(C, h, w)`` or ``(B, C, h, w)`` raw test features.
        reference_features: as :func:`best_match_similarity` (treated as constants).
        temperature: ``T > 0``.
        chunk_size: maximum similarities materialised at once.

    Returns:
        ``(h, w)`` or ``(B, h, w)``.

    Example:
        >>> import torch
        >>> refs = torch.rand(2, 4, 3, 3)
        >>> f = torch.rand(4, 3, 3, requires_grad=True)
        >>> s = soft_best_match_similarity(f, refs, temperature=0.05)
        >>> s.sum().backward(); f.grad.shape
        torch.Size([4, 3, 3])
    """
    t = check_temperature(temperature)
    chunk_size = check_chunk_size(chunk_size)
    q, out_shape = _query_rows(features)
    r = _reference_rows(reference_features, q.shape[1], q.dtype, q.device)
    return soft_gibbs_max(q, r, t, chunk_size).view(out_shape)
