"""The distances of the baselines, on embeddings: Fréchet distance (FID, FD-DINOv2), the KID polynomial-kernel MMD,
CMMD, and the cosine similarity of CLIP-S / DINO similarity.

Every function takes ``(N, D)`` embeddings (``fake`` = the renders', ``real`` = the references') and computes in
float64. Which package computes what:

* :func:`frechet_distance`: written here from the definition
  ``||mu_f - mu_r||² + tr(S_f) + tr(S_r) - 2 tr((S_f S_r)^(1/2))``, with the trace of the matrix square root taken as
  the sum of the square roots of the eigenvalues of the symmetric ``S_r^(1/2) S_f S_r^(1/2)`` (torch ``eigh``); it
  equals torchmetrics' ``FrechetInceptionDistance`` on the same features (tested).
* :func:`kernel_distance`: torchmetrics' ``poly_mmd`` (``torchmetrics.image.kid``) on random subsets, drawn as
  torchmetrics' ``KernelInceptionDistance`` draws them, from a seeded generator.
* :func:`cmmd`: :func:`scenemetrics.stats.mmd_rbf` (the core RBF MMD shared with PRISM) with CMMD's σ = 10 and scale
  1000.

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> x = torch.randn(200, 4, generator=g, dtype=torch.float64)
    >>> round(float(frechet_distance(x + 1.0, x)), 6)  # a shift of 1 in 4 dimensions: ||mu_f - mu_r||² = 4
    4.0
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor

from scenemetrics.stats import mmd_rbf

__all__ = [
    "CMMD_SCALE",
    "CMMD_SIGMA",
    "cmmd",
    "cosine_similarity",
    "frechet_distance",
    "frechet_distance_from_moments",
    "kernel_distance",
]

CMMD_SIGMA = 10.0
"""CMMD's RBF bandwidth σ (google-research/cmmd ``_SIGMA``)."""

CMMD_SCALE = 1000.0
"""CMMD's scale (google-research/cmmd ``_SCALE``: "to make the metric more human readable")."""


