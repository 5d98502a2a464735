"""The frozen YOLOX detector of OSIM: loading through the checkpoint hub (once per file and device), the head-size
check of a model you pass in, and :class:`FrozenDetector`, the holder the :class:`~scenemetrics.osim.OSIM` metric
and :class:`~scenemetrics.osim.OSIMLoss` share.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.osim.random import random_checkpoint
    >>> p = random_checkpoint("yolox_nano", os.path.join(tempfile.mkdtemp(), "yolox_nano.pth"))
    >>> frozen = FrozenDetector("yolox_nano", p)
    >>> frozen.model.training, any(q.requires_grad for q in frozen.model.parameters()), frozen.model.num_classes
    (False, False, 80)
    >>> load_detector("yolox_nano", p) is frozen.model  # one cached copy per (file, device)
    True
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from scenemetrics import hub
from scenemetrics.osim.checkpoints import normalize_variant
from scenemetrics.osim.yolox import YOLOX

__all__ = ["FrozenDetector", "check_model_classes", "clear_detector_cache", "load_detector"]

_DETECTORS: dict[tuple[str, str, int, int, str], YOLOX] = {}

DetectorKey = tuple[str, "str | os.PathLike | None", "int | None"]


def load_detector(
    detector: str = "yolox_x",
    weights_path: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    *,
    num_classes: int | None = None,
) -> YOLOX:
    """A YOLOX checkpoint (official or your own) as a frozen model, loaded once per ``(variant, file, device)``.

    Args:
        detector: YOLOX variant.
        weights_path: checkpoint file or folder (``None``: the scenemetrics cache, downloading on first use).
        device: where the model runs (default CPU).
        num_classes: head size; ``None`` reads it from the checkpoint (see :meth:`YOLOX.from_official`).

    Raises:
        scenemetrics.hub.WeightsNotFoundError: no checkpoint (offline or failed download).
        ValueError: unknown variant, a checkpoint of another variant or head size, or one that does not match.
    """
    variant = normalize_variant(detector)
    path = Path(hub.resolve_weights(f"osim/{variant}", weights_path))
    dev = torch.device(device) if device is not None else torch.device("cpu")
    st = path.stat()
    key = (variant, str(path.resolve()), st.st_mtime_ns, -1 if num_classes is None else num_classes, str(dev))
    if key not in _DETECTORS:
        _DETECTORS[key] = YOLOX.from_official(variant, weights_path=path, num_classes=num_classes, device=dev)
    return _DETECTORS[key]


def detector_on(model: YOLOX, device: torch.device, cache_key: DetectorKey | None) -> YOLOX:
    """``model`` on ``device``: a cached detector (``cache_key`` = the ``(detector, weights_path, num_classes)`` it was
    loaded with) is swapped for the cache's copy on that device (the cached instance itself never moves, other
    users share it); a user's model (``cache_key=None``) is moved."""
    if model.device == device:
        return model
    if cache_key is not None:
        return load_detector(cache_key[0], cache_key[1], device, num_classes=cache_key[2])
    return model.to(device)


def clear_detector_cache() -> None:
    """Forget the detectors :func:`load_detector` keeps (frees their memory)."""
    _DETECTORS.clear()


def check_model(model: object) -> YOLOX:
    """``model`` if it is a :class:`~scenemetrics.osim.YOLOX`.

    Raises:
        ValueError: anything else.
    """
    if not isinstance(model, YOLOX):
        raise ValueError(f"`model` must be a scenemetrics.osim.YOLOX or None; received {type(model).__name__}")
    return model


def check_model_classes(model: YOLOX, num_classes: int | None) -> None:
    """Raise ``ValueError`` when a given ``num_classes`` differs from the head of an injected ``model``."""
    if num_classes is not None and num_classes != model.num_classes:
        raise ValueError(
            f"num_classes={num_classes} was asked for, but the given `model` has a head of {model.num_classes} "
            "classes; pass num_classes=None or the model's size"
        )


class FrozenDetector:
    """The detector an OSIM metric or loss holds: a given ``model`` (checked) or ``detector`` loaded through the
    cache, in eval mode with no parameter gradients.

    The owner keeps this holder as a plain attribute (not a submodule), so the detector stays out of its
    ``state_dict()`` and ``parameters()``, and calls :meth:`to` from its ``_apply`` and before running on inputs of
    another device. A cached detector is never moved itself (other metrics share it): the cache's copy on the new
    device replaces it. A model you pass in is moved.

    Args:
        detector: YOLOX variant, loaded when ``model`` is ``None``.
        weights_path: YOLOX checkpoint file or folder (``None``: the scenemetrics cache).
        model: a :class:`~scenemetrics.osim.YOLOX` to use instead of loading ``detector``.
        num_classes: head size; ``None`` reads it from the checkpoint. With ``model``, a different head size raises.

    Raises:
        ValueError: ``model`` is not a YOLOX, or its head size differs from ``num_classes``.
    """

    def __init__(
        self,
        detector: str = "yolox_x",
        weights_path: str | os.PathLike | None = None,
        *,
        model: YOLOX | None = None,
        num_classes: int | None = None,
    ) -> None:
        if model is not None:
            check_model_classes(check_model(model), num_classes)
            self.cache_key: DetectorKey | None = None
        else:
            model = load_detector(detector, weights_path, num_classes=num_classes)
            self.cache_key = (detector, weights_path, num_classes)
        model.eval().requires_grad_(False)
        self.model = model

    def to(self, device: torch.device) -> YOLOX:
        """Put the detector on ``device`` (see the class) and return it."""
        self.model = detector_on(self.model, device, self.cache_key)
        return self.model
