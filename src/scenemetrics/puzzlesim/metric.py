"""``scenemetrics.PuzzleSim``: the torchmetrics class over many test images of one scene."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.puzzlesim.backbone import canonical_backbone, validate_layers
from scenemetrics.puzzlesim.memory import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    PRECISIONS,
    SCREENING,
    SEARCHES,
    Precision,
    PuzzleSimMemory,
    Screening,
    Search,
    check_choice,
    check_chunk_size,
    check_layer_weights,
    check_positive_int,
    check_resize,
)

__all__ = ["PuzzleSim"]


class PuzzleSim(Metric):
    """Mean PuzzleSim score of test images against a fixed set of unaligned references (higher = fewer artifacts).

    Each image's score is the mean of its PuzzleSim map (:func:`scenemetrics.puzzlesim.puzzle_similarity_map`);
    :meth:`compute` averages the per-image scores over every image seen since the last :meth:`reset`.
    The references are embedded once into a :class:`~scenemetrics.puzzlesim.PuzzleSimMemory` (:attr:`memory`),
    which is neither a state nor part of ``state_dict()``; ``reset()`` keeps it.

    States: ``score_sum`` (float64, summed across processes) and ``num_images`` (int64, summed): constant memory
    and DDP-safe. Every rank must call :meth:`set_references` with the same references.

    Args:
        references: references to embed now (optional; see :meth:`set_references`).
        backbone, layers, layer_weights, weights_path, resize, chunk_size, precision, screening: as in
            :func:`scenemetrics.puzzlesim.puzzle_similarity_map`, and so are ``search``, ``faiss_options`` and
            ``batch_size``.
        keep_maps: keep the maps of the last :meth:`update` in :attr:`last_maps` (detached).
        kwargs: passed to :class:`torchmetrics.Metric`.

    Attributes:
        memory: the reference memory, or ``None`` before :meth:`set_references`.
        last_maps: ``(B, H, W)`` maps of the last update (``None`` if ``keep_maps=False`` or nothing was scored).

    Example:
        >>> import os, tempfile, torch
        >>> import scenemetrics as sm
        >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> refs = torch.rand(4, 3, 64, 64)
        >>> metric = sm.PuzzleSim(refs, weights_path=w)
        >>> metric.update(refs[:2])
        >>> round(float(metric.compute()), 4), tuple(metric.last_maps.shape)
        (1.0, (2, 64, 64))
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    score_sum: Tensor
    num_images: Tensor

    def __init__(
        self,
        references: Tensor | Sequence[Tensor] | PuzzleSimMemory | None = None,
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
        keep_maps: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backbone = canonical_backbone(backbone)
        self.layers = validate_layers(self.backbone, layers)
        self.layer_weights = check_layer_weights(layer_weights, self.layers)
        self.weights_path = weights_path
        self.resize = check_resize(resize)
        self.chunk_size = check_chunk_size(chunk_size)
        self.precision = check_choice(precision, "precision", tuple(PRECISIONS))
        self.screening = check_choice(screening, "screening", SCREENING)
        self.search = check_choice(search, "search", SEARCHES)
        if screening == "on" and search == "faiss":
            raise ValueError("`screening`='on' cannot be combined with `search`='faiss' (faiss is approximate)")
        self.faiss_options = faiss_options
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.keep_maps = bool(keep_maps)
        self.add_state("score_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("num_images", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.memory: PuzzleSimMemory | None = None
        self.last_maps: Tensor | None = None
        if references is not None:
            self.set_references(references)

    def set_references(self, references: Tensor | Sequence[Tensor] | PuzzleSimMemory) -> None:
        """Embed (or adopt) the references every later :meth:`update` is compared with.

        Replaces the memory and does **not** reset the states: a new scene usually means a new metric or a
        :meth:`reset`.

        Args:
            references: ``(N, 3, h, w)``, a sequence of tensors of any sizes, or a ``PuzzleSimMemory`` built with
                this metric's backbone, weights_path, resize, precision and (a superset of) its layers.
        """
        if isinstance(references, PuzzleSimMemory):
            references.check_compatible(
                backbone=self.backbone,
                layers=self.layers,
                weights_path=self.weights_path,
                resize=self.resize,
                precision=self.precision,
            )
            self.memory = references
            return
        first = references if isinstance(references, Tensor) else next(iter(references), None)
        device = first.device if isinstance(first, Tensor) and first.device.type != "cpu" else self.device
        self.memory = PuzzleSimMemory(
            references,
            backbone=self.backbone,
            layers=self.layers,
            weights_path=self.weights_path,
            resize=self.resize,
            precision=self.precision,
            device=device,
            batch_size=self.batch_size,
        )

    def update(self, images: Tensor) -> None:
        """Score a batch of test images ``(B, 3, H, W)`` / ``(3, H, W)`` (float in [0, 1] or uint8)."""
        if self.memory is None:
            warnings.warn(
                "PuzzleSim.update() called before set_references(): the images were not scored. Call "
                "set_references(reference_images) first.",
                UserWarning,
                stacklevel=2,
            )
            self.last_maps = None
            return
        maps = self.memory.similarity_map(
            images,
            layers=self.layers,
            layer_weights=self.layer_weights,
            chunk_size=self.chunk_size,
            screening=self.screening,
            search=self.search,
            faiss_options=self.faiss_options,
        ).detach()
        if maps.shape[0]:
            self.score_sum += maps.mean(dim=(1, 2)).to(self.score_sum.device, torch.float64).sum()
            self.num_images += maps.shape[0]
        self.last_maps = maps if self.keep_maps and maps.shape[0] else None

    def compute(self) -> Tensor:
        """Mean over all images seen of each image's mean map value (float32); NaN plus a warning if none."""
        if int(self.num_images) == 0:
            warnings.warn("PuzzleSim.compute(): no image has been scored yet; returning NaN", UserWarning, stacklevel=2)
            return torch.tensor(float("nan"), dtype=torch.float32, device=self.score_sum.device)
        return (self.score_sum / self.num_images).to(torch.float32)
