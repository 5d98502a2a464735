"""Inpainting backends and the BLIP captioner of the ViewMatch-style dataset builder.

A backend is any callable ``(image, mask, *, prompt, negative_prompt, seed) -> image`` with a ``name`` (written to
``dataset.json``) and a working ``size`` (``None``: the view's own size). ``image`` is ``(S, S, 3)`` uint8 RGB over
white, ``mask`` ``(S, S)`` bool (``True`` = repaint). The builder resizes to ``size`` (LANCZOS image, NEAREST mask),
resizes the result back (LANCZOS) and composites it, so only masked pixels ever change.

* :class:`OpenCVBackend`: ``cv2.inpaint`` (tests, CPU; ignores prompt and seed).
* :class:`DiffusersBackend`: any diffusers inpainting pipeline (default Stable Diffusion 1.5 inpainting: about 2 GB
  in fp16, not gated, runs slowly on a CPU).
* :class:`FluxControlNetBackend`: the PRISM paper's set-up (FLUX.1-dev + alimama's inpainting ControlNet + the
  FLUX.1-Turbo-Alpha LoRA, 8 steps); needs alimama's pipeline code and a large GPU.
* :class:`BlipCaptioner`: BLIP captions of the source views, used as prompts.

Example:
    >>> import numpy as np
    >>> from scenemetrics.prism.viewmatch import OpenCVBackend
    >>> image = np.full((16, 16, 3), 200, np.uint8); mask = np.zeros((16, 16), bool); mask[4:8, 4:8] = True
    >>> OpenCVBackend()(image, mask, prompt="", negative_prompt="", seed=45).shape
    (16, 16, 3)
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenemetrics.checks import check_number, check_positive_int
from scenemetrics.prism.viewmatch.views import import_cv2

__all__ = [
    "DEFAULT_BLIP",
    "DEFAULT_INPAINTING_MODEL",
    "BlipCaptioner",
    "DiffusersBackend",
    "FluxControlNetBackend",
    "OpenCVBackend",
    "ViewMatchInpainter",
    "inpaint_composite",
]

DEFAULT_INPAINTING_MODEL = "stable-diffusion-v1-5/stable-diffusion-inpainting"
DEFAULT_BLIP = "Salesforce/blip-image-captioning-base"
FLUX_CODE_REPO = "https://github.com/alimama-creative/FLUX-Controlnet-Inpainting"


@runtime_checkable
class ViewMatchInpainter(Protocol):
    """What the builder calls: ``(H, W, 3)`` uint8 RGB and an ``(H, W)`` bool mask -> ``(H, W, 3)`` uint8 RGB."""

    name: str

    def __call__(
        self, image: np.ndarray, mask: np.ndarray, *, prompt: str, negative_prompt: str, seed: int
    ) -> np.ndarray: ...


def _resolve_device(device: str | None) -> str:
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def _offline(local_files_only: bool | None) -> bool:
    from scenemetrics.prism.zero123 import _env_true, _hf_offline

    if local_files_only is not None:
        return bool(local_files_only)
    return _hf_offline() or _env_true("SCENEMETRICS_OFFLINE")


def _load_error(what: str, model: str, err: Exception) -> Exception:
    from scenemetrics.hub import WeightsNotFoundError

    if os.path.isdir(model):
        return ValueError(f"cannot load the {what} from the folder {model!r}: {err}")
    url = f"https://huggingface.co/{model}"
    return WeightsNotFoundError(
        f"Could not load the {what} {model!r} ({err}). It is downloaded from {url} into the Hugging Face cache; "
        "HF_HUB_OFFLINE=1 (or SCENEMETRICS_OFFLINE=1) only reads that cache. Download it once with network access, "
        "or pass a local folder.",
        filename=model,
        url=url,
    )


def _resize(array: np.ndarray, size: int, nearest: bool) -> np.ndarray:
    from PIL import Image

    img = Image.fromarray(array)
    return np.asarray(img.resize((size, size), Image.NEAREST if nearest else Image.LANCZOS))


def inpaint_composite(
    inpainter: ViewMatchInpainter, image: np.ndarray, mask: np.ndarray, *, prompt: str, negative_prompt: str, seed: int
) -> np.ndarray:
    """Run a backend the way the builder does: resize, inpaint, resize back, composite.

    The image (``(S, S, 3)`` uint8 RGB over white) is resized to the backend's ``size`` with LANCZOS and the mask
    with NEAREST, the result is resized back with LANCZOS, and only pixels of ``mask`` are taken from it: every
    other pixel is bit-identical to ``image``.

    Raises:
        ValueError: the backend returned another shape or dtype.

    Example:
        >>> import numpy as np
        >>> image = np.full((8, 8, 3), 255, np.uint8); mask = np.zeros((8, 8), bool); mask[2:4, 2:4] = True
        >>> out = inpaint_composite(OpenCVBackend(), image, mask, prompt="", negative_prompt="", seed=45)
        >>> bool((out[~mask] == image[~mask]).all())
        True
    """
    side = image.shape[0]
    size = getattr(inpainter, "size", None)
    if size and size != side:
        m_small = _resize(np.where(mask, 255, 0).astype(np.uint8), size, nearest=True) > 127
        out = inpainter(
            _resize(image, size, nearest=False), m_small, prompt=prompt, negative_prompt=negative_prompt, seed=seed
        )
        out = _resize(np.asarray(out, dtype=np.uint8), side, nearest=False)
    else:
        out = inpainter(image, mask, prompt=prompt, negative_prompt=negative_prompt, seed=seed)
    out = np.asarray(out)
    if out.shape != image.shape or out.dtype != np.uint8:
        raise ValueError(
            f"the inpainter returned {out.dtype} {out.shape}; expected uint8 {image.shape} (RGB over white)"
        )
    return np.where(mask[..., None], out, image)


class OpenCVBackend:
    """``cv2.inpaint`` (Telea or Navier-Stokes): smooth, content-unaware fills for tests and CPU-only builds.

    Args:
        method: ``"telea"`` or ``"ns"``.
        radius: neighbourhood radius in pixels (>= 1).

    Raises:
        ValueError: unknown ``method`` or bad ``radius``.
    """

    size: int | None = None

    def __init__(self, method: str = "telea", radius: int = 3) -> None:
        if method not in ("telea", "ns"):
            raise ValueError(f"`method` must be 'telea' or 'ns'; received {method!r}")
        check_positive_int(radius, "radius")
        self.method, self.radius = method, radius
        self.name = f"opencv:{method}:r{radius}"

    def __call__(
        self, image: np.ndarray, mask: np.ndarray, *, prompt: str, negative_prompt: str, seed: int
    ) -> np.ndarray:
        cv2 = import_cv2()
        flag = cv2.INPAINT_TELEA if self.method == "telea" else cv2.INPAINT_NS
        m = np.where(mask, 255, 0).astype(np.uint8)
        return cv2.inpaint(np.ascontiguousarray(image), m, self.radius, flag)


class DiffusersBackend:
    """A diffusers inpainting pipeline (``AutoPipelineForInpainting``), loaded on first use.

    ``model`` is a local folder or a hub id (default Stable Diffusion 1.5 inpainting; SD 2.x, SDXL and FLUX
    inpainting pipelines work too). Offline rules: ``HF_HUB_OFFLINE=1``, ``SCENEMETRICS_OFFLINE=1`` or
    ``local_files_only=True`` only read the Hugging Face cache. ``strength=1.0``: the PRISM paper's 0.9 is its
    ControlNet's conditioning strength, not a latent-noise strength.

    Args:
        model: folder or hub id.
        size: working resolution (square).
        num_inference_steps / guidance_scale / strength: the pipeline's.
        device: ``"auto"``/``None`` (CUDA when available), ``"cpu"``, ``"cuda:N"``.
        torch_dtype: default float16 on CUDA, float32 on the CPU.
        local_files_only: ``None`` follows the offline environment variables.

    Example:
        >>> backend = DiffusersBackend("path/to/sd-inpainting", size=512)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_INPAINTING_MODEL,
        *,
        size: int = 512,
        num_inference_steps: int = 25,
        guidance_scale: float = 7.5,
        strength: float = 1.0,
        device: str | None = None,
        torch_dtype: Any = None,
        local_files_only: bool | None = None,
    ) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 8 or size % 8:
            raise ValueError(f"`size` must be a positive multiple of 8; received {size!r}")
        check_positive_int(num_inference_steps, "num_inference_steps")
        check_number(strength, "strength", low=0.0, high=1.0, low_open=True)
        self.model = os.fspath(model)
        self.size = size
        self.num_inference_steps = num_inference_steps
        self.guidance_scale = float(guidance_scale)
        self.strength = float(strength)
        self.device = device
        self.torch_dtype = torch_dtype
        self.local_files_only = local_files_only
        self.name = (
            f"diffusers:{self.model} size={size} steps={num_inference_steps} guidance={self.guidance_scale:g} "
            f"strength={self.strength:g}"
        )
        self._pipe: Any = None

    def _load(self) -> Any:
        if self._pipe is None:
            from scenemetrics.prism.zero123 import require_extra

            require_extra("DiffusersBackend", ("diffusers", "transformers", "torch"))
            import torch
            from diffusers import AutoPipelineForInpainting

            device = _resolve_device(self.device)
            dtype = self.torch_dtype or (torch.float16 if device.startswith("cuda") else torch.float32)
            try:
                with warnings.catch_warnings():  # newer diffusers rename torch_dtype; older ones only know it
                    warnings.filterwarnings("ignore", message=".*torch_dtype.*", category=FutureWarning)
                    pipe = AutoPipelineForInpainting.from_pretrained(
                        self.model, torch_dtype=dtype, local_files_only=_offline(self.local_files_only)
                    )
            except (OSError, ValueError) as err:
                raise _load_error("inpainting pipeline", self.model, err) from err
            pipe = pipe.to(device)
            pipe.set_progress_bar_config(disable=True)
            self._pipe, self._device = pipe, device
        return self._pipe

    def __call__(
        self, image: np.ndarray, mask: np.ndarray, *, prompt: str, negative_prompt: str, seed: int
    ) -> np.ndarray:
        import torch
        from PIL import Image

        pipe = self._load()
        h, w = image.shape[:2]
        result = pipe(
            prompt=prompt,
            negative_prompt=negative_prompt,
            image=Image.fromarray(image),
            mask_image=Image.fromarray(np.where(mask, 255, 0).astype(np.uint8)),
            height=h,
            width=w,
            strength=self.strength,
            num_inference_steps=self.num_inference_steps,
            guidance_scale=self.guidance_scale,
            generator=torch.Generator(self._device).manual_seed(int(seed)),
        ).images[0]
        return np.asarray(result.convert("RGB"))


