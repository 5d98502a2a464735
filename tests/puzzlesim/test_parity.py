"""Parity with the authors' ``puzzle-sim`` 1.0.1 (spec sec. 10.1), plus a frozen fixture of two of its outputs.

The authors' package is compared through its naive path (``mem_save=False``: one einsum, correct for any sizes) with
one call per test image; its default path only where test and reference sizes are equal (spec sec. 8). Both load the
same random-weight file: ours through ``weights_path``, theirs from torchvision's cache name in this test's
``torch.hub`` dir.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSimMemory, puzzle_similarity_map

from .naive import smooth_images, write_checkpoint

TOL = 1e-4  # spec sec. 7 / 12
AUTHOR_NAMES = {"squeezenet1_1": "squeeze", "alexnet": "alex", "vgg16": "vgg"}
FIXTURE = Path(__file__).parent / "fixtures" / "puzzle_sim_parity.npz"


@pytest.fixture
def authors(checkpoint, torchvision_cache):
    """``make(references, backbone)`` -> the authors' ``PuzzleSim`` on our random weights (same file as ours)."""
    puzzle_sim = pytest.importorskip("puzzle_sim")

    def make(references: torch.Tensor, backbone: str = "squeezenet1_1"):
        torchvision_cache(backbone, checkpoint(backbone, classifier=True))
        return puzzle_sim.PuzzleSim(references, net_type=AUTHOR_NAMES[backbone])

    return make


def theirs(metric, image: torch.Tensor, **kwargs) -> torch.Tensor:
    """Their naive path, one image per call."""
    kwargs.setdefault("mem_save", False)
    with torch.no_grad():
        return metric(image, **kwargs)


def ours(images, references, backbone, checkpoint, **kwargs) -> torch.Tensor:
    return puzzle_similarity_map(images, references, backbone=backbone, weights_path=checkpoint(backbone), **kwargs)


REFS = smooth_images(3, 48, 64, seed=1)


def test_default_squeezenet_equal_sizes_both_paths(authors, checkpoint):
    image = smooth_images(1, 48, 64, seed=2)[0]
    metric = authors(REFS)
    got = ours(image, REFS, "squeezenet1_1", checkpoint)
    assert got.shape == (1, 48, 64) and got.dtype == torch.float32
    torch.testing.assert_close(got[0], theirs(metric, image), atol=TOL, rtol=0)
    # equal sizes: their default (mem_save=True) path is correct too
    torch.testing.assert_close(got[0], theirs(metric, image, mem_save=True), atol=TOL, rtol=0)


@pytest.mark.parametrize("size", [(64, 80), (40, 36), (56, 96), (96, 40)], ids=["larger", "smaller", "wide", "tall"])
def test_test_size_differs_from_reference_size(authors, checkpoint, size):
    image = smooth_images(1, *size, seed=3)[0]
    got = ours(image, REFS, "squeezenet1_1", checkpoint)
    assert got.shape == (1, *size)
    torch.testing.assert_close(got[0], theirs(authors(REFS), image), atol=TOL, rtol=0)


def test_many_references_and_a_batch_of_two(authors, checkpoint):
    refs = smooth_images(6, 40, 48, seed=4)
    images = smooth_images(2, 48, 56, seed=5)
    metric = authors(refs)
    got = ours(images, refs, "squeezenet1_1", checkpoint)
    assert got.shape == (2, 48, 56)
    for i in range(2):
        torch.testing.assert_close(got[i], theirs(metric, images[i]), atol=TOL, rtol=0)


@pytest.mark.parametrize(
    ("layers", "weights"),
    [((1, 3, 5), (0.5, 0.3, 0.2)), ((0, 2), (0.9, 0.4)), ((6,), (1.0,)), ((4, 2), (0.25, 0.75))],
)
def test_non_default_layers_and_weights(authors, checkpoint, layers, weights):
    image = smooth_images(1, 56, 72, seed=6)[0]
    got = ours(image, REFS, "squeezenet1_1", checkpoint, layers=layers, layer_weights=weights)
    expected = theirs(authors(REFS), image, layers=layers, weights=weights)
    torch.testing.assert_close(got[0], expected, atol=TOL, rtol=0)


def test_equal_weights_none_is_their_mean_reduction(authors, checkpoint):
    image = smooth_images(1, 40, 56, seed=7)[0]
    got = ours(image, REFS, "squeezenet1_1", checkpoint, layer_weights=None)
    expected = theirs(authors(REFS), image, weights=None, reduction="mean")
    torch.testing.assert_close(got[0], expected, atol=TOL, rtol=0)


