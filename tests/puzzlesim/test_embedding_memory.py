"""Embedding the references: one backbone pass at a time, each layer written into the bank as soon as it exists.

Peak memory while embedding is the bank plus the transient of one backbone pass. With SqueezeNet the largest
activation of a pass is the first convolution's output (64 channels at about half the input resolution); the
streamed pass (:meth:`PuzzleSimBackbone.iter_features` + :func:`unit_rows_into`) must keep its transient under twice
that tensor, whatever the batch: the former pass held a slice's input while the slice ran, every wanted layer plus its
permuted and normalised copies at once, and a full copy of the backbone's weights for the shape pass (2.2x at
``batch_size=8`` and 6.5x at ``batch_size=1`` on the case below).
"""

from __future__ import annotations

import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSimMemory, load_backbone
from scenemetrics.puzzlesim.backbone import PuzzleSimBackbone
from scenemetrics.puzzlesim.functional import unit_rows, unit_rows_into
from scenemetrics.puzzlesim.options import PuzzleSimOptions, default_batch_size

from .tracking import TensorMemoryPeak


def _conv1_bytes(batch: int, h: int, w: int) -> int:
    """SqueezeNet 1.1's first convolution (3x3, stride 2, no padding, 64 channels), float32."""
    return batch * 64 * ((h - 3) // 2 + 1) * ((w - 3) // 2 + 1) * 4


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_embedding_transient_is_one_pass(squeeze_ckpt, batch_size):
    refs = torch.rand(8, 3, 96, 128, generator=torch.Generator().manual_seed(3))
    load_backbone("squeezenet1_1", squeeze_ckpt, "cpu")  # weights loaded outside the measured block
    mode = TensorMemoryPeak()
    mode.track_existing(refs)
    with mode:
        memory = PuzzleSimMemory(refs, weights_path=squeeze_ckpt, batch_size=batch_size)
    bank = sum(memory.features(layer).untyped_storage().nbytes() for layer in memory.layers)
    assert bank == 4 * sum(memory.features(layer).numel() for layer in memory.layers)
    transient = mode.peak - bank
    assert 0 < transient <= 2 * _conv1_bytes(batch_size, 96, 128)


def test_embedding_vectors_do_not_depend_on_the_pass(squeeze_ckpt):
    """The streamed, in-place embedding gives the vectors of the plain forward + unit_rows, bitwise (same batch:
    a convolution's result may differ in the last bit between batch sizes)."""
    refs = torch.rand(5, 3, 72, 100, generator=torch.Generator().manual_seed(4))
    net = load_backbone("squeezenet1_1", squeeze_ckpt, "cpu")
    memory = PuzzleSimMemory(refs, weights_path=squeeze_ckpt, layers=(1, 2, 4), batch_size=5)
    with torch.no_grad():
        x = refs * net.scale + net.shift
        expected = {}
        for i in range(5):
            x = net.slices[i](x)
            expected[i] = x
    for layer in (1, 2, 4):
        assert torch.equal(memory.features(layer), unit_rows(expected[layer]))


def test_iter_features_streams_the_wanted_layers_in_order(squeeze_ckpt):
    net = load_backbone("squeezenet1_1", squeeze_ckpt, "cpu")
    assert isinstance(net, PuzzleSimBackbone)
    x = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        got = list(net.iter_features(x, (4, 0, 2)))
        assert [layer for layer, _ in got] == [0, 2, 4]
        plain = x * net.scale + net.shift
        for i in range(5):
            plain = net.slices[i](plain)
            if i in (0, 2, 4):
                assert torch.equal(dict(got)[i], plain)
        assert list(net(x, (2,))) == [2]


def test_unit_rows_into_equals_unit_rows():
    f = torch.randn(3, 7, 5, 6, generator=torch.Generator().manual_seed(6))
    f[1, :, 2, 3] = 0  # a zero vector: the 1e-12 clamp, no NaN
    out = torch.full((90, 7), float("nan"))
    assert unit_rows_into(f, out) is out
    assert torch.equal(out, unit_rows(f))
    assert not out.isnan().any()
    half = unit_rows_into(f, torch.empty(90, 7, dtype=torch.float16))  # another dtype: float rows, then cast
    assert torch.equal(half, unit_rows(f).half())
    with pytest.raises(ValueError, match=r"`out` must have shape \(90, 7\)"):
        unit_rows_into(f, torch.empty(89, 7))
    with pytest.raises(ValueError, match=r"`out` must be contiguous"):
        unit_rows_into(f, torch.empty(7, 90).T)


def test_default_batch_size_is_one_image_on_the_cpu(squeeze_ckpt, monkeypatch):
    assert default_batch_size("cpu") == default_batch_size(torch.device("cpu")) == 1
    assert default_batch_size("cuda:1") == default_batch_size(torch.device("cuda", 0)) == 8
    assert PuzzleSimOptions().batch_size is None
    seen: list[int] = []
    original = PuzzleSimBackbone.iter_features

    def spy(self, images01, layers):
        if images01.device.type != "meta":  # not the shape-only pass
            seen.append(images01.shape[0])
        return original(self, images01, layers)

    monkeypatch.setattr(PuzzleSimBackbone, "iter_features", spy)
    refs = torch.rand(5, 3, 48, 48, generator=torch.Generator().manual_seed(7))
    default = PuzzleSimMemory(refs, weights_path=squeeze_ckpt)
    assert default.batch_size == 1 and seen == [1] * 5
    seen.clear()
    explicit = PuzzleSimMemory(refs, weights_path=squeeze_ckpt, batch_size=2)
    assert explicit.batch_size == 2 and seen == [2, 2, 1]
    for layer in default.layers:
        torch.testing.assert_close(default.features(layer), explicit.features(layer), atol=1e-6, rtol=0)
