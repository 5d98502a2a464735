"""PRISMLoss: gradients reach the prediction only, zero gradient at the optimum, SGD reduces the loss."""

from __future__ import annotations

import importlib

import pytest
import torch

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

from scenemetrics.losses import PRISMLoss
from scenemetrics.prism import ProjectionHead, prism_distance

POSE = torch.tensor([[0.0, 30.0, 0.0], [-10.0, 200.0, 0.3]])


def _images(seed: int):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(2, 3, 64, 64, generator=g) for _ in range(3)]


@pytest.fixture(scope="module")
def head() -> ProjectionHead:
    torch.manual_seed(0)
    return ProjectionHead(in_dim=208, out_dim=16, hidden_dim=32)


def test_value_and_gradients(extractor64, head):
    src, pred, gt = _images(0)
    loss_fn = PRISMLoss(extractor64, head, reduction="none")
    pred = pred.clone().requires_grad_(True)
    d = loss_fn(src, pred, gt, POSE)
    with torch.no_grad():
        expected = prism_distance(extractor64, head, src, pred, gt, POSE)
    assert torch.allclose(d.detach(), expected, atol=1e-6)
    d.sum().backward()
    assert pred.grad is not None and torch.isfinite(pred.grad).all() and pred.grad.abs().sum() > 0
    assert all(p.grad is None for p in extractor64.parameters())
    assert all(p.grad is None for p in head.parameters())


def test_zero_gradient_not_nan_at_pred_equal_target(extractor64, head):
    src, _, gt = _images(1)
    pred = gt.clone().requires_grad_(True)
    loss = PRISMLoss(extractor64, head)(src, pred, gt, POSE)
    loss.backward()
    assert float(loss.detach()) <= 1e-6
    assert torch.isfinite(pred.grad).all() and float(pred.grad.abs().max()) == 0.0


def test_reductions_and_out_of_range_pred(extractor64):
    src, pred, gt = _images(2)
    per = PRISMLoss(extractor64, reduction="none")(src, pred * 1.05, gt, POSE)  # overshoot is allowed
    assert per.shape == (2,)
    assert torch.allclose(PRISMLoss(extractor64, reduction="sum")(src, pred * 1.05, gt, POSE), per.sum())
    assert torch.allclose(PRISMLoss(extractor64)(src, pred * 1.05, gt, POSE), per.mean())
    with pytest.raises(ValueError, match="reduction"):
        PRISMLoss(extractor64, reduction="max")
    with pytest.raises(ValueError, match="target"):
        PRISMLoss(extractor64)(src, pred, gt * 2, POSE)
    with pytest.raises(ValueError, match="NaN"):
        PRISMLoss(extractor64)(src, torch.full_like(pred, float("nan")), gt, POSE)


def test_sgd_on_pred_reduces_the_loss(extractor64, head):
    src, pred, gt = _images(3)
    loss_fn = PRISMLoss(extractor64, head)
    pred = pred.clone().requires_grad_(True)
    opt = torch.optim.SGD([pred], lr=20.0)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = loss_fn(src, pred, gt, POSE)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_extractor_and_head_stay_out_of_the_state_dict(extractor64, head):
    loss_fn = PRISMLoss(extractor64, head)
    assert loss_fn.state_dict() == {} and list(loss_fn.parameters()) == []


def test_lives_in_the_prism_package_with_one_public_path():
    import scenemetrics as sm
    from scenemetrics.prism.loss import PRISMLoss as RoomLoss

    assert PRISMLoss is RoomLoss is sm.prism.PRISMLoss is sm.losses.PRISMLoss
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("scenemetrics.losses.prism")
