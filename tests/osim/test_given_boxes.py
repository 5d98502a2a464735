"""User-given regions (``boxes=``): a given box is scored exactly as a detection with the same box and class, through
the function, the metric, the ``osim`` command and ``scenemetrics eval``; the boxes file is read as untrusted input."""

from __future__ import annotations

import json
import math
import time

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.osim import OSIM, osim
from scenemetrics.osim.regions import MAX_FILE_BYTES, check_given_boxes, read_boxes_file

from .conftest import images

CONF = 0.3


def degrade(x: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    return (
        F.avg_pool2d(x, 5, stride=1, padding=2, count_include_pad=False) + 0.05 * torch.randn(x.shape, generator=g)
    ).clamp(0, 1)


def inside(res, size=(120, 160)) -> torch.Tensor:
    """Detections that overlap the image (random weights also 'detect' boxes in the letterbox padding)."""
    h, w = size
    b = res.boxes
    return (b[:, 0] < w) & (b[:, 2] > 0) & (b[:, 1] < h) & (b[:, 3] > 0)


def as_given(res, num_views: int, keep: torch.Tensor) -> list:
    """The objects ``keep`` of a result, per view, in the form ``boxes=`` takes (original pixels, class indices)."""
    out = []
    for i in range(num_views):
        sel = (res.image_index == i) & keep
        out.append({"boxes": res.boxes[sel].double().tolist(), "classes": res.classes[sel].tolist()})
    return out


def as_detections(res, num_views: int, keep: torch.Tensor) -> list:
    """The objects ``keep`` of a result, per view, as a :class:`FixedDetector` reports them (letterbox pixels)."""
    out = []
    for i in range(num_views):
        sel = (res.image_index == i) & keep
        out.append([(*b, c) for b, c in zip(res.boxes_letterbox[sel].tolist(), res.classes[sel].tolist(), strict=True)])
    return out


def assert_same_objects(a, b) -> None:
    """Same scene score, same per-class pools and the same per-object r, s (objects compared as sets)."""
    assert float(a.score) == pytest.approx(float(b.score), abs=1e-6)
    assert a.per_class == pytest.approx(b.per_class, abs=1e-6)
    assert a.class_saliency == pytest.approx(b.class_saliency, abs=1e-6)
    assert a.class_counts == b.class_counts

    def rows(res):
        return sorted(zip(res.image_index.tolist(), res.classes.tolist(), res.r.tolist(), res.s.tolist(), strict=True))

    for ra, rb in zip(rows(a), rows(b), strict=True):
        assert ra[:2] == rb[:2] and ra[2:] == pytest.approx(rb[2:], abs=1e-6)


def test_given_boxes_equal_the_same_boxes_from_the_detector(nano, fixed_detector):
    refs = images(3, seed=4)
    preds = degrade(refs)
    found = osim(preds, refs, model=nano, conf_threshold=CONF)
    keep = inside(found)
    assert int(keep.sum()) >= 6 and not bool(found.given.any())
    # a detector that reports exactly these objects
    detected = osim(preds, refs, model=fixed_detector(as_detections(found, 3, keep)))
    assert detected.r.numel() == int(keep.sum())
    # no detection: the same boxes come only from boxes=
    given = osim(preds, refs, model=fixed_detector([]), boxes=as_given(found, 3, keep))
    assert bool(given.given.all()) and torch.isnan(given.det_scores).all()
    assert_same_objects(given, detected)
    # the detector misses every other object; the user gives exactly those
    missed = keep & (torch.arange(len(keep)) % 2 == 1)
    half = fixed_detector(as_detections(found, 3, keep & ~missed))
    mixed = osim(preds, refs, model=half, boxes=as_given(found, 3, missed))
    assert int(mixed.given.sum()) == int(missed.sum()) > 0
    assert_same_objects(mixed, detected)
    # the metric, one view per update, equals the function over all views at once
    per_view = as_given(found, 3, missed)
    for i in range(3):
        metric = OSIM(model=fixed_detector(as_detections(found, 3, keep & ~missed)[i : i + 1]))
        metric.update(preds[i : i + 1], refs[i : i + 1], boxes=[per_view[i]])
        assert_same_objects(metric.last_result, osim(preds[i : i + 1], refs[i : i + 1], model=fixed_detector(
            as_detections(found, 3, keep)[i : i + 1])))  # fmt: skip


def test_unlabelled_boxes_form_their_own_pool(nano):
    refs = images(2, seed=4)
    preds = degrade(refs)
    boxes = [[[10, 10, 60, 50], [70, 20, 150, 110]], {"boxes": [[5, 60, 40, 115]], "classes": ["dog"]}]
    res = osim(preds, refs, model=nano, conf_threshold=2.0, boxes=boxes, saliency="uniform")
    assert res.classes.tolist() == [80, 80, 16] and res.r_sum.shape == (81,)
    assert res.class_names[80] == "unlabelled" and [row["name"] for row in res.class_table()] != []
    # uniform saliency: the scene score is the plain mean of the two pools' means (hand formula)
    r = res.r.tolist()
    expected = ((r[0] + r[1]) / 2 + r[2]) / 2
    assert float(res.score) == pytest.approx(expected, abs=1e-6)
    metric = OSIM(model=nano, conf_threshold=2.0, saliency="uniform")
    metric.update(preds, refs, boxes=boxes)
    assert set(metric.class_scores()) == {"unlabelled", "dog"}
    assert metric.class_scores()["unlabelled"] == pytest.approx((r[0] + r[1]) / 2, abs=1e-6)


def test_given_box_r_is_the_mean_cosine_over_its_cells(nano):
    """r of a given box from the features directly (letterbox frame, floor / inclusive / clamped cell span)."""
    from scenemetrics.osim.boxes import letterbox

    refs = images(1, seed=5)
    preds = degrade(refs)
    box = [13.0, 7.5, 97.0, 88.0]
    res = osim(preds, refs, model=nano, conf_threshold=2.0, boxes=[[box]])
    lb_r, lb_p = letterbox(refs, nano.input_size), letterbox(preds, nano.input_size)
    f_r = nano.extract(lb_r.canvas)["dark5"][0]
    f_p = nano.extract(lb_p.canvas)["dark5"][0]
    cos = F.cosine_similarity(f_r, f_p, dim=0)
    step = nano.input_size / cos.shape[-1]
    h_c, w_c = lb_r.content_size
    x = range(
        math.floor(box[0] * lb_r.ratio / step),
        min(math.floor(box[2] * lb_r.ratio / step), math.ceil(w_c / step) - 1) + 1,
    )
    y = range(
        math.floor(box[1] * lb_r.ratio / step),
        min(math.floor(box[3] * lb_r.ratio / step), math.ceil(h_c / step) - 1) + 1,
    )
    expected = sum(float(cos[j, i]) for j in y for i in x) / (len(x) * len(y))
    assert float(res.r[0]) == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(
    ("boxes", "match"),
    [
        ([[[0, 0, 4, 4]]], r"one entry per image \(2\)"),
        ([[[0, 0, 4]], None], r"boxes\[0\]\[0\] must be four numbers"),
        ([[[5, 0, 4, 4]], None], r"x1 < x2 and y1 < y2"),
        ([None, [[200, 0, 300, 4]]], r"boxes\[1\]\[0\].*outside the 160x120 image"),
        ([[[0, 0, float("nan"), 4]], None], "finite"),
        ([{"boxes": [[0, 0, 4, 4]], "classes": ["unicorn"]}, None], r"unknown class 'unicorn'"),
        ([{"boxes": [[0, 0, 4, 4]], "classes": [80]}, None], r"class index 80 is outside 0..79"),
        ([{"boxes": [[0, 0, 4, 4]], "classes": [1, 2]}, None], r"one class per box \(1\)"),
        ([{"box": [[0, 0, 4, 4]]}, None], r"mapping with 'boxes'"),
        ([[[0, 0, True, 4]], None], "numbers"),
    ],
)
def test_bad_boxes_name_the_argument(nano, boxes, match):
    refs = images(2, seed=4)
    with pytest.raises(ValueError, match=match):
        osim(refs, refs, model=nano, boxes=boxes)


def test_classes_by_name_index_or_none():
    given = check_given_boxes(
        [{"boxes": [[0, 0, 2, 2]] * 4, "classes": ["cat", 2, None, -1]}], 1, (8, 8), 3, ["cat", "dog", "car"]
    )
    assert given[0][1].tolist() == [0, 2, 3, 3] and given[0][0].dtype == torch.float64


# ------------------------------------------------------------------------------------------------ the boxes file


def test_json_and_csv_boxes_files_read_the_same(tmp_path):
    doc = {"format": "scenemetrics.osim.boxes/1",
           "views": {"a.png": [{"box": [1, 2, 30, 40], "class": "cat"}, [5, 5, 9, 9]], "sub/b": []},
           "scenes": {"garden": {"a": [{"box": [0, 0, 8, 8], "class": 3}]}}}  # fmt: skip
    (tmp_path / "b.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())  # a byte-order mark is ignored
    csv = "\ufeffview,x1,y1,x2,y2,class,scene\na.png,1,2,30,40,cat,\na,5,5,9,9,,\n"
    csv += "sub/b.jpg,1,1,2,2,,x\na,0,0,8,8,3,garden\n"
    (tmp_path / "b.csv").write_bytes(csv.encode())
    j, c = read_boxes_file(tmp_path / "b.json"), read_boxes_file(tmp_path / "b.csv")
    assert j.for_view("a") == c.for_view("a") == {"boxes": [[1, 2, 30, 40], [5, 5, 9, 9]], "classes": ["cat", None]}
    assert j.for_view("a", "garden") == {"boxes": [[0.0, 0.0, 8.0, 8.0]], "classes": [3]}
    assert c.for_view("a", "garden") == {"boxes": [[0.0, 0.0, 8.0, 8.0]], "classes": ["3"]}
    assert j.for_view("a", "other") == j.for_view("a")  # a scene without a section uses 'views'
    assert j.for_view("sub/b.png") == {"boxes": [], "classes": []} and c.for_view("sub/b", "x")["boxes"] == [
        [1, 1, 2, 2]
    ]
    assert j.num_boxes == 3 and c.num_boxes == 4


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("b.json", "[" * 100_000 + "]" * 100_000, "not valid JSON"),
        ("b.json", '{"views": {"a": [[0, 0, 1]]}}', "four numbers"),
        ("b.json", '{"views": {"a": [[2, 0, 1, 1]]}}', "x1 < x2"),
        ("b.json", '{"views": {"a": [{"box": [0, 0, 1, 1], "colour": 3}]}}', "'box'"),
        ("b.json", '{"format": "other/1", "views": {}}', "`format` must be"),
        ("b.json", '{"view": {}}', "unknown key"),
        ("b.json", '{"views": {"a\\u0000b": [[0, 0, 1, 1]]}}', "control characters"),
        ("b.json", '{"views": {"a": [{"box": [0, 0, 1, 1], "class": [1]}]}}', "a class must be"),
        ("b.csv", 'view,x1,y1,x2,y2\na,0,0,1,"' + "9" * 200_000 + '"\n', "not a CSV table"),
        ("b.csv", "view,x1,y1,x2\na,0,0,1\n", r"missing \['y2'\]"),
        ("b.csv", "view,x1,y1,x2,y2\na,0,0,one,1\n", "x2 = 'one' is not a number"),
        ("b.csv", "view,x1,y1,x2,y2\na,0,0,1,1,7\n", "more fields"),
        ("b.csv", "view,x1,y1,x2,y2\na,0,0,inf,1\n", "finite"),
    ],
)
def test_hostile_boxes_files_fail_fast_naming_the_file(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text)
    start = time.process_time()  # CPU time: a loaded machine does not stretch it
    with pytest.raises(ValueError, match=match) as info:
        read_boxes_file(path)
    assert time.process_time() - start < 1.0 and str(path) in str(info.value)


