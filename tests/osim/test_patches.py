"""OSIM's Bbox-patch baselines: each object's patch scored by PSNR / SSIM / LPIPS / an embedding, pooled as OSIM
pools. Expected values come from plain loops over the pixels (PSNR), torchmetrics (SSIM on the same window) and the
pooling formula written out; the objects and saliency weights must be exactly OSIM's."""

from __future__ import annotations

import math
import pickle

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.osim import OSIMPatches, PatchScore, embedding_score, osim, osim_patches, psnr_score
from scenemetrics.osim.patches import object_windows

from .conftest import images


def degrade(x: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    blurred = F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
    return (blurred + 0.04 * torch.randn(x.shape, generator=g)).clamp(0, 1)


def mean_colour(x: torch.Tensor) -> torch.Tensor:
    """A toy image embedding: the mean RGB colour (module level, so a metric holding it pickles)."""
    return x.mean(dim=(2, 3))


def naive_psnr(p: torch.Tensor, t: torch.Tensor, y0: int, y1: int, x0: int, x1: int) -> float:
    d = [float(p[c, y, x] - t[c, y, x]) ** 2 for c in range(3) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
    return 10 * math.log10(1 / (sum(d) / len(d)))


def naive_window(box: list[float], h: int, w: int) -> tuple[int, int, int, int]:
    """Rows and columns floor(y1)..floor(y2), floor(x1)..floor(x2), clamped to the image (no growth)."""
    x1, y1, x2, y2 = box
    cx = (max(min(math.floor(x1), w - 1), 0), max(min(math.floor(x2), w - 1), 0))
    cy = (max(min(math.floor(y1), h - 1), 0), max(min(math.floor(y2), h - 1), 0))
    return cy[0], max(cy), cx[0], max(cx)


def pooled(r: list[float], s: list[float], classes: list[int]) -> float:
    """OSIM's eq. (5) written out: per-class means of r and s, then sum s_l o_l / sum s_l."""
    by: dict[int, list[tuple[float, float]]] = {}
    for ri, si, c in zip(r, s, classes, strict=True):
        by.setdefault(c, []).append((ri, si))
    o = {c: sum(v[0] for v in vals) / len(vals) for c, vals in by.items()}
    w = {c: sum(v[1] for v in vals) / len(vals) for c, vals in by.items()}
    return sum(w[c] * o[c] for c in by) / sum(w.values())


def test_patch_psnr_is_the_pooled_psnr_of_each_box(nano):
    refs = images(2, seed=4)
    preds = degrade(refs)
    boxes = [{"boxes": [[10.4, 12.0, 60.2, 50.9], [100, 30, 159.5, 119.9]], "classes": ["cat", "dog"]},
             {"boxes": [[0, 0, 40, 40], [20, 60, 90, 110]], "classes": ["cat", None]}]  # fmt: skip
    res = osim_patches(preds, refs, psnr_score(), model=nano, conf_threshold=2.0, boxes=boxes)
    expected_r = []
    for i, entry in enumerate(boxes):
        for box in entry["boxes"]:
            expected_r.append(naive_psnr(preds[i], refs[i], *naive_window(box, 120, 160)))
    assert res.r.tolist() == pytest.approx(expected_r, abs=1e-4)
    # the saliency weights are OSIM's own for the same objects
    ref = osim(preds, refs, model=nano, conf_threshold=2.0, boxes=boxes)
    assert res.s.tolist() == pytest.approx(ref.s.tolist(), abs=1e-7) and res.classes.tolist() == [15, 16, 15, 80]
    assert float(res.score) == pytest.approx(pooled(expected_r, ref.s.tolist(), res.classes.tolist()), rel=1e-5)
    uniform = osim_patches(preds, refs, psnr_score(), model=nano, conf_threshold=2.0, boxes=boxes, saliency="uniform")
    cat, dog, unl = (expected_r[0] + expected_r[2]) / 2, expected_r[1], expected_r[3]
    assert float(uniform.score) == pytest.approx((cat + dog + unl) / 3, rel=1e-5)


def test_patches_use_exactly_the_objects_osim_detects(nano):
    refs = images(2, seed=6)
    preds = degrade(refs)
    a = osim(preds, refs, model=nano, conf_threshold=0.3)
    b = osim_patches(preds, refs, psnr_score(), model=nano, conf_threshold=0.3)
    assert a.r.numel() > 3
    for field in ("image_index", "classes", "boxes", "boxes_letterbox", "s", "count"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    assert not torch.equal(a.r, b.r)


def test_object_windows_grow_small_boxes_inside_the_image():
    boxes = torch.tensor([[3.2, 4.9, 3.7, 5.1], [0.0, 0.0, 1.0, 1.0], [18.5, 9.0, 25.0, 30.0], [2.0, 2.0, 12.0, 8.0]])
    assert object_windows(boxes, (12, 20)) == [(4, 5, 3, 3), (0, 1, 0, 1), (9, 11, 18, 19), (2, 8, 2, 12)]
    # grown to 6 around the centre, shifted back inside at the borders; large windows unchanged
    assert object_windows(boxes, (12, 20), min_side=6) == [(2, 7, 1, 6), (0, 5, 0, 5), (6, 11, 14, 19), (2, 8, 2, 12)]
    with pytest.raises(ValueError, match="at least 31 px per side; received 12x20"):
        object_windows(boxes, (12, 20), min_side=31)


def test_patch_ssim_on_a_grown_window_equals_torchmetrics_on_that_window(nano):
    from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

    from scenemetrics.fullref import ssim

    refs = images(1, seed=8)
    preds = degrade(refs)
    score = PatchScore(ssim, "ssim", higher_is_better=True, min_side=6)
    boxes = [[[50.0, 40.0, 52.5, 42.0], [10, 10, 70, 90]]]  # a 3x3 box, grown to 6x6 around its centre
    res = osim_patches(preds, refs, score, model=nano, conf_threshold=2.0, boxes=boxes, saliency="uniform")
    windows = [(39, 44, 49, 54), (10, 90, 10, 70)]
    want = [float(tm_ssim(preds[:, :, y0 : y1 + 1, x0 : x1 + 1], refs[:, :, y0 : y1 + 1, x0 : x1 + 1], data_range=1.0))
            for y0, y1, x0, x1 in windows]  # fmt: skip
    assert res.r.tolist() == pytest.approx(want, abs=5e-5)  # float32: separable vs 2-D Gaussian filter
    assert float(res.score) == pytest.approx(sum(want) / 2, abs=5e-5)  # one pool (unlabelled), uniform weights


def test_embedding_score_is_the_cosine_of_the_patch_embeddings(nano):
    refs = images(1, seed=9)
    preds = refs.flip(1)  # channels swapped: a different colour
    boxes = [[[0, 0, 50, 40], [80, 60, 150, 110]]]
    res = osim_patches(preds, refs, embedding_score(mean_colour, "colour"), model=nano, conf_threshold=2.0, boxes=boxes)
    for k, (x1, y1, x2, y2) in enumerate(boxes[0]):
        a = preds[0, :, y1 : y2 + 1, x1 : x2 + 1].mean(dim=(1, 2)).double()
        b = refs[0, :, y1 : y2 + 1, x1 : x2 + 1].mean(dim=(1, 2)).double()
        assert float(res.r[k]) == pytest.approx(float(a @ b / (a.norm() * b.norm())), abs=1e-6)
    with pytest.raises(ValueError, match=r"must return \(B, D\) embeddings"):
        osim_patches(preds, refs, embedding_score(lambda x: x.mean()), model=nano, conf_threshold=2.0, boxes=boxes)
    with pytest.raises(ValueError, match="`embed` must be callable"):
        embedding_score("clip")


def test_metric_over_updates_equals_the_function_and_pickles(nano):
    refs = images(3, seed=4)
    preds = degrade(refs)
    whole = osim_patches(preds, refs, psnr_score(), model=nano, conf_threshold=0.3)
    metric = OSIMPatches(embedding_score(mean_colour), model=nano, conf_threshold=0.3)
    assert metric.higher_is_better is True
    metric = OSIMPatches(psnr_score(), model=nano, conf_threshold=0.3)
    for i in range(3):
        metric.update(preds[i : i + 1], refs[i : i + 1])
    assert float(metric.compute()) == pytest.approx(float(whole.score), rel=1e-6)
    assert metric.r_sum.shape == (81,) and sorted(metric.state_dict()) == []
    clone = pickle.loads(pickle.dumps(metric))
    assert float(clone.compute()) == pytest.approx(float(whole.score), rel=1e-6)
    lower = OSIMPatches(PatchScore(lambda p, t: (p - t).abs().mean(), "l1", higher_is_better=False), model=nano)
    assert lower.higher_is_better is False and type(lower).higher_is_better is None
    with pytest.raises(ValueError, match="`score` must be"):
        OSIMPatches("psnr", model=nano)
    with pytest.raises(ValueError, match="`min_side` must be an int >= 1"):
        PatchScore(psnr_score().fn, "psnr", True, min_side=0)


def test_unchanged_patches_have_infinite_psnr_without_nan(nano):
    refs = images(1, seed=4)
    res = osim_patches(refs, refs, psnr_score(), model=nano, conf_threshold=2.0, boxes=[[[0, 0, 30, 30]]])
    assert math.isinf(float(res.r[0])) and math.isinf(float(res.score))


# ------------------------------------------------------------------------------------------------ the registry


def test_registered_baselines_build_and_declare_their_direction(tmp_path):
    from scenemetrics.registry import MetricConfig, get_metric, option_flags

    expected = {"osim_patch_psnr": True, "osim_patch_ssim": True, "osim_patch_lpips": False, "osim_patch_clip": True}
    for name, best in expected.items():
        entry = get_metric(name)
        assert entry.higher_is_better is best and entry.family == "osim" and entry.per_view is False
    flags = {f.name: f.metrics for f in option_flags() if f.family == "osim"}
    assert set(flags["osim_boxes"]) == {"osim", *expected} and flags["osim_lpips_net"] == ("osim_patch_lpips",)
    lpips = get_metric("osim_patch_lpips").build(MetricConfig("osim_patch_lpips", {}, "cpu", True, work_dir=tmp_path))
    assert lpips.higher_is_better is False and lpips.score.min_side == 31


@pytest.mark.extra("baselines")
def test_patch_clip_is_the_cosine_of_the_baselines_clip_embeddings(tmp_path):
    from scenemetrics.baselines import load_clip, random_clip_folder
    from scenemetrics.registry import MetricConfig, get_metric

    folder = random_clip_folder(tmp_path / "clip")
    config = MetricConfig("osim_patch_clip", {"clip_model": folder}, "cpu", random_weights=True, work_dir=tmp_path)
    metric = get_metric("osim_patch_clip").build(config)
    assert metric.score.name == "clip" and metric.higher_is_better is True
    g = torch.Generator().manual_seed(5)
    a, b = torch.rand(2, 3, 20, 28, generator=g), torch.rand(2, 3, 20, 28, generator=g)
    embed = load_clip(folder)
    expected = torch.nn.functional.cosine_similarity(embed(a), embed(b), dim=1)
    torch.testing.assert_close(metric.score.fn(a, b), expected, atol=1e-6, rtol=0)
