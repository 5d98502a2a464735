"""Inpainting backends and the captioner: tiny random-weight diffusers / BLIP folders loaded like a download."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cv2")

from scenemetrics.prism.viewmatch import (
    BlipCaptioner,
    DiffusersBackend,
    FluxControlNetBackend,
    OpenCVBackend,
    ViewMatchInpainter,
    inpaint_composite,
)

from . import viewmatch_tiny


def _scene(size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[:size, :size]
    image = np.full((size, size, 3), 255, np.uint8)
    disc = (yy - size / 2) ** 2 + (xx - size / 2) ** 2 < (size / 3) ** 2
    image[disc] = (200, 40, 40)
    mask = (yy > size // 3) & (yy < 2 * size // 3) & (xx > size // 2)
    return image, mask


def test_opencv_backend_fills_only_the_mask():
    image, mask = _scene()
    backend = OpenCVBackend()
    assert isinstance(backend, ViewMatchInpainter) and backend.name == "opencv:telea:r3"
    out = inpaint_composite(backend, image, mask, prompt="", negative_prompt="", seed=45)
    assert out.shape == image.shape and out.dtype == np.uint8
    assert np.array_equal(out[~mask], image[~mask])
    assert not np.array_equal(out[mask], image[mask])
    with pytest.raises(ValueError, match="method"):
        OpenCVBackend(method="fast")


@pytest.fixture(scope="module")
def sd_folder(tmp_path_factory):
    pytest.importorskip("diffusers")
    return viewmatch_tiny.tiny_sd_inpainting(tmp_path_factory.mktemp("sd"))


@pytest.mark.slow
def test_diffusers_backend_loads_a_saved_pipeline_folder(sd_folder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    image, mask = _scene(96)  # the builder resizes 96 px views to the backend's 64 px and back
    backend = DiffusersBackend(sd_folder, size=64, num_inference_steps=2, device="cpu")
    assert "size=64 steps=2" in backend.name
    first = inpaint_composite(backend, image, mask, prompt="a red toy", negative_prompt="blurry", seed=45)
    assert first.shape == (96, 96, 3) and first.dtype == np.uint8
    assert np.array_equal(first[~mask], image[~mask])  # bit-identical outside the mask
    assert not np.array_equal(first[mask], image[mask])
    again = inpaint_composite(backend, image, mask, prompt="a red toy", negative_prompt="blurry", seed=45)
    assert np.array_equal(first, again)
    other = inpaint_composite(backend, image, mask, prompt="a red toy", negative_prompt="blurry", seed=46)
    assert not np.array_equal(first, other)  # seed + k: the completions differ
    raw = backend(image[:64, :64], mask[:64, :64], prompt="", negative_prompt="", seed=45)
    assert raw.shape == (64, 64, 3) and raw.dtype == np.uint8


def test_diffusers_backend_errors(tmp_path, monkeypatch):
    from scenemetrics.hub import WeightsNotFoundError

    with pytest.raises(ValueError, match="size"):
        DiffusersBackend(size=100)
    with pytest.raises(ValueError, match="strength"):
        DiffusersBackend(strength=0)
    pytest.importorskip("diffusers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    backend = DiffusersBackend("nobody/not-a-cached-inpainting-model", device="cpu")
    image, mask = _scene(16)
    with pytest.raises(WeightsNotFoundError, match="HF_HUB_OFFLINE"):
        backend(image, mask, prompt="", negative_prompt="", seed=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty"):
        DiffusersBackend(tmp_path / "empty", device="cpu")(image, mask, prompt="", negative_prompt="", seed=0)


def test_blip_captioner_runs_a_saved_folder(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = viewmatch_tiny.tiny_blip(tmp_path)
    captioner = BlipCaptioner(folder, max_new_tokens=5, device="cpu")
    image, _ = _scene(48)
    caption = captioner(image)
    assert isinstance(caption, str) and caption == captioner(image)  # greedy: deterministic
    words = {"a", "red", "cube", "sphere", "on", "white", "toy", "photo", "of", "the"}
    assert caption and set(caption.split()) <= words
    assert len(caption.split()) <= 5


def test_flux_backend_without_alimama_code_names_the_repository(tmp_path):
    with pytest.raises(ImportError, match="alimama-creative/FLUX-Controlnet-Inpainting"):
        FluxControlNetBackend(code_dir=tmp_path)
