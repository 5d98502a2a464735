"""Freeze outputs of the 2025 HSS code (PyPI ``hoho2025==0.2.2``, module ``hoho2025.metric_helper``) as a fixture.

Run from the repository root with hoho2025 installed (``pip install --no-deps hoho2025==0.2.2``; it needs numpy,
scipy, torch, trimesh and manifold3d)::

    PYTHONPATH=src python tests/wireframe/make_hss2025_fixture.py

It writes ``tests/wireframe/data/hss2025_reference.json``: the inputs of every case (so the fixture does not depend
on this library's generators) and hoho2025's ``compute_ap_metrics`` (corner F1), ``compute_mesh_iou_VOLUME`` and
``hss``. The package's ``__init__`` imports optional dependencies (webdataset, ...), so ``metric_helper.py`` is
loaded from its file.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from scenemetrics.wireframe import synthetic_house

OUT = Path(__file__).parent / "data" / "hss2025_reference.json"


def load_metric_helper():
    spec = importlib.util.find_spec("hoho2025")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("hoho2025 is not installed: pip install --no-deps hoho2025==0.2.2")
    path = Path(next(iter(spec.submodule_search_locations))) / "metric_helper.py"
    mod_spec = importlib.util.spec_from_file_location("hoho2025_metric_helper", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def cases() -> list[dict]:
    rng = np.random.default_rng(2025)
    out = []
    for k in range(6):
        v, e = synthetic_house(int(rng.integers(1 << 30)), annex=k % 2 == 0)
        pv = v + rng.normal(0.0, 0.25, v.shape)
        pe = e[rng.permutation(len(e))[: len(e) - 3]]
        if k >= 3:  # two extra vertices with one edge each
            extra = v[rng.choice(len(v), 2, replace=False)] + rng.normal(0.0, 1.0, (2, 3))
            pe = np.vstack([pe, [[len(pv), 0], [len(pv) + 1, 1]]])
            pv = np.vstack([pv, extra])
        out.append({"name": f"house{k}", "pred": (pv, pe), "gt": (v, e), "vert_thresh": 0.5, "edge_thresh": 0.5})
    v, e = synthetic_house(11)
    out.append({"name": "identity", "pred": (v, e), "gt": (v, e), "vert_thresh": 0.5, "edge_thresh": 0.5})
    out.append(
        {
            "name": "tight",
            "pred": (v + np.array([0.1, 0.0, 0.0]), e[:-5]),
            "gt": (v, e),
            "vert_thresh": 0.12,
            "edge_thresh": 0.2,
        }
    )
    out.append({"name": "disjoint", "pred": (v + 100.0, e), "gt": (v, e), "vert_thresh": 0.5, "edge_thresh": 0.5})
    diag = np.array([[0.0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 0, 2]])
    out.append(
        {
            "name": "sheared",
            "pred": (diag + np.array([0.1, 0.0, 0.05]), np.array([[0, 1], [1, 2], [0, 3]])),
            "gt": (diag, np.array([[0, 1], [1, 2], [0, 2], [2, 3]])),
            "vert_thresh": 0.5,
            "edge_thresh": 0.3,
        }
    )
    return out


def main() -> None:
    mh = load_metric_helper()
    records = []
    for case in cases():
        (pv, pe), (gv, ge) = case["pred"], case["gt"]
        res = mh.hss(pv, pe, gv, ge, vert_thresh=case["vert_thresh"], edge_thresh=case["edge_thresh"])
        records.append(
            {
                "name": case["name"],
                "pred_vertices": pv.tolist(),
                "pred_edges": pe.tolist(),
                "gt_vertices": gv.tolist(),
                "gt_edges": ge.tolist(),
                "vert_thresh": case["vert_thresh"],
                "edge_thresh": case["edge_thresh"],
                "corner_f1": float(mh.compute_ap_metrics(pv, gv, thresh=case["vert_thresh"])),
                "iou": float(mh.compute_mesh_iou_VOLUME(pv, pe, gv, ge, radius=case["edge_thresh"])),
                "hss": float(res.hss),
            }
        )
    doc = {
        "source": "hoho2025==0.2.2 (PyPI), hoho2025.metric_helper: compute_ap_metrics, compute_mesh_iou_VOLUME, hss",
        "script": "tests/wireframe/make_hss2025_fixture.py",
        "cases": records,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(records)} cases to {OUT}")


if __name__ == "__main__":
    main()
