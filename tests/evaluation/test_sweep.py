"""``scenemetrics agreement sweep``: the monotonicity table on metrics whose behaviour is known by construction (PSNR
under noise; an MSE declared higher-is-better; a constant), scene-level rows, resuming, and the command line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch

from scenemetrics import synthetic, viz
from scenemetrics.agreement.degrade import DEGRADATIONS, degrade
from scenemetrics.cli import main
from scenemetrics.evaluation.records import read_records
from scenemetrics.evaluation.sweep import SWEEP_LOG, SWEEP_RECORD, SweepConfig, discover_scenes, run_sweep, view_seed
from scenemetrics.image import read_image

from .conftest import read_json

PLUGIN = str(Path(__file__).with_name("sweep_plugin.py"))


def write_views(root: Path, scenes: int = 1, views: int = 3, size=(40, 48)) -> Path:
    for s in range(scenes):
        sc = synthetic.make_scene(num_train=2, num_novel=views, size=size, seed=s)
        folder = root / "views" if scenes == 1 else root / "views" / f"scene{s}"
        for i, v in enumerate(sc.novel_targets):
            viz.save_png(v, folder / f"v{i}.png")
        for i, t in enumerate(sc.train_views):
            viz.save_png(t, (root / "train" if scenes == 1 else root / "train" / f"scene{s}") / f"t{i}.png")
    return root / "views"


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = float(((a.double() - b.double()) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(1 / mse)


def test_psnr_under_noise_is_monotone_by_construction(tmp_path):
    views = write_views(tmp_path)
    out = tmp_path / "out"
    result = run_sweep(SweepConfig(views, out, metrics=("psnr",), degradations=("noise", "hue"), seed=3, quiet=True))
    s = result.table["psnr"]["noise"]
    # the noise is one normal field scaled by the level (nested levels), so PSNR falls at every level for every view
    assert s["monotone_fraction"] == 1.0 and s["n"] == 3 and s["unit"] == "view"
    # the rows are PSNR of each noisy view against its original, computed here from the documented seeds
    expected = []
    for name in ("v0", "v1", "v2"):
        image = read_image(views / f"{name}.png")
        row = [psnr(degrade(image[None], "noise", lv, seed=view_seed(3, "views", name))[0], image) for lv in range(4)]
        assert s["rows"][f"views/{name}"] == pytest.approx(row, rel=1e-5)
        expected.append(row)
    assert all(math.isinf(r[0]) for r in expected)
    ranks = scipy.stats.rankdata(np.array(expected).reshape(-1))  # +inf ranks first (unchanged views)
    rho = scipy.stats.spearmanr(np.tile(np.arange(4), 3), ranks).statistic
    assert s["spearman"] == pytest.approx(rho, abs=1e-12) and s["spearman"] < -0.9
    doc = read_json(out / "sweep.json")
    assert doc["metrics"]["psnr"]["noise"]["monotone_fraction"] == 1.0
    assert doc["metrics"]["psnr"]["higher_is_better"] is True and doc["config"]["params"]["noise"] == [0.02, 0.05, 0.1]
    csv = (out / "sweep.csv").read_text().splitlines()
    assert csv[0].startswith("metric,degradation,spearman,monotone_fraction,n,n_omitted,unit,mean_level0")
    assert any(line.startswith("psnr,noise,") and ",1,3,0,view," in line for line in csv)


def test_wrong_direction_constant_and_scene_rows(tmp_path):
    views = write_views(tmp_path, scenes=2)
    out = tmp_path / "out"
    metrics = ("sweep_mse_up", "sweep_scene_mse", "sweep_constant")
    result = run_sweep(SweepConfig(views, out, metrics=metrics, degradations=("saltpepper",), plugins=(PLUGIN,),
                                   levels=2, quiet=True))  # fmt: skip
    up = result.table["sweep_mse_up"]["saltpepper"]
    assert up["monotone_fraction"] == 0.0 and up["spearman"] > 0.9 and up["n"] == 6  # it grows: never "worse"
    scene = result.table["sweep_scene_mse"]["saltpepper"]
    assert scene["unit"] == "scene" and scene["n"] == 2 and scene["monotone_fraction"] == 1.0
    assert set(scene["rows"]) == {"scene0", "scene1"}
    # the scene value is the mean over the scene's views of the per-view MSE at that level
    per_view = up["rows"]
    for name in ("scene0", "scene1"):
        rows = [per_view[f"{name}/v{i}"] for i in range(3)]
        assert scene["rows"][name] == pytest.approx(np.mean(rows, axis=0).tolist(), rel=1e-9)
    const = result.table["sweep_constant"]["saltpepper"]
    assert math.isnan(const["spearman"]) and const["monotone_fraction"] == 0.0


def test_resume_skips_what_is_done_and_redoes_what_changed(tmp_path):
    views = write_views(tmp_path)
    out = tmp_path / "out"
    config = SweepConfig(views, out, metrics=("psnr", "sweep_mse_up"), degradations=("blur", "noise"), levels=2,
                         plugins=(PLUGIN,), quiet=True)  # fmt: skip
    first = run_sweep(config)
    assert first.units_run == 5 and first.units_done == 0  # level 0 + 2 degradations x 2 levels
    log = out / SWEEP_LOG
    assert len(read_records(log, SWEEP_RECORD)) == 5
    again = run_sweep(config)
    assert again.units_run == 0 and again.units_done == 5 and again.table == first.table
    # a run killed mid-way: the last line cut short; the rerun redoes that unit only
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:20])
    with pytest.warns(UserWarning, match="ignored 1 line"):  # the cut line is no longer the last one
        resumed = run_sweep(config)
    assert resumed.units_run == 2 and resumed.table == first.table
    # the cut line now sits inside the log: later reads skip it, saying so (as scenemetrics eval's log does)
    with pytest.warns(UserWarning, match="ignored 1 line"):
        assert len(read_records(log, SWEEP_RECORD)) == 5
    # a new seed redoes the noise units only (blur draws nothing)
    with pytest.warns(UserWarning, match="ignored 1 line"):
        reseeded = run_sweep(SweepConfig(**{**config.__dict__, "seed": 5}))
    assert reseeded.units_run == 2
    assert reseeded.table["psnr"]["blur"] == first.table["psnr"]["blur"]
    assert reseeded.table["psnr"]["noise"]["rows"] != first.table["psnr"]["noise"]["rows"]
    # a touched view changes the inputs: everything of that scene is redone
    (views / "v0.png").touch()
    with pytest.warns(UserWarning, match="ignored 1 line"):
        assert run_sweep(config).units_run == 5


def test_puzzlesim_needs_train_views_and_scores_against_them(tmp_path):
    views = write_views(tmp_path)
    out = tmp_path / "out"
    result = run_sweep(SweepConfig(views, out, metrics=("psnr", "puzzlesim"), degradations=("hue",), levels=1,
                                   random_weights=True, quiet=True))  # fmt: skip
    assert "--train-views" in result.unavailable["puzzlesim"] and "puzzlesim" not in result.table
    with pytest.raises(ValueError, match="no metric can run"):
        run_sweep(SweepConfig(views, out, metrics=("puzzlesim",), degradations=("hue",), quiet=True))
    with_refs = run_sweep(SweepConfig(views, tmp_path / "o2", metrics=("puzzlesim",), degradations=("hue",), levels=1,
                                      train_views=tmp_path / "train", random_weights=True, quiet=True))  # fmt: skip
    assert with_refs.table["puzzlesim"]["hue"]["n"] == 3 and not with_refs.errors


def test_scenes_and_train_views_are_found(tmp_path):
    views = write_views(tmp_path, scenes=2)
    scenes = discover_scenes(views, tmp_path / "train")
    assert [s.name for s in scenes] == ["scene0", "scene1"] and all(len(s.train) == 2 for s in scenes)
    assert list(scenes[0].views) == ["v0", "v1", "v2"]
    (tmp_path / "lonely").mkdir()
    with pytest.raises(ValueError, match="holds no image"):
        discover_scenes(tmp_path / "lonely")
    with pytest.raises(ValueError, match="has no folder for scene 'scene0'"):
        discover_scenes(views, tmp_path / "lonely")


def test_the_command_line(tmp_path, capsys):
    views = write_views(tmp_path)
    out = tmp_path / "out"
    base = ["agreement", "sweep", "--views", str(views), "--metrics", "psnr,ssim", "--out", str(out), "--quiet",
            "--device", "cpu"]  # fmt: skip
    args = [*base, "--degradations", "noise,blur", "--levels", "2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert re.search(r"psnr +noise +-0\.\d+ +100%", text)
    doc = json.loads((out / "sweep.json").read_text())
    assert set(doc["metrics"]) == {"psnr", "ssim"} and set(doc["metrics"]["ssim"]) >= {"noise", "blur"}
    assert main([*base, "--degradations", "fog"]) == 2
    assert "--degradations: unknown ['fog']" in capsys.readouterr().err
    assert main([*base, "--levels", "4"]) == 2
    assert main(["agreement", "sweep", "--views", str(tmp_path / "nope"), "--out", str(out), "--quiet"]) == 1


def test_known_degradations_list_matches_the_library():
    from scenemetrics.evaluation import sweep_cli

    assert tuple(DEGRADATIONS) == sweep_cli.DEGRADATION_NAMES


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    views = write_views(tmp_path)
    out = tmp_path / "out"
    args = ["agreement", "sweep", "--views", str(views), "--metrics", "psnr", "--degradations", "noise", "--levels",
            "2", "--out", str(out), "--quiet", "--plots"]  # fmt: skip
    assert main(args) == 0
    from PIL import Image

    with Image.open(out / "sweep.png") as im:
        assert im.size[0] > 300 and im.size[1] > 200
