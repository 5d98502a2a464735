"""``scenemetrics.viz``: colormaps with a fixed range (callbacks spec 1.6) and the small image helpers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.viz import BUILTIN_COLORMAPS, apply_colormap, blend, hstack, save_png, to_uint8

# jet by hand: r = clip(1.5 - |4v - 3|), g = clip(1.5 - |4v - 2|), b = clip(1.5 - |4v - 1|), times 255, rounded
JET = {
    0.0: (0, 0, 128),  # r = 1.5 - 3 -> 0, g = 1.5 - 2 -> 0, b = 1.5 - 1 = 0.5
    0.125: (0, 0, 255),  # b = 1.5 - 0.5 = 1
    0.25: (0, 128, 255),  # g = 1.5 - 1 = 0.5, b = 1.5 - 0 -> 1
    0.375: (0, 255, 255),  # r = 1.5 - 1.5 = 0, g = 1.5 - 0.5 = 1, b = 1.5 - 0.5 = 1
    0.5: (128, 255, 128),  # r = 0.5, g = 1.5 -> 1, b = 0.5
    0.625: (255, 255, 0),  # r = 1.5 - 0.5 = 1, g = 1.5 - 0.5 = 1, b = 1.5 - 1.5 = 0
    0.75: (255, 128, 0),
    0.875: (255, 0, 0),  # r = 1.5 - 0.5 = 1, g = 1.5 - 1.5 = 0
    1.0: (128, 0, 0),
}


def colours(values, colormap, **kwargs) -> list[tuple[int, ...]]:
    out = apply_colormap(torch.tensor([values], dtype=torch.float32), colormap, **kwargs)
    assert out.dtype == torch.uint8 and out.shape == (3, 1, len(values)) and out.device.type == "cpu"
    return [tuple(int(c) for c in out[:, 0, i]) for i in range(len(values))]


def test_jet_by_hand():
    assert colours(list(JET), "jet") == list(JET.values())
    assert BUILTIN_COLORMAPS == ("jet", "jet_r", "gray", "gray_r")


def test_reversed_jet_is_the_default():
    values = list(JET)
    assert colours(values, "jet_r") == [JET[1.0 - v] for v in values]
    out = apply_colormap(torch.tensor([values]))
    assert [tuple(int(c) for c in out[:, 0, i]) for i in range(len(values))] == [JET[1.0 - v] for v in values]
    x = torch.rand(7, 9)
    assert torch.equal(apply_colormap(x, "jet_r"), apply_colormap(1 - x, "jet"))


def test_gray_and_reversal():
    assert colours([0.0, 0.2, 0.5, 1.0], "gray") == [(0, 0, 0), (51, 51, 51), (128, 128, 128), (255, 255, 255)]
    assert colours([0.0, 0.2, 1.0], "gray_r") == [(255, 255, 255), (204, 204, 204), (0, 0, 0)]


def test_fixed_range_and_clipping_for_display():
    # vmin=-1, vmax=3: v -> (v + 1) / 4
    assert colours([-1.0, 0.0, 1.0, 3.0], "jet", vmin=-1, vmax=3) == [JET[0.0], JET[0.25], JET[0.5], JET[1.0]]
    assert colours([-5.0, 7.0], "jet", vmin=-1, vmax=3) == [JET[0.0], JET[1.0]]
    assert colours([-0.5, 1.5], "gray") == [(0, 0, 0), (255, 255, 255)]
    # no per-image normalisation: a map of small values stays dark
    assert colours([0.1, 0.2], "gray") == [(26, 26, 26), (51, 51, 51)]


def test_nan_is_black_with_one_warning():
    values = torch.tensor([[0.5, float("nan")], [float("nan"), 1.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = apply_colormap(values, "gray")
    assert len(caught) == 1 and issubclass(caught[0].category, UserWarning) and "NaN" in str(caught[0].message)
    assert out[:, 0, 1].tolist() == [0, 0, 0] and out[:, 1, 0].tolist() == [0, 0, 0]
    assert out[:, 0, 0].tolist() == [128, 128, 128] and out[:, 1, 1].tolist() == [255, 255, 255]
    with pytest.warns(UserWarning, match="NaN"):
        assert apply_colormap(values, "jet_r")[:, 0, 1].tolist() == [0, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply_colormap(torch.rand(3, 3))  # no NaN, no warning


def test_matplotlib_colormap_by_name():
    matplotlib = pytest.importorskip("matplotlib")
    values = torch.linspace(0, 1, 11).view(1, 11)
    out = apply_colormap(values, "viridis")
    expected = np.round(matplotlib.colormaps["viridis"](values.numpy())[..., :3] * 255).astype(np.uint8)
    assert torch.equal(out, torch.from_numpy(expected).permute(2, 0, 1))
    # matplotlib's own reversal by name
    expected_r = np.round(matplotlib.colormaps["viridis_r"](values.numpy())[..., :3] * 255).astype(np.uint8)
    assert torch.equal(apply_colormap(values, "viridis_r"), torch.from_numpy(expected_r).permute(2, 0, 1))


def test_errors():
    with pytest.raises(ValueError, match=r"unknown colormap 'not-a-map'.*jet, jet_r, gray, gray_r"):
        apply_colormap(torch.rand(2, 2), "not-a-map")
    with pytest.raises(ValueError, match=r"`values` must be a 2-D tensor \(H, W\); received \(1, 2, 2\)"):
        apply_colormap(torch.rand(1, 2, 2))
    with pytest.raises(ValueError, match=r"`values`"):
        apply_colormap(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"`vmax` must be greater than `vmin`"):
        apply_colormap(torch.rand(2, 2), vmin=1, vmax=1)


def test_unknown_colormap_without_matplotlib(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ValueError, match=r"unknown colormap 'viridis'.*jet, jet_r, gray, gray_r.*scenemetrics\[viz\]"):
        apply_colormap(torch.rand(2, 2), "viridis")
    assert apply_colormap(torch.rand(2, 2), "jet").shape == (3, 2, 2)  # built-ins need no matplotlib


def test_image_helpers(tmp_path):
    img = torch.tensor([[[0.0, 0.5], [1.0, 1.2]]]).expand(3, 2, 2)
    u8 = to_uint8(img)
    assert u8.dtype == torch.uint8 and u8[0].tolist() == [[0, 128], [255, 255]]
    assert to_uint8(torch.zeros(2, 2)).shape == (3, 2, 2)
    assert torch.equal(to_uint8(u8), u8)
    with pytest.raises(ValueError, match=r"`image`"):
        to_uint8(torch.zeros(4, 2, 2))
    black, white = torch.zeros(3, 2, 2), torch.ones(3, 2, 2)
    assert blend(black, white, 0.25)[0, 0, 0] == 64
    mask = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert blend(black, white, mask)[0].tolist() == [[0, 255], [255, 0]]
    with pytest.raises(ValueError, match=r"same shape"):
        blend(black, torch.zeros(3, 3, 3))
    panel = hstack([black, torch.ones(3, 3, 1)], separator=2, fill=7)
    assert panel.shape == (3, 3, 5) and int(panel[0, 2, 0]) == 7 and int(panel[0, 0, 4]) == 255
    path = save_png(u8, tmp_path / "sub" / "x.png")
    assert np.array_equal(np.asarray(Image.open(path)), u8.permute(1, 2, 0).numpy())
