"""Inpainting backends for :func:`scenemetrics.inpainting.puzzle_inpaint`, all behind one call signature.

An inpainter is any callable ``inpainter(image, mask) -> filled``:

* ``image``: ``(B, 3, H, W)`` float RGB in [0, 1];
* ``mask``: ``(B, 1, H, W)`` float in {0, 1}, 1 = fill;
* returns ``(B, 3, H, W)`` float in [0, 1] on ``image.device``. Unmasked pixels may change (the loop composites:
  only masked pixels are taken from the result).

An optional ``max_batch`` attribute caps how many images one call receives (the loop splits its batches).

Backends:

* :class:`OpenCVInpainter` — ``cv2.inpaint`` (Telea / Navier-Stokes); fast, smooth, offline; extra ``[inpaint]``.
* :class:`LaMaInpainter` — the paper's backend, the big-LaMa TorchScript export of lama-cleaner / IOPaint, loaded
  through :mod:`scenemetrics.hub` (needs only torch).
* :class:`DiffusersInpainter` — Stable Diffusion inpainting through diffusers (extra ``[prism]`` brings it).

Example:
    >>> import torch
    >>> from scenemetrics.inpainting import OpenCVInpainter
    >>> image = torch.rand(1, 3, 32, 32)
    >>> mask = torch.zeros(1, 1, 32, 32)
    >>> mask[..., 8:16, 8:16] = 1
    >>> OpenCVInpainter()(image, mask).shape
    torch.Size([1, 3, 32, 32])
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from torch import Tensor

from scenemetrics.image import check_images

__all__ = [
    "DiffusersInpainter",
    "Inpainter",
    "LaMaInpainter",
    "OpenCVInpainter",
    "check_inpaint_inputs",
    "check_max_batch",
    "pad_symmetric",
]

PAD_MULTIPLE = 8
"""LaMa and Stable Diffusion need sides that are multiples of 8 (IOPaint's ``pad_img_to_modulo``)."""


@runtime_checkable
class Inpainter(Protocol):
    """The call signature every backend implements (any callable with it works, e.g. a lambda).

    ``image`` ``(B, 3, H, W)`` float in [0, 1]; ``mask`` ``(B, 1, H, W)`` float in {0, 1}, 1 = fill; returns
    ``(B, 3, H, W)`` float in [0, 1] on ``image.device``. A backend may also set ``max_batch`` (int): the most images
    one call accepts.
    """

    def __call__(self, image: Tensor, mask: Tensor) -> Tensor: ...


# ------------------------------------------------------------------------------------------------ shared helpers
def check_max_batch(value: Any, name: str = "max_batch") -> int | None:
    """``None`` or an int >= 1, else ``ValueError`` naming ``name``."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` must be an int >= 1 or None; received {value!r}")
    return value


def check_inpaint_inputs(image: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Validate an inpainter's inputs; returns ``(image (B,3,H,W) float32, mask (B,1,H,W) float32)``.

    ``image`` follows the shared input rule (:func:`scenemetrics.image.check_images`). ``mask`` is a real or bool
    tensor ``(B, 1, H, W)`` (or ``(B, H, W)``; ``(H, W)`` for a single image) of finite values with the image's
    batch size and spatial size; it is returned as float on the image's device (binarisation is the backend's).

    Raises:
        ValueError: bad image, or a mask of another size, batch, dtype, or with non-finite values.
    """
    x = check_images(image, "image")
    if not isinstance(mask, Tensor):
        raise ValueError(f"`mask` must be a torch.Tensor (B, 1, H, W); received {type(mask).__name__}")
    m = mask
    if m.ndim == 2 and x.shape[0] == 1:
        m = m[None, None]
    elif m.ndim == 3:
        m = m.unsqueeze(1)
    b, _, h, w = x.shape
    if m.ndim != 4 or m.shape[1] != 1 or m.shape[0] != b or tuple(m.shape[-2:]) != (h, w):
        raise ValueError(
            f"`mask` must have shape (B, 1, H, W) = ({b}, 1, {h}, {w}) to match `image` of shape {tuple(x.shape)}; "
            f"received {tuple(mask.shape)}"
        )
    if m.dtype == torch.bool:
        m = m.to(torch.float32)
    elif m.dtype == torch.uint8 or m.is_floating_point():
        m = m.to(torch.float32)
        if not bool(torch.isfinite(m).all()):
            raise ValueError("`mask` contains NaN or infinite values")
    else:
        raise ValueError(f"`mask` must be bool, uint8 or floating point (1 = fill); received dtype {mask.dtype}")
    return x, m.to(x.device)


def _symmetric_index(n: int, total: int, device: torch.device) -> Tensor:
    # numpy mode="symmetric": reflect including the edge, periodic with period 2n (works when the pad exceeds n)
    i = torch.arange(total, device=device) % (2 * n)
    return torch.where(i < n, i, 2 * n - 1 - i)


def pad_symmetric(x: Tensor, multiple: int = PAD_MULTIPLE) -> Tensor:
    """Pad ``(B, C, H, W)`` at the bottom/right to the next multiple of ``multiple`` with symmetric reflection.

    Symmetric reflection repeats the edge pixel (numpy ``np.pad(..., mode="symmetric")``, IOPaint's padding);
    torch's ``"reflect"`` mode would skip it.

    Example:
        >>> pad_symmetric(torch.arange(3.0).view(1, 1, 1, 3), 8)[0, 0, 0].tolist()
        [0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 0.0, 1.0]
    """
    h, w = x.shape[-2:]
    ph, pw = -h % multiple, -w % multiple
    if ph:
        x = x.index_select(-2, _symmetric_index(h, h + ph, x.device))
    if pw:
        x = x.index_select(-1, _symmetric_index(w, w + pw, x.device))
    return x


def _in_chunks(fn: Callable[[Tensor, Tensor], Tensor], x: Tensor, m: Tensor, max_batch: int | None) -> Tensor:
    if max_batch is None or x.shape[0] <= max_batch:
        return fn(x, m)
    return torch.cat([fn(x[i : i + max_batch], m[i : i + max_batch]) for i in range(0, x.shape[0], max_batch)])


# ------------------------------------------------------------------------------------------------ OpenCV
def _import_cv2() -> Any:
    try:
        import cv2
    except ImportError as err:
        raise ImportError(
            'OpenCVInpainter needs OpenCV: pip install "scenemetrics[inpaint]" (opencv-python-headless)'
        ) from err
    return cv2


class OpenCVInpainter:
    """``cv2.inpaint`` per image: fast, smooth fills (not content-aware); works offline on the CPU.

    Each image is rounded to ``uint8`` (``round(clamp(x, 0, 1) * 255)``), its mask thresholded at 0.5 (255 where
    ``mask > 0.5``), filled with ``cv2.inpaint(img, mask, radius, flag)`` and returned as ``float / 255`` on the
    input's device. Channel order does not matter to the fill (each channel is propagated), so no RGB/BGR swap.

    Args:
        method: ``"telea"`` (Telea 2004, fast marching; default) or ``"ns"`` (Navier-Stokes).
        radius: neighbourhood radius in pixels considered around each filled pixel (>= 1).

    Raises:
        ValueError: unknown ``method`` or bad ``radius``.
        ImportError: OpenCV missing (message names ``pip install "scenemetrics[inpaint]"``); raised on first call.

    Example:
        >>> import torch
        >>> image, mask = torch.rand(2, 3, 16, 16), torch.zeros(2, 1, 16, 16)
        >>> mask[..., 4:8, 4:8] = 1
        >>> out = OpenCVInpainter(method="ns", radius=2)(image, mask)
        >>> bool((out[..., :4, :] == (image[..., :4, :] * 255).round() / 255).all())  # unmasked: uint8 rounding only
        True
    """

    max_batch: int | None = None

    def __init__(self, method: Literal["telea", "ns"] = "telea", radius: int = 3) -> None:
        if method not in ("telea", "ns"):
            raise ValueError(f"`method` must be 'telea' or 'ns'; received {method!r}")
        if not isinstance(radius, int) or isinstance(radius, bool) or radius < 1:
            raise ValueError(f"`radius` must be an int >= 1 (pixels); received {radius!r}")
        self.method = method
        self.radius = radius

    def __repr__(self) -> str:
        return f"OpenCVInpainter(method={self.method!r}, radius={self.radius})"

    def __call__(self, image: Tensor, mask: Tensor) -> Tensor:
        import numpy as np

        cv2 = _import_cv2()
        x, m = check_inpaint_inputs(image, mask)
        flag = cv2.INPAINT_TELEA if self.method == "telea" else cv2.INPAINT_NS
        imgs = (x.detach().clamp(0, 1) * 255.0).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        masks = ((m[:, 0] > 0.5).to(torch.uint8) * 255).cpu().numpy()
        out = np.stack(
            [
                cv2.inpaint(np.ascontiguousarray(i), np.ascontiguousarray(k), self.radius, flag)
                for i, k in zip(imgs, masks, strict=True)
            ]
        )
        return torch.from_numpy(out).to(x.device).permute(0, 3, 1, 2).float().div_(255.0)


# ------------------------------------------------------------------------------------------------ LaMa
def _check_published_torchscript(data: bytes, path: Any, key: str) -> None:
    """``ValueError`` unless ``data`` carries every hash the hub publishes for ``key`` (TorchScript runs at load)."""
    import hashlib

    from scenemetrics import hub

    ckpt = hub.CHECKPOINTS[key]
    sha256 = hashlib.sha256(data).hexdigest()
    wanted = [("sha256", ckpt.sha256, sha256), ("md5", ckpt.md5, None)]
    if ckpt.sha256 is None and ckpt.sha256_prefix is not None:
        wanted[0] = ("sha256", ckpt.sha256_prefix, sha256[: len(ckpt.sha256_prefix)])
    published = [(algo, want.lower(), got) for algo, want, got in wanted if want is not None]
    ok = bool(published)
    for algo, want, got in published:
        got = got if got is not None else hashlib.new(algo, data).hexdigest()
        ok = ok and got == want
    if not ok:
        expected = next((f"{algo} {want}" for algo, want, _ in published), "none published")
        raise ValueError(
            f"refusing to load {os.fspath(path)!r}: it is TorchScript, and loading TorchScript runs code stored in the "
            f"file; only the published {ckpt.filename} ({ckpt.url}, {expected}) is loaded without your say-so, and "
            f"this file's sha256 is {sha256}. If you trust where it comes from (e.g. your own export), pass "
            "trust_file=True (CLI: --i-trust-this-file)."
        )


class LaMaInpainter:
    """big-LaMa (Suvorov et al., WACV 2022), the PuzzleSim paper's inpainter, as the TorchScript export of
    lama-cleaner / IOPaint.

    The checkpoint ``big-lama.pt`` (205,669,692 bytes) is found through :func:`scenemetrics.hub.resolve_weights`
    under the key ``"inpainting/big-lama"``: ``weights_path`` (a file used as given, or a folder holding
    ``big-lama.pt``), then ``$SCENEMETRICS_HOME/inpainting/big-lama.pt``, then a download (``SCENEMETRICS_OFFLINE=1``
    forbids it). It is loaded on first use with ``torch.jit.load(..., map_location=device)`` in ``eval()``.

    **Only the published file is loaded.** Loading TorchScript runs code stored in the file (a module's
    ``__setstate__`` runs at load, before any inpainting), so the file is read once into memory and its sha256
    must be that of the published ``big-lama.pt`` (``344c77bb...``, the file whose md5 IOPaint pins), whatever way
    it was found; any other file is refused with a ``ValueError`` naming both hashes, unless ``trust_file=True``
    (CLI: ``--i-trust-this-file``) says you vouch for it (e.g. your own export). The bytes that were hashed are the
    bytes that are loaded.

    Call conventions (those of the public LaMa wrappers): the mask is binarised (``mask > 0`` -> 1), image and mask
    are padded at the bottom/right to a multiple of 8 with symmetric reflection (:func:`pad_symmetric`), the model
    is called as ``model(image, mask)`` on ``(1, 3, H', W')`` / ``(1, 1, H', W')`` tensors, and its output is
    clamped to [0, 1] and cropped back to ``H x W``. The wrappers always call the export with batch 1; whether it
    accepts more is unverified, hence ``max_batch=1`` (raise it at your own risk).

    Args:
        weights_path: ``big-lama.pt`` file or a folder holding it (default: the hub cache, downloading once).
        device: where the model runs; ``None``: the device of each call's image.
        max_batch: images per forward pass (>= 1).
        trust_file: load a TorchScript file whose sha256 is not the published one (it can run any code).

    Raises:
        scenemetrics.hub.WeightsNotFoundError: the checkpoint cannot be found or downloaded (on first use).
        ValueError: the file is not the published ``big-lama.pt`` and ``trust_file`` is false, it is not a
            TorchScript module, or bad arguments.

    Example:
        >>> import os, tempfile, torch
        >>> class Stub(torch.nn.Module):  # same call signature as the export: fills the hole with grey
        ...     def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ...         return image * (1 - mask) + 0.5 * mask
        >>> path = os.path.join(tempfile.mkdtemp(), "big-lama.pt")
        >>> torch.jit.script(Stub()).save(path)
        >>> lama = LaMaInpainter(weights_path=path, trust_file=True)  # our own file, not the published one
        >>> mask = torch.zeros(1, 1, 13, 21)
        >>> mask[..., 2:5, 3:9] = 1
        >>> out = lama(torch.rand(1, 3, 13, 21), mask)
        >>> out.shape, float(out[0, 0, 3, 4])
        (torch.Size([1, 3, 13, 21]), 0.5)
    """

    def __init__(
        self,
        weights_path: str | os.PathLike | None = None,
        device: torch.device | str | None = None,
        max_batch: int = 1,
        *,
        trust_file: bool = False,
    ) -> None:
        if not isinstance(trust_file, bool):
            raise ValueError(f"`trust_file` must be a bool; received {trust_file!r}")
        self.weights_path = weights_path
        self.device = None if device is None else torch.device(device)
        self.max_batch = check_max_batch(max_batch)
        if self.max_batch is None:
            raise ValueError("`max_batch` must be an int >= 1; received None")
        self.trust_file = trust_file
        self._models: dict[str, torch.jit.ScriptModule] = {}

    def __repr__(self) -> str:
        trust = ", trust_file=True" if self.trust_file else ""
        return (
            f"LaMaInpainter(weights_path={self.weights_path!r}, device={self.device}, max_batch={self.max_batch}"
            f"{trust})"
        )

    def load(self, device: torch.device | str | None = None) -> torch.jit.ScriptModule:
        """Resolve, check (see the class docstring), load (once per device) and return the model in ``eval()``.

        Call it early to fail fast when the weights are missing or refused (the CLI does).
        """
        import io

        from scenemetrics import hub

        dev = torch.device(device) if device is not None else (self.device or torch.device("cpu"))
        key = str(dev)
        if key not in self._models:
            path = hub.resolve_weights("inpainting/big-lama", self.weights_path)
            data = path.read_bytes()  # hashed and loaded from the same bytes: no swap in between
            if not self.trust_file:
                _check_published_torchscript(data, path, "inpainting/big-lama")
            try:
                with warnings.catch_warnings():
                    # the published checkpoint only exists as TorchScript: torch's deprecation notice is not actionable
                    warnings.filterwarnings(
                        "ignore", message=".*torch.jit.load.* is deprecated", category=FutureWarning
                    )
                    model = torch.jit.load(io.BytesIO(data), map_location=dev)
            except Exception as err:
                raise ValueError(
                    f"could not load {os.fspath(path)!r} as the big-LaMa TorchScript export (big-lama.pt of "
                    f"lama-cleaner / IOPaint): {type(err).__name__}: {err}"
                ) from err
            self._models[key] = model.eval()
        return self._models[key]

    def _forward(self, x: Tensor, m: Tensor) -> Tensor:
        dev = self.device or x.device
        model = self.load(dev)
        h, w = x.shape[-2:]
        out = model(pad_symmetric(x).to(dev), pad_symmetric(m).to(dev))
        if not isinstance(out, Tensor) or out.ndim != 4 or out.shape[0] != x.shape[0] or out.shape[1] != 3:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"the LaMa model returned {got}; expected a (B, 3, H', W') tensor")
        return out[..., :h, :w].float().clamp(0, 1).to(x.device)

    def __call__(self, image: Tensor, mask: Tensor) -> Tensor:
        x, m = check_inpaint_inputs(image, mask)
        m = (m > 0).to(x.dtype)
        with torch.no_grad():
            return _in_chunks(self._forward, x, m, self.max_batch)


