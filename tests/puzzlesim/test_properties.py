"""Properties of the PuzzleSim map (spec sec. 10.3, 10.4, 10.6): translation, permutation, union, sizes, batches,
minimum sides, range, sign; checked against the naive float64 reference where a value is expected."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.puzzlesim import BACKBONES, PuzzleSimMemory, puzzle_similarity, puzzle_similarity_map

from .naive import SLICES, NaivePuzzleSim, smooth_images

# ------------------------------------------------------------------------------------------------ 10.3


def test_translation_by_a_multiple_of_16_pixels(squeeze_ckpt):
    reference = smooth_images(1, 256, 256, seed=30, cells=10)
    crop = reference[:, :, 32:192, 48:208]  # 160 x 160 at (32, 48): offsets are multiples of the largest stride
    maps = puzzle_similarity_map(crop, reference, weights_path=squeeze_ckpt)
    interior = maps[0, 64:96, 64:96]  # >= 64 px from the crop border
    assert float(interior.min()) >= 1 - 1e-5
    assert float(interior.max()) <= 1 + 1e-6
    # near the border the zero padding of the crop changes features: the map is not all ones there
    assert float(maps.min()) < 0.99


def test_permutation_and_splitting_of_references(squeeze_ckpt):
    a = smooth_images(2, 48, 64, seed=31)
    b = smooth_images(3, 56, 40, seed=32)
    c = smooth_images(1, 72, 72, seed=33)
    image = smooth_images(1, 60, 52, seed=34)
    base = puzzle_similarity_map(image, [a, b, c], weights_path=squeeze_ckpt)
    variants = [
        [c, b, a],
        [b[2], a[1], c[0], b[0], a[0], b[1]],  # single (3, h, w) images, shuffled
        [torch.cat([a[1:], a[:1]]), b.flip(0), c],
        [a[:1], b[1:], a[1:], c, b[:1]],
    ]
    for refs in variants:
        torch.testing.assert_close(
            puzzle_similarity_map(image, refs, weights_path=squeeze_ckpt), base, atol=1e-6, rtol=0
        )
    # and the same when all references have one size: a batch tensor in two orders
    same = smooth_images(5, 48, 48, seed=35)
    perm = torch.tensor([3, 0, 4, 2, 1])
    torch.testing.assert_close(
        puzzle_similarity_map(image, same, weights_path=squeeze_ckpt),
        puzzle_similarity_map(image, same[perm], weights_path=squeeze_ckpt),
        atol=1e-6,
        rtol=0,
    )


def test_union_of_references_is_elementwise_max(squeeze_ckpt):
    g1 = smooth_images(2, 48, 64, seed=36)
    g2 = [smooth_images(1, 64, 48, seed=37)[0], smooth_images(2, 40, 40, seed=38)]
    images = smooth_images(2, 56, 56, seed=39)
    layers = (1, 2, 3, 4)
    union = PuzzleSimMemory([g1, *g2], layers=layers, weights_path=squeeze_ckpt)
    m1 = PuzzleSimMemory(g1, layers=layers, weights_path=squeeze_ckpt)
    m2 = PuzzleSimMemory(g2, layers=layers, weights_path=squeeze_ckpt)
    lu, l1, l2 = union.layer_maps(images), m1.layer_maps(images), m2.layer_maps(images)
    assert set(lu) == set(layers)
    for layer in layers:
        assert lu[layer].shape == l1[layer].shape
        torch.testing.assert_close(lu[layer], torch.maximum(l1[layer], l2[layer]), atol=1e-6, rtol=0)
    # memory.add() builds the same union incrementally
    m1.add(g2)
    assert m1.num_references == union.num_references == 5
    assert m1.reference_sizes == [(48, 64), (48, 64), (64, 48), (40, 40), (40, 40)]
    for layer, value in m1.layer_maps(images).items():
        torch.testing.assert_close(value, lu[layer], atol=1e-6, rtol=0)


# ------------------------------------------------------------------------------------------------ 10.4


@pytest.fixture(scope="module")
def mixed_refs():
    return [smooth_images(2, 48, 64, seed=40), smooth_images(1, 56, 40, seed=41)[0], smooth_images(1, 72, 72, seed=42)]


@pytest.mark.parametrize(
    "size", [(48, 64), (96, 112), (36, 40), (40, 100), (100, 36)], ids=["equal", "larger", "smaller", "wide", "tall"]
)
def test_any_sizes_match_the_naive_float64_reference(squeeze_ckpt, mixed_refs, size):
    naive = NaivePuzzleSim("squeezenet1_1", squeeze_ckpt)
    image = smooth_images(1, *size, seed=43)
    got = puzzle_similarity_map(image, mixed_refs, weights_path=squeeze_ckpt)
    assert got.shape == (1, *size) and got.dtype == torch.float32
    torch.testing.assert_close(got[0].double(), naive.similarity_map(image[0], mixed_refs), atol=1e-5, rtol=0)


def test_layer_maps_have_the_test_feature_size_and_naive_values(squeeze_ckpt, mixed_refs):
    naive = NaivePuzzleSim("squeezenet1_1", squeeze_ckpt)
    image = smooth_images(1, 416 // 4, 628 // 4, seed=44)  # 104 x 157
    memory = PuzzleSimMemory(mixed_refs, layers=(0, 2, 3, 4), weights_path=squeeze_ckpt)
    got = memory.layer_maps(image)
    expected = naive.layer_maps(image[0], mixed_refs, (0, 2, 3, 4))
    # conv0: floor((H - 3) / 2) + 1, each ceil-mode pool: ceil((H - 3) / 2) + 1
    assert got[0].shape == (1, 51, 78)
    assert got[2].shape == (1, 12, 19)
    assert got[3].shape == got[4].shape == (1, 6, 9)
    for layer, value in expected.items():
        torch.testing.assert_close(got[layer][0].double(), value, atol=1e-5, rtol=0)


def test_batch_equals_images_alone(squeeze_ckpt, mixed_refs):
    memory = PuzzleSimMemory(mixed_refs, weights_path=squeeze_ckpt)
    images = smooth_images(3, 52, 60, seed=45)
    batch = memory.similarity_map(images)
    assert batch.shape == (3, 52, 60)
    for i in range(3):
        torch.testing.assert_close(batch[i : i + 1], memory.similarity_map(images[i]), atol=1e-6, rtol=0)
    # images in a batch are not references for each other: a duplicate in the batch does not score ones
    dup = torch.stack([images[0], images[0]])
    assert float(memory.similarity_map(dup).min()) < 0.999


def test_empty_batch_returns_empty_maps(squeeze_ckpt, mixed_refs):
    out = puzzle_similarity_map(torch.zeros(0, 3, 40, 48), mixed_refs, weights_path=squeeze_ckpt)
    assert out.shape == (0, 40, 48) and out.dtype == torch.float32
    assert puzzle_similarity(torch.zeros(0, 3, 40, 48), mixed_refs, weights_path=squeeze_ckpt).shape == (0,)


def test_empty_batch_layer_maps_keep_the_layout(squeeze_ckpt, mixed_refs):
    """``layer_maps`` returns layer -> (B, h_l, w_l), also for B = 0: 40 x 48 -> 4 x 5 (layer 2), 2 x 2 (3, 4)."""
    memory = PuzzleSimMemory(mixed_refs, weights_path=squeeze_ckpt)
    shapes = {layer: tuple(v.shape) for layer, v in memory.layer_maps(torch.zeros(0, 3, 40, 48)).items()}
    assert shapes == {2: (0, 4, 5), 3: (0, 2, 2), 4: (0, 2, 2)}


MIN_SIDES = {"squeezenet1_1": (3, 5, 9, 17, 17, 17, 17), "alexnet": (7, 15, 31, 31, 31), "vgg16": (1, 2, 4, 8, 16)}


@pytest.mark.parametrize("backbone", ["squeezenet1_1", "alexnet", "vgg16"])
def test_minimum_sides_are_the_true_minimum(backbone, checkpoint):
    """The spec's table, checked on torchvision itself: the minimum side gives a non-empty map, one less does not."""
    naive = NaivePuzzleSim(backbone, checkpoint(backbone), dtype=torch.float32)
    assert BACKBONES[backbone].min_sides == MIN_SIDES[backbone]
    for layer, side in enumerate(MIN_SIDES[backbone]):
        f = naive.layer_features(torch.rand(1, 3, side, side), (layer,))[layer]
        assert f.shape[-2] >= 1 and f.shape[-1] >= 1
        if side > 1:
            try:
                small = naive.layer_features(torch.rand(1, 3, side - 1, side - 1), (layer,))[layer]
            except RuntimeError:
                continue
            assert small.numel() == 0


