"""CLIP and DINOv2 image embeddings, computed by ``transformers`` models loaded through :mod:`scenemetrics.hub`.

* **CLIP** (``transformers.CLIPModel``: the image tower and its projection): CMMD's embedding (Jayasumana et al. 2024;
  google-research/cmmd uses CLIP ViT-L/14 at 336 px) and CLIP-S's. Preprocessing as CMMD's reference code: the
  centred square crop, a bicubic antialiased resize to the model's input size (336 px for ViT-L/14-336), CLIP's
  mean/std (from the folder's ``preprocessor_config.json`` when it has one, else OpenAI's constants). The embeddings
  are L2-normalised (CMMD's MMD and CLIP-S's cosine both use unit vectors).
* **DINOv2** (``transformers.Dinov2Model``): FD-DINOv2's embedding (Stein et al. 2023; dgm-eval uses DINOv2 ViT-L/14):
  the whole image resized to 224 x 224 (bicubic, antialiased; no crop, as dgm-eval), ImageNet mean/std, and the
  CLS token after the final layer norm (``pooler_output``, the ``x_norm_clstoken`` of Meta's own code). Not
  normalised (FD-DINOv2 compares raw features; the DINO similarity takes their cosine).

Models are loaded from a local folder (``save_pretrained`` layout) or a hub repository in the Hugging Face cache
(:func:`scenemetrics.hub.resolve_hf_model`: ``HF_HUB_OFFLINE``, errors naming the repo), by their own classes: never
``trust_remote_code``, never ``torch.hub``. ``transformers`` reads ``.bin`` weights with ``weights_only=True``.
A loaded model is cached per (folder, device) and shared by every metric that uses it.

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.baselines import load_clip, random_clip_folder
    >>> folder = random_clip_folder(os.path.join(tempfile.mkdtemp(), "clip"))  # doctest: +SKIP
    >>> clip = load_clip(folder)  # doctest: +SKIP
    >>> clip(torch.rand(2, 3, 40, 50)).norm(dim=1)  # doctest: +SKIP
    tensor([1.0000, 1.0000])
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics import hub

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "DINOV2_IMAGE_SIZE",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CLIPFeatures",
    "DINOv2Features",
    "load_clip",
    "load_dinov2",
    "model_dim",
    "resolve_model",
]

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
"""OpenAI CLIP's normalisation (used when the model folder has no ``preprocessor_config.json``)."""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
"""DINOv2's normalisation."""

DINOV2_IMAGE_SIZE = 224
"""The side FD-DINOv2 resizes every image to (dgm-eval)."""

_KINDS = {
    "clip": ("clip", "baselines/clip", "the CLIP model"),
    "dinov2": ("dinov2", "baselines/dinov2", "the DINOv2 model"),
}


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise ImportError(
            'CLIP and DINOv2 embeddings need transformers: pip install "scenemetrics[baselines]"'
        ) from None
    return transformers


def resolve_model(kind: str, model: str | os.PathLike | None = None, *, revision: str | None = None) -> Path:
    """The local folder of the ``kind`` (``"clip"`` or ``"dinov2"``) model, checked to hold that kind of model.

    Args:
        kind: ``"clip"`` or ``"dinov2"``.
        model: a ``save_pretrained`` folder or a hub repo id; ``None``: the catalogue's
            (:data:`scenemetrics.hub.HF_MODELS` ``baselines/clip``: ``openai/clip-vit-large-patch14-336``;
            ``baselines/dinov2``: ``facebook/dinov2-large``).
        revision: hub revision.

    Raises:
        scenemetrics.hub.WeightsNotFoundError: not found (see :func:`scenemetrics.hub.resolve_hf_model`), or a folder
            without ``config.json``.
        ValueError: the folder holds another kind of model (its ``config.json`` ``model_type``).
    """
    model_type, key, what = _KINDS[kind]
    folder, source = hub.resolve_hf_model(model, default=key, revision=revision, what=what)
    config = folder / "config.json"
    if not config.is_file():
        raise hub.WeightsNotFoundError(
            f"{what} folder {os.fspath(folder)!r} (from {source!r}) has no config.json",
            filename=source,
            searched=[config],
        )
    found = json.loads(config.read_text()).get("model_type")
    if found != model_type:
        raise ValueError(f"{what} {source!r} is a {found!r} model (config.json model_type); expected {model_type!r}")
    return folder


def model_dim(kind: str, folder: str | os.PathLike) -> int:
    """The embedding size of a resolved model folder, read from its ``config.json`` (no weights are loaded)."""
    config = json.loads((Path(folder) / "config.json").read_text())
    if kind == "clip":
        return int(config.get("projection_dim", 512))
    return int(config["hidden_size"])


def _normalisation(folder: Path, mean: Sequence[float], std: Sequence[float]) -> tuple[tuple, tuple]:
    processor = folder / "preprocessor_config.json"
    if processor.is_file():
        cfg = json.loads(processor.read_text())
        if len(cfg.get("image_mean", ())) == 3 and len(cfg.get("image_std", ())) == 3:
            return tuple(map(float, cfg["image_mean"])), tuple(map(float, cfg["image_std"]))
    return tuple(mean), tuple(std)


def _resize(images: Tensor, size: int) -> Tensor:
    if tuple(images.shape[-2:]) == (size, size):
        return images
    # bicubic overshoots at edges: clamp back to the image range, as PIL's uint8 resize (the references') does
    return F.interpolate(images, size=(size, size), mode="bicubic", align_corners=False, antialias=True).clamp_(0, 1)


def _center_square(images: Tensor) -> Tensor:
    h, w = images.shape[-2:]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return images[..., top : top + s, left : left + s]


