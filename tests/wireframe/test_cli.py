"""`scenemetrics wireframe eval|properties` through scenemetrics.cli.main."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from scenemetrics.cli import main
from scenemetrics.wireframe import corner_offset, corner_prf, edge_prf, synthetic_houses, wed


@pytest.fixture(scope="module")
def houses():
    gts = synthetic_houses(2, seed=3)
    rng = np.random.default_rng(1)
    preds = [(v + rng.normal(0, 0.2, v.shape), e[:-4]) for v, e in gts]
    return preds, gts


def _dump(path, houses_list, single=False):
    objs = [{"vertices": np.asarray(v).tolist(), "edges": np.asarray(e).tolist()} for v, e in houses_list]
    path.write_text(json.dumps(objs[0] if single else objs))
    return str(path)


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_eval_one_house_json(tmp_path, houses, capsys):
    (pv, pe), (gv, ge) = houses[0][0], houses[1][0]
    pred = _dump(tmp_path / "p.json", [(pv, pe)], single=True)
    gt = _dump(tmp_path / "g.json", [(gv, ge)], single=True)
    assert main(["wireframe", "eval", "--pred", pred, "--gt", gt, "--threshold", "0.5"]) == 0
    rows = _table(capsys.readouterr().out)
    names = rows[0][1:]
    assert rows[0][0] == "house" and names[-1] == "wed" and len(names) == 7
    assert [r[0] for r in rows[1:]] == ["0", "mean"]
    values = dict(zip(names, map(float, rows[1][1:]), strict=True))
    c = corner_prf(pv, gv, 0.5)
    assert values["corner_f1"] == pytest.approx(c.f1, rel=1e-5)
    assert values["edge_recall"] == pytest.approx(edge_prf(pv, pe, gv, ge, 0.5).recall, rel=1e-5)
    assert values["wed"] == pytest.approx(wed(pv, pe, gv, ge), rel=1e-5)


def test_eval_two_house_list_writes_json_and_csv(tmp_path, houses, capsys):
    preds, gts = houses
    pred, gt = _dump(tmp_path / "p.json", preds), _dump(tmp_path / "g.json", gts)
    out = tmp_path / "out" / "nested"
    code = main(
        ["wireframe", "eval", "--pred", pred, "--gt", gt, "--metrics", "corner_offset", "wed_ap", "hausdorff",
         "--threshold", "0.5", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    doc = json.loads((out / "wireframe_eval.json").read_text())
    direct = [
        {
            "corner_offset": corner_offset(p[0], g[0], 0.5),
            "wed_ap": wed(*p, *g, variant="ap"),
        }
        for p, g in zip(preds, gts, strict=True)
    ]
    assert len(doc["per_house"]) == 2
    for row, ref in zip(doc["per_house"], direct, strict=True):
        assert row["corner_offset"] == pytest.approx(ref["corner_offset"], abs=1e-12)
        assert row["wed_ap"] == pytest.approx(ref["wed_ap"], abs=1e-12)
    assert doc["mean"]["wed_ap"] == pytest.approx(np.mean([d["wed_ap"] for d in direct]), abs=1e-12)
    assert doc["config"]["metrics"] == ["corner_offset", "wed_ap", "hausdorff"]
    assert doc["config"]["threshold"] == 0.5 and doc["config"]["n_houses"] == 2
    with open(out / "wireframe_eval.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["house", "corner_offset", "wed_ap", "hausdorff"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "mean"]


def test_eval_npz_and_nan_as_null(tmp_path, houses, capsys):
    (pv, _), (gv, ge) = houses[0][0], houses[1][0]
    np.savez(tmp_path / "p.npz", vertices=pv + 50.0, edges=ge)  # far away: no corner true positive
    np.savez(tmp_path / "g.npz", vertices=gv, edges=ge)
    args = ["wireframe", "eval", "--pred", str(tmp_path / "p.npz"), "--gt", str(tmp_path / "g.npz")]
    assert main([*args, "--metrics", "corner_offset", "wed", "--threshold", "0.5", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "wireframe_eval.json").read_text())
    assert doc["per_house"][0]["corner_offset"] is None and doc["mean"]["corner_offset"] is None
    assert doc["non_finite"] == {"/per_house/0/corner_offset": "NaN", "/mean/corner_offset": "NaN"}
    assert doc["mean"]["wed"] == pytest.approx(wed(pv + 50.0, ge, gv, ge), abs=1e-12)
    printed = capsys.readouterr()
    assert "nan" in printed.out
    assert f"wrote {tmp_path / 'wireframe_eval.json'} and {tmp_path / 'wireframe_eval.csv'} (1 house)" in printed.err


def test_eval_usage_errors_exit_2(tmp_path, houses, capsys):
    preds, gts = houses
    pred, gt = _dump(tmp_path / "p.json", preds), _dump(tmp_path / "g.json", gts)
    assert main(["wireframe", "eval", "--pred", pred, "--gt", gt, "--metrics", "corner_f1"]) == 2
    assert "--threshold" in capsys.readouterr().err
    assert main(["wireframe", "eval", "--pred", pred, "--gt", gt, "--metrics", "iou"]) == 2
    assert "--radius" in capsys.readouterr().err
    assert main(["wireframe", "eval", "--pred", pred, "--gt", gt, "--metrics", "nope"]) == 2
    assert "unknown metric" in capsys.readouterr().err
    assert main(["wireframe", "eval", "--pred", pred]) == 2  # argparse: --gt is required
    assert main(["wireframe"]) == 2


def test_eval_errors_exit_1(tmp_path, houses, capsys):
    preds, gts = houses
    pred, gt = _dump(tmp_path / "p.json", preds), _dump(tmp_path / "g.json", gts[:1])
    assert main(["wireframe", "eval", "--pred", pred, "--gt", gt, "--metrics", "wed"]) == 1
    assert "2 houses but --gt has 1" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"vertices": [[0, 0, 0], [1, 0, 0]], "edges": [[0, 5]]}))
    assert main(["wireframe", "eval", "--pred", str(bad), "--gt", gt, "--metrics", "wed"]) == 1
    err = capsys.readouterr().err
    assert "pred_edges[0] = (0, 5)" in err and err.count("\n") == 1
    assert main(["wireframe", "eval", "--pred", str(tmp_path / "missing.json"), "--gt", gt, "--metrics", "wed"]) == 1
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("{not json")
    assert main(["wireframe", "eval", "--pred", str(tmp_path / "x.json"), "--gt", gt, "--metrics", "wed"]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    np.savez(tmp_path / "v.npz", vertices=np.zeros((2, 3)))
    assert main(["wireframe", "eval", "--pred", str(tmp_path / "v.npz"), "--gt", gt, "--metrics", "wed"]) == 1
    assert "'edges'" in capsys.readouterr().err


def test_properties_prints_the_table(capsys):
    assert main(["wireframe", "properties", "--metric", "wed", "--houses", "4", "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| Property | wed |"
    assert len(lines) == 2 + 17 + 1 and lines[-1].startswith("| Pass count | ")
    assert lines[-1].endswith("/17 |")


def test_properties_usage_errors(capsys):
    assert main(["wireframe", "properties", "--metric", "corner_f1", "--houses", "2", "--quiet"]) == 2
    assert "--threshold" in capsys.readouterr().err
    assert main(["wireframe", "properties", "--metric", "wed", "--houses", "1", "--quiet"]) == 2
    assert main(["wireframe", "properties", "--metric", "f2", "--quiet"]) == 2
