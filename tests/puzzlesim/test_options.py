"""``PuzzleSimOptions`` (one validated record for every entry point), ``PuzzleSimMemory.adopt_or_build`` and the memory
on a custom ``nn.Module`` feature extractor."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

import scenemetrics as sm
from scenemetrics.puzzlesim import (
    PuzzleSim,
    PuzzleSimMemory,
    PuzzleSimOptions,
    SoftPuzzleSimLoss,
    puzzle_similarity_map,
)
from scenemetrics.puzzlesim import options as options_module

from .naive import smooth_images

REFS = smooth_images(3, 40, 48, seed=301)
IMAGE = smooth_images(1, 40, 48, seed=302)


# the record ------------------------------------------------------------------------------------------------------
def test_options_are_normalised_and_frozen(tmp_path):
    opts = PuzzleSimOptions(backbone="vgg", layers=[1, 3], layer_weights=None, weights_path=tmp_path, resize=32)
    assert opts.backbone == "vgg16" and opts.layers == (1, 3) and opts.layer_weights == (0.5, 0.5)
    assert opts.weights_path == str(tmp_path) and opts.resize == (32, 32)
    assert opts.min_side == 8 and not opts.is_module  # vgg16 needs 8x8 images up to slice 3 (stride 8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.layers = (2,)  # type: ignore[misc]
    changed = opts.with_call(layers=(4,), layer_weights=(2.0,))
    assert changed.layers == (4,) and changed.layer_weights == (2.0,) and opts.layers == (1, 3)
    with pytest.raises(ValueError, match=r"`layer_weights`.*one weight per layer"):
        opts.with_call(layers=(4,), layer_weights=(1.0, 1.0))  # a changed copy is validated like a new one


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"backbone": 3}, r"`backbone` must be a backbone name .*'squeezenet1_1'.* or a torch\.nn\.Module"),
        ({"backbone": nn.Identity(), "layers": "ab"}, r"`layers`.*non-empty sequence"),
        ({"backbone": nn.Identity(), "layers": []}, r"`layers`.*non-empty sequence"),
        ({"backbone": nn.Identity(), "layers": (0,), "layer_weights": None, "precision": "float16"}, r"`precision`"),
        ({"chunk_size": 0}, r"`chunk_size`"),
        ({"batch_size": True}, r"`batch_size`"),
        ({"screening": "on", "search": "faiss"}, r"`screening`='on' cannot be combined"),
    ],
)
def test_options_errors_name_the_argument(options, pattern):
    with pytest.raises(ValueError, match=pattern):
        PuzzleSimOptions(**options)


@pytest.fixture
def layer_checks(monkeypatch) -> list:
    """The ``layers`` each call of ``validate_layers`` (the check every options record runs) received."""
    calls = []
    real = options_module.validate_layers

    def counting(backbone, layers):
        calls.append(layers)
        return real(backbone, layers)

    monkeypatch.setattr(options_module, "validate_layers", counting)
    return calls


def test_each_entry_point_validates_its_options_once(layer_checks, squeeze_ckpt):
    calls = layer_checks
    puzzle_similarity_map(IMAGE, REFS, weights_path=squeeze_ckpt)
    assert len(calls) == 1  # one record for the call: not again by the memory, the search or Eq. 3
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    metric = PuzzleSim(memory, weights_path=squeeze_ckpt)
    calls.clear()
    metric.update(IMAGE)
    metric.update(IMAGE)
    assert calls == []  # the metric's options were validated at construction


def test_with_call_checks_only_what_changes(layer_checks, squeeze_ckpt):
    calls = layer_checks
    opts = PuzzleSimOptions(layers=(2, 4), layer_weights=(0.8, 0.2))
    calls.clear()
    assert opts.with_call(layers=(2, 4), layer_weights=(0.8, 0.2), screening="auto", chunk_size=None) is opts
    faster = opts.with_call(chunk_size=4096, screening="off")
    assert calls == [] and (faster.chunk_size, faster.screening, faster.layers) == (4096, "off", (2, 4))
    assert opts.with_call(layers=[4], layer_weights=None).layer_weights == (1.0,) and calls == [[4]]
    # what a change ties to other fields is checked again; what it does not change is kept as it was
    with pytest.raises(ValueError, match="one weight per layer"):
        opts.with_call(layers=(4,))
    with pytest.raises(ValueError, match="cannot be combined"):
        opts.with_call(screening="on", search="faiss")
    with pytest.raises(ValueError, match="`chunk_size` must be an int >= 1"):
        opts.with_call(chunk_size=0)
    with pytest.raises(TypeError, match="no option"):
        opts.with_call(chunksize=1)
    # the memory's maps with call options: validated once per call, equal to a fresh record's
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    calls.clear()
    maps = memory.similarity_map(IMAGE, chunk_size=4096)
    assert calls == []
    torch.testing.assert_close(maps, memory.similarity_map_for(IMAGE, PuzzleSimOptions(weights_path=squeeze_ckpt)))


def test_metric_exposes_its_options(squeeze_ckpt):
    metric = PuzzleSim(weights_path=squeeze_ckpt, backbone="squeeze", layers=[2, 3], layer_weights=(0.7, 0.3))
    assert isinstance(metric.options, PuzzleSimOptions)
    assert (metric.backbone, metric.layers, metric.layer_weights) == ("squeezenet1_1", (2, 3), (0.7, 0.3))
    assert (
        metric.weights_path == str(squeeze_ckpt) and metric.chunk_size is None and metric.batch_size is None
    )  # device default, resolved by the memory


# adopt_or_build and check_compatible ------------------------------------------------------------------------------
def test_adopt_or_build(squeeze_ckpt):
    opts = PuzzleSimOptions(weights_path=squeeze_ckpt, layers=(2, 3), layer_weights=None, batch_size=2)
    memory = PuzzleSimMemory.adopt_or_build(REFS, opts)
    assert memory.options is opts and memory.layers == (2, 3) and memory.num_references == 3
    subset = opts.with_call(layers=(3,), layer_weights=None)
    assert PuzzleSimMemory.adopt_or_build(memory, subset) is memory  # a subset of its layers is fine
    built = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt, layers=(2, 3))
    for layer in (2, 3):  # batch size does not change the vectors
        torch.testing.assert_close(memory.features(layer), built.features(layer), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"`layers`=\(2, 4\) conflicts.*holds layers \(2, 3\), not \(4,\)"):
        PuzzleSimMemory.adopt_or_build(memory, opts.with_call(layers=(2, 4)))
    with pytest.raises(ValueError, match=r"`resize`=\(48, 48\) conflicts"):
        memory.check_compatible(opts.with_call(resize=48))
    memory.check_compatible(backbone="squeeze", layers=(2,), weights_path=squeeze_ckpt, resize=None)  # keywords too
    with pytest.raises(ValueError, match=r"`backbone`.*a Identity module.*'squeezenet1_1'"):
        memory.check_compatible(opts.with_call(backbone=nn.Identity(), layers=(2,), layer_weights=None))


def test_functional_metric_loss_share_one_pipeline(squeeze_ckpt):
    opts = PuzzleSimOptions(weights_path=squeeze_ckpt)
    memory = PuzzleSimMemory.adopt_or_build(REFS, opts)
    expected = memory.similarity_map_for(IMAGE, opts)
    torch.testing.assert_close(puzzle_similarity_map(IMAGE, REFS, weights_path=squeeze_ckpt), expected)
    torch.testing.assert_close(memory.similarity_map(IMAGE), expected)
    metric = PuzzleSim(memory, weights_path=squeeze_ckpt)
    metric.update(IMAGE)
    torch.testing.assert_close(metric.last_maps, expected)
    soft = SoftPuzzleSimLoss(memory, 1e-4, weights_path=squeeze_ckpt).soft_map(IMAGE)
    assert float((soft - expected).max()) <= 1e-6 and float((expected - soft).max()) < 0.02  # Gibbs mean <= max


def test_soft_loss_has_one_home():
    assert sm.losses.SoftPuzzleSimLoss is SoftPuzzleSimLoss
    assert SoftPuzzleSimLoss.__module__ == "scenemetrics.puzzlesim.loss"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("scenemetrics.losses.puzzlesim")  # no alias module for an unreleased path


# a custom feature extractor as the memory's backbone -------------------------------------------------------------
class Pooled(nn.Module):
    """Two layers: 4x4 average colours, and 8x8 average colours with their squares (all positive)."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list = []

    def forward(self, images: Tensor, layers) -> dict[str, Tensor]:
        self.received.append(layers)
        a = F.avg_pool2d(images, 4) + 0.05
        b = F.avg_pool2d(images, 8)
        return {"a": a, "b": torch.cat([b, b * b], 1) + 0.05}


