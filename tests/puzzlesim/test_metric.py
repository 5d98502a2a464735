"""``scenemetrics.PuzzleSim`` (spec sec. 4.3, 10.8): accumulation, reset, warnings, states, merging, pickling."""

from __future__ import annotations

import math
import pickle
import warnings

import pytest
import torch

import scenemetrics as sm
from scenemetrics.puzzlesim import PuzzleSim, PuzzleSimMemory

from .naive import NaivePuzzleSim, smooth_images

REFS = [smooth_images(2, 48, 56, seed=80), smooth_images(1, 40, 64, seed=81)]
BATCHES = [smooth_images(3, 40, 48, seed=82), smooth_images(1, 56, 40, seed=83), smooth_images(2, 48, 48, seed=84)]


@pytest.fixture(scope="module")
def expected_scores(checkpoint):
    """Per-image mean map values of every image of BATCHES, from the naive float64 reference."""
    naive = NaivePuzzleSim("squeezenet1_1", checkpoint("squeezenet1_1"))
    return [[float(naive.similarity_map(img, REFS).mean()) for img in batch] for batch in BATCHES]


def test_class_constants_and_top_level_name():
    assert sm.PuzzleSim is PuzzleSim
    assert PuzzleSim.is_differentiable is False
    assert PuzzleSim.higher_is_better is True
    assert PuzzleSim.full_state_update is False
    assert PuzzleSim.plot_lower_bound == 0.0 and PuzzleSim.plot_upper_bound == 1.0


def test_compute_is_the_mean_over_all_images_of_their_map_means(squeeze_ckpt, expected_scores):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    for batch in BATCHES:
        metric.update(batch)
        assert metric.last_maps is not None and metric.last_maps.shape == (batch.shape[0], *batch.shape[-2:])
        assert not metric.last_maps.requires_grad
    flat = [s for batch in expected_scores for s in batch]
    value = metric.compute()
    assert value.dtype == torch.float32 and value.ndim == 0
    assert float(value) == pytest.approx(sum(flat) / len(flat), abs=1e-6)
    # the per-image mean, not the mean over pixels of all images (images differ in size) nor over batches
    pixels = sum(b.shape[0] * b.shape[-1] * b.shape[-2] for b in BATCHES)
    weighted = (
        sum(
            s * img.shape[-1] * img.shape[-2]
            for batch, ss in zip(BATCHES, expected_scores, strict=True)
            for s, img in zip(ss, batch, strict=True)
        )
        / pixels
    )
    assert abs(weighted - sum(flat) / len(flat)) > 1e-5
    assert metric.score_sum.dtype == torch.float64 and metric.num_images.dtype == torch.int64
    assert int(metric.num_images) == 6
    assert float(metric.score_sum) == pytest.approx(sum(flat), abs=1e-5)


