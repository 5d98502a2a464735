"""PuzzleSim feature backbones: torchvision SqueezeNet 1.1, AlexNet and VGG16 ``features``, tapped per LPIPS slice.

Layers are 0-based slice indices in the LPIPS convention: slice ``l`` is a contiguous range of the torchvision
``features`` modules and the tap is that slice's output (post-ReLU, so every feature is non-negative).

Example:
    >>> import torch
    >>> from scenemetrics.puzzlesim import BACKBONES, load_backbone, random_checkpoint
    >>> BACKBONES["squeezenet1_1"].channels[2:5]
    (256, 384, 384)
    >>> import tempfile, os
    >>> path = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
    >>> net = load_backbone("squeezenet1_1", weights_path=path)
    >>> {k: tuple(v.shape) for k, v in net(torch.rand(1, 3, 64, 64), (2, 4)).items()}
    {2: (1, 256, 7, 7), 4: (1, 384, 3, 3)}
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import cast

import torch
from torch import Tensor, nn

from scenemetrics import hub

__all__ = [
    "BACKBONES",
    "BackboneSpec",
    "PuzzleSimBackbone",
    "canonical_backbone",
    "load_backbone",
    "random_checkpoint",
    "validate_layers",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class BackboneSpec:
    """One PuzzleSim backbone.

    Attributes:
        name: canonical name (torchvision's model function).
        slices: ``(a, b)`` per layer: layer ``l`` is ``features[a:b]``.
        channels: feature channels per layer.
        strides: feature stride per layer (pixels per feature position).
        min_sides: smallest input side that still gives a non-empty feature map up to that layer.
        hub_key: key of the checkpoint in :data:`scenemetrics.hub.CHECKPOINTS`.
    """

    name: str
    slices: tuple[tuple[int, int], ...]
    channels: tuple[int, ...]
    strides: tuple[int, ...]
    min_sides: tuple[int, ...]
    hub_key: str

    @property
    def num_layers(self) -> int:
        return len(self.slices)

    @property
    def filename(self) -> str:
        return hub.CHECKPOINTS[self.hub_key].filename

    @property
    def url(self) -> str:
        return hub.CHECKPOINTS[self.hub_key].url


BACKBONES: Mapping[str, BackboneSpec] = MappingProxyType(
    {
        "squeezenet1_1": BackboneSpec(
            name="squeezenet1_1",
            slices=((0, 2), (2, 5), (5, 8), (8, 10), (10, 11), (11, 12), (12, 13)),
            channels=(64, 128, 256, 384, 384, 512, 512),
            strides=(2, 4, 8, 16, 16, 16, 16),
            min_sides=(3, 5, 9, 17, 17, 17, 17),
            hub_key="puzzlesim/squeezenet1_1",
        ),
        "alexnet": BackboneSpec(
            name="alexnet",
            slices=((0, 2), (2, 5), (5, 8), (8, 10), (10, 12)),
            channels=(64, 192, 384, 256, 256),
            strides=(4, 8, 16, 16, 16),
            min_sides=(7, 15, 31, 31, 31),
            hub_key="puzzlesim/alexnet",
        ),
        "vgg16": BackboneSpec(
            name="vgg16",
            slices=((0, 4), (4, 9), (9, 16), (16, 23), (23, 30)),
            channels=(64, 128, 256, 512, 512),
            strides=(1, 2, 4, 8, 16),
            min_sides=(1, 2, 4, 8, 16),
            hub_key="puzzlesim/vgg16",
        ),
    }
)
"""Read-only mapping backbone name -> :class:`BackboneSpec` (slices, channels, strides, min sides, file, URL)."""

ALIASES = MappingProxyType({"squeeze": "squeezenet1_1", "alex": "alexnet", "vgg": "vgg16"})


def canonical_backbone(backbone: str) -> str:
    """Canonical backbone name; the authors' ``"squeeze"``, ``"alex"``, ``"vgg"`` are accepted aliases."""
    if isinstance(backbone, str):
        name = ALIASES.get(backbone, backbone)
        if name in BACKBONES:
            return name
    options = ", ".join([*BACKBONES, *(f"{a!r} (alias)" for a in ALIASES)])
    raise ValueError(f"`backbone` must be one of {options}; received {backbone!r}")


def validate_layers(backbone: str, layers: Sequence[int]) -> tuple[int, ...]:
    """Check ``layers`` (non-empty, ints, unique, in range for ``backbone``) and return them as a tuple."""
    spec = BACKBONES[canonical_backbone(backbone)]
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
        raise ValueError(f"`layers` must be a sequence of ints; received {layers!r}")
    layers = tuple(layers)
    if not layers:
        raise ValueError("`layers` must name at least one layer; received an empty sequence")
    if not all(isinstance(layer, int) and not isinstance(layer, bool) for layer in layers):
        raise ValueError(f"`layers` must be ints; received {layers!r}")
    if len(set(layers)) != len(layers):
        raise ValueError(f"`layers` must not repeat a layer; received {layers!r}")
    bad = [layer for layer in layers if not 0 <= layer < spec.num_layers]
    if bad:
        raise ValueError(
            f"`layers` must lie in 0..{spec.num_layers - 1} for backbone {spec.name!r}; received {layers!r}"
        )
    return layers


def _build_model(name: str) -> nn.Module:
    """The torchvision classifier on the meta device: shapes and module structure only, no allocation or init."""
    import torchvision

    with torch.device("meta"):
        return getattr(torchvision.models, name)(weights=None)


def _features_state_dict(state: object, name: str, reference_keys: Sequence[str], path: str) -> dict[str, Tensor]:
    """Extract the ``features`` Sequential's state_dict from a torchvision checkpoint in any accepted layout."""
    if not isinstance(state, Mapping):
        raise ValueError(f"checkpoint {path!r} must hold a state_dict (a mapping); received {type(state).__name__}")
    keys = list(state)
    if any(k.startswith("features.") for k in keys):
        # whole classifier (features.* + classifier.*) or features-only with the prefix; classifier.* is ignored
        sd = {k[len("features.") :]: v for k, v in state.items() if k.startswith("features.")}
        unexpected_outer = [k for k in keys if not k.startswith(("features.", "classifier."))]
    else:
        sd = dict(state)
        unexpected_outer = []
    want = set(reference_keys)
    missing = sorted(want - set(sd), key=_natural)
    unexpected = sorted(set(sd) - want, key=_natural) + unexpected_outer
    if missing or unexpected:
        raise ValueError(
            f"checkpoint {path!r} does not match torchvision {name}.features: "
            f"missing keys {missing[:5]}{' ...' if len(missing) > 5 else ''}, "
            f"unexpected keys {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}"
        )
    return sd


def _natural(key: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in key.split("."))


class PuzzleSimBackbone(nn.Module):
    """A frozen torchvision ``features`` stack split into LPIPS slices.

    ``forward(images01, layers)`` takes ``[0, 1]`` RGB images, applies the ImageNet normalisation
    ``(x - mean) / std`` (the authors' ``2x - 1`` + LPIPS scaling layer, the same affine map) and returns the
    outputs of the requested slices. Only slices ``0..max(layers)`` run.
    """

    def __init__(self, name: str, features: nn.Sequential) -> None:
        super().__init__()
        self.spec = BACKBONES[canonical_backbone(name)]
        self.slices = nn.ModuleList(nn.Sequential(*features[a:b]) for a, b in self.spec.slices)
        mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        self.register_buffer("scale", 1.0 / std, persistent=False)
        self.register_buffer("shift", -mean / std, persistent=False)
        self.eval()
        self.requires_grad_(False)

    @property
    def name(self) -> str:
        return self.spec.name

    scale: Tensor
    shift: Tensor

    def train(self, mode: bool = True) -> PuzzleSimBackbone:
        # frozen forever: a parent module's .train() must not switch this one (the maps are defined in eval mode)
        return super().train(False)

    def forward(
        self, images01: Tensor, layers: Sequence[int], sink: Callable[[int, Tensor], None] | None = None
    ) -> dict[int, Tensor]:
        """``{layer: (B, C, h, w)}`` for ``layers``; with ``sink``, each map is handed to ``sink(layer, map)`` as
        soon as it exists and not kept (the returned dict is then empty): the streamed pass of
        :meth:`iter_features`, still through ``__call__`` so that module hooks see it."""
        if sink is None:
            return dict(self.iter_features(images01, layers))
        for layer, f in self.iter_features(images01, layers):
            sink(layer, f)
            del f
        return {}

    def iter_features(self, images01: Tensor, layers: Sequence[int]) -> Iterator[tuple[int, Tensor]]:
        """Yield ``(layer, (B, C, h, w) features)`` for the wanted ``layers`` in network order, streaming.

        The network runs module by module, so each activation is released as soon as the next module has consumed
        it (a slice's input is not held while the slice runs), and a consumer that drops each yielded map before
        asking for the next keeps only one wanted layer alive: :class:`~scenemetrics.puzzlesim.PuzzleSimMemory`
        writes each into its bank this way.
        """
        wanted = set(layers)
        x = images01 * self.scale + self.shift
        for i in range(max(wanted) + 1):
            for module in self.slices[i]:
                x = module(x)
            if i in wanted:
                yield i, x


@functools.lru_cache(maxsize=8)
def _load_cached(name: str, path: str, mtime_ns: int, device: str) -> PuzzleSimBackbone:
    features = cast(nn.Sequential, _build_model(name).features)
    state = hub.load_torch_checkpoint(path)
    reference = features.state_dict()
    sd = _features_state_dict(state, name, list(reference), path)
    bad = [k for k, v in sd.items() if not isinstance(v, Tensor) or tuple(v.shape) != tuple(reference[k].shape)]
    if bad:
        raise ValueError(
            f"checkpoint {path!r} does not match torchvision {name}.features: wrong shapes for {bad[:5]}"
            + (" ..." if len(bad) > 5 else "")
        )
    features.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True, assign=True)
    return PuzzleSimBackbone(name, features).to(device)


