"""``PRISMLoss``: D_PRISM as a differentiable loss on a generated view (lower is better, range [0, 1]).

Example:
    >>> import torch
    >>> from scenemetrics.prism import PRISMLoss  # also scenemetrics.losses.PRISMLoss
    >>> loss_fn = PRISMLoss(extractor, head)  # doctest: +SKIP
    >>> loss = loss_fn(source, pred, target, torch.tensor([0.0, 30.0, 0.0]))  # doctest: +SKIP
    >>> loss.backward()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from scenemetrics.prism.features import Zero123Features, attach_frozen, embed_features, move_frozen

__all__ = ["PRISMLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class PRISMLoss(nn.Module):
    """Per-sample ``D = 0.5 * ||e(source, pred, pose) - e(source, target, pose)||_2``, differentiable w.r.t. ``pred``.

    The ground-truth embedding is computed without gradients; the prediction's embedding is backpropagated through
    the VAE encoder, the U-Net, the pooling and the head. The extractor and the head stay frozen (the head is a
    trained metric, not a learner) and are kept out of this module's ``state_dict`` (so a model holding the loss
    does not save Zero123's weights); ``.to()`` still moves them. Cost: a full Zero123-XL forward and backward at
    256 px per sample (use the extractor's ``resize=True`` for renders of another square size).

    ``pred`` is not range-checked (renderers overshoot slightly) and is used as it is, never clipped; its shape and
    dtype are checked like the other images.

    Args:
        extractor: the frozen :class:`~scenemetrics.prism.Zero123Features`.
        head: a trained :class:`~scenemetrics.prism.ProjectionHead` or ``None`` (raw mode).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (``(B,)``).

    Example:
        >>> loss_fn = PRISMLoss(extractor, reduction="none")  # doctest: +SKIP
    """

    def __init__(self, extractor: Zero123Features, head: nn.Module | None = None, *, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"`reduction` must be one of {_REDUCTIONS}; received {reduction!r}")
        attach_frozen(self, extractor, head, optional=False)
        self.reduction = reduction

    def _apply(self, fn: Callable, recurse: bool = True) -> PRISMLoss:
        this = super()._apply(fn, recurse)
        move_frozen(self, fn(torch.zeros(())).device)
        return this

    def forward(self, source: Tensor, pred: Tensor, target: Tensor, pose: Tensor) -> Tensor:
        """The loss.

        Args:
            source: ``(B, 3, H, W)`` source views in [0, 1].
            pred: ``(B, 3, H, W)`` generated / rendered views (may carry grad; not range-checked).
            target: ``(B, 3, H, W)`` ground-truth views in [0, 1].
            pose: ``(B, 3)`` or ``(3,)`` ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``, target minus source.

        Returns:
            A scalar (``"mean"`` / ``"sum"``) or ``(B,)`` (``"none"``); an empty batch gives 0 (``"mean"`` NaN-free).
        """
        extractor: Zero123Features = self.__dict__["extractor"]
        head = self.__dict__["head"]
        src, prd, pose_b = extractor.check_inputs(source, pred, pose, target_name="pred", check_target_range=False)
        _, tgt, _ = extractor.check_inputs(source, target, pose)
        with torch.no_grad():
            e_gt = embed_features(extractor.forward_checked(src, tgt, pose_b), head)
        e_pred = embed_features(extractor.forward_checked(src, prd, pose_b), head)
        d = 0.5 * torch.linalg.vector_norm(e_pred - e_gt, dim=-1)
        if self.reduction == "none":
            return d
        if self.reduction == "sum":
            return d.sum()
        return d.mean() if d.numel() else d.sum()
