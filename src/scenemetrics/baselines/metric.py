"""The baselines as torchmetrics classes: distribution distances between the renders and the references (FID, KID,
CMMD, FD-DINOv2), their "joint" variants over (source view, image) pairs, and the embedding similarity of a render
with its reference (CLIP-S, DINO similarity).

Every class takes ``features=`` (``"inception"``, ``"clip"`` or ``"dinov2"``; see
:class:`~scenemetrics.baselines.FeatureSpec`) and keeps only that spec: the network is shared through a cache,
runs on the images' device, and is neither a state nor part of ``state_dict()``. States are fixed-size sums where the
math allows (the Fréchet moments, the similarity sums) and ``cat`` lists of embeddings otherwise (KID, CMMD); all
sync across processes. ``compute()`` before enough updates returns NaN with a ``UserWarning``.

The distribution metrics take ``update(preds, target)``: ``preds`` are renders (the "fake" set), ``target`` reference
views (the "real" set). The two sets need not be paired or of equal size, and either may be an empty batch
(``preds[:0]``), so a reference set can be fed once and renders later. The joint variants take
``update(source, preds, target)`` with one source view per render and reference: the fake set holds
``[φ(source), φ(render)]``, the real set ``[φ(source), φ(reference)]`` (:func:`~scenemetrics.baselines.joint_features`).

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.baselines import FrechetDistance, random_dinov2_folder
    >>> folder = random_dinov2_folder(os.path.join(tempfile.mkdtemp(), "dinov2"))  # doctest: +SKIP
    >>> fd = FrechetDistance("dinov2", weights=folder)  # doctest: +SKIP
    >>> references = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    >>> fd.update(references, references)  # doctest: +SKIP
    >>> abs(float(fd.compute())) < 1e-4  # doctest: +SKIP
    True
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from scenemetrics.baselines.features import FeatureSpec, embed, joint_features
from scenemetrics.baselines.functional import (
    CMMD_SCALE,
    CMMD_SIGMA,
    cmmd,
    cosine_similarity,
    frechet_distance_from_moments,
    kernel_distance,
)
from scenemetrics.checks import check_positive_int

__all__ = [
    "CMMD",
    "EmbeddingSimilarity",
    "FrechetDistance",
    "JointCMMD",
    "JointFrechetDistance",
    "KernelDistance",
]


def _nan(metric: Metric, why: str) -> Tensor:
    warnings.warn(f"{type(metric).__name__}.compute(): {why}; returning NaN", UserWarning, stacklevel=3)
    return torch.tensor(math.nan, dtype=torch.float32, device=metric.device)


class _FeatureMetric(Metric):
    """A metric on the embeddings of one network: holds the resolved :class:`FeatureSpec` (never the network)."""

    is_differentiable = False
    full_state_update = False
    joint = False

    def __init__(
        self,
        features: str = "inception",
        *,
        weights: str | os.PathLike | None = None,
        revision: str | None = None,
        antialias: bool = True,
        image_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = FeatureSpec(features, weights, revision, antialias, image_size).resolved()
        self.feature_dim = self.spec.dim * (2 if self.joint else 1)

    def _embed(self, images: Tensor, name: str) -> Tensor:
        return embed(self.spec, images, name)

    def _fake_real(self, args: tuple[Tensor, ...]) -> tuple[Tensor, Tensor]:
        """``(fake, real)`` embeddings of an update's arguments: ``(preds, target)`` or ``(source, preds, target)``."""
        if not self.joint:
            preds, target = args
            return self._embed(preds, "preds"), self._embed(target, "target")
        source, preds, target = args
        s, p, t = self._embed(source, "source"), self._embed(preds, "preds"), self._embed(target, "target")
        if not s.shape[0] == p.shape[0] == t.shape[0]:
            raise ValueError(
                "joint metrics pair every render and reference with its source view: `source`, `preds` and `target` "
                f"must hold the same number of images; received {s.shape[0]}, {p.shape[0]} and {t.shape[0]}"
            )
        return joint_features(s, p), joint_features(s, t)


