"""The FID InceptionV3 (torchmetrics' ``NoTrainInceptionV3``, built on torch-fidelity's port of the TensorFlow graph)
with its weights found, verified and read safely through :mod:`scenemetrics.hub`.

torchmetrics' FID and KID embed images with ``torchmetrics.image.fid.NoTrainInceptionV3``, a thin subclass of
torch-fidelity's ``FeatureExtractorInceptionV3``. torch-fidelity downloads its weights with torch.hub and reads them
(and any ``feature_extractor_weights_path`` file) with ``torch.load(..., weights_only=False)``, the unpickler that can
run code hidden in a file. scenemetrics never lets it read a file: the checkpoint is resolved by the hub (cache, then
torch's own checkpoint cache where torchmetrics / torch-fidelity leave it, then a download from torch-fidelity's
release, verified against the sha256 prefix in its name), read with ``weights_only=True``, checked against the
network's key layout, and handed to torch-fidelity as an in-memory buffer that scenemetrics has just written itself.

The features are the 2048-d pool3 activations of FID. Images go in as float in [0, 1]; they are quantised to uint8 by
rounding (torchmetrics' ``normalize=True`` truncates with ``(x * 255).byte()``, which turns some exact ``k / 255``
floats into ``k - 1``), then torch-fidelity resizes them to 299 x 299 (bilinear; ``antialias=True`` is torchmetrics'
default, ``False`` torch-fidelity's TensorFlow-1-compatible resize of the original FID) and maps them to [-1, 1].

Example:
    >>> import os, tempfile
    >>> from scenemetrics.baselines import random_inception_checkpoint
    >>> path = random_inception_checkpoint(os.path.join(tempfile.mkdtemp(), "inception.pth"))  # doctest: +SKIP
    >>> net = load_inception(path)  # doctest: +SKIP
    >>> net(torch.rand(2, 3, 64, 64)).shape  # doctest: +SKIP
    torch.Size([2, 2048])
"""

from __future__ import annotations

import functools
import importlib.util
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from scenemetrics import hub

__all__ = [
    "INCEPTION_DIM",
    "INCEPTION_KEY",
    "InceptionFeatures",
    "inception_layout",
    "load_inception",
    "resolve_inception",
]

INCEPTION_KEY = "baselines/inception_v3_fid"
"""Key of the FID InceptionV3 checkpoint in :data:`scenemetrics.hub.CHECKPOINTS`."""

INCEPTION_DIM = 2048
"""Size of the pool3 features FID and KID compare."""

_NUM_CLASSES = 1008  # the TensorFlow graph's classifier (1000 ImageNet classes + 8 unused)


def inception_layout() -> dict[str, torch.Size]:
    """Key -> shape of torch-fidelity's InceptionV3 state dict (torchvision's ``Inception3`` names without the
    auxiliary classifier, and the TensorFlow graph's 1008-class ``fc``).

    Example:
        >>> layout = inception_layout()
        >>> tuple(layout["fc.weight"]), len(layout)
        ((1008, 2048), 566)
    """
    import torchvision

    with torch.device("meta"):
        net = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    layout = {k: v.shape for k, v in net.state_dict().items()}
    layout["fc.weight"] = torch.Size((_NUM_CLASSES, INCEPTION_DIM))
    layout["fc.bias"] = torch.Size((_NUM_CLASSES,))
    return layout


def _checked_state(state: Any, path: str) -> dict[str, Tensor]:
    """The checkpoint's tensors, after checking them against :func:`inception_layout` (a ``ValueError`` naming the
    file and the first mismatches otherwise). BatchNorm's ``num_batches_tracked`` counters may be absent."""
    if not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values()):
        raise ValueError(f"FID Inception checkpoint {path!r} must hold a state dict of tensors")
    layout = inception_layout()
    required = {k for k in layout if not k.endswith("num_batches_tracked")}
    missing = sorted(required - set(state))
    unexpected = sorted(set(state) - set(layout))
    wrong = sorted(k for k in set(state) & set(layout) if state[k].shape != layout[k])
    if missing or unexpected or wrong:
        raise ValueError(
            f"FID Inception checkpoint {path!r} is not torch-fidelity's InceptionV3 layout: missing keys "
            f"{missing[:3]}, unexpected keys {unexpected[:3]}, wrong shapes {wrong[:3]} (expected the file "
            f"{hub.CHECKPOINTS[INCEPTION_KEY].filename} from {hub.CHECKPOINTS[INCEPTION_KEY].url})"
        )
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}


