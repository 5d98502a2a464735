"""``scenemetrics.image.read_image`` / ``read_mask``: every image mode becomes the values written, by hand, in [0, 1].

The 16-bit colour PNGs are written by a small PNG encoder here (Pillow cannot write them, and reads them as 8-bit),
so the expected values are the integers put into the file divided by 65535.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.image import ImageFileError, read_image, read_image_with_alpha, read_mask
from tests.utils.extras import need


def write_png16(path: Path, pixels: np.ndarray) -> Path:
    """A 16-bit PNG (grey, grey + alpha, RGB or RGBA by the last axis) of ``pixels`` (uint16), filter 0."""
    pixels = np.asarray(pixels, dtype=np.uint16)
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    h, w, c = pixels.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + pixels[y].astype(">u2").tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


GREY16 = np.array([[0, 1000, 65535], [32768, 257, 12345]], dtype=np.uint16)


def _rgb(values: np.ndarray, scale: float) -> torch.Tensor:
    """The expected (3, H, W) tensor: ``values`` (H, W, 3) divided by ``scale``, in float64 then float32."""
    return torch.from_numpy((values.astype(np.float64) / scale).astype(np.float32)).permute(2, 0, 1)


def test_8_bit_grey_rgb_and_1_bit(tmp_path):
    grey = np.array([[0, 128, 255], [1, 2, 254]], dtype=np.uint8)
    Image.fromarray(grey, "L").save(tmp_path / "l.png")
    assert torch.equal(read_image(tmp_path / "l.png"), _rgb(np.repeat(grey[..., None], 3, -1), 255.0))
    rgb = np.arange(18, dtype=np.uint8).reshape(2, 3, 3) * 14
    Image.fromarray(rgb, "RGB").save(tmp_path / "rgb.png")
    assert torch.equal(read_image(tmp_path / "rgb.png"), _rgb(rgb, 255.0))
    Image.fromarray(np.array([[True, False, True]])).save(tmp_path / "bit.png")
    assert read_image(tmp_path / "bit.png")[0].tolist() == [[1.0, 0.0, 1.0]]


def test_16_bit_grey_png_and_tiff(tmp_path):
    """Pillow's convert("RGB") clipped these to 8 bits (1000 became 1.0); they are value / 65535."""
    expected = _rgb(np.repeat(GREY16[..., None], 3, -1), 65535.0)
    write_png16(tmp_path / "g.png", GREY16)
    assert torch.equal(read_image(tmp_path / "g.png"), expected)
    Image.fromarray(GREY16).save(tmp_path / "g.tif")  # Pillow writes 16-bit grey TIFF itself
    assert torch.equal(read_image(tmp_path / "g.tif"), expected)
    assert torch.equal(read_mask(tmp_path / "g.png"), expected[:1])