class FrechetDistance(_FeatureMetric):
    """Fréchet distance between the embeddings of the renders and of the references: FID with
    ``features="inception"`` (torch-fidelity's InceptionV3 through torchmetrics, pool3), FD-DINOv2 with
    ``features="dinov2"`` (DINOv2 ViT-L/14 CLS). Lower is better.

    States are the sums of the embeddings and of their outer products (float64, summed across processes), as
    torchmetrics' ``FrechetInceptionDistance``; :func:`~scenemetrics.baselines.frechet_distance_from_moments` computes
    the distance. Both sets need 2 images or more; on a handful the covariances are rank-deficient and the value is
    dominated by the sample size (compare methods on equal numbers of views).

    Args:
        features: ``"inception"`` (FID), ``"dinov2"`` (FD-DINOv2) or ``"clip"``.
        weights: the network's weights (see :class:`~scenemetrics.baselines.FeatureSpec`; ``None``: the default
            checkpoint or model, found in the caches or downloaded and verified).
        revision: Hugging Face revision (clip, dinov2).
        antialias: Inception only: antialiased resize (torchmetrics' default) or torch-fidelity's original resize.
        image_size: DINOv2 only: the side images are resized to (``None``: FD-DINOv2's 224).
        kwargs: torchmetrics ``Metric`` options.

    Example:
        >>> fd = FrechetDistance("dinov2", weights=folder)  # doctest: +SKIP
        >>> fd.update(renders, references)  # doctest: +SKIP
        >>> fd.compute()  # doctest: +SKIP
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    fake_sum: Tensor
    fake_outer: Tensor
    fake_count: Tensor
    real_sum: Tensor
    real_outer: Tensor
    real_count: Tensor

    def __init__(self, features: str = "inception", **kwargs: Any) -> None:
        super().__init__(features, **kwargs)
        d = self.feature_dim
        for side in ("fake", "real"):
            self.add_state(f"{side}_sum", torch.zeros(d, dtype=torch.float64), dist_reduce_fx="sum")
            self.add_state(f"{side}_outer", torch.zeros(d, d, dtype=torch.float64), dist_reduce_fx="sum")
            self.add_state(f"{side}_count", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add renders (``preds``, the fake set) and references (``target``, the real set): ``(B, 3, H, W)`` float in
        [0, 1] or uint8; the batch sizes may differ, and either may be empty."""
        self._add(*self._fake_real((preds, target)))

    def _add(self, fake: Tensor, real: Tensor) -> None:
        for side, f in (("fake", fake), ("real", real)):
            f = f.to(self.fake_sum.device, torch.float64)
            getattr(self, f"{side}_sum").add_(f.sum(0))
            getattr(self, f"{side}_outer").add_(f.T @ f)
            getattr(self, f"{side}_count").add_(f.shape[0])

    def _moments(self, side: str) -> tuple[Tensor, Tensor]:
        n = getattr(self, f"{side}_count").double()
        mean = getattr(self, f"{side}_sum") / n
        cov = (getattr(self, f"{side}_outer") - n * torch.outer(mean, mean)) / (n - 1)
        return mean, cov

    def compute(self) -> Tensor:
        """The Fréchet distance (float32 0-dim); NaN with a ``UserWarning`` while a set has fewer than 2 images."""
        counts = int(self.fake_count), int(self.real_count)
        if min(counts) < 2:
            return _nan(self, f"needs 2 or more renders and references; has {counts[0]} and {counts[1]}")
        return frechet_distance_from_moments(*self._moments("fake"), *self._moments("real")).float()


class JointFrechetDistance(FrechetDistance):
    """The joint Fréchet distance (PRISM's JFID with ``features="inception"``, JFDD with ``features="dinov2"``):
    :class:`FrechetDistance` between the (source view, render) pairs and the (source view, reference) pairs, each
    pair embedded as ``[φ(source), φ(image)]``. Lower is better.

    Args: as :class:`FrechetDistance`.

    Example:
        >>> jfd = JointFrechetDistance("dinov2", weights=folder)  # doctest: +SKIP
        >>> jfd.update(sources, renders, references)  # doctest: +SKIP
    """

    joint = True

    def update(self, source: Tensor, preds: Tensor, target: Tensor) -> None:  # type: ignore[override]
        """Add ``B`` (source, render) and ``B`` (source, reference) pairs: three ``(B, 3, H, W)`` batches."""
        self._add(*self._fake_real((source, preds, target)))


