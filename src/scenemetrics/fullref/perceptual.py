"""LPIPS (Zhang et al., CVPR 2018) as a frozen network: spatial maps, scores, and the 3DGS protocol's variant.

The network is the ``lpips`` package's v0.1 model: a torchvision backbone (AlexNet, VGG16 or SqueezeNet 1.1
``features``) cut into the same slices, each slice's output normalised to unit length along the channels
(``f / (||f|| + 1e-10)``), the squared difference of the two images' normalised features weighted per channel by
the published linear layer (a 1 x 1 convolution without bias) into one distance map per slice. LPIPS is the sum over
slices of each map's spatial mean; the spatial map (``lpips.LPIPS(spatial=True)``) is the sum over slices of each map
upsampled bilinearly (``align_corners=False``) to the image size.

Weights come through :mod:`scenemetrics.hub`: the ImageNet backbone is torchvision's file (hub keys
``puzzlesim/alexnet``, ``puzzlesim/vgg16``, ``puzzlesim/squeezenet1_1``, the files the built-in ``lpips`` metric and
PuzzleSim use), the linear layers are the v0.1 files of richzhang/PerceptualSimilarity (BSD-2-Clause; hub keys
``fullref/lpips_alex``, ``fullref/lpips_vgg``, ``fullref/lpips_squeeze``), which torchmetrics installs alongside
itself, so they are normally found without a download.

Example:
    >>> import os, tempfile, torch
    >>> import scenemetrics as sm
    >>> path = os.path.join(tempfile.mkdtemp(), "a.pth")
    >>> backbone = sm.puzzlesim.random_checkpoint("alexnet", path, include_classifier=False)
    >>> x = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    >>> m = sm.fullref.lpips_map(x, x.flip(-1), weights_path=backbone)
    >>> m.shape, bool((m >= 0).all()), sm.fullref.lpips(x, x, weights_path=backbone).tolist()
    (torch.Size([2, 64, 64]), True, [0.0, 0.0])
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import cast

import torch
from torch import Tensor, nn

from scenemetrics import hub
from scenemetrics.fullref.functional import check_pair

__all__ = [
    "NETS",
    "LPIPSNet",
    "LPIPSNetwork",
    "layer_distances",
    "load_lpips",
    "lpips",
    "lpips_3dgs",
    "lpips_map",
    "map_from_layers",
    "net_spec",
    "resolve_lpips_files",
    "score_from_layers",
]

# the lpips package's ScalingLayer: inputs in [-1, 1] become (x - shift) / scale (ImageNet statistics in that range)
_SHIFT = (-0.030, -0.088, -0.188)
_SCALE = (0.458, 0.448, 0.450)
_NORM_EPS = 1e-10


@dataclass(frozen=True)
class LPIPSNet:
    """One LPIPS backbone.

    Attributes:
        name: the ``lpips`` package's name (``alex``, ``vgg``, ``squeeze``).
        arch: torchvision's model function.
        slices: ``(a, b)`` per LPIPS layer: the layer is ``features[a:b]`` applied to the previous layer's output.
        channels: channels of each layer (the linear layer's width).
        min_side: the smallest image side for which the last layer still has a position.
        backbone_key: hub key of the torchvision ImageNet checkpoint.
        linear_key: hub key of the v0.1 linear layers.
    """

    name: str
    arch: str
    slices: tuple[tuple[int, int], ...]
    channels: tuple[int, ...]
    min_side: int
    backbone_key: str
    linear_key: str


NETS: Mapping[str, LPIPSNet] = MappingProxyType(
    {
        "alex": LPIPSNet(
            "alex",
            "alexnet",
            ((0, 2), (2, 5), (5, 8), (8, 10), (10, 12)),
            (64, 192, 384, 256, 256),
            31,
            "puzzlesim/alexnet",
            "fullref/lpips_alex",
        ),
        "vgg": LPIPSNet(
            "vgg",
            "vgg16",
            ((0, 4), (4, 9), (9, 16), (16, 23), (23, 30)),
            (64, 128, 256, 512, 512),
            16,
            "puzzlesim/vgg16",
            "fullref/lpips_vgg",
        ),
        "squeeze": LPIPSNet(
            "squeeze",
            "squeezenet1_1",
            ((0, 2), (2, 5), (5, 8), (8, 10), (10, 11), (11, 12), (12, 13)),
            (64, 128, 256, 384, 384, 512, 512),
            17,
            "puzzlesim/squeezenet1_1",
            "fullref/lpips_squeeze",
        ),
    }
)
"""Read-only mapping ``net`` -> :class:`LPIPSNet` (the slicing of the ``lpips`` package, v0.1)."""


def net_spec(net: str) -> LPIPSNet:
    """The :class:`LPIPSNet` of ``net``; a ``ValueError`` naming ``net`` for anything else."""
    if not isinstance(net, str) or net not in NETS:
        raise ValueError(f"`net` must be one of {', '.join(map(repr, NETS))}; received {net!r}")
    return NETS[net]


class LPIPSNetwork(nn.Module):
    """A frozen LPIPS v0.1 network: the backbone's slices, the scaling layer and the linear layers.

    Use :func:`load_lpips` to build one from checkpoints; :meth:`layer_distances` gives the per-layer distance maps
    everything else is computed from.
    """

    shift: Tensor
    scale: Tensor

    def __init__(self, spec: LPIPSNet, features: nn.Sequential, linear: Sequence[Tensor]) -> None:
        super().__init__()
        self.spec = spec
        self.slices = nn.ModuleList(nn.Sequential(*features[a:b]) for a, b in spec.slices)
        self.register_buffer("shift", torch.tensor(_SHIFT).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("scale", torch.tensor(_SCALE).view(1, 3, 1, 1), persistent=False)
        for i, w in enumerate(linear):
            self.register_buffer(f"linear{i}", w.reshape(1, -1, 1, 1).float(), persistent=False)
        # channels-last ("NHWC") tensors: CPU max pooling is an order of magnitude faster on them than on NCHW
        # tensors and the convolutions a little, the same LPIPS to float32 rounding (``to(device)`` keeps the format)
        self.to(memory_format=torch.channels_last)
        self.eval()
        self.requires_grad_(False)

    def train(self, mode: bool = True) -> LPIPSNetwork:
        # frozen: LPIPS is defined in eval mode (its dropout before the linear layers off)
        return super().train(False)

    def layer_distances(self, preds: Tensor, target: Tensor, *, rescale: bool = True) -> list[Tensor]:
        """Per-layer distance maps ``(B, 1, h_l, w_l)``: linear layer applied to the squared normalised difference.

        Args:
            preds, target: ``(B, 3, H, W)`` float32 in [0, 1] (checked by the callers).
            rescale: map [0, 1] to [-1, 1] first (``2 x - 1``), as the ``lpips`` package's ``normalize=True`` and
                torchmetrics' ``normalize=True`` do; ``False`` feeds the [0, 1] values to the scaling layer as they
                are, which is what 3DGS's ``metrics.py`` does.
        """
        x = torch.cat((preds, target))
        if rescale:
            x = 2 * x - 1
        x = ((x - self.shift) / self.scale).contiguous(memory_format=torch.channels_last)
        n = preds.shape[0]
        out = []
        for i, layer in enumerate(self.slices):
            x = layer(x)
            f = x / (torch.sqrt(torch.sum(x * x, dim=1, keepdim=True)) + _NORM_EPS)
            diff = (f[:n] - f[n:]) ** 2
            out.append(torch.nn.functional.conv2d(diff, getattr(self, f"linear{i}")))
        return out


def _natural(key: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in key.split("."))


def _features_state(state: object, arch: str, reference: Mapping[str, Tensor], path: str) -> dict[str, Tensor]:
    """The ``features`` weights of a torchvision checkpoint (whole model, ``features.*`` only, or bare keys)."""
    if not isinstance(state, Mapping):
        raise ValueError(f"checkpoint {path!r} must hold a state_dict (a mapping); received {type(state).__name__}")
    if any(str(k).startswith("features.") for k in state):
        sd = {k[len("features.") :]: v for k, v in state.items() if k.startswith("features.")}
        outer = [k for k in state if not k.startswith(("features.", "classifier."))]
    else:
        sd, outer = dict(state), []
    missing = sorted(set(reference) - set(sd), key=_natural)
    unexpected = sorted(set(sd) - set(reference), key=_natural) + outer
    common = reference.keys() & sd.keys()
    shapes = [k for k in common if not (isinstance(sd[k], Tensor) and sd[k].shape == reference[k].shape)]
    if missing or unexpected or shapes:
        raise ValueError(
            f"checkpoint {path!r} does not match torchvision {arch}.features (expected a torchvision {arch} "
            f"state_dict, whole or features only): missing keys {missing[:5]}, unexpected keys {unexpected[:5]}, "
            f"wrong shapes {sorted(shapes, key=_natural)[:5]}"
        )
    return sd


def _linear_state(state: object, spec: LPIPSNet, path: str) -> list[Tensor]:
    """The linear layers of an official v0.1 file: ``lin<i>.model.1.weight`` of shape ``(1, C_i, 1, 1)``."""
    if not isinstance(state, Mapping):
        raise ValueError(f"checkpoint {path!r} must hold a state_dict (a mapping); received {type(state).__name__}")
    want = {f"lin{i}.model.1.weight": (1, c, 1, 1) for i, c in enumerate(spec.channels)}
    bad = sorted(set(want) ^ set(state)) + sorted(
        k for k in want.keys() & state.keys() if not isinstance(state[k], Tensor) or tuple(state[k].shape) != want[k]
    )
    if bad:
        raise ValueError(
            f"checkpoint {path!r} does not hold the LPIPS v0.1 linear layers of {spec.name!r} (keys "
            f"lin0..lin{len(spec.channels) - 1}.model.1.weight, shapes (1, C, 1, 1) with C = {spec.channels}); "
            f"mismatched keys {bad[:5]}"
        )
    return [state[f"lin{i}.model.1.weight"] for i in range(len(spec.channels))]


@functools.lru_cache(maxsize=8)
def _load_cached(name: str, backbone: str, backbone_mtime: int, linear: str, linear_mtime: int, device: str):
    import torchvision

    spec = NETS[name]
    with torch.device("meta"):
        features = cast(nn.Sequential, getattr(torchvision.models, spec.arch)(weights=None).features)
    # mapped, not read: torchvision's files hold the classifier too (AlexNet: 9 MB of features in 233 MB); the
    # features are copied out of the mapping
    state = hub.load_torch_checkpoint(backbone, mmap=True)
    sd = _features_state(state, spec.arch, features.state_dict(), backbone)
    features.load_state_dict({k: v.to(torch.float32, copy=True) for k, v in sd.items()}, strict=True, assign=True)
    layers = _linear_state(hub.load_torch_checkpoint(linear), spec, linear)
    return LPIPSNetwork(spec, features, layers).to(device)


def _linear_path(spec: LPIPSNet, weights_path, linear_weights_path) -> Path:
    if linear_weights_path is None and weights_path is not None:
        folder = Path(weights_path).expanduser()
        if folder.is_dir() and (folder / hub.CHECKPOINTS[spec.linear_key].filename).is_file():
            linear_weights_path = folder
    return Path(hub.resolve_weights(spec.linear_key, linear_weights_path))


def resolve_lpips_files(
    net: str = "alex",
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
) -> tuple[Path, Path]:
    """The backbone and linear-layer files :func:`load_lpips` would load (found, verified or downloaded now).

    Raises:
        ValueError: unknown ``net``. scenemetrics.hub.WeightsNotFoundError: a file is nowhere to be found.
    """
    spec = net_spec(net)
    backbone = Path(hub.resolve_weights(spec.backbone_key, weights_path))
    return backbone, _linear_path(spec, weights_path, linear_weights_path)


def load_lpips(
    net: str = "alex",
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
    device: torch.device | str | None = None,
) -> LPIPSNetwork:
    """The frozen LPIPS network of ``net``, loaded once per (files, device) and shared.

    Args:
        net: ``"alex"``, ``"vgg"`` or ``"squeeze"``.
        weights_path: the torchvision ImageNet backbone: a file (a torchvision state_dict, whole or ``features``
            only), or a folder holding torchvision's file name (``alexnet-owt-7be5be79.pth``, ...). ``None``: the
            scenemetrics cache, torch's checkpoint cache, then a verified download.
        linear_weights_path: the v0.1 linear layers (``alex.pth``, ``vgg.pth``, ``squeeze.pth`` as published): a file
            or a folder. ``None``: that file in the ``weights_path`` folder if it is there, else the scenemetrics
            cache, torchmetrics' bundled copy (verified by sha256), then a verified download.
        device: where the network runs (default CPU).

    Raises:
        ValueError: unknown ``net``, or a checkpoint whose keys or shapes do not match.
        scenemetrics.hub.WeightsNotFoundError: a file is nowhere to be found (offline or the download failed).
    """
    spec = net_spec(net)
    backbone, linear = resolve_lpips_files(spec.name, weights_path, linear_weights_path)
    dev = torch.device("cpu") if device is None else torch.device(device)
    return _load_cached(
        spec.name,
        str(backbone.resolve()),
        backbone.stat().st_mtime_ns,
        str(linear.resolve()),
        linear.stat().st_mtime_ns,
        str(dev),
    )


def _inputs(preds: Tensor, target: Tensor, spec: LPIPSNet) -> tuple[Tensor, Tensor]:
    reason = f" (the last layer of LPIPS-{spec.name} needs images of at least {spec.min_side} pixels per side)"
    return check_pair(preds, target, min_size=spec.min_side, min_size_reason=reason)


def layer_distances(
    preds: Tensor,
    target: Tensor,
    *,
    net: str = "alex",
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
    rescale: bool = True,
) -> list[Tensor]:
    """Checked inputs through :meth:`LPIPSNetwork.layer_distances` on the inputs' device: ``[(B, 1, h_l, w_l)]``."""
    spec = net_spec(net)
    p, t = _inputs(preds, target, spec)
    model = load_lpips(spec.name, weights_path, linear_weights_path, device=p.device)
    return model.layer_distances(p, t, rescale=rescale)


def map_from_layers(layers: Sequence[Tensor], size: tuple[int, int]) -> Tensor:
    """The spatial LPIPS map ``(B, H, W)``: each layer's distance upsampled bilinearly to ``size`` and summed."""
    n, device = layers[0].shape[0], layers[0].device
    out = torch.zeros((n, *size), device=device)
    for d in layers:
        out = out + torch.nn.functional.interpolate(d, size=size, mode="bilinear", align_corners=False)[:, 0]
    return out


def score_from_layers(layers: Sequence[Tensor]) -> Tensor:
    """LPIPS per image ``(B,)``: the sum over layers of each distance map's spatial mean."""
    n, device = layers[0].shape[0], layers[0].device
    out = torch.zeros(n, device=device)
    for d in layers:
        out = out + d.mean(dim=(1, 2, 3))
    return out


def lpips_map(
    preds: Tensor,
    target: Tensor,
    *,
    net: str = "alex",
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
) -> Tensor:
    """Spatial LPIPS: ``lpips.LPIPS(net=net, spatial=True)(2 preds - 1, 2 target - 1)`` per pixel.

    Each layer's distance map is upsampled bilinearly (``align_corners=False``) to the image size and the maps are
    summed. Its spatial mean equals :func:`lpips` exactly when every layer's size divides the image size (bilinear
    upsampling by an integer factor keeps the mean); otherwise the border pixels weigh slightly differently and the
    two differ a little (below 0.1 % in our measurements, 64 to 600 pixels). Differentiable with respect to the images.

    Args:
        preds: renders ``(B, 3, H, W)`` or ``(3, H, W)``, float in [0, 1] or uint8 (scaled to [-1, 1] inside).
        target: ground truth of the same shape.
        net, weights_path, linear_weights_path: see :func:`load_lpips`.

    Returns:
        ``(B, H, W)`` float32, non-negative, 0 where the images agree (``(0, H, W)`` for an empty batch).

    Raises:
        ValueError: bad images, different shapes, a side below the network's minimum (31 for ``alex``, 16 for
            ``vgg``, 17 for ``squeeze``), an unknown ``net`` or a checkpoint that does not match.
        scenemetrics.hub.WeightsNotFoundError: no weights found (offline or the download failed).
    """
    layers = layer_distances(preds, target, net=net, weights_path=weights_path, linear_weights_path=linear_weights_path)
    size = (int(preds.shape[-2]), int(preds.shape[-1]))
    return map_from_layers(layers, size)


def lpips(
    preds: Tensor,
    target: Tensor,
    *,
    net: str = "alex",
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
) -> Tensor:
    """LPIPS per image: ``lpips.LPIPS(net=net)(2 preds - 1, 2 target - 1)``, the sum over layers of the mean distance.

    This is the LPIPS of the ``lpips`` package and of torchmetrics' ``LearnedPerceptualImagePatchSimilarity(
    normalize=True)`` (which normalises features with ``sqrt(||f||^2 + 1e-8)`` instead of ``||f|| + 1e-10``: the same
    up to rounding unless a feature vector is almost zero), and what NerfBaselines reports as ``lpips`` (``net="alex"``)
    and ``lpips_vgg`` (``net="vgg"``, its Blender protocol).

    Returns:
        ``(B,)`` float32.

    Raises:
        ValueError / scenemetrics.hub.WeightsNotFoundError: as :func:`lpips_map`.
    """
    layers = layer_distances(preds, target, net=net, weights_path=weights_path, linear_weights_path=linear_weights_path)
    return score_from_layers(layers)


def lpips_3dgs(
    preds: Tensor,
    target: Tensor,
    *,
    weights_path: str | os.PathLike | None = None,
    linear_weights_path: str | os.PathLike | None = None,
) -> Tensor:
    """LPIPS per image as the original 3D Gaussian Splatting ``metrics.py`` reports it.

    3DGS calls its ``lpipsPyTorch`` copy with ``net_type="vgg"`` on images read by ``to_tensor``, i.e. in [0, 1], and
    that copy applies the scaling layer to its input directly, with no ``2 x - 1``: the [0, 1] images are treated as
    if they were [-1, 1] images. Everything else is LPIPS-VGG v0.1 (same slices, ``f / (||f|| + 1e-10)``, the v0.1
    linear layers, sum over layers of the spatial means). The value differs from :func:`lpips` with
    ``net="vgg"``, usually lower; compare it only with tables made by 3DGS's ``metrics.py``.

    Args:
        preds, target: as :func:`lpips`; at least 16 x 16.
        weights_path, linear_weights_path: the VGG16 backbone and its linear layers (see :func:`load_lpips`).

    Returns:
        ``(B,)`` float32.
    """
    layers = layer_distances(
        preds, target, net="vgg", weights_path=weights_path, linear_weights_path=linear_weights_path, rescale=False
    )
    return score_from_layers(layers)