def load_backbone(
    name: str = "squeezenet1_1",
    weights_path: str | os.PathLike | None = None,
    device: torch.device | str | None = None,
) -> PuzzleSimBackbone:
    """Build a torchvision backbone and load its ImageNet checkpoint through :mod:`scenemetrics.hub`.

    Args:
        name: ``"squeezenet1_1"`` (default), ``"alexnet"`` or ``"vgg16"`` (aliases ``"squeeze"``, ``"alex"``,
            ``"vgg"``).
        weights_path: a checkpoint file (used as given) or a folder holding the torchvision file name. ``None``:
            ``$SCENEMETRICS_HOME/puzzlesim/``, then torchvision's cache ``torch.hub.get_dir()/checkpoints``, then a
            verified download. Accepted content: a torchvision state_dict of the whole classifier (``classifier.*``
            ignored) or of ``features`` alone (``features.*`` or bare ``<i>.<param>`` keys).
        device: where the module lives (default CPU).

    Returns:
        A frozen :class:`PuzzleSimBackbone` in ``eval()`` with ``requires_grad=False``. Loaded modules are cached
        per (backbone, file, device), so repeated calls are cheap and share one module.

    Raises:
        ValueError: unknown backbone, or the checkpoint's ``features`` keys do not match torchvision's.
        scenemetrics.hub.WeightsNotFoundError: no checkpoint found (offline or download failed).
    """
    name = canonical_backbone(name)
    path = hub.resolve_weights(BACKBONES[name].hub_key, weights_path)
    dev = torch.device("cpu") if device is None else torch.device(device)
    return _load_cached(name, str(Path(path).resolve()), Path(path).stat().st_mtime_ns, str(dev))


