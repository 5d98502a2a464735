"""The challenges' own formats: Building3D OBJ + .xyz normalisation, S23DR records (JSON lines, JSON, Parquet)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from scenemetrics.cli import main
from scenemetrics.wireframe import (
    building3d_normalize,
    corner_prf,
    hss,
    match_by_order_id,
    read_obj_wireframe,
    read_s23dr,
    read_xyz_points,
    synthetic_houses,
    wed,
)

HOUSES = synthetic_houses(3, seed=4)


def write_obj(path, vertices, edges, *, extra=""):
    lines = [f"v {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in np.asarray(vertices, dtype=float)]
    lines += [f"l {i + 1} {j + 1}" for i, j in np.asarray(edges)]
    path.write_text("# Building3D wireframe\n" + "\n".join(lines) + "\n" + extra)


def test_obj_is_one_based_and_dedups_like_building3d(tmp_path):
    path = tmp_path / "roof.obj"
    write_obj(path, [[0, 0, 0], [1, 0, 0], [1, 1, 0]], [[0, 1], [1, 2]], extra="l 2 1\n\nl 3 2\n")
    with pytest.warns(UserWarning, match="2 edge\\(s\\) listed twice were kept once"):
        w = read_obj_wireframe(path)
    assert w.vertices.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert w.edges.tolist() == [[0, 1], [1, 2]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("f 1 2 3\n", r"roof\.obj:6: expected 'v x y z' or 'l i j'"),
        ("l 1 2 3\n", r"roof\.obj:6: expected"),
        ("l 1 4\n", r"edge \(1, 4\) names a vertex outside 1\.\.3"),
        ("l 0 1\n", r"edge \(0, 1\) names a vertex outside 1\.\.3"),
        ("l 2 2\n", r"edge \(2, 2\) joins a vertex to itself"),
    ],
)
def test_obj_errors_name_the_file_and_line(tmp_path, extra, message):
    path = tmp_path / "roof.obj"
    write_obj(path, [[0, 0, 0], [1, 0, 0], [1, 1, 0]], [[0, 1]], extra=extra)
    with pytest.raises(ValueError, match=message):
        read_obj_wireframe(path)


def test_building3d_normalisation_uses_the_point_cloud(tmp_path):
    rng = np.random.default_rng(0)
    points = rng.normal(size=(200, 3)) * 7.0 + [100.0, -40.0, 12.0]
    np.savetxt(tmp_path / "roof.xyz", np.hstack([points, rng.integers(0, 255, (200, 4))]), fmt="%.9f")
    loaded = read_xyz_points(tmp_path / "roof.xyz")
    np.testing.assert_allclose(loaded, points, atol=1e-8)
    house = HOUSES[0]
    normalized = building3d_normalize(house, loaded)
    centroid = loaded.mean(axis=0)
    scale = max(np.sqrt(((p - centroid) ** 2).sum()) for p in loaded)  # the loop form of the definition
    np.testing.assert_allclose(normalized.vertices, (house.vertices - centroid) / scale, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(building3d_normalize(
        type(house)(loaded, np.zeros((0, 2), dtype=np.int64)), loaded).vertices, axis=1).max(), 1.0)  # fmt: skip
    with pytest.raises(ValueError, match="all points coincide"):
        building3d_normalize(house, np.ones((3, 3)))
    (tmp_path / "bad.xyz").write_text("1 2\n3 4\n")
    with pytest.raises(ValueError, match=r"bad\.xyz: expected rows of at least 'x y z'"):
        read_xyz_points(tmp_path / "bad.xyz")


def _records(houses, ids):
    return [{"order_id": oid, "wf_vertices": h.vertices.tolist(), "wf_edges": h.edges.tolist()}
            for oid, h in zip(ids, houses, strict=True)]  # fmt: skip


@pytest.mark.parametrize("fmt", ["jsonl", "json", "parquet"])
def test_s23dr_records(tmp_path, fmt):
    recs = _records(HOUSES, ["a1", "b2", "c3"])
    path = tmp_path / f"sub.{fmt}"
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    elif fmt == "json":
        path.write_text(json.dumps(recs))
    else:
        pa = pytest.importorskip("pyarrow", reason="the [wireframe] extra (pyarrow) reads Parquet")
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(recs), path)
    houses = read_s23dr(path)
    assert list(houses) == ["a1", "b2", "c3"]
    for got, ref in zip(houses.values(), HOUSES, strict=True):
        np.testing.assert_array_equal(got.vertices, ref.vertices)
        np.testing.assert_array_equal(got.edges, ref.edges)


def test_s23dr_errors(tmp_path):
    path = tmp_path / "sub.jsonl"
    recs = _records(HOUSES[:2], ["x", "x"])
    path.write_text("\n".join(json.dumps(r) for r in recs))
    with pytest.raises(ValueError, match="order_id 'x' appears twice"):
        read_s23dr(path)
    path.write_text(json.dumps({"order_id": 1, "wf_vertices": []}))
    with pytest.raises(ValueError, match="record 0 has no wf_edges"):
        read_s23dr(path)
    path.write_text(json.dumps({"order_id": 1, "wf_vertices": [[0, 0, 0]], "wf_edges": [[0, 3]]}))
    with pytest.raises(ValueError, match="order_id '1':"):
        read_s23dr(path)


def test_match_by_order_id_scores_missing_as_empty():
    gts = {"a": HOUSES[0], "b": HOUSES[1]}
    with pytest.warns(UserWarning) as record:
        ids, preds, targets = match_by_order_id({"b": HOUSES[1], "zz": HOUSES[2]}, gts)
    messages = " ".join(str(w.message) for w in record)
    assert "1 ground-truth house(s) have no prediction" in messages and "absent from the ground truth" in messages
    assert ids == ["a", "b"] and preds[0].vertices.shape == (0, 3) and preds[1] is HOUSES[1]
    assert targets == [HOUSES[0], HOUSES[1]]


@pytest.mark.parametrize(
    "challenge",
    [pytest.param("s23dr2025", marks=pytest.mark.extra("hss")), "s23dr2024"],  # 2025's HSS: tube IoU
)
def test_cli_s23dr_headline_score(tmp_path, capsys, challenge):
    rng = np.random.default_rng(1)
    noisy = [type(h)(h.vertices + rng.normal(scale=0.2, size=h.vertices.shape), h.edges) for h in HOUSES]
    (tmp_path / "gt.jsonl").write_text("\n".join(json.dumps(r) for r in _records(HOUSES, ["o1", "o2", "o3"])))
    (tmp_path / "sub.jsonl").write_text("\n".join(json.dumps(r) for r in _records(noisy[:2], ["o2", "o1"])))
    argv = ["wireframe", "eval", "--pred", str(tmp_path / "sub.jsonl"), "--gt", str(tmp_path / "gt.jsonl"),
            "--threshold", "0.5", "--challenge", challenge, "--out", str(tmp_path / "out")]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(argv) == 0
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "out" / "wireframe_eval.json").read_text())
    assert data["houses"] == ["o1", "o2", "o3"] and data["config"]["format"] == "s23dr"
    empty = (np.zeros((0, 3)), np.zeros((0, 2), dtype=np.int64))
    pairs = [((noisy[1].vertices, noisy[1].edges), HOUSES[0]), ((noisy[0].vertices, noisy[0].edges), HOUSES[1]),
             (empty, HOUSES[2])]  # fmt: skip
    if challenge == "s23dr2025":
        expected = np.mean([hss(*p, g.vertices, g.edges).hss for p, g in pairs])
    else:
        expected = np.mean([wed(*p, g.vertices, g.edges, variant="s23dr2024") for p, g in pairs])
    assert data["challenge"]["score"] == pytest.approx(expected, rel=1e-12)
    assert f"S23DR-{challenge[-4:]} score" in out
    corner = [corner_prf(p[0], g.vertices, threshold=0.5).f1 for p, g in pairs]
    assert [row["corner_f1"] for row in data["per_house"]] == pytest.approx(corner)
    assert [line.split()[0] for line in out.splitlines()[1:4]] == ["o1", "o2", "o3"]


def test_cli_building3d_folders_with_normalisation(tmp_path):
    rng = np.random.default_rng(2)
    for sub in ("pred", "gt", "xyz"):
        (tmp_path / sub).mkdir()
    expected_f1, raw_f1 = [], []
    for k, house in enumerate(HOUSES[:2]):
        big = type(house)(house.vertices * 30.0 + 500.0, house.edges)  # Building3D-like raw coordinates
        pred = type(house)(big.vertices + rng.normal(scale=1.0, size=big.vertices.shape), big.edges)
        points = big.vertices[rng.integers(0, len(big.vertices), 300)] + rng.normal(scale=0.5, size=(300, 3))
        write_obj(tmp_path / "gt" / f"{k:05d}.obj", big.vertices, big.edges)
        write_obj(tmp_path / "pred" / f"{k:05d}.obj", pred.vertices, pred.edges)
        np.savetxt(tmp_path / "xyz" / f"{k:05d}.xyz", points, fmt="%.12f")
        c = points.mean(axis=0)
        s = np.linalg.norm(points - c, axis=1).max()
        expected_f1.append(corner_prf((pred.vertices - c) / s, (big.vertices - c) / s, threshold=0.1).f1)
        raw_f1.append(corner_prf(pred.vertices, big.vertices, threshold=0.1).f1)
    argv = [
        "wireframe",
        "eval",
        "--pred",
        str(tmp_path / "pred"),
        "--gt",
        str(tmp_path / "gt"),
        "--threshold",
        "0.1",
        "--points",
        str(tmp_path / "xyz"),
        "--building3d-normalize",
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(argv) == 0
    data = json.loads((tmp_path / "o" / "wireframe_eval.json").read_text())
    assert data["houses"] == ["00000", "00001"]
    assert [r["corner_f1"] for r in data["per_house"]] == pytest.approx(expected_f1, abs=1e-12)
    assert min(expected_f1) > 0.5 and max(raw_f1) == 0.0  # 0.1 means "10% of the roof's size" only once normalised
    assert main([*argv[:6], "--threshold", "0.1", "--building3d-normalize"]) == 1  # needs --points
