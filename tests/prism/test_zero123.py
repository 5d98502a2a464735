"""Zero123 loading (both hub layouts, local folders, hub cache, errors), pose helpers and load_view."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

from scenemetrics.hub import WeightsNotFoundError
from scenemetrics.prism import (
    BLOCK_NAMES,
    DEFAULT_MODEL,
    Zero123Features,
    encode_pose,
    load_view,
    relative_pose,
    spherical_from_c2w,
)
from scenemetrics.prism import zero123 as z
from scenemetrics.prism.features import block_channels

SD1_UNET = dict(
    sample_size=32,
    in_channels=8,
    out_channels=4,
    block_out_channels=(320, 640, 1280, 1280),
    cross_attention_dim=768,
    down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
    up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
    layers_per_block=2,
    attention_head_dim=8,
)


def _copy(folder: Path, tmp_path: Path, name: str = "copy") -> Path:
    dst = tmp_path / name
    shutil.copytree(folder, dst)
    return dst


# ---- layouts ----------------------------------------------------------------------------------------------------


def test_both_layouts_load_through_the_real_loader(tiny_folders):
    kxic = Zero123Features.from_pretrained(tiny_folders["cc_projection"], image_size=64)
    ash = Zero123Features.from_pretrained(str(tiny_folders["clip_camera_projection"]), image_size=64)
    assert (kxic.layout, ash.layout) == ("cc_projection", "clip_camera_projection")
    assert kxic.source_id == str(tiny_folders["cc_projection"])
    # kxic's layout was written with pickled .bin weights, ashawkey's with safetensors
    assert list((tiny_folders["cc_projection"] / "unet").glob("*.bin"))
    assert list((tiny_folders["cc_projection"] / "cc_projection").glob("*.bin"))
    assert list((tiny_folders["clip_camera_projection"] / "unet").glob("*.safetensors"))
    for m in (kxic, ash):
        assert not m.training and all(not p.requires_grad for p in m.parameters())
        assert m.feature_dim == 208 and m.device == torch.device("cpu") and m.dtype == torch.float32
    g = torch.Generator().manual_seed(3)
    src, tgt = torch.rand(2, 3, 64, 64, generator=g), torch.rand(2, 3, 64, 64, generator=g)
    pose = torch.tensor([[0.0, 30.0, 0.0], [-10.0, 200.0, 0.3]])
    with torch.no_grad():
        a, b = kxic(src, tgt, pose), ash(src, tgt, pose)
    assert torch.allclose(a, b, atol=1e-6, rtol=0)


def test_projection_keys_and_sizes_come_from_the_weights(tiny_folders, tiny_parts):
    for layout in z.LAYOUTS:
        lin = z.load_projection(tiny_folders[layout], layout)
        assert (lin.in_features, lin.out_features) == (20, 16)
        assert torch.equal(lin.weight, tiny_parts["projection"].weight)
        assert torch.equal(lin.bias, tiny_parts["projection"].bias)


def test_detect_layout_without_model_index(tiny_folders, tmp_path):
    folder = _copy(tiny_folders["cc_projection"], tmp_path)
    (folder / "model_index.json").unlink()
    assert z.detect_layout(folder) == "cc_projection"
    assert Zero123Features.from_pretrained(folder, image_size=64).layout == "cc_projection"


def test_folder_without_projection_raises_valueerror(tiny_folders, tmp_path):
    folder = _copy(tiny_folders["clip_camera_projection"], tmp_path)
    shutil.rmtree(folder / "clip_camera_projection")
    index = json.loads((folder / "model_index.json").read_text())
    del index["clip_camera_projection"]
    (folder / "model_index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"cc_projection.*clip_camera_projection"):
        Zero123Features.from_pretrained(folder)
    (folder / "model_index.json").unlink()
    with pytest.raises(ValueError, match=r"unet"):  # lists what was found
        Zero123Features.from_pretrained(folder)


@pytest.mark.parametrize("layout", ["cc_projection", "clip_camera_projection"])
def test_projection_folder_missing_but_listed_raises_valueerror(tiny_folders, tmp_path, layout):
    # spec §12.2.2: a layout without a projection folder raises ValueError, even when model_index.json still names
    # it; §4.1.1: a missing component of a local folder is a WeightsNotFoundError. The error is both.
    folder = _copy(tiny_folders[layout], tmp_path)
    shutil.rmtree(folder / layout)
    assert layout in json.loads((folder / "model_index.json").read_text())
    with pytest.raises(ValueError, match=layout) as info:
        Zero123Features.from_pretrained(folder)
    assert isinstance(info.value, WeightsNotFoundError)
    (folder / layout).mkdir()  # the folder without weight files
    with pytest.raises(ValueError, match=layout) as info:
        Zero123Features.from_pretrained(folder)
    assert isinstance(info.value, WeightsNotFoundError)


def test_projection_of_wrong_size_raises(tiny_folders, tmp_path):
    from safetensors.torch import save_file

    folder = _copy(tiny_folders["clip_camera_projection"], tmp_path)
    bad = torch.nn.Linear(16 + 5, 16)
    save_file(
        {"proj.weight": bad.weight.detach(), "proj.bias": bad.bias.detach()},
        str(folder / "clip_camera_projection" / "diffusion_pytorch_model.safetensors"),
    )
    with pytest.raises(ValueError, match=r"21 -> 16.*20"):
        Zero123Features.from_pretrained(folder)


def test_projection_with_unknown_keys_raises(tiny_folders, tmp_path):
    folder = _copy(tiny_folders["cc_projection"], tmp_path)
    path = folder / "cc_projection" / "diffusion_pytorch_model.bin"
    state = torch.load(path, weights_only=True)
    state["projection.extra"] = torch.zeros(1)
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"exactly the keys"):
        Zero123Features.from_pretrained(folder)
    torch.save({"proj.weight": state["projection.weight"], "proj.bias": state["projection.bias"]}, path)
    with pytest.raises(ValueError, match=r"projection.bias"):
        Zero123Features.from_pretrained(folder)


@pytest.mark.parametrize("component", ["unet", "vae", "image_encoder", "scheduler"])
def test_missing_component_raises_weights_not_found(tiny_folders, tmp_path, component):
    folder = _copy(tiny_folders["clip_camera_projection"], tmp_path)
    shutil.rmtree(folder / component)
    with pytest.raises(WeightsNotFoundError, match=component) as info:
        Zero123Features.from_pretrained(folder)
    assert isinstance(info.value, FileNotFoundError)


def test_component_without_weights_raises_weights_not_found(tiny_folders, tmp_path):
    folder = _copy(tiny_folders["clip_camera_projection"], tmp_path)
    for f in (folder / "vae").glob("*.safetensors"):
        f.unlink()
    with pytest.raises(WeightsNotFoundError, match=r"vae"):
        Zero123Features.from_pretrained(folder)
    for f in (folder / "clip_camera_projection").glob("*.safetensors"):
        f.unlink()
    with pytest.raises(WeightsNotFoundError, match=r"clip_camera_projection"):
        z.load_projection(folder, "clip_camera_projection")


def test_option_validation():
    with pytest.raises(ValueError, match=r"torch_dtype.*CUDA"):
        Zero123Features.from_pretrained("/does/not/matter", torch_dtype=torch.float16)
    with pytest.raises(ValueError, match=r"torch_dtype"):
        Zero123Features.from_pretrained("/does/not/matter", torch_dtype=torch.float64)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timestep": 1000}, "timestep"),
        ({"timestep": -1}, "timestep"),
        ({"timestep": 1.5}, "timestep"),
        ({"image_size": 96}, "multiple of 64"),
        ({"image_size": 0}, "multiple of 64"),
    ],
)
def test_bad_options_raise(tiny_folders, kwargs, match):
    with pytest.raises(ValueError, match=match):
        Zero123Features.from_pretrained(tiny_folders["cc_projection"], **kwargs)


# ---- hub --------------------------------------------------------------------------------------------------------


def _fake_hf_cache(tmp_path: Path, src: Path, repo_id: str, monkeypatch) -> None:
    import huggingface_hub.constants as hf_constants

    cache = tmp_path / "hf"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(src, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(cache))


def test_hub_id_loads_from_the_hugging_face_cache_offline(tiny_folders, tmp_path, monkeypatch):
    _fake_hf_cache(tmp_path, tiny_folders["clip_camera_projection"], "someone/zero123-tiny", monkeypatch)
    m = Zero123Features.from_pretrained("someone/zero123-tiny", image_size=64)
    assert m.source_id == "someone/zero123-tiny" and m.layout == "clip_camera_projection"
    assert not (tmp_path / "sm").exists()  # nothing copied into $SCENEMETRICS_HOME


def test_uncached_hub_id_offline_raises_weights_not_found(tmp_path, monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(WeightsNotFoundError) as info:
        Zero123Features.from_pretrained("kxic/zero123-xl")
    msg = str(info.value)
    assert "kxic/zero123-xl" in msg and "https://huggingface.co/kxic/zero123-xl" in msg
    assert "HF_HUB_OFFLINE" in msg and 'revision="refs/pr/1"' in msg
    assert info.value.url == "https://huggingface.co/kxic/zero123-xl"
    with pytest.raises(WeightsNotFoundError, match=DEFAULT_MODEL):
        Zero123Features.from_pretrained(None)


def test_scenemetrics_offline_forbids_the_network(tmp_path, monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants as hf_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")

    def no_network(*args, **kwargs):
        raise AssertionError("list_repo_files must not be called offline")

    monkeypatch.setattr(huggingface_hub, "list_repo_files", no_network)
    with pytest.raises(WeightsNotFoundError, match=r"HF_HUB_OFFLINE"):
        Zero123Features.from_pretrained("someone/zero123")


def test_online_download_fetches_only_the_needed_files(tiny_folders, monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants as hf_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    repo_files = [
        "model_index.json",
        "feature_extractor/preprocessor_config.json",
        "safety_checker/model.safetensors",
        "unet/config.json",
        "unet/diffusion_pytorch_model.bin",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/config.json",
        "vae/diffusion_pytorch_model.bin",
        "image_encoder/config.json",
        "image_encoder/model.safetensors",
        "scheduler/scheduler_config.json",
        "clip_camera_projection/config.json",
        "clip_camera_projection/diffusion_pytorch_model.safetensors",
    ]
    calls = {}

    def fake_list(repo_id, revision=None, **kwargs):
        calls["list"] = (repo_id, revision)
        return repo_files

    def fake_snapshot(repo_id, revision=None, allow_patterns=None, local_files_only=False, **kwargs):
        calls["snapshot"] = (repo_id, revision, allow_patterns, local_files_only)
        return str(tiny_folders["clip_camera_projection"])

    monkeypatch.setattr(huggingface_hub, "list_repo_files", fake_list)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    m = Zero123Features.from_pretrained("someone/zero123", revision="refs/pr/1", image_size=64)
    assert m.source_id == "someone/zero123"
    assert calls["list"] == ("someone/zero123", "refs/pr/1")
    repo_id, revision, patterns, local_only = calls["snapshot"]
    assert (repo_id, revision, local_only) == ("someone/zero123", "refs/pr/1", False)
    assert sorted(patterns) == sorted(
        [
            "model_index.json",
            "unet/config.json",
            "unet/diffusion_pytorch_model.safetensors",
            "vae/config.json",
            "vae/diffusion_pytorch_model.bin",
            "image_encoder/config.json",
            "image_encoder/model.safetensors",
            "scheduler/scheduler_config.json",
            "clip_camera_projection/config.json",
            "clip_camera_projection/diffusion_pytorch_model.safetensors",
        ]
    )

    def failing_snapshot(*args, **kwargs):
        raise OSError("connection reset")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing_snapshot)
    with pytest.raises(WeightsNotFoundError, match=r"connection reset") as info:
        Zero123Features.from_pretrained("someone/zero123")
    assert isinstance(info.value.__cause__, OSError)


def test_select_repo_files_prefers_the_variant():
    files = [
        "unet/config.json",
        "unet/diffusion_pytorch_model.safetensors",
        "unet/diffusion_pytorch_model.fp16.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.bin",
    ]
    assert z.select_repo_files(files, "fp16") == [
        "unet/config.json",
        "unet/diffusion_pytorch_model.fp16.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ]
    assert z.select_repo_files(files) == [
        "unet/config.json",
        "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.safetensors",
    ]


@pytest.mark.parametrize("path", ["/definitely/not/here", "./relative/missing", "a/b/c"])
def test_missing_local_folder_raises(path):
    with pytest.raises(WeightsNotFoundError, match=r"does not exist"):
        Zero123Features.from_pretrained(path)


def test_a_file_is_not_a_model_folder(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"")
    with pytest.raises(WeightsNotFoundError, match=r"is a file"):
        Zero123Features.from_pretrained(f)


# ---- schedule and block sizes -----------------------------------------------------------------------------------


def test_alphas_cumprod_match_diffusers_ddim(tiny_parts):
    ours = z.alphas_cumprod_from_config(dict(tiny_parts["scheduler"].config))
    assert torch.equal(ours, tiny_parts["scheduler"].alphas_cumprod)
    # values from the spec's table (LDM "linear" = diffusers scaled_linear, 0.00085-0.012, 1000 steps)
    assert abs(float(ours[0]) - 0.99915) < 1e-5 and abs(float(ours[100]) - 0.894) < 1e-3
    assert abs(float(ours[999]) - 0.0047) < 1e-4
    lin = z.alphas_cumprod_from_config({"beta_schedule": "linear", "beta_start": 1e-4, "beta_end": 0.02})
    from diffusers import DDIMScheduler

    assert torch.equal(lin, DDIMScheduler(beta_schedule="linear").alphas_cumprod)
    with pytest.raises(ValueError, match=r"squaredcos_cap_v2"):
        z.alphas_cumprod_from_config({"beta_schedule": "squaredcos_cap_v2"})


def test_sd1_unet_gives_8320_features_on_the_meta_device():
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    assert sum(block_channels((320, 640, 1280, 1280))) == 8320
    with torch.device("meta"):
        unet = UNet2DConditionModel(**SD1_UNET)
        vae = AutoencoderKL(
            down_block_types=("DownEncoderBlock2D",) * 4,
            up_block_types=("UpDecoderBlock2D",) * 4,
            block_out_channels=(128, 256, 512, 512),
            layers_per_block=2,
            latent_channels=4,
            scaling_factor=0.18215,
        )
        clip = CLIPVisionModelWithProjection(
            CLIPVisionConfig(
                hidden_size=1024,
                intermediate_size=4096,
                num_hidden_layers=24,
                num_attention_heads=16,
                image_size=224,
                patch_size=14,
                projection_dim=768,
            )
        )
        proj = torch.nn.Linear(772, 768)
    m = Zero123Features(vae, unet, clip, proj, torch.linspace(0.999, 0.005, 1000))
    assert m.feature_dim == 8320 and m.clip_image_size == 224
    assert m.block_channels == (320, 640, 1280, 1280, 1280, 1280, 1280, 640, 320)
    assert [m.block_slices[n].stop - m.block_slices[n].start for n in BLOCK_NAMES] == list(m.block_channels)
    # the extractor's hooks see the spec's table of block outputs at 256 px (latent 32x32); shapes only
    with torch.no_grad():
        unet(
            torch.zeros(1, 8, 32, 32, device="meta"),
            torch.zeros(1, dtype=torch.long, device="meta"),
            encoder_hidden_states=torch.zeros(1, 1, 768, device="meta"),
        )
    shapes = {name: tuple(t.shape) for name, t in m._captured.items()}
    m._captured.clear()
    assert shapes == {
        "down0": (1, 320, 16, 16),
        "down1": (1, 640, 8, 8),
        "down2": (1, 1280, 4, 4),
        "down3": (1, 1280, 4, 4),
        "mid": (1, 1280, 4, 4),
        "up0": (1, 1280, 8, 8),
        "up1": (1, 1280, 16, 16),
        "up2": (1, 640, 32, 32),
        "up3": (1, 320, 32, 32),
    }


# ---- pose helpers -----------------------------------------------------------------------------------------------


def test_encode_pose_values():
    out = encode_pose(torch.tensor([[30.0, 90.0, 0.5], [-45.0, 180.0, 0.0]]))
    expected = torch.tensor(
        [[math.pi / 6, 1.0, 0.0, 0.5], [-math.pi / 4, 0.0, -1.0, 0.0]],
        dtype=torch.float32,
    )
    assert out.dtype == torch.float32 and out.shape == (2, 4)
    assert torch.allclose(out, expected, atol=1e-7)
    assert encode_pose(torch.tensor([0.0, 0.0, 0.0])).tolist() == [[0.0, 0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match=r"\(B, 3\)"):
        encode_pose(torch.zeros(2, 2))
    with pytest.raises(ValueError, match=r"NaN"):
        encode_pose(torch.tensor([0.0, math.nan, 0.0]))


def test_relative_pose_wraps_azimuth():
    src = torch.tensor([[60.0, 350.0, 2.7], [60.0, 10.0, 2.7], [90.0, 0.0, 2.0]])
    tgt = torch.tensor([[60.0, 10.0, 2.7], [60.0, 350.0, 2.7], [60.0, 0.0, 2.5]])
    out = relative_pose(src, tgt)
    assert torch.allclose(out, torch.tensor([[0.0, 20.0, 0.0], [0.0, 340.0, 0.0], [-30.0, 0.0, 0.5]]), atol=1e-5)
    assert bool(((out[:, 1] >= 0) & (out[:, 1] < 360)).all())
    tiny = relative_pose(torch.tensor([0.0, 1e-9, 1.0], dtype=torch.float64), torch.tensor([0.0, 0.0, 1.0]))
    assert 0 <= float(tiny[1]) < 360


def test_spherical_from_c2w_round_trips_a_known_camera():
    polar, az, r = 60.0, 135.0, 2.7
    p, a = math.radians(polar), math.radians(az)
    centre = [r * math.sin(p) * math.cos(a), r * math.sin(p) * math.sin(a), r * math.cos(p)]
    c2w = torch.eye(4, dtype=torch.float64)
    c2w[:3, 3] = torch.tensor(centre, dtype=torch.float64)
    out = spherical_from_c2w(torch.stack([c2w, c2w]))
    assert out.shape == (2, 3)
    assert torch.allclose(out[0], torch.tensor([polar, az, r], dtype=torch.float64), atol=1e-9)
    with pytest.raises(ValueError, match=r"c2w"):
        spherical_from_c2w(torch.zeros(4, 3))


def test_camera_pose_from_matrices_and_spherical_mappings():
    def c2w(polar: float, az: float, r: float, rows: int = 4) -> list[list[float]]:
        p, a = math.radians(polar), math.radians(az)
        m = torch.eye(4, dtype=torch.float64)[:rows]
        m[:3, 3] = torch.tensor([r * math.sin(p) * math.cos(a), r * math.sin(p) * math.sin(a), r * math.cos(p)])
        return m.tolist()

    source, target = (60.0, 350.0, 2.0), (45.0, 20.0, 2.5)
    expected = torch.tensor([[-15.0, 30.0, 0.5]])  # target minus source, the azimuth wrapped into [0, 360)
    spherical = [dict(zip(("polar_deg", "azimuth_deg", "radius"), c, strict=True)) for c in (source, target)]
    by_dict = z.camera_pose(*spherical)
    by_lists = z.camera_pose(c2w(*source), {"c2w": c2w(*target, rows=3)})  # (4, 4) and (3, 4) as in cameras.json
    by_tensors = z.camera_pose(torch.tensor(c2w(*source)).float(), torch.tensor(c2w(*target)).float())
    assert by_dict.shape == (1, 3) and by_dict.dtype == torch.float32
    assert torch.allclose(by_dict, expected, atol=1e-5) and torch.allclose(by_lists, expected, atol=1e-5)
    assert torch.allclose(by_tensors, expected, atol=1e-4)
    with pytest.raises(ValueError, match="`source_camera` must hold 'c2w'"):
        z.camera_pose({"polar": 1}, spherical[1])


# ---- load_view --------------------------------------------------------------------------------------------------


def test_load_view_composites_on_white_and_resizes(tmp_path):
    rgba = np.zeros((512, 512, 4), dtype=np.uint8)
    rgba[..., 0] = 200  # red where opaque
    rgba[:256, :, 3] = 255  # top half opaque, bottom half fully transparent
    Image.fromarray(rgba, "RGBA").save(tmp_path / "v.png")
    out = load_view(tmp_path / "v.png")
    assert out.shape == (3, 256, 256) and out.dtype == torch.float32
    assert torch.allclose(out[:, -10:, :], torch.ones(3, 10, 256))  # transparent -> white
    assert torch.allclose(out[:, :10, :], torch.tensor([200 / 255, 0.0, 0.0]).view(3, 1, 1).expand(3, 10, 256))
    Image.fromarray(rgba[:64, :64, :3], "RGB").save(tmp_path / "small.png")
    assert load_view(tmp_path / "small.png", image_size=64).shape == (3, 64, 64)
