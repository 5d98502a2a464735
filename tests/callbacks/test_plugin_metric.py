"""A third-party metric registered through the registry works alike in ``eval``, Lightning and nerfstudio."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.cli import main
from scenemetrics.evaluation.records import RESULTS_FILE, read_records
from scenemetrics.registry import adapter_for, load_plugins

PLUGIN = Path(__file__).with_name("toy_plugin.py")


@pytest.fixture(scope="module")
def toy():
    load_plugins([str(PLUGIN)], entry_points=False)
    import sys

    return sys.modules["scenemetrics_eval_plugin_toy_plugin"]


def _png(path: Path) -> torch.Tensor:
    with Image.open(path) as im:
        return torch.from_numpy(np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0).permute(2, 0, 1)


def _expected(renders, targets, refs) -> tuple[float, float]:
    colour = torch.stack(refs).mean(dim=(0, 2, 3))
    refs_score = np.mean([float((r.mean(dim=(1, 2)) - colour).abs().mean()) for r in renders])
    paired = np.mean([float((r - t).abs().mean()) for r, t in zip(renders, targets, strict=True)])
    return float(refs_score), float(paired)


def test_adapters_are_found_by_class(toy) -> None:
    refs, paired = toy.ToyReferenceColour(), toy.ToyPairedError()
    assert adapter_for(refs).name == "toy_refs" and adapter_for(paired, "anything").name == "toy_paired"
    assert adapter_for(paired).update_kind(paired) == "paired"  # not "references", although it has set_references


def test_plugin_in_eval(toy, tmp_path) -> None:
    from tests.evaluation.conftest import write_tree

    root = write_tree(tmp_path / "root")
    out = tmp_path / "out"
    args = ["eval", "--root", str(root), "--out", str(out), "--metrics", "toy_refs,toy_paired", "--plugin", str(PLUGIN)]
    assert main([*args, "--quiet", "--device", "cpu", "--methods", "m_noise", "--scenes", "alpha"]) == 0
    (record,) = read_records(out / RESULTS_FILE)
    unit = root / "m_noise" / "alpha"
    renders = [_png(p) for p in sorted((unit / "renders").glob("*.png"))]
    targets = [_png(unit / "gt" / p.name) for p in sorted((unit / "renders").glob("*.png"))]
    refs = [_png(p) for p in sorted((unit / "train").glob("*.png"))]
    want_refs, want_paired = _expected(renders, targets, refs)
    assert record["metrics"]["toy_refs"]["values"]["toy_refs"] == pytest.approx(want_refs, abs=1e-6)
    assert record["metrics"]["toy_paired"]["values"]["toy_paired"] == pytest.approx(want_paired, abs=1e-6)
    assert len(record["thumbs"]["toy_refs"]) == len(renders) and "toy_paired" not in record["thumbs"]


def _scene(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    refs = [torch.rand(3, 16, 16, generator=g) for _ in range(3)]
    renders = [torch.rand(3, 16, 16, generator=g) for _ in range(2)]
    targets = [torch.rand(3, 16, 16, generator=g) for _ in range(2)]
    return refs, renders, targets


def test_plugin_in_lightning(toy) -> None:
    pytest.importorskip("lightning")
    from scenemetrics.callbacks import SceneMetricsCallback

    refs, renders, targets = _scene()
    cb = SceneMetricsCallback(
        {"a": toy.ToyReferenceColour(), "b": toy.ToyPairedError()},
        eval_views=[0, 1],
        render_fn=lambda module, i: (renders[i], targets[i]),
        references=torch.stack(refs),
    )

    class Module(torch.nn.Module):
        device = torch.device("cpu")

    trainer = SimpleNamespace(global_step=3, is_global_zero=True, world_size=1, global_rank=0, callback_metrics={})
    trainer.loggers = []
    result = cb.evaluate(trainer, Module())
    want_refs, want_paired = _expected(renders, targets, refs)
    assert result.scalars["scenemetrics/a"] == pytest.approx(want_refs, abs=1e-6)
    assert result.scalars["scenemetrics/b"] == pytest.approx(want_paired, abs=1e-6)
    assert sorted(result.images) == [
        "scenemetrics/a/map/0",
        "scenemetrics/a/map/1",
        "scenemetrics/panel/0",  # render | target | abs error of the views with a target
        "scenemetrics/panel/1",
        "scenemetrics/panel_over_time/0",
    ]


@pytest.mark.nerfstudio
def test_plugin_in_nerfstudio(toy, monkeypatch) -> None:
    import importlib

    from tests.callbacks.test_nerfstudio import _Cameras, _Pipeline

    importlib.import_module("nerfstudio.configs.base_config")
    from nerfstudio.utils import writer

    from scenemetrics.callbacks import nerfstudio as nsmod

    logged: dict[str, float] = {}
    monkeypatch.setattr(writer, "put_scalar", lambda name, scalar, step: logged.__setitem__(name, scalar))
    monkeypatch.setattr(writer, "put_image", lambda name, image, step: logged.__setitem__(name, image))
    pipeline = _Pipeline()
    cfg = nsmod.SceneMetricsNerfstudioConfig(metrics=("toy_refs", "toy_paired"), num_eval_views=2, every_n_steps=5)
    nsmod.SceneMetricsTrainingCallback(pipeline, cfg).evaluate(5)

    dm = pipeline.datamanager
    refs = [dm.train_dataset.images[i].permute(2, 0, 1) for i in (0, 1, 2, 3, 4, 5)]  # 6 <= max_reference_views
    cams = dm.eval_dataset.cameras.camera_to_worlds
    outs = [pipeline.model.get_outputs_for_camera(_Cameras(cams[i : i + 1])) for i in (0, 2)]
    renders = [o["rgb"].clamp(0, 1).permute(2, 0, 1) for o in outs]
    targets = []
    for i, o in zip((0, 2), outs, strict=True):
        rgba = dm.eval_dataset.images[i]
        targets.append((rgba[..., :3] * rgba[..., 3:] + o["background"] * (1 - rgba[..., 3:])).permute(2, 0, 1))
    want_refs, want_paired = _expected(renders, targets, refs)
    assert logged["scenemetrics/toy_refs"] == pytest.approx(want_refs, abs=1e-5)
    assert logged["scenemetrics/toy_paired"] == pytest.approx(want_paired, abs=1e-5)
    assert "scenemetrics/toy_refs/map/0" in logged
