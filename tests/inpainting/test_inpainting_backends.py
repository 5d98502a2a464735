"""Inpainter backends: input checks, symmetric padding, OpenCV, LaMa (scripted stand-in via the hub), diffusers."""

from __future__ import annotations

import inspect
import sys
import types
from typing import ClassVar

import numpy as np
import pytest
import torch

from scenemetrics import hub
from scenemetrics.inpainting import DiffusersInpainter, LaMaInpainter, OpenCVInpainter, pad_symmetric, puzzle_inpaint
from scenemetrics.inpainting.inpainters import check_inpaint_inputs
from tests.utils.weights import publish_hash

CUSTOM = {"layers": (0,), "layer_weights": (1.0,)}
# the stand-in LaMa module is scripted here; torch deprecates torch.jit.script (the real export is TorchScript)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


# ------------------------------------------------------------------------------------------------ shared checks
@pytest.mark.parametrize(("h", "w"), [(13, 21), (8, 16), (3, 5), (1, 1), (16, 9), (7, 2)])
def test_pad_symmetric_matches_numpy(h, w):
    x = torch.rand(2, 3, h, w, dtype=torch.float64)
    ph, pw = -h % 8, -w % 8
    expected = np.pad(x.numpy(), ((0, 0), (0, 0), (0, ph), (0, pw)), mode="symmetric")
    out = pad_symmetric(x, 8)
    assert out.shape[-2] % 8 == 0 and out.shape[-1] % 8 == 0
    assert np.array_equal(out.numpy(), expected)


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (torch.zeros(1, 1, 32, 31), r"`mask` must have shape \(B, 1, H, W\) = \(1, 1, 32, 32\)"),
        (torch.zeros(1, 1, 16, 16), r"received \(1, 1, 16, 16\)"),
        (torch.zeros(2, 1, 32, 32), r"to match `image` of shape \(1, 3, 32, 32\)"),
        (torch.zeros(1, 3, 32, 32), r"`mask` must have shape"),
        (torch.zeros(1, 1, 32, 32, dtype=torch.int64), "dtype"),
        (torch.full((1, 1, 32, 32), float("nan")), "NaN"),
        (np.zeros((1, 1, 32, 32)), "must be a torch.Tensor"),
    ],
)
@pytest.mark.parametrize("backend", [pytest.param("opencv", marks=pytest.mark.extra("inpaint")), "lama"])
def test_inpainters_reject_bad_masks(mask, match, backend, tmp_path, lama_script):
    lama = "lama" if backend == "opencv" else LaMaInpainter(weights_path=lama_script(tmp_path, 0), trust_file=True)
    inpainter = OpenCVInpainter() if backend == "opencv" else lama
    with pytest.raises(ValueError, match=match):
        inpainter(torch.rand(1, 3, 32, 32), mask)


@pytest.mark.parametrize("backend", [pytest.param("opencv", marks=pytest.mark.extra("inpaint")), "lama"])
def test_inpainters_reject_bad_images(backend, tmp_path, lama_script):
    mask = torch.zeros(1, 1, 8, 8)
    if backend == "opencv":
        inpainters = [OpenCVInpainter()]
    else:
        inpainters = [LaMaInpainter(weights_path=lama_script(tmp_path, 0), trust_file=True)]
    for inpainter in inpainters:
        with pytest.raises(ValueError, match=r"`image` must be float in \[0, 1\]"):
            inpainter(torch.rand(1, 3, 8, 8) + 1.5, mask)
        with pytest.raises(ValueError, match="`image` must have 3"):
            inpainter(torch.rand(1, 4, 8, 8), mask)


def test_mask_layouts_accepted():
    image = torch.rand(1, 3, 8, 8)
    for mask in (
        torch.ones(1, 1, 8, 8),
        torch.ones(1, 8, 8),
        torch.ones(8, 8),
        torch.ones(1, 1, 8, 8, dtype=torch.bool),
    ):
        _, m = check_inpaint_inputs(image, mask)
        assert m.shape == (1, 1, 8, 8) and m.dtype == torch.float32


