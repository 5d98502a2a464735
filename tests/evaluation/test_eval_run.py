"""`scenemetrics eval` in one process: the table against independent computations, resuming, failures."""

from __future__ import annotations

import fcntl
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchmetrics
from PIL import Image
from torchmetrics.functional.image import structural_similarity_index_measure

from scenemetrics.cli import main
from scenemetrics.evaluation import EvalConfig, run_evaluation
from scenemetrics.evaluation.records import RESULTS_FILE, append_record, read_records
from scenemetrics.evaluation.states import pooled_values
from scenemetrics.puzzlesim import puzzle_similarity, random_checkpoint
from scenemetrics.registry import register_metric, unregister_metric

from .conftest import METHODS, PLUGIN, SCENES, VIEWS, read_csv, read_json, read_jsonl, read_png

ALL = "psnr,ssim,lpips,puzzlesim,standin"


def _eval(root: Path, out: Path, *extra: str, metrics: str = ALL, log: Path | None = None) -> int:
    args = ["eval", "--root", str(root), "--out", str(out), "--metrics", metrics, "--plugin", str(PLUGIN)]
    args += ["--random-weights", "--lpips-net", "squeeze", "--quiet", "--device", "cpu"]
    if log is not None:
        args += ["--metric-option", f"standin.log={log}"]
    return main([*args, *extra])


def _log_units(log: Path) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def baseline(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    out = tmp_path_factory.mktemp("baseline") / "out"
    log = out.parent / "standin.log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCENEMETRICS_OFFLINE", "1")
        rc = _eval(tree, out, log=log)
    return out, log, rc