class FluxControlNetBackend:
    """The PRISM paper's inpainting: FLUX.1-dev with alimama's inpainting ControlNet and the Turbo-Alpha LoRA fused.

    alimama's ControlNet needs alimama's pipeline code (``controlnet_flux``, ``transformer_flux``,
    ``pipeline_flux_controlnet_inpaint`` from the GitHub repository alimama-creative/FLUX-Controlnet-Inpainting),
    which is not bundled: clone it and pass its folder as ``code_dir``. The ControlNet and transformer are loaded in
    bfloat16; the pipeline needs a GPU with at least 40 GB, or ``cpu_offload=True``. The paper's "inpainting
    strength 0.9" is read as ``controlnet_conditioning_scale``; ``size=768`` is alimama's example size.

    Raises:
        ImportError: alimama's modules cannot be imported (names the repository).
    """

    def __init__(
        self,
        base: str = "black-forest-labs/FLUX.1-dev",
        controlnet: str = "alimama-creative/FLUX.1-dev-Controlnet-Inpainting-Beta",
        lora: str = "alimama-creative/FLUX.1-Turbo-Alpha",
        code_dir: str | os.PathLike | None = None,
        *,
        size: int = 768,
        num_inference_steps: int = 8,
        guidance_scale: float = 3.5,
        true_guidance_scale: float = 1.0,
        controlnet_conditioning_scale: float = 0.9,
        cpu_offload: bool = False,
        device: str | None = None,
    ) -> None:
        if code_dir is not None:
            path = os.fspath(Path(code_dir).resolve())
            if path not in sys.path:
                sys.path.insert(0, path)
        try:
            from controlnet_flux import FluxControlNetModel  # type: ignore[import-not-found]
            from pipeline_flux_controlnet_inpaint import (  # type: ignore[import-not-found]
                FluxControlNetInpaintingPipeline,
            )
            from transformer_flux import FluxTransformer2DModel  # type: ignore[import-not-found]
        except ImportError as err:
            raise ImportError(
                "FluxControlNetBackend needs alimama's pipeline code (modules controlnet_flux, transformer_flux, "
                f"pipeline_flux_controlnet_inpaint): clone {FLUX_CODE_REPO} and pass its folder as code_dir "
                f"(--flux-code DIR). Import failed: {err}"
            ) from err
        self._classes = (FluxControlNetModel, FluxTransformer2DModel, FluxControlNetInpaintingPipeline)
        self.base, self.controlnet, self.lora = base, controlnet, lora
        self.size = size
        self.num_inference_steps = num_inference_steps
        self.guidance_scale = guidance_scale
        self.true_guidance_scale = true_guidance_scale
        self.controlnet_conditioning_scale = controlnet_conditioning_scale
        self.cpu_offload = cpu_offload
        self.device = device
        self.name = (
            f"flux-controlnet:{base}+{controlnet}+{lora} size={size} steps={num_inference_steps} "
            f"guidance={guidance_scale:g} true_guidance={true_guidance_scale:g} "
            f"controlnet_scale={controlnet_conditioning_scale:g}"
        )
        self._pipe: Any = None

    def _load(self) -> Any:
        if self._pipe is None:
            import torch

            controlnet_cls, transformer_cls, pipeline_cls = self._classes
            try:
                controlnet = controlnet_cls.from_pretrained(self.controlnet, torch_dtype=torch.bfloat16)
                transformer = transformer_cls.from_pretrained(
                    self.base, subfolder="transformer", torch_dtype=torch.bfloat16
                )
                pipe = pipeline_cls.from_pretrained(
                    self.base, controlnet=controlnet, transformer=transformer, torch_dtype=torch.bfloat16
                )
                pipe.load_lora_weights(self.lora)
                pipe.fuse_lora()
            except OSError as err:
                raise _load_error("FLUX ControlNet pipeline", self.base, err) from err
            device = _resolve_device(self.device)
            if self.cpu_offload:
                pipe.enable_model_cpu_offload()
            else:
                pipe = pipe.to(device)
            pipe.set_progress_bar_config(disable=True)
            self._pipe, self._device = pipe, ("cpu" if self.cpu_offload else device)
        return self._pipe

    def __call__(
        self, image: np.ndarray, mask: np.ndarray, *, prompt: str, negative_prompt: str, seed: int
    ) -> np.ndarray:
        import torch
        from PIL import Image

        pipe = self._load()
        h, w = image.shape[:2]
        result = pipe(
            prompt=prompt,
            negative_prompt=negative_prompt,
            height=h,
            width=w,
            control_image=Image.fromarray(image),
            control_mask=Image.fromarray(np.where(mask, 255, 0).astype(np.uint8)),
            num_inference_steps=self.num_inference_steps,
            generator=torch.Generator(self._device).manual_seed(int(seed)),
            controlnet_conditioning_scale=self.controlnet_conditioning_scale,
            guidance_scale=self.guidance_scale,
            true_guidance_scale=self.true_guidance_scale,
        ).images[0]
        return np.asarray(result.convert("RGB"))


