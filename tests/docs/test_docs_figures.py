"""Every figure the pages show is made by ``docs/gen_figures.py`` and is as fresh as that script."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from PIL import Image

from .helpers import DOCS, load_docs_module

MANIFEST = DOCS / "figures" / "MANIFEST.json"


def _referenced() -> set[str]:
    names = set()
    for page in DOCS.rglob("*.md"):
        names |= set(re.findall(r"figures/([\w.-]+\.(?:png|md))", page.read_text()))
    return names


def test_every_referenced_figure_is_generated_and_unchanged_since():
    manifest = json.loads(MANIFEST.read_text())
    referenced = _referenced()
    assert {"puzzlesim_panel.png", "osim_overlay.png", "eval_report.png", "tensorboard_images.png",
            "openlex3d_categories.png", "wireframe_properties.md"} <= referenced  # fmt: skip
    assert sorted(referenced - set(manifest["figures"])) == [], "a page shows a figure gen_figures.py does not make"
    for name in referenced:
        digest = hashlib.sha256((DOCS / "figures" / name).read_bytes()).hexdigest()
        assert digest == manifest["figures"][name]["sha256"], f"{name} was edited by hand; rerun docs/gen_figures.py"


def test_figures_come_from_the_current_script():
    manifest = json.loads(MANIFEST.read_text())
    gen = load_docs_module("gen_figures.py")
    assert manifest["generator_sha256"] == gen.generator_hash(), "gen_figures.py changed: rerun it (all figures)"


@pytest.mark.slow  # runs the OpenLex3D figure again (about 10 s)
def test_a_regenerated_figure_matches_the_committed_one(tmp_path, monkeypatch):
    gen = load_docs_module("gen_figures.py")
    monkeypatch.setattr(gen, "FIGURES", tmp_path)
    assert gen.openlex3d_figure(tmp_path / "work") == ["openlex3d_categories.png"]
    fresh = np.asarray(Image.open(tmp_path / "openlex3d_categories.png").convert("RGB"), dtype=np.float64)
    committed = np.asarray(Image.open(DOCS / "figures" / "openlex3d_categories.png").convert("RGB"), dtype=np.float64)
    assert fresh.shape == committed.shape
    assert np.abs(fresh - committed).mean() < 1.0, "the code's output changed: rerun docs/gen_figures.py"
