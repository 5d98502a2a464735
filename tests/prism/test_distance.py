"""D_PRISM (functional and PRISMDistance): zero for identical triplets, symmetry, range, accumulation, states."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

import scenemetrics as sm
from scenemetrics.prism import PRISMDistance, ProjectionHead, prism_distance, prism_embed

POSE = torch.tensor([[0.0, 30.0, 0.0], [-10.0, 200.0, 0.3], [5.0, 90.0, -0.2]])


def _triplets(b: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(b, 3, 64, 64, generator=g) for _ in range(3)]


@pytest.fixture(scope="module")
def head() -> ProjectionHead:
    torch.manual_seed(0)
    return ProjectionHead(in_dim=208, out_dim=16, hidden_dim=32).eval()


@pytest.mark.parametrize("use_head", [True, False])
def test_identical_triplets_give_zero(extractor64, head, use_head):
    src, pred, _ = _triplets(3, 0)
    with torch.no_grad():
        d = prism_distance(extractor64, head if use_head else None, src, pred, pred.clone(), POSE)
    assert d.shape == (3,) and bool((d <= 1e-6).all())


@pytest.mark.parametrize("use_head", [True, False])
def test_symmetric_in_range_and_equal_to_the_hand_formula(extractor64, head, use_head):
    h = head if use_head else None
    src, pred, gt = _triplets(3, 1)
    with torch.no_grad():
        d = prism_distance(extractor64, h, src, pred, gt, POSE)
        swapped = prism_distance(extractor64, h, src, gt, pred, POSE)
        e_pred = prism_embed(extractor64, h, src, pred, POSE)
        e_gt = prism_embed(extractor64, h, src, gt, POSE)
    assert torch.allclose(e_pred.norm(dim=-1), torch.ones(3), atol=1e-6)
    manual = 0.5 * torch.sqrt(((e_pred - e_gt) ** 2).sum(dim=-1))
    assert torch.allclose(d, manual, atol=1e-6)
    assert torch.allclose(d, swapped, atol=1e-6)
    assert bool(((d > 0) & (d <= 1)).all())


def test_metric_accumulates_like_one_batch(extractor64, head):
    src, pred, gt = _triplets(3, 2)
    metric = PRISMDistance(extractor64, head)
    metric.update(src[:2], pred[:2], gt[:2], POSE[:2])
    assert metric.last_distances.shape == (2,)
    metric.update(src[2:], pred[2:], gt[2:], POSE[2])
    with torch.no_grad():
        expected = prism_distance(extractor64, head, src, pred, gt, POSE).mean()
    value = metric.compute()
    assert value.dtype == torch.float32 and value.shape == ()
    assert torch.allclose(value, expected, atol=1e-6)
    assert int(metric.count) == 3


def test_compute_before_update_is_nan_with_a_warning(extractor64):
    metric = sm.PRISMDistance(extractor64)
    with pytest.warns(UserWarning, match="before any triplet"):
        assert torch.isnan(metric.compute())


def test_empty_batch_adds_nothing(extractor64):
    src, pred, gt = _triplets(2, 3)
    metric = PRISMDistance(extractor64)
    metric.update(src[:0], pred[:0], gt[:0], POSE[:0])
    assert int(metric.count) == 0
    metric.update(src, pred, gt, POSE[:2])
    assert int(metric.count) == 2


def test_state_dict_holds_only_the_states(extractor64, head):
    metric = PRISMDistance(extractor64, head)
    assert set(metric.state_dict()) <= {"distance_sum", "count"}
    assert not any("unet" in k or "fc1" in k for k in metric.state_dict())
    assert list(metric.children()) == []
    assert metric.higher_is_better is False and metric.is_differentiable is False


def test_bad_inputs_raise(extractor64):
    src, pred, gt = _triplets(2, 4)
    metric = PRISMDistance(extractor64)
    with pytest.raises(ValueError, match="pred"):
        metric.update(src, pred[:1], gt, POSE[:2])
    with pytest.raises(ValueError, match="pred"):
        metric.update(src, pred + 2, gt, POSE[:2])
    with pytest.raises(ValueError, match="pose"):
        metric.update(src, pred, gt, torch.zeros(2, 4))
    with pytest.raises(TypeError, match="extractor"):
        PRISMDistance(None)


def test_each_update_checks_each_image_batch_once(extractor64, monkeypatch):
    """source, pred and target are checked once per update (source was checked twice: for each of its two triplets)."""
    import sys

    import scenemetrics.image as image_module

    real, calls = image_module.check_images, []

    def counting(x, name="images", *args, **kwargs):
        calls.append(name)
        return real(x, name, *args, **kwargs)

    for module in [m for n, m in sys.modules.items() if n.startswith("scenemetrics.prism")]:
        if getattr(module, "check_images", None) is real:
            monkeypatch.setattr(module, "check_images", counting)
    metric = PRISMDistance(extractor64)
    src, pred, gt = _triplets(3, 5)
    metric.update(src, pred, gt, POSE)
    assert sorted(calls) == ["pred", "source", "target"] and int(metric.count) == 3
