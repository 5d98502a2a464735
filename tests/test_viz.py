"""``scenemetrics.viz``: fixed-range colormaps, image helpers, and the pictures for people (scaling, colour bar)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.viz import (
    BUILTIN_COLORMAPS,
    DisplayRange,
    apply_colormap,
    blend,
    colormap_for,
    comparison_panel,
    hstack,
    map_overlay,
    map_picture,
    panel,
    quality_range,
    robust_range,
    save_png,
    save_raw_map,
    to_uint8,
)

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


# ---- pictures for people -------------------------------------------------------------------------------------------


def _narrow_map(h: int = 48, w: int = 64, seed: int = 0) -> torch.Tensor:
    """A PuzzleSim-like map: values in a narrow band near 1 with a low blob (the 'artifact')."""
    g = torch.Generator().manual_seed(seed)
    y, x = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    blob = torch.exp(-((x - 0.7 * w) ** 2 + (y - 0.5 * h) ** 2) / (0.02 * h * w))
    return 0.99 - 0.03 * blob - 0.004 * torch.rand(h, w, generator=g)


def test_robust_range_is_the_percentiles():
    r = robust_range(torch.arange(101, dtype=torch.float32))  # percentile p of 0..100 is p
    assert (r.vmin, r.vmax) == pytest.approx((2.0, 98.0)) and "2nd-98th percentile" in r.rule
    m = _narrow_map()
    r = robust_range(m, low=5, high=95)
    assert (r.vmin, r.vmax) == pytest.approx(tuple(np.percentile(m.double().numpy(), [5, 95])), abs=1e-9)
    # several maps are pooled; NaN / inf ignored
    a, b = torch.zeros(10, 10), torch.ones(10, 10)
    b[0, 0] = float("nan")
    pooled = robust_range([a, b, np.full((2, 2), np.inf)], low=0, high=100)
    assert (pooled.vmin, pooled.vmax) == (0.0, 1.0)


def test_robust_range_of_a_flat_map_keeps_its_upper_end():
    r = robust_range(torch.ones(8, 8), min_span=0.05)
    assert (r.vmin, r.vmax) == pytest.approx((0.95, 1.0)) and "flat" in r.rule
    # a flat map is drawn in the colour of the range's upper end (jet_r: dark blue = plausible), not as noise
    pic = map_picture(torch.ones(8, 8), title="flat")
    x0, y0, x1, y1 = pic.tiles[0]["box"]
    assert {tuple(c) for c in pic.image[:, y0:y1, x0:x1].reshape(3, -1).T.tolist()} == {(0, 0, 128)}


def test_robust_range_errors():
    with pytest.raises(ValueError, match="`low` and `high`"):
        robust_range(torch.rand(3, 3), low=50, high=50)
    with pytest.raises(ValueError, match="`min_span`"):
        robust_range(torch.rand(3, 3), min_span=0)
    with pytest.raises(ValueError, match="no finite value"):
        robust_range(torch.full((2, 2), float("nan")))
    with pytest.raises(ValueError, match="`vmax` must be finite and greater"):
        DisplayRange(1.0, 1.0)


def test_narrow_band_map_uses_the_whole_colormap():
    m = _narrow_map()
    fixed = apply_colormap(m)  # the machine view on [0, 1]: only shades of dark blue
    assert (fixed[:2] == 0).all() and int(fixed[2].min()) >= 128 and int(fixed[2].max()) < 180
    pic = map_picture(m, title="narrow")
    x0, y0, x1, y1 = pic.tiles[0]["box"]
    tile = pic.image[:, y0:y1, x0:x1]
    scale = pic.tiles[0]["scale"]
    assert tile.shape[1:] == (m.shape[0] * scale, m.shape[1] * scale)
    rng = pic.colorbar.range
    assert torch.equal(tile[:, ::scale, ::scale], apply_colormap(m, "jet_r", rng.vmin, rng.vmax))
    assert len({tuple(c) for c in tile.reshape(3, -1).T.tolist()}) > 50
    # the blob (low values) is warm: red channel high, blue low; the background cold
    low_px = tile[:, (m.shape[0] // 2) * scale, int(0.7 * m.shape[1]) * scale].tolist()
    high_px = tile[:, 0, 0].tolist()
    assert low_px[0] > 120 and low_px[2] < 60 and high_px[2] > 120 and high_px[0] < 60


def test_colorbar_shows_the_real_values():
    m = _narrow_map()
    pic = map_picture(m, title="PuzzleSim map of a.png")
    bar = pic.colorbar
    p2, p98 = np.percentile(m.double().numpy(), [2, 98])
    # ticks: top = 98th percentile, bottom = 2nd, evenly spaced; labels are the values printed with >= 2 decimals
    assert bar.values[0] == pytest.approx(p98, abs=1e-9) and bar.values[-1] == pytest.approx(p2, abs=1e-9)
    assert len(bar.labels) == len(bar.values) == len(bar.ticks_y) >= 2
    for value, label in zip(bar.values, bar.labels, strict=True):
        decimals = len(label.split(".")[1])
        assert decimals >= 2 and abs(float(label) - value) <= 0.5 * 10**-decimals + 1e-12
    assert len(set(bar.labels)) == len(bar.labels)  # neighbouring ticks are distinguishable
    # the bar region is the colormap from vmax (top) to vmin (bottom), at the drawn position
    x0, y0, x1, y1 = bar.box
    strip = pic.image[:, y0:y1, x0:x1]
    assert strip.shape[1] == pic.tiles[0]["box"][3] - pic.tiles[0]["box"][1] and strip.shape[2] >= 10
    assert (strip == strip[:, :, :1]).all()  # constant along each row
    h = strip.shape[1]
    centres = torch.tensor([p98 - (y + 0.5) / h * (p98 - p2) for y in range(h)], dtype=torch.float64)
    expected = apply_colormap(centres.view(h, 1).float(), "jet_r", p2, p98)
    assert (strip[:, :, :1].int() - expected.int()).abs().max() <= 1
    top, bottom = strip[:, 0, 0].tolist(), strip[:, -1, 0].tolist()
    assert top[:2] == [0, 0] and 128 <= top[2] <= 136  # jet_r near vmax: dark blue
    assert 128 <= bottom[0] <= 136 and bottom[1:] == [0, 0]  # near vmin: dark red
    assert bar.ticks_y[0] == y0 and bar.ticks_y[-1] == y1 - 1
    # the colour bar sits right of the map tile, inside the picture
    assert x0 > pic.tiles[0]["box"][2] and x1 < pic.image.shape[2]
    assert pic.notes and "2nd-98th percentile" in pic.notes[0]


def test_map_picture_tiles_and_overlay():
    m = _narrow_map()
    img = torch.rand(3, *m.shape, generator=torch.Generator().manual_seed(3))
    pic = map_picture(m, image=img, show=("image", "map", "overlay"), title="t", extra_tiles=[("mask", m < 0.97)])
    assert [t["label"] for t in pic.tiles] == ["image", "map", "map over the image (bad areas coloured)", "mask"]
    s = pic.tiles[0]["scale"]
    x0, y0, x1, y1 = pic.tiles[0]["box"]
    assert torch.equal(pic.image[:, y0:y1:s, x0:x1:s], to_uint8(img))
    # overlay: the image where the map is at/above vmax, the map colour blended at 0.85 where at/below vmin
    rng = pic.colorbar.range
    over = map_overlay(img, m, rng)
    x0, y0, x1, y1 = pic.tiles[2]["box"]
    assert torch.equal(pic.image[:, y0:y1:s, x0:x1:s], over)
    top = m >= rng.vmax
    bottom = m <= rng.vmin
    assert top.any() and bottom.any()
    assert torch.equal(over[:, top], to_uint8(img)[:, top])
    colored = apply_colormap(m, "jet_r", rng.vmin, rng.vmax).float()
    expected = (0.15 * to_uint8(img).float() + 0.85 * colored).round().to(torch.uint8)
    assert (over[:, bottom].int() - expected[:, bottom].int()).abs().max() <= 1
    with pytest.raises(ValueError, match="`image` is needed"):
        map_picture(m, show=("overlay",), title="t")
    with pytest.raises(ValueError, match="`show` entries"):
        map_picture(m, show=("maps",), title="t")
    with pytest.raises(ValueError, match="`values` must be a 2-D tensor"):
        map_picture(m[None], title="t")


def test_panel_layout_title_labels_legend_notes():
    a, b = torch.zeros(3, 20, 30), torch.ones(3, 10, 30)
    pic = panel([("left", a), ("right", b)], title="a title", legend=[("red thing", (255, 0, 0))], notes=["n1"])
    assert pic.title == "a title" and pic.legend == [("red thing", (255, 0, 0))] and pic.notes == ["n1"]
    assert pic.colorbar is None
    boxes = [t["box"] for t in pic.tiles]
    scale = pic.tiles[0]["scale"]
    assert scale == 8  # 20 px enlarged to >= 160 px
    assert boxes[0][3] - boxes[0][1] == 160 and boxes[1][3] - boxes[1][1] == 80 and boxes[0][1] == boxes[1][1]
    assert boxes[1][0] > boxes[0][2]  # side by side with a gap
    x0, y0, x1, y1 = boxes[0]
    assert (pic.image[:, y0:y1, x0:x1] == 0).all()
    # there is text (dark pixels) above the tiles: the title and the labels
    assert (pic.image[:, :y0] < 100).all(0).any()
    # the legend swatch is below the tiles
    below = pic.image[:, y1:]
    red = (below[0] == 255) & (below[1] == 0) & (below[2] == 0)
    assert red.any()
    with pytest.raises(ValueError, match="`tiles`"):
        panel([], title="x")
    unscaled = panel([("x", a)], title="t", min_height=0)
    assert unscaled.tiles[0]["scale"] == 1 and unscaled.tiles[0]["box"][3] - unscaled.tiles[0]["box"][1] == 20


def test_pictures_without_matplotlib(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    pic = map_picture(_narrow_map(), title="no matplotlib")
    assert pic.colorbar is not None and pic.image.dtype == torch.uint8


def test_raw_map_file_holds_the_exact_values(tmp_path):
    m = _narrow_map() + torch.rand(48, 64) * 1e-7
    m[0, 0] = 1.7  # not clipped: custom layer weights can exceed 1
    path = save_raw_map(m, tmp_path / "maps" / "a_raw.npy")
    loaded = np.load(path)
    assert loaded.dtype == np.float32 and np.array_equal(loaded, m.numpy())
    with pytest.raises(ValueError, match=r"`path` must end in \.npy"):
        save_raw_map(m, tmp_path / "a.png")
    with pytest.raises(ValueError, match="`values` must be a 2-D tensor"):
        save_raw_map(m[None], tmp_path / "b.npy")


def test_robust_range_widened_to_a_perfect_value_and_flat_maps_at_that_end():
    # percentiles by hand: linspace(0.2, 0.5, 101) has its 2nd / 98th percentiles at 0.206 / 0.494
    errors = torch.linspace(0.2, 0.5, 101)
    r = robust_range(errors, down_to=0.0)
    assert (r.vmin, round(r.vmax, 6)) == (0.0, 0.494) and "widened to include 0" in r.rule
    r = robust_range(torch.linspace(0.5, 0.9, 101), up_to=1.0)
    assert (round(r.vmin, 6), r.vmax) == (0.508, 1.0)
    # a flat error map of zeros: [0, 0.01] (zero shows the colour of "no error"); a flat similarity of ones: [0.99, 1]
    assert (robust_range(torch.zeros(8, 8), down_to=0.0).vmin, robust_range(torch.zeros(8, 8), down_to=0.0).vmax) == (
        0.0,
        0.01,
    )
    flat = robust_range(torch.ones(8, 8), up_to=1.0)
    assert (round(flat.vmin, 6), flat.vmax) == (0.99, 1.0)
    assert quality_range(errors, higher_is_better=None) == robust_range(errors)  # unknown direction: not widened
    assert quality_range(errors, higher_is_better=False) == robust_range(errors, down_to=0.0)


def test_colormap_for_reverses_only_error_maps():
    assert [colormap_for("jet_r", h) for h in (True, None, False)] == ["jet_r", "jet_r", "jet"]
    assert colormap_for("gray", False) == "gray_r"


def test_comparison_panel_keeps_the_images_pixels_and_checks_sizes():
    g = torch.Generator().manual_seed(0)
    render, target = torch.rand(3, 9, 13, generator=g), torch.rand(3, 9, 13, generator=g)
    values = (render - target).abs().mean(dim=0)
    rng = DisplayRange(0.0, 0.5)
    pic = comparison_panel(render, target, values, title="t", display_range=rng, labels=("a", "b", "c"))
    boxes = [tile["box"] for tile in pic.tiles]
    assert [t["label"] for t in pic.tiles] == ["a", "b", "c"] and pic.colorbar.range == rng
    expected = [to_uint8(render), to_uint8(target), apply_colormap(values, "jet", 0.0, 0.5)]
    for (x0, y0, x1, y1), tile in zip(boxes, expected, strict=True):
        assert torch.equal(pic.image[:, y0:y1, x0:x1], tile)  # 13 x 9: not enlarged (min_height=0)
    with pytest.raises(ValueError, match="`render`"):
        comparison_panel(render, target[:, :8], values, title="t", display_range=rng)
    with pytest.raises(ValueError, match="`values`"):
        comparison_panel(render, target, values[:8], title="t", display_range=rng)
