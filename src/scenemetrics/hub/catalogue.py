"""The table of every checkpoint scenemetrics can use: where it comes from, its published hashes, its cache folder.

Example:
    >>> from scenemetrics.hub.catalogue import CHECKPOINTS
    >>> CHECKPOINTS["osim/yolox_x"].url.endswith("yolox_x.pth")
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

__all__ = ["CHECKPOINTS", "HF_MODELS", "Checkpoint", "HFModel", "register"]


@dataclass(frozen=True)
class Checkpoint:
    """One published checkpoint.

    Attributes:
        room: the metric family that uses it (``puzzlesim``, ``osim``, ...); its cache folder is
            ``$SCENEMETRICS_HOME/<room>``.
        filename: file name in the cache (and the name searched for inside a ``weights_path`` folder).
        urls: download locations, tried in order.
        description: what the file is, for error messages.
        sha256: full sha256 hex digest published for the file, if any.
        sha256_prefix: leading hex digits of the sha256 (torchvision puts the first 8 in the file name).
        md5: md5 hex digest, where only that is published.
        extra_dirs: callables returning further folders to search before downloading.
    """

    room: str
    filename: str
    urls: tuple[str, ...]
    description: str
    sha256: str | None = None
    sha256_prefix: str | None = None
    md5: str | None = None
    extra_dirs: tuple[Callable[[], Path], ...] = field(default=(), compare=False)

    @property
    def url(self) -> str:
        return self.urls[0]


def _torch_hub_checkpoints() -> Path:
    import torch.hub

    return Path(torch.hub.get_dir()) / "checkpoints"


def _torchvision(room: str, arch: str, filename: str, description: str) -> Checkpoint:
    # torchvision names its files <arch>-<first 8 hex digits of sha256>.pth and verifies that prefix.
    return Checkpoint(
        room=room,
        filename=filename,
        urls=(f"https://download.pytorch.org/models/{filename}",),
        description=description,
        sha256_prefix=filename.rsplit("-", 1)[1].split(".")[0],
        extra_dirs=(_torch_hub_checkpoints,),
    )


def _yolox(variant: str) -> Checkpoint:
    # Megvii publishes no hash for the 0.1.1rc0 release: the sha256 is recorded in a sidecar at the first download.
    return Checkpoint(
        room="osim",
        filename=f"{variant}.pth",
        urls=(f"https://github.com/Megvii-BaseDetection/YOLOX/releases/download/0.1.1rc0/{variant}.pth",),
        description=f"Megvii YOLOX release 0.1.1rc0 checkpoint {variant} (OSIM detector)",
    )


def _torchmetrics_lpips_models() -> Path:
    # torchmetrics (a core dependency) ships the LPIPS v0.1 linear layers byte-identical to the published files;
    # find_spec locates the package without importing it (importing torchmetrics takes seconds)
    import importlib.util

    spec = importlib.util.find_spec("torchmetrics")
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(roots[0]) / "functional" / "image" / "lpips_models" if roots else Path(os.devnull)


# richzhang/PerceptualSimilarity (BSD-2-Clause): the commit that last changed lpips/weights/v0.1/*.pth. The sha256
# below were recorded from the files at this commit; the lpips 0.1.4 wheel on PyPI, torchmetrics' lpips_models/ and
# NerfBaselines' _lpips_weights/ hold byte-identical copies (same git blob ids: alex 1df9dfe6, vgg 47e943cf,
# squeeze a3bd383b).
_LPIPS_COMMIT = "c33f89e9f46522a584cf41d8880eb0afa982708b"
_LPIPS_SHA256 = {
    "alex": "df73285e35b22355a2df87cdb6b70b343713b667eddbda73e1977e0c860835c0",
    "vgg": "a78928a0af1e5f0fcb1f3b9e8f8c3a2a5a3de244d830ad5c1feddc79b8432868",
    "squeeze": "4a5350f23600cb79923ce65bb07cbf57dca461329894153e05a1346bd531cf76",
}


def _lpips_linear(net: str) -> Checkpoint:
    path = f"richzhang/PerceptualSimilarity/{_LPIPS_COMMIT}/lpips/weights/v0.1/{net}.pth"
    return Checkpoint(
        room="fullref",
        filename=f"{net}.pth",
        urls=(
            f"https://raw.githubusercontent.com/{path}",
            f"https://github.com/{path.replace(_LPIPS_COMMIT, 'raw/' + _LPIPS_COMMIT, 1)}",
        ),
        description=f"LPIPS v0.1 linear layers for {net} (richzhang/PerceptualSimilarity, BSD-2-Clause)",
        sha256=_LPIPS_SHA256[net],
        extra_dirs=(_torchmetrics_lpips_models,),
    )


_REGISTRY: dict[str, Checkpoint] = {
    "puzzlesim/squeezenet1_1": _torchvision(
        "puzzlesim", "squeezenet1_1", "squeezenet1_1-b8a52dc0.pth", "torchvision ImageNet SqueezeNet 1.1 weights"
    ),
    "puzzlesim/alexnet": _torchvision(
        "puzzlesim", "alexnet", "alexnet-owt-7be5be79.pth", "torchvision ImageNet AlexNet weights"
    ),
    "puzzlesim/vgg16": _torchvision("puzzlesim", "vgg16", "vgg16-397923af.pth", "torchvision ImageNet VGG16 weights"),
    **{f"fullref/lpips_{net}": _lpips_linear(net) for net in ("alex", "vgg", "squeeze")},
    **{f"osim/{v}": _yolox(v) for v in ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")},
    # torch-fidelity's InceptionV3 port of the TensorFlow FID graph, which torchmetrics' FID/KID use. Its name follows
    # torch.hub's <name>-<first 8 hex digits of the sha256>.<ext> convention (as torchvision's files); neither
    # torch-fidelity nor torchmetrics checks it, scenemetrics does.
    "baselines/inception_v3_fid": Checkpoint(
        room="baselines",
        filename="weights-inception-2015-12-05-6726825d.pth",
        urls=(
            "https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/weights-inception-2015-12-05-6726825d.pth",
        ),
        description="torch-fidelity InceptionV3 FID weights (TensorFlow inception-2015-12-05 graph, Apache-2.0)",
        sha256_prefix="6726825d",
        extra_dirs=(_torch_hub_checkpoints,),
    ),
    "inpainting/big-lama": Checkpoint(
        room="inpainting",
        filename="big-lama.pt",
        urls=(
            "https://github.com/Sanster/models/releases/download/add_big_lama/big-lama.pt",
            "https://github.com/enesmsahin/simple-lama-inpainting/releases/download/v0.1.0/big-lama.pt",
        ),
        description="big-LaMa TorchScript export (lama-cleaner / IOPaint)",
        # IOPaint pins the md5; the sha256 of that same 205,669,692-byte file is the one LaMa users pin (TorchScript
        # runs code at load, so LaMaInpainter loads no other file without trust_file=True)
        sha256="344c77bbcb158f17dd143070d1e789f38a66c04202311ae3a258ef66667a9ea9",
        md5="e3aa4aaa15225a33ec84f9f4bc47e500",
    ),
}


CHECKPOINTS: Mapping[str, Checkpoint] = MappingProxyType(_REGISTRY)
"""Read-only mapping ``"<family>/<name>" -> Checkpoint`` of every known checkpoint."""


@dataclass(frozen=True)
class HFModel:
    """A model published on the Hugging Face hub, loaded with ``transformers`` from the Hugging Face cache.

    Hugging Face models are not copied into ``$SCENEMETRICS_HOME``: they live in the Hugging Face cache (``HF_HOME``,
    ``HF_HUB_CACHE``), where every other tool finds them too, and ``HF_HUB_OFFLINE=1`` (or ``SCENEMETRICS_OFFLINE=1``)
    reads only that cache (:func:`scenemetrics.hub.resolve_hf_model`).

    Attributes:
        room: the metric family that uses it.
        repo_id: the hub repository (``owner/name``).
        description: what the model is, for error messages.
        revision: the revision loaded by default (``None``: the repository's ``main``). Hugging Face revisions are
            git commits, so a pinned commit plays the role of a published hash.
    """

    room: str
    repo_id: str
    description: str
    revision: str | None = None

    @property
    def url(self) -> str:
        return f"https://huggingface.co/{self.repo_id}"


_HF_MODELS: dict[str, HFModel] = {
    # CMMD's embedding (Jayasumana et al. 2024, google-research/cmmd: CLIP ViT-L/14 at 336 px); also CLIP-S's default
    "baselines/clip": HFModel(
        room="baselines",
        repo_id="openai/clip-vit-large-patch14-336",
        description="OpenAI CLIP ViT-L/14 at 336 px (image tower and projection; CMMD's embedding)",
    ),
    # FD-DINOv2's embedding (Stein et al. 2023, dgm-eval: DINOv2 ViT-L/14, CLS token)
    "baselines/dinov2": HFModel(
        room="baselines",
        repo_id="facebook/dinov2-large",
        description="Meta DINOv2 ViT-L/14 (CLS token; FD-DINOv2's embedding)",
    ),
}

HF_MODELS: Mapping[str, HFModel] = MappingProxyType(_HF_MODELS)
"""Read-only mapping ``"<family>/<name>" -> HFModel`` of the Hugging Face models scenemetrics loads by default."""


def register(key: str, checkpoint: Checkpoint) -> None:
    """Add a checkpoint to :data:`CHECKPOINTS` (for rooms that build entries at import time).

    Raises:
        ValueError: if ``key`` is already registered with a different checkpoint.
    """
    old = _REGISTRY.get(key)
    if old is not None and old != checkpoint:
        raise ValueError(f"checkpoint key {key!r} is already registered for {old.filename!r}")
    _REGISTRY[key] = checkpoint


def _entry(key: str | Checkpoint) -> Checkpoint:
    if isinstance(key, Checkpoint):
        return key
    if key not in _REGISTRY:
        raise KeyError(f"unknown checkpoint {key!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key]


def _published(ckpt: Checkpoint) -> list[tuple[str, str, bool]]:
    """``(algorithm, hex, is_prefix)`` of every hash the publisher gives."""
    out = []
    if ckpt.md5 is not None:
        out.append(("md5", ckpt.md5.lower(), False))
    if ckpt.sha256 is not None:
        out.append(("sha256", ckpt.sha256.lower(), False))
    elif ckpt.sha256_prefix is not None:
        out.append(("sha256", ckpt.sha256_prefix.lower(), True))
    return out
