"""The PuzzleSim reference memory bank: references embedded once, unit vectors stored per layer, searched per call."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from scenemetrics.image import check_image_list, check_images
from scenemetrics.puzzlesim import search as _search
from scenemetrics.puzzlesim.backbone import (
    BACKBONES,
    PuzzleSimBackbone,
    canonical_backbone,
    load_backbone,
    validate_layers,
)
from scenemetrics.puzzlesim.triton_search import triton_max

__all__ = [
    "DEFAULT_LAYERS",
    "DEFAULT_LAYER_WEIGHTS",
    "PuzzleSimMemory",
    "combine_layer_maps",
    "search_method",
    "unit_rows",
]

DEFAULT_LAYERS = (2, 3, 4)
DEFAULT_LAYER_WEIGHTS = (0.67, 0.2, 0.13)
PRECISIONS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
SCREENING = ("auto", "on", "off")
SEARCHES = ("exact", "faiss")

Precision = Literal["float32", "float16", "bfloat16"]
Screening = Literal["auto", "on", "off"]
Search = Literal["exact", "faiss"]


# ----------------------------------------------------------------------------------------------- option checks
def check_resize(resize: int | Sequence[int] | None) -> tuple[int, int] | None:
    """``None``, a positive int ``n`` (-> ``(n, n)``) or a pair of positive ints."""
    if resize is None:
        return None
    if isinstance(resize, int) and not isinstance(resize, bool):
        pair: tuple = (resize, resize)
    elif isinstance(resize, Sequence) and not isinstance(resize, (str, bytes)) and len(resize) == 2:
        pair = tuple(resize)
    else:
        raise ValueError(
            f"`resize` must be None, a positive int or a pair (h, w) of positive ints; received {resize!r}"
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in pair):
        raise ValueError(
            f"`resize` must be None, a positive int or a pair (h, w) of positive ints; received {resize!r}"
        )
    return (int(pair[0]), int(pair[1]))


def check_layer_weights(layer_weights: Sequence[float] | None, layers: Sequence[int]) -> tuple[float, ...]:
    """Weights as given (no renormalisation); ``None`` means equal weights ``1/len(layers)``."""
    if layer_weights is None:
        return tuple(1.0 / len(layers) for _ in layers)
    if isinstance(layer_weights, (str, bytes)) or not isinstance(layer_weights, Sequence):
        raise ValueError(f"`layer_weights` must be a sequence of floats or None; received {layer_weights!r}")
    weights = tuple(layer_weights)
    if len(weights) != len(layers):
        raise ValueError(
            f"`layer_weights` must have one weight per layer ({len(layers)} for layers {tuple(layers)}); received "
            f"{len(weights)}: {weights!r}"
        )
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ValueError(f"`layer_weights` must be real numbers; received {weights!r}") from None
    if not all(math.isfinite(w) and w >= 0 for w in values):
        raise ValueError(f"`layer_weights` must be finite and non-negative; received {weights!r}")
    return values


def check_positive_int(value: Any, name: str) -> int:
    """An int >= 1 (bools rejected), else ``ValueError`` naming the argument."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{name}` must be an int >= 1; received {value!r}")
    return value


