"""``SoftPuzzleSimLoss``: a differentiable relaxation of PuzzleSim (lower is better)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from torch import Tensor, nn

from scenemetrics.checks import check_choice
from scenemetrics.puzzlesim.functional import check_temperature
from scenemetrics.puzzlesim.memory import PuzzleSimMemory
from scenemetrics.puzzlesim.options import DEFAULT_LAYER_WEIGHTS, DEFAULT_LAYERS, PuzzleSimOptions

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
        >>> from scenemetrics.puzzlesim import SoftPuzzleSimLoss
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
        self.options = PuzzleSimOptions(
            backbone=backbone,
            layers=layers,
            layer_weights=layer_weights,
            weights_path=weights_path,
            resize=resize,
            chunk_size=chunk_size,
        )
        self.memory = PuzzleSimMemory.adopt_or_build(references, self.options)

    @property
    def layers(self) -> tuple:
        return self.options.layers

    @property
    def layer_weights(self) -> tuple[float, ...]:
        return self.options.layer_weights

    @property
    def chunk_size(self) -> int | None:
        return self.options.chunk_size

    def soft_map(self, images: Tensor) -> Tensor:
        """Soft PuzzleSim maps ``(B, H, W)``: the PuzzleSim pipeline with each max replaced by the Gibbs mean.

        Images follow the shape/dtype rules of PuzzleSim but are **not** range-checked (renders being optimised may
        overshoot [0, 1]; clamp upstream if needed).
        """
        return self.memory.soft_similarity_map_for(images, self.temperature, self.options)

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