# ------------------------------------------------------------------------------------------------ OpenCV
@pytest.mark.extra("inpaint")
@pytest.mark.parametrize("method", ["telea", "ns"])
def test_opencv_fills_a_hole_in_a_flat_image(method):
    image = torch.full((2, 3, 24, 24), 0.4)
    mask = torch.zeros(2, 1, 24, 24)
    mask[:, :, 8:14, 6:16] = 1
    image[:, :, 8:14, 6:16] = torch.rand(2, 3, 6, 10)
    out = OpenCVInpainter(method=method, radius=3)(image, mask)
    assert out.shape == image.shape and out.dtype == torch.float32 and out.device == image.device
    # everything around the hole is round(0.4 * 255) / 255; the fill propagates it (Telea's gradient term lets the
    # hole's old noise leak in by a grey level or two; the noise itself spans +-100 levels)
    flat = round(0.4 * 255) / 255
    assert torch.allclose(out, torch.full_like(out, flat), atol=2.5 / 255)
    assert torch.equal(out[..., :8, :], (image[..., :8, :] * 255).round() / 255)


@pytest.mark.extra("inpaint")
def test_opencv_mask_threshold_is_one_half():
    image = torch.full((1, 3, 16, 16), 0.8)
    image[..., 5:9, 5:9] = 0.0
    soft = torch.zeros(1, 1, 16, 16)
    soft[..., 5:9, 5:9] = 0.4
    assert torch.equal(OpenCVInpainter()(image, soft)[..., 5:9, 5:9], torch.zeros(1, 3, 4, 4))
    soft[..., 5:9, 5:9] = 0.6
    assert float(OpenCVInpainter()(image, soft)[..., 5:9, 5:9].min()) > 0.5


def test_opencv_bad_arguments_and_missing_extra(monkeypatch):
    with pytest.raises(ValueError, match="`method`"):
        OpenCVInpainter(method="fast")
    with pytest.raises(ValueError, match="`radius`"):
        OpenCVInpainter(radius=0)
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r'pip install "scenemetrics\[inpaint\]"'):
        OpenCVInpainter()(torch.rand(1, 3, 8, 8), torch.zeros(1, 1, 8, 8))


# ------------------------------------------------------------------------------------------------ LaMa
def test_lama_pads_to_multiples_of_8_symmetrically_and_crops(tmp_path, lama_script):
    lama = LaMaInpainter(weights_path=lama_script(tmp_path, 1), trust_file=True)
    image = torch.rand(1, 3, 13, 21)
    out = lama(image, torch.zeros(1, 1, 13, 21))
    padded = np.pad(image.numpy(), ((0, 0), (0, 0), (0, 3), (0, 3)), mode="symmetric")
    expected = np.ascontiguousarray(padded[:, :, ::-1, ::-1][:, :, :13, :21])
    assert out.shape == (1, 3, 13, 21)
    assert np.array_equal(out.numpy(), expected)


def test_lama_binarises_the_mask_and_clamps(tmp_path, lama_script):
    soft = torch.zeros(1, 1, 16, 24)
    soft[..., 2:6, 3:9] = 0.3  # any positive value counts as "fill"
    soft[..., 10:12, 1:4] = 1.0
    out = LaMaInpainter(weights_path=lama_script(tmp_path / "a", 2), trust_file=True)(torch.rand(1, 3, 16, 24), soft)
    assert torch.equal(out, (soft > 0).float().expand(1, 3, 16, 24))
    image = torch.rand(1, 3, 16, 24)
    out = LaMaInpainter(weights_path=lama_script(tmp_path / "b", 3), trust_file=True)(image, soft)
    assert torch.equal(out, (image * 4.0 - 1.0).clamp(0, 1))


