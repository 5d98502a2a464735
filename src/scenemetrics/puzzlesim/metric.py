"""``scenemetrics.PuzzleSim``: the torchmetrics class over many test images of one scene."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.puzzlesim.memory import PuzzleSimMemory
from scenemetrics.puzzlesim.options import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    Precision,
    PuzzleSimOptions,
    Screening,
    Search,
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
        options: the validated :class:`~scenemetrics.puzzlesim.PuzzleSimOptions` (also readable one by one:
            ``backbone``, ``layers``, ``layer_weights``, ``weights_path``, ...).
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

    # the options as attributes (read-only views of :attr:`options`)
    backbone = property(lambda self: self.options.backbone)
    layers = property(lambda self: self.options.layers)
    layer_weights = property(lambda self: self.options.layer_weights)
    weights_path = property(lambda self: self.options.weights_path)
    resize = property(lambda self: self.options.resize)
    chunk_size = property(lambda self: self.options.chunk_size)
    precision = property(lambda self: self.options.precision)
    screening = property(lambda self: self.options.screening)
    search = property(lambda self: self.options.search)
    faiss_options = property(lambda self: self.options.faiss_options)
    batch_size = property(lambda self: self.options.batch_size)

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
        batch_size: int | None = None,
        keep_maps: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.options = PuzzleSimOptions(
            backbone=backbone,
            layers=layers,
            layer_weights=layer_weights,
            weights_path=weights_path,
            resize=resize,
            chunk_size=chunk_size,
            precision=precision,
            screening=screening,
            search=search,
            faiss_options=faiss_options,
            batch_size=batch_size,
        )
        self.keep_maps = bool(keep_maps)
        self.add_state("score_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("num_images", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.memory: PuzzleSimMemory | None = None
        self.last_maps: Tensor | None = None
        if references is not None:
            self.set_references(references)

    @property
    def has_references(self) -> bool:
        """Whether references were set (the integrations' check for metrics fed by references)."""
        return self.memory is not None

    def set_references(self, references: Tensor | Sequence[Tensor] | PuzzleSimMemory) -> None:
        """Embed (or adopt) the references every later :meth:`update` is compared with.

        Replaces the memory and does **not** reset the states: a new scene usually means a new metric or a
        :meth:`reset`.

        Args:
            references: ``(N, 3, h, w)``, a sequence of tensors of any sizes, or a ``PuzzleSimMemory`` built with
                this metric's backbone, weights_path, resize, precision and (a superset of) its layers.
        """
        if isinstance(references, PuzzleSimMemory):
            device = None
        else:
            first = references if isinstance(references, Tensor) else next(iter(references), None)
            device = first.device if isinstance(first, Tensor) and first.device.type != "cpu" else self.device
        self.memory = PuzzleSimMemory.adopt_or_build(references, self.options, device=device)

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
        maps = self.memory.similarity_map_for(images, self.options).detach()
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
