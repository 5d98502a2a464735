"""``PuzzleSimMemory`` (spec sec. 4.2, 3.4, 6.3): stored vectors, batching, ``add``, ``resize``, screening policy."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from scenemetrics.puzzlesim import PuzzleSimMemory, best_match_similarity, bf16, puzzle_similarity_map
from scenemetrics.puzzlesim import search as S

from .naive import NaivePuzzleSim, smooth_images

REFS = [smooth_images(2, 40, 56, seed=140), smooth_images(1, 64, 48, seed=141)[0]]


def test_stored_vectors(squeeze_ckpt):
    memory = PuzzleSimMemory(REFS, layers=(4, 2), weights_path=squeeze_ckpt)
    assert memory.backbone == "squeezenet1_1" and memory.layers == (4, 2)
    assert memory.num_references == 3
    assert memory.reference_sizes == [(40, 56), (40, 56), (64, 48)]
    assert memory.device == torch.device("cpu")
    naive = NaivePuzzleSim("squeezenet1_1", squeeze_ckpt)
    expected = naive.reference_rows(REFS, (2, 4))
    for layer, channels in ((2, 256), (4, 384)):
        vectors = memory.features(layer)
        assert vectors.dtype == torch.float32 and vectors.shape == expected[layer].shape
        assert vectors.shape[1] == channels
        norms = vectors.norm(dim=1)
        torch.testing.assert_close(norms, torch.ones_like(norms), atol=1e-5, rtol=0)
        # the same set of vectors as the naive embedding (the order is an implementation detail)
        sims = vectors.double() @ expected[layer].T
        # float32 features vs the float64 reference: unit-vector agreement to float32 precision
        torch.testing.assert_close(
            sims.max(dim=1).values, torch.ones(vectors.shape[0], dtype=torch.float64), atol=1e-5, rtol=0
        )
    assert "squeezenet1_1" in repr(memory)
    assert memory(REFS[1], layer_weights=None).shape == (1, 64, 48)  # __call__ is similarity_map
    assert memory.to("cpu") is memory


def test_batch_size_and_uint8_do_not_change_the_vectors(squeeze_ckpt, capsys):
    base = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt, batch_size=8)
    one = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt, batch_size=1, progress=True)
    assert "embedding references" in capsys.readouterr().err
    for layer in base.layers:
        torch.testing.assert_close(one.features(layer), base.features(layer), atol=1e-6, rtol=0)
    refs8 = [(r * 255).round().to(torch.uint8) for r in REFS]
    as_uint8 = PuzzleSimMemory(refs8, weights_path=squeeze_ckpt)
    as_float = PuzzleSimMemory([r.float() / 255 for r in refs8], weights_path=squeeze_ckpt)
    for layer in base.layers:
        torch.testing.assert_close(as_uint8.features(layer), as_float.features(layer), atol=0, rtol=0)


def test_add_extends_the_bank_and_drops_caches(squeeze_ckpt):
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    new = smooth_images(1, 48, 48, seed=142)
    before = memory.similarity_map(new, screening="on")  # builds the screening index
    assert float(before.min()) < 0.999
    memory.add(new)
    assert memory.num_references == 4 and memory.reference_sizes[-1] == (48, 48)
    for screening in ("on", "off"):
        torch.testing.assert_close(
            memory.similarity_map(new, screening=screening), torch.ones(1, 48, 48), atol=1e-5, rtol=0
        )


@pytest.mark.parametrize(("resize", "size"), [((48, 64), (48, 64)), (56, (56, 56))])
def test_resize_against_the_naive_reference(squeeze_ckpt, resize, size):
    naive = NaivePuzzleSim("squeezenet1_1", squeeze_ckpt)

    def prepare(x):
        x = x if x.ndim == 4 else x.unsqueeze(0)
        return F.interpolate(x.double(), size=size, mode="bilinear", align_corners=False, antialias=True)

    images = [smooth_images(1, 36, 90, seed=143), smooth_images(1, 12, 12, seed=144)]  # 12 px: below the min side
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt, resize=resize)
    refs = [prepare(r) for r in REFS]
    for image in images:
        got = memory.similarity_map(image)
        assert got.shape == (1, *image.shape[-2:])  # the original test size
        expected = naive.similarity_map(prepare(image)[0], refs, out_size=tuple(image.shape[-2:]))
        torch.testing.assert_close(got[0].double(), expected, atol=1e-5, rtol=0)
        functional = puzzle_similarity_map(image, REFS, weights_path=squeeze_ckpt, resize=resize)
        torch.testing.assert_close(functional, got, atol=1e-6, rtol=0)


def test_auto_screening_policy(squeeze_ckpt, monkeypatch):
    """ "auto" screens only on CPU, float32, exact search, without gradients, when the bf16 decision enables it, and
    for banks of at least 4 blocks (1024 vectors; smaller ones are searched exhaustively)."""
    calls = []
    real = S.screened_max

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "screened_max", counting)
    memory = PuzzleSimMemory(smooth_images(6, 128, 128, seed=144), weights_path=squeeze_ckpt)
    assert memory.features(2).shape[0] >= 4 * S.BLOCK
    image = smooth_images(1, 40, 40, seed=145)
    feats, refs = torch.rand(8, 3, 3), torch.rand(2, 8, 24, 24)

    def used(fn) -> bool:
        calls.clear()
        fn()
        return bool(calls)

    for enabled in (False, True):
        monkeypatch.setattr(bf16, "bf16_decision", lambda mode=None, enabled=enabled: {"enabled": enabled})
        assert not used(lambda: best_match_similarity(feats, refs[:, :, :10]))  # 200 vectors: always exhaustive
        assert used(lambda: memory.similarity_map(image)) is enabled
        assert used(lambda: best_match_similarity(feats, refs)) is enabled
        assert used(lambda: memory.similarity_map(image, screening="on")) is True
        assert used(lambda: best_match_similarity(feats, refs, screening="on")) is True
        assert used(lambda: memory.similarity_map(image, screening="off")) is False
        assert used(lambda: best_match_similarity(feats, refs, screening="off")) is False
        assert used(lambda: memory.similarity_map(image.clone().requires_grad_(True))) is False
        assert used(lambda: best_match_similarity(feats.clone().requires_grad_(True), refs)) is False
        assert used(lambda: best_match_similarity(feats.double(), refs.double())) is False
