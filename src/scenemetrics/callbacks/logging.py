"""Writing an evaluation's scalars and images to TensorBoard, Weights & Biases and nerfstudio's writer.

The canonical image is a ``uint8`` tensor ``(3, H, W)`` on the CPU (colormaps come from :mod:`scenemetrics.viz`).
Each writer gets the layout it expects:

* Lightning ``TensorBoardLogger``: ``experiment.add_image(tag, chw_uint8, global_step=step, dataformats="CHW")``
  (``dataformats`` always explicit);
* Lightning ``WandbLogger``: ``log_image(key=tag, images=[hwc_uint8_numpy], step=step)`` (W&B rows carry
  ``trainer/global_step``);
* other Lightning loggers (CSV, MLflow, ...): scalars only, images skipped;
* nerfstudio: ``writer.put_scalar(tag, value, step)`` and ``writer.put_image(tag, hwc_float01, step)``;
* plain loops (:class:`~scenemetrics.callbacks.SceneMetricsMonitor`): a ``torch.utils.tensorboard.SummaryWriter``
  (``add_scalar`` / ``add_image``, as for Lightning's TensorBoard logger, whose ``experiment`` is one), a ``wandb``
  run (``run.log({tag: value or wandb.Image}, step=step)``), or any callable ``fn(result, step)``.

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

__all__ = [
    "log_result",
    "log_to_lightning",
    "log_to_nerfstudio",
    "log_to_summary_writer",
    "log_to_wandb_run",
    "logger_kind",
    "thread_safe_lightning_loggers",
    "to_hwc_float",
    "to_hwc_uint8",
]


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
            _add_images(logger.experiment, result, step)
        elif isinstance(logger, wandb_cls):
            for tag, image in result.images.items():
                logger.log_image(key=tag, images=[to_hwc_uint8(image)], step=step)


def thread_safe_lightning_loggers(loggers: list[Any]) -> list[Any]:
    """The loggers of ``loggers`` that another thread may write while the training thread writes them too: Lightning's
    ``TensorBoardLogger``, whose ``SummaryWriter`` queues events under a lock (its ``log_metrics`` keeps no other
    state). Their writer is created here, in the calling thread, if it does not exist yet. CSV (a list it rewrites),
    W&B (rows ordered by its own step) and others are left to the training thread."""
    tensorboard_cls, _ = _logger_classes()
    safe = [logger for logger in loggers if isinstance(logger, tensorboard_cls)]
    for logger in safe:
        _ = logger.experiment  # created lazily by the property: not in two threads at once
    return safe


def log_to_nerfstudio(result: EvaluationResult, step: int) -> None:
    """Write scalars and images through ``nerfstudio.utils.writer`` (a no-op off the main process)."""
    import nerfstudio.configs.base_config  # noqa: F401  (nerfstudio's import cycle: its writer must not load first)
    from nerfstudio.utils import writer

    for tag, value in result.scalars.items():
        writer.put_scalar(tag, value, step)
    for tag, image in result.images.items():
        writer.put_image(tag, to_hwc_float(image), step)


def _add_images(writer: Any, result: EvaluationResult, step: int) -> None:
    for tag, image in result.images.items():
        writer.add_image(tag, image, global_step=step, dataformats="CHW")


def log_to_summary_writer(writer: Any, result: EvaluationResult, step: int) -> None:
    """Write scalars and images to a ``torch.utils.tensorboard.SummaryWriter`` (or anything with its methods)."""
    for tag, value in result.scalars.items():
        writer.add_scalar(tag, value, global_step=step)
    _add_images(writer, result, step)


def log_to_wandb_run(run: Any, result: EvaluationResult, step: int, *, step_column: str | None = None) -> None:
    """Write scalars and images to a ``wandb`` run as one ``run.log`` row at ``step``.

    Args:
        step_column: log the step as this column of the row instead of as W&B's own step (``run.log(row)`` without
            ``step=``): W&B drops rows whose ``step`` is below one it has seen, which a result that arrives late
            (background evaluation) would be. Declare it as the x axis with ``run.define_metric``.
    """
    import wandb

    row: dict[str, Any] = dict(result.scalars)
    row.update({tag: wandb.Image(to_hwc_uint8(image)) for tag, image in result.images.items()})
    if step_column is None:
        run.log(row, step=step)
    else:
        row[step_column] = step
        run.log(row)


def _is_wandb_run(logger: Any) -> bool:
    module = type(logger).__module__
    return module.startswith("wandb") and callable(getattr(logger, "log", None))


def logger_kind(logger: Any) -> str:
    """``"summary_writer"``, ``"wandb"`` or ``"callable"``.

    Raises:
        TypeError: ``logger`` is none of a SummaryWriter (``add_scalar`` + ``add_image``), a wandb run, a callable.
    """
    if callable(getattr(logger, "add_scalar", None)) and callable(getattr(logger, "add_image", None)):
        return "summary_writer"
    if _is_wandb_run(logger):
        return "wandb"
    if callable(logger):
        return "callable"
    raise TypeError(
        "logger must be a torch.utils.tensorboard.SummaryWriter, a wandb run or a callable fn(result, step); "
        f"received {type(logger).__name__}"
    )


def log_result(logger: Any, result: EvaluationResult, step: int, *, wandb_step_column: str | None = None) -> None:
    """Write ``result`` to a SummaryWriter, a wandb run or a callable ``fn(result, step)`` (:func:`logger_kind`).

    Args:
        wandb_step_column: for a wandb run, the ``step_column`` of :func:`log_to_wandb_run`.
    """
    kind = logger_kind(logger)
    if kind == "summary_writer":
        log_to_summary_writer(logger, result, step)
    elif kind == "wandb":
        log_to_wandb_run(logger, result, step, step_column=wandb_step_column)
    else:
        logger(result, step)
