"""PuzzleSim as pure functions (Hermann, Condor, Didyk, ICCV 2025, "Puzzle Similarity", arXiv 2411.17489).

Every position of a test image's CNN feature map is compared with every feature vector of every reference image
of the same layer; the best cosine similarity is its score ("can this puzzle piece be found anywhere in the
references?"). Low values mark artifacts. No aligned ground truth is needed.

This module holds the tensor math: unit feature rows, the choice of the exact Eq. 1 search and its dispatch (plain,
bf16-screened, projection-bound, faiss, and the gradient path through the argmax), the layer
combination (Eq. 3) and the raw-feature functions (:func:`best_match_similarity`, its soft Gibbs-mean relaxation).
Scoring images against a :class:`~scenemetrics.puzzlesim.PuzzleSimMemory` (backbone features, searches on its
cached indices) is the memory's job: :meth:`~scenemetrics.puzzlesim.PuzzleSimMemory.similarity_map_for`.

Numerics (float32, CPU): within 1e-4 of the authors' ``puzzle-sim`` 1.0.1 (observed ~5e-7); screened and plain
search agree to 1e-6, as do different ``chunk_size``; repeated calls are bitwise equal on CPU. CPU vs CUDA
float32: 1e-3 (cuDNN convolutions); CUDA float16 / bfloat16 vs float32: 2e-3 / 1e-2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.checks import check_choice
from scenemetrics.puzzlesim import bf16 as _bf16
from scenemetrics.puzzlesim import search as _search
from scenemetrics.puzzlesim.options import SCREENING, Screening, check_chunk_size

__all__ = [
    "best_match_similarity",
    "check_temperature",
    "combine_layer_maps",
    "search_method",
    "soft_best_match_similarity",
    "soft_gibbs_max",
    "unit_rows",
    "unit_rows_into",
]


# ------------------------------------------------------------------------------------------------- Eq. 1 and 3
def unit_rows(f: Tensor) -> Tensor:
    """``(B, C, h, w)`` features -> ``(B*h*w, C)`` rows scaled to unit length (norm clamped at 1e-12).

    Example:
        >>> unit_rows(torch.tensor([[[[3.0]], [[4.0]]]]))
        tensor([[0.6000, 0.8000]])
    """
    return F.normalize(f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]), p=2, dim=1, eps=1e-12)


def unit_rows_into(f: Tensor, out: Tensor) -> Tensor:
    """:func:`unit_rows` of ``f`` written into the preallocated ``(B*h*w, C)`` matrix ``out``, without the
    permuted and normalised temporaries (bitwise equal to ``unit_rows(f)`` when ``out`` has ``f``'s dtype; another
    ``out`` dtype gets the float rows cast one image at a time). Returns ``out``.

    Example:
        >>> unit_rows_into(torch.tensor([[[[3.0]], [[4.0]]]]), torch.empty(1, 2))
        tensor([[0.6000, 0.8000]])
    """
    b, c, h, w = f.shape
    if out.shape != (b * h * w, c):
        raise ValueError(
            f"`out` must have shape {(b * h * w, c)} for features of shape {tuple(f.shape)}; got {tuple(out.shape)}"
        )
    if not out.is_contiguous():
        raise ValueError("`out` must be contiguous (e.g. a row range of a contiguous matrix)")
    if out.dtype != f.dtype:
        per = h * w
        for i in range(b):
            out[i * per : (i + 1) * per] = unit_rows(f[i : i + 1])
        return out
    rows = out.view(b, h, w, c)
    rows.copy_(f.permute(0, 2, 3, 1))
    norms = torch.linalg.vector_norm(out, 2, dim=1, keepdim=True).clamp_min_(1e-12)
    return out.div_(norms)


def search_method(screening: str, device: torch.device, k: int, need_grad: bool, precision: str = "float32") -> str:
    """Which exact search a call runs: ``"plain"``, ``"bf16"`` (bf16-screened) or ``"bound"`` (projection bound).

    ``"off"`` -> plain (the exhaustive reference); ``"on"`` -> bf16-screened (float32, no gradients). ``"auto"``:
    on a CPU with float32 and at least 4 blocks of reference vectors, bf16-screened where the bf16 decision enables
    it and no gradient is needed, otherwise the projection-bound search (which also gives the argmax for gradients);
    plain elsewhere, GPUs included: there the chunked GEMM + max of the plain search was the fastest exact search
    measured (docs/puzzlesim.md, "On a GPU").

    Example:
        >>> search_method("off", torch.device("cpu"), 10_000, False)
        'plain'
    """
    if screening == "off":
        return "plain"
    if precision != "float32":
        return "plain"
    if screening == "on":
        return "bf16"
    if device.type != "cpu" or k < 4 * _search.BLOCK:
        return "plain"
    if not need_grad and bool(_bf16.bf16_decision()["enabled"]):
        return "bf16"
    return "bound"


def _best_match(
    q: Tensor,
    r: Tensor,
    method: str,
    chunk: int,
    need_grad: bool,
    *,
    bound_index: Callable[[], _search.BoundIndex],
    screen_index: Callable[[], _search.ScreenIndex],
    faiss: Callable[[], Tensor] | None = None,
) -> Tensor:
    """Eq. 1 for unit rows ``q`` against unit rows ``r`` with the chosen search (:func:`search_method`); the indices
    are built on demand by the given functions (a memory caches them).

    With ``need_grad`` the argmax is found without gradients and the similarity recomputed from it, so autograd
    never sees an ``M x K`` matrix (the sub-gradient of the max).
    """
    if need_grad:
        with torch.no_grad():
            if method == "bound":
                index = bound_index()
                r = index.vectors
                _, idx = _search.bound_max(q.detach(), index, chunk, with_indices=True)
            else:
                _, idx = _search.plain_max(q.detach().to(r.dtype), r, chunk, with_indices=True)
        return (q * r[idx].to(q.dtype)).sum(dim=1)
    if method == "faiss":
        assert faiss is not None
        return faiss()
    if method == "bf16":
        return _search.screened_max(q, screen_index(), chunk)
    if method == "bound":
        return _search.bound_max(q, bound_index(), chunk)[0]
    return _search.plain_max(q.to(r.dtype), r, chunk)[0]


def combine_layer_maps(
    maps: dict[Any, Tensor], layers: Sequence, weights: Sequence[float], shape: torch.Size, device: torch.device
) -> Tensor:
    """Eq. 3: ``sum_i w_i * Upsample(S_{l_i})`` (bilinear, ``align_corners=True``) at the size of ``shape[-2:]``.

    Example:
        >>> maps = {2: torch.ones(1, 2, 2), 3: torch.zeros(1, 1, 1)}
        >>> out = combine_layer_maps(maps, (2, 3), (0.75, 0.25), torch.Size([1, 3, 4, 4]), torch.device("cpu"))
        >>> out.shape, bool(torch.allclose(out, torch.full_like(out, 0.75)))
        (torch.Size([1, 4, 4]), True)
    """
    b, _, h, w = shape
    if b == 0:
        return torch.zeros(0, h, w, device=device)
    total: Tensor | None = None
    for layer, wgt in zip(layers, weights, strict=True):
        # weight before upsampling, summed in layer order: the authors' order of operations
        up = F.interpolate((maps[layer] * wgt).unsqueeze(1), size=(h, w), mode="bilinear", align_corners=True)
        total = up if total is None else total + up
    assert total is not None  # layers is never empty
    return total.squeeze(1).to(device)


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
    vals = _best_match(
        q,
        r,
        method,
        chunk,
        need_grad,
        bound_index=lambda: _search.BoundIndex.build(r.detach()),
        screen_index=lambda: _search.ScreenIndex.build(r),
    )
    return vals.to(q.dtype).view(out_shape)


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
