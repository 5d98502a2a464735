"""Random-weight stand-ins for the baselines' networks, in the official layouts (for tests, examples and
``scenemetrics eval --random-weights``).

* :func:`random_inception_checkpoint`: a ``.pth`` state dict in torch-fidelity's InceptionV3 key layout (torchvision's
  ``Inception3`` names, the 1008-class ``fc``), read by the same code as the published file.
* :func:`random_clip_folder` / :func:`random_dinov2_folder`: small ``transformers`` ``CLIPModel`` / ``Dinov2Model``
  configurations with random weights, written by their own ``save_pretrained`` (``config.json`` and
  ``model.safetensors``), loaded by the same code as a Hugging Face download.

Scores computed with random weights are uncalibrated: they exercise the pipeline, they do not measure anything.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.baselines import load_dinov2
    >>> folder = random_dinov2_folder(os.path.join(tempfile.mkdtemp(), "dinov2"))  # doctest: +SKIP
    >>> load_dinov2(folder).dim  # doctest: +SKIP
    32
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

__all__ = ["random_clip_folder", "random_dinov2_folder", "random_inception_checkpoint"]


def random_inception_checkpoint(path: str | os.PathLike, *, seed: int = 0) -> Path:
    """Write a random-weight FID InceptionV3 state dict (torch-fidelity's layout) to ``path`` and return it.

    Convolution and linear weights are He-normal (so activations keep their scale through the 94 layers), BatchNorm
    is the identity (weight 1, bias 0, running mean 0, running variance 1).

    Example:
        >>> import os, tempfile
        >>> p = random_inception_checkpoint(os.path.join(tempfile.mkdtemp(), "inception.pth"))  # doctest: +SKIP
        >>> torch.load(p, weights_only=True)["fc.weight"].shape  # doctest: +SKIP
        torch.Size([1008, 2048])
    """
    from scenemetrics.baselines.inception import inception_layout

    g = torch.Generator().manual_seed(int(seed))
    state: dict[str, torch.Tensor] = {}
    for key, shape in inception_layout().items():
        if key.endswith("num_batches_tracked"):
            state[key] = torch.zeros((), dtype=torch.int64)
        elif key.endswith(("running_var", "bn.weight")):
            state[key] = torch.ones(shape)
        elif key.endswith(("running_mean", "bias")):
            state[key] = torch.zeros(shape)
        else:
            fan_in = math.prod(shape[1:])
            state[key] = torch.randn(shape, generator=g) * math.sqrt(2.0 / fan_in)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, out)
    return out


def _transformers():
    from scenemetrics.baselines.transformers_models import _transformers as load

    return load()


def random_clip_folder(path: str | os.PathLike, *, seed: int = 0, image_size: int = 32) -> Path:
    """Write a small random ``CLIPModel`` (image and text towers, projection size 24) with ``save_pretrained``.

    Args:
        path: the folder to write.
        seed: ``torch`` seed of the initialisation.
        image_size: the image tower's input side (a multiple of its 8 px patches).
    """
    transformers = _transformers()
    config = transformers.CLIPConfig(
        text_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "vocab_size": 64,
            "max_position_embeddings": 16,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 1,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": int(image_size),
            "patch_size": 8,
        },
        projection_dim=24,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = transformers.CLIPModel(config)
    out = Path(path)
    model.save_pretrained(out)
    return out


def random_dinov2_folder(path: str | os.PathLike, *, seed: int = 0) -> Path:
    """Write a small random ``Dinov2Model`` (hidden size 32, 14 px patches) with ``save_pretrained``."""
    transformers = _transformers()
    config = transformers.Dinov2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=56, patch_size=14
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = transformers.Dinov2Model(config)
    out = Path(path)
    model.save_pretrained(out)
    return out
