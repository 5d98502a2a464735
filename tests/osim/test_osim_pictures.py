"""``low_objects_picture``: the OSIM picture for people draws only objects below the scene score, labelled."""

from __future__ import annotations

import math

import pytest
import torch

from scenemetrics.osim.functional import OSIMResult
from scenemetrics.osim.viz import low_objects_picture
from scenemetrics.viz import to_uint8

H, W = 40, 60


def _result(score: float, r: list[float], classes: list[int], boxes: list[list[float]], views: list[int]) -> OSIMResult:
    z = torch.zeros(80, dtype=torch.float64)
    n = len(r)
    return OSIMResult(
        score=torch.tensor(score),
        per_class={c: 0.5 for c in classes},
        class_saliency={c: 1.0 for c in classes},
        class_counts={c: 1 for c in classes},
        image_index=torch.tensor(views, dtype=torch.long),
        boxes=torch.tensor(boxes, dtype=torch.float32).view(n, 4),
        boxes_letterbox=torch.tensor(boxes, dtype=torch.float32).view(n, 4),
        classes=torch.tensor(classes, dtype=torch.long),
        det_scores=torch.full((n,), 0.9),
        r=torch.tensor(r, dtype=torch.float32),
        s=torch.ones(n),
        r_sum=z,
        s_sum=z,
        count=z,
        ratio=1.0,
        content_size=(H, W),
    )


# person (0) r=0.5 and dog (16) r=0.3 are below the scene score 0.6; car (2) r=0.9 is not
BOXES = [[2.0, 14.0, 14.0, 24.0], [44.0, 28.0, 58.0, 38.0], [20.0, 14.0, 32.0, 24.0]]
RESULT = _result(0.6, [0.5, 0.9, 0.3], [0, 2, 16], BOXES, [0, 0, 0])


def _image() -> torch.Tensor:
    return torch.rand(3, H, W, generator=torch.Generator().manual_seed(0))


def _tile(pic) -> torch.Tensor:
    x0, y0, x1, y1 = pic.tiles[0]["box"]
    s = pic.info["scale"]
    return pic.image[:, y0:y1:s, x0:x1:s]  # back at the view's own size


def test_only_low_objects_are_drawn_and_labelled_lowest_first() -> None:
    img = _image()
    pic = low_objects_picture(img, RESULT)
    info = pic.info
    assert info["threshold"] == pytest.approx(0.6) and info["num_objects"] == 3 and info["notice"] is None
    assert [(o["class"], round(o["r"], 4)) for o in info["low_objects"]] == [("dog", 0.3), ("person", 0.5)]
    assert all(o["labelled"] for o in info["low_objects"])
    assert info["scale"] == 9 and pic.tiles[0]["box"][3] - pic.tiles[0]["box"][1] == H * 9
    tile, orig = _tile(pic), to_uint8(img)
    # the car (not low) is untouched, its box interior equals the input
    assert torch.equal(tile[:, 30:37, 46:57], orig[:, 30:37, 46:57])
    # far from every box the image is untouched
    assert torch.equal(tile[:, 28:, :40], orig[:, 28:, :40])
    # inside a low box (away from outline and label) the image is blended with red
    inner = tile[:, 18:22, 5:11].float()
    expected = (0.65 * orig[:, 18:22, 5:11].float() + 0.35 * torch.tensor([230.0, 0.0, 0.0]).view(3, 1, 1)).round()
    assert (inner - expected).abs().max() <= 1
    assert "2 of 3 detected object(s)" in pic.notes[0] and "scene OSIM 0.6000" in pic.notes[0]
    assert pic.legend and pic.legend[0][1] == (230, 0, 0)


def test_max_labels_limits_the_labels() -> None:
    pic = low_objects_picture(_image(), RESULT, max_labels=1)
    assert [o["labelled"] for o in pic.info["low_objects"]] == [True, False]
    assert any("outlined only" in n for n in pic.notes)
    with pytest.raises(ValueError, match="`max_labels`"):
        low_objects_picture(_image(), RESULT, max_labels=-1)


def test_notice_when_no_object_is_below_the_scene_score() -> None:
    img = _image()
    pic = low_objects_picture(img, RESULT, threshold=0.1, title="view a")
    assert pic.title == "view a" and pic.info["low_objects"] == []
    assert pic.info["notice"] == "No object scores below the scene OSIM 0.1000."
    tile, orig = _tile(pic), to_uint8(img)
    # no box drawn anywhere; the notice is drawn in the top-left corner of the view
    assert torch.equal(tile[:, 8:], orig[:, 8:])
    assert not torch.equal(tile[:, :4], orig[:, :4])


def test_notice_without_detections() -> None:
    nan = _result(float("nan"), [], [], [], [])
    pic = low_objects_picture(_image(), nan)
    assert "undefined (NaN)" in pic.info["notice"] and math.isnan(pic.info["threshold"])
    other_view = low_objects_picture(_image(), RESULT, image_index=1)
    assert other_view.info["notice"] == "No object detected in this view (scene OSIM 0.6000)."
    assert other_view.info["num_objects"] == 0