def test_last_maps_and_keep_maps(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    metric.update(BATCHES[0])
    torch.testing.assert_close(metric.last_maps, metric.memory.similarity_map(BATCHES[0]))
    metric.update(BATCHES[1][0])  # (3, H, W) is a batch of one
    assert metric.last_maps.shape == (1, 56, 40)
    quiet = PuzzleSim(REFS, weights_path=squeeze_ckpt, keep_maps=False)
    quiet.update(BATCHES[0])
    assert quiet.last_maps is None and int(quiet.num_images) == 3


def test_uint8_and_empty_updates(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    batch8 = (BATCHES[0] * 255).round().to(torch.uint8)
    metric.update(batch8)
    expected = metric.memory.similarity_map(batch8.float() / 255).mean(dim=(1, 2)).double().mean()
    assert float(metric.compute()) == pytest.approx(float(expected), abs=1e-6)
    metric.update(torch.zeros(0, 3, 40, 48))
    assert int(metric.num_images) == 3
    assert float(metric.compute()) == pytest.approx(float(expected), abs=1e-6)


def test_reset_keeps_the_memory(squeeze_ckpt, expected_scores):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    memory = metric.memory
    metric.update(BATCHES[0])
    metric.reset()
    assert metric.memory is memory
    assert int(metric.num_images) == 0 and float(metric.score_sum) == 0
    metric.update(BATCHES[1])
    assert float(metric.compute()) == pytest.approx(expected_scores[1][0], abs=1e-6)


def test_no_references_yet_warns_and_compute_is_nan(squeeze_ckpt, expected_scores):
    metric = PuzzleSim(weights_path=squeeze_ckpt)
    assert metric.memory is None
    with pytest.warns(UserWarning, match="set_references"):
        metric.update(BATCHES[0])
    assert metric.last_maps is None and int(metric.num_images) == 0
    with pytest.warns(UserWarning, match="no image"):
        value = metric.compute()
    assert math.isnan(float(value)) and value.dtype == torch.float32
    metric.set_references(REFS)
    metric.update(BATCHES[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(metric.compute()) == pytest.approx(sum(expected_scores[2]) / 2, abs=1e-6)
    # compute after a reset: NaN plus a warning again
    metric.reset()
    with pytest.warns(UserWarning):
        assert math.isnan(float(metric.compute()))


def test_set_references_replaces_the_memory_and_keeps_the_states(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    metric.update(BATCHES[0])
    first = float(metric.score_sum)
    metric.set_references(BATCHES[0])  # now the images are references: they score ones
    assert metric.memory.num_references == 3
    assert int(metric.num_images) == 3 and float(metric.score_sum) == first
    metric.update(BATCHES[0])
    assert float(metric.score_sum) == pytest.approx(first + 3.0, abs=1e-5)
    # adopting a ready memory
    memory = PuzzleSimMemory(REFS, layers=(1, 2, 3, 4), weights_path=squeeze_ckpt)
    metric.set_references(memory)
    assert metric.memory is memory


@pytest.mark.filterwarnings("ignore:The ``compute`` method of metric PuzzleSim was called before")
def test_backbone_and_memory_are_not_in_the_state_dict(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    metric.update(BATCHES[0])
    assert set(metric.state_dict()) <= {"score_sum", "num_images"}
    metric.persistent(True)
    assert set(metric.state_dict()) == {"score_sum", "num_images"}
    assert list(metric.parameters()) == [] and list(metric.buffers()) == []
    restored = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    restored.persistent(True)
    restored.load_state_dict(metric.state_dict())
    torch.testing.assert_close(restored.compute(), metric.compute())


def test_merged_states_equal_one_metric_over_all_images(squeeze_ckpt):
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    a = PuzzleSim(memory, weights_path=squeeze_ckpt)
    b = PuzzleSim(memory, weights_path=squeeze_ckpt)
    whole = PuzzleSim(memory, weights_path=squeeze_ckpt)
    a.update(BATCHES[0])
    b.update(BATCHES[1])
    b.update(BATCHES[2])
    for batch in BATCHES:
        whole.update(batch)
    # summing the states by hand (what the DDP "sum" reduction does)
    total = (a.score_sum + b.score_sum) / (a.num_images + b.num_images)
    torch.testing.assert_close(total.float(), whole.compute(), atol=1e-7, rtol=0)
    a.merge_state(b)
    assert int(a.num_images) == 6
    torch.testing.assert_close(a.compute(), whole.compute(), atol=1e-7, rtol=0)


def test_forward_returns_the_batch_score_and_accumulates(squeeze_ckpt, expected_scores):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    batch_value = metric(BATCHES[0])
    assert float(batch_value) == pytest.approx(sum(expected_scores[0]) / 3, abs=1e-6)
    batch_value = metric(BATCHES[2])
    assert float(batch_value) == pytest.approx(sum(expected_scores[2]) / 2, abs=1e-6)
    total = expected_scores[0] + expected_scores[2]
    assert float(metric.compute()) == pytest.approx(sum(total) / len(total), abs=1e-6)
    assert metric.last_maps.shape == (2, 48, 48)


def test_pickle_and_clone(squeeze_ckpt):
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt)
    metric.update(BATCHES[0])
    for copy in (pickle.loads(pickle.dumps(metric)), metric.clone()):
        torch.testing.assert_close(copy.compute(), metric.compute())
        assert copy.memory is not None and copy.memory.num_references == 3
        copy.update(BATCHES[2])  # the backbone is reloaded lazily
        metric_copy_value = copy.compute()
        assert int(copy.num_images) == 5
        assert torch.isfinite(metric_copy_value)
    assert int(metric.num_images) == 3  # the copies did not touch the original
    memory = pickle.loads(pickle.dumps(metric.memory))
    torch.testing.assert_close(memory.similarity_map(BATCHES[1]), metric.memory.similarity_map(BATCHES[1]))


def test_metric_options_reach_the_maps(squeeze_ckpt):
    options = {"layers": (1, 3), "layer_weights": (0.3, 0.6), "chunk_size": 50, "screening": "off"}
    metric = PuzzleSim(REFS, weights_path=squeeze_ckpt, **options)
    metric.update(BATCHES[0])
    expected = sm.puzzlesim.puzzle_similarity_map(BATCHES[0], REFS, weights_path=squeeze_ckpt, **options)
    torch.testing.assert_close(metric.last_maps, expected, atol=1e-6, rtol=0)
    assert metric.memory.layers == (1, 3)