@pytest.mark.parametrize("backbone", ["squeezenet1_1", "alexnet", "vgg16"])
def test_minimum_sides_accepted_one_less_rejected(backbone, checkpoint):
    ckpt = checkpoint(backbone)
    n = len(SLICES[backbone])
    for layer, side in enumerate(MIN_SIDES[backbone]):
        layers = (0, layer) if layer else (0,)
        ok = smooth_images(2, side, side + 5, seed=layer)
        tall = smooth_images(1, side + 3, side, seed=layer)
        memory = PuzzleSimMemory(ok, backbone=backbone, layers=layers, weights_path=ckpt)
        maps = memory.similarity_map(ok, layer_weights=None)
        assert maps.shape == (2, side, side + 5)
        torch.testing.assert_close(maps, torch.ones_like(maps), atol=1e-5, rtol=0)
        assert memory.similarity_map(tall, layer_weights=None).shape == (1, side + 3, side)
        for bad in ((side - 1, side + 5), (side + 5, side - 1)):
            img = torch.rand(1, 3, *bad)
            with pytest.raises(ValueError, match=rf"`images`.*at least {side}x{side}"):
                memory.similarity_map(img, layer_weights=None)
            with pytest.raises(ValueError, match=rf"`references`.*at least {side}x{side}"):
                PuzzleSimMemory(img, backbone=backbone, layers=layers, weights_path=ckpt)
            with pytest.raises(ValueError, match=rf"`images`.*at least {side}x{side}"):
                puzzle_similarity_map(img, ok, backbone=backbone, layers=layers, layer_weights=None, weights_path=ckpt)
    # the deepest requested layer sets the minimum, whatever the order of `layers`
    deepest = MIN_SIDES[backbone][n - 1]
    img = torch.rand(1, 3, deepest - 1, deepest + 4)
    with pytest.raises(ValueError, match=rf"at least {deepest}x{deepest}"):
        puzzle_similarity_map(
            img, torch.rand(1, 3, 64, 64), backbone=backbone, layers=(n - 1, 0), layer_weights=None, weights_path=ckpt
        )