def _naive_module_map(module: nn.Module, image: Tensor, refs: Tensor, layers, weights) -> Tensor:
    """Eq. 1 + 3 by definition in float64: the full similarity matrix, max, weight, bilinear upsampling, sum."""
    fi, fr = module(image.double(), layers), module(refs.double(), layers)
    h, w = image.shape[-2:]
    total = torch.zeros(1, h, w, dtype=torch.float64)
    for layer, weight in zip(layers, weights, strict=True):
        q = F.normalize(fi[layer][0].flatten(1).T, dim=1)
        r = F.normalize(fr[layer].permute(0, 2, 3, 1).reshape(-1, fr[layer].shape[1]), dim=1)
        s = (q @ r.T).amax(dim=1).view(1, 1, *fi[layer].shape[-2:])
        total += weight * F.interpolate(s, size=(h, w), mode="bilinear", align_corners=True)[0]
    return total


def test_memory_on_a_module_backbone():
    module, layers = Pooled(), ["a", "b"]
    memory = PuzzleSimMemory(list(REFS), backbone=module, layers=layers, batch_size=2)
    assert memory.backbone is module and memory.layers is layers and memory.options.is_module
    assert all(got is layers for got in module.received)  # the module receives `layers` exactly as given
    assert memory.features("a").shape == (3 * 10 * 12, 3) and memory.features("b").shape == (3 * 5 * 6, 6)
    maps = memory.similarity_map(IMAGE, layers=layers, layer_weights=(0.6, 0.4))
    expected = _naive_module_map(module, IMAGE, REFS, layers, (0.6, 0.4))
    torch.testing.assert_close(maps.double(), expected, atol=1e-5, rtol=0)
    # a reference scores 1 everywhere; the functional API takes the module as well
    ones = puzzle_similarity_map(REFS[:1], memory, backbone=module, layers=["b"], layer_weights=None)
    torch.testing.assert_close(ones, torch.ones_like(ones), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=r"`backbone`.*Pooled module.*another feature extractor"):
        puzzle_similarity_map(IMAGE, memory, backbone=Pooled(), layers=["a"], layer_weights=None)


def test_module_backbone_errors():
    class Bad(nn.Module):
        def forward(self, images, layers):
            return {"a": images.mean(1)}  # (B, h, w): not a feature map

    with pytest.raises(ValueError, match=r"the `backbone` module's feature map for layer 'a'.*references\[0\]"):
        PuzzleSimMemory(REFS, backbone=Bad(), layers=("a",))
    with pytest.raises(ValueError, match=r"no feature map for layer 'c'"):
        PuzzleSimMemory(REFS, backbone=Pooled(), layers=("a", "c"))
