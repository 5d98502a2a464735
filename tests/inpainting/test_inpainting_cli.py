"""`scenemetrics inpaint`: files written, summary line, LaMa through the CLI, offline and bad-input exits."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.image import read_image
from scenemetrics.puzzlesim import puzzle_similarity_map

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


@pytest.fixture()
def folders(tmp_path, planted):
    refs, image, _, _ = planted(0)
    for i, ref in enumerate(refs):
        viz.save_png(ref, tmp_path / "refs" / f"view_{i}.png")
    viz.save_png(image, tmp_path / "render.png")
    return tmp_path / "refs", tmp_path / "render.png"


def _png(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.mark.extra("inpaint")
def test_cli_opencv_writes_result_mask_panel_and_json(folders, squeeze_weights, tmp_path, capsys):
    refs, image_path = folders
    out = tmp_path / "out"
    args = ["inpaint", "--refs", str(refs), "--image", str(image_path), "--out", str(out), "--inpainter", "opencv"]
    args += ["--weights", str(squeeze_weights), "--n-candidates", "10", "--max-iters", "2", "--quiet"]
    assert main(args) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"quality \d\.\d{4} -> \d\.\d{4}, \d+ rounds, \d+\.\d% of pixels inpainted", summary)

    report = json.loads((out / "render.json").read_text())
    assert report["quality_after"] >= report["quality_before"]
    assert 1 <= len(report["history"]) <= 2 and report["rounds"] == len(report["history"])
    assert report["history"][0]["sampling"] == "initial" and len(report["history"][0]["thresholds"]) <= 10
    assert summary.startswith(f"quality {report['quality_before']:.4f} -> {report['quality_after']:.4f}")

    before = _png(image_path)
    after = _png(out / "render_inpainted.png")
    mask = _png(out / "render_mask.png")
    assert after.shape == before.shape == mask.shape == (64, 64, 3)
    assert set(np.unique(mask)) <= {0, 255}
    inpainted = mask[..., 0] == 255
    assert inpainted.mean() == pytest.approx(report["mask_fraction"])
    assert np.array_equal(after[~inpainted], before[~inpainted])

    # the panel for people: before | map before (with colour bar) | after | mask, each 64 px view enlarged 3x
    panel = _png(out / "render_panel.png")
    ref_images = [read_image(p) for p in sorted(refs.iterdir())]
    sim = puzzle_similarity_map(read_image(image_path), ref_images, weights_path=squeeze_weights)[0]
    layout = viz.map_picture(
        sim,
        image=read_image(image_path),
        show=("image", "map"),
        labels={"image": f"before (quality {report['quality_before']:.4f})", "map": "PuzzleSim map before"},
        extra_tiles=[
            (f"after (quality {report['quality_after']:.4f})", torch.from_numpy(after).permute(2, 0, 1)),
            ("inpainted pixels (white)", torch.from_numpy(mask).permute(2, 0, 1)),
        ],
        title=(
            f"PuzzleSim-guided inpainting of render.png: quality {report['quality_before']:.4f} -> "
            f"{report['quality_after']:.4f} (mean map, higher = better), {report['rounds']} round(s), "
            f"{100 * report['mask_fraction']:.1f}% of pixels inpainted"
        ),
    )
    assert panel.shape == tuple(layout.image.permute(1, 2, 0).shape)
    tiles = {}
    for t in layout.tiles:
        x0, y0, x1, y1 = t["box"]
        assert t["scale"] == 3 and (x1 - x0, y1 - y0) == (192, 192)
        tiles[t["label"].split(" ")[0]] = panel[y0:y1:3, x0:x1:3]
    assert np.array_equal(tiles["before"], before) and np.array_equal(tiles["after"], after)
    assert np.array_equal(tiles["inpainted"], mask)
    rng = viz.robust_range(sim)
    colored = viz.apply_colormap(sim, "jet_r", rng.vmin, rng.vmax).permute(1, 2, 0).numpy().astype(int)
    assert np.abs(tiles["PuzzleSim"].astype(int) - colored).max() <= 1
    bar = layout.colorbar
    assert bar.label == "PuzzleSim similarity" and float(bar.labels[0]) == pytest.approx(rng.vmax, abs=1e-2)


def test_cli_lama_through_lama_weights(folders, squeeze_weights, tmp_path, lama_script, capsys):
    refs, image_path = folders
    lama = lama_script(tmp_path / "lama", 0)
    out = tmp_path / "out"
    args = ["inpaint", "--refs", str(refs), "--image", str(image_path), "--out", str(out), "--lama-weights", str(lama)]
    args += ["--weights", str(squeeze_weights), "--n-candidates", "6", "--max-iters", "1", "--quiet"]
    # the stand-in is not the published big-lama.pt: TorchScript runs code at load, so it needs the user's say-so
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "refusing to load" in err and "--i-trust-this-file" in err and not out.exists()
    assert main([*args, "--i-trust-this-file"]) == 0
    report = json.loads((out / "render.json").read_text())
    assert report["settings"]["inpainter"] == "lama" and len(report["history"]) == 1
    # the stand-in fills with grey: every inpainted pixel is 128 (0.5), every other one untouched
    inpainted = _png(out / "render_mask.png")[..., 0] == 255
    after, before = _png(out / "render_inpainted.png"), _png(image_path)
    assert (after[inpainted] == 128).all() and np.array_equal(after[~inpainted], before[~inpainted])


def test_cli_default_lama_offline_suggests_opencv(folders, squeeze_weights, tmp_path, capsys, monkeypatch):
    refs, image_path = folders
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    args = ["inpaint", "--refs", str(refs), "--image", str(image_path), "--out", str(tmp_path / "o")]
    assert main([*args, "--weights", str(squeeze_weights), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "big-lama.pt" in err and "--inpainter opencv" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--lama-weights", str(tmp_path / "missing.pt"), "--quiet"]) == 1
    assert "--inpainter opencv" in capsys.readouterr().err


def test_cli_bad_inputs(folders, squeeze_weights, tmp_path, capsys):
    refs, image_path = folders
    empty = tmp_path / "empty"
    empty.mkdir()
    base = ["inpaint", "--out", str(tmp_path / "o"), "--inpainter", "opencv", "--weights", str(squeeze_weights)]
    assert main([*base, "--refs", str(empty), "--image", str(image_path)]) == 1
    assert "holds no image" in capsys.readouterr().err
    assert main([*base, "--refs", str(refs), "--image", str(tmp_path / "nope.png")]) == 1
    assert "--image" in capsys.readouterr().err
    assert main([*base, "--refs", str(refs), "--image", str(image_path), "--n-candidates", "1"]) == 1
    assert "`n_candidates`" in capsys.readouterr().err
    assert main([*base, "--refs", str(refs), "--image", str(image_path), "--inpainter", "magic"]) == 2
    assert main(["inpaint", "--refs", str(refs)]) == 2


def test_cli_help_lists_the_subcommand(capsys):
    assert main(["--help"]) == 0
    assert "inpaint" in capsys.readouterr().out
    assert main(["inpaint", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--refs", "--image", "--out", "--inpainter", "--lama-weights", "--diffusers-model", "--mask-dilation"):
        assert flag in text


@pytest.mark.extra("inpaint")
def test_cli_progress_on_stderr(folders, squeeze_weights, tmp_path, capsys, monkeypatch):
    refs, image_path = folders
    args = ["inpaint", "--refs", str(refs), "--image", str(image_path), "--out", str(tmp_path / "o")]
    args += ["--inpainter", "opencv", "--weights", str(squeeze_weights), "--n-candidates", "4", "--max-iters", "1"]
    assert main(args) == 0
    err = capsys.readouterr().err  # not a terminal: a plain line says what runs, no bar and no escape codes
    assert "inpainting render.png against" in err and "puzzle_inpaint" not in err
    assert "\r" not in err and "\x1b" not in err
    assert read_image(tmp_path / "o" / "render_inpainted.png").shape == (3, 64, 64)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # on a terminal, the bar is drawn
    assert main(args) == 0
    assert "puzzle_inpaint" in capsys.readouterr().err


@pytest.mark.extra("inpaint")
def test_cli_refs_reads_only_png_jpg_jpeg(folders, squeeze_weights, tmp_path, capsys):
    # spec 7: `--refs` is every *.png|*.jpg|*.jpeg in DIR; a .bmp / .webp / .tif view there is not a reference
    refs, image_path = folders
    rng = np.random.default_rng(0)
    for ext in ("bmp", "webp", "tif"):
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(refs / f"zz_noise.{ext}")
    pngs = sorted(p for p in refs.iterdir() if p.suffix == ".png")
    out = tmp_path / "out"
    args = ["inpaint", "--refs", str(refs), "--image", str(image_path), "--out", str(out), "--inpainter", "opencv"]
    assert main([*args, "--weights", str(squeeze_weights), "--n-candidates", "4", "--max-iters", "1", "--quiet"]) == 0
    report = json.loads((out / "render.json").read_text())
    assert report["settings"]["references"] == [str(p) for p in pngs]
    views = [read_image(p) for p in pngs]
    expected = puzzle_similarity_map(read_image(image_path), views, weights_path=squeeze_weights)
    assert report["quality_before"] == pytest.approx(float(expected.double().mean()), abs=1e-5)

    only_others = tmp_path / "others"
    only_others.mkdir()
    Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(only_others / "view.bmp")
    capsys.readouterr()
    assert main([*args[:2], str(only_others), *args[3:], "--weights", str(squeeze_weights), "--quiet"]) == 1
    assert "holds no image" in capsys.readouterr().err
