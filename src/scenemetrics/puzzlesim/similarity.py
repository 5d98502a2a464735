"""Image-level PuzzleSim: build (or adopt) a :class:`~scenemetrics.puzzlesim.PuzzleSimMemory` of the references,
then run the math of :mod:`scenemetrics.puzzlesim.functional` on it.

The layers inside the package, lowest first: ``options`` -> ``backbone`` / ``search`` -> ``functional`` (the tensor
math: unit rows, the search dispatch, Eq. 3) -> ``memory`` (vectors, caches, and scoring images against them) -> this
module, the metric and the loss (which build memories).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from torch import Tensor, nn

from scenemetrics.puzzlesim.memory import PuzzleSimMemory
from scenemetrics.puzzlesim.options import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    Precision,
    PuzzleSimOptions,
    Screening,
    Search,
)

__all__ = ["puzzle_similarity", "puzzle_similarity_map"]


def _memory(images: Tensor, references: Any, options: PuzzleSimOptions, progress: bool) -> PuzzleSimMemory:
    device = images.device if isinstance(images, Tensor) else None
    return PuzzleSimMemory.adopt_or_build(references, options, device=device, progress=progress)


def puzzle_similarity_map(
    images: Tensor,
    references: Tensor | Sequence[Tensor] | PuzzleSimMemory,
    *,
    backbone: str | nn.Module = "squeezenet1_1",
    layers: Sequence[int] = DEFAULT_LAYERS,
    layer_weights: Sequence[float] | None = DEFAULT_LAYER_WEIGHTS,
    weights_path: str | os.PathLike | None = None,
    resize: int | tuple[int, int] | None = None,
    chunk_size: int | None = None,
    precision: Precision = "float32",
    screening: Screening = "auto",
    search: Search = "exact",
    faiss_options: dict | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> Tensor:
    """PuzzleSim maps of test images against unaligned references: ``(B, H, W)`` in [0, 1], high = plausible.

    ``S(I) = sum_i w_i * Upsample(S_{l_i}(I))`` where ``S_l(I)[p]`` is the best cosine similarity of the test
    feature at ``p`` to any feature vector of any reference at layer ``l`` (paper Eq. 1-3).

    Args:
        images: ``(B, 3, H, W)`` or ``(3, H, W)``; float in [0, 1] or uint8. Each image is scored independently.
        references: ``(N, 3, h, w)``, a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors of any sizes, or a
            :class:`PuzzleSimMemory` (then ``backbone``, ``weights_path``, ``resize`` and ``precision`` must equal
            the memory's and ``layers`` must be a subset of its layers).
        backbone: ``"squeezenet1_1"`` (default), ``"alexnet"`` or ``"vgg16"``. The default layer weights were tuned
            by the authors for SqueezeNet only; nothing tuned exists for AlexNet / VGG16. An ``nn.Module`` feature
            extractor ``forward(images01, layers) -> {layer: (B, C, h, w)}`` is accepted too (see
            :class:`PuzzleSimMemory`).
        layers: 0-based LPIPS slice indices (default ``(2, 3, 4)``).
        layer_weights: one weight per layer, applied as given (default ``(0.67, 0.2, 0.13)``); ``None`` = ``1/m``.
        weights_path: backbone checkpoint file or folder (default: the hub cache, downloading on first use).
        resize: ``None`` or ``(h, w)`` / ``n``: resize references and test images before the backbone (bilinear,
            antialiased); maps keep the original test size.
        chunk_size: maximum number of similarities materialised at once (``None``: 2^22 on CPU, 2^26 on CUDA).
        precision: ``"float32"``; ``"float16"`` / ``"bfloat16"`` on CUDA only.
        screening: ``"auto"`` picks the fastest exact search: on CUDA the exhaustive GEMM search; on CPU, for
            banks of at least 1024 vectors, the projection-bound branch-and-bound search, or the exact
            bf16-screened search on CPUs with a fast and accurate bf16 GEMM
            (float32, exact search, no gradients); the CPU is judged once per machine from its capabilities (x86
            AVX512-BF16 / AMX-BF16), with a millisecond probe where those do not settle it, and the answer is
            cached in ``$SCENEMETRICS_HOME/puzzlesim/bf16.json``; the environment variable ``SCENEMETRICS_BF16`` =
            ``auto`` | ``on`` | ``off`` overrides that judgement. ``"on"`` forces the screened search, ``"off"``
            runs the exhaustive search (the reference implementation). The result is exact in every case.
        search: ``"exact"`` or ``"faiss"`` (approximate, optional extra ``[faiss]``; maps <= exact maps).
        faiss_options: e.g. ``{"index": "HNSW32", "ef_search": 128}`` or ``{"index": "IVF1024,Flat", "nprobe": 16}``.
        batch_size: reference images per backbone pass when embedding references; ``None`` (default): 1 on the
            CPU, 8 on a GPU.
        progress: progress bar while embedding references.

    Returns:
        ``(B, H, W)`` float32 on the images' device. Differentiable w.r.t. ``images`` when they require grad
        (sub-gradient of the max, computed via the argmax without an ``M x K`` graph).

    Raises:
        ValueError: bad images, references or options (the message names the argument).
        scenemetrics.hub.WeightsNotFoundError: no backbone checkpoint (offline or download failed).
        ImportError: ``search="faiss"`` without faiss.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.puzzlesim import puzzle_similarity_map, random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> refs = torch.rand(4, 3, 64, 64)
        >>> maps = puzzle_similarity_map(refs[:2], refs, weights_path=w)
        >>> maps.shape, bool((maps - 1).abs().max() < 1e-4)
        (torch.Size([2, 64, 64]), True)
    """
    options = PuzzleSimOptions(
        backbone=backbone,
        layers=layers,
        layer_weights=layer_weights,
        weights_path=weights_path,
        resize=resize,
        chunk_size=chunk_size,
        precision=precision,
        screening=screening,
        search=search,
        faiss_options=faiss_options,
        batch_size=batch_size,
    )
    return _memory(images, references, options, progress).similarity_map_for(images, options)


def puzzle_similarity(images: Tensor, references: Tensor | Sequence[Tensor] | PuzzleSimMemory, **kwargs) -> Tensor:
    """Per-image PuzzleSim score ``(B,)``: the mean of :func:`puzzle_similarity_map` over the image's pixels.

    (The authors' code produces no scalar; the mean of the map is our definition.) Keywords as
    :func:`puzzle_similarity_map`.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.puzzlesim import puzzle_similarity, random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> puzzle_similarity(torch.rand(2, 3, 48, 48), torch.rand(3, 3, 48, 48), weights_path=w).shape
        torch.Size([2])
    """
    return puzzle_similarity_map(images, references, **kwargs).mean(dim=(1, 2))