def test_lama_loads_through_the_hub_file_folder_and_cache(tmp_path, lama_script, monkeypatch):
    image = torch.rand(3, 3, 12, 12)  # batch 3 with max_batch=1: three forward passes of batch 1
    mask = torch.zeros(3, 1, 12, 12)
    mask[..., 4:8, 4:8] = 1
    expected = image * (1 - mask) + 0.5 * mask
    folder = tmp_path / "weights"
    file = lama_script(folder, 0)
    for weights_path in (file, folder, str(file)):
        assert torch.allclose(LaMaInpainter(weights_path=weights_path, trust_file=True)(image, mask), expected)
    cache = hub.cache_dir("inpainting")
    publish_hash(monkeypatch, "inpainting/big-lama", lama_script(cache, 0))  # cached files are verified on each load
    lama = LaMaInpainter()
    assert torch.allclose(lama(image, mask), expected)
    assert lama.max_batch == 1 and isinstance(lama.load(), torch.jit.ScriptModule)
    assert not lama.load().training
    # a larger max_batch calls the model with bigger batches
    big_file = lama_script(tmp_path / "any", 0, batch_one=False)
    big = LaMaInpainter(weights_path=big_file, max_batch=4, trust_file=True)
    assert torch.allclose(big(image, mask), expected)


def test_lama_missing_or_bad_weights(tmp_path, monkeypatch):
    with pytest.raises(hub.WeightsNotFoundError, match=r"big-lama\.pt"):
        LaMaInpainter(weights_path=tmp_path / "nope.pt").load()
    with pytest.raises(hub.WeightsNotFoundError, match=r"big-lama\.pt") as info:
        LaMaInpainter()(torch.rand(1, 3, 8, 8), torch.zeros(1, 1, 8, 8))  # downloads fail in tests
    assert info.value.url == hub.CHECKPOINTS["inpainting/big-lama"].url
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError, match="SCENEMETRICS_OFFLINE"):
        LaMaInpainter().load()
    bad = tmp_path / "big-lama.pt"
    bad.write_bytes(b"not a torchscript archive")
    with pytest.raises(ValueError, match=r"could not load .*big-lama\.pt.* TorchScript"):
        LaMaInpainter(weights_path=bad, trust_file=True).load()
    with pytest.raises(ValueError, match=r"refusing to load .*big-lama\.pt.* TorchScript"):  # not published
        LaMaInpainter(weights_path=bad).load()
    with pytest.raises(ValueError, match="`max_batch`"):
        LaMaInpainter(max_batch=0)


def test_lama_in_the_loop(tmp_path, planted, local_stats, lama_script):
    refs, image, art, _ = planted(0)
    lama = LaMaInpainter(weights_path=lama_script(tmp_path, 0), trust_file=True)
    result = puzzle_inpaint(image, refs, lama, backbone=local_stats, **CUSTOM, n_candidates=10, progress=False)
    assert result.accepted_rounds >= 1 and result.quality_after > result.quality_before
    assert int((result.mask & art).sum()) >= 0.9 * int(art.sum())
    assert torch.equal(result.image[:, result.mask], torch.full((3, int(result.mask.sum())), 0.5))
    assert torch.equal(result.image[:, ~result.mask], image[:, ~result.mask])


# ------------------------------------------------------------------------------------------------ diffusers
class _StubPipe:
    """Stands in for StableDiffusionInpaintPipeline: records calls; its output also changes unmasked pixels (VAE)."""

    loaded: ClassVar[list] = []
    calls: ClassVar[list] = []

    def __init__(self) -> None:
        self.device = None
        self.progress: dict = {}

    @classmethod
    def from_pretrained(cls, model, torch_dtype=None):
        cls.loaded.append((model, torch_dtype))
        return cls()

    def to(self, device):
        self.device = device
        return self

    def set_progress_bar_config(self, **kwargs):
        self.progress = kwargs

    def __call__(self, **kwargs):
        type(self).calls.append(kwargs)
        image, mask = kwargs["image"], kwargs["mask_image"]
        assert kwargs["height"] % 8 == 0 and kwargs["width"] % 8 == 0
        assert image.shape[-2:] == mask.shape[-2:] == (kwargs["height"], kwargs["width"])
        assert bool(((mask == 0) | (mask == 1)).all())
        out = image * 0.9 + 0.05  # every pixel changes, as a VAE round trip does
        out = torch.where(mask.bool(), torch.full_like(out, 0.5), out)
        return types.SimpleNamespace(images=out)