def test_uint8_inputs(authors, checkpoint):
    g = torch.Generator().manual_seed(8)
    refs8 = (REFS * 255).round().to(torch.uint8)
    image8 = torch.randint(0, 256, (3, 48, 48), generator=g, dtype=torch.uint8)
    got = ours(image8, refs8, "squeezenet1_1", checkpoint)
    expected = theirs(authors(refs8.float() / 255), image8.float() / 255)
    torch.testing.assert_close(got[0], expected, atol=TOL, rtol=0)


def test_test_image_is_a_reference(authors, checkpoint):
    metric = authors(REFS)
    got = ours(REFS[1], REFS, "squeezenet1_1", checkpoint)
    expected = theirs(metric, REFS[1])
    torch.testing.assert_close(got[0], expected, atol=TOL, rtol=0)
    torch.testing.assert_close(got[0], torch.ones(48, 64), atol=1e-5, rtol=0)


@pytest.mark.parametrize(("layers", "weights"), [((2, 3, 4), (0.67, 0.2, 0.13)), ((0, 1, 3), (0.2, 0.5, 0.3))])
def test_alexnet(authors, checkpoint, layers, weights):
    refs = smooth_images(3, 64, 64, seed=9)
    images = smooth_images(2, 72, 96, seed=10)
    metric = authors(refs, "alexnet")
    got = ours(images, refs, "alexnet", checkpoint, layers=layers, layer_weights=weights)
    for i in range(2):
        torch.testing.assert_close(got[i], theirs(metric, images[i], layers=layers, weights=weights), atol=TOL, rtol=0)
    # equal sizes: their default path too
    torch.testing.assert_close(
        ours(refs[0], refs[1:], "alexnet", checkpoint, layers=layers, layer_weights=weights)[0],
        theirs(authors(refs[1:], "alexnet"), refs[0], layers=layers, weights=weights, mem_save=True),
        atol=TOL,
        rtol=0,
    )


@pytest.mark.slow
def test_vgg16_small_images(authors, checkpoint):
    """VGG16 (a ~500 MB checkpoint with the classifier): parity, a reference scores ones, determinism."""
    refs = smooth_images(2, 32, 40, seed=11)
    image = smooth_images(1, 40, 32, seed=12)[0]
    metric = authors(refs, "vgg16")
    memory = PuzzleSimMemory(
        refs, backbone="vgg", layers=(0, 1, 2, 3, 4), weights_path=checkpoint("vgg16", classifier=True)
    )
    for layers, weights in [((2, 3, 4), (0.67, 0.2, 0.13)), ((0, 1, 3), (0.2, 0.5, 0.3))]:
        got = puzzle_similarity_map(
            image,
            memory,
            backbone="vgg16",
            layers=layers,
            layer_weights=weights,
            weights_path=checkpoint("vgg16", classifier=True),
        )
        torch.testing.assert_close(got[0], theirs(metric, image, layers=layers, weights=weights), atol=TOL, rtol=0)
        again = memory.similarity_map(image, layers=layers, layer_weights=weights)
        assert torch.equal(got, again)
        ones = memory.similarity_map(refs, layers=layers, layer_weights=weights)
        torch.testing.assert_close(ones, torch.ones(2, 32, 40), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------------------------- frozen fixture
def _fixture_cases() -> list[str]:
    with np.load(FIXTURE) as data:
        return [str(c) for c in data["cases"]]


@pytest.mark.parametrize("case", _fixture_cases())
def test_frozen_puzzle_sim_outputs(case, tmp_path):
    """Outputs of ``puzzle-sim`` 1.0.1 frozen by ``fixtures/make_parity_fixture.py`` (no puzzle-sim needed)."""
    with np.load(FIXTURE) as data:
        backbone = str(data[f"{case}/backbone"])
        layers = tuple(int(v) for v in data[f"{case}/layers"])
        weights = tuple(float(v) for v in data[f"{case}/layer_weights"])
        refs = torch.from_numpy(data[f"{case}/references"])
        image = torch.from_numpy(data[f"{case}/image"])
        expected = torch.from_numpy(data[f"{case}/expected"])
        seed = int(data["weight_seed"])
    ckpt = write_checkpoint(backbone, tmp_path / "w.pth", seed=seed, include_classifier=False)
    got = puzzle_similarity_map(image, refs, backbone=backbone, layers=layers, layer_weights=weights, weights_path=ckpt)
    assert got.shape == (1, *expected.shape)
    torch.testing.assert_close(got[0], expected, atol=TOL, rtol=0)