def check_chunk_size(value: Any) -> int | None:
    """``None`` or an int >= 1."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`chunk_size` must be an int >= 1 or None; received {value!r}")
    return value


def check_choice(value: Any, name: str, options: Sequence[str]) -> Any:
    if value not in options:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, options))}; received {value!r}")
    return value


def min_side(backbone: str, layers: Sequence[int]) -> int:
    return BACKBONES[canonical_backbone(backbone)].min_sides[max(layers)]


# ----------------------------------------------------------------------------------------------- the memory
class PuzzleSimMemory:
    """Reference images embedded once: per layer, one contiguous ``(K_l, C_l)`` matrix of unit feature vectors.

    Every test image is later compared against **all** vectors of a layer (PuzzleSim Eq. 1); the memory makes that
    cheap to repeat: the references pass through the backbone once (in batches of ``batch_size`` images, without
    gradients), each vector is L2-normalised once, and derived data (the bf16 screening copy of a layer, a faiss
    index, copies on another device) are built lazily on first use and cached.

    Memory cost: ``4 * K_l * C_l`` bytes per layer in float32. Example: 34 references of 416x628 with squeezenet
    layers 2-4 need about 138 MB (layer 2: 135 252 x 256) + 2 x 51 MB (layers 3, 4: 33 150 x 384), plus about 69 MB
    for the bf16 screening copy of layer 2 once a CPU search uses it (or about 18 MB for the projection-bound index of
    the default CPU search). The vectors are written in place while embedding (no concatenated copies), so peak
    memory while embedding is the bank plus ``batch_size`` images' activations: lower ``batch_size`` to save memory.

    Args:
        references: ``(N, 3, h, w)`` tensor, or a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors whose sizes
            may differ (each is embedded at its own size; the bank is the union of all their vectors). Float in
            [0, 1] or uint8.
        backbone: ``"squeezenet1_1"`` (default), ``"alexnet"``, ``"vgg16"`` (aliases ``"squeeze"``, ``"alex"``,
            ``"vgg"``).
        layers: 0-based LPIPS slice indices to embed (any later call may use a subset).
        weights_path: backbone checkpoint file or folder (see :func:`scenemetrics.puzzlesim.load_backbone`).
        resize: ``None`` (default, no resizing) or ``(h, w)`` / ``n``: references are resized once with bilinear
            antialiased interpolation (``align_corners=False``) before embedding; test images likewise before
            their backbone pass (maps are still returned at the test image's original size).
        precision: storage and GEMM dtype: ``"float32"``; ``"float16"`` / ``"bfloat16"`` on CUDA only (half the
            memory; maps within 2e-3 / 1e-2 of float32).
        device: where vectors are stored and the backbone runs; ``None``: the device of the first reference tensor.
        batch_size: reference images per backbone pass.
        progress: show a progress bar while embedding.

    Raises:
        ValueError: bad references or options (message names the argument).

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.puzzlesim import PuzzleSimMemory, random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> refs = torch.rand(3, 3, 64, 80)
        >>> memory = PuzzleSimMemory(refs, weights_path=w)
        >>> memory.num_references, tuple(memory.features(2).shape)
        (3, (189, 256))
        >>> memory.similarity_map(refs[:1]).shape  # a reference scores ~1 everywhere
        torch.Size([1, 64, 80])
    """

    def __init__(
        self,
        references: Tensor | Sequence[Tensor],
        *,
        backbone: str = "squeezenet1_1",
        layers: Sequence[int] = DEFAULT_LAYERS,
        weights_path: str | os.PathLike | None = None,
        resize: int | tuple[int, int] | None = None,
        precision: Precision = "float32",
        device: torch.device | str | None = None,
        batch_size: int = 8,
        progress: bool = False,
    ) -> None:
        self.backbone = canonical_backbone(backbone)
        self.layers = validate_layers(self.backbone, layers)
        self.weights_path = None if weights_path is None else os.fspath(weights_path)
        self.resize = check_resize(resize)
        self.precision = check_choice(precision, "precision", tuple(PRECISIONS))
        self.batch_size = check_positive_int(batch_size, "batch_size")
        refs = self._check_references(references)
        self.device = torch.device(device) if device is not None else refs[0].device
        if self.precision != "float32" and self.device.type != "cuda":
            raise ValueError(
                f"`precision` {self.precision!r} needs a CUDA device (the memory is on {self.device}); use 'float32'"
            )
        self.num_references = 0
        self.reference_sizes: list[tuple[int, int]] = []
        self._vectors: dict[int, Tensor] = {}
        self._backbone: PuzzleSimBackbone | None = None
        self._derived: dict[Any, Any] = {}
        self._embed(refs, progress)

    # ------------------------------------------------------------------ construction helpers
    def _check_references(self, references: Tensor | Sequence[Tensor]) -> list[Tensor]:
        from scenemetrics.image import ImageTypeError

        if isinstance(references, PuzzleSimMemory):
            raise ImageTypeError("`references` is already a PuzzleSimMemory; pass it directly where memory is used")
        need = min_side(self.backbone, self.layers)
        reason = f" for backbone {self.backbone!r} up to layer {max(self.layers)}"
        refs = check_image_list(
            references, "references", min_size=None if self.resize else need, min_size_reason=reason
        )
        if not refs:
            raise ValueError("`references` must hold at least one reference image; received none")
        if self.resize is not None and min(self.resize) < need:
            raise ValueError(f"`resize` must be at least {need}x{need}{reason}; received {self.resize}")
        return refs

    def _net(self, device: torch.device | None = None) -> PuzzleSimBackbone:
        device = self.device if device is None else device
        if device != self.device:
            return load_backbone(self.backbone, self.weights_path, device)  # cached per device by load_backbone
        if self._backbone is None:
            self._backbone = load_backbone(self.backbone, self.weights_path, self.device)
        return self._backbone

    def _prepare(self, images: Tensor) -> Tensor:
        if self.resize is not None and tuple(images.shape[-2:]) != self.resize:
            images = F.interpolate(images, size=self.resize, mode="bilinear", align_corners=False, antialias=True)
        return images

    def _embed(self, refs: list[Tensor], progress: bool) -> None:
        """Embed ``refs`` and append their unit vectors, written in place into one preallocated matrix per layer
        (feature sizes from a shape-only pass on the meta device), so no second copy of the bank ever exists."""
        import copy

        from tqdm.auto import tqdm

        net = self._net()
        dtype = PRECISIONS[self.precision]
        meta = copy.deepcopy(net).to("meta")
        rows = dict.fromkeys(self.layers, 0)
        channels: dict[int, int] = {}
        for tensor in refs:
            x = self._prepare(torch.empty(1, *tensor.shape[1:], device="meta"))
            for layer, f in meta(x, self.layers).items():
                rows[layer] += tensor.shape[0] * f.shape[2] * f.shape[3]
                channels[layer] = f.shape[1]
        del meta
        out: dict[int, Tensor] = {}
        for layer in self.layers:
            old = self._vectors.get(layer)
            start = 0 if old is None else old.shape[0]
            out[layer] = torch.empty(start + rows[layer], channels[layer], dtype=dtype, device=self.device)
            if old is not None:
                out[layer][:start] = old
            self._vectors.pop(layer, None)
            rows[layer] = start  # now the write position
        total = sum(t.shape[0] for t in refs)
        with torch.no_grad(), tqdm(total=total, desc="embedding references", disable=not progress) as bar:
            for tensor in refs:
                for i in range(0, tensor.shape[0], self.batch_size):
                    x = self._prepare(tensor[i : i + self.batch_size].to(self.device, torch.float32))
                    feats = net(x, self.layers)
                    for layer, f in feats.items():
                        v = unit_rows(f)
                        out[layer][rows[layer] : rows[layer] + v.shape[0]] = v
                        rows[layer] += v.shape[0]
                    del feats
                    bar.update(x.shape[0])
                self.reference_sizes.extend([(int(tensor.shape[-2]), int(tensor.shape[-1]))] * tensor.shape[0])
        for layer in self.layers:
            assert rows[layer] == out[layer].shape[0]  # the meta pass predicted every feature size
        self._vectors.update(out)
        self.num_references = len(self.reference_sizes)
        self._derived.clear()

    # ------------------------------------------------------------------ public API
    def features(self, layer: int) -> Tensor:
        """``(K_l, C_l)`` unit reference vectors of ``layer`` (stored dtype, on :attr:`device`).

        The row order is an implementation detail: the CPU screening search re-orders the rows by cluster.
        """
        if layer not in self._vectors:
            raise ValueError(f"`layer` must be one of the memory's layers {self.layers}; received {layer!r}")
        return self._vectors[layer]

    def add(self, references: Tensor | Sequence[Tensor], *, progress: bool = False) -> None:
        """Embed more references and append their vectors (drops derived caches)."""
        self._embed(self._check_references(references), progress)

    def to(self, device: torch.device | str) -> PuzzleSimMemory:
        """Move the stored vectors and the backbone to ``device`` (in place) and return the memory."""
        device = torch.device(device)
        if self.precision != "float32" and device.type != "cuda":
            raise ValueError(f"a {self.precision} memory must stay on a CUDA device; received {device}")
        self._vectors = {k: v.to(device) for k, v in self._vectors.items()}
        self.device = device
        self._backbone = None
        self._derived.clear()
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_backbone"] = None  # reloaded lazily from (backbone, weights_path) after unpickling
        state["_derived"] = {}
        return state

    def __repr__(self) -> str:
        return (
            f"PuzzleSimMemory(backbone={self.backbone!r}, layers={self.layers}, num_references={self.num_references}, "
            f"vectors={ {k: tuple(v.shape) for k, v in self._vectors.items()} }, device={self.device})"
        )

    def check_compatible(
        self, *, backbone: str, layers: Sequence[int], weights_path: Any, resize: Any, precision: str
    ) -> None:
        """Raise ``ValueError`` if call options conflict with the options the memory was built with."""
        pairs = [
            ("backbone", canonical_backbone(backbone), self.backbone),
            ("weights_path", None if weights_path is None else os.fspath(weights_path), self.weights_path),
            ("resize", check_resize(resize), self.resize),
            ("precision", precision, self.precision),
        ]
        for name, given, have in pairs:
            if given != have:
                raise ValueError(
                    f"`{name}`={given!r} conflicts with the PuzzleSimMemory given as `references`, built with "
                    f"{name}={have!r}; pass matching options or build a new memory"
                )
        missing = [layer for layer in validate_layers(self.backbone, layers) if layer not in self.layers]
        if missing:
            raise ValueError(
                f"`layers`={tuple(layers)} conflicts with the PuzzleSimMemory given as `references`: it holds layers "
                f"{self.layers}, not {tuple(missing)}"
            )

    def test_features(self, images: Tensor, layers: Sequence[int]) -> dict[int, Tensor]:
        """Backbone features ``(B, C_l, h_l, w_l)`` of validated test images (autograd follows ``images``)."""
        return self._net(images.device)(self._prepare(images), layers)

    def check_test_images(
        self, images: Tensor, *, check_range: bool = True, layers: Sequence[int] | None = None
    ) -> Tensor:
        """The input rule for test images, with this memory's minimum side (resize-aware), moved to float32."""
        layers = self.layers if layers is None else layers
        need = min_side(self.backbone, layers)
        return check_images(
            images,
            "images",
            check_range=check_range,
            min_size=None if self.resize else need,
            min_size_reason=f" for backbone {self.backbone!r} up to layer {max(layers)}",
        )

    def layer_maps(
        self,
        images: Tensor,
        *,
        layers: Sequence[int] | None = None,
        chunk_size: int | None = None,
        screening: Screening = "auto",
        search: Search = "exact",
        faiss_options: dict | None = None,
    ) -> dict[int, Tensor]:
        """Per-layer best-match maps ``layer -> (B, h_l, w_l)`` (Eq. 1), before weighting and upsampling.

        Args:
            images: ``(B, 3, H, W)`` / ``(3, H, W)``, float in [0, 1] or uint8.
            layers: subset of the memory's layers (default: all of them).
            chunk_size, screening, search, faiss_options: see :func:`scenemetrics.puzzlesim.puzzle_similarity_map`.
        """
        layers = self.layers if layers is None else validate_layers(self.backbone, layers)
        x = self.check_test_images(images, layers=layers)
        return self._layer_maps(x, layers, chunk_size, screening, search, faiss_options)

    def _layer_maps(
        self,
        x: Tensor,
        layers: Sequence[int],
        chunk_size: int | None,
        screening: str,
        search: str,
        faiss_options: dict | None,
    ) -> dict[int, Tensor]:
        chunk_size = check_chunk_size(chunk_size)
        check_choice(screening, "screening", SCREENING)
        check_choice(search, "search", SEARCHES)
        missing = [layer for layer in layers if layer not in self.layers]
        if missing:
            raise ValueError(f"`layers` {tuple(layers)} must be a subset of the memory's layers {self.layers}")
        need_grad = x.requires_grad and torch.is_grad_enabled()
        if screening == "on" and search == "faiss":
            raise ValueError("`screening`='on' cannot be combined with `search`='faiss' (faiss is approximate)")
        if screening == "on" and need_grad:
            raise ValueError("`screening`='on' cannot be used when gradients are required (use 'auto' or 'off')")
        if search == "faiss" and need_grad:
            raise ValueError("`search`='faiss' gives no gradients; use search='exact' for differentiable maps")
        if screening == "on" and self.precision != "float32":
            raise ValueError(f"`screening`='on' needs precision 'float32'; the memory uses {self.precision!r}")
        b = x.shape[0]
        out: dict[int, Tensor] = {}
        ctx = torch.enable_grad() if need_grad else torch.no_grad()
        with ctx:
            feats = self.test_features(x, layers)
        for layer in layers:
            f = feats[layer]
            h, w = f.shape[-2:]
            q = unit_rows(f)
            r = self.vectors_on(layer, q.device)
            chunk = chunk_size or _search.default_chunk_size(q.device)
            method = "faiss" if search == "faiss" else self._method(screening, q.device, r.shape[0], need_grad)
            if need_grad:
                with torch.no_grad():
                    if method == "bound":
                        index = self._bound_index(layer, q.device)
                        r = index.vectors
                        _, idx = _search.bound_max(q.detach(), index, chunk, with_indices=True)
                    elif method == "triton":
                        _, idx = triton_max(q.detach().to(r.dtype), r, with_indices=True)
                    else:
                        _, idx = _search.plain_max(q.detach().to(r.dtype), r, chunk, with_indices=True)
                vals = (q * r[idx].to(q.dtype)).sum(dim=1)
            elif method == "faiss":
                vals = self._faiss_max(layer, q, faiss_options)
            elif method == "bf16":
                vals = _search.screened_max(q, self._screen_index(layer, q.device), chunk)
            elif method == "bound":
                vals = _search.bound_max(q, self._bound_index(layer, q.device), chunk)[0]
            elif method == "triton":
                vals = triton_max(q.to(r.dtype), r)[0]
            else:
                vals = _search.plain_max(q.to(r.dtype), r, chunk)[0].float()
            out[layer] = vals.view(b, h, w)
        return out

    def similarity_map(
        self,
        images: Tensor,
        *,
        layers: Sequence[int] | None = None,
        layer_weights: Sequence[float] | None = DEFAULT_LAYER_WEIGHTS,
        chunk_size: int | None = None,
        screening: Screening = "auto",
        search: Search = "exact",
        faiss_options: dict | None = None,
    ) -> Tensor:
        """PuzzleSim maps ``(B, H, W)`` in [0, 1] (high = plausible) of test images against this memory.

        ``S = sum_i w_i * Upsample(S_{l_i})`` with bilinear ``align_corners=True`` upsampling to the test image's
        original ``H x W``; weights applied as given (``None``: equal ``1/m``). See
        :func:`scenemetrics.puzzlesim.puzzle_similarity_map` for the options.
        """
        layers = self.layers if layers is None else validate_layers(self.backbone, layers)
        weights = check_layer_weights(layer_weights, layers)
        x = self.check_test_images(images, layers=layers)
        return combine_layer_maps(
            self._layer_maps(x, layers, chunk_size, screening, search, faiss_options),
            layers,
            weights,
            x.shape,
            images.device,
        )

    __call__ = similarity_map

    # ------------------------------------------------------------------ internals
    def vectors_on(self, layer: int, device: torch.device) -> Tensor:
        """The unit vectors of ``layer`` on ``device`` (a copy made once per device and cached)."""
        v = self._vectors[layer]
        if v.device == device:
            return v
        key = ("copy", layer, str(device))
        if key not in self._derived:
            self._derived[key] = v.to(device)
        return self._derived[key]

    def _method(self, screening: str, device: torch.device, k: int, need_grad: bool) -> str:
        """The exact search to run: "plain", "bf16" (screened) or "bound" (projection bound, CPU)."""
        return search_method(screening, device, k, need_grad, self.precision)

    def _ordered(self, layer: int, device: torch.device) -> tuple[Tensor, bool]:
        """The vectors of ``layer`` on ``device`` and whether they are already in cluster order."""
        return self.vectors_on(layer, device), ("ordered", layer, str(device)) in self._derived

    def _adopt(self, layer: int, device: torch.device, vectors: Tensor) -> None:
        # adopt an index's cluster-ordered copy (same vectors, other order) instead of keeping two copies
        if device == self.device:
            self._vectors[layer] = vectors
        else:
            self._derived[("copy", layer, str(device))] = vectors
        self._derived[("ordered", layer, str(device))] = True

    def _screen_index(self, layer: int, device: torch.device) -> _search.ScreenIndex:
        key = ("screen", layer, str(device))
        if key not in self._derived:
            vectors, ordered = self._ordered(layer, device)
            index = _search.ScreenIndex.build(vectors, reorder=not ordered)
            self._adopt(layer, device, index.vectors)
            self._derived[key] = index
        return self._derived[key]

    def _bound_index(self, layer: int, device: torch.device) -> _search.BoundIndex:
        key = ("bound", layer, str(device))
        index = self._derived.get(key)
        if index is None or index.vectors is not self.vectors_on(layer, device):
            index = self._derived[key] = _search.BoundIndex.build(self.vectors_on(layer, device))
        return index

    def _faiss_max(self, layer: int, q: Tensor, options: dict | None) -> Tensor:
        from scenemetrics.puzzlesim.approximate import faiss_max

        key = ("faiss", layer, repr(sorted((options or {}).items())))
        vals, index = faiss_max(q, self._vectors[layer], options, self._derived.get(key))
        self._derived[key] = index
        return vals


def search_method(screening: str, device: torch.device, k: int, need_grad: bool, precision: str = "float32") -> str:
    """Which exact search a call runs: ``"plain"``, ``"bf16"`` (bf16-screened), ``"bound"`` (projection bound) or
    ``"triton"`` (fused GPU kernel).

    ``"off"`` -> plain (the exhaustive reference); ``"on"`` -> bf16-screened (float32, no gradients). ``"auto"``:
    on CUDA the fused Triton kernel when Triton is installed; on a CPU with float32 and at least 4 blocks of
    reference vectors, bf16-screened where the bf16 decision enables it and no gradient is needed, otherwise the
    projection-bound search (which also gives the argmax for gradients); plain elsewhere.
    """
    if screening == "off":
        return "plain"
    if device.type == "cuda" and screening == "auto":
        from scenemetrics.puzzlesim.triton_search import triton_available

        return "triton" if triton_available(device) else "plain"
    if precision != "float32":
        return "plain"
    if screening == "on":
        return "bf16"
    if device.type != "cpu" or k < 4 * _search.BLOCK:
        return "plain"
    if not need_grad and bool(_search.bf16_decision()["enabled"]):
        return "bf16"
    return "bound"


def unit_rows(f: Tensor) -> Tensor:
    """``(B, C, h, w)`` features -> ``(B*h*w, C)`` rows scaled to unit length (norm clamped at 1e-12)."""
    return F.normalize(f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]), p=2, dim=1, eps=1e-12)


def combine_layer_maps(
    maps: dict[int, Tensor], layers: Sequence[int], weights: Sequence[float], shape: torch.Size, device: torch.device
) -> Tensor:
    """Eq. 3: ``sum_i w_i * Upsample(S_{l_i})`` (bilinear, ``align_corners=True``) at the size of ``shape[-2:]``."""
    b, _, h, w = shape
    if b == 0:
        return torch.zeros(0, h, w, device=device)
    total: Tensor | None = None
    for layer, wgt in zip(layers, weights, strict=True):
        # weight before upsampling, summed in layer order: the authors' order of operations
        up = F.interpolate((maps[layer] * wgt).unsqueeze(1), size=(h, w), mode="bilinear", align_corners=True)
        total = up if total is None else total + up
    assert total is not None  # layers is never empty
    return total.squeeze(1).to(device)
