"""Every bad input of spec sec. 4.6 raises the documented error, and its message names the argument."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from scenemetrics.losses import SoftPuzzleSimLoss
from scenemetrics.puzzlesim import (
    PuzzleSim,
    PuzzleSimMemory,
    best_match_similarity,
    load_backbone,
    puzzle_similarity,
    puzzle_similarity_map,
    soft_best_match_similarity,
)

from .naive import smooth_images

REFS = smooth_images(2, 40, 48, seed=70)
IMAGE = smooth_images(1, 40, 48, seed=71)


@pytest.fixture
def memory(squeeze_ckpt):
    return PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)


def _bad_images() -> list:
    nan = IMAGE.clone()
    nan[0, 1, 3, 4] = float("nan")
    inf = IMAGE.clone()
    inf[0, 0, 0, 0] = float("inf")
    return [
        pytest.param(IMAGE[0, 0], r"shape \(B, 3, H, W\).*received shape \(40, 48\)", id="2d"),
        pytest.param(IMAGE[None], r"shape \(B, 3, H, W\).*\(1, 1, 3, 40, 48\)", id="5d"),
        pytest.param(IMAGE[:, :1], r"3 \(RGB\) channels.*\(1, 1, 40, 48\)", id="1-channel"),
        pytest.param(torch.cat([IMAGE, IMAGE[:, :1]], dim=1), r"3 \(RGB\) channels.*\(1, 4, 40, 48\)", id="4-channel"),
        pytest.param((IMAGE * 255).to(torch.int32), r"dtype torch.int32", id="int32"),
        pytest.param((IMAGE * 255).long(), r"dtype torch.int64", id="int64"),
        pytest.param(IMAGE > 0.5, r"dtype torch.bool", id="bool"),
        pytest.param(IMAGE * 255, r"\[0, 1\].*received values in \[", id="0-255-float"),
        pytest.param(IMAGE - 0.5, r"\[0, 1\].*received values in \[-", id="negative"),
        pytest.param(nan, r"NaN or infinite", id="nan"),
        pytest.param(inf, r"NaN or infinite", id="inf"),
        pytest.param(IMAGE.numpy(), r"[Tt]ensor.*received ndarray", id="numpy"),
        pytest.param(IMAGE.tolist(), r"received list", id="list"),
        pytest.param(torch.rand(1, 3, 16, 48), r"at least 17x17 pixels.*received 16x48", id="too-small"),
    ]


@pytest.mark.parametrize(("bad", "message"), _bad_images())
def test_bad_images(bad, message, squeeze_ckpt, memory):
    pattern = rf"`images`.*{message}"
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity_map(bad, REFS, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity(bad, memory, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        memory.similarity_map(bad)
    with pytest.raises(ValueError, match=pattern):
        memory.layer_maps(bad)
    metric = PuzzleSim(memory, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        metric.update(bad)
    assert int(metric.num_images) == 0


@pytest.mark.parametrize(("bad", "message"), _bad_images())
def test_bad_references(bad, message, squeeze_ckpt):
    if isinstance(bad, list):  # a list is a valid container of references; its elements are then checked
        message = r"torch.Tensor.*received list"
        pattern = rf"`references\[0\]`.*{message}"
    else:
        pattern = rf"`references`.*{message}"
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity_map(IMAGE, bad, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        PuzzleSimMemory(bad, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        PuzzleSim(bad, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        PuzzleSim(weights_path=squeeze_ckpt).set_references(bad)
    with pytest.raises(ValueError, match=pattern):  # a loss's references are range-checked like any reference
        SoftPuzzleSimLoss(bad, weights_path=squeeze_ckpt)


def test_bad_element_of_a_reference_list_is_named(squeeze_ckpt):
    refs = [REFS[0], REFS[1:] * 2, REFS[0]]
    with pytest.raises(ValueError, match=r"`references\[1\]`.*\[0, 1\]"):
        PuzzleSimMemory(refs, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=r"`references\[2\]`.*channels"):
        puzzle_similarity_map(IMAGE, [REFS[0], REFS[1], REFS[0, :2]], weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=r"`references`"):
        PuzzleSimMemory({"a": REFS}, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=r"`references`"):
        PuzzleSimMemory(iter([REFS[0]]), weights_path=squeeze_ckpt)


@pytest.mark.parametrize(
    "empty", [torch.zeros(0, 3, 40, 48), [], (), [torch.zeros(0, 3, 40, 48)]], ids=["tensor", "list", "tuple", "list0"]
)
def test_empty_reference_set(empty, squeeze_ckpt):
    pattern = r"at least one reference"
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity_map(IMAGE, empty, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        PuzzleSimMemory(empty, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        PuzzleSim(empty, weights_path=squeeze_ckpt)
    with pytest.raises(ValueError, match=pattern):
        SoftPuzzleSimLoss(empty, weights_path=squeeze_ckpt)


# options --------------------------------------------------------------------------------------------------------
BAD_OPTIONS = [
    pytest.param({"backbone": "resnet50"}, r"`backbone`.*squeezenet1_1.*alexnet.*vgg16.*resnet50", id="backbone"),
    pytest.param({"backbone": None}, r"`backbone`", id="backbone-none"),
    pytest.param({"layers": (), "layer_weights": None}, r"`layers`.*empty", id="layers-empty"),
    pytest.param({"layers": (2.0, 3), "layer_weights": None}, r"`layers`.*ints", id="layers-float"),
    pytest.param({"layers": ("2",), "layer_weights": None}, r"`layers`.*ints", id="layers-str"),
    pytest.param({"layers": 2, "layer_weights": None}, r"`layers`", id="layers-scalar"),
    pytest.param({"layers": (2, 2), "layer_weights": None}, r"`layers`.*repeat", id="layers-duplicate"),
    pytest.param({"layers": (2, 7), "layer_weights": None}, r"`layers`.*0\.\.6.*squeezenet1_1", id="layers-high"),
    pytest.param({"layers": (-1, 2), "layer_weights": None}, r"`layers`.*0\.\.6", id="layers-negative"),
    pytest.param({"backbone": "alexnet", "layers": (5,), "layer_weights": None}, r"`layers`.*0\.\.4", id="alex-5"),
    pytest.param({"layer_weights": (0.5, 0.5)}, r"`layer_weights`.*one weight per layer.*received 2", id="w-length"),
    pytest.param({"layer_weights": (0.5, -0.1, 0.6)}, r"`layer_weights`.*non-negative", id="w-negative"),
    pytest.param({"layer_weights": (0.5, math.nan, 0.5)}, r"`layer_weights`.*finite", id="w-nan"),
    pytest.param({"layer_weights": (0.5, math.inf, 0.5)}, r"`layer_weights`.*finite", id="w-inf"),
    pytest.param({"layer_weights": ("a", 0.2, 0.1)}, r"`layer_weights`", id="w-str"),
    pytest.param({"layer_weights": 1.0}, r"`layer_weights`", id="w-scalar"),
    pytest.param({"resize": 0}, r"`resize`", id="resize-0"),
    pytest.param({"resize": -3}, r"`resize`", id="resize-negative"),
    pytest.param({"resize": 48.0}, r"`resize`", id="resize-float"),
    pytest.param({"resize": "48"}, r"`resize`", id="resize-str"),
    pytest.param({"resize": (48,)}, r"`resize`", id="resize-1-tuple"),
    pytest.param({"resize": (48, 0)}, r"`resize`", id="resize-pair-0"),
    pytest.param({"resize": (48, 48, 48)}, r"`resize`", id="resize-triple"),
    pytest.param({"resize": (48.0, 48)}, r"`resize`", id="resize-pair-float"),
    pytest.param({"resize": 8}, r"`resize`.*at least 17x17", id="resize-below-min-side"),
    pytest.param({"chunk_size": 0}, r"`chunk_size`", id="chunk-0"),
    pytest.param({"chunk_size": -4}, r"`chunk_size`", id="chunk-negative"),
    pytest.param({"chunk_size": 2.5}, r"`chunk_size`", id="chunk-float"),
    pytest.param({"batch_size": 0}, r"`batch_size`", id="batch-0"),
    pytest.param({"batch_size": -1}, r"`batch_size`", id="batch-negative"),
    pytest.param({"precision": "float64"}, r"`precision`.*float32.*float16.*bfloat16.*float64", id="precision"),
    pytest.param({"precision": "float16"}, r"`precision`.*CUDA", id="precision-fp16-cpu"),
    pytest.param({"precision": "bfloat16"}, r"`precision`.*CUDA", id="precision-bf16-cpu"),
    pytest.param({"screening": "yes"}, r"`screening`.*'auto'.*'on'.*'off'", id="screening"),
    pytest.param({"screening": True}, r"`screening`", id="screening-bool"),
    pytest.param({"search": "annoy"}, r"`search`.*'exact'.*'faiss'", id="search"),
    pytest.param({"screening": "on", "search": "faiss"}, r"`screening`.*faiss", id="screening-on-faiss"),
]
MEMORY_OPTIONS = {"backbone", "layers", "resize", "precision", "batch_size"}
CALL_OPTIONS = {"layers", "layer_weights", "chunk_size", "screening", "search"}
LOSS_OPTIONS = {"backbone", "layers", "layer_weights", "resize", "chunk_size"}


NEEDS_REFERENCES = {"precision-fp16-cpu", "precision-bf16-cpu", "resize-below-min-side"}


def _option_params(allowed: set[str]) -> list:
    """The bad options an entry point accepts (``layer_weights=None`` only accompanies bad ``layers``)."""
    out = []
    for p in BAD_OPTIONS:
        keys = set(p.values[0])
        if (keys - {"layer_weights"} or keys) <= allowed:
            out.append(p)
    return out


@pytest.mark.parametrize(("options", "pattern"), BAD_OPTIONS)
def test_bad_options_functional(options, pattern, squeeze_ckpt):
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity_map(IMAGE, REFS, weights_path=squeeze_ckpt, **options)
    with pytest.raises(ValueError, match=pattern):
        puzzle_similarity(IMAGE, REFS, weights_path=squeeze_ckpt, **options)


@pytest.mark.parametrize(("options", "pattern"), _option_params(MEMORY_OPTIONS))
def test_bad_options_memory(options, pattern, squeeze_ckpt):
    options = {k: v for k, v in options.items() if k != "layer_weights"}
    with pytest.raises(ValueError, match=pattern):
        PuzzleSimMemory(REFS, weights_path=squeeze_ckpt, **options)


@pytest.mark.parametrize(("options", "pattern"), _option_params(CALL_OPTIONS))
def test_bad_options_memory_call(options, pattern, memory):
    with pytest.raises(ValueError, match=pattern):
        memory.similarity_map(IMAGE, **options)
    options = {k: v for k, v in options.items() if k != "layer_weights"}
    if options:
        with pytest.raises(ValueError, match=pattern):
            memory.layer_maps(IMAGE, **options)


@pytest.mark.parametrize(("options", "pattern"), BAD_OPTIONS)
def test_bad_options_metric(options, pattern, squeeze_ckpt, request):
    if request.node.callspec.id in NEEDS_REFERENCES:
        PuzzleSim(weights_path=squeeze_ckpt, **options)  # checked once references are given (the metric may move)
        with pytest.raises(ValueError, match=pattern):
            PuzzleSim(REFS, weights_path=squeeze_ckpt, **options)
        return
    with pytest.raises(ValueError, match=pattern):
        PuzzleSim(weights_path=squeeze_ckpt, **options)  # checked at construction, before any reference


@pytest.mark.parametrize(("options", "pattern"), _option_params(LOSS_OPTIONS))
def test_bad_options_loss(options, pattern, squeeze_ckpt):
    with pytest.raises(ValueError, match=pattern):
        SoftPuzzleSimLoss(REFS, weights_path=squeeze_ckpt, **options)


@pytest.mark.parametrize("bad", [0, 0.0, -0.05, math.nan, math.inf, -math.inf, "warm", None])
def test_bad_temperature(bad, squeeze_ckpt):
    with pytest.raises(ValueError, match=r"`temperature`"):
        SoftPuzzleSimLoss(REFS, bad, weights_path=squeeze_ckpt)
    loss = SoftPuzzleSimLoss(REFS, 0.05, weights_path=squeeze_ckpt)
    loss.temperature = bad  # may be changed between calls: validated on use
    with pytest.raises(ValueError, match=r"`temperature`"):
        loss(IMAGE)
    with pytest.raises(ValueError, match=r"`temperature`"):
        loss.soft_map(IMAGE)
    with pytest.raises(ValueError, match=r"`temperature`"):
        soft_best_match_similarity(torch.rand(4, 3, 3), torch.rand(2, 4, 3, 3), bad)


def test_bad_loss_reduction(squeeze_ckpt):
    with pytest.raises(ValueError, match=r"`reduction`.*'mean'.*'sum'.*'none'"):
        SoftPuzzleSimLoss(REFS, weights_path=squeeze_ckpt, reduction="max")


def test_loss_checks_images_but_not_their_range(squeeze_ckpt):
    loss = SoftPuzzleSimLoss(REFS, weights_path=squeeze_ckpt)
    assert torch.isfinite(loss(IMAGE * 1.3 - 0.1))  # renders being optimised may overshoot [0, 1]
    nan = IMAGE.clone()
    nan[0, 0, 0, 0] = math.nan
    for bad, pattern in [(nan, r"NaN or infinite"), (IMAGE[:, :2], r"channels"), (IMAGE.long(), r"dtype")]:
        with pytest.raises(ValueError, match=rf"`images`.*{pattern}"):
            loss(bad)
    with pytest.raises(ValueError, match=r"`images`.*at least 17x17"):
        loss(torch.rand(1, 3, 16, 40))


# gradients with screening / faiss -----------------------------------------------------------------------------
def test_screening_on_with_gradients(squeeze_ckpt, memory):
    image = IMAGE.clone().requires_grad_(True)
    with pytest.raises(ValueError, match=r"`screening`.*gradients"):
        puzzle_similarity_map(image, REFS, weights_path=squeeze_ckpt, screening="on")
    with pytest.raises(ValueError, match=r"`screening`.*gradients"):
        memory.similarity_map(image, screening="on")
    feats = torch.rand(8, 4, 4, requires_grad=True)
    with pytest.raises(ValueError, match=r"`screening`.*gradients"):
        best_match_similarity(feats, torch.rand(2, 8, 4, 4), screening="on")
    # without grad mode, the same call is fine
    with torch.no_grad():
        assert memory.similarity_map(image, screening="on").shape == (1, 40, 48)
        assert best_match_similarity(feats, torch.rand(2, 8, 4, 4), screening="on").shape == (4, 4)


def test_faiss_with_gradients(memory):
    pytest.importorskip("faiss")
    with pytest.raises(ValueError, match=r"`search`.*gradients"):
        memory.similarity_map(IMAGE.clone().requires_grad_(True), search="faiss")


def test_faiss_missing_is_an_import_error_naming_the_extra(monkeypatch, squeeze_ckpt):
    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    with pytest.raises(ImportError, match=r'pip install "scenemetrics\[faiss\]"'):
        puzzle_similarity_map(IMAGE, REFS, weights_path=squeeze_ckpt, search="faiss")


# conflicting memory ---------------------------------------------------------------------------------------------
def test_memory_option_conflicts(squeeze_ckpt, checkpoint, memory):
    other = checkpoint("squeezenet1_1", seed=1)
    conflicts = [
        ({"backbone": "alexnet"}, r"`backbone`.*alexnet.*squeezenet1_1"),
        ({"weights_path": other}, rf"`weights_path`.*{other.name}.*{squeeze_ckpt.name}"),
        ({"weights_path": None}, rf"`weights_path`.*None.*{squeeze_ckpt.name}"),
        ({"resize": 48}, r"`resize`.*48.*None"),
        ({"precision": "float16"}, r"`precision`.*float16.*float32"),
        ({"layers": (2, 3, 5)}, r"`layers`.*\(2, 3, 5\).*\(2, 3, 4\)"),
    ]
    for options, pattern in conflicts:
        kwargs = {"weights_path": squeeze_ckpt, **options}
        with pytest.raises(ValueError, match=pattern):
            puzzle_similarity_map(IMAGE, memory, **kwargs)
        with pytest.raises(ValueError, match=pattern):
            PuzzleSim(memory, **kwargs)
        with pytest.raises(ValueError, match=pattern):
            PuzzleSim(**kwargs).set_references(memory)
        if "precision" not in options:
            with pytest.raises(ValueError, match=pattern):
                SoftPuzzleSimLoss(memory, **kwargs)
    # a memory without weights_path only matches None; a subset of its layers is fine
    small = PuzzleSimMemory(REFS, layers=(2, 3), weights_path=squeeze_ckpt)
    assert puzzle_similarity_map(IMAGE, small, layers=(3,), layer_weights=None, weights_path=squeeze_ckpt).shape == (
        1,
        40,
        48,
    )
    with pytest.raises(ValueError, match=r"`layers`"):
        small.similarity_map(IMAGE, layers=(2, 4), layer_weights=None)
    with pytest.raises(ValueError, match=r"`layer`"):
        small.features(4)


def test_memory_is_not_a_reference_tensor(memory, squeeze_ckpt):
    with pytest.raises(ValueError, match=r"`references`.*PuzzleSimMemory"):
        PuzzleSimMemory(memory, weights_path=squeeze_ckpt)


# missing weights -----------------------------------------------------------------------------------------------
def test_missing_weights_file(tmp_path):
    missing = tmp_path / "nope.pth"
    with pytest.raises(FileNotFoundError, match=r"nope\.pth"):
        puzzle_similarity_map(IMAGE, REFS, weights_path=missing)
    with pytest.raises(FileNotFoundError, match=r"nope\.pth"):
        load_backbone("squeezenet1_1", weights_path=missing)
    with pytest.raises(FileNotFoundError, match=r"squeezenet1_1-b8a52dc0\.pth"):
        PuzzleSim(REFS, weights_path=tmp_path)  # a folder without the torchvision file name
    with pytest.raises(ValueError, match=r"`backbone`"):
        load_backbone("resnet18")


# raw-feature functions -----------------------------------------------------------------------------------------
def test_bad_raw_features():
    refs = torch.rand(2, 8, 4, 4)
    cases = [
        (torch.rand(8, 4), refs, r"`features`.*\(C, h, w\) or \(B, C, h, w\)"),
        (torch.rand(1, 1, 8, 4, 4), refs, r"`features`"),
        (torch.randint(0, 5, (8, 4, 4)), refs, r"`features`.*floating"),
        (np.zeros((8, 4, 4), dtype=np.float32), refs, r"`features`"),
        (torch.rand(8, 4, 4), torch.rand(2, 7, 4, 4), r"`reference_features`.*7 channels.*8"),
        (torch.rand(8, 4, 4), torch.rand(5, 7), r"`reference_features`.*7 channels"),
        (torch.rand(8, 4, 4), torch.rand(8), r"`reference_features`"),
        (torch.rand(8, 4, 4), torch.randint(0, 3, (2, 8, 4, 4)), r"`reference_features`"),
        (torch.rand(8, 4, 4), [refs[0], torch.rand(3, 3)], r"`reference_features\[1\]`"),
        (torch.rand(8, 4, 4), {"a": refs}, r"`reference_features`"),
        (torch.rand(8, 4, 4), torch.rand(0, 8), r"`reference_features`.*at least one"),
        (torch.rand(8, 4, 4), [], r"`reference_features`.*at least one"),
    ]
    for features, references, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            best_match_similarity(features, references)
        with pytest.raises(ValueError, match=pattern):
            soft_best_match_similarity(features, references, 0.1)
    for fn in (best_match_similarity, lambda f, r, **kw: soft_best_match_similarity(f, r, 0.1, **kw)):
        with pytest.raises(ValueError, match=r"`chunk_size`"):
            fn(torch.rand(8, 4, 4), refs, chunk_size=0)
    with pytest.raises(ValueError, match=r"`screening`"):
        best_match_similarity(torch.rand(8, 4, 4), refs, screening="fast")
    with pytest.raises(ValueError, match=r"`screening`.*float32"):
        best_match_similarity(torch.rand(8, 4, 4, dtype=torch.float64), refs.double(), screening="on")