def random_checkpoint(name: str, path: str | os.PathLike, seed: int = 0, *, include_classifier: bool = True) -> Path:
    """Write a deterministic random-weight checkpoint in torchvision's layout (for tests, demos, benchmarks).

    Each ``features`` weight is drawn from ``numpy.random.default_rng(seed)``: normal with He std
    ``sqrt(2 / fan_in)``, biases normal with std 0.01, so the same file is produced on any torch version.
    Classifier tensors (needed by loaders that load the whole model strictly, such as torchvision's) are zeros.

    These weights are **uncalibrated**: maps computed with them say nothing about perceptual quality.

    Example:
        >>> import tempfile, os
        >>> p = random_checkpoint("alexnet", os.path.join(tempfile.mkdtemp(), "a.pth"), include_classifier=False)
        >>> p.name
        'a.pth'
    """
    import numpy as np

    name = canonical_backbone(name)
    model = _build_model(name)
    rng = np.random.default_rng(seed)
    state: dict[str, Tensor] = {}
    for key, value in model.state_dict().items():
        if key.startswith("features."):
            if key.endswith("weight"):
                fan_in = math.prod(value.shape[1:])
                arr = rng.standard_normal(value.shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in))
            else:
                arr = rng.standard_normal(value.shape, dtype=np.float32) * np.float32(0.01)
            state[key] = torch.from_numpy(arr)
        elif include_classifier:
            state[key] = torch.zeros(value.shape, dtype=value.dtype)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, out)
    return out
