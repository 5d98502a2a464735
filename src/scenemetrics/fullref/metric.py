"""torchmetrics classes over the full-reference maps and the published protocols' SSIM and LPIPS.

Each class accumulates the mean of a per-image score over every ``update(preds, target)`` since the last
``reset()``, in two states (``score_sum`` float64 and ``num_images`` int64, both summed across processes: constant
memory, DDP-safe). The map classes also keep the ``(B, H, W)`` maps of the last update in :attr:`last_maps`
(detached, not a state), like :class:`scenemetrics.PuzzleSim`.

Example:
    >>> import torch
    >>> from scenemetrics.fullref import SSIMMap, AbsErrorMap
    >>> g = torch.Generator().manual_seed(0)
    >>> target = torch.rand(2, 3, 32, 32, generator=g)
    >>> metric = SSIMMap()
    >>> metric.update(target, target)
    >>> float(metric.compute()), tuple(metric.last_maps.shape)
    (1.0, (2, 32, 32))
    >>> err = AbsErrorMap()
    >>> err.update(torch.zeros(1, 3, 4, 4), torch.ones(1, 3, 4, 4))
    >>> float(err.compute())
    1.0
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from scenemetrics.fullref.functional import abs_error_map, check_data_range, ssim_3dgs, ssim_map, ssim_nerfbaselines
from scenemetrics.fullref.perceptual import (
    layer_distances,
    load_lpips,
    map_from_layers,
    net_spec,
    resolve_lpips_files,
    score_from_layers,
)

__all__ = ["LPIPS3DGS", "SSIM3DGS", "AbsErrorMap", "LPIPSMap", "SSIMMap", "SSIMNerfBaselines"]


class _MeanScore(Metric):
    """Mean over images of a per-image score; subclasses say how a batch is scored (and mapped)."""

    is_differentiable = False
    full_state_update = False

    score_sum: Tensor
    num_images: Tensor

    def __init__(self, *, keep_maps: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keep_maps = bool(keep_maps)
        self.add_state("score_sum", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("num_images", torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.last_maps: Tensor | None = None

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        """``(scores (B,), maps (B, H, W) or None)`` of one batch."""
        raise NotImplementedError

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Score a batch of renders against their ground truth (``(B, 3, H, W)`` / ``(3, H, W)``, same shape)."""
        with torch.no_grad():
            scores, maps = self._score(preds, target)
        if scores.shape[0]:
            self.score_sum += scores.to(self.score_sum.device, torch.float64).sum()
            self.num_images += scores.shape[0]
        self.last_maps = maps.detach() if self.keep_maps and maps is not None and scores.shape[0] else None

    def compute(self) -> Tensor:
        """Mean over all images seen of each image's score (float32); NaN plus a warning if none."""
        if int(self.num_images) == 0:
            warnings.warn(
                f"{type(self).__name__}.compute(): no image has been scored yet; returning NaN",
                UserWarning,
                stacklevel=2,
            )
            return torch.tensor(float("nan"), dtype=torch.float32, device=self.score_sum.device)
        return (self.score_sum / self.num_images).to(torch.float32)


