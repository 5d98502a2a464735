"""``SoftPuzzleSimLoss``: a differentiable relaxation of PuzzleSim (lower is better)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from torch import Tensor, nn

from scenemetrics.puzzlesim.functional import check_temperature, soft_gibbs_max
from scenemetrics.puzzlesim.memory import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    PuzzleSimMemory,
    check_choice,
    check_chunk_size,
    check_layer_weights,
    combine_layer_maps,
    unit_rows,
)

__all__ = ["SoftPuzzleSimLoss"]


class SoftPuzzleSimLoss(nn.Module):
    """``1 - mean(soft PuzzleSim map)`` per image: the max over reference vectors replaced by a softmax-weighted mean.

    Per test position and layer, ``soft = sum_k pi_k s_k`` with ``pi = softmax(s / T)`` over the similarities
    ``s_k`` to every reference vector (a Gibbs mean, not log-sum-exp: it never exceeds the hard max). Hence
    ``loss >= 1 - PuzzleSim score``; the gap shrinks as ``T -> 0`` (at most ``T log K`` per position; about 1-2 T
    in practice for T in 0.01-0.05). ``T = 0.05`` (default) gives smooth, broad gradients; use 0.01-0.02 for a loss
    that tracks the metric closely.

    Differentiable w.r.t. the images only; the backbone is frozen and no parameter or buffer is registered.
    Streaming over reference chunks in both passes (memory ``O(chunk_size)``).

    Args:
        references: reference images (any sizes) or a :class:`~scenemetrics.puzzlesim.PuzzleSimMemory`.
        temperature: ``T > 0``; may be changed between calls (validated on use).
        backbone, layers, layer_weights, weights_path, resize, chunk_size: as for
            :func:`scenemetrics.puzzlesim.puzzle_similarity_map`.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` over the batch.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.losses import SoftPuzzleSimLoss
        >>> from scenemetrics.puzzlesim import random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> loss_fn = SoftPuzzleSimLoss(torch.rand(2, 3, 48, 48), weights_path=w)
        >>> render = torch.rand(1, 3, 48, 48, requires_grad=True)
        >>> loss = loss_fn(render); loss.backward()
        >>> render.grad.shape
        torch.Size([1, 3, 48, 48])
    """

    def __init__(
        self,
        references: Tensor | Sequence[Tensor] | PuzzleSimMemory,
        temperature: float = 0.05,
        *,
        backbone: str = "squeezenet1_1",
        layers: Sequence[int] = DEFAULT_LAYERS,
        layer_weights: Sequence[float] | None = DEFAULT_LAYER_WEIGHTS,
        weights_path: str | os.PathLike | None = None,
        resize: int | tuple[int, int] | None = None,
        chunk_size: int | None = None,
        reduction: Literal["mean", "sum", "none"] = "mean",
    ) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.reduction = check_choice(reduction, "reduction", ("mean", "sum", "none"))
        self.chunk_size = check_chunk_size(chunk_size)
        if isinstance(references, PuzzleSimMemory):
            references.check_compatible(
                backbone=backbone, layers=layers, weights_path=weights_path, resize=resize, precision="float32"
            )
            self.memory = references
        else:
            self.memory = PuzzleSimMemory(
                references, backbone=backbone, layers=layers, weights_path=weights_path, resize=resize
            )
        self.layers = tuple(layers)
        self.layer_weights = check_layer_weights(layer_weights, self.layers)

    def soft_map(self, images: Tensor) -> Tensor:
        """Soft PuzzleSim maps ``(B, H, W)``: the PuzzleSim pipeline with each max replaced by the Gibbs mean.

        Images follow the shape/dtype rules of PuzzleSim but are **not** range-checked (renders being optimised may
        overshoot [0, 1]; clamp upstream if needed).
        """
        t = check_temperature(self.temperature)
        x = self.memory.check_test_images(images, check_range=False, layers=self.layers)
        if x.shape[0] == 0:
            return x.new_zeros((0, *x.shape[-2:]))
        feats = self.memory.test_features(x, self.layers)
        maps = {}
        for layer in self.layers:
            f = feats[layer]
            q = unit_rows(f)
            r = self.memory.vectors_on(layer, q.device)
            maps[layer] = soft_gibbs_max(q, r, t, self.chunk_size).view(f.shape[0], *f.shape[2:])
        return combine_layer_maps(maps, self.layers, self.layer_weights, x.shape, images.device)

    def forward(self, images: Tensor) -> Tensor:
        """``loss_b = 1 - mean_{H,W} soft_map_b``, reduced over the batch as ``reduction`` says."""
        loss = 1.0 - self.soft_map(images).mean(dim=(1, 2))
        if self.reduction == "mean":
            return loss.mean() if loss.numel() else loss.sum()
        if self.reduction == "sum":
            return loss.sum()
        return loss

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, layers={self.layers}, memory={self.memory!r}"
