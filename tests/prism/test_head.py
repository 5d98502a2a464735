"""ProjectionHead: unit-norm output, shape errors, safetensors file round trip and format check."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("safetensors")

from safetensors.torch import save_file

from scenemetrics.prism import ProjectionHead


def test_output_is_unit_norm_with_the_right_shape():
    torch.manual_seed(0)
    head = ProjectionHead(in_dim=40, out_dim=12, hidden_dim=24)
    out = head(torch.randn(5, 40) * 10)
    assert out.shape == (5, 12)
    assert torch.allclose(out.norm(dim=-1), torch.ones(5), atol=1e-6)
    assert head(torch.randn(2, 3, 40)).shape == (2, 3, 12)
    # the layers are the documented ones: fc1 -> ReLU -> fc2 -> L2 normalisation
    v = torch.randn(3, 40)
    manual = head.fc2(torch.relu(head.fc1(v)))
    assert torch.allclose(head(v), manual / manual.norm(dim=-1, keepdim=True), atol=1e-6)


def test_defaults_match_the_paper_sizes():
    head = ProjectionHead()
    assert (head.in_dim, head.hidden_dim, head.out_dim) == (8320, 2048, 2048)
    assert head.fc1.weight.shape == (2048, 8320) and head.fc2.weight.shape == (2048, 2048)


@pytest.mark.parametrize("shape", [(2, 39), (40,), ()])
def test_wrong_input_size_raises(shape):
    head = ProjectionHead(in_dim=40, out_dim=8, hidden_dim=8)
    x = torch.randn(shape) if shape else torch.tensor(1.0)
    if shape == (40,):
        assert head(x).shape == (8,)
        return
    with pytest.raises(ValueError, match=r"\(\.\.\., 40\)"):
        head(x)


@pytest.mark.parametrize("bad", [{"in_dim": 0}, {"out_dim": -1}, {"hidden_dim": 2.5}])
def test_bad_sizes_raise(bad):
    with pytest.raises(ValueError):
        ProjectionHead(**{"in_dim": 4, "out_dim": 4, "hidden_dim": 4, **bad})


def test_save_load_round_trips_bit_exactly(tmp_path):
    torch.manual_seed(1)
    head = ProjectionHead(in_dim=30, out_dim=6, hidden_dim=10)
    path = tmp_path / "head.safetensors"
    head.save(path, metadata={"extractor": '{"model": "x"}'})
    loaded = ProjectionHead.load(path)
    assert (loaded.in_dim, loaded.hidden_dim, loaded.out_dim) == (30, 10, 6)
    assert not loaded.training and loaded.fc1.weight.device == torch.device("cpu")
    for k, v in head.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    assert loaded.metadata["extractor"] == '{"model": "x"}'
    assert loaded.metadata["format"] == "scenemetrics.prism.head/1"


def test_load_rejects_foreign_files(tmp_path):
    head = ProjectionHead(in_dim=4, out_dim=4, hidden_dim=4)
    tensors = {k: v.contiguous() for k, v in head.state_dict().items()}
    save_file(tensors, str(tmp_path / "foreign.safetensors"), metadata={"format": "someone.else/1"})
    with pytest.raises(ValueError, match="not a PRISM head"):
        ProjectionHead.load(tmp_path / "foreign.safetensors")
    save_file(tensors, str(tmp_path / "nometa.safetensors"))
    with pytest.raises(ValueError, match="not a PRISM head"):
        ProjectionHead.load(tmp_path / "nometa.safetensors")
    meta = {"format": "scenemetrics.prism.head/1", "in_dim": "5", "hidden_dim": "4", "out_dim": "4"}
    save_file(tensors, str(tmp_path / "wrong.safetensors"), metadata=meta)
    with pytest.raises(ValueError, match="do not match"):
        ProjectionHead.load(tmp_path / "wrong.safetensors")
    (tmp_path / "garbage.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="readable"):
        ProjectionHead.load(tmp_path / "garbage.safetensors")
    with pytest.raises(FileNotFoundError):
        ProjectionHead.load(tmp_path / "missing.safetensors")