def test_16_bit_rgb_and_rgba_png(tmp_path):
    """Pillow shows these as 8-bit RGB/RGBA (the high byte only); they are read at full precision."""
    rgb = np.stack([GREY16, GREY16 // 2, 65535 - GREY16], axis=-1)
    write_png16(tmp_path / "rgb.png", rgb)
    assert Image.open(tmp_path / "rgb.png").mode == "RGB"  # what a Pillow-only reader would take at face value
    assert torch.equal(read_image(tmp_path / "rgb.png"), _rgb(rgb, 65535.0))
    alpha = np.array([[65535, 0, 32768], [65535, 65535, 0]], dtype=np.uint16)
    write_png16(tmp_path / "rgba.png", np.concatenate([rgb, alpha[..., None]], axis=-1))
    image, has_alpha = read_image_with_alpha(tmp_path / "rgba.png")
    assert has_alpha and torch.equal(image, _rgb(rgb, 65535.0))  # alpha dropped: the stored colour
    a = alpha.astype(np.float32)[..., None] / 65535.0
    over_white = (rgb.astype(np.float32) / 65535.0) * a + (1.0 - a)
    white = read_image(tmp_path / "rgba.png", background="white")
    assert torch.allclose(white, torch.from_numpy(over_white).permute(2, 0, 1), atol=1e-7)
    black = read_image(tmp_path / "rgba.png", background="black")
    assert black[:, 0, 1].tolist() == [0.0, 0.0, 0.0]  # alpha 0 over black
    write_png16(tmp_path / "la.png", np.stack([GREY16, alpha], axis=-1))
    la, has_alpha = read_image_with_alpha(tmp_path / "la.png")
    assert has_alpha and torch.equal(la, _rgb(np.repeat(GREY16[..., None], 3, -1), 65535.0))


def test_16_bit_rgb_png_without_opencv(tmp_path, monkeypatch):
    """Where OpenCV is not installed, torchvision (a core dependency) decodes 16-bit colour PNGs."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cv2" else real(name, *a))
    rgb = np.stack([GREY16, 65535 - GREY16, GREY16 // 7], axis=-1)
    write_png16(tmp_path / "rgb.png", rgb)
    assert torch.equal(read_image(tmp_path / "rgb.png"), _rgb(rgb, 65535.0))


def _palette_image() -> tuple[Image.Image, np.ndarray]:
    palette = Image.new("P", (3, 1))
    palette.putpalette([10, 20, 30, 250, 128, 0] + [0] * 762)
    palette.putdata([0, 1, 1])
    return palette, np.array([[[10, 20, 30], [250, 128, 0], [250, 128, 0]]])  # the palette entries of 0, 1, 1


def test_8_bit_rgba_grey_alpha_and_palette(tmp_path):
    """The colour as stored, alpha dropped (the default): value / 255, and a palette's colours."""
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[..., 0] = 200
    rgba[0, :, 3] = 255  # top row opaque red, bottom row transparent
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    assert torch.equal(read_image(tmp_path / "rgba.png"), _rgb(rgba[..., :3], 255.0))
    la = np.array([[[10, 255], [200, 0], [77, 128]]], dtype=np.uint8)  # (grey, alpha)
    Image.fromarray(la, "LA").save(tmp_path / "la.png")
    assert torch.equal(read_image(tmp_path / "la.png"), _rgb(np.repeat(la[..., :1], 3, -1), 255.0))
    palette, colours = _palette_image()
    palette.save(tmp_path / "p.png")
    assert torch.equal(read_image(tmp_path / "p.png"), _rgb(colours, 255.0))


def test_8_bit_alpha_over_a_background(tmp_path):
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[..., 0] = 200
    rgba[0, :, 3] = 255  # top row opaque red, bottom row transparent
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    white = read_image(tmp_path / "rgba.png", background="white")
    assert white[:, 1].tolist() == [[1.0, 1.0]] * 3
    assert white[:, 0, 0].tolist() == [np.float32(200 / 255), 0.0, 0.0]
    palette, colours = _palette_image()
    palette.save(tmp_path / "pt.png", transparency=1)  # index 1 transparent
    image, has_alpha = read_image_with_alpha(tmp_path / "pt.png", background="black")
    assert has_alpha and torch.equal(image, _rgb(colours * np.array([1, 0, 0])[None, :, None], 255.0))


def test_float_tiff(tmp_path):
    values = np.array([[0.0, 0.25, 1.0], [0.5, 0.125, 1e-3]], dtype=np.float32)
    Image.fromarray(values, "F").save(tmp_path / "f.tif")
    assert torch.equal(read_image(tmp_path / "f.tif"), torch.from_numpy(values)[None].expand(3, -1, -1))
    Image.fromarray(values * 255.0, "F").save(tmp_path / "f255.tif")  # [0, 255] floats: an error, not a clip
    with pytest.raises(ImageFileError, match=r"f255\.tif.*values in \[0, 255\].*nothing is clipped"):
        read_image(tmp_path / "f255.tif")
    Image.fromarray(np.array([[np.nan, 0.5]], np.float32), "F").save(tmp_path / "nan.tif")
    with pytest.raises(ImageFileError, match="NaN"):
        read_image(tmp_path / "nan.tif")


def test_float_rgb_tiff_through_opencv(tmp_path):
    cv2 = need("inpaint", "cv2")  # OpenCV writes and reads float RGB TIFF
    rgb = np.array([[[0.0, 0.5, 1.0], [0.25, 0.75, 0.125]]], dtype=np.float32)
    raw = [cv2.IMWRITE_TIFF_COMPRESSION, 1]  # no compression: OpenCV 4 writes float RGB as lossy SGILOG otherwise
    cv2.imwrite(str(tmp_path / "f.tif"), rgb[..., ::-1], raw)  # OpenCV writes BGR
    assert torch.equal(read_image(tmp_path / "f.tif"), torch.from_numpy(rgb).permute(2, 0, 1))
    rgb16 = np.stack([GREY16, GREY16 // 3, 65535 - GREY16], axis=-1)
    cv2.imwrite(str(tmp_path / "rgb16.tif"), rgb16[..., ::-1], raw)
    assert torch.equal(read_image(tmp_path / "rgb16.tif"), _rgb(rgb16, 65535.0))


def test_modes_without_a_white_level_are_named(tmp_path):
    Image.fromarray(np.array([[0, 70000]], dtype=np.int32), "I").save(tmp_path / "i32.tif")
    with pytest.raises(ValueError, match=r"i32\.tif: image mode 'I'"):  # not clipped to 8 bits
        read_image(tmp_path / "i32.tif")
    (tmp_path / "junk.png").write_bytes(b"not an image at all")
    with pytest.raises(ValueError, match=r"junk\.png"):
        read_image(tmp_path / "junk.png")
    with pytest.raises(ValueError, match="`background`"):
        read_image(tmp_path / "junk.png", background="grey")
    assert issubclass(ImageFileError, ValueError)


def test_masks_of_every_depth(tmp_path):
    Image.fromarray(np.array([[0, 255, 128]], np.uint8), "L").save(tmp_path / "m8.png")
    assert read_mask(tmp_path / "m8.png").tolist() == [[[0.0, 1.0, np.float32(128 / 255)]]]
    write_png16(tmp_path / "m16.png", np.array([[0, 65535, 256]], np.uint16))
    assert read_mask(tmp_path / "m16.png").tolist() == [[[0.0, 1.0, np.float32(256 / 65535)]]]
    rgb = np.zeros((1, 2, 3), np.uint8)
    rgb[0, 1] = 255
    Image.fromarray(rgb).save(tmp_path / "mrgb.png")
    assert read_mask(tmp_path / "mrgb.png").tolist() == [[[0.0, 1.0]]]


def test_eval_scores_a_16_bit_render_of_the_ground_truth_as_identical(tmp_path):
    """The issue's probe: a 16-bit grey PNG render of an 8-bit ground truth (v * 257) is the same picture."""
    from scenemetrics.cli import main

    grey = np.random.default_rng(0).integers(0, 256, (24, 32), dtype=np.uint8)
    scene = tmp_path / "root" / "m" / "s"
    for sub in ("renders", "gt"):
        (scene / sub).mkdir(parents=True)
    write_png16(scene / "renders" / "a.png", grey.astype(np.uint16) * 257)
    Image.fromarray(grey, "L").save(scene / "gt" / "a.png")
    out = tmp_path / "out"
    argv = ["eval", "--root", str(tmp_path / "root"), "--out", str(out), "--metrics", "psnr", "--quiet",
            "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    row = (out / "results.csv").read_text().splitlines()[1].split(",")
    assert row[:2] == ["m", "s"] and float(row[2]) == float("inf")


def test_signed_16_bit_tiff_is_refused(tmp_path):
    """Signed 16-bit samples (TIFF SampleFormat 2) have no white level: -100 was read as a negative "pixel"."""
    cv2 = need("inpaint", "cv2")  # OpenCV writes signed 16-bit TIFF
    cv2.imwrite(str(tmp_path / "s16.tif"), np.array([[-100, 1000]], np.int16))
    assert Image.open(tmp_path / "s16.tif").tile[0][3][0] == "I;16S"  # what Pillow sees: mode 'I', signed raw
    with pytest.raises(ValueError, match=r"s16\.tif: image mode 'I' \(stored as I;16S\) has no defined white") as info:
        read_image(tmp_path / "s16.tif")
    assert info.type is ImageFileError


def test_eval_weights_views_by_a_16_bit_mask_exactly(tmp_path):
    """A 16-bit NerfBaselines mask of 1000 / 65535 weights render and ground truth by 0.0153 (Pillow's "L" clipped it
    to 255, a weight of 1): PSNR of (render * m, gt * m), computed here from the 8-bit values written."""
    import json

    from scenemetrics.cli import main

    rng = np.random.default_rng(1)
    render, gt = (rng.integers(0, 256, (16, 20, 3), dtype=np.uint8) for _ in range(2))
    folder = tmp_path / "pred"
    for sub, pixels in (("color", render), ("gt-color", gt)):
        (folder / sub).mkdir(parents=True)
        Image.fromarray(pixels).save(folder / sub / "a.png")
    (folder / "mask").mkdir()
    write_png16(folder / "mask" / "a.png", np.full((16, 20), 1000, dtype=np.uint16))
    (folder / "info.json").write_text(json.dumps({"method": "m", "scene": "s"}))
    out = tmp_path / "out"
    argv = ["eval", "--predictions", str(folder), "--out", str(out), "--metrics", "psnr", "--quiet", "--device", "cpu"]
    assert main(argv) == 0
    m = 1000.0 / 65535.0
    mse = float((((render.astype(np.float64) - gt) / 255.0 * m) ** 2).mean())
    row = (out / "results.csv").read_text().splitlines()[1].split(",")
    assert float(row[2]) == pytest.approx(10 * np.log10(1.0 / mse), abs=1e-3)
