"""OSIMLoss: zero at the references, gradients to the render, agreement with the metric, degenerate cases."""

from __future__ import annotations

import importlib
import warnings

import pytest
import torch

import scenemetrics as sm
from scenemetrics.osim.functional import osim
from scenemetrics.osim.loss import OSIMLoss

from .conftest import images
from .test_functional import degrade


def test_zero_at_references_and_gradients(nano) -> None:
    refs = images(2, seed=31)
    loss_fn = sm.losses.OSIMLoss(refs, model=nano)
    assert isinstance(loss_fn, OSIMLoss)
    assert float(loss_fn(refs)) < 1e-5
    preds = degrade(refs).requires_grad_(True)
    loss = loss_fn(preds)
    assert loss.ndim == 0 and 0 < float(loss.detach()) <= 2
    loss.backward()
    assert preds.grad is not None and torch.isfinite(preds.grad).all() and preds.grad.abs().sum() > 0
    assert all(p.grad is None and not p.requires_grad for p in nano.parameters())
    assert list(loss_fn.parameters()) == [] and not any(
        k.startswith(("backbone", "head")) for k in loss_fn.state_dict()
    )


@pytest.mark.parametrize("layer", ["dark5", "p5"])
def test_agrees_with_the_metric(nano, layer) -> None:
    refs = images(2, seed=32)
    preds = degrade(refs)
    loss = OSIMLoss(refs, model=nano, layer=layer)(preds)
    score = osim(preds, refs, model=nano, layer=layer).score
    assert abs((1 - float(loss)) - float(score)) < 1e-2  # 8-bit rounding of the letterbox is the only difference


def test_uniform_saliency_and_out_of_range_renders(nano) -> None:
    refs = images(1, 100, 140, seed=33)
    loss_fn = OSIMLoss(refs, model=nano, saliency="uniform")
    res = osim(degrade(refs), refs, model=nano, saliency="uniform")
    assert abs((1 - float(loss_fn(degrade(refs)))) - float(res.score)) < 1e-2
    over = (refs * 1.05).requires_grad_(True)  # optimisers overshoot [0, 1]: accepted, not clipped
    loss_fn(over).backward()
    assert torch.isfinite(over.grad).all()


def test_no_detection_gives_zero_not_nan(nano) -> None:
    refs = images(1, seed=34)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        loss_fn = OSIMLoss(refs, model=nano, conf_threshold=1.01)
    assert sum("no object was detected" in str(w.message) for w in rec) == 1
    preds = degrade(refs).requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = loss_fn(preds)
    assert float(loss.detach()) == 0.0
    loss.backward()
    assert preds.grad is not None and float(preds.grad.abs().sum()) == 0.0


def test_bad_inputs(nano) -> None:
    refs = images(2, seed=35)
    with pytest.raises(ValueError, match="no references"):
        OSIMLoss(model=nano)(refs)
    loss_fn = OSIMLoss(model=nano)
    loss_fn.set_references(refs)
    with pytest.raises(ValueError, match="references' shape"):
        loss_fn(refs[:1])
    with pytest.raises(ValueError, match="references' shape"):
        loss_fn(images(2, 120, 150))
    with pytest.raises(ValueError, match="preds"):
        loss_fn(torch.full_like(refs, float("nan")))
    with pytest.raises(ValueError, match="references"):
        loss_fn.set_references(refs * 3)


def test_loaded_by_name(nano_ckpt) -> None:
    refs = images(1, seed=36)
    loss_fn = OSIMLoss(refs, detector="yolox_nano", weights_path=nano_ckpt)
    assert float(loss_fn(refs)) < 1e-5


def test_lives_in_the_osim_package_with_one_public_path() -> None:
    from scenemetrics.osim.loss import OSIMLoss as RoomLoss

    assert OSIMLoss is RoomLoss is sm.losses.OSIMLoss is sm.osim.OSIMLoss
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("scenemetrics.losses.osim")


def test_metric_and_loss_hold_the_detector_the_same_way(nano, nano_ckpt) -> None:
    # one holder (osim.detector.FrozenDetector) for both: same cached model, same checks, same messages
    metric = sm.OSIM(detector="yolox_nano", weights_path=nano_ckpt)
    loss_fn = OSIMLoss(detector="yolox_nano", weights_path=nano_ckpt)
    assert loss_fn.model is metric.model is sm.osim.load_detector("yolox_nano", nano_ckpt)
    assert not loss_fn.model.training and not any(p.requires_grad for p in loss_fn.model.parameters())
    for make in (sm.OSIM, OSIMLoss):
        with pytest.raises(ValueError, match=r"`model` must be a scenemetrics\.osim\.YOLOX"):
            make(model=torch.nn.Identity())
        with pytest.raises(ValueError, match=r"num_classes=3 was asked for.*head of 80 classes"):
            make(model=nano, num_classes=3)


@pytest.mark.gpu
def test_cuda(nano_ckpt) -> None:
    refs = images(1, seed=37)
    loss_fn = OSIMLoss(refs, detector="yolox_nano", weights_path=nano_ckpt).to("cuda")
    assert loss_fn.model.device.type == "cuda"
    preds = degrade(refs).cuda().requires_grad_(True)
    loss_fn(preds).backward()
    assert preds.grad.abs().sum() > 0
