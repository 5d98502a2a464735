"""The HSS-2025 tube IoU (trimesh + manifold3d) and parity with the 2025 HSS code (hoho2025.metric_helper)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scenemetrics.wireframe import corner_prf, hss, iou, synthetic_houses
from scenemetrics.wireframe.hss2025 import edge_prism, prism_transform

needs_hss = pytest.mark.extra("hss")

FIXTURE = Path(__file__).parent / "data" / "hss2025_reference.json"
HEX_AREA = 3 * math.sqrt(3) / 2  # regular hexagon of circumradius 1


def _metric_helper():
    """hoho2025.metric_helper loaded from its file (the package __init__ imports webdataset and friends)."""
    spec = importlib.util.find_spec("hoho2025")
    path = Path(next(iter(spec.submodule_search_locations))) / "metric_helper.py"
    mod_spec = importlib.util.spec_from_file_location("hoho2025_metric_helper", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


@needs_hss
@pytest.mark.parametrize(
    ("direction", "factor"),
    [
        ((0.0, 0, 1), 1.0),
        ((1.0, 0, 0), 1.0),
        ((0.0, 1, 0), 1.0),
        ((1.0, 1, 0), 0.5),
        ((1.0, 1, 1), 2 / 3),
    ],
)
def test_sheared_prism_volume_factors(direction, factor):
    d = np.array(direction) / np.linalg.norm(direction)
    p1 = np.array([0.3, -0.2, 1.0])
    prism = edge_prism(p1, p1 + 2.0 * d, 0.5)
    # a primitive's .volume is the analytic cylinder's; the boolean engine sees the hexagonal mesh
    assert prism.to_mesh().volume == pytest.approx(HEX_AREA * 0.25 * 2.0 * factor, rel=1e-9)
    assert abs(np.linalg.det(prism_transform(p1, p1 + 2.0 * d)[:3, :3])) == pytest.approx(factor, rel=1e-12)


def test_short_edges_are_skipped():
    assert prism_transform([0, 0, 0], [0, 0, 1e-7]) is None


@needs_hss
def test_empty_and_disjoint_cases_return_zero():
    v = np.array([[0.0, 0, 0], [1, 0, 0]])
    assert iou(v, [], v, [[0, 1]], radius=0.5, mode="hss2025") == 0.0
    # only a too-short edge on the prediction side: no primitive left
    short = np.array([[0.0, 0, 0], [0, 0, 1e-8]])
    assert iou(short, [[0, 1]], v, [[0, 1]], radius=0.5, mode="hss2025") == 0.0
    assert iou(v + np.array([0, 0, 10]), [[0, 1]], v, [[0, 1]], radius=0.5, mode="hss2025") == 0.0
    assert iou(v, [[0, 1]], v, [[1, 0]], radius=0.5, mode="hss2025") == pytest.approx(1.0, abs=1e-6)


@needs_hss
def test_hss2025_iou_is_close_to_voxel_iou_for_an_axis_aligned_edge():
    # prisms of axis-aligned edges are not sheared; a parallel shift along the prism keeps IoU exact:
    # overlap 1.5 of length 2 -> 1.5 / 2.5
    v = np.array([[0.0, 0, 0], [2, 0, 0]])
    assert iou(v + np.array([0.5, 0, 0]), [[0, 1]], v, [[0, 1]], radius=0.25, mode="hss2025") == pytest.approx(
        0.6, abs=1e-9
    )


def test_frozen_hoho2025_corner_f1_needs_no_extra():
    for case in json.loads(FIXTURE.read_text())["cases"]:
        f1 = corner_prf(case["pred_vertices"], case["gt_vertices"], case["vert_thresh"]).f1
        assert f1 == pytest.approx(case["corner_f1"], abs=1e-12), case["name"]


@needs_hss
def test_frozen_hoho2025_outputs():
    doc = json.loads(FIXTURE.read_text())
    assert len(doc["cases"]) >= 10
    for case in doc["cases"]:
        pv, pe = np.array(case["pred_vertices"]), np.array(case["pred_edges"], dtype=np.int64)
        gv, ge = np.array(case["gt_vertices"]), np.array(case["gt_edges"], dtype=np.int64)
        res = hss(pv, pe, gv, ge, vert_thresh=case["vert_thresh"], edge_thresh=case["edge_thresh"])
        assert corner_prf(pv, gv, case["vert_thresh"]).f1 == pytest.approx(case["corner_f1"], abs=1e-12)
        assert res.f1 == pytest.approx(case["corner_f1"], abs=1e-12), case["name"]
        assert res.iou == pytest.approx(case["iou"], abs=1e-6), case["name"]
        assert res.hss == pytest.approx(case["hss"], abs=1e-6), case["name"]


@needs_hss
@pytest.mark.hoho2025
def test_live_parity_with_hoho2025():
    mh = _metric_helper()
    rng = np.random.default_rng(7)
    for k, (v, e) in enumerate(synthetic_houses(2, seed=9)):
        pv = v + rng.normal(0.0, 0.3, v.shape)
        pe = e[rng.permutation(len(e))[: len(e) - 2 - k]]
        thresh = (0.5, 0.3, 0.8)[k]
        assert corner_prf(pv, v, thresh).f1 == pytest.approx(mh.compute_ap_metrics(pv, v, thresh=thresh), abs=1e-12)
        ref_iou = mh.compute_mesh_iou_VOLUME(pv, pe, v, e, radius=thresh)
        assert iou(pv, pe, v, e, radius=thresh, mode="hss2025") == pytest.approx(ref_iou, abs=1e-6)
        ref = mh.hss(pv, pe, v, e, vert_thresh=thresh, edge_thresh=thresh)
        got = hss(pv, pe, v, e, vert_thresh=thresh, edge_thresh=thresh)
        assert got.hss == pytest.approx(float(ref.hss), abs=1e-6)
        assert got.f1 == pytest.approx(float(ref.f1), abs=1e-12)


def test_missing_extra_raises_import_error_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "trimesh", None)  # makes `import trimesh` raise ImportError
    v = np.array([[0.0, 0, 0], [1, 0, 0]])
    with pytest.raises(ImportError, match=r"scenemetrics\[hss\]"):
        iou(v, [[0, 1]], v, [[0, 1]], radius=0.5, mode="hss2025")
    with pytest.raises(ImportError, match="trimesh and manifold3d"):
        hss(v, [[0, 1]], v, [[0, 1]])


def test_package_import_does_not_import_trimesh_or_torch():
    code = (
        "import sys, scenemetrics.wireframe as w\n"
        "v, e = w.synthetic_house(0)\n"
        "w.wed(v, e, v, e); w.iou(v, e, v, e, 0.5); w.property_suite; w.hss\n"
        "print('trimesh' in sys.modules, 'torch' in sys.modules)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src})
    assert out.stdout.strip() == "False False", out.stderr