class SSIMMap(_MeanScore):
    """Mean SSIM over views (torchmetrics' definition), keeping each view's per-pixel SSIM map.

    Each view's score is the mean of its :func:`~scenemetrics.fullref.ssim_map` (= torchmetrics' SSIM of that view);
    :meth:`compute` averages the scores of every view seen, as torchmetrics' ``StructuralSimilarityIndexMeasure``
    does. Higher is better; 1 where the render equals the ground truth.

    Args:
        data_range: the ``L`` of ``C1 = (0.01 L)^2`` and ``C2 = (0.03 L)^2`` (1.0 for images in [0, 1]).
        keep_maps: keep the maps of the last :meth:`update` in :attr:`last_maps`.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Attributes:
        last_maps: ``(B, H, W)`` SSIM maps of the last update (``None`` with ``keep_maps=False`` or an empty batch).

    Example:
        >>> import torch
        >>> x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
        >>> m = SSIMMap()
        >>> m.update(x, x)
        >>> float(m.compute()), tuple(m.last_maps.shape)
        (1.0, (1, 16, 16))
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, data_range: float = 1.0, *, keep_maps: bool = True, **kwargs: Any) -> None:
        super().__init__(keep_maps=keep_maps, **kwargs)
        self.data_range = check_data_range(data_range)

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        maps = ssim_map(preds, target, data_range=self.data_range)
        return maps.mean(dim=(1, 2)), maps


class AbsErrorMap(_MeanScore):
    """Mean absolute error over views, keeping each view's per-pixel error map (channel mean of ``|p - t|``).

    Lower is better; 0 where the render equals the ground truth.

    Args:
        keep_maps: keep the maps of the last :meth:`update` in :attr:`last_maps`.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Attributes:
        last_maps: ``(B, H, W)`` error maps in [0, 1] of the last update (``None`` with ``keep_maps=False``).

    Example:
        >>> import torch
        >>> m = AbsErrorMap()
        >>> m.update(torch.zeros(2, 3, 4, 4), torch.full((2, 3, 4, 4), 0.25))
        >>> float(m.compute()), tuple(m.last_maps.shape)
        (0.25, (2, 4, 4))
    """

    higher_is_better = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, *, keep_maps: bool = True, **kwargs: Any) -> None:
        super().__init__(keep_maps=keep_maps, **kwargs)

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        maps = abs_error_map(preds, target)
        return maps.mean(dim=(1, 2)), maps


class LPIPSMap(_MeanScore):
    """Mean LPIPS over views, keeping each view's spatial LPIPS map (:func:`~scenemetrics.fullref.lpips_map`).

    Each view's score is its LPIPS (:func:`~scenemetrics.fullref.lpips`: the sum over layers of the mean distance,
    the ``lpips`` package's and torchmetrics' value, and NerfBaselines' ``lpips`` with ``net="alex"``); the map's mean
    equals it when the layers' sizes divide the image size and is close otherwise. Lower is better.

    The frozen network is shared through a cache (one per files and device) and is neither a state nor part of
    ``state_dict()``; it runs on the inputs' device.

    Args:
        net: ``"alex"`` (default), ``"vgg"`` or ``"squeeze"``.
        weights_path, linear_weights_path: the backbone and linear-layer checkpoints (see
            :func:`scenemetrics.fullref.load_lpips`); loaded (or found missing) at construction.
        keep_maps: keep the maps of the last :meth:`update` in :attr:`last_maps` (``False`` skips the upsampling).
        kwargs: passed to :class:`torchmetrics.Metric`.

    Attributes:
        last_maps: ``(B, H, W)`` LPIPS maps of the last update (``None`` with ``keep_maps=False``).

    Example:
        >>> import os, tempfile, torch
        >>> import scenemetrics as sm
        >>> path = os.path.join(tempfile.mkdtemp(), "a.pth")
        >>> w = sm.puzzlesim.random_checkpoint("alexnet", path, include_classifier=False)
        >>> m = LPIPSMap(weights_path=w)
        >>> x = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
        >>> m.update(x, x)
        >>> float(m.compute()), tuple(m.last_maps.shape)
        (0.0, (1, 64, 64))
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    def __init__(
        self,
        net: str = "alex",
        *,
        weights_path: str | os.PathLike | None = None,
        linear_weights_path: str | os.PathLike | None = None,
        keep_maps: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(keep_maps=keep_maps, **kwargs)
        self.net = net_spec(net).name
        self.weights_path = weights_path
        self.linear_weights_path = linear_weights_path
        # found (and verified) once, and loaded now so that a bad file fails here, not at the first update
        self._files = resolve_lpips_files(self.net, weights_path, linear_weights_path)
        load_lpips(self.net, *self._files)

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        backbone, linear = self._files
        layers = layer_distances(preds, target, net=self.net, weights_path=backbone, linear_weights_path=linear)
        size = (int(preds.shape[-2]), int(preds.shape[-1]))
        return score_from_layers(layers), map_from_layers(layers, size) if self.keep_maps else None


class SSIM3DGS(_MeanScore):
    """Mean SSIM over views as 3DGS's ``metrics.py`` reports it (:func:`~scenemetrics.fullref.ssim_3dgs`: zero
    padding, mean over the whole image). Higher is better.

    Example:
        >>> import torch
        >>> x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
        >>> m = SSIM3DGS()
        >>> m.update(x, x)
        >>> float(m.compute())
        1.0
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        return ssim_3dgs(preds, target), None


class SSIMNerfBaselines(_MeanScore):
    """Mean SSIM over views as NerfBaselines evaluates it (:func:`~scenemetrics.fullref.ssim_nerfbaselines`:
    dm_pix's SSIM, "valid" window positions only). Higher is better.

    Example:
        >>> import torch
        >>> x = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
        >>> m = SSIMNerfBaselines()
        >>> m.update(x, x)
        >>> float(m.compute())
        1.0
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        return ssim_nerfbaselines(preds, target), None


class LPIPS3DGS(_MeanScore):
    """Mean LPIPS over views as 3DGS's ``metrics.py`` reports it (:func:`~scenemetrics.fullref.lpips_3dgs`: VGG, the
    [0, 1] images fed to the scaling layer without ``2 x - 1``). Lower is better.

    Args:
        weights_path, linear_weights_path: the VGG16 backbone and its linear layers (see
            :func:`scenemetrics.fullref.load_lpips`).
        kwargs: passed to :class:`torchmetrics.Metric`.

    Example:
        >>> import os, tempfile, torch
        >>> import scenemetrics as sm
        >>> path = os.path.join(tempfile.mkdtemp(), "v.pth")
        >>> w = sm.puzzlesim.random_checkpoint("vgg16", path, include_classifier=False)
        >>> m = LPIPS3DGS(weights_path=w)
        >>> x = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
        >>> m.update(x, x)
        >>> float(m.compute())
        0.0
    """

    higher_is_better = False
    plot_lower_bound = 0.0

    def __init__(
        self,
        *,
        weights_path: str | os.PathLike | None = None,
        linear_weights_path: str | os.PathLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.weights_path = weights_path
        self.linear_weights_path = linear_weights_path
        self._files = resolve_lpips_files("vgg", weights_path, linear_weights_path)
        load_lpips("vgg", *self._files)

    def _score(self, preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor | None]:
        backbone, linear = self._files
        layers = layer_distances(
            preds, target, net="vgg", weights_path=backbone, linear_weights_path=linear, rescale=False
        )
        return score_from_layers(layers), None