@pytest.fixture()
def stub_diffusers(monkeypatch):
    module = types.ModuleType("diffusers")

    class Pipe(_StubPipe):
        loaded: ClassVar[list] = []
        calls: ClassVar[list] = []

    module.StableDiffusionInpaintPipeline = Pipe
    monkeypatch.setitem(sys.modules, "diffusers", module)
    return Pipe


def test_diffusers_call_arguments_padding_and_crop(stub_diffusers):
    inpainter = DiffusersInpainter(model="some/inpaint-model", prompt="grass", negative_prompt="blur", seed=7)
    image = torch.rand(6, 3, 13, 21)
    mask = torch.zeros(6, 1, 13, 21)
    mask[..., 2:6, 3:9] = 0.7
    out = inpainter(image, mask)
    assert out.shape == image.shape and out.dtype == torch.float32
    assert stub_diffusers.loaded == [("some/inpaint-model", None)]
    assert [c["image"].shape[0] for c in stub_diffusers.calls] == [4, 2]  # max_batch=4
    call = stub_diffusers.calls[0]
    assert call["prompt"] == ["grass"] * 4 and call["negative_prompt"] == ["blur"] * 4
    assert (call["height"], call["width"]) == (16, 24) and call["output_type"] == "pt"
    assert call["num_inference_steps"] == 25 and call["guidance_scale"] == 7.5
    assert isinstance(call["generator"], torch.Generator) and call["generator"].initial_seed() == 7
    expected = np.pad(image[:4].numpy(), ((0, 0), (0, 0), (0, 3), (0, 3)), mode="symmetric")
    assert np.array_equal(call["image"].numpy(), expected)
    assert torch.equal(call["mask_image"][..., :13, :21], (mask[:4] > 0.5).float())
    assert torch.equal(out[..., 2:6, 3:9], torch.full((6, 3, 4, 6), 0.5))
    assert torch.allclose(out[..., 8:, :], image[..., 8:, :] * 0.9 + 0.05)
    no_negative = DiffusersInpainter()
    no_negative(image[:1], mask[:1])
    assert "negative_prompt" not in stub_diffusers.calls[-1]


def test_diffusers_in_the_loop_composites(stub_diffusers, planted, local_stats):
    refs, image, _, _ = planted(0)
    result = puzzle_inpaint(image, refs, DiffusersInpainter(), backbone=local_stats, **CUSTOM, progress=False)
    assert result.accepted_rounds >= 1
    assert torch.equal(result.image[:, ~result.mask], image[:, ~result.mask])  # the VAE's changes are discarded


def test_diffusers_offline_and_missing(monkeypatch, stub_diffusers):
    def offline(model, torch_dtype=None):
        raise OSError("We couldn't connect to 'https://huggingface.co' (HF_HUB_OFFLINE=1)")

    monkeypatch.setattr(stub_diffusers, "from_pretrained", staticmethod(offline))
    with pytest.raises(hub.WeightsNotFoundError, match="some/model") as info:
        DiffusersInpainter(model="some/model")(torch.rand(1, 3, 8, 8), torch.zeros(1, 1, 8, 8))
    assert info.value.url == "https://huggingface.co/some/model"
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(ImportError, match=r'pip install "scenemetrics\[prism\]"'):
        DiffusersInpainter().load()
    with pytest.raises(ValueError, match="`num_inference_steps`"):
        DiffusersInpainter(num_inference_steps=0)


@pytest.mark.slow
def test_diffusers_arguments_bind_to_the_real_pipeline(monkeypatch):
    diffusers = pytest.importorskip("diffusers")
    real = diffusers.StableDiffusionInpaintPipeline
    signature = inspect.signature(real.__call__)
    seen = []

    class Bound(_StubPipe):
        calls: ClassVar[list] = []

        def __call__(self, **kwargs):
            seen.append(signature.bind(self, **kwargs))  # TypeError if the real pipeline does not take these
            return super().__call__(**kwargs)

    monkeypatch.setattr(real, "from_pretrained", classmethod(lambda cls, model, torch_dtype=None: Bound()))
    DiffusersInpainter(negative_prompt="x")(torch.rand(1, 3, 12, 12), torch.ones(1, 1, 12, 12))
    assert seen and seen[0].arguments["output_type"] == "pt"