# ------------------------------------------------------------------------------------------------ diffusers
class DiffusersInpainter:
    """Stable Diffusion inpainting through diffusers' ``StableDiffusionInpaintPipeline`` (optional backend).

    The pipeline is loaded on first use with ``StableDiffusionInpaintPipeline.from_pretrained(model,
    torch_dtype=torch_dtype)`` (a Hugging Face repo id or a local folder; offline with ``HF_HUB_OFFLINE=1`` and a
    cached / local model). Each call pads image and mask at the bottom/right to multiples of 8 (symmetric
    reflection, as for LaMa), binarises the mask (``> 0.5``) and calls the pipeline with ``image`` ``(B, 3, H', W')``
    in [0, 1], ``mask_image`` ``(B, 1, H', W')`` (1 = repaint), ``prompt=[prompt] * B``, ``height=H'``,
    ``width=W'``, ``generator=torch.Generator(device).manual_seed(seed)`` and ``output_type="pt"``; the result is
    cropped back to ``H x W``.

    The VAE re-encodes the whole image, so unmasked pixels change: :func:`puzzle_inpaint` composites, keeping them.
    Stable Diffusion's native resolution is 512 px; quality drops far from it. Not deterministic across devices.

    Args:
        model: Hugging Face repo id or local folder of an inpainting pipeline.
        prompt: text prompt (empty: unconditional fill).
        negative_prompt: optional negative prompt.
        num_inference_steps: denoising steps.
        guidance_scale: classifier-free guidance scale.
        seed: seed of the generator created for every call (same inputs -> same output on one device).
        device: where the pipeline runs; ``None``: the device of the first call's image.
        torch_dtype: pipeline dtype (``None``: diffusers' default float32; ``torch.float16`` halves GPU memory).
        max_batch: images per pipeline call.

    Raises:
        ImportError: diffusers missing (message names ``pip install "scenemetrics[prism]"``); on first call.
        scenemetrics.hub.WeightsNotFoundError: the model is neither local nor downloadable (offline); on first call.

    Example:
        >>> inpainter = DiffusersInpainter(prompt="a brick wall", num_inference_steps=30)  # loads on first call
        >>> inpainter.max_batch
        4
    """

    def __init__(
        self,
        model: str | os.PathLike = "stable-diffusion-v1-5/stable-diffusion-inpainting",
        prompt: str = "",
        negative_prompt: str | None = None,
        num_inference_steps: int = 25,
        guidance_scale: float = 7.5,
        seed: int = 0,
        device: torch.device | str | None = None,
        torch_dtype: torch.dtype | None = None,
        max_batch: int = 4,
    ) -> None:
        if not isinstance(prompt, str):
            raise ValueError(f"`prompt` must be a string; received {type(prompt).__name__}")
        if negative_prompt is not None and not isinstance(negative_prompt, str):
            raise ValueError(f"`negative_prompt` must be a string or None; received {type(negative_prompt).__name__}")
        if not isinstance(num_inference_steps, int) or isinstance(num_inference_steps, bool) or num_inference_steps < 1:
            raise ValueError(f"`num_inference_steps` must be an int >= 1; received {num_inference_steps!r}")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"`seed` must be an int; received {seed!r}")
        self.model = os.fspath(model)
        self.prompt = prompt
        self.negative_prompt = negative_prompt
        self.num_inference_steps = num_inference_steps
        self.guidance_scale = float(guidance_scale)
        self.seed = seed
        self.device = None if device is None else torch.device(device)
        self.torch_dtype = torch_dtype
        self.max_batch = check_max_batch(max_batch)
        if self.max_batch is None:
            raise ValueError("`max_batch` must be an int >= 1; received None")
        self._pipe: Any = None

    def __repr__(self) -> str:
        return f"DiffusersInpainter(model={self.model!r}, prompt={self.prompt!r}, device={self.device})"

    def load(self, device: torch.device | str | None = None) -> Any:
        """Load (once) and return the pipeline on ``device`` (default: the constructor's, else CPU)."""
        from scenemetrics import hub

        if self._pipe is not None:
            return self._pipe
        try:
            from diffusers import StableDiffusionInpaintPipeline
        except ImportError as err:
            raise ImportError(
                'DiffusersInpainter needs diffusers and transformers: pip install "scenemetrics[prism]"'
            ) from err
        dev = torch.device(device) if device is not None else (self.device or torch.device("cpu"))
        try:
            pipe = StableDiffusionInpaintPipeline.from_pretrained(self.model, torch_dtype=self.torch_dtype)
        except (OSError, ValueError) as err:
            # offline without a cached copy, a wrong id, or a folder that is not a pipeline
            url = None if os.path.isdir(self.model) else f"https://huggingface.co/{self.model}"
            raise hub.WeightsNotFoundError(
                f"could not load the Stable Diffusion inpainting pipeline {self.model!r}: {err}. Pass a local "
                "pipeline folder as model=, or allow Hugging Face downloads (unset HF_HUB_OFFLINE)",
                filename=self.model,
                searched=[self.model],
                url=url,
            ) from err
        pipe = pipe.to(dev)
        if hasattr(pipe, "set_progress_bar_config"):
            pipe.set_progress_bar_config(disable=True)
        self.device = dev
        self._pipe = pipe
        return pipe

    def _forward(self, x: Tensor, m: Tensor) -> Tensor:
        pipe = self.load(self.device or x.device)
        dev = self.device or x.device
        b, _, h, w = x.shape
        xp, mp = pad_symmetric(x).to(dev), pad_symmetric(m).to(dev)
        kwargs: dict[str, Any] = {
            "prompt": [self.prompt] * b,
            "image": xp,
            "mask_image": mp,
            "height": xp.shape[-2],
            "width": xp.shape[-1],
            "num_inference_steps": self.num_inference_steps,
            "guidance_scale": self.guidance_scale,
            "generator": torch.Generator(dev).manual_seed(self.seed),
            "output_type": "pt",
        }
        if self.negative_prompt is not None:
            kwargs["negative_prompt"] = [self.negative_prompt] * b
        out = pipe(**kwargs).images
        if not isinstance(out, Tensor) or out.ndim != 4 or out.shape[0] != b:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"the diffusers pipeline returned {got}; expected a (B, 3, H', W') tensor")
        return out[..., :h, :w].float().clamp(0, 1).to(x.device)

    def __call__(self, image: Tensor, mask: Tensor) -> Tensor:
        x, m = check_inpaint_inputs(image, mask)
        m = (m > 0.5).to(x.dtype)
        with torch.no_grad():
            return _in_chunks(self._forward, x, m, self.max_batch)
