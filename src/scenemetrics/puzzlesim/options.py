"""``PuzzleSimOptions``: every PuzzleSim option in one frozen record, validated once when it is built.

The functional API, :class:`~scenemetrics.puzzlesim.PuzzleSimMemory`, :class:`~scenemetrics.puzzlesim.PuzzleSim`,
:class:`~scenemetrics.puzzlesim.SoftPuzzleSimLoss` and the inpainting loop keep their keyword arguments; each builds
one options object from them and passes it down, so every check runs once per call and every error names the
keyword the caller used.

Example:
    >>> from scenemetrics.puzzlesim import PuzzleSimOptions
    >>> opts = PuzzleSimOptions(backbone="squeeze", layers=[2, 3], layer_weights=None, resize=64)
    >>> opts.backbone, opts.layers, opts.layer_weights, opts.resize
    ('squeezenet1_1', (2, 3), (0.5, 0.5), (64, 64))
    >>> PuzzleSimOptions(chunk_size=0)
    Traceback (most recent call last):
    ...
    ValueError: `chunk_size` must be an int >= 1; received 0
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scenemetrics.checks import check_choice, check_positive_int
from scenemetrics.puzzlesim.backbone import BACKBONES, canonical_backbone, validate_layers

__all__ = [
    "DEFAULT_LAYERS",
    "DEFAULT_LAYER_WEIGHTS",
    "PRECISIONS",
    "SCREENING",
    "SEARCHES",
    "PuzzleSimOptions",
    "check_chunk_size",
    "check_layer_weights",
    "check_resize",
    "default_batch_size",
    "min_side",
]

DEFAULT_LAYERS = (2, 3, 4)
DEFAULT_LAYER_WEIGHTS = (0.67, 0.2, 0.13)
PRECISIONS = ("float32", "float16", "bfloat16")
SCREENING = ("auto", "on", "off")
SEARCHES = ("exact", "faiss")
#: reference images per backbone pass when ``batch_size=None``: one on the CPU, where a batch of 8 is slower (about
#: 2x at 416x628 on a 2-core AVX2 EPYC, 1 or 2 threads) and holds 8 images' activations (about 300 MB); 8 on GPUs
DEFAULT_BATCH_SIZE = {"cpu": 1}
DEFAULT_BATCH_SIZE_ACCELERATOR = 8

Precision = Literal["float32", "float16", "bfloat16"]
Screening = Literal["auto", "on", "off"]
Search = Literal["exact", "faiss"]


# ----------------------------------------------------------------------------------------------- option checks
def check_resize(resize: int | Sequence[int] | None) -> tuple[int, int] | None:
    """``None``, a positive int ``n`` (-> ``(n, n)``) or a pair of positive ints."""
    if resize is None:
        return None
    if isinstance(resize, int) and not isinstance(resize, bool):
        pair: tuple = (resize, resize)
    elif isinstance(resize, Sequence) and not isinstance(resize, (str, bytes)) and len(resize) == 2:
        pair = tuple(resize)
    else:
        raise ValueError(
            f"`resize` must be None, a positive int or a pair (h, w) of positive ints; received {resize!r}"
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in pair):
        raise ValueError(
            f"`resize` must be None, a positive int or a pair (h, w) of positive ints; received {resize!r}"
        )
    return (int(pair[0]), int(pair[1]))


def check_layer_weights(layer_weights: Sequence[float] | None, layers: Sequence) -> tuple[float, ...]:
    """Weights as given (no renormalisation); ``None`` means equal weights ``1/len(layers)``."""
    if layer_weights is None:
        return tuple(1.0 / len(layers) for _ in layers)
    if isinstance(layer_weights, (str, bytes)) or not isinstance(layer_weights, Sequence):
        raise ValueError(f"`layer_weights` must be a sequence of floats or None; received {layer_weights!r}")
    weights = tuple(layer_weights)
    if len(weights) != len(layers):
        raise ValueError(
            f"`layer_weights` must have one weight per layer ({len(layers)} for layers {tuple(layers)}); received "
            f"{len(weights)}: {weights!r}"
        )
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ValueError(f"`layer_weights` must be real numbers; received {weights!r}") from None
    if not all(math.isfinite(w) and w >= 0 for w in values):
        raise ValueError(f"`layer_weights` must be finite and non-negative; received {weights!r}")
    return values


def check_chunk_size(value: Any) -> int | None:
    """``None`` or an int >= 1."""
    return None if value is None else check_positive_int(value, "chunk_size")


def default_batch_size(device: Any) -> int:
    """Reference images per backbone pass for ``batch_size=None`` on ``device``: 1 on the CPU, 8 elsewhere.

    Example:
        >>> default_batch_size("cpu"), default_batch_size("cuda:0")
        (1, 8)
    """
    kind = device.type if hasattr(device, "type") else str(device).split(":")[0]
    return DEFAULT_BATCH_SIZE.get(kind, DEFAULT_BATCH_SIZE_ACCELERATOR)


def check_module_layers(layers: Any) -> Sequence:
    """The layer keys of a custom feature extractor: a non-empty sequence, kept as given (the module receives it)."""
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or len(layers) == 0:
        raise ValueError(f"`layers` must be a non-empty sequence of layer keys; received {layers!r}")
    return layers


def min_side(backbone: Any, layers: Sequence) -> int | None:
    """Smallest image side a named backbone needs up to ``max(layers)``; ``None`` for a custom module."""
    if not isinstance(backbone, str):
        return None
    return BACKBONES[canonical_backbone(backbone)].min_sides[max(layers)]


def _is_module(backbone: Any) -> bool:
    from torch import nn  # torch is imported by every module that builds options anyway

    return isinstance(backbone, nn.Module)


# ----------------------------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class PuzzleSimOptions:
    """Every PuzzleSim option, validated once in ``__post_init__`` and stored normalised.

    Attributes:
        backbone: canonical backbone name (``"squeezenet1_1"``, ``"alexnet"``, ``"vgg16"``; the aliases
            ``"squeeze"``, ``"alex"``, ``"vgg"`` are accepted), or an ``nn.Module`` feature extractor
            ``forward(images01, layers) -> {layer: (B, C, h, w)}`` (its own normalisation, float32 only).
        layers: a tuple of 0-based LPIPS slice indices for a named backbone; for a module, the layer keys exactly as
            given (the module receives this very object).
        layer_weights: one weight per layer, applied as given; given as ``None``, stored as equal weights ``1/m``.
        weights_path: backbone checkpoint file or folder as a string (``None``: the hub cache); unused by a module.
        resize: ``None`` or ``(h, w)`` (an int ``n`` is stored as ``(n, n)``).
        precision: ``"float32"``, ``"float16"`` or ``"bfloat16"`` (the latter two need CUDA, checked where the
            memory is placed).
        chunk_size: maximum similarities materialised at once, or ``None`` (device default).
        screening: ``"auto"``, ``"on"`` or ``"off"``.
        search: ``"exact"`` or ``"faiss"``.
        faiss_options: the faiss index options, or ``None``.
        batch_size: reference images per backbone pass while embedding, or ``None`` (stored as given): the device
            default :func:`default_batch_size`, resolved where the memory is placed.

    Raises:
        ValueError: a bad option; the message names the keyword argument.

    Example:
        >>> from scenemetrics.puzzlesim import PuzzleSimOptions
        >>> opts = PuzzleSimOptions(layers=(2, 4), layer_weights=(0.8, 0.2))
        >>> opts.with_call(layers=(4,), layer_weights=None).layer_weights
        (1.0,)
    """

    backbone: Any = "squeezenet1_1"
    layers: Sequence = DEFAULT_LAYERS
    layer_weights: tuple[float, ...] | None = DEFAULT_LAYER_WEIGHTS
    weights_path: str | os.PathLike | None = None
    resize: tuple[int, int] | None = None
    precision: Precision = "float32"
    chunk_size: int | None = None
    screening: Screening = "auto"
    search: Search = "exact"
    faiss_options: Mapping | None = field(default=None, compare=False)
    batch_size: int | None = None

    def __post_init__(self) -> None:
        self._check(frozenset(self.__dataclass_fields__))

    def _check(self, changed: frozenset[str]) -> None:
        """Normalise and check the fields in ``changed``, and every rule that ties one of them to another field."""
        put = object.__setattr__
        if changed & {"backbone", "layers"}:
            if _is_module(self.backbone):
                put(self, "layers", check_module_layers(self.layers))
            elif self.backbone is not None and not isinstance(self.backbone, str):
                raise ValueError(
                    f"`backbone` must be a backbone name ({', '.join(map(repr, BACKBONES))}) or a torch.nn.Module "
                    f"feature extractor; received {type(self.backbone).__name__}"
                )
            else:
                put(self, "backbone", canonical_backbone(self.backbone))
                put(self, "layers", validate_layers(self.backbone, self.layers))
        if changed & {"backbone", "layers", "layer_weights"}:
            put(self, "layer_weights", check_layer_weights(self.layer_weights, self.layers))
        if "weights_path" in changed:
            put(self, "weights_path", None if self.weights_path is None else os.fspath(self.weights_path))
        if "resize" in changed:
            put(self, "resize", check_resize(self.resize))
        if "chunk_size" in changed:
            put(self, "chunk_size", check_chunk_size(self.chunk_size))
        if "precision" in changed:
            check_choice(self.precision, "precision", PRECISIONS)
        if "screening" in changed:
            check_choice(self.screening, "screening", SCREENING)
        if "search" in changed:
            check_choice(self.search, "search", SEARCHES)
        if changed & {"screening", "search"} and self.screening == "on" and self.search == "faiss":
            raise ValueError("`screening`='on' cannot be combined with `search`='faiss' (faiss is approximate)")
        if "batch_size" in changed and self.batch_size is not None:
            put(self, "batch_size", check_positive_int(self.batch_size, "batch_size"))
        if changed & {"backbone", "precision"} and self.is_module and self.precision != "float32":
            raise ValueError(
                f"`precision` must be 'float32' with a custom backbone module; received {self.precision!r}"
            )

    @property
    def is_module(self) -> bool:
        """Whether :attr:`backbone` is a custom ``nn.Module`` feature extractor."""
        return _is_module(self.backbone)

    @property
    def min_side(self) -> int | None:
        """Smallest image side the named backbone needs up to ``max(layers)`` (``None``: a custom module)."""
        return min_side(self.backbone, self.layers)

    def with_call(self, **changes: Any) -> PuzzleSimOptions:
        """A copy with some options replaced (``self`` when none differs): only the options that differ, and the
        rules tying them to others, are checked again.

        Raises:
            TypeError: an unknown option. ValueError: a bad value, named as in :class:`PuzzleSimOptions`.
        """
        unknown = sorted(set(changes) - set(self.__dataclass_fields__))
        if unknown:
            raise TypeError(f"PuzzleSimOptions has no option(s) {unknown}")
        changed = {k: v for k, v in changes.items() if not _same(getattr(self, k), v)}
        if not changed:
            return self
        out = copy.copy(self)
        for key, value in changed.items():
            object.__setattr__(out, key, value)
        out._check(frozenset(changed))
        return out


def _same(stored: Any, given: Any) -> bool:
    """Whether a call option equals the stored (normalised) one: the same object, or an equal value of the same type
    (a list of layers is checked again; the normalised tuple it gives is equal)."""
    if stored is given:
        return True
    if type(stored) is not type(given) or isinstance(stored, (Mapping,)) or _is_module(stored):
        return False
    try:
        return bool(stored == given)
    except (TypeError, ValueError, RuntimeError):
        return False