def _psnr(render: np.ndarray, gt: np.ndarray) -> float:
    mse = float(((render - gt) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(1.0 / mse)


def _reference(tree: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Per-view scores computed independently of the runner (float64 numpy, torchmetrics functional, PuzzleSim)."""
    weights = random_checkpoint("squeezenet1_1", tree.parent / "ref_sq.pth")  # what --random-weights builds (seed 0)
    ref: dict[tuple[str, str], dict[str, list[float]]] = {}
    for method in METHODS:
        for scene in SCENES:
            d = tree / method / scene
            refs = [torch.from_numpy(read_png(p)).permute(2, 0, 1).float() for p in sorted((d / "train").iterdir())]
            scores: dict[str, list[float]] = {"psnr": [], "ssim": [], "standin": [], "puzzlesim": []}
            for v in VIEWS:
                r, g = read_png(d / "renders" / f"{v}.png"), read_png(d / "gt" / f"{v}.png")
                rt = torch.from_numpy(r).permute(2, 0, 1)[None].float()
                gtt = torch.from_numpy(g).permute(2, 0, 1)[None].float()
                scores["psnr"].append(_psnr(r, g))
                scores["standin"].append(float(np.abs(r - g).mean()))
                # torchmetrics' SSIM computed in float64: its definition without float32 rounding (its float32 run
                # is 1.4e-5 off on the noisy views; the evaluation's separable filter is within 6e-7)
                ssim64 = structural_similarity_index_measure(rt.double(), gtt.double(), data_range=1.0)
                scores["ssim"].append(float(ssim64))
                scores["puzzlesim"].append(float(puzzle_similarity(rt, refs, weights_path=weights)[0]))
            ref[(method, scene)] = scores
    return ref


def test_table_matches_independent_computations(baseline, tree):
    out, log, rc = baseline
    assert rc == 0
    rows = read_csv(out / "results.csv")
    assert [(r["method"], r["scene"]) for r in rows] == [(m, s) for m in METHODS for s in SCENES]
    assert list(rows[0]) == ["method", "scene", "psnr", "ssim", "lpips", "puzzlesim", "standin"]
    ref = _reference(tree)
    for row in rows:
        scores = ref[(row["method"], row["scene"])]
        for col, tol in (("psnr", 1e-4), ("ssim", 1e-5), ("standin", 1e-6), ("puzzlesim", 1e-5)):
            assert float(row[col]) == pytest.approx(float(np.mean(scores[col])), rel=tol, abs=tol), (row, col)
    clean = [r for r in rows if r["method"] == "m_clean"]
    assert all(float(r["psnr"]) == math.inf and float(r["lpips"]) == 0.0 and float(r["ssim"]) == 1.0 for r in clean)
    assert all(float(r["lpips"]) > 0 for r in rows if r["method"] != "m_clean")

    doc = read_json(out / "results.json")
    assert doc["random_weights"] is True and doc["columns"] == ["psnr", "ssim", "lpips", "puzzlesim", "standin"]
    assert doc["metrics"]["lpips"]["higher_is_better"] is False and doc["metrics"]["psnr"]["higher_is_better"]
    per_scene = {(s["method"], s["scene"]): s for s in doc["scenes"]}
    leaderboard = read_csv(out / "leaderboard.csv")
    assert [r["method"] for r in leaderboard] == list(METHODS)
    for row in leaderboard:
        m = row["method"]
        assert row["scenes"] == "2"
        for col in ("ssim", "lpips", "puzzlesim", "standin"):
            scene_values = [float(r[col]) for r in rows if r["method"] == m]
            assert float(row[col]) == pytest.approx(np.mean(scene_values), rel=1e-6), (m, col)
            assert row[f"{col}_n"] == "2"
            # pooled over all views of the method: every view has the same weight
            views = [v[col] for s in SCENES for v in per_scene[(m, s)]["per_view"][col].values()]
            assert float(row[f"{col}_pooled"]) == pytest.approx(np.mean(views), rel=1e-5), (m, col)
        if m != "m_clean":
            views = [
                _psnr(read_png(tree / m / s / "renders" / f"{v}.png"), read_png(tree / m / s / "gt" / f"{v}.png"))
                for s in SCENES
                for v in VIEWS
            ]
            assert float(row["psnr_pooled"]) == pytest.approx(np.mean(views), rel=1e-4)
    # every view was computed exactly once; every unit committed once with its states and thumbnails
    assert sorted(_log_units(log)) == sorted(f"{m}/{s}" for m in METHODS for s in SCENES for _ in VIEWS)
    records = read_jsonl(out / RESULTS_FILE)
    assert len(records) == 6 and len({r["run"] for r in records}) == 1
    for rec in records:
        assert (out / rec["states"]).is_file()
        assert [t["view"] for t in rec["thumbs"]["puzzlesim"]] == list(VIEWS)
        assert all((out / t["file"]).is_file() for t in rec["thumbs"]["puzzlesim"])
        assert {c["status"] for c in rec["metrics"].values()} == {"ok"}


def test_rerun_skips_everything_done(baseline, tmp_path, tree):
    out = Path(shutil.copytree(baseline[0], tmp_path / "out"))
    before = (out / RESULTS_FILE).read_text()
    log = tmp_path / "again.log"
    assert _eval(tree, out, log=log) == 0
    assert _log_units(log) == [] and (out / RESULTS_FILE).read_text() == before
    assert read_csv(out / "results.csv") == read_csv(baseline[0] / "results.csv")
    assert read_csv(out / "leaderboard.csv") == read_csv(baseline[0] / "leaderboard.csv")


def test_added_metric_changed_input_and_force(copy_tree, tmp_path):
    root = copy_tree()
    out, log = tmp_path / "out", tmp_path / "s.log"
    assert _eval(root, out, metrics="standin", log=log) == 0
    assert len(_log_units(log)) == 12
    log.unlink()
    assert _eval(root, out, metrics="standin,psnr", log=log) == 0
    assert _log_units(log) == []  # only psnr was computed
    new = read_jsonl(out / RESULTS_FILE)[6:]
    assert len(new) == 6 and all(set(r["metrics"]) == {"psnr"} for r in new)
    assert all(r["psnr"] and r["standin"] for r in read_csv(out / "results.csv"))
    # a touched input file invalidates its unit only
    render = root / "m_art" / "alpha" / "renders" / "v1.png"
    st = render.stat()
    os.utime(render, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert _eval(root, out, metrics="standin,psnr", log=log) == 0
    assert _log_units(log) == ["m_art/alpha"] * 2
    log.unlink()
    assert _eval(root, out, "--force", metrics="standin", log=log) == 0
    assert len(_log_units(log)) == 12


def test_failures_are_recorded_and_the_rest_continues(copy_tree, tmp_path, capsys):
    root = copy_tree()
    bad = root / "m_bad"
    shutil.copytree(root / "m_art", bad)
    Image.new("RGB", (32, 24)).save(bad / "alpha" / "gt" / "v0.png")  # size differs from the render
    (bad / "beta" / "renders" / "v1.png").write_bytes(b"not a png")
    out, log = tmp_path / "out", tmp_path / "s.log"
    rc = _eval(root, out, metrics="psnr,puzzlesim,standin", log=log)
    assert rc == 1
    err = capsys.readouterr().err
    assert "result(s) failed" in err and "a rerun retries the failed ones" in err
    doc = read_json(out / "results.json")
    status = {(s["method"], s["scene"]): s["status"] for s in doc["scenes"]}
    assert status[("m_bad", "alpha")] == {"psnr": "error", "puzzlesim": "ok", "standin": "error"}
    assert status[("m_bad", "beta")] == {"psnr": "error", "puzzlesim": "error", "standin": "error"}
    assert all(v == "ok" for k, st in status.items() if k[0] != "m_bad" for v in st.values())
    messages = {(p["scene"], p["metric"]): p["message"] for p in doc["problems"]}
    assert "differ in size" in messages[("alpha", "psnr")] and "view 'v0'" in messages[("alpha", "psnr")]
    assert "view 'v1'" in messages[("beta", "standin")]
    lb = {r["method"]: r for r in doc["leaderboard"]}
    assert lb["m_bad"]["count"]["psnr"] == 0 and lb["m_bad"]["count"]["puzzlesim"] == 1
    assert lb["m_art"]["count"]["psnr"] == 2
    # a rerun retries only the failed (unit, metric) pairs
    log.unlink()
    assert _eval(root, out, metrics="psnr,puzzlesim,standin", log=log) == 1
    # m_bad/alpha fails the size check before its first update; m_bad/beta updates v0, then v1 fails to load
    assert _log_units(log) == ["m_bad/beta"]
    new = read_jsonl(out / RESULTS_FILE)[8:]
    assert {(r["method"], r["scene"]): sorted(r["metrics"]) for r in new} == {
        ("m_bad", "alpha"): ["psnr", "standin"],
        ("m_bad", "beta"): ["psnr", "puzzlesim", "standin"],
    }


def test_missing_inputs_are_skipped_with_a_warning(copy_tree, tmp_path):
    root = copy_tree()
    shutil.rmtree(root / "m_noise" / "beta" / "train")
    shutil.rmtree(root / "m_art" / "alpha" / "gt")
    out = tmp_path / "out"
    with pytest.warns(UserWarning) as caught:
        assert _eval(root, out, metrics="psnr,puzzlesim") == 0
    text = " ".join(str(w.message) for w in caught)
    assert "puzzlesim skipped for 1 unit(s) (m_noise/beta): no training views" in text
    assert "psnr skipped for 1 unit(s) (m_art/alpha): no ground-truth views" in text
    lb = {r["method"]: r for r in read_csv(out / "leaderboard.csv")}
    assert lb["m_noise"]["puzzlesim_n"] == "1" and lb["m_art"]["psnr_n"] == "1"
    rows = {(r["method"], r["scene"]): r for r in read_csv(out / "results.csv")}
    assert rows[("m_art", "alpha")]["psnr"] == "" and rows[("m_art", "alpha")]["puzzlesim"] != ""
    lines = len(read_jsonl(out / RESULTS_FILE))
    assert _eval(root, out, metrics="psnr,puzzlesim") == 0  # skipped cells count as done
    assert len(read_jsonl(out / RESULTS_FILE)) == lines


def test_usage_errors(tree, tmp_path, capsys):
    out = tmp_path / "out"
    assert _eval(tree, out, metrics="psnr,no_such") == 1
    assert "unknown metric 'no_such'; known metrics: psnr, ssim, lpips, puzzlesim" in capsys.readouterr().err
    # a malformed or unknown metric option is a usage error (exit 2) naming the metric, the key and the valid keys
    assert _eval(tree, out, "--metric-option", "psnr-no-dot", metrics="psnr") == 2
    assert "METRIC.KEY=VALUE" in capsys.readouterr().err
    assert _eval(tree, out, "--metric-option", "nosuch.k=1", metrics="psnr") == 2
    assert "unknown metric 'nosuch'" in capsys.readouterr().err
    assert _eval(tree, out, "--metric-option", "puzzlesim.screening=on", metrics="puzzlesim") == 2
    err = capsys.readouterr().err
    assert "metric 'puzzlesim' has no option 'screening'; its options: backbone, weights, layers" in err
    assert _eval(tree, out, "--metric-option", "puzzlesim.layer=[2,3]", metrics="puzzlesim") == 2  # misspelled
    assert "has no option 'layer';" in capsys.readouterr().err
    assert _eval(tree, out, "--metric-option", "puzzlesim.layers=two", metrics="puzzlesim") == 2
    assert "`puzzlesim.layers` must be a list of ints; received 'two'" in capsys.readouterr().err
    assert _eval(tree, out, "--osim-conf", "1.5", metrics="osim") == 2
    assert "`osim.conf` must be a finite number in [0, 1]; received 1.5" in capsys.readouterr().err
    assert _eval(tree, out, "--metric-option", "psnr.x=1", metrics="psnr") == 2
    assert "metric 'psnr' has no option 'x'; it takes no options" in capsys.readouterr().err
    assert _eval(tree, out, "--thumbnails", "-1", metrics="psnr") == 1
    assert _eval(tree, out, "--layout", "colmap", metrics="psnr") == 2
    assert _eval(tree / "missing", out, metrics="psnr") == 1
    assert "`root`" in capsys.readouterr().err
    assert not (out / RESULTS_FILE).exists()


def test_an_unexpected_failure_fails_only_its_unit(tree, tmp_path, monkeypatch):
    from scenemetrics.evaluation import unit as unit_module

    real = unit_module.evaluate_unit

    def flaky(unit, *args, **kwargs):
        if unit.key == "m_art/beta":
            raise RuntimeError("boom")
        return real(unit, *args, **kwargs)

    monkeypatch.setattr(unit_module, "evaluate_unit", flaky)
    out = tmp_path / "out"
    assert _eval(tree, out, metrics="psnr,standin") == 1
    status = {(s["method"], s["scene"]): s["status"] for s in read_json(out / "results.json")["scenes"]}
    assert status.pop(("m_art", "beta")) == {"psnr": "error", "standin": "error"}
    assert all(st == {"psnr": "ok", "standin": "ok"} for st in status.values())


def test_unavailable_metric_warns_and_the_others_run(tree, tmp_path):
    register_metric("needs_x_t", lambda cfg: None, requires=lambda cfg: 'needs x: pip install "scenemetrics[x]"')
    try:
        out = tmp_path / "out"
        with pytest.warns(UserWarning, match=r"metric 'needs_x_t' is unavailable .*scenemetrics\[x\]"):
            assert _eval(tree, out, metrics="psnr,needs_x_t") == 0
        doc = read_json(out / "results.json")
        assert doc["unavailable"] == {"needs_x_t": 'needs x: pip install "scenemetrics[x]"'}
        assert doc["columns"] == ["psnr"]
        assert "needs_x_t" in (out / "report" / "index.html").read_text()
        assert _eval(tree, tmp_path / "out2", metrics="needs_x_t") == 1  # nothing left to run
    finally:
        unregister_metric("needs_x_t")


def test_without_lightning(tree, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "lightning", None)
    monkeypatch.setitem(sys.modules, "lightning.fabric", None)
    assert _eval(tree, tmp_path / "out", "--methods", "m_art", metrics="psnr") == 0  # one process needs no Fabric
    assert len(read_csv(tmp_path / "out" / "results.csv")) == 2
    assert _eval(tree, tmp_path / "out2", "--devices", "2", metrics="psnr") == 1
    assert 'pip install "scenemetrics[lightning]"' in capsys.readouterr().err


def test_only_the_program_preloads_with_the_collector_paused(tree, tmp_path, monkeypatch):
    """`scenemetrics eval` as the program imports torch and torchmetrics first with the garbage collector paused (and
    freezes what exists); a Python caller of main() keeps its collector as it is."""
    import gc

    from scenemetrics import cliutils

    calls = []
    monkeypatch.setattr(cliutils, "preload", lambda *modules: calls.append(modules))
    assert _eval(tree, tmp_path / "out", "--methods", "m_clean", metrics="psnr") == 0
    assert calls == []
    argv = ["scenemetrics", "eval", "--root", str(tree), "--out", str(tmp_path / "out2"), "--metrics", "psnr"]
    monkeypatch.setattr(sys, "argv", [*argv, "--methods", "m_clean", "--quiet", "--device", "cpu"])
    assert main() == 0
    assert calls == [("torch", "torchmetrics", "scenemetrics.evaluation.runner")]
    monkeypatch.undo()
    gc.unfreeze()
    try:
        cliutils.preload("json", "no_such_module_for_scenemetrics")  # a missing module is left to the command
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_several_cpu_processes_are_forked_unless_told_otherwise(monkeypatch):
    """`auto` becomes ddp_fork only for several CPU processes of one Linux machine that no launcher started."""
    from scenemetrics.evaluation.processes import fabric_strategy

    def strategy(accelerator="cpu", devices=2, **kwargs):
        config = EvalConfig(root="r", out="o", devices=devices, **kwargs)
        return fabric_strategy(config, accelerator, devices)

    monkeypatch.setattr(sys, "platform", "linux")
    for name in ("WORLD_SIZE", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    assert strategy() == "ddp_fork"
    assert strategy(strategy="ddp") == "ddp" and strategy(strategy="ddp_spawn") == "ddp_spawn"  # as asked
    assert (
        strategy(accelerator="cuda") == "auto" and strategy(devices=1) == "auto" and strategy(devices="auto") == "auto"
    )
    assert strategy(num_nodes=2) == "auto"
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    assert strategy(accelerator="auto") == "auto"  # Fabric would pick the GPU
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert strategy(accelerator="auto") == "ddp_fork"
    monkeypatch.setenv("WORLD_SIZE", "4")  # torchrun started the processes
    assert strategy() == "auto"
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert strategy() == "auto"


@pytest.mark.extra("lightning")
def test_multi_process_from_inside_python_is_refused(tree, tmp_path, capsys):
    assert _eval(tree, tmp_path / "out", "--devices", "2", "--strategy", "ddp", metrics="psnr") == 1
    assert "re-running this program's command line" in capsys.readouterr().err


def test_dry_run_plans_without_writing(tree, tmp_path, capsys):
    assert _eval(tree, tmp_path / "out", "--dry-run", "--methods", "m_art", metrics="psnr") == 0
    printed = capsys.readouterr().out
    assert "m_art/alpha [scenemetrics, 2 views]: psnr" in printed and "m_art/beta" in printed
    assert not (tmp_path / "out" / RESULTS_FILE).exists()


def test_a_second_writer_is_refused(tree, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".eval.lock", "w") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert _eval(tree, out, metrics="psnr") == 1
    assert "another `scenemetrics eval` is writing" in capsys.readouterr().err


def test_rgba_images_composited_or_alpha_dropped(tmp_path):
    scene = tmp_path / "root" / "m" / "s"
    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[:4, ..., 3] = 255  # top half opaque red, bottom half transparent
    for sub in ("renders", "gt"):
        (scene / sub).mkdir(parents=True)
    Image.fromarray(rgba).save(scene / "renders" / "a.png")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(scene / "gt" / "a.png")
    out = tmp_path / "o1"
    assert _eval(tmp_path / "root", out, metrics="standin") == 0
    rec = read_jsonl(out / RESULTS_FILE)[0]
    assert any("alpha channel that was dropped" in w for w in rec["warnings"])
    assert rec["metrics"]["standin"]["values"]["standin"] == pytest.approx(200 / 255 / 3, rel=1e-6)
    out = tmp_path / "o2"
    assert _eval(tmp_path / "root", out, "--background", "white", metrics="standin") == 0
    value = read_jsonl(out / RESULTS_FILE)[0]["metrics"]["standin"]["values"]["standin"]
    # top half: red (200, 0, 0) vs black; bottom half: white vs black
    assert value == pytest.approx((0.5 * 200 / 255 / 3) + 0.5 * 1.0, rel=1e-6)


def test_commit_log_tolerates_a_cut_line(tmp_path):
    path = tmp_path / RESULTS_FILE
    append_record(path, {"format": "scenemetrics.eval.record/1", "method": "a", "scene": "s", "metrics": {}})
    with open(path, "a") as f:
        f.write('{"format": "scenemetrics.eval.record/1", "meth')  # a kill during the write
    assert [r["method"] for r in read_records(path)] == ["a"]
    append_record(path, {"format": "scenemetrics.eval.record/1", "method": "b", "scene": "s", "metrics": {}})
    with pytest.warns(UserWarning, match="ignored 1 line"):
        assert [r["method"] for r in read_records(path)] == ["a", "b"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: torchmetrics.image.PeakSignalNoiseRatio(data_range=1.0, dim=(1, 2, 3)),
        lambda: torchmetrics.image.PeakSignalNoiseRatio(data_range=1.0),
        lambda: torchmetrics.image.StructuralSimilarityIndexMeasure(data_range=1.0),
        lambda: torchmetrics.MeanAbsoluteError(),
        lambda: torchmetrics.aggregation.MaxMetric(),
    ],
)
def test_pooled_values_equal_one_metric_over_all_updates(build):
    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(n, 3, 16, 16, generator=g), torch.rand(n, 3, 16, 16, generator=g)) for n in (1, 3, 2)]
    whole = build()
    states = []
    for preds, target in batches:
        unit = build()
        if isinstance(whole, torchmetrics.aggregation.MaxMetric):
            whole.update(preds.mean())
            unit.update(preds.mean())
        else:
            whole.update(preds, target)
            unit.update(preds, target)
        unit.compute()
        states.append({k: v.clone() if isinstance(v, torch.Tensor) else list(v) for k, v in unit.metric_state.items()})
    metric = build()
    pooled = pooled_values(metric, states, "m")["m"]
    assert pooled == pytest.approx(float(whole.compute()), rel=1e-6)
    fresh = build().metric_state  # the metric is reset afterwards
    for key, value in metric.metric_state.items():
        assert value == [] if isinstance(value, list) else torch.equal(value, fresh[key])


def test_config_object_api(tree, tmp_path):
    """The library entry point (what the CLI calls) returns a summary on rank 0."""
    summary = run_evaluation(
        EvalConfig(root=tree, out=tmp_path / "out", metrics=("psnr",), methods=("m_clean",), quiet=True, device="cpu")
    )
    assert summary.evaluated == 2 and summary.failures == [] and summary.files["report"].is_file()
    doc = read_json(summary.files["results.json"])
    assert doc["leaderboard"][0]["mean"]["psnr"] == math.inf
