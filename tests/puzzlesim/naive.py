"""Independent, deliberately naive PuzzleSim reference for the tests (spec sec. 1), written from the spec alone.

It imports nothing from ``scenemetrics``: torchvision's model definitions, the ImageNet normalisation, ``F.normalize``,
the full similarity matrix, ``max`` (or a materialised softmax for the soft loss) and bilinear ``align_corners=True``
upsampling, in float64 by default. Memory is O(M x K): only for small images.

Also holds the documented deterministic weight recipe (spec sec. 10: numpy ``default_rng(seed)``, He-normal weights,
biases with std 0.01, zero classifier), used by the frozen-fixture script and to check
``scenemetrics.puzzlesim.random_checkpoint`` against its documentation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

# LPIPS slices of torchvision's `features` (spec sec. 2 table), written out independently of the implementation.
SLICES = {
    "squeezenet1_1": ((0, 2), (2, 5), (5, 8), (8, 10), (10, 11), (11, 12), (12, 13)),
    "alexnet": ((0, 2), (2, 5), (5, 8), (8, 10), (10, 12)),
    "vgg16": ((0, 4), (4, 9), (9, 16), (16, 23), (23, 30)),
}
TORCHVISION_FILES = {
    "squeezenet1_1": "squeezenet1_1-b8a52dc0.pth",
    "alexnet": "alexnet-owt-7be5be79.pth",
    "vgg16": "vgg16-397923af.pth",
}
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def he_normal_state_dict(name: str, seed: int = 0, include_classifier: bool = True) -> dict[str, Tensor]:
    """The spec's deterministic checkpoint recipe, in torchvision's key layout and key order."""
    import torchvision

    with torch.device("meta"):  # shapes and key order only; skips torchvision's slow initialisation
        model = getattr(torchvision.models, name)(weights=None)
    rng = np.random.default_rng(seed)
    out: dict[str, Tensor] = {}
    for key, value in model.state_dict().items():
        if key.startswith("features."):
            if key.endswith("weight"):
                std = np.float32(math.sqrt(2.0 / math.prod(value.shape[1:])))
                arr = rng.standard_normal(value.shape, dtype=np.float32) * std
            else:
                arr = rng.standard_normal(value.shape, dtype=np.float32) * np.float32(0.01)
            out[key] = torch.from_numpy(arr)
        elif include_classifier:
            out[key] = torch.zeros(value.shape, dtype=value.dtype)
    return out


def write_checkpoint(name: str, path: str | Path, seed: int = 0, include_classifier: bool = True) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(he_normal_state_dict(name, seed, include_classifier), path)
    return path


def smooth_images(n: int, h: int, w: int, seed: int = 0, cells: int = 6) -> Tensor:
    """``(n, 3, h, w)`` float32 images in [0, 1]: smooth random colour fields plus a little fine noise."""
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand(n, 3, cells, cells, generator=g, dtype=torch.float64)
    up = F.interpolate(coarse, size=(h, w), mode="bicubic", align_corners=True)
    img = 0.85 * up + 0.15 * torch.rand(n, 3, h, w, generator=g, dtype=torch.float64)
    return img.clamp(0, 1).float()


class NaivePuzzleSim:
    """Float64 PuzzleSim with a materialised similarity matrix; autograd flows to the test image."""

    def __init__(self, name: str, checkpoint: str | Path, dtype: torch.dtype = torch.float64) -> None:
        import torchvision

        self.name = name
        self.dtype = dtype
        with torch.device("meta"):
            model = getattr(torchvision.models, name)(weights=None)
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        feats = {k[len("features.") :]: v for k, v in state.items() if k.startswith("features.")}
        model.features.load_state_dict(feats, strict=True, assign=True)
        self.features = model.features.to(dtype).eval().requires_grad_(False)
        self.mean = torch.tensor(MEAN, dtype=dtype).view(1, 3, 1, 1)
        self.std = torch.tensor(STD, dtype=dtype).view(1, 3, 1, 1)

    def layer_features(self, images01: Tensor, layers: Sequence[int]) -> dict[int, Tensor]:
        """Raw post-ReLU features ``(B, C, h, w)`` of images in [0, 1]."""
        x = (images01.to(self.dtype) - self.mean) / self.std
        out: dict[int, Tensor] = {}
        for i, (a, b) in enumerate(SLICES[self.name]):
            if i > max(layers):
                break
            for j in range(a, b):
                x = self.features[j](x)
            if i in layers:
                out[i] = x
        return out

    @staticmethod
    def unit_rows(f: Tensor) -> Tensor:
        """``(B, C, h, w)`` -> ``(B*h*w, C)`` unit rows."""
        return F.normalize(f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]), p=2, dim=1, eps=1e-12)

    def reference_rows(self, references: Sequence[Tensor], layers: Sequence[int]) -> dict[int, Tensor]:
        """Unit vectors of all references (each ``(3, h, w)`` or ``(n, 3, h, w)``, any sizes), per layer."""
        rows: dict[int, list[Tensor]] = {layer: [] for layer in layers}
        with torch.no_grad():
            for ref in references:
                ref = ref if ref.ndim == 4 else ref.unsqueeze(0)
                for layer, f in self.layer_features(ref, layers).items():
                    rows[layer].append(self.unit_rows(f))
        return {layer: torch.cat(v) for layer, v in rows.items()}

    def layer_maps(
        self, image: Tensor, references: Sequence[Tensor], layers: Sequence[int], temperature: float | None = None
    ) -> dict[int, Tensor]:
        """Per-layer maps ``(h_l, w_l)`` of one ``(3, H, W)`` image: max (or Gibbs mean at ``temperature``)."""
        refs = self.reference_rows(references, layers)
        feats = self.layer_features(image.unsqueeze(0), layers)
        out = {}
        for layer in layers:
            f = feats[layer]
            sim = self.unit_rows(f) @ refs[layer].T  # (M, K), materialised
            if temperature is None:
                vals = sim.max(dim=1).values
            else:
                vals = (torch.softmax(sim / temperature, dim=1) * sim).sum(dim=1)
            out[layer] = vals.view(f.shape[2], f.shape[3])
        return out

    def similarity_map(
        self,
        image: Tensor,
        references: Sequence[Tensor],
        layers: Sequence[int] = (2, 3, 4),
        weights: Sequence[float] | None = (0.67, 0.2, 0.13),
        temperature: float | None = None,
        out_size: tuple[int, int] | None = None,
    ) -> Tensor:
        """Map ``(H, W)`` of one image (Eq. 3): weighted sum of per-layer maps upsampled with align_corners=True
        to the image's size (or ``out_size``)."""
        h, w = image.shape[-2:] if out_size is None else out_size
        weights = [1.0 / len(layers)] * len(layers) if weights is None else list(weights)
        maps = self.layer_maps(image, references, layers, temperature)
        total = torch.zeros(h, w, dtype=self.dtype)
        for layer, wgt in zip(layers, weights, strict=True):
            up = F.interpolate(maps[layer][None, None], size=(h, w), mode="bilinear", align_corners=True)[0, 0]
            total = total + wgt * up
        return total
