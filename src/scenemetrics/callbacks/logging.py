"""Writing an evaluation's scalars and images to TensorBoard, Weights & Biases and nerfstudio's writer.

The canonical image is a ``uint8`` tensor ``(3, H, W)`` on the CPU (colormaps come from :mod:`scenemetrics.viz`).
Each writer gets the layout it expects:

* Lightning ``TensorBoardLogger``: ``experiment.add_image(tag, chw_uint8, global_step=step, dataformats="CHW")``
  (``dataformats`` always explicit);
* Lightning ``WandbLogger``: ``log_image(key=tag, images=[hwc_uint8_numpy], step=step)`` (W&B rows carry
  ``trainer/global_step``);
* other Lightning loggers (CSV, MLflow, ...): scalars only, images skipped;
* nerfstudio: ``writer.put_scalar(tag, value, step)`` and ``writer.put_image(tag, hwc_float01, step)``.

Example:
    >>> import torch
    >>> to_hwc_float(torch.full((3, 2, 2), 255, dtype=torch.uint8)).shape
    torch.Size([2, 2, 3])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import Tensor

from scenemetrics.callbacks.evaluation import EvaluationResult

__all__ = ["log_to_lightning", "log_to_nerfstudio", "to_hwc_float", "to_hwc_uint8"]


def to_hwc_uint8(image: Tensor) -> np.ndarray:
    """``uint8`` ``(3, H, W)`` tensor -> ``uint8`` ``(H, W, 3)`` numpy array (what ``wandb.Image`` expects)."""
    return image.permute(1, 2, 0).contiguous().numpy()


def to_hwc_float(image: Tensor) -> Tensor:
    """``uint8`` ``(3, H, W)`` tensor -> float ``(H, W, 3)`` in [0, 1] (what nerfstudio's ``put_image`` expects)."""
    return image.permute(1, 2, 0).float() / 255.0


def _logger_classes() -> tuple[Any, Any]:
    from lightning.pytorch.loggers import TensorBoardLogger, WandbLogger

    return TensorBoardLogger, WandbLogger


def log_to_lightning(loggers: list[Any], result: EvaluationResult, step: int) -> None:
    """Write scalars to every Lightning logger and images to the TensorBoard / W&B ones (call on rank 0 only)."""
    tensorboard_cls, wandb_cls = _logger_classes()
    for logger in loggers:
        if result.scalars:
            logger.log_metrics(dict(result.scalars), step=step)
        if not result.images:
            continue
        if isinstance(logger, tensorboard_cls):
            for tag, image in result.images.items():
                logger.experiment.add_image(tag, image, global_step=step, dataformats="CHW")
        elif isinstance(logger, wandb_cls):
            for tag, image in result.images.items():
                logger.log_image(key=tag, images=[to_hwc_uint8(image)], step=step)


def log_to_nerfstudio(result: EvaluationResult, step: int) -> None:
    """Write scalars and images through ``nerfstudio.utils.writer`` (a no-op off the main process)."""
    import nerfstudio.configs.base_config  # noqa: F401  (nerfstudio's import cycle: its writer must not load first)
    from nerfstudio.utils import writer

    for tag, value in result.scalars.items():
        writer.put_scalar(tag, value, step)
    for tag, image in result.images.items():
        writer.put_image(tag, to_hwc_float(image), step)