def resolve_inception(weights_path: str | os.PathLike | None = None) -> Path:
    """The FID Inception checkpoint file: ``weights_path`` (a file, or a folder holding
    ``weights-inception-2015-12-05-6726825d.pth``), else the scenemetrics cache, torch's checkpoint cache, then a
    verified download (:func:`scenemetrics.hub.resolve_weights`).

    Raises:
        scenemetrics.hub.WeightsNotFoundError: nothing found (offline or download failed); names the file, the
            paths searched and the URL.
        scenemetrics.hub.ChecksumError: a cached file does not carry the sha256 prefix of its name.
    """
    return hub.resolve_weights(INCEPTION_KEY, weights_path)


@functools.lru_cache(maxsize=4)
def _network(path: str, mtime_ns: int, antialias: bool, device: str) -> nn.Module:
    state = _checked_state(hub.load_torch_checkpoint(path), path)  # a bad file is named before a missing package
    if importlib.util.find_spec("torch_fidelity") is None:
        raise ImportError(
            "the FID Inception (torchmetrics' NoTrainInceptionV3) needs torch-fidelity: "
            'pip install "scenemetrics[baselines]"'
        )
    from torchmetrics.image.fid import NoTrainInceptionV3

    # torch-fidelity reads its weights with torch.load(weights_only=False): give it only bytes written here, from
    # tensors that were read with weights_only=True, never the file itself
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    net = NoTrainInceptionV3(
        name="inception-v3-compat",
        features_list=[str(INCEPTION_DIM)],
        feature_extractor_weights_path=buffer,  # type: ignore[arg-type]
        antialias=antialias,
    )
    return net.requires_grad_(False).eval().to(device)


class InceptionFeatures(nn.Module):
    """FID's 2048-d InceptionV3 pool3 features of float images in [0, 1] (see the module for the preprocessing).

    Args:
        network: a torchmetrics ``NoTrainInceptionV3`` (uint8 images in, ``(B, 2048)`` out), as :func:`load_inception`
            builds it.

    Example:
        >>> net = load_inception(path)  # doctest: +SKIP
        >>> net(torch.rand(1, 3, 32, 32)).shape  # doctest: +SKIP
        torch.Size([1, 2048])
    """

    dim = INCEPTION_DIM

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, images: Tensor) -> Tensor:
        """``(B, 3, H, W)`` float in [0, 1] -> ``(B, 2048)`` float32 features."""
        quantised = (images.float() * 255.0).round_().clamp_(0, 255).to(torch.uint8)
        return self.network(quantised).float()


def load_inception(
    weights_path: str | os.PathLike | None = None, *, antialias: bool = True, device: str | torch.device = "cpu"
) -> InceptionFeatures:
    """The frozen FID Inception, loaded once per (file, ``antialias``, device) and shared.

    Args:
        weights_path: see :func:`resolve_inception`.
        antialias: resize to 299 px with antialiasing (torchmetrics' default) or with torch-fidelity's
            TensorFlow-1-compatible bilinear resize (the original FID).
        device: where the network runs.

    Raises:
        ImportError: torch-fidelity is not installed (the ``[baselines]`` extra).
        ValueError: the file is not torch-fidelity's InceptionV3 layout, or cannot be read safely.
        scenemetrics.hub.WeightsNotFoundError: no file (see :func:`resolve_inception`).
    """
    path = resolve_inception(weights_path)
    device = str(torch.device(device))
    return InceptionFeatures(_network(os.fspath(path), path.stat().st_mtime_ns, bool(antialias), device))
