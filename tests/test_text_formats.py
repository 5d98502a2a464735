"""Every text format scenemetrics reads or writes, round-tripped under the NumPy that is installed (1 or 2).

NumPy 2 changed ``repr`` of scalars (``repr(np.float64(0.5)) == 'np.float64(0.5)'``), so a number that reaches a file
or a message through ``repr`` is no longer a number. Files here are written the way a user's NumPy code writes them
(``str``/f-strings of NumPy scalars, ``np.savetxt``, ``json.dumps`` of ``tolist()``), read back with the library's
readers, and compared with the values written; the library's writers get NumPy scalars and must write plain numbers.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from scenemetrics import jsonio

SCALARS = [np.float64(0.1), np.float32(0.25), np.float16(-1.5), np.int64(-3), np.int32(7), np.uint8(200)]
RNG = np.random.default_rng(0)


def test_numpy_repr_is_what_this_file_guards_against():
    # documents the installed NumPy's behaviour; the tests below pass under both
    expected = "np.float64(0.5)" if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else "0.5"
    assert repr(np.float64(0.5)) == expected


def _no_numpy_repr(text: str) -> None:
    assert "np." not in text and "float64(" not in text and "array(" not in text, text[:300]


# ---------------------------------------------------------------------------------------------- writers


def test_write_json_writes_plain_numbers_for_numpy_scalars_arrays_and_tensors(tmp_path):
    obj = {
        "scalars": SCALARS,
        "bool": np.bool_(True),
        "array": np.arange(3, dtype=np.float32) / 4,
        "tensor": torch.tensor(0.75),
        "nan": np.float64("nan"),
        "nested": {"inf": np.float32("inf"), "pair": (np.int64(1), np.float64(2.5))},
    }
    path = jsonio.write_json(tmp_path / "out.json", obj)
    text = path.read_text()
    _no_numpy_repr(text)
    back = jsonio.restore(json.loads(text))
    assert back["scalars"] == [0.1, 0.25, -1.5, -3, 7, 200]
    assert back["bool"] is True and back["array"] == [0.0, 0.25, 0.5] and back["tensor"] == 0.75
    assert np.isnan(back["nan"]) and back["nested"] == {"inf": float("inf"), "pair": [1, 2.5]}


def test_agreement_table_files_hold_plain_numbers(tmp_path):
    from scenemetrics.cli import main

    items = [f"v{i}" for i in range(8)]
    human = RNG.uniform(1, 5, len(items))
    scores = tmp_path / "scores.csv"
    with open(scores, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item", "metric", "score", "higher_is_better"])
        for it, h in zip(items, human, strict=True):
            w.writerow([it, "psnr", f"{np.float64(h * 3 + RNG.normal())}", "true"])  # str() of a NumPy scalar
    mos = tmp_path / "human.csv"
    with open(mos, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item", "human"])
        w.writerows([it, np.float32(h)] for it, h in zip(items, human, strict=True))
    out = tmp_path / "out"
    assert main(["agreement", "table", "--scores", str(scores), "--human", str(mos), "--out", str(out), "--quiet"]) == 0
    for name in ("agreement.json", "agreement.csv"):
        _no_numpy_repr((out / name).read_text())
    table = json.loads((out / "agreement.json").read_text())
    assert isinstance(table, dict) and table
    with open(out / "agreement.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(float(v) == float(v) for r in rows for k, v in r.items() if k not in ("metric",) and v)


# ---------------------------------------------------------------------------------------------- readers


def test_building3d_obj_and_xyz_written_from_numpy_values(tmp_path):
    from scenemetrics.wireframe.formats import read_obj_wireframe, read_xyz_points

    vertices = RNG.normal(size=(5, 3))
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    lines = [f"v {x} {y} {z}" for x, y, z in vertices]  # f-strings of NumPy scalars: str(), valid under 1 and 2
    lines += [f"l {i + 1} {j + 1}" for i, j in edges]
    (tmp_path / "h.obj").write_text("\n".join(lines) + "\n")
    w = read_obj_wireframe(tmp_path / "h.obj")
    np.testing.assert_array_equal(w.vertices, vertices)  # str() of a float64 round-trips exactly
    assert w.edges.tolist() == edges.tolist()
    np.savetxt(tmp_path / "p.xyz", vertices)
    np.testing.assert_array_equal(read_xyz_points(tmp_path / "p.xyz"), vertices)


def test_s23dr_json_lines_written_from_numpy_values(tmp_path):
    from scenemetrics.wireframe.formats import read_s23dr

    vertices = RNG.normal(size=(4, 3)).astype(np.float32)
    records = [{"order_id": np.int64(12), "wf_vertices": vertices.tolist(), "wf_edges": [[0, 1], [2, 3]]}]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r, default=int) for r in records) + "\n")
    houses = read_s23dr(tmp_path / "s.jsonl")
    assert list(houses) == ["12"]
    np.testing.assert_array_equal(houses["12"].vertices, vertices.astype(np.float64))


@pytest.mark.parametrize("kind", ["ply", "pcd"])
def test_ascii_point_clouds_written_from_numpy_values(tmp_path, kind):
    from scenemetrics.openlex3d import read_point_cloud

    points = RNG.normal(size=(6, 3))
    body = "\n".join(" ".join(str(v) for v in p) for p in points) + "\n"
    if kind == "ply":
        header = f"ply\nformat ascii 1.0\nelement vertex {np.int64(len(points))}\n"
        header += "property double x\nproperty double y\nproperty double z\nend_header\n"
    else:
        header = (
            "VERSION 0.7\nFIELDS x y z\nSIZE 8 8 8\nTYPE F F F\nCOUNT 1 1 1\n"
            f"WIDTH {np.int64(len(points))}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {len(points)}\nDATA ascii\n"
        )
    path = tmp_path / f"cloud.{kind}"
    path.write_text(header + body)
    np.testing.assert_array_equal(read_point_cloud(path), points)


def test_agreement_csv_and_json_inputs_written_from_numpy_values(tmp_path):
    from scenemetrics.agreement.io import read_human, read_scores

    values = RNG.uniform(0, 1, 4)
    with open(tmp_path / "s.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item", "metric", "score"])
        w.writerows([f"i{k}", "m", v] for k, v in enumerate(values))  # csv writes str() of each NumPy scalar
    got = read_scores(tmp_path / "s.csv")["m"]
    np.testing.assert_array_equal(got.scores, values)
    (tmp_path / "h.json").write_text(json.dumps({"human": {f"i{k}": float(v) for k, v in enumerate(values)}}))
    assert read_human(tmp_path / "h.json") == {f"i{k}": float(v) for k, v in enumerate(values)}


def test_eval_cameras_json_written_from_numpy_values(tmp_path):
    from scenemetrics.evaluation.layout import read_cameras

    c2w = np.eye(4)
    c2w[:3, 3] = RNG.normal(size=3)
    doc = {
        "views": {
            "r_000": {"source": "a.png", "pose": np.array([10.0, -20.0, 0.5]).tolist()},
            "r_001": {
                "source": "a.png",
                "source_camera": {"polar_deg": 60.0, "azimuth_deg": 0.0, "radius": 2.5},
                "target_camera": {"c2w": c2w.tolist()},
            },
        }
    }
    (tmp_path / "cameras.json").write_text(json.dumps(doc))
    cams = read_cameras(tmp_path / "cameras.json")
    assert set(cams) == {"r_000", "r_001"}