def _features(x: Tensor, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor of shape (N, D); received {type(x).__name__}")
    if x.ndim != 2 or not x.is_floating_point():
        raise ValueError(f"`{name}` must be a floating (N, D) tensor; received {x.dtype} of shape {tuple(x.shape)}")
    if x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` contains NaN or infinite values")
    return x.double()


def _pair(fake: Tensor, real: Tensor) -> tuple[Tensor, Tensor]:
    f, r = _features(fake, "fake"), _features(real, "real")
    if f.shape[1] != r.shape[1]:
        raise ValueError(f"`fake` and `real` must have the same dimension D; received {f.shape[1]} and {r.shape[1]}")
    return f, r.to(f.device)


def _sqrt_psd(s: Tensor) -> Tensor:
    values, vectors = torch.linalg.eigh(s)
    return (vectors * values.clamp_min(0).sqrt()) @ vectors.T


def frechet_distance_from_moments(mu_fake: Tensor, cov_fake: Tensor, mu_real: Tensor, cov_real: Tensor) -> Tensor:
    """The Fréchet distance between two Gaussians ``N(mu_fake, cov_fake)`` and ``N(mu_real, cov_real)`` (float64).

    ``||mu_f - mu_r||² + tr(S_f) + tr(S_r) - 2 tr((S_f S_r)^(1/2))``; the last trace is the sum of the square roots
    of the (clamped non-negative) eigenvalues of ``S_r^(1/2) S_f S_r^(1/2)``, which has the eigenvalues of
    ``S_f S_r`` and is symmetric, so ``eigh`` applies.
    """
    mu_f, mu_r, s_f, s_r = (t.double() for t in (mu_fake, mu_real, cov_fake, cov_real))
    root_r = _sqrt_psd(s_r)
    inner = root_r @ s_f @ root_r
    trace_sqrt = torch.linalg.eigvalsh((inner + inner.T) / 2).clamp_min(0).sqrt().sum()
    return (mu_f - mu_r).square().sum() + s_f.trace() + s_r.trace() - 2 * trace_sqrt


def frechet_distance(fake: Tensor, real: Tensor) -> Tensor:
    """Fréchet distance between two embedding sets (FID on Inception features, FD-DINOv2 on DINOv2 features).

    Means and unbiased covariances (``N - 1``), as torchmetrics' ``FrechetInceptionDistance`` and pytorch-fid compute
    them, then :func:`frechet_distance_from_moments`.

    Args:
        fake: ``(N, D)`` embeddings of the renders, ``N >= 2``.
        real: ``(M, D)`` embeddings of the references, ``M >= 2``.

    Returns:
        0-dim float64 tensor, ``>= 0`` up to rounding.

    Raises:
        ValueError: fewer than 2 rows in a set, different ``D``, non-finite values.
    """
    f, r = _pair(fake, real)
    for name, t in (("fake", f), ("real", r)):
        if t.shape[0] < 2:
            raise ValueError(f"`{name}` needs at least 2 embeddings for a covariance; received {t.shape[0]}")
    return frechet_distance_from_moments(f.mean(0), torch.cov(f.T), r.mean(0), torch.cov(r.T))


def kernel_distance(
    fake: Tensor,
    real: Tensor,
    *,
    subsets: int = 100,
    subset_size: int = 1000,
    degree: int = 3,
    gamma: float | None = None,
    coef: float = 1.0,
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    """Kernel Inception Distance (Bińkowski et al. 2018): the unbiased MMD² with the polynomial kernel
    ``k(x, y) = (gamma x·y + coef)^degree`` (``gamma = 1/D`` by default), averaged over random subsets.

    Each of the ``subsets`` rounds draws ``subset_size`` real and then ``subset_size`` fake rows without replacement
    (``randperm`` from a generator seeded with ``seed``: torchmetrics' ``KernelInceptionDistance`` draws the same rows
    after ``torch.manual_seed(seed)``) and evaluates torchmetrics' ``poly_mmd`` on them.

    A ``subset_size`` larger than a set is reduced to the smaller set's size, with a ``UserWarning`` (torchmetrics
    raises instead; a scene has far fewer views than KID's customary 1000): every subset is then a permutation of
    the smaller set.

    Returns:
        ``(mean, std)`` over the subsets (float64 0-dim tensors; ``std`` is the population standard deviation, as
        torchmetrics').

    Raises:
        ValueError: fewer than 2 rows in a set, different ``D``, a non-positive ``subsets`` / ``subset_size`` /
            ``degree``.
    """
    from torchmetrics.image.kid import poly_mmd

    f, r = _pair(fake, real)
    for name, value in (("subsets", subsets), ("subset_size", subset_size), ("degree", degree)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be an int >= 1; received {value!r}")
    n = min(f.shape[0], r.shape[0])
    if n < 2:
        raise ValueError(
            f"KID needs at least 2 embeddings in each set; received {f.shape[0]} fake and {r.shape[0]} real"
        )
    size = subset_size
    if size > n:
        warnings.warn(
            f"kernel_distance: subset_size={subset_size} is larger than the sets ({f.shape[0]} fake, {r.shape[0]} "
            f"real embeddings); using subsets of {n}",
            UserWarning,
            stacklevel=2,
        )
        size = n
    g = torch.Generator().manual_seed(int(seed))
    scores = []
    for _ in range(subsets):
        real_rows = torch.randperm(r.shape[0], generator=g)[:size].to(r.device)
        fake_rows = torch.randperm(f.shape[0], generator=g)[:size].to(f.device)
        scores.append(poly_mmd(r[real_rows], f[fake_rows], degree, gamma, coef))
    values = torch.stack(scores)
    return values.mean(), values.std(unbiased=False)


def cmmd(
    fake: Tensor, real: Tensor, *, sigma: float = CMMD_SIGMA, scale: float = CMMD_SCALE, unbiased: bool = True
) -> Tensor:
    """CMMD (Jayasumana et al. 2024): ``scale`` x the RBF MMD² (``exp(-||a - b||² / (2 σ²))``) between two sets of CLIP
    embeddings, by :func:`scenemetrics.stats.mmd_rbf`.

    ``unbiased=True`` (default) is the unbiased U-statistic (self-pairs excluded, as PRISM's MMD); ``unbiased=False``
    the biased V-statistic that google-research/cmmd's ``distance.py`` computes (means over all pairs, self-pairs
    included; its docstring says so). The two differ by ``O(1/N)``, which matters for the few views of a scene:
    choose one and keep it.

    Returns:
        0-dim float64 tensor (the unbiased estimate can be slightly negative for two samples of one distribution).

    Raises:
        ValueError: fewer than 2 rows in a set, different ``D``, a non-positive ``sigma``.
    """
    f, r = _pair(fake, real)
    if not (isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"`sigma` must be a positive number; received {sigma!r}")
    return float(scale) * mmd_rbf(f, r, float(sigma), unbiased=unbiased)


def cosine_similarity(a: Tensor, b: Tensor) -> Tensor:
    """Per-row cosine similarity of two ``(N, D)`` embedding batches (CLIP-S, DINO similarity), float64 ``(N,)``.

    Example:
        >>> cosine_similarity(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])).tolist()
        [0.7071067811865475]
    """
    x, y = _features(a, "a"), _features(b, "b").to(a.device)
    if x.shape != y.shape:
        raise ValueError(f"`a` and `b` must have the same shape; received {tuple(x.shape)} and {tuple(y.shape)}")
    return torch.nn.functional.cosine_similarity(x, y, dim=1, eps=1e-12)
