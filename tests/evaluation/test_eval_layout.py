"""Tree discovery: the three scene layouts, pairing, dataset fallback, filters, cameras.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from scenemetrics.evaluation.layout import CameraEntry, detect_layout, discover_units, read_cameras

from .conftest import METHODS, SCENES, VIEWS


def _img(path: Path, size: tuple[int, int] = (8, 6), mode: str = "RGB") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size).save(path)
    return path


def test_own_layout_units_sorted_and_paired(tree):
    units = discover_units(tree)
    assert [(u.method, u.scene) for u in units] == [(m, s) for m in METHODS for s in SCENES]
    u = units[0]
    assert u.layout == "scenemetrics" and u.has_gt and u.problems == ()
    assert [v.name for v in u.views] == list(VIEWS)
    assert all(v.render.parent.name == "renders" and v.gt.parent.name == "gt" and v.gt.stem == v.name for v in u.views)
    assert [p.name for p in u.train] == ["t0.png", "t1.png", "t2.png"]
    assert u.cameras is None and u.key == "m_art/alpha"


def test_pairing_ignores_extension_and_allows_nesting(tmp_path):
    d = tmp_path / "root" / "m" / "s"
    _img(d / "renders" / "a.png")
    _img(d / "renders" / "sub" / "b.png")
    _img(d / "gt" / "a.jpg")
    _img(d / "gt" / "sub" / "b.JPG")
    (u,) = discover_units(tmp_path / "root")
    assert [(v.name, v.gt.name) for v in u.views] == [("a", "a.jpg"), ("sub/b", "b.JPG")]
    assert u.train == () and u.problems == ()


def test_pairing_problems_are_reported_per_input(tmp_path):
    d = tmp_path / "root" / "m" / "s"
    _img(d / "renders" / "a.png")
    _img(d / "renders" / "b.png")
    _img(d / "gt" / "a.png")
    _img(d / "gt" / "c.png")
    _img(d / "train" / "x.png")
    _img(d / "train" / "x.jpg")  # two files with one view name
    (u,) = discover_units(tmp_path / "root")
    kinds = sorted(kind for kind, _ in u.problems)
    assert kinds == ["gt", "gt", "train"]
    text = " ".join(msg for _, msg in u.problems)
    assert "1 render(s) have no ground truth: b" in text and "1 ground-truth view(s) have no render: c" in text
    assert "'x.jpg'" in text or "'x.png'" in text


def test_missing_gt_folder_is_not_a_problem(tmp_path):
    _img(tmp_path / "root" / "m" / "s" / "renders" / "a.png")
    (u,) = discover_units(tmp_path / "root")
    assert not u.has_gt and u.problems == () and u.views[0].gt is None


def test_nerfbaselines_layout_picks_highest_step(tmp_path):
    scene = tmp_path / "root" / "gs" / "lego"
    for step in (1000, 30000):
        _img(scene / f"predictions-{step}" / "color" / "r_0.png")
        _img(scene / f"predictions-{step}" / "gt-color" / "r_0.png")
    (scene / "predictions-30000" / "info.json").write_text("{}")
    _img(tmp_path / "data" / "lego" / "train" / "r_1.png")
    assert detect_layout(scene) == "nerfbaselines"
    (u,) = discover_units(tmp_path / "root", data=tmp_path / "data")
    assert u.layout == "nerfbaselines" and u.folder.name == "predictions-30000"
    assert u.views[0].render.parent.name == "color" and u.views[0].gt.parent.name == "gt-color"
    assert [p.parent.parent.name for p in u.train] == ["lego"]  # from --data


def test_nerfbaselines_predictions_folder_itself(tmp_path):
    scene = tmp_path / "root" / "gs" / "lego"
    _img(scene / "color" / "r_0.png")
    _img(scene / "gt-color" / "r_0.png")
    (u,) = discover_units(tmp_path / "root", layout="nerfbaselines")
    assert u.folder == scene and u.has_gt


def test_nerfstudio_layout_splits(tmp_path):
    scene = tmp_path / "root" / "nerfacto" / "poster"
    for split in ("val", "test", "train"):
        _img(scene / split / "rgb" / "frame_00001.jpg")
        _img(scene / split / "gt-rgb" / "frame_00001.jpg")
    _img(scene / "test" / "depth" / "frame_00001.jpg")
    (u,) = discover_units(tmp_path / "root")
    assert u.layout == "nerfstudio"
    assert u.views[0].render.parent.parent.name == "test" and u.views[0].gt.parent.name == "gt-rgb"
    assert [p.parent.parent.name for p in u.train] == ["train"]
    (u,) = discover_units(tmp_path / "root", split="val")
    assert u.views[0].render.parent.parent.name == "val"


def test_data_fallback_only_fills_what_is_missing(tmp_path):
    scene = tmp_path / "root" / "m" / "s"
    _img(scene / "renders" / "a.png")
    _img(scene / "train" / "own.png")
    _img(tmp_path / "data" / "s" / "gt" / "a.png")
    _img(tmp_path / "data" / "s" / "train" / "shared.png")
    (tmp_path / "data" / "s" / "cameras.json").write_text('{"views": {}}')
    (u,) = discover_units(tmp_path / "root", data=tmp_path / "data")
    assert u.views[0].gt.parent.parent.name == "s" and u.views[0].gt.parent.parent.parent.name == "data"
    assert [p.name for p in u.train] == ["own.png"]
    assert u.cameras == tmp_path / "data" / "s" / "cameras.json"


def test_hidden_and_unknown_folders(tmp_path):
    _img(tmp_path / "root" / "m" / "s" / "renders" / "a.png")
    _img(tmp_path / "root" / ".cache" / "s" / "renders" / "a.png")
    _img(tmp_path / "root" / "_shared" / "s" / "renders" / "a.png")
    _img(tmp_path / "root" / "m" / "notes" / "readme.png")
    with pytest.warns(UserWarning, match=r"skipped .*notes: no renders/"):
        units = discover_units(tmp_path / "root")
    assert [u.key for u in units] == ["m/s"]


def test_filters_and_errors(tree, tmp_path):
    units = discover_units(tree, methods=["m_noise"], scenes=["beta"])
    assert [u.key for u in units] == ["m_noise/beta"]
    with pytest.raises(ValueError, match=r"method\(s\) 'nope' not found .*m_art"):
        discover_units(tree, methods=["nope"])
    with pytest.raises(ValueError, match=r"scene\(s\) 'gamma' not found"):
        discover_units(tree, scenes=["gamma"])
    with pytest.raises(ValueError, match="`layout` must be one of"):
        discover_units(tree, layout="colmap")
    with pytest.raises(FileNotFoundError, match="`root`"):
        discover_units(tmp_path / "missing")
    (tmp_path / "empty" / "m").mkdir(parents=True)
    with pytest.raises(ValueError, match="no \\(method, scene\\) folder"):
        discover_units(tmp_path / "empty")


def test_fingerprint_follows_input_files(copy_tree):
    root = copy_tree()
    (u,) = discover_units(root, methods=["m_art"], scenes=["alpha"])
    before = u.fingerprint()
    assert before == discover_units(root, methods=["m_art"], scenes=["alpha"])[0].fingerprint()
    render = u.views[0].render
    st = render.stat()
    os.utime(render, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert discover_units(root, methods=["m_art"], scenes=["alpha"])[0].fingerprint() != before


def test_read_cameras_both_forms(tmp_path):
    c2w = [[1, 0, 0, 0], [0, 1, 0, 2], [0, 0, 1, 1], [0, 0, 0, 1]]
    doc = {
        "format": "scenemetrics.eval.cameras/1",
        "views": {
            "r_0.png": {"source": "train/a.png", "pose": [0, 90, 0.5]},
            "r_1": {
                "source": "/abs/b.png",
                "source_camera": {"polar_deg": 60, "azimuth_deg": 0, "radius": 2.7},
                "target_camera": {"c2w": c2w},
            },
        },
    }
    path = tmp_path / "cameras.json"
    path.write_text(json.dumps(doc))
    cams = read_cameras(path)
    assert cams["r_0"] == CameraEntry(tmp_path / "train" / "a.png", pose=(0.0, 90.0, 0.5))
    assert cams["r_1"].source == Path("/abs/b.png") and cams["r_1"].pose is None
    assert cams["r_1"].target_camera["c2w"] == c2w


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ("[]", "must hold a JSON object"),
        ('{"format": "other/1", "views": {}}', "`format` must be"),
        ('{"views": []}', "'views' mapping"),
        ('{"views": {"a": {"pose": [0, 0, 0]}}}', "view 'a' must be an object with a 'source'"),
        ('{"views": {"a": {"source": "x.png", "pose": [0, 0]}}}', "view 'a': `pose` must be"),
        ('{"views": {"a": {"source": "x.png", "pose": [0, NaN, 0]}}}', "view 'a': `pose` must be"),
        ('{"views": {"a": {"source": "x.png"}}}', "needs a 'pose' or both"),
        ('{"views": {"a": {"source": "x.png", "source_camera": {"c2w": [[1]]}, "target_camera": {}}}}', "`c2w`"),
        ('{"views": {"a": {"source": "x.png", "source_camera": {"polar_deg": 1}, "target_camera": {}}}}', "must be"),
        ("{not json", "could not read cameras file"),
    ],
)
def test_read_cameras_errors(tmp_path, doc, match):
    path = tmp_path / "cameras.json"
    path.write_text(doc)
    with pytest.raises(ValueError, match=match):
        read_cameras(path)