class _EmbeddingSets(_FeatureMetric):
    """Keeps every embedding (``cat`` list states): for distances that need the samples, not only their moments."""

    fake: list[Tensor]
    real: list[Tensor]

    def __init__(self, features: str, **kwargs: Any) -> None:
        super().__init__(features, **kwargs)
        self.add_state("fake", [], dist_reduce_fx="cat")
        self.add_state("real", [], dist_reduce_fx="cat")

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add renders (``preds``, the fake set) and references (``target``, the real set): ``(B, 3, H, W)`` float in
        [0, 1] or uint8; the batch sizes may differ, and either may be empty."""
        self._add(*self._fake_real((preds, target)))

    def _add(self, fake: Tensor, real: Tensor) -> None:
        # flattened: torchmetrics syncs a rank that saw no image with a 1-D empty placeholder, which must gather with
        # the other ranks' tensors; the rows are restored from `feature_dim`
        self.fake.append(fake.float().reshape(-1))
        self.real.append(real.float().reshape(-1))

    def _rows(self, side: str) -> Tensor:
        value = getattr(self, side)
        if isinstance(value, list):
            value = dim_zero_cat(value) if value else torch.zeros(0, device=self.device)
        return value.reshape(-1, self.feature_dim)

    def _sets(self) -> tuple[Tensor, Tensor] | str:
        """``(fake, real)`` rows, or why they cannot be compared (fewer than 2 in a set)."""
        fake, real = self._rows("fake"), self._rows("real")
        if fake.shape[0] < 2 or real.shape[0] < 2:
            return f"needs 2 or more renders and references; has {fake.shape[0]} and {real.shape[0]}"
        return fake, real.to(fake.device)


class KernelDistance(_EmbeddingSets):
    """Kernel Inception Distance (KID, Bińkowski et al. 2018) with ``features="inception"``: the unbiased polynomial
    kernel MMD², averaged over random subsets (:func:`~scenemetrics.baselines.kernel_distance`, torchmetrics'
    ``poly_mmd``). Lower is better.

    Args:
        features: ``"inception"`` (KID) or another embedding.
        subsets: number of random subsets.
        subset_size: rows per subset (reduced to the smaller set, with a warning, when larger).
        degree, gamma, coef: the kernel ``(gamma x·y + coef)^degree`` (``gamma=None``: ``1/D``).
        seed: seed of the subset draws (the same seed reproduces torchmetrics' ``KernelInceptionDistance`` after
            ``torch.manual_seed(seed)``).
        weights, revision, antialias, image_size: see :class:`FrechetDistance`.
        kwargs: torchmetrics ``Metric`` options.

    Attributes:
        std_: the standard deviation of the subsets' values at the last ``compute()`` (torchmetrics returns it next
            to the mean; here ``compute()`` returns the mean, one column in ``scenemetrics eval``).
    """

    higher_is_better = False

    def __init__(
        self,
        features: str = "inception",
        *,
        subsets: int = 100,
        subset_size: int = 1000,
        degree: int = 3,
        gamma: float | None = None,
        coef: float = 1.0,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(features, **kwargs)
        self.subsets = check_positive_int(subsets, "subsets")
        self.subset_size = check_positive_int(subset_size, "subset_size")
        self.degree = check_positive_int(degree, "degree")
        self.gamma = None if gamma is None else float(gamma)
        self.coef = float(coef)
        self.seed = int(seed)
        self.std_: Tensor | None = None

    def compute(self) -> Tensor:
        """KID, the mean over the subsets (float32 0-dim; the standard deviation goes to :attr:`std_`); NaN with a
        ``UserWarning`` while a set has fewer than 2 images."""
        sets = self._sets()
        if isinstance(sets, str):
            self.std_ = None
            return _nan(self, sets)
        mean, std = kernel_distance(
            *sets,
            subsets=self.subsets,
            subset_size=self.subset_size,
            degree=self.degree,
            gamma=self.gamma,
            coef=self.coef,
            seed=self.seed,
        )
        self.std_ = std.float()
        return mean.float()


class CMMD(_EmbeddingSets):
    """CMMD (Jayasumana et al. 2024, "Rethinking FID"): 1000 x the RBF MMD² (σ = 10) between the CLIP embeddings of
    the renders and of the references (:func:`~scenemetrics.baselines.cmmd`, on the core
    :func:`scenemetrics.stats.mmd_rbf`). Lower is better.

    Args:
        features: ``"clip"`` (CMMD: CLIP ViT-L/14 at 336 px by default) or another embedding.
        sigma: the RBF bandwidth σ.
        scale: the factor CMMD reports the MMD² in.
        unbiased: the unbiased estimator (default) or the biased V-statistic of google-research/cmmd's code.
        weights, revision, antialias, image_size: see :class:`FrechetDistance`.
        kwargs: torchmetrics ``Metric`` options.
    """

    higher_is_better = False

    def __init__(
        self,
        features: str = "clip",
        *,
        sigma: float = CMMD_SIGMA,
        scale: float = CMMD_SCALE,
        unbiased: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(features, **kwargs)
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not math.isfinite(sigma) or sigma <= 0:
            raise ValueError(f"`sigma` must be a positive number; received {sigma!r}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
            raise ValueError(f"`scale` must be a positive number; received {scale!r}")
        self.sigma, self.scale, self.unbiased = float(sigma), float(scale), bool(unbiased)

    def compute(self) -> Tensor:
        """CMMD (float32 0-dim); NaN with a ``UserWarning`` while a set has fewer than 2 images."""
        sets = self._sets()
        if isinstance(sets, str):
            return _nan(self, sets)
        return cmmd(*sets, sigma=self.sigma, scale=self.scale, unbiased=self.unbiased).float()


class JointCMMD(CMMD):
    """The joint CMMD (PRISM's JCMMD): :class:`CMMD` between the (source view, render) pairs and the (source view,
    reference) pairs, each embedded as ``[φ(source), φ(image)]`` (two unit CLIP vectors, so squared distances range
    over [0, 8] instead of [0, 4]; σ stays CMMD's 10). Lower is better.

    Args: as :class:`CMMD`.
    """

    joint = True

    def update(self, source: Tensor, preds: Tensor, target: Tensor) -> None:  # type: ignore[override]
        """Add ``B`` (source, render) and ``B`` (source, reference) pairs: three ``(B, 3, H, W)`` batches."""
        self._add(*self._fake_real((source, preds, target)))


class EmbeddingSimilarity(_FeatureMetric):
    """Mean cosine similarity between the embedding of each render and of its reference: CLIP-S with
    ``features="clip"``, the DINO similarity with ``features="dinov2"``. Higher is better; 1 for identical images.

    The reference is whatever ``target`` holds: the ground-truth view ("CLIP-S w/ GT" in PRISM's Table 3) or the
    source view ("CLIP-S w/ src"). This is the plain cosine in [-1, 1]: torchmetrics' ``CLIPScore`` reports
    ``100 x max(cos, 0)`` instead (and compares images with text prompts by default).

    Args:
        features: ``"clip"`` or ``"dinov2"`` (or ``"inception"``).
        weights, revision, antialias, image_size: see :class:`FrechetDistance`.
        kwargs: torchmetrics ``Metric`` options.

    Attributes:
        last_scores: ``(B,)`` similarities of the last update (not a state).
    """

    higher_is_better = True
    plot_lower_bound = -1.0
    plot_upper_bound = 1.0

    score_sum: Tensor
    count: Tensor

    def __init__(self, features: str = "clip", **kwargs: Any) -> None:
        super().__init__(features, **kwargs)
        self.add_state("score_sum", torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.last_scores: Tensor | None = None

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add the similarities of ``B`` renders with their references (two ``(B, 3, H, W)`` batches)."""
        p, t = self._embed(preds, "preds"), self._embed(target, "target")
        if p.shape[0] != t.shape[0]:
            raise ValueError(
                f"`preds` and `target` must hold the same number of images (one reference per render); received "
                f"{p.shape[0]} and {t.shape[0]}"
            )
        scores = cosine_similarity(p, t)
        self.last_scores = scores.float()
        self.score_sum += scores.to(self.score_sum.device).sum()
        self.count += scores.shape[0]

    def compute(self) -> Tensor:
        """The mean similarity (float32 0-dim); NaN with a ``UserWarning`` before any pair was added."""
        if int(self.count) == 0:
            return _nan(self, "no render has been scored yet")
        return (self.score_sum / self.count).float()
