"""``scenemetrics.image``: the one input rule of DESIGN.md "Inputs", and reading images from disk."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.image import (
    RANGE_TOLERANCE,
    ImageTypeError,
    check_image_list,
    check_images,
    list_images,
    read_image,
    read_images,
)


def test_shapes_batch_and_single_image():
    x = torch.rand(2, 3, 5, 7)
    out = check_images(x, "images")
    assert out.shape == (2, 3, 5, 7) and out.dtype == torch.float32 and out.is_contiguous()
    assert torch.equal(out, x)
    single = check_images(x[0], "images")
    assert single.shape == (1, 3, 5, 7) and torch.equal(single[0], x[0])
    empty = check_images(torch.zeros(0, 3, 5, 7), "images")
    assert empty.shape == (0, 3, 5, 7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_float_dtypes_are_converted_to_float32(dtype):
    x = torch.rand(1, 3, 4, 4).to(dtype)
    out = check_images(x, "images")
    assert out.dtype == torch.float32
    assert torch.equal(out, x.float())
    assert check_images(x, "images", dtype=torch.float64).dtype == torch.float64


def test_uint8_is_divided_by_255():
    x = torch.tensor([0, 1, 128, 254, 255], dtype=torch.uint8).view(1, 1, 1, 5).expand(1, 3, 1, 5)
    out = check_images(x, "images")
    assert out.dtype == torch.float32
    torch.testing.assert_close(out[0, :, 0], torch.tensor([0, 1 / 255, 128 / 255, 254 / 255, 1.0]).expand(3, 5))


def test_range_tolerance_and_nothing_is_clipped():
    assert RANGE_TOLERANCE == 1e-6
    x = torch.full((1, 3, 2, 2), 0.5, dtype=torch.float64)
    x[0, 0, 0, 0] = 1 + 0.9e-6
    x[0, 0, 0, 1] = -0.9e-6
    out = check_images(x, "images", dtype=torch.float64)
    assert float(out.max()) == 1 + 0.9e-6 and float(out.min()) == -0.9e-6  # accepted as given, not clipped
    for bad in (1 + 2e-6, -2e-6, 1.5, 255.0):
        y = x.clone()
        y[0, 1, 1, 1] = bad
        with pytest.raises(ValueError, match=r"`images` must be float in \[0, 1\] \(or uint8\); received values in"):
            check_images(y, "images")
    # check_range=False accepts overshoot, but not non-finite values
    y = x.clone()
    y[0, 2, 0, 0] = 1.7
    assert float(check_images(y, "render", check_range=False).max()) == pytest.approx(1.7)
    y[0, 2, 0, 0] = math.nan
    with pytest.raises(ValueError, match=r"`render` contains NaN or infinite"):
        check_images(y, "render", check_range=False)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values(value):
    x = torch.rand(2, 3, 4, 4)
    x[1, 2, 3, 3] = value
    with pytest.raises(ValueError, match=r"`refs` contains NaN or infinite values \(shape \(2, 3, 4, 4\)\)"):
        check_images(x, "refs")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_anywhere_in_a_large_batch(value, dtype):
    """The check is one pass over the extremes (NaN and infinities reach them); a value in every part of a batch
    that the vectorised reduction splits (the first, middle and last elements, the tail of a row) is found."""
    x = torch.rand(2, 3, 61, 67).to(dtype)
    for index in [(0, 0, 0, 0), (1, 1, 30, 33), (1, 2, 60, 66), (0, 2, 17, 64)]:
        for check_range in (True, False):
            y = x.clone()
            y[index] = value
            y[0, 0, 5, 5] = 2.0  # also out of range: the non-finite value is named first
            with pytest.raises(ValueError, match=r"`img` contains NaN or infinite values"):
                check_images(y, "img", check_range=check_range)
    assert torch.equal(check_images(x, "img"), x.float())


@pytest.mark.parametrize(
    ("shape", "pattern"),
    [
        ((4, 4), r"shape \(B, 3, H, W\) or \(3, H, W\); received shape \(4, 4\)"),
        ((1, 1, 3, 4, 4), r"received shape \(1, 1, 3, 4, 4\)"),
        ((3,), r"received shape \(3,\)"),
        ((2, 1, 4, 4), r"3 \(RGB\) channels.*received shape \(2, 1, 4, 4\)"),
        ((2, 4, 4, 4), r"3 \(RGB\) channels.*received shape \(2, 4, 4, 4\)"),
        ((4, 4, 3), r"3 \(RGB\) channels.*received shape \(1, 4, 4, 3\)"),  # HWC is not CHW
    ],
)
def test_bad_shapes(shape, pattern):
    with pytest.raises(ValueError, match=rf"`preds` .*{pattern}"):
        check_images(torch.rand(shape), "preds")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.bool, torch.complex64, torch.uint16])
def test_bad_dtypes(dtype):
    x = torch.zeros(1, 3, 2, 2, dtype=dtype)
    with pytest.raises(ValueError, match=rf"`images` must be float16/bfloat16/float32/float64.*or uint8.*{dtype}"):
        check_images(x, "images")


@pytest.mark.parametrize("bad", [np.zeros((3, 4, 4), dtype=np.float32), [[0.0]], 1.0, None])
def test_not_a_tensor(bad):
    with pytest.raises(ImageTypeError, match=r"`images` must be a torch.Tensor") as info:
        check_images(bad, "images")
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


def test_min_size():
    x = torch.rand(1, 3, 16, 20)
    assert check_images(x, "images", min_size=16).shape == (1, 3, 16, 20)
    assert check_images(x, "images", min_size=(16, 20)).shape == (1, 3, 16, 20)
    with pytest.raises(
        ValueError, match=r"`images` must be at least 17x17 pixels \(H x W\) for layer 3; received 16x20"
    ):
        check_images(x, "images", min_size=17, min_size_reason=" for layer 3")
    with pytest.raises(ValueError, match=r"at least 16x21 pixels.*received 16x20"):
        check_images(x, "images", min_size=(16, 21))
    # min_size applies to uint8 too, and to an empty batch
    with pytest.raises(ValueError, match=r"at least 17x17"):
        check_images(torch.zeros(0, 3, 16, 20, dtype=torch.uint8), "images", min_size=17)


def test_autograd_and_device_are_kept():
    x = torch.rand(1, 3, 4, 4, dtype=torch.float64, requires_grad=True)
    out = check_images(x, "images")
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    assert check_images(torch.rand(1, 3, 2, 2), "images").device == torch.device("cpu")


def test_non_contiguous_input():
    x = torch.rand(1, 4, 4, 3).permute(0, 3, 1, 2)
    out = check_images(x, "images")
    assert out.is_contiguous() and torch.equal(out, x)


# check_image_list ----------------------------------------------------------------------------------------------
def test_image_list_mixed_sizes():
    a, b, c = torch.rand(3, 8, 8), torch.rand(2, 3, 9, 7), (torch.rand(1, 3, 5, 5) * 255).to(torch.uint8)
    out = check_image_list([a, b, c], "references")
    assert [t.shape for t in out] == [(1, 3, 8, 8), (2, 3, 9, 7), (1, 3, 5, 5)]
    assert all(t.dtype == torch.float32 for t in out)
    torch.testing.assert_close(out[2], c.float() / 255)
    assert check_image_list((a,), "references")[0].shape == (1, 3, 8, 8)
    tensor = check_image_list(b, "references")
    assert len(tensor) == 1 and torch.equal(tensor[0], b)


def test_image_list_drops_empty_entries_and_may_be_empty():
    out = check_image_list([torch.zeros(0, 3, 4, 4), torch.rand(3, 4, 4)], "references")
    assert len(out) == 1
    assert check_image_list([], "references") == []
    assert check_image_list(torch.zeros(0, 3, 4, 4), "references") == []


def test_image_list_names_the_bad_element():
    with pytest.raises(ValueError, match=r"`references\[1\]` must be float in \[0, 1\]"):
        check_image_list([torch.rand(3, 4, 4), torch.rand(3, 4, 4) + 2], "references")
    with pytest.raises(ValueError, match=r"`references\[2\]` must have 3 \(RGB\) channels"):
        check_image_list([torch.rand(3, 4, 4), torch.rand(3, 4, 4), torch.rand(1, 4, 4)], "references")
    with pytest.raises(ValueError, match=r"`references\[0\]` must be at least 8x8"):
        check_image_list([torch.rand(3, 4, 4)], "references", min_size=8)
    with pytest.raises(ImageTypeError, match=r"`references` must be a tensor.*or a list/tuple.*received dict"):
        check_image_list({"a": torch.rand(3, 4, 4)}, "references")
    with pytest.raises(ImageTypeError, match=r"received generator"):
        check_image_list(t for t in [torch.rand(3, 4, 4)])


# reading files ---------------------------------------------------------------------------------------------------
def test_read_image_rgb_grey_and_alpha(tmp_path):
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    Image.fromarray(rgb).save(tmp_path / "a.png")
    out = read_image(tmp_path / "a.png")
    assert out.shape == (3, 4, 5) and out.dtype == torch.float32
    torch.testing.assert_close(out, torch.from_numpy(rgb).permute(2, 0, 1).float() / 255)
    grey = np.array([[0, 51], [102, 255]], dtype=np.uint8)
    Image.fromarray(grey, mode="L").save(tmp_path / "b.png")
    torch.testing.assert_close(read_image(tmp_path / "b.png"), torch.from_numpy(grey).float().div(255).expand(3, 2, 2))
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[..., :3] = 200
    rgba[..., 3] = 7
    Image.fromarray(rgba, mode="RGBA").save(tmp_path / "c.png")
    torch.testing.assert_close(read_image(tmp_path / "c.png"), torch.full((3, 2, 2), 200 / 255))


def test_list_and_read_images(tmp_path):
    for name in ("b.png", "a.JPG", "c.webp"):
        Image.fromarray(np.zeros((3, 4, 3), dtype=np.uint8)).save(tmp_path / name)
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "sub.png").mkdir()
    files = list_images(tmp_path)
    assert [f.name for f in files] == ["a.JPG", "b.png", "c.webp"]
    names, images = read_images(tmp_path)
    assert names == files and all(t.shape == (3, 3, 4) for t in images)
    with pytest.raises(FileNotFoundError, match=r"`renders`.*is not a folder"):
        list_images(tmp_path / "missing", "renders")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"`refs`.*holds no image"):
        read_images(empty, "refs")
