"""`scenemetrics puzzlesim` pictures: exact raw maps for programs, scaled and labelled pictures for people."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.image import read_image
from scenemetrics.puzzlesim import puzzle_similarity_map, random_checkpoint


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory):
    return random_checkpoint("squeezenet1_1", tmp_path_factory.mktemp("w") / "sq.pth")


def test_raw_maps_pictures_and_panels(tmp_path, weights):
    g = torch.Generator().manual_seed(1)
    refs, imgs, out = tmp_path / "refs", tmp_path / "imgs", tmp_path / "out"
    ref = torch.rand(3, 48, 64, generator=g)
    viz.save_png(ref, refs / "r0.png")
    viz.save_png(torch.rand(3, 40, 52, generator=g), imgs / "a.png")
    viz.save_png(ref, imgs / "b.png")  # one of the references: a flat map of ones
    args = ["puzzlesim", "--refs", str(refs), "--images", str(imgs), "--out", str(out), "--weights", str(weights)]
    assert main([*args, "--quiet", "--panels"]) == 0
    report = json.loads((out / "scores.json").read_text())
    for name in ("a", "b"):
        entry = report["images"][name]
        assert entry["map_raw"] == f"maps/{name}_raw.npy" and entry["map"] == f"maps/{name}.png"
        assert entry["overlay"] == f"overlays/{name}.png" and entry["panel"] == f"panels/{name}.png"
        raw = np.load(out / entry["map_raw"])
        expected = puzzle_similarity_map(read_image(imgs / f"{name}.png"), [read_image(refs / "r0.png")],
                                         weights_path=weights)[0]  # fmt: skip
        assert raw.dtype == np.float32 and np.abs(raw - expected.numpy()).max() < 1e-5
        assert entry["score"] == pytest.approx(float(raw.mean()), abs=1e-6)
        # the picture for people is the map on its own 2nd-98th percentile, with a colour bar
        m = torch.from_numpy(raw)
        layout = viz.map_picture(
            m, title=f"PuzzleSim map of {name} (score {entry['score']:.4f}, higher = more plausible)"
        )
        picture = np.asarray(Image.open(out / entry["map"]))
        assert picture.shape == tuple(layout.image.permute(1, 2, 0).shape)
        x0, y0, x1, y1 = layout.tiles[0]["box"]
        s = layout.tiles[0]["scale"]
        rng = viz.robust_range(m)
        colored = viz.apply_colormap(m, "jet_r", rng.vmin, rng.vmax).permute(1, 2, 0).numpy()
        assert np.array_equal(picture[y0:y1:s, x0:x1:s], colored)
        bx0, by0, bx1, by1 = layout.colorbar.box
        assert np.array_equal(picture[by0:by1, bx0:bx1], layout.image.permute(1, 2, 0).numpy()[by0:by1, bx0:bx1])
        panel = Image.open(out / entry["panel"])
        assert panel.size[0] > 3 * raw.shape[1] and panel.size[1] > raw.shape[0]
    # a is a narrow band that the fixed [0, 1] scale would show in one hue; the picture uses the whole colormap
    a = np.load(out / "maps" / "a_raw.npy")
    assert float(a.max() - a.min()) < 0.5
    a_pic = np.asarray(Image.open(out / "maps" / "a.png"))
    score = report["images"]["a"]["score"]
    layout = viz.map_picture(
        torch.from_numpy(a), title=f"PuzzleSim map of a (score {score:.4f}, higher = more plausible)"
    )
    x0, y0, x1, y1 = layout.tiles[0]["box"]
    tile = a_pic[y0:y1, x0:x1].reshape(-1, 3)
    assert tile[:, 0].max() > 200 and tile[:, 2].max() > 200  # both warm and cold colours appear
