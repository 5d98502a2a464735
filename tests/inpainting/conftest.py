"""Fixtures of the inpainting tests: random-weight SqueezeNet, smooth scenes with planted noise squares, and a
deterministic hand-made feature extractor for the loop's custom-backbone path (spec 2.1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.puzzlesim import random_checkpoint


class LocalStats(nn.Module):
    """Deterministic features at stride 4: local mean colour and 4 x local gradient energy (all non-negative).

    Smooth content gives vectors dominated by colour; a noise square adds a large energy component, so its cosine to
    every smooth reference vector is low: PuzzleSim with these features localises high-frequency artifacts.
    """

    def forward(self, images: Tensor, layers: Sequence[int]) -> dict[int, Tensor]:
        gx = (images[..., :, 1:] - images[..., :, :-1]).abs().sum(1, keepdim=True)
        gy = (images[..., 1:, :] - images[..., :-1, :]).abs().sum(1, keepdim=True)
        energy = F.pad(gx, (0, 1)) + F.pad(gy, (0, 0, 0, 1))
        feats = torch.cat([F.avg_pool2d(images, 4), 4 * F.avg_pool2d(energy, 4)], 1)
        return {layer: feats for layer in layers}


def _smooth(g: torch.Generator, h: int, w: int) -> Tensor:
    base = torch.rand(1, 3, 3, 3, generator=g)
    up = F.interpolate(base, size=(h, w), mode="bicubic", align_corners=True)[0]
    return (0.15 + 0.7 * (up - up.amin()) / (up.amax() - up.amin())).clamp(0, 1)


def make_planted(
    seed: int = 0, size: int = 64, box: tuple[int, int, int, int] = (24, 40, 28, 44)
) -> tuple[list[Tensor], Tensor, Tensor, Tensor]:
    """Smooth references (the four overlapping corner crops of a smooth canvas) and a central crop of the canvas with
    a uniform-noise square planted in it.

    Returns ``(references, image, artifact_mask (H, W) bool, clean_image)``. Every clean piece of the image lies in
    some reference, at offsets that are multiples of 8 (feature cells line up), the noise does not.
    """
    g = torch.Generator().manual_seed(seed)
    h, w = size + size // 2, size + size * 3 // 4
    canvas = _smooth(g, h, w)
    refs = [canvas[:, y : y + size, x : x + size].clone() for y in (0, h - size) for x in (0, w - size)]
    y, x = size // 4, size * 3 // 8
    clean = canvas[:, y : y + size, x : x + size].clone()
    y0, y1, x0, x1 = box
    art = torch.zeros(size, size, dtype=torch.bool)
    art[y0:y1, x0:x1] = True
    image = clean.clone()
    image[:, art] = torch.rand(3, int(art.sum()), generator=g)
    return refs, image, art, clean


def naive_map(module: nn.Module, image: Tensor, refs: Sequence[Tensor], layers: Sequence, weights: Sequence[float]):
    """PuzzleSim Eq. 1 + 3 by definition in float64: max cosine over all reference vectors, weighted, upsampled."""
    with torch.no_grad():
        fi = module(image[None].double(), layers)
        fr = [module(r[None].double(), layers) for r in refs]
    h, w = image.shape[-2:]
    total = torch.zeros(h, w, dtype=torch.float64)
    for layer, wgt in zip(layers, weights, strict=True):
        q = fi[layer][0]
        c, fh, fw = q.shape
        qv = F.normalize(q.reshape(c, -1).T, dim=1, eps=1e-12)
        rv = F.normalize(torch.cat([f[layer][0].reshape(c, -1).T for f in fr]), dim=1, eps=1e-12)
        s = (qv @ rv.T).amax(dim=1).reshape(1, 1, fh, fw)
        total += wgt * F.interpolate(s, size=(h, w), mode="bilinear", align_corners=True)[0, 0]
    return total


class LamaStandIn(torch.nn.Module):
    """LaMa's call signature ``forward(image, mask)``; checks the export's input conventions.

    mode 0: fill the hole with grey; 1: return the padded image flipped (exposes the padding); 2: return the mask
    (exposes the binarisation); 3: out-of-range output (exposes the clamp).
    """

    def __init__(self, mode: int, batch_one: bool = True) -> None:
        super().__init__()
        self.mode = mode
        self.batch_one = batch_one

    def forward(self, image: Tensor, mask: Tensor) -> Tensor:
        assert image.shape[2] % 8 == 0 and image.shape[3] % 8 == 0, "H and W must be multiples of 8"
        assert mask.shape[1] == 1 and image.shape[2:] == mask.shape[2:], "mask must be (B, 1, H, W)"
        assert bool(((mask == 0) | (mask == 1)).all()), "mask must be binary"
        if self.batch_one:
            assert image.shape[0] == 1, "the public wrappers call with batch 1"
        if self.mode == 1:
            return torch.flip(image, [2, 3])
        if self.mode == 2:
            return mask.expand(-1, 3, -1, -1)
        if self.mode == 3:
            return image * 4.0 - 1.0
        return image * (1.0 - mask) + 0.5 * mask


def script_lama(folder, mode: int, batch_one: bool = True, name: str = "big-lama.pt"):
    path = folder / name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        torch.jit.script(LamaStandIn(mode, batch_one)).save(str(path))
    return path


@pytest.fixture(scope="session")
def squeeze_weights(tmp_path_factory: pytest.TempPathFactory):
    return random_checkpoint("squeezenet1_1", tmp_path_factory.mktemp("inpainting_weights") / "sq.pth")


@pytest.fixture(scope="session")
def alex_weights(tmp_path_factory: pytest.TempPathFactory):
    # features only: the loader needs no classifier, and AlexNet's is 58 M zeros
    path = tmp_path_factory.mktemp("inpainting_weights") / "alex.pth"
    return random_checkpoint("alexnet", path, include_classifier=False)


@pytest.fixture()
def planted() -> Callable[..., tuple[list[Tensor], Tensor, Tensor, Tensor]]:
    return make_planted


@pytest.fixture()
def local_stats() -> LocalStats:
    return LocalStats()


@pytest.fixture()
def naive() -> Callable[..., Tensor]:
    return naive_map


@pytest.fixture()
def lama_script() -> Callable[..., Path]:
    return script_lama
