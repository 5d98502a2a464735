"""osim(): the paper's equations checked against direct recomputations, pooling, spans and edge cases."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from scenemetrics import hub
from scenemetrics.osim import functional as fn
from scenemetrics.osim.boxes import letterbox
from scenemetrics.osim.detector import clear_detector_cache, load_detector
from scenemetrics.osim.functional import box_to_span, osim, scene_score
from scenemetrics.osim.random import random_checkpoint
from scenemetrics.osim.saliency import gbvs

from .conftest import images


def degrade(x: torch.Tensor) -> torch.Tensor:
    """A render with artifacts: blurred and noisy."""
    g = torch.Generator().manual_seed(7)
    blurred = F.avg_pool2d(x, 5, stride=1, padding=2, count_include_pad=False)
    return (blurred + 0.08 * torch.randn(x.shape, generator=g)).clamp(0, 1)


def naive_mean(m: torch.Tensor, x1: float, y1: float, x2: float, y2: float, step: float, lim_y: int, lim_x: int):
    """Mean of m over the span of a box, written with plain Python loops (independent of box_spans)."""

    def span(a: float, b: float, n: int) -> range:
        lo = min(max(math.floor(a / step), 0), n - 1)
        hi = max(min(max(math.floor(b / step), 0), n - 1), lo)
        return range(lo, hi + 1)

    vals = [float(m[y, x]) for y in span(y1, y2, lim_y) for x in span(x1, x2, lim_x)]
    return sum(vals) / len(vals)


# ---------------------------------------------------------------------------------------------- spans


@pytest.mark.parametrize(
    ("a", "b", "step", "limit", "expected"),
    [
        (0.0, 31.9, 32, 20, (0, 0)),
        (0.0, 32.0, 32, 20, (0, 1)),
        (-10.0, 700.0, 32, 20, (0, 19)),
        (650.0, 700.0, 32, 20, (19, 19)),  # entirely beyond the content: the border cell
        (-50.0, -20.0, 32, 20, (0, 0)),
        (40.0, 47.9, 16, 40, (2, 2)),
        (40.0, 48.0, 16, 40, (2, 3)),
        (7.99, 8.0, 8, 80, (0, 1)),
        (5.0, 5.0, 1, 640, (5, 5)),  # a 1-px box
        (5.7, 5.2, 1, 640, (5, 5)),  # degenerate (x2 < x1) keeps one cell
        (12.0, 3.0, 8, 80, (1, 1)),
        (630.2, 639.9, 1, 635, (630, 634)),
    ],
)
def test_box_to_span(a, b, step, limit, expected) -> None:
    lo, hi = box_to_span(a, b, step, limit)
    assert (int(lo), int(hi)) == expected


# ---------------------------------------------------------------------------------------------- properties


def test_identical_images_score_one(nano) -> None:
    x = images(3)
    res = osim(x, x, model=nano)
    assert res.r.numel() > 3
    assert float(res.score) == pytest.approx(1.0, abs=1e-5)
    assert torch.allclose(res.r, torch.ones_like(res.r), atol=1e-5)
    assert all(v == pytest.approx(1.0, abs=1e-5) for v in res.per_class.values())
    assert res.score.dtype == torch.float32 and res.score.ndim == 0


def test_degraded_render_and_direct_recomputation(nano) -> None:
    ref = images(2, 120, 160, seed=1)
    test = degrade(ref)
    res = osim(test, ref, model=nano)
    assert 0.0 <= float(res.score) < 1.0
    # r_ij from the extract() features, s_ij from gbvs on the resized reference, by plain loops
    lb_ref, lb_test = letterbox(ref, 416), letterbox(test, 416)
    with torch.no_grad():
        f_ref = nano.extract(lb_ref.canvas)["dark5"]
        f_test = nano.extract(lb_test.canvas)["dark5"]
    cos = F.cosine_similarity(f_ref, f_test, dim=1)
    h_c, w_c = lb_ref.content_size
    assert (h_c, w_c) == (312, 416)
    sal = gbvs(lb_ref.canvas[:, :, :h_c, :w_c].flip(1) / 255)
    for k in range(res.r.numel()):
        i = int(res.image_index[k])
        x1, y1, x2, y2 = res.boxes_letterbox[k].tolist()
        r = naive_mean(cos[i], x1, y1, x2, y2, 32, math.ceil(h_c / 32), math.ceil(w_c / 32))
        s = naive_mean(sal[i], x1, y1, x2, y2, 1, h_c, w_c)
        assert float(res.r[k]) == pytest.approx(r, abs=1e-5)
        assert float(res.s[k]) == pytest.approx(s, abs=1e-5)
    assert torch.allclose(res.boxes, res.boxes_letterbox / res.ratio)
    # eq. 5 from the per-object outputs, in float64
    classes = sorted(set(res.classes.tolist()))
    o = {c: sum(float(res.r[k]) for k in range(len(res.r)) if int(res.classes[k]) == c) for c in classes}
    s_l = {c: sum(float(res.s[k]) for k in range(len(res.s)) if int(res.classes[k]) == c) for c in classes}
    n = {c: int((res.classes == c).sum()) for c in classes}
    expected = sum(s_l[c] / n[c] * o[c] / n[c] for c in classes) / sum(s_l[c] / n[c] for c in classes)
    assert float(res.score) == pytest.approx(expected, abs=1e-6)
    assert res.class_counts == n
    assert res.per_class == pytest.approx({c: o[c] / n[c] for c in classes})
    assert res.class_saliency == pytest.approx({c: s_l[c] / n[c] for c in classes})
    assert res.count.sum() == res.r.numel() and res.r_sum.dtype == torch.float64 and res.r_sum.shape == (81,)
    table = res.class_table()
    assert [row["o_l"] for row in table] == sorted(row["o_l"] for row in table)
    assert table[0]["name"] == fn.class_name(table[0]["class_id"])
    # objects are ordered by view, then by descending detection score
    assert res.image_index.tolist() == sorted(res.image_index.tolist())
    for i in range(2):
        sc = res.det_scores[res.image_index == i]
        assert torch.all(sc[:-1] >= sc[1:])


def test_injected_saliency_and_uniform(nano) -> None:
    ref = images(2, 100, 150, seed=2)
    test = degrade(ref)
    seen = {}

    def ramp(content: torch.Tensor) -> torch.Tensor:
        seen["shape"] = tuple(content.shape)
        seen["content"] = content
        b, _, h, w = content.shape
        return content[:, 0] + torch.linspace(0, 1, w).view(1, 1, w).expand(b, h, w)

    res = osim(test, ref, model=nano, saliency=ramp)
    lb = letterbox(ref, 416)
    h_c, w_c = lb.content_size
    assert seen["shape"] == (2, 3, h_c, w_c)
    assert torch.allclose(seen["content"], lb.canvas[:, :, :h_c, :w_c].flip(1) / 255)
    sal = ramp(lb.canvas[:, :, :h_c, :w_c].flip(1) / 255)
    for k in range(res.s.numel()):
        x1, y1, x2, y2 = res.boxes_letterbox[k].tolist()
        s = naive_mean(sal[int(res.image_index[k])], x1, y1, x2, y2, 1, h_c, w_c)
        assert float(res.s[k]) == pytest.approx(s, abs=1e-5)
    uni = osim(test, ref, model=nano, saliency="uniform")
    assert torch.allclose(uni.s, torch.ones_like(uni.s))
    assert float(uni.score) == pytest.approx(sum(uni.per_class.values()) / len(uni.per_class), abs=1e-6)
    with pytest.raises(ValueError, match="saliency"):
        osim(test, ref, model=nano, saliency=lambda c: c[:, 0, :5])
    with pytest.raises(ValueError, match="non-negative"):
        osim(test, ref, model=nano, saliency=lambda c: -c[:, 0])


def test_zero_saliency_falls_back_to_equal_class_weights(nano) -> None:
    ref = images(2, seed=3)
    test = degrade(ref)
    with pytest.warns(UserWarning, match="zero saliency"):
        res = osim(test, ref, model=nano, saliency=lambda c: torch.zeros_like(c[:, 0]))
    assert float(res.score) == pytest.approx(sum(res.per_class.values()) / len(res.per_class), abs=1e-6)


def test_saliency_weighting_changes_the_score(fixed_detector) -> None:
    # class 0 in the intact view 0, class 1 in the degraded view 1; saliency a on view 0 and b on view 1
    ref = images(2, 96, 128, seed=4)
    test = ref.clone()
    test[1] = degrade(ref[1:2])[0]
    model = fixed_detector([[(20, 20, 200, 200, 0)], [(100, 50, 380, 280, 1)]])

    def weights(a: float, b: float):
        return lambda c: torch.tensor([a, b]).view(2, 1, 1).expand(2, *c.shape[-2:]).clone()

    rho = osim(test, ref, model=model, saliency="uniform").per_class[1]
    assert rho < 0.999
    for a, b in ((1.0, 0.0), (0.0, 1.0), (1.0, 3.0)):
        res = osim(test, ref, model=model, saliency=weights(a, b))
        assert res.per_class[0] == pytest.approx(1.0, abs=1e-5) and res.per_class[1] == pytest.approx(rho)
        assert res.class_saliency == pytest.approx({0: a, 1: b})
        assert float(res.score) == pytest.approx((a * 1.0 + b * rho) / (a + b), abs=1e-5)


def test_pooling_is_per_class_over_views_not_a_mean_of_views(fixed_detector) -> None:
    ref = images(2, 96, 128, seed=5)
    test = ref.clone()
    test[1] = degrade(ref[1:2])[0]
    boxes = [[(10, 10, 100, 100, 0), (150, 20, 300, 120, 0), (200, 150, 400, 300, 0)], [(50, 50, 300, 250, 0)]]
    model = fixed_detector(boxes)
    res = osim(test, ref, model=model, saliency="uniform")
    rho = float(res.r[3])
    assert rho < 0.999 and torch.allclose(res.r[:3], torch.ones(3), atol=1e-5)
    assert float(res.score) == pytest.approx((3 + rho) / 4, abs=1e-6)  # one class: o = mean of all four r
    per_view = res.view_scores(2)
    assert per_view == pytest.approx([1.0, rho], abs=1e-5)
    assert abs(float(res.score) - sum(per_view) / 2) > 1e-3


def test_nothing_detected_gives_nan_and_one_warning(nano) -> None:
    x = images(2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = osim(x, x, model=nano, conf_threshold=1.01)
    msgs = [str(w.message) for w in rec if issubclass(w.category, UserWarning)]
    assert len(msgs) == 1 and "no object was detected" in msgs[0] and "1.01" in msgs[0]
    assert math.isnan(float(res.score))
    assert res.r.numel() == 0 and res.boxes.shape == (0, 4) and res.per_class == {}
    assert float(res.count.sum()) == 0.0 and res.r_sum.shape == (81,)  # 80 COCO classes + the unlabelled pool
    with pytest.warns(UserWarning, match="no object"):
        empty = osim(x[:0], x[:0], model=nano)
    assert math.isnan(float(empty.score)) and empty.image_index.numel() == 0


def test_small_content_uses_uniform_saliency(fixed_detector) -> None:
    ref = images(1, 12, 300, seed=6)  # letterboxes to 16 x 416 at 416... and 12 * 416 / 300 = 16.6 -> 16
    tiny = images(1, 8, 300, seed=6)  # -> 11 x 416: too small for GBVS
    model = fixed_detector([[(0, 0, 100, 10, 3)]])
    res = osim(ref, ref, model=model)
    assert res.content_size == (16, 416) and float(res.s[0]) > 0
    with pytest.warns(UserWarning, match="too small for GBVS"):
        res = osim(tiny, tiny, model=model)
    assert float(res.s[0]) == 1.0 and float(res.score) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("layer", ["dark3", "p4", "p5"])
def test_other_layers(nano, layer) -> None:
    ref = images(1, 120, 160, seed=8)
    test = degrade(ref)
    res = osim(test, ref, model=nano, layer=layer)
    stride = {"dark3": 8, "p4": 16, "p5": 32}[layer]
    lb_ref, lb_test = letterbox(ref, 416), letterbox(test, 416)
    with torch.no_grad():
        cos = F.cosine_similarity(
            nano.extract(lb_ref.canvas, (layer,))[layer], nano.extract(lb_test.canvas, (layer,))[layer], dim=1
        )
    h_c, w_c = lb_ref.content_size
    x1, y1, x2, y2 = res.boxes_letterbox[0].tolist()
    expected = naive_mean(cos[0], x1, y1, x2, y2, stride, math.ceil(h_c / stride), math.ceil(w_c / stride))
    assert float(res.r[0]) == pytest.approx(expected, abs=1e-5)
    assert float(osim(ref, ref, model=nano, layer=layer).score) == pytest.approx(1.0, abs=1e-5)


def test_bad_inputs(nano) -> None:
    x = images(2)
    with pytest.raises(ValueError, match="same shape"):
        osim(x, images(2, 120, 161), model=nano)
    with pytest.raises(ValueError, match="same shape"):
        osim(x[:1], x, model=nano)
    with pytest.raises(ValueError, match="preds"):
        osim(x * 3, x, model=nano)
    with pytest.raises(ValueError, match="target"):
        osim(x, x[:, :2], model=nano)
    with pytest.raises(ValueError, match="layer"):
        osim(x, x, model=nano, layer="dark6")
    with pytest.raises(ValueError, match="saliency"):
        osim(x, x, model=nano, saliency="itti")
    with pytest.raises(ValueError, match="model"):
        osim(x, x, model=torch.nn.Identity())
    with pytest.raises(ValueError, match="conf_threshold"):
        osim(x, x, model=nano, conf_threshold="high")


def test_scene_score_by_hand() -> None:
    r = torch.zeros(80, dtype=torch.float64)
    s = torch.zeros(80, dtype=torch.float64)
    n = torch.zeros(80, dtype=torch.float64)
    r[[2, 7]] = torch.tensor([1.6, 0.3], dtype=torch.float64)  # class 2: two objects, class 7: one
    s[[2, 7]] = torch.tensor([0.2, 0.6], dtype=torch.float64)
    n[[2, 7]] = torch.tensor([2.0, 1.0], dtype=torch.float64)
    assert float(scene_score(r, s, n)) == pytest.approx((0.1 * 0.8 + 0.6 * 0.3) / 0.7, abs=1e-7)
    with pytest.warns(UserWarning, match="no object"):
        assert math.isnan(float(scene_score(r * 0, s * 0, n * 0)))


def test_detector_loaded_through_the_hub_and_cached(monkeypatch, nano_ckpt) -> None:
    x = images(1)
    clear_detector_cache()
    cached = hub.cache_dir("osim") / "yolox_nano.pth"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(nano_ckpt.read_bytes())
    res = osim(x, x, detector="yolox-nano")
    assert float(res.score) == pytest.approx(1.0, abs=1e-5)
    assert load_detector("yolox_nano") is load_detector("yolox_nano", weights_path=cached)
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError, match=r"yolox_x\.pth"):
        osim(x, x)
    clear_detector_cache()


def test_random_checkpoint_via_weights_path(tmp_path) -> None:
    path = random_checkpoint("yolox_nano", tmp_path / "w.pth", seed=3)
    x = images(2, seed=9)
    res = osim(degrade(x), x, detector="yolox_nano", weights_path=path)
    assert res.r.numel() > 0 and 0 <= float(res.score) < 1
    clear_detector_cache()


@pytest.mark.gpu
def test_cuda_agrees_with_cpu(nano_ckpt, fixed_detector) -> None:
    # fixed boxes: only the features and the saliency may differ (TF32 convolutions on recent GPUs, ~1e-3)
    x = images(2, seed=10)
    y = degrade(x)
    model = fixed_detector([[(10, 10, 200, 150, 0), (150, 100, 400, 300, 5)], [(0, 0, 415, 311, 2)]])
    cpu = osim(y, x, model=model)
    gpu = osim(y.cuda(), x.cuda(), model=model.cuda())
    assert gpu.score.device.type == "cuda"
    assert torch.allclose(gpu.r.cpu(), cpu.r, atol=5e-3) and torch.allclose(gpu.s.cpu(), cpu.s, atol=5e-3)
    assert float(gpu.score) == pytest.approx(float(cpu.score), abs=5e-3)
    with pytest.raises(ValueError, match="move one of them"):
        osim(y.cuda(), x.cuda(), model=load_detector("yolox_nano", nano_ckpt))
    clear_detector_cache()