class _Embedder(nn.Module):
    """A frozen ``transformers`` image model with its preprocessing; ``forward`` takes float images in [0, 1]."""

    def __init__(self, image_size: int, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.image_size = int(image_size)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1), persistent=False)

    def pixel_values(self, images: Tensor) -> Tensor:
        raise NotImplementedError

    def embed(self, pixel_values: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, images: Tensor) -> Tensor:
        """``(B, 3, H, W)`` float in [0, 1] -> ``(B, D)`` float32 embeddings."""
        return self.embed(self.pixel_values(images.float())).float()


class CLIPFeatures(_Embedder):
    """CLIP image embeddings (the projected pooled output of the image tower), L2-normalised.

    Args:
        vision_model: ``CLIPModel.vision_model``.
        visual_projection: ``CLIPModel.visual_projection``.
        image_size: the tower's input side.
        mean, std: the image normalisation.
    """

    def __init__(
        self,
        vision_model: nn.Module,
        visual_projection: nn.Module,
        image_size: int,
        mean: Sequence[float] = CLIP_MEAN,
        std: Sequence[float] = CLIP_STD,
    ) -> None:
        super().__init__(image_size, mean, std)
        self.vision_model = vision_model
        self.visual_projection = visual_projection
        self.dim = int(visual_projection.out_features)

    def pixel_values(self, images: Tensor) -> Tensor:
        """Centred square crop, bicubic antialiased resize to ``image_size``, CLIP normalisation."""
        return (_resize(_center_square(images), self.image_size) - self.mean) / self.std

    def embed(self, pixel_values: Tensor) -> Tensor:
        pooled = self.vision_model(pixel_values=pixel_values).pooler_output
        return F.normalize(self.visual_projection(pooled).float(), dim=-1)


class DINOv2Features(_Embedder):
    """DINOv2 CLS embeddings (``pooler_output``: the CLS token after the final layer norm), not normalised.

    Args:
        model: a ``transformers.Dinov2Model``.
        image_size: the side every image is resized to (FD-DINOv2: 224).
        mean, std: the image normalisation (ImageNet's).
    """

    def __init__(
        self,
        model: nn.Module,
        image_size: int = DINOV2_IMAGE_SIZE,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
    ) -> None:
        super().__init__(image_size, mean, std)
        self.model = model
        self.dim = int(model.config.hidden_size)

    def pixel_values(self, images: Tensor) -> Tensor:
        """The whole image resized to ``image_size`` x ``image_size`` (bicubic, antialiased), ImageNet normalisation."""
        return (_resize(images, self.image_size) - self.mean) / self.std

    def embed(self, pixel_values: Tensor) -> Tensor:
        return self.model(pixel_values=pixel_values).pooler_output


def _frozen(module: nn.Module, device: str) -> nn.Module:
    return module.requires_grad_(False).eval().to(device)


@functools.lru_cache(maxsize=4)
def _clip(folder: str, mtime_ns: int, device: str) -> CLIPFeatures:
    transformers = _transformers()
    path = Path(folder)
    try:
        model = transformers.CLIPModel.from_pretrained(folder, local_files_only=True)
    except OSError as err:  # transformers reports a missing weight file as OSError
        raise hub.WeightsNotFoundError(
            f"the CLIP model folder {folder!r} cannot be loaded: {err}", filename=folder, searched=[path]
        ) from err
    mean, std = _normalisation(path, CLIP_MEAN, CLIP_STD)
    # keep the image tower and its projection only; the text tower is dropped with the CLIPModel
    embedder = CLIPFeatures(
        model.vision_model, model.visual_projection, model.config.vision_config.image_size, mean, std
    )
    return _frozen(embedder, device)


@functools.lru_cache(maxsize=4)
def _dinov2(folder: str, mtime_ns: int, device: str, image_size: int) -> DINOv2Features:
    transformers = _transformers()
    try:
        model = transformers.Dinov2Model.from_pretrained(folder, local_files_only=True)
    except OSError as err:
        raise hub.WeightsNotFoundError(
            f"the DINOv2 model folder {folder!r} cannot be loaded: {err}", filename=folder, searched=[Path(folder)]
        ) from err
    mean, std = _normalisation(Path(folder), IMAGENET_MEAN, IMAGENET_STD)
    patch = int(model.config.patch_size)
    if image_size % patch:
        raise ValueError(f"`image_size` must be a multiple of the DINOv2 patch size {patch}; received {image_size}")
    return _frozen(DINOv2Features(model, image_size, mean, std), device)


def _mtime(folder: Path) -> int:
    return (folder / "config.json").stat().st_mtime_ns


def load_clip(
    model: str | os.PathLike | None = None, *, revision: str | None = None, device: str | torch.device = "cpu"
) -> CLIPFeatures:
    """The frozen CLIP embedder of ``model`` (see :func:`resolve_model`), loaded once per folder and device."""
    folder = resolve_model("clip", model, revision=revision)
    return _clip(os.fspath(folder), _mtime(folder), str(torch.device(device)))


def load_dinov2(
    model: str | os.PathLike | None = None,
    *,
    revision: str | None = None,
    device: str | torch.device = "cpu",
    image_size: int | None = None,
) -> DINOv2Features:
    """The frozen DINOv2 embedder of ``model`` (see :func:`resolve_model`), loaded once per folder and device;
    ``image_size`` is the side images are resized to (``None``: :data:`DINOV2_IMAGE_SIZE`, FD-DINOv2's 224)."""
    folder = resolve_model("dinov2", model, revision=revision)
    size = DINOV2_IMAGE_SIZE if image_size is None else int(image_size)
    return _dinov2(os.fspath(folder), _mtime(folder), str(torch.device(device)), size)
