"""PRISM as torchmetrics classes: reference-based ``PRISMDistance`` and reference-free ``PRISMMMD``.

The extractor and head are frozen helpers, not part of the metric's ``state_dict``; ``metric.to(device)`` still
moves them (and ``PRISMMMD``'s anchors). Scores from this implementation are not the paper's numbers: no PRISM head
was published, so train one (:func:`~scenemetrics.prism.train_head`) or use ``head=None`` (raw diffusion features).

Pose format for every ``update`` (and the callbacks' ``extras["pose"]``): a ``(B, 3)`` or ``(3,)`` tensor
``(delta_polar_deg, delta_azimuth_deg, delta_radius)`` = target minus source in Zero123's convention (polar from
+z, so ``delta_polar = -delta_elevation``; azimuth counter-clockwise seen from +z; radius in scene units, 0 at a
fixed distance). :func:`~scenemetrics.prism.relative_pose` and :func:`~scenemetrics.prism.spherical_from_c2w` build
it from cameras.

Example:
    >>> import scenemetrics as sm
    >>> extractor = sm.prism.Zero123Features.from_pretrained("zero123-xl-diffusers")  # doctest: +SKIP
    >>> metric = sm.PRISMDistance(extractor, sm.prism.ProjectionHead.load("head.safetensors"))  # doctest: +SKIP
    >>> metric.update(source, pred, target, pose)  # doctest: +SKIP
    >>> metric.compute()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors

from scenemetrics.prism.anchors import read_anchors
from scenemetrics.prism.anchors import save_anchors as _save_anchors_file
from scenemetrics.prism.features import (
    Zero123Features,
    attach_frozen,
    embed_features,
    move_frozen,
    prism_distance,
    prism_embed,
)
from scenemetrics.stats.mmd import MMDOptions, mmd_with_options

__all__ = ["PRISMMMD", "PRISMDistance"]


class _FrozenHelpers(Metric):
    """Holds the extractor and head outside ``_modules`` (so outside ``state_dict``) and moves them with the metric."""

    def _set_helpers(self, extractor: Zero123Features | None, head: nn.Module | None) -> None:
        attach_frozen(self, extractor, head, optional=True)

    def _apply(self, fn: Callable, exclude_state: Any = "") -> Metric:
        this = super()._apply(fn, exclude_state)
        move_frozen(this, this.device)
        self._move_extra(this.device)
        return this

    def _move_extra(self, device: torch.device) -> None:
        """Subclasses move their non-state tensors here."""

    def _require_extractor(self, method: str) -> Zero123Features:
        extractor = self.__dict__.get("extractor")
        if extractor is None:
            raise RuntimeError(
                f"{type(self).__name__}.{method} needs a feature extractor: pass `extractor=` "
                "(Zero123Features.from_pretrained(...)) or use add_embeddings / add_anchors with precomputed "
                "embeddings"
            )
        return extractor


class PRISMDistance(_FrozenHelpers):
    """Mean reference-based D_PRISM over all updates (paper Eq. 1): ``0.5 * ||e_pred - e_gt||_2`` in [0, 1].

    Lower is better. Identical predicted and ground-truth triplets give 0.

    Args:
        extractor: the frozen :class:`~scenemetrics.prism.Zero123Features`.
        head: a trained :class:`~scenemetrics.prism.ProjectionHead` (load one with ``ProjectionHead.load(path)``),
            or ``None`` for raw mode (normalised 8320-d features: untrained diffusion-feature scores, not PRISM as
            published).
        kwargs: torchmetrics ``Metric`` options.

    Attributes:
        last_distances: ``(B,)`` distances of the last update (not a state).

    Example:
        >>> import torch
        >>> from scenemetrics import PRISMDistance
        >>> metric = PRISMDistance(extractor, head)  # doctest: +SKIP
        >>> metric.update(source, pred, target, torch.tensor([0.0, 90.0, 0.0]))  # doctest: +SKIP
        >>> float(metric.compute())  # doctest: +SKIP
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    distance_sum: Tensor
    count: Tensor

    def __init__(self, extractor: Zero123Features, head: nn.Module | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if extractor is None:
            raise TypeError("PRISMDistance needs an `extractor` (Zero123Features.from_pretrained(...))")
        self._set_helpers(extractor, head)
        self.add_state("distance_sum", torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.last_distances: Tensor | None = None

    def update(self, source: Tensor, pred: Tensor, target: Tensor, pose: Tensor) -> None:
        """Add the distances of a batch of triplets.

        Args:
            source: ``(B, 3, H, W)`` source views, RGB in [0, 1] (or uint8).
            pred: ``(B, 3, H, W)`` generated target views.
            target: ``(B, 3, H, W)`` ground-truth target views.
            pose: ``(B, 3)`` or ``(3,)`` ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``, target minus source
                (module docstring).
        """
        extractor = self._require_extractor("update")
        with torch.no_grad():
            d = prism_distance(extractor, self.__dict__["head"], source, pred, target, pose)
        self.last_distances = d.detach()
        self.distance_sum += d.to(self.distance_sum.device, torch.float64).sum()
        self.count += d.numel()

    def compute(self) -> Tensor:
        """Mean distance as a float32 0-dim tensor; NaN with a ``UserWarning`` before any triplet was added."""
        if int(self.count) == 0:
            warnings.warn(
                "PRISMDistance.compute() was called before any triplet was added; returning NaN",
                UserWarning,
                stacklevel=3,
            )
            return torch.tensor(math.nan, dtype=torch.float32, device=self.distance_sum.device)
        return (self.distance_sum / self.count).to(torch.float32)


class PRISMMMD(_FrozenHelpers):
    """Reference-free MMD_PRISM: unbiased RBF MMD² between generated-triplet embeddings and an anchor set.

    The anchors are ground-truth triplets (e.g. held-out objects, as the paper's 200/200 GSO split). They are a plain
    attribute, not a torchmetrics state: ``reset()`` keeps them (one anchor set serves many evaluations), they are
    not in ``state_dict()``, never synced, and move with ``.to()``. In DDP every rank must hold the same anchors;
    the generated embeddings are gathered from all ranks.

    Args:
        extractor: the frozen :class:`~scenemetrics.prism.Zero123Features` (``None`` when only precomputed
            embeddings are added with :meth:`add_embeddings` / :meth:`add_anchors`).
        head: trained :class:`~scenemetrics.prism.ProjectionHead` or ``None`` (raw mode).
        anchors: initial anchors, an ``(N, E)`` tensor or the path of an anchor file (:meth:`save_anchors`).
        bandwidth: ``"median"`` (pooled lower median distance) or σ as a positive float.
        squared: return MMD² (default, as the paper reports) or ``sqrt(max(MMD², 0))``.
        chunk_size: tile side of the blocked MMD computation.
        kwargs: torchmetrics ``Metric`` options.

    Attributes:
        options: the :class:`~scenemetrics.stats.MMDOptions` (bandwidth, squared, chunk_size), checked once.
        anchors: ``(N, E)`` float32 tensor or ``None``.
        bandwidth_: the σ used by the last ``compute()``.

    Example:
        >>> import torch
        >>> from scenemetrics import PRISMMMD
        >>> metric = PRISMMMD(anchors=torch.randn(20, 8))
        >>> metric.add_embeddings(torch.randn(30, 8) + 3.0)
        >>> bool(metric.compute() > 0.5)
        True
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 2.0

    embeddings: list[Tensor]

    def __init__(
        self,
        extractor: Zero123Features | None = None,
        head: nn.Module | None = None,
        *,
        anchors: Tensor | str | os.PathLike | None = None,
        bandwidth: str | float = "median",
        squared: bool = True,
        chunk_size: int = 2048,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._set_helpers(extractor, head)
        self.options = MMDOptions(bandwidth, squared, chunk_size)
        self.add_state("embeddings", [], dist_reduce_fx="cat")
        self.anchors: Tensor | None = None
        self.bandwidth_: Tensor | None = None
        if isinstance(anchors, (str, os.PathLike)):
            self.load_anchors(anchors)
        elif anchors is not None:
            self.add_anchors(anchors)

    # ---- provenance of anchors -------------------------------------------------------------------------------

    def _provenance(self) -> dict[str, str]:
        extractor, head = self.__dict__["extractor"], self.__dict__["head"]
        meta = {}
        if extractor is not None:
            meta["extractor"] = json.dumps(extractor.provenance(), sort_keys=True)
            if head is None:
                meta["head"] = "raw"
        if head is not None:
            meta["head"] = json.dumps(
                {k: getattr(head, k, None) for k in ("in_dim", "hidden_dim", "out_dim")}, sort_keys=True
            )
        return meta

    def _move_extra(self, device: torch.device) -> None:
        if self.__dict__.get("anchors") is not None:
            self.anchors = self.anchors.to(device)

    # ---- generated embeddings ------------------------------------------------------------------------------------

    def _check_embeddings(self, emb: Tensor, name: str) -> Tensor:
        if not isinstance(emb, Tensor):
            raise ValueError(f"`{name}` must be a floating (B, E) tensor of embeddings; received {type(emb).__name__}")
        if emb.ndim != 2:
            raise ValueError(
                f"`{name}` must be a floating (B, E) tensor of embeddings; received shape {tuple(emb.shape)}"
            )
        if not emb.is_floating_point():
            raise ValueError(f"`{name}` must be a floating (B, E) tensor of embeddings; received dtype {emb.dtype}")
        if emb.device.type == "meta":
            raise ValueError(f"`{name}` is on the meta device (it holds no data); pass a tensor on the CPU or a GPU")
        if emb.numel() and not bool(torch.isfinite(emb).all()):
            raise ValueError(f"`{name}` contains NaN or infinite values")
        ref = self.anchors if self.anchors is not None else (self.embeddings[0] if self.embeddings else None)
        if ref is not None and emb.shape[1] != ref.shape[1]:
            raise ValueError(
                f"`{name}` has embedding dimension {emb.shape[1]}, but this metric holds {ref.shape[1]}-d embeddings"
            )
        return emb.detach().to(self.device, torch.float32)

    def update(self, source: Tensor, pred: Tensor, pose: Tensor) -> None:
        """Add the embeddings of generated triplets ``(source, pose, pred)``.

        Args:
            source: ``(B, 3, H, W)`` source views, RGB in [0, 1] (or uint8).
            pred: ``(B, 3, H, W)`` generated target views.
            pose: ``(B, 3)`` or ``(3,)`` ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``, target minus source
                (module docstring).

        Raises:
            RuntimeError: the metric has no extractor.
        """
        extractor = self._require_extractor("update")
        # checked here with the argument's own name (`pred`) in any error
        src, prd, pose_b = extractor.check_inputs(source, pred, pose, target_name="pred")
        with torch.no_grad():
            emb = embed_features(extractor.forward_checked(src, prd, pose_b), self.__dict__["head"])
        if emb.shape[0]:
            self.embeddings.append(self._check_embeddings(emb, "embeddings"))

    def add_embeddings(self, emb: Tensor) -> None:
        """Add precomputed ``(B, E)`` embeddings of generated triplets (no extractor needed)."""
        emb = self._check_embeddings(emb, "emb")
        self._computed = None
        self._update_count += 1
        if emb.shape[0]:
            self.embeddings.append(emb)

    # ---- anchors -------------------------------------------------------------------------------------------------

    def add_anchors(self, emb: Tensor) -> None:
        """Append precomputed ``(B, E)`` ground-truth embeddings to the anchors.

        Anchors are appended locally, on the calling rank only: every rank must add the same anchors.
        """
        emb = self._check_embeddings(emb, "emb")
        self.anchors = emb if self.anchors is None else torch.cat([self.anchors, emb])
        self._computed = None

    def update_anchors(self, source: Tensor, target: Tensor, pose: Tensor) -> None:
        """Append the embeddings of ground-truth triplets ``(source, pose, target)`` to the anchors.

        Anchors are appended locally, on the calling rank only: every rank must add the same anchors.

        Raises:
            RuntimeError: the metric has no extractor.
        """
        extractor = self._require_extractor("update_anchors")
        with torch.no_grad():
            emb = prism_embed(extractor, self.__dict__["head"], source, target, pose)
        self.add_anchors(emb)

    def reset_anchors(self) -> None:
        """Forget the anchors (``reset()`` keeps them)."""
        self.anchors = None
        self._computed = None

    def save_anchors(self, path: str | os.PathLike, *, dtype: torch.dtype = torch.float32) -> None:
        """Write the anchors (with the extractor/head provenance) to a safetensors file.

        Raises:
            ValueError: there are no anchors.
        """
        if self.anchors is None:
            raise ValueError("PRISMMMD has no anchors to save; add some with update_anchors() or add_anchors()")
        _save_anchors_file(self.anchors, path, metadata=self._provenance(), dtype=dtype)

    def load_anchors(self, path: str | os.PathLike) -> None:
        """Replace the anchors with those of an anchor file; warns when its provenance differs from this metric's."""
        anchors, meta = read_anchors(path)
        mine = self._provenance()
        for key in ("extractor", "head"):
            if key in meta and key in mine and meta[key] != mine[key]:
                warnings.warn(
                    f"the anchors in {os.fspath(path)!r} were made with {key} {meta[key]}, but this metric uses "
                    f"{mine[key]}: embeddings from different settings are not comparable",
                    UserWarning,
                    stacklevel=2,
                )
        self.anchors = None
        self.add_anchors(anchors)

    # ---- compute -------------------------------------------------------------------------------------------------

    def sync(self, *args: Any, **kwargs: Any) -> None:
        # with too few anchors every rank returns NaN without any collective (anchors are identical on all ranks)
        if self.anchors is None or self.anchors.shape[0] < 2:
            return
        super().sync(*args, **kwargs)

    def _sync_dist(self, dist_sync_fn: Callable = gather_all_tensors, process_group: Any = None) -> None:
        # a rank without embeddings contributes a (0, E) tensor; torchmetrics' own 1-D placeholder would not match
        if not self.embeddings and self.anchors is not None:
            self.embeddings = [torch.zeros(0, self.anchors.shape[1], device=self.device, dtype=torch.float32)]
        super()._sync_dist(dist_sync_fn, process_group=process_group)

    def compute(self) -> Tensor:
        """MMD² (or MMD with ``squared=False``) between the gathered embeddings and the anchors.

        Returns NaN with a ``UserWarning`` when there are fewer than 2 anchors or fewer than 2 embeddings.
        """
        if self.anchors is None or self.anchors.shape[0] < 2:
            warnings.warn("PRISMMMD needs at least 2 anchors; returning NaN", UserWarning, stacklevel=3)
            return torch.tensor(math.nan, dtype=torch.float32, device=self.device)
        emb = self.embeddings
        if isinstance(emb, list):  # not synced (single process): the local list
            emb = dim_zero_cat(emb) if emb else self.anchors.new_zeros(0, self.anchors.shape[1])
        if emb.ndim != 2 or emb.shape[1] != self.anchors.shape[1]:
            raise ValueError(
                f"the generated embeddings have shape {tuple(emb.shape)} but the anchors are "
                f"{self.anchors.shape[1]}-d; use the same extractor settings and head for both"
            )
        if emb.shape[0] < 2:
            warnings.warn(
                f"PRISMMMD needs at least 2 generated embeddings (has {emb.shape[0]}); returning NaN",
                UserWarning,
                stacklevel=3,
            )
            return torch.tensor(math.nan, dtype=torch.float32, device=self.device)
        value, self.bandwidth_ = mmd_with_options(emb, self.anchors.to(emb.device), self.options)
        if not self.options.squared:
            value = value.clamp_min(0.0).sqrt()
        return value.to(torch.float32)
