"""draw_low_objects: red blends on the low objects of one view, nothing else touched."""

from __future__ import annotations

import pytest
import torch

from scenemetrics.osim.functional import OSIMResult
from scenemetrics.osim.viz import draw_low_objects


def make_result(score: float, boxes, r, view, classes=None, per_class=None) -> OSIMResult:
    n = len(boxes)
    z = torch.zeros(80, dtype=torch.float64)
    classes = classes if classes is not None else [0] * n
    return OSIMResult(
        score=torch.tensor(score),
        per_class=per_class if per_class is not None else {0: 0.5},
        class_saliency={c: 1.0 for c in set(classes)},
        class_counts={c: classes.count(c) for c in set(classes)},
        image_index=torch.tensor(view),
        boxes=torch.tensor(boxes, dtype=torch.float32),
        boxes_letterbox=torch.tensor(boxes, dtype=torch.float32) * 2,
        classes=torch.tensor(classes),
        det_scores=torch.linspace(0.9, 0.5, n),
        r=torch.tensor(r),
        s=torch.ones(n),
        r_sum=z,
        s_sum=z,
        count=z,
        ratio=2.0,
        content_size=(40, 60),
    )


def test_low_objects_are_blended_others_untouched() -> None:
    img = torch.randint(0, 256, (3, 20, 30), dtype=torch.uint8)
    res = make_result(
        0.7,
        boxes=[[2.0, 3.0, 6.9, 8.2], [10.0, 10.0, 14.0, 14.0], [20.0, 2.0, 25.0, 6.0], [1.0, 1.0, 3.0, 3.0]],
        r=[0.5, 0.9, 0.6, 0.1],
        view=[0, 0, 0, 1],
    )
    out = draw_low_objects(img, res, alpha=0.25, outline=False)
    assert out.dtype == torch.uint8 and tuple(out.shape) == (3, 20, 30)
    expected = img.clone().float()
    red = torch.tensor([255.0, 0, 0]).view(3, 1, 1)
    for x0, x1, y0, y1 in ((2, 6, 3, 8), (20, 25, 2, 6)):  # floor, inclusive: rows 3..8, cols 2..6
        expected[:, y0 : y1 + 1, x0 : x1 + 1] = (0.75 * expected[:, y0 : y1 + 1, x0 : x1 + 1] + 0.25 * red).round()
    assert torch.equal(out, expected.to(torch.uint8))
    # view 1 holds only the object at (1..3, 1..3)
    out1 = draw_low_objects(img, res, image_index=1, alpha=1.0, outline=False)
    assert torch.equal(out1[:, 1:4, 1:4], torch.tensor([255, 0, 0], dtype=torch.uint8).view(3, 1, 1).expand(3, 3, 3))
    mask = torch.ones(20, 30, dtype=torch.bool)
    mask[1:4, 1:4] = False
    assert torch.equal(out1[:, mask], img[:, mask])


def test_threshold_per_class_outline_float_and_nan() -> None:
    img = torch.full((3, 20, 30), 0.5)
    res = make_result(
        0.7,
        boxes=[[2.0, 2.0, 9.0, 9.0], [15.0, 5.0, 24.0, 15.0]],
        r=[0.5, 0.9],
        view=[0, 0],
        classes=[0, 3],
        per_class={0: 0.8, 3: 0.6},
    )
    base = torch.full((3, 20, 30), 128, dtype=torch.uint8)
    assert torch.equal(draw_low_objects(img, res, threshold=0.4), base)  # nothing below 0.4
    both = draw_low_objects(img, res, threshold=0.95, outline=False, alpha=0.5, color=(0, 0, 255))
    assert both[:, 5, 5].tolist() == [64, 64, 192] and both[:, 10, 20].tolist() == [64, 64, 192]
    per_class = draw_low_objects(img, res, per="class", outline=False, alpha=0.5)
    assert per_class[:, 5, 5].tolist() == [128, 128, 128]  # class 0: o = 0.8 >= 0.7
    assert per_class[:, 10, 20].tolist() == [192, 64, 64]  # class 3: o = 0.6 < 0.7
    outlined = draw_low_objects(img, res)
    assert outlined[:, 2, 5].tolist() == [255, 0, 0] and outlined[:, 3, 9].tolist() == [255, 0, 0]
    assert outlined[:, 5, 5].tolist() == [179, 77, 77]  # interior: 0.6 * 128 + 0.4 * color, rounded
    nan = make_result(float("nan"), boxes=[[2.0, 2.0, 9.0, 9.0]], r=[0.1], view=[0])
    assert torch.equal(draw_low_objects(img, nan), base)


def test_bad_arguments() -> None:
    res = make_result(0.7, boxes=[[2.0, 2.0, 9.0, 9.0]], r=[0.1], view=[0])
    img = torch.zeros(3, 20, 30)
    with pytest.raises(ValueError, match="per"):
        draw_low_objects(img, res, per="view")
    with pytest.raises(ValueError, match="alpha"):
        draw_low_objects(img, res, alpha=1.5)
    with pytest.raises(ValueError, match="image"):
        draw_low_objects(img[None], res)
    with pytest.raises(ValueError, match="original size"):
        draw_low_objects(torch.zeros(3, 40, 60), res)
    with pytest.raises(ValueError, match="image"):
        draw_low_objects(img + 2, res)
    with pytest.raises(ValueError, match="color"):
        draw_low_objects(img, res, color=(300, 0, 0))


def test_on_a_real_result(nano) -> None:
    from scenemetrics.osim import osim

    from .conftest import images
    from .test_functional import degrade

    ref = images(2, seed=41)
    test = degrade(ref)
    res = osim(test, ref, model=nano)
    for i in range(2):
        out = draw_low_objects(test[i], res, image_index=i)
        low = (res.image_index == i) & (res.r < res.score)
        changed = (out != draw_low_objects(test[i], res, image_index=i, threshold=-1.0)).any(0)
        assert bool(changed.any()) == bool(low.any())