class BlipCaptioner:
    """Unconditional greedy BLIP captions (transformers ``BlipProcessor`` + ``BlipForConditionalGeneration``).

    The PRISM paper prompts its inpainting with a BLIP caption of the source image without naming the checkpoint;
    ``Salesforce/blip-image-captioning-base`` is our default. Loaded on first use; same offline rules as
    :class:`DiffusersBackend`.

    Args:
        model: folder or hub id.
        max_new_tokens: caption length cap.
        device: ``"auto"``/``None`` (CUDA when available), ``"cpu"``, ``"cuda:N"``.
        local_files_only: ``None`` follows the offline environment variables.

    Example:
        >>> caption = BlipCaptioner()(image_rgb_uint8)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_BLIP,
        *,
        max_new_tokens: int = 30,
        device: str | None = None,
        local_files_only: bool | None = None,
    ) -> None:
        self.model = os.fspath(model)
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.local_files_only = local_files_only
        self.name = f"blip:{self.model} max_new_tokens={max_new_tokens}"
        self._parts: Any = None

    def _load(self) -> Any:
        if self._parts is None:
            from scenemetrics.prism.zero123 import require_extra

            require_extra("BlipCaptioner", ("transformers", "torch"))
            from transformers import BlipForConditionalGeneration, BlipProcessor

            offline = _offline(self.local_files_only)
            try:
                processor = BlipProcessor.from_pretrained(self.model, local_files_only=offline)
                model = BlipForConditionalGeneration.from_pretrained(self.model, local_files_only=offline)
            except (OSError, ValueError) as err:
                raise _load_error("BLIP captioner", self.model, err) from err
            device = _resolve_device(self.device)
            self._parts = (processor, model.to(device).eval(), device)
        return self._parts

    def __call__(self, image: np.ndarray) -> str:
        """Caption an ``(H, W, 3)`` uint8 RGB image."""
        import torch
        from PIL import Image

        processor, model, device = self._load()
        inputs = processor(images=Image.fromarray(image), return_tensors="pt").to(device)
        with torch.no_grad():
            ids = model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1)
        return processor.decode(ids[0], skip_special_tokens=True).strip()
