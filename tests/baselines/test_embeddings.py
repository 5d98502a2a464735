"""CLIP and DINOv2 embeddings: random-weight models in the official ``save_pretrained`` layout, loaded through the
user's code path (a folder, or a repo id in the Hugging Face cache), equal to the models' own outputs computed here
by hand; and the errors of the Hugging Face resolution (offline, wrong kind of model, missing files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from scenemetrics import hub
from scenemetrics.baselines import EmbeddingSimilarity, load_clip, load_dinov2
from scenemetrics.baselines.transformers_models import CLIP_MEAN, CLIP_STD, IMAGENET_MEAN, IMAGENET_STD, resolve_model

pytestmark = pytest.mark.extra("baselines")


def _images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 3, h, w, generator=torch.Generator().manual_seed(seed))


def _normalise(x: torch.Tensor, mean, std) -> torch.Tensor:
    return (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)


def _clip_by_hand(folder: Path, images: torch.Tensor) -> torch.Tensor:
    """CMMD's preprocessing written out (centred square crop, bicubic antialiased resize, CLIP mean/std) and the
    image features of a CLIPModel loaded independently."""
    import transformers

    model = transformers.CLIPModel.from_pretrained(folder).eval()
    h, w = images.shape[-2:]
    side = min(h, w)
    crop = images[..., (h - side) // 2 : (h - side) // 2 + side, (w - side) // 2 : (w - side) // 2 + side]
    size = model.config.vision_config.image_size
    pixels = F.interpolate(crop, size=(size, size), mode="bicubic", align_corners=False, antialias=True).clamp(0, 1)
    with torch.no_grad():
        out = model.get_image_features(pixel_values=_normalise(pixels, CLIP_MEAN, CLIP_STD))
    features = out if isinstance(out, torch.Tensor) else out.pooler_output  # transformers 4 / 5
    return F.normalize(features, dim=-1)


def _dinov2_by_hand(folder: Path, images: torch.Tensor, size: int) -> torch.Tensor:
    """dgm-eval's preprocessing (whole image to size x size, bicubic, ImageNet mean/std) and the CLS token of the
    final (layer-normed) hidden states of a Dinov2Model loaded independently."""
    import transformers

    model = transformers.Dinov2Model.from_pretrained(folder).eval()
    pixels = F.interpolate(images, size=(size, size), mode="bicubic", align_corners=False, antialias=True).clamp(0, 1)
    with torch.no_grad():
        return model(pixel_values=_normalise(pixels, IMAGENET_MEAN, IMAGENET_STD)).last_hidden_state[:, 0]


def test_clip_embeddings_are_the_models_image_features_after_cmmds_preprocessing(clip_folder):
    images = _images(3, 40, 56, seed=0)  # landscape: the centred square crop matters
    got = load_clip(clip_folder)(images)
    assert got.shape == (3, 24)
    torch.testing.assert_close(got, _clip_by_hand(clip_folder, images), rtol=1e-5, atol=1e-6)
    assert torch.allclose(got.norm(dim=1), torch.ones(3))


def test_dinov2_embeddings_are_the_cls_token_after_dgm_evals_preprocessing(dinov2_folder):
    images = _images(2, 30, 50, seed=1)  # resized whole, no crop
    for size in (224, 28):
        got = load_dinov2(dinov2_folder, image_size=size)(images)
        torch.testing.assert_close(got, _dinov2_by_hand(dinov2_folder, images, size), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="multiple of the DINOv2 patch size 14"):
        load_dinov2(dinov2_folder, image_size=30)


@pytest.mark.parametrize("features", ["clip", "dinov2"])
def test_embedding_similarity_is_the_cosine_of_the_embeddings(features, clip_folder, dinov2_folder):
    folder = clip_folder if features == "clip" else dinov2_folder
    renders, refs = _images(3, 36, 36, seed=2), _images(3, 36, 36, seed=3)
    renders[0] = refs[0]  # one identical pair: cosine 1
    size = {"image_size": 28} if features == "dinov2" else {}
    metric = EmbeddingSimilarity(features, weights=folder, **size)
    metric.update(renders[:2], refs[:2])
    metric.update(renders[2:], refs[2:])
    if features == "clip":
        a, b = _clip_by_hand(folder, renders), _clip_by_hand(folder, refs)
    else:
        a, b = _dinov2_by_hand(folder, renders, 28), _dinov2_by_hand(folder, refs, 28)
    cos = (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
    assert float(metric.compute()) == pytest.approx(float(cos.mean()), rel=1e-5, abs=1e-6)
    assert metric.last_scores.tolist() == pytest.approx(cos[2:].tolist(), rel=1e-5, abs=1e-6)
    single = EmbeddingSimilarity(features, weights=folder, **size)
    single.update(renders[:1], refs[:1])
    assert float(single.compute()) == pytest.approx(1.0, abs=1e-6)


def test_a_folder_of_another_kind_of_model_or_without_config_is_refused(clip_folder, dinov2_folder, tmp_path):
    with pytest.raises(ValueError, match=r"is a 'dinov2' model .*expected 'clip'"):
        resolve_model("clip", dinov2_folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(hub.WeightsNotFoundError, match=r"has no config\.json"):
        resolve_model("dinov2", empty)
    broken = Path(shutil.copytree(clip_folder, tmp_path / "broken"))
    (broken / "model.safetensors").unlink()
    with pytest.raises(hub.WeightsNotFoundError, match="cannot be loaded"):
        load_clip(broken)
    with pytest.raises(hub.WeightsNotFoundError, match="neither an existing folder nor a Hugging Face repo id"):
        resolve_model("clip", tmp_path / "no" / "such" / "folder")


def test_offline_repo_ids_not_in_the_cache_name_the_repo_its_url_and_hf_hub_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(hub.WeightsNotFoundError) as err:
        resolve_model("clip", None)  # the catalogue's default
    assert err.value.filename == "openai/clip-vit-large-patch14-336"
    assert err.value.url == "https://huggingface.co/openai/clip-vit-large-patch14-336"
    assert "HF_HUB_OFFLINE" in str(err.value) and "not in the Hugging Face cache" in str(err.value)
    with pytest.raises(hub.WeightsNotFoundError, match="facebook/dinov2-large"):
        EmbeddingSimilarity("dinov2")  # resolved when the metric is built, not at its first update


def test_a_repo_id_in_the_hugging_face_cache_loads_offline(clip_folder, monkeypatch, tmp_path):
    # the cache layout huggingface_hub writes: models--<owner>--<name>/{refs/main, snapshots/<commit>/...}
    import huggingface_hub.constants

    cache = tmp_path / "hf"
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--someone--tiny-clip"
    shutil.copytree(clip_folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert resolve_model("clip", "someone/tiny-clip") == repo / "snapshots" / commit
    images = _images(2, 32, 32, seed=4)
    torch.testing.assert_close(load_clip("someone/tiny-clip")(images), load_clip(clip_folder)(images))


def test_the_download_list_prefers_safetensors_and_skips_other_frameworks():
    files = [
        "config.json", "preprocessor_config.json", "tokenizer.json", "pytorch_model.bin", "model.safetensors",
        "tf_model.h5", "flax_model.msgpack", "onnx/model.onnx", "README.md",
    ]  # fmt: skip
    assert hub.hf_weight_files(files) == [
        "config.json", "preprocessor_config.json", "tokenizer.json", "model.safetensors"
    ]  # fmt: skip
    sharded = ["config.json", "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin",
               "pytorch_model.bin.index.json"]  # fmt: skip
    assert hub.hf_weight_files(sharded) == sharded  # the shards and their index, with the config


def test_the_random_models_are_written_in_the_official_layout(clip_folder, dinov2_folder):
    for folder, model_type in ((clip_folder, "clip"), (dinov2_folder, "dinov2")):
        assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
        assert json.loads((folder / "config.json").read_text())["model_type"] == model_type
    assert hub.HF_MODELS["baselines/clip"].url == "https://huggingface.co/openai/clip-vit-large-patch14-336"
    assert hub.HF_MODELS["baselines/dinov2"].repo_id == "facebook/dinov2-large"
