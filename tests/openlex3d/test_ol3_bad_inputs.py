"""Every bad input of spec §3.2 raises the documented error naming the argument; the CLIP helper stays optional."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch

from scenemetrics import hub
from scenemetrics.openlex3d import (
    OpenLex3DRetrieval,
    OpenLex3DSetRanking,
    OpenLex3DTopN,
    RetrievalQuery,
    encode_prompts,
    evaluate_segmentation,
    retrieval_ap,
    set_ranking,
    topn_frequency,
)

from .ol3_helpers import categories_dict, sample


def seg_inputs(**over):
    base = {
        "pred_points": np.zeros((4, 3)),
        "pred_features": torch.ones(4, 3),
        "pred_index": None,
        "text_features": torch.eye(3),
        "prompts": ["a", "b", "c"],
        "gt_points": np.zeros((2, 3)),
        "gt_ids": np.array([1, 1]),
        "categories": categories_dict(sample(1, ["a"])),
    }
    base.update(over)
    return base


NAN_ROWS = torch.ones(4, 3)
NAN_ROWS[1, 0] = float("nan")
NAN_ROWS[3, 2] = float("inf")

SEG_CASES = [
    ({"pred_points": np.zeros((4, 2))}, ValueError, r"`pred_points` must have shape \(N, 3\)"),
    ({"pred_points": np.full((4, 3), np.nan)}, ValueError, "`pred_points` must contain finite coordinates; 4 point"),
    ({"gt_points": np.zeros(6)}, ValueError, r"`gt_points` must have shape \(N, 3\)"),
    ({"gt_points": np.array([[0, 0, 0], [0, np.inf, 0]])}, ValueError, r"`gt_points`.*first at row 1"),
    ({"pred_features": torch.ones(4)}, ValueError, "`pred_features` must be 2-D"),
    ({"pred_features": NAN_ROWS}, ValueError, r"`pred_features` must be finite; 2 row\(s\).*first at row 1"),
    ({"pred_features": torch.ones(4, 3, dtype=torch.int32)}, TypeError, "`pred_features` must be a float"),
    ({"pred_features": [[1.0, 0, 0]] * 4}, TypeError, "`pred_features` must be a torch.Tensor or numpy"),
    ({"pred_features": torch.ones(3, 3)}, ValueError, "`pred_index=None` means one feature row per point"),
    ({"pred_index": np.zeros((4, 1), dtype=int)}, ValueError, "`pred_index` must be 1-D"),
    ({"pred_index": np.zeros(4)}, TypeError, "`pred_index` must be an integer array"),
    ({"pred_index": np.zeros(3, dtype=int)}, ValueError, "`pred_index` must have length 4"),
    ({"pred_index": np.array([0, 1, 4, 2])}, ValueError, r"`pred_index` values must lie in \[0, 4\).*first 4 at"),
    ({"pred_index": np.array([0, -1, 1, 2])}, ValueError, r"`pred_index` values must lie in \[0, 4\)"),
    ({"text_features": torch.eye(4)[:, :3]}, ValueError, r"`text_features` must have shape \(3, 3\)"),
    ({"text_features": torch.ones(3, 2)}, ValueError, r"`text_features` must have shape \(3, 3\)"),
    ({"text_features": torch.full((3, 3), float("nan"))}, ValueError, "`text_features` must be finite"),
    ({"prompts": ["a", "b"]}, ValueError, r"`text_features` must have shape \(2, 3\)"),
    ({"prompts": "abc"}, TypeError, "`prompts` must be a sequence of strings"),
    ({"prompts": []}, ValueError, "`prompts` must not be empty"),
    ({"gt_ids": np.array([1.0, 1.0])}, TypeError, "`gt_ids` must be an integer array"),
    ({"gt_ids": np.array([1, 1, 1])}, ValueError, "`gt_ids` must have length 2"),
    ({"gt_ids": np.ones((2, 1), dtype=int)}, ValueError, "`gt_ids` must be 1-D"),
    ({"categories": 42}, TypeError, "`categories` must be a Categories"),
    ({"categories": [1]}, TypeError, "`categories` must be a Categories"),
]


@pytest.mark.parametrize(("over", "error", "match"), SEG_CASES)
def test_segmentation_inputs(over, error, match):
    inputs = seg_inputs(**over)
    for fn, kwargs in ((topn_frequency, {"top_n": 1}), (set_ranking, {}), (evaluate_segmentation, {"top_n": 1})):
        with pytest.raises(error, match=match):
            fn(*inputs.values(), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top_n": 0}, r"`top_n` must be an int in \[1, 3\]"),
        ({"top_n": 4}, r"`top_n` must be an int in \[1, 3\]"),
        ({"top_n": 2.0}, "`top_n`"),
        ({"top_n": True}, "`top_n`"),
        ({"voxel_size": -0.05}, "`voxel_size` must be None, 0 or a finite positive number"),
        ({"voxel_size": float("inf")}, "`voxel_size`"),
        ({"missing_threshold": 0}, "`missing_threshold` must be a finite number > 0"),
        ({"missing_threshold": -1.0}, "`missing_threshold`"),
    ],
)
def test_topn_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        topn_frequency(*seg_inputs().values(), **{"top_n": 1, **kwargs})


def test_segmentation_options():
    with pytest.raises(ValueError, match="`compat` must be one of 'corrected', 'toolkit'"):
        set_ranking(*seg_inputs().values(), compat="paper")
    with pytest.raises(ValueError, match="nothing to compute"):
        evaluate_segmentation(*seg_inputs().values(), top_n=(), set_ranking=False)
    with pytest.raises(ValueError, match="`top_n` must be an int or a sequence"):
        evaluate_segmentation(*seg_inputs().values(), top_n="5")
    with pytest.raises(TypeError, match="`set_ranking` must be a bool"):
        evaluate_segmentation(*seg_inputs().values(), top_n=1, set_ranking="yes")
    with pytest.raises(TypeError, match="`excluded_labels`"):
        topn_frequency(*seg_inputs().values(), top_n=1, excluded_labels="wall")


def test_zero_feature_rows_are_allowed():
    res = topn_frequency(*seg_inputs(pred_features=torch.zeros(4, 3)).values(), top_n=1)
    assert res.point_labels.tolist() == [[0], [0]]  # cosine 0 with every prompt: the first prompt


def ret_inputs(**over):
    base = {
        "pred_points": np.zeros((3, 3)),
        "pred_features": torch.ones(2, 3),
        "pred_index": np.array([0, 1, -1]),
        "query_features": torch.ones(1, 3),
        "queries": [RetrievalQuery("level0_a", "a", (1,))],
        "gt_points": np.zeros((2, 3)),
        "gt_ids": np.array([1, 1]),
    }
    base.update(over)
    return base


@pytest.mark.parametrize(
    ("over", "kwargs", "error", "match"),
    [
        ({"pred_index": np.array([0, -2, 1])}, {}, ValueError, r"`pred_index` values must lie in \[-1, 2\)"),
        ({"pred_index": np.array([0, 2, 1])}, {}, ValueError, r"`pred_index` values must lie in \[-1, 2\)"),
        ({"pred_index": None}, {}, ValueError, "`pred_index=None` means one feature row per point"),
        ({"query_features": torch.ones(2, 3)}, {}, ValueError, r"`query_features` must have shape \(1, 3\)"),
        ({"query_features": torch.ones(1, 4)}, {}, ValueError, r"`query_features` must have shape \(1, 3\)"),
        ({"query_features": torch.full((1, 3), np.inf)}, {}, ValueError, "`query_features` must be finite"),
        ({"queries": ["a"]}, {}, TypeError, r"`queries\[0\]` must be a RetrievalQuery"),
        ({"queries": [("level0_a", "a", ("1",))]}, {}, TypeError, "object_ids` must be ints"),
        ({"queries": "a"}, {}, TypeError, "`queries` must be a sequence"),
        ({"pred_points": np.zeros((3, 4))}, {}, ValueError, r"`pred_points` must have shape \(N, 3\)"),
        ({"gt_ids": np.array([1])}, {}, ValueError, "`gt_ids` must have length 2"),
        ({}, {"top_k": 0}, ValueError, "`top_k` must be an int >= 1"),
        ({}, {"alignment_threshold": 0.0}, ValueError, "`alignment_threshold` must be a finite number > 0"),
    ],
)
def test_retrieval_inputs(over, kwargs, error, match):
    with pytest.raises(error, match=match):
        retrieval_ap(*ret_inputs(**over).values(), **kwargs)


def test_metric_constructor_errors():
    with pytest.raises(ValueError, match="`text_features` must have one row per prompt"):
        OpenLex3DTopN(torch.eye(3), ["a", "b"])
    with pytest.raises(ValueError, match=r"`top_n` must be an int in \[1, 3\]"):
        OpenLex3DTopN(torch.eye(3), ["a", "b", "c"], top_n=4)
    with pytest.raises(ValueError, match="`voxel_size`"):
        OpenLex3DTopN(torch.eye(3), ["a", "b", "c"], top_n=1, voxel_size=-1)
    with pytest.raises(ValueError, match="`compat`"):
        OpenLex3DSetRanking(torch.eye(3), ["a", "b", "c"], compat="x")
    with pytest.raises(ValueError, match="`top_k`"):
        OpenLex3DRetrieval(top_k=0)
    with pytest.raises(ValueError, match="`alignment_threshold`"):
        OpenLex3DRetrieval(alignment_threshold=-1)


# ---------------------------------------------------------------------------------------------- CLIP helper


def test_encode_prompts_without_open_clip(monkeypatch):
    monkeypatch.setitem(sys.modules, "open_clip", None)
    with pytest.raises(ImportError, match=r'pip install "scenemetrics\[clip\]"'):
        encode_prompts(["sofa"])
    with pytest.raises(ImportError, match=r"^encode_prompts needs open_clip_torch: pip install open_clip_torch"):
        encode_prompts(["sofa"])  # the message of spec §3.4


def _fake_open_clip(calls):
    class Model(torch.nn.Module):
        def encode_text(self, tokens):
            return tokens.float() * 3.0

    def create_model_and_transforms(name, pretrained=None):
        calls.append((name, pretrained))
        return Model(), None, None

    def tokenizer(texts):
        return torch.tensor([[len(t), 1.0] for t in texts])

    return types.SimpleNamespace(
        create_model_and_transforms=create_model_and_transforms,
        get_tokenizer=lambda name: tokenizer,
        get_pretrained_cfg=lambda name, tag: {"hf_hub": "laion/CLIP-ViT-H-14-laion2B-s32B-b79K/"},
    )


def test_encode_prompts_with_local_weights(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setitem(sys.modules, "open_clip", _fake_open_clip(calls))
    weights = tmp_path / "open_clip_pytorch_model.bin"
    weights.write_bytes(b"x")
    out = encode_prompts(["ab", "a b c", "x"], weights_path=tmp_path, device="cpu", batch_size=2)
    assert calls == [("ViT-H-14", str(weights))]
    assert out.dtype == torch.float32 and out.shape == (3, 2)
    torch.testing.assert_close(out.norm(dim=1), torch.ones(3))
    torch.testing.assert_close(out[0], torch.tensor([2.0, 1.0]) / 5**0.5)
    with pytest.raises(hub.WeightsNotFoundError, match=r"open_clip_pytorch_model\.bin"):
        encode_prompts(["a"], weights_path=tmp_path / "missing")


def test_encode_prompts_offline_names_the_file(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "open_clip", _fake_open_clip([]))
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(hub.WeightsNotFoundError) as err:
        encode_prompts(["a"])
    assert err.value.filename == "open_clip_pytorch_model.bin"
    assert "laion/CLIP-ViT-H-14-laion2B-s32B-b79K" in str(err.value) and "weights_path" in str(err.value)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"gt_ids": np.array([1.0, 1.0])}, "`gt_ids` must be an integer array"),
        ({"gt_ids": torch.tensor([1.0, 1.0])}, "`gt_ids` must be an integer array"),
        ({"gt_points": np.zeros((2, 3), dtype=bool)}, "`gt_points` must hold real numbers"),
        ({"pred_points": np.zeros((4, 3), dtype=complex)}, "`pred_points` must hold real numbers"),
    ],
)
def test_wrong_dtype_is_a_value_error_too(over, match):
    # spec §3.2: every bad input is a ValueError unless noted; only a non-integer pred_index is noted as TypeError
    # (the dtype errors are both, so the Python convention holds as well)
    inputs = seg_inputs(**over)
    for fn, kwargs in ((topn_frequency, {"top_n": 1}), (set_ranking, {})):
        with pytest.raises(ValueError, match=match):
            fn(*inputs.values(), **kwargs)
        with pytest.raises(TypeError, match=match):
            fn(*inputs.values(), **kwargs)
    ret = ret_inputs(**{k: v for k, v in over.items() if k.startswith("gt_")})
    if "gt_ids" in over or "gt_points" in over:
        with pytest.raises(ValueError, match=match):
            retrieval_ap(*ret.values())
