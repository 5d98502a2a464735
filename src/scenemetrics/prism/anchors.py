"""PRISM's anchor-set files: the ground-truth triplet embeddings :class:`~scenemetrics.prism.PRISMMMD` compares
generated embeddings with, as a safetensors file with provenance metadata.

The MMD itself is :func:`scenemetrics.stats.mmd_rbf` (core, shared with the CMMD baselines).

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.prism import load_anchors, save_anchors
    >>> path = os.path.join(tempfile.mkdtemp(), "anchors.safetensors")
    >>> save_anchors(torch.ones(3, 4), path)  # doctest: +SKIP
    >>> tuple(load_anchors(path).shape)  # doctest: +SKIP
    (3, 4)
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

__all__ = ["ANCHORS_FORMAT", "load_anchors", "read_anchors", "save_anchors"]

ANCHORS_FORMAT = "scenemetrics.prism.anchors/1"
"""The ``format`` metadata string of an anchor file."""


def save_anchors(
    embeddings: Tensor,
    path: str | os.PathLike,
    *,
    metadata: dict[str, str] | None = None,
    dtype: torch.dtype = torch.float32,
) -> None:
    """Write an anchor set (ground-truth triplet embeddings) as a safetensors file.

    Args:
        embeddings: ``(N, E)`` embeddings.
        path: output file.
        metadata: provenance strings (``extractor`` / ``head`` JSON as :class:`~scenemetrics.prism.PRISMMMD` writes).
        dtype: storage dtype, float32 or float16.

    Raises:
        ValueError: not ``(N, E)`` floating, or another ``dtype``.

    Example:
        >>> import torch
        >>> save_anchors(torch.randn(10, 4), "anchors.safetensors")  # doctest: +SKIP
    """
    from scenemetrics.prism.zero123 import require_extra

    (st,) = require_extra("save_anchors", ("safetensors.torch",))
    if not isinstance(embeddings, Tensor) or embeddings.ndim != 2 or not embeddings.is_floating_point():
        shape = tuple(embeddings.shape) if isinstance(embeddings, Tensor) else type(embeddings).__name__
        raise ValueError(f"`embeddings` must be a floating (N, E) tensor; received {shape}")
    if dtype not in (torch.float32, torch.float16):
        raise ValueError(f"`dtype` must be torch.float32 or torch.float16; received {dtype}")
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta.update(format=ANCHORS_FORMAT, count=str(embeddings.shape[0]), dim=str(embeddings.shape[1]))
    st.save_file({"anchors": embeddings.detach().to("cpu", dtype).contiguous()}, os.fspath(path), metadata=meta)


def read_anchors(path: str | os.PathLike) -> tuple[Tensor, dict[str, str]]:
    """Like :func:`load_anchors`, also returning the file's metadata strings."""
    from scenemetrics.prism.files import read_prism_file

    path = os.fspath(path)
    tensors, meta = read_prism_file(path, ANCHORS_FORMAT, what="PRISM anchor", caller="load_anchors")
    keys = list(tensors)
    tensor = tensors.get("anchors")
    if tensor is None or tensor.ndim != 2 or not tensor.is_floating_point():
        raise ValueError(f"{path!r}: an anchor file holds one floating (N, E) tensor 'anchors'; received {keys}")
    return tensor.float(), meta


def load_anchors(path: str | os.PathLike) -> Tensor:
    """Read an anchor file written by :func:`save_anchors`.

    Returns:
        ``(N, E)`` float32 tensor on the CPU.

    Raises:
        ValueError: not an anchor file (another ``format``) or malformed.
        FileNotFoundError: no such file.

    Example:
        >>> anchors = load_anchors("anchors.safetensors")  # doctest: +SKIP
    """
    return read_anchors(path)[0]