# ------------------------------------------------------------------------------------------------ 10.6


def test_range_with_default_weights(squeeze_ckpt):
    g = torch.Generator().manual_seed(46)
    refs = [smooth_images(2, 48, 48, seed=47), torch.randint(0, 256, (3, 40, 56), generator=g, dtype=torch.uint8)]
    images = torch.cat(
        [
            smooth_images(2, 48, 48, seed=48),
            torch.rand(1, 3, 48, 48, generator=g),
            torch.zeros(1, 3, 48, 48),
            torch.ones(1, 3, 48, 48),
        ]
    )
    maps = puzzle_similarity_map(images, refs, weights_path=squeeze_ckpt)
    assert bool(torch.isfinite(maps).all())
    assert float(maps.min()) >= 0.0
    assert float(maps.max()) <= 1 + 1e-6


def test_weights_are_applied_as_given(squeeze_ckpt, mixed_refs):
    """No renormalisation and no clipping: a reference scores sum(weights) everywhere."""
    reference = mixed_refs[0][:1]
    for weights, total in [((1.0, 1.0, 1.0), 3.0), ((0.5, 0.0, 0.0), 0.5), ((0.0, 0.2, 0.1), 0.3)]:
        maps = puzzle_similarity_map(reference, mixed_refs, weights_path=squeeze_ckpt, layer_weights=weights)
        torch.testing.assert_close(maps, torch.full_like(maps, total), atol=1e-5, rtol=0)
    image = smooth_images(1, 44, 52, seed=51)
    one = puzzle_similarity_map(image, mixed_refs, weights_path=squeeze_ckpt, layer_weights=(1.0, 0.0, 0.0))
    two = puzzle_similarity_map(image, mixed_refs, weights_path=squeeze_ckpt, layer_weights=(2.0, 0.0, 0.0))
    torch.testing.assert_close(two, 2 * one, atol=1e-6, rtol=0)


def test_noise_patch_scores_lower_inside_than_outside(squeeze_ckpt):
    g = torch.Generator().manual_seed(0)
    refs = F.interpolate(torch.rand(3, 3, 6, 12, generator=g), size=(96, 192), mode="bicubic", align_corners=True)
    refs = refs.clamp(0, 1)
    image = refs[0].clone()
    image[:, 32:64, 16:48] = torch.rand(3, 32, 32, generator=g)
    mask = torch.zeros(96, 192, dtype=torch.bool)
    mask[32:64, 16:48] = True
    maps = puzzle_similarity_map(image, refs, weights_path=squeeze_ckpt)[0]
    assert float(maps[mask].mean()) < float(maps[~mask].mean()) - 0.005
    assert float(maps[mask].max()) < float(maps[:, 112:].min())  # far from the patch the image is a reference
    torch.testing.assert_close(maps[:, 112:], torch.ones(96, 80), atol=1e-4, rtol=0)


def test_score_is_the_mean_of_the_map(squeeze_ckpt, mixed_refs):
    images = smooth_images(3, 40, 52, seed=49)
    maps = puzzle_similarity_map(images, mixed_refs, weights_path=squeeze_ckpt)
    scores = puzzle_similarity(images, mixed_refs, weights_path=squeeze_ckpt)
    assert scores.shape == (3,) and scores.dtype == torch.float32
    torch.testing.assert_close(scores.double(), maps.double().mean(dim=(1, 2)), atol=1e-6, rtol=0)
    assert len(set(scores.tolist())) == 3


def test_input_dtypes_are_computed_in_float32(squeeze_ckpt, mixed_refs):
    image = smooth_images(1, 40, 48, seed=50)
    base = puzzle_similarity_map(image, mixed_refs, weights_path=squeeze_ckpt)
    for dtype in (torch.float64, torch.float16, torch.bfloat16):
        x = image.to(dtype)
        got = puzzle_similarity_map(x, [r.to(dtype) for r in mixed_refs], weights_path=squeeze_ckpt)
        assert got.dtype == torch.float32
        expected = puzzle_similarity_map(
            x.float(), [r.to(dtype).float() for r in mixed_refs], weights_path=squeeze_ckpt
        )
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    # (3, H, W) is a batch of one
    torch.testing.assert_close(puzzle_similarity_map(image[0], mixed_refs, weights_path=squeeze_ckpt), base)