def test_a_huge_boxes_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:  # sparse: no disk space used
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ValueError, match=rf"{MAX_FILE_BYTES + 1} bytes, more than"):
        read_boxes_file(path)


# ------------------------------------------------------------------------------------------------ the command line


def test_osim_command_with_boxes_equals_the_function(tmp_path, nano_ckpt, nano):
    from scenemetrics.cli import main
    from scenemetrics.viz import save_png

    refs = images(2, seed=4)
    preds = degrade(refs)
    for i in range(2):
        save_png((refs[i] * 255).round().to(torch.uint8), tmp_path / "gt" / f"v{i}.png")
        save_png((preds[i] * 255).round().to(torch.uint8), tmp_path / "renders" / f"v{i}.png")
    rows = "view,x1,y1,x2,y2,class\nv0.png,10,10,60,50,dog\nv1,70,20,150,110,\n"
    (tmp_path / "boxes.csv").write_text(rows)
    args = ["osim", "--refs", str(tmp_path / "gt"), "--renders", str(tmp_path / "renders"), "--quiet", "--conf", "0.3",
            "--detector", "yolox_nano", "--weights", str(nano_ckpt), "--device", "cpu"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "out"), "--boxes", str(tmp_path / "boxes.csv")]) == 0
    report = json.loads((tmp_path / "out" / "osim.json").read_text())
    given = [o for o in report["objects"] if o["given"]]
    assert report["num_given"] == 2 and [o["class"] for o in given] == ["dog", "unlabelled"]
    assert all(o["det_score"] is None for o in given)
    # the images as the command reads them back (8-bit), scored by the function with the same boxes
    from scenemetrics.image import read_image

    r8 = torch.stack([read_image(tmp_path / "gt" / f"v{i}.png") for i in range(2)])
    p8 = torch.stack([read_image(tmp_path / "renders" / f"v{i}.png") for i in range(2)])
    boxes = [{"boxes": [[10, 10, 60, 50]], "classes": ["dog"]}, [[70, 20, 150, 110]]]
    expected = osim(p8, r8, model=nano, conf_threshold=0.3, boxes=boxes)
    assert report["osim"] == pytest.approx(float(expected.score), abs=1e-6)
    # a view the references do not have, or a scenes section: exit 1 naming the file
    (tmp_path / "typo.csv").write_text("view,x1,y1,x2,y2\nv9,0,0,4,4\n")
    assert main([*args, "--out", str(tmp_path / "o2"), "--boxes", str(tmp_path / "typo.csv")]) == 1
    (tmp_path / "far.csv").write_text("view,x1,y1,x2,y2\nv0,500,0,600,4\n")
    assert main([*args, "--out", str(tmp_path / "o3"), "--boxes", str(tmp_path / "far.csv")]) == 1


def test_osim_command_names_unknown_views(tmp_path, nano_ckpt, capsys):
    from scenemetrics.cli import main
    from scenemetrics.viz import save_png

    refs = images(1, seed=4)
    save_png((refs[0] * 255).round().to(torch.uint8), tmp_path / "gt" / "v0.png")
    save_png((refs[0] * 255).round().to(torch.uint8), tmp_path / "renders" / "v0.png")
    (tmp_path / "b.json").write_text(json.dumps({"views": {"v7": [[0, 0, 4, 4]]}, "scenes": {}}))
    args = ["osim", "--refs", str(tmp_path / "gt"), "--renders", str(tmp_path / "renders"), "--quiet",
            "--detector", "yolox_nano", "--weights", str(nano_ckpt), "--out", str(tmp_path / "o")]  # fmt: skip
    assert main([*args, "--boxes", str(tmp_path / "b.json")]) == 1
    assert "names view(s) that are not in --refs: 'v7'" in capsys.readouterr().err
    (tmp_path / "s.json").write_text(json.dumps({"scenes": {"x": {"v0": [[0, 0, 4, 4]]}}}))
    assert main([*args, "--boxes", str(tmp_path / "s.json")]) == 1
    assert "scores one scene" in capsys.readouterr().err
