"""YOLOX variants and release checkpoints: the six variants and their sizes, their names, and reading a checkpoint
in the Megvii release layout (``{"model": state_dict, ...}``) safely through :mod:`scenemetrics.hub`, checked against
the variant before any tensor is loaded into a model.

Example:
    >>> from scenemetrics.osim.checkpoints import YOLOX_VARIANTS, normalize_variant
    >>> YOLOX_VARIANTS[0], normalize_variant("YOLOX-X")
    ('yolox_nano', 'yolox_x')
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from torch import Tensor

from scenemetrics import hub

__all__ = ["YOLOX_VARIANTS", "check_official_state", "infer_variant", "normalize_variant", "read_official"]

YOLOX_VARIANTS = ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")
"""The six Megvii release variants, smallest first."""


# variant -> (depth multiplier, width multiplier, depthwise convs, official test size); from exps/default/*.py
_CONFIGS: dict[str, tuple[float, float, bool, int]] = {
    "yolox_nano": (0.33, 0.25, True, 416),
    "yolox_tiny": (0.33, 0.375, False, 416),
    "yolox_s": (0.33, 0.50, False, 640),
    "yolox_m": (0.67, 0.75, False, 640),
    "yolox_l": (1.0, 1.0, False, 640),
    "yolox_x": (1.33, 1.25, False, 640),
}


def normalize_variant(variant: str) -> str:
    """Canonical variant name (``"yolox-x"`` and ``"YOLOX_X"`` become ``"yolox_x"``).

    Raises:
        ValueError: unknown variant; the message lists :data:`YOLOX_VARIANTS`.
    """
    if not isinstance(variant, str):
        raise ValueError(f"`variant` must be one of {', '.join(YOLOX_VARIANTS)}; received {variant!r}")
    name = variant.strip().lower().replace("-", "_")
    if name not in _CONFIGS:
        raise ValueError(f"unknown YOLOX variant {variant!r}; expected one of {', '.join(YOLOX_VARIANTS)}")
    return name


def _check_num_classes(num_classes: int) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(
            f"`num_classes` must be a positive int (or None: read it from the checkpoint); received {num_classes!r}"
        )
    return num_classes


def infer_variant(state: Mapping[str, Tensor]) -> str | None:
    """The YOLOX variant a state_dict was made for, from its tensor shapes (``None`` if it fits none).

    The stem's output channels give the width (``int(64 * width)``: 16, 24, 32, 48, 64, 80), the number of
    bottlenecks in ``dark2`` the depth (``max(round(3 * depth), 1)``), and ``dconv`` keys the depthwise nano.

    Example:
        >>> from scenemetrics.osim.yolox import YOLOX
        >>> infer_variant(YOLOX("yolox_tiny").state_dict())
        'yolox_tiny'
    """
    stem = state.get("backbone.backbone.stem.conv.conv.weight")
    if not isinstance(stem, Tensor) or stem.ndim != 4:
        return None
    base = int(stem.shape[0])
    prefix = "backbone.backbone.dark2.1.m."
    depth = len({k[len(prefix) :].split(".", 1)[0] for k in state if k.startswith(prefix)})
    depthwise = any(".dconv." in k for k in state)
    for name, (d, w, dw, _) in _CONFIGS.items():
        if int(64 * w) == base and max(round(3 * d), 1) == depth and dw == depthwise:
            return name
    return None


def read_official(
    variant: str, weights_path: str | os.PathLike | None = None, num_classes: int | None = None
) -> tuple[str, Mapping[str, Tensor], str, int | None]:
    """Read a checkpoint in the Megvii release layout (the file :meth:`~scenemetrics.osim.yolox.YOLOX.from_official`
    loads) with ``torch.load(..., weights_only=True)`` through the hub, and check it is one of ``variant``.

    Returns:
        ``(canonical variant, state_dict, source path, head size)``: the head size is ``num_classes`` when given,
        else the checkpoint's (``None`` when it has no classification head).

    Raises:
        scenemetrics.hub.WeightsNotFoundError: no file (offline, or the download failed).
        ValueError: see :meth:`~scenemetrics.osim.yolox.YOLOX.from_official`.
    """
    name = normalize_variant(variant)
    if num_classes is not None:
        num_classes = _check_num_classes(num_classes)
    path = hub.resolve_weights(f"osim/{name}", weights_path)
    source = os.fspath(path)
    ckpt = hub.load_torch_checkpoint(path)
    state = ckpt["model"] if isinstance(ckpt, Mapping) and "model" in ckpt else ckpt
    if not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values()):
        raise ValueError(
            f"{source!r} is not a YOLOX checkpoint: expected {{'model': state_dict, ...}} or a bare "
            "state_dict of tensors"
        )
    found = infer_variant(state)
    if found is not None and found != name:
        raise ValueError(
            f"{source!r} is a {found} checkpoint, not {name} (inferred from its tensor shapes): load it with "
            f'detector="{found}" (CLI: --detector {found}) or YOLOX.from_official("{found}", ...)'
        )
    head = state.get("head.cls_preds.0.weight")
    in_file = int(head.shape[0]) if isinstance(head, Tensor) and head.ndim >= 1 else None
    if num_classes is not None and in_file is not None and num_classes != in_file:
        raise ValueError(
            f"num_classes={num_classes} was asked for, but the head of {source!r} has {in_file} classes "
            f"(head.cls_preds.0.weight is {tuple(head.shape)}); pass num_classes={in_file} or None"
        )
    return name, state, source, num_classes or in_file


def check_official_state(
    own: Mapping[str, Tensor], state: Mapping[str, Tensor], *, source: str = "state_dict", variant: str = "yolox"
) -> None:
    """Raise a :class:`ValueError` naming the missing and unexpected keys and the shape mismatches of ``state`` against
    a model's own state_dict ``own`` (nothing when they match)."""
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    mismatched = [
        f"{k}: {tuple(state[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if k in state and tuple(state[k].shape) != tuple(v.shape)
    ]
    if missing or unexpected or mismatched:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing key(s) (e.g. {', '.join(missing[:4])})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected key(s) (e.g. {', '.join(unexpected[:4])})")
        if mismatched:
            parts.append(f"{len(mismatched)} shape mismatch(es) (e.g. {'; '.join(mismatched[:3])})")
        raise ValueError(
            f"{source} does not match YOLOX variant {variant!r}: {', '.join(parts)}. Check the variant; "
            "legacy 0.0.1 Megvii weights are not supported (use the 0.1.1rc0 release)."
        )
