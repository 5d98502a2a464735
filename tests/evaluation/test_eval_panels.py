"""``scenemetrics eval`` with the full-reference map metrics: thumbnails, and the report's panels of the worst views."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.cli import main
from scenemetrics.viz import apply_colormap
from tests.utils.display_range import first_range

from .conftest import METHODS, SCENES, SIZE, VIEWS, read_json, read_png


def _png(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _find(tile: np.ndarray, image: np.ndarray) -> tuple[int, int] | None:
    """Top-left corner where ``tile`` appears pixel for pixel in ``image`` (unscaled), or ``None``."""
    h, w = tile.shape[:2]
    ys, xs = np.nonzero((image[: image.shape[0] - h + 1, : image.shape[1] - w + 1] == tile[0, 0]).all(axis=-1))
    for y, x in zip(ys.tolist(), xs.tolist(), strict=True):
        if np.array_equal(image[y : y + h, x : x + w], tile):
            return y, x
    return None


@pytest.fixture(scope="module")
def evaluated(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("panels") / "out"
    args = ["eval", "--root", str(tree), "--out", str(out), "--metrics", "abs_error,ssim_map", "--panels", "1"]
    assert main([*args, "--thumbnails", "1", "--quiet", "--device", "cpu"]) == 0
    return out


def test_metrics_values_are_the_definitions(evaluated: Path, tree: Path) -> None:
    doc = read_json(evaluated / "results.json")
    for row in doc["scenes"]:
        folder = tree / row["method"] / row["scene"]
        for view in VIEWS:
            render, gt = read_png(folder / "renders" / f"{view}.png"), read_png(folder / "gt" / f"{view}.png")
            mae = float(np.abs(render - gt).mean())  # the mean of |render - gt| over pixels and channels
            assert row["per_view"]["abs_error"][view]["abs_error"] == pytest.approx(mae, abs=1e-6)
        assert 0.0 <= row["values"]["ssim_map"] <= 1.0
    assert doc["metrics"]["abs_error"]["higher_is_better"] is False


def test_report_shows_each_methods_worst_view_unscaled(evaluated: Path, tree: Path) -> None:
    doc = read_json(evaluated / "results.json")
    page = (evaluated / "report" / "index.html").read_text()
    assert "abs_error: worst views" in page and "ssim_map: worst views" in page
    for method in METHODS:
        # the worst view of the method over its scenes, from the per-view values (highest error)
        per_view = [
            (row["per_view"]["abs_error"][v]["abs_error"], row["scene"], v)
            for row in doc["scenes"]
            if row["method"] == method
            for v in VIEWS
        ]
        value, scene, view = max(per_view)
        if [v for v, _, _ in per_view].count(value) > 1:
            assert method == "m_clean"  # renders equal to their ground truth: every view ties at 0
            continue
        panels = sorted((evaluated / "report" / "panels" / method / scene).glob("abs_error-*.png"))
        assert len(panels) == 1  # --panels 1: one per unit and metric
        src = f"panels/{method}/{scene}/abs_error-000.png"
        section = page[page.index("abs_error: worst views") :]
        section = section[section.index(f"<h3>{method}</h3>") :].split("</div>")[0]
        assert section.count("<img") == 1 and src in section and f"{scene} / {view}" in section
        image = _png(evaluated / "report" / src)
        folder = tree / method / scene
        render, gt = _png(folder / "renders" / f"{view}.png"), _png(folder / "gt" / f"{view}.png")
        # the render and the ground truth appear at their own size, pixel for pixel
        at_render, at_gt = _find(render, image), _find(gt, image)
        assert at_render is not None and at_gt is not None and at_render[0] == at_gt[0] and at_gt[1] > at_render[1]
        # the map tile: mean over RGB of |render - gt|, in jet, on its 2nd-98th percentile widened down to 0
        error = torch.from_numpy(np.abs(render.astype(np.float64) - gt).mean(axis=-1) / 255.0)
        coloured = apply_colormap(error.float(), "jet", *first_range(error, higher_is_better=False))
        y, x = at_gt
        x_map = x + (at_gt[1] - at_render[1])
        got = torch.from_numpy(image[y : y + SIZE[0], x_map : x_map + SIZE[1]].copy()).permute(2, 0, 1)
        assert int((got.int() - coloured.int()).abs().max()) <= 1  # float32 vs float64 percentiles: one level


def test_no_panels_with_panels_0(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    root = Path(shutil.copytree(tree / METHODS[1], tmp_path / "root" / METHODS[1]).parent)
    assert main(["eval", "--root", str(root), "--out", str(out), "--metrics", "abs_error", "--panels", "0",
                 "--quiet", "--device", "cpu"]) == 0  # fmt: skip
    assert not (out / "report" / "panels").exists()
    assert "worst views" not in (out / "report" / "index.html").read_text()
    assert len(list((out / "report" / "thumbs").rglob("abs_error-*.png"))) == len(SCENES) * len(VIEWS)


def test_negative_panels_is_an_error(tmp_path: Path, capsys) -> None:
    assert main(["eval", "--root", str(tmp_path), "--out", str(tmp_path / "o"), "--panels", "-1"]) == 1
    assert "--panels must be >= 0" in capsys.readouterr().err


def test_lpips_map_runs_with_random_weights_offline(tree: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    monkeypatch.setenv("SCENEMETRICS_HOME", str(tmp_path / "home"))
    root = Path(shutil.copytree(tree / METHODS[0], tmp_path / "root" / METHODS[0]).parent)
    out = tmp_path / "out"
    args = ["eval", "--root", str(root), "--out", str(out), "--metrics", "lpips,lpips_map", "--random-weights"]
    assert main([*args, "--quiet", "--device", "cpu"]) == 0
    doc = read_json(out / "results.json")
    for row in doc["scenes"]:
        # the same random backbone and the published linear layers: the lpips package's LPIPS equals torchmetrics'
        assert row["values"]["lpips_map"] == pytest.approx(row["values"]["lpips"], abs=1e-5)
    assert len(list((out / "report" / "panels").rglob("lpips_map-*.png"))) == 2 * len(SCENES)
