"""The PuzzleSim reference memory bank: references embedded once, unit vectors stored per layer, caches derived.

The memory stores vectors and what is derived from them (search indices, copies on other devices), and scores test
images against them (:meth:`~PuzzleSimMemory.similarity_map_for`: backbone features, Eq. 1 on its cached indices,
Eq. 3). The tensor math it runs (unit rows, the search dispatch, the layer combination) lives in
:mod:`scenemetrics.puzzlesim.functional`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from scenemetrics.image import ImageTypeError, check_image_list, check_images
from scenemetrics.puzzlesim import search as _search
from scenemetrics.puzzlesim.backbone import load_backbone
from scenemetrics.puzzlesim.functional import (
    _best_match,
    check_temperature,
    combine_layer_maps,
    search_method,
    soft_gibbs_max,
    unit_rows,
    unit_rows_into,
)
from scenemetrics.puzzlesim.options import (
    DEFAULT_LAYER_WEIGHTS,
    DEFAULT_LAYERS,
    Precision,
    PuzzleSimOptions,
    Screening,
    Search,
    check_resize,
    default_batch_size,
    min_side,
)

__all__ = ["PuzzleSimMemory"]

T = TypeVar("T")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class PuzzleSimMemory:
    """Reference images embedded once: per layer, one contiguous ``(K_l, C_l)`` matrix of unit feature vectors.

    Every test image is later compared against **all** vectors of a layer (PuzzleSim Eq. 1); the memory makes that
    cheap to repeat: the references pass through the backbone once (in batches of ``batch_size`` images, without
    gradients), each vector is L2-normalised once, and derived data (the bf16 screening copy of a layer, a faiss
    index, copies on another device) are built lazily on first use and cached.

    Memory cost: ``4 * K_l * C_l`` bytes per layer in float32. Example: 34 references of 416x628 with squeezenet
    layers 2-4 need about 138 MB (layer 2: 135 252 x 256) + 2 x 51 MB (layers 3, 4: 33 150 x 384), plus about 69 MB
    for the bf16 screening copy of layer 2 once a CPU search uses it (or about 18 MB for the projection-bound index of
    the default CPU search). The vectors are written in place while embedding (no concatenated copies; each layer
    goes into the bank as soon as the backbone has produced it), so peak memory while embedding is the bank plus at
    most about twice the largest activation of one backbone pass over ``batch_size`` images (with squeezenet the
    first convolution's output, about 16 MB per 416x628 image): the CPU default is one image per pass; a bigger
    ``batch_size`` costs memory in proportion.

    Args:
        references: ``(N, 3, h, w)`` tensor, or a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors whose sizes
            may differ (each is embedded at its own size; the bank is the union of all their vectors). Float in
            [0, 1] or uint8.
        backbone: ``"squeezenet1_1"`` (default), ``"alexnet"``, ``"vgg16"`` (aliases ``"squeeze"``, ``"alex"``,
            ``"vgg"``), or an ``nn.Module`` feature extractor ``forward(images01, layers) -> {layer: (B, C, h, w)}``
            (its own normalisation; it receives ``layers`` exactly as given; float32 only; ``weights_path`` unused).
        layers: 0-based LPIPS slice indices to embed (any later call may use a subset); the module's layer keys for
            a custom extractor.
        weights_path: backbone checkpoint file or folder (see :func:`scenemetrics.puzzlesim.load_backbone`).
        resize: ``None`` (default, no resizing) or ``(h, w)`` / ``n``: references are resized once with bilinear
            antialiased interpolation (``align_corners=False``) before embedding; test images likewise before
            their backbone pass (maps are still returned at the test image's original size).
        precision: storage and GEMM dtype: ``"float32"``; ``"float16"`` / ``"bfloat16"`` on CUDA only (half the
            memory; maps within 2e-3 / 1e-2 of float32).
        device: where vectors are stored and the backbone runs; ``None``: the device of the first reference tensor.
        batch_size: reference images per backbone pass; ``None`` (default): 1 on the CPU (a bigger batch is slower
            there and holds more activations), 8 on a GPU.
        progress: show a progress bar while embedding.

    Attributes:
        options: the :class:`~scenemetrics.puzzlesim.PuzzleSimOptions` the memory was built with; its backbone,
            weights_path, resize and precision bind every later call (:meth:`check_compatible`), its layers are the
            stored ones. ``backbone``, ``layers``, ``weights_path``, ``resize``, ``precision`` and ``batch_size`` read
            from it.

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
        backbone: str | nn.Module = "squeezenet1_1",
        layers: Sequence[int] = DEFAULT_LAYERS,
        weights_path: str | os.PathLike | None = None,
        resize: int | tuple[int, int] | None = None,
        precision: Precision = "float32",
        device: torch.device | str | None = None,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> None:
        options = PuzzleSimOptions(
            backbone=backbone,
            layers=layers,
            layer_weights=None,
            weights_path=weights_path,
            resize=resize,
            precision=precision,
            batch_size=batch_size,
        )
        self._setup(references, options, device, progress)

    @classmethod
    def from_options(
        cls,
        references: Tensor | Sequence[Tensor],
        options: PuzzleSimOptions,
        *,
        device: torch.device | str | None = None,
        progress: bool = False,
    ) -> PuzzleSimMemory:
        """Embed ``references`` with validated ``options`` (their layers, backbone, weights_path, resize, precision
        and batch_size; the call options are kept in :attr:`options` but bind nothing)."""
        memory = cls.__new__(cls)
        memory._setup(references, options, device, progress)
        return memory

    @classmethod
    def adopt_or_build(
        cls,
        references: Tensor | Sequence[Tensor] | PuzzleSimMemory,
        options: PuzzleSimOptions,
        *,
        device: torch.device | str | None = None,
        progress: bool = False,
    ) -> PuzzleSimMemory:
        """The memory every PuzzleSim entry point scores against.

        Given a memory, check that ``options`` agree with it (:meth:`check_compatible`) and return it as is; given
        reference images, embed them with ``options`` on ``device`` (``None``: the first reference's device).

        Example:
            >>> import os, tempfile, torch
            >>> from scenemetrics.puzzlesim import PuzzleSimMemory, PuzzleSimOptions, random_checkpoint
            >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
            >>> opts = PuzzleSimOptions(weights_path=w)
            >>> memory = PuzzleSimMemory.adopt_or_build(torch.rand(2, 3, 48, 48), opts)
            >>> PuzzleSimMemory.adopt_or_build(memory, opts) is memory
            True
        """
        if isinstance(references, PuzzleSimMemory):
            references.check_compatible(options)
            return references
        return cls.from_options(references, options, device=device, progress=progress)

    def _setup(
        self,
        references: Tensor | Sequence[Tensor],
        options: PuzzleSimOptions,
        device: torch.device | str | None,
        progress: bool,
    ) -> None:
        self.options = options
        refs = self._check_references(references)
        self.device = torch.device(device) if device is not None else refs[0].device
        if self.precision != "float32" and self.device.type != "cuda":
            raise ValueError(
                f"`precision` {self.precision!r} needs a CUDA device (the memory is on {self.device}); use 'float32'"
            )
        self.num_references = 0
        self.reference_sizes: list[tuple[int, int]] = []
        self._vectors: dict[Any, Tensor] = {}
        self._backbone: nn.Module | None = None
        self._derived: dict[Any, Any] = {}
        self._embed(refs, progress)

    # ------------------------------------------------------------------ the options it was built with
    @property
    def backbone(self) -> str | nn.Module:
        """Canonical backbone name, or the custom feature-extractor module."""
        return self.options.backbone

    @property
    def layers(self) -> Sequence:
        """The stored layers (a tuple for a named backbone; the module's keys as given otherwise)."""
        return self.options.layers

    @property
    def weights_path(self) -> str | None:
        return self.options.weights_path

    @property
    def resize(self) -> tuple[int, int] | None:
        return self.options.resize

    @property
    def precision(self) -> str:
        return self.options.precision

    @property
    def batch_size(self) -> int:
        """Reference images per backbone pass: the ``batch_size`` given, else the default of :attr:`device`
        (1 on the CPU, 8 elsewhere; :func:`~scenemetrics.puzzlesim.options.default_batch_size`)."""
        given = self.options.batch_size
        return default_batch_size(self.device) if given is None else given

    # ------------------------------------------------------------------ construction helpers
    def _check_references(self, references: Tensor | Sequence[Tensor]) -> list[Tensor]:
        if isinstance(references, PuzzleSimMemory):
            raise ImageTypeError("`references` is already a PuzzleSimMemory; pass it directly where memory is used")
        need = self.options.min_side
        reason = "" if need is None else f" for backbone {self.backbone!r} up to layer {max(self.layers)}"
        refs = check_image_list(
            references, "references", min_size=None if self.resize else need, min_size_reason=reason
        )
        if not refs:
            raise ValueError("`references` must hold at least one reference image; received none")
        if need is not None and self.resize is not None and min(self.resize) < need:
            raise ValueError(f"`resize` must be at least {need}x{need}{reason}; received {self.resize}")
        return refs

    def _net(self, device: torch.device | None = None) -> nn.Module:
        if self.options.is_module:
            return self.options.backbone
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

    def _extract(self, net: nn.Module, x: Tensor, layers: Sequence, what: str) -> dict[Any, Tensor]:
        """Run the backbone; a custom module's output is checked (a dict of float ``(B, C, h, w)`` maps)."""
        out = net(x, layers)
        if not self.options.is_module:
            return out
        if not isinstance(out, Mapping):
            raise ValueError(
                f"the `backbone` module must return a dict layer -> (B, C, h, w) feature map; it returned "
                f"{type(out).__name__} for {what}"
            )
        for layer in layers:
            if layer not in out:
                raise ValueError(
                    f"the `backbone` module returned no feature map for layer {layer!r} of `layers`={tuple(layers)} "
                    f"(it returned keys {list(out)})"
                )
            f = out[layer]
            if not isinstance(f, Tensor) or f.ndim != 4 or f.shape[0] != x.shape[0] or not f.is_floating_point():
                got = (tuple(f.shape), f.dtype) if isinstance(f, Tensor) else type(f).__name__
                raise ValueError(
                    f"the `backbone` module's feature map for layer {layer!r} must be a float ({x.shape[0]}, C, h, w) "
                    f"tensor for {what}; received {got}"
                )
        return {layer: out[layer].float() for layer in layers}

    def _embed(self, refs: list[Tensor], progress: bool) -> None:
        if self.options.is_module:
            self._embed_module(refs, progress)
        else:
            self._embed_named(refs, progress)
        self.num_references = len(self.reference_sizes)
        self._derived.clear()

    def _embed_named(self, refs: list[Tensor], progress: bool) -> None:
        """Embed ``refs`` and append their unit vectors, written in place into one preallocated matrix per layer
        (feature sizes from a shape-only pass on the meta device), so no second copy of the bank ever exists."""
        from tqdm.auto import tqdm

        net = self._net()
        dtype = DTYPES[self.precision]
        # the network's weights and buffers as data-free meta tensors (no copy of the weights)
        meta = {name: t.to("meta") for name, t in itertools.chain(net.named_parameters(), net.named_buffers())}
        rows = dict.fromkeys(self.layers, 0)
        channels: dict[int, int] = {}
        for tensor in refs:
            x = self._prepare(torch.empty(1, *tensor.shape[1:], device="meta"))
            for layer, f in functional_call(net, meta, (x, self.layers)).items():
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

        def write(layer: int, f: Tensor) -> None:
            n_rows = f.shape[0] * f.shape[2] * f.shape[3]
            unit_rows_into(f, out[layer][rows[layer] : rows[layer] + n_rows])
            rows[layer] += n_rows

        with torch.no_grad(), tqdm(total=total, desc="embedding references", disable=not progress) as bar:
            for tensor in refs:
                for i in range(0, tensor.shape[0], self.batch_size):
                    x = self._prepare(tensor[i : i + self.batch_size].to(self.device, torch.float32))
                    # streamed: each layer goes into the bank as soon as it exists and is then dropped, so the
                    # batch's transient memory is its largest activation, not every wanted layer at once
                    net(x, self.layers, sink=write)
                    bar.update(x.shape[0])
                    del x
                self.reference_sizes.extend([(int(tensor.shape[-2]), int(tensor.shape[-1]))] * tensor.shape[0])
        for layer in self.layers:
            assert rows[layer] == out[layer].shape[0]  # the meta pass predicted every feature size
        self._vectors.update(out)

    def _embed_module(self, refs: list[Tensor], progress: bool) -> None:
        """A custom extractor's feature sizes cannot be predicted: collect each batch's unit rows, then concatenate."""
        from tqdm.auto import tqdm

        net = self._net()
        rows: dict[Any, list[Tensor]] = {layer: [] for layer in self.layers}
        for layer in self.layers:
            if layer in self._vectors:
                rows[layer].append(self._vectors[layer])
        total = sum(t.shape[0] for t in refs)
        with torch.no_grad(), tqdm(total=total, desc="embedding references", disable=not progress) as bar:
            for n, tensor in enumerate(refs):
                for i in range(0, tensor.shape[0], self.batch_size):
                    x = self._prepare(tensor[i : i + self.batch_size].to(self.device, torch.float32))
                    feats = self._extract(net, x, self.layers, f"references[{n}]")
                    for layer in self.layers:
                        rows[layer].append(unit_rows(feats[layer]))
                    bar.update(x.shape[0])
                self.reference_sizes.extend([(int(tensor.shape[-2]), int(tensor.shape[-1]))] * tensor.shape[0])
        for layer in self.layers:
            channels = {r.shape[1] for r in rows[layer]}
            if len(channels) != 1:
                raise ValueError(
                    f"the backbone module returned {sorted(channels)} channels for layer {layer!r} on different "
                    "references; a layer must always have the same number of channels"
                )
            self._vectors[layer] = torch.cat(rows[layer]).contiguous()

    # ------------------------------------------------------------------ public API
    def features(self, layer: int) -> Tensor:
        """``(K_l, C_l)`` unit reference vectors of ``layer`` (stored dtype, on :attr:`device`).

        The row order is an implementation detail: the CPU screening search re-orders the rows by cluster.
        """
        if layer not in self._vectors:
            raise ValueError(f"`layer` must be one of the memory's layers {tuple(self.layers)}; received {layer!r}")
        return self._vectors[layer]

    def add(self, references: Tensor | Sequence[Tensor], *, progress: bool = False) -> None:
        """Embed more references and append their vectors (drops derived caches)."""
        self._embed(self._check_references(references), progress)

    def to(self, device: torch.device | str) -> PuzzleSimMemory:
        """Move the stored vectors and the backbone to ``device`` (in place) and return the memory.

        A custom feature-extractor module stays where it is (move it yourself).
        """
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
        backbone = self.backbone if isinstance(self.backbone, str) else type(self.backbone).__name__
        return (
            f"PuzzleSimMemory(backbone={backbone!r}, layers={tuple(self.layers)}, "
            f"num_references={self.num_references}, "
            f"vectors={ {k: tuple(v.shape) for k, v in self._vectors.items()} }, device={self.device})"
        )

    def check_compatible(self, options: PuzzleSimOptions | None = None, **keywords: Any) -> None:
        """Raise ``ValueError`` if call options conflict with the options the memory was built with.

        Args:
            options: the caller's options; alternatively the keywords ``backbone``, ``layers``, ``weights_path``,
                ``resize``, ``precision`` (missing ones default as in :class:`PuzzleSimOptions`).

        Backbone, weights_path, resize and precision must be equal; ``layers`` must be a subset of the memory's.
        """
        if options is None:
            options = PuzzleSimOptions(**{"layer_weights": None, **keywords})
        if options.is_module or self.options.is_module:
            if options.backbone is not self.backbone:
                raise ValueError(
                    f"`backbone` ({_describe(options.backbone)}) conflicts with the PuzzleSimMemory given as "
                    f"`references`, embedded with {_describe(self.backbone)}; pass the reference images as tensors "
                    "to use another feature extractor"
                )
            pairs = [("resize", options.resize, self.resize)]
        else:
            pairs = [
                ("backbone", options.backbone, self.backbone),
                ("weights_path", options.weights_path, self.weights_path),
                ("resize", check_resize(options.resize), self.resize),
                ("precision", options.precision, self.precision),
            ]
        for name, given, have in pairs:
            if given != have:
                raise ValueError(
                    f"`{name}`={given!r} conflicts with the PuzzleSimMemory given as `references`, built with "
                    f"{name}={have!r}; pass matching options or build a new memory"
                )
        missing = [layer for layer in options.layers if layer not in self.layers]
        if missing:
            raise ValueError(
                f"`layers`={tuple(options.layers)} conflicts with the PuzzleSimMemory given as `references`: it holds "
                f"layers {tuple(self.layers)}, not {tuple(missing)}"
            )

    def test_features(self, images: Tensor, layers: Sequence) -> dict[Any, Tensor]:
        """Backbone features ``(B, C_l, h_l, w_l)`` of validated test images (autograd follows ``images``)."""
        return self._extract(self._net(images.device), self._prepare(images), layers, "images")

    def check_test_images(
        self, images: Tensor, *, check_range: bool = True, layers: Sequence | None = None, name: str = "images"
    ) -> Tensor:
        """The input rule for test images, with this memory's minimum side (resize-aware), moved to float32."""
        layers = self.layers if layers is None else layers
        need = min_side(self.backbone, layers)
        return check_images(
            images,
            name,
            check_range=check_range,
            min_size=None if self.resize else need,
            min_size_reason="" if need is None else f" for backbone {self.backbone!r} up to layer {max(layers)}",
        )

    def call_options(self, **changes: Any) -> PuzzleSimOptions:
        """The memory's options with call options replaced (validated; ``layers`` default to the memory's)."""
        return self.options.with_call(**changes)

    # ------------------------------------------------------------------ scoring against the memory
    def match_features(
        self, features: dict[Any, Tensor], options: PuzzleSimOptions, need_grad: bool = False
    ) -> dict[Any, Tensor]:
        """Eq. 1 per layer: test features ``layer -> (B, C_l, h_l, w_l)`` -> ``layer -> (B, h_l, w_l)``.

        The search follows ``options.screening`` / ``options.search`` (see
        :func:`~scenemetrics.puzzlesim.puzzle_similarity_map`); the indices it needs are built once and cached here.
        ``need_grad``: differentiable w.r.t. ``features``.
        """
        out: dict[Any, Tensor] = {}
        for layer in options.layers:
            f = features[layer]
            b, _, h, w = f.shape
            q = unit_rows(f)
            r = self.vectors_on(layer, q.device)
            chunk = options.chunk_size or _search.default_chunk_size(q.device)
            if options.search == "faiss":
                method = "faiss"
            else:
                method = search_method(options.screening, q.device, r.shape[0], need_grad, self.precision)
            vals = _best_match(
                q,
                r,
                method,
                chunk,
                need_grad,
                bound_index=lambda layer=layer, device=q.device: self.bound_index(layer, device),
                screen_index=lambda layer=layer, device=q.device: self.screen_index(layer, device),
                faiss=lambda layer=layer, q=q: self._faiss_max(layer, q, options.faiss_options),
            )
            out[layer] = vals.float().view(b, h, w)
        return out

    def _faiss_max(self, layer: Any, q: Tensor, faiss_options: Any) -> Tensor:
        from scenemetrics.puzzlesim.approximate import faiss_max

        vals, index = faiss_max(q, self.features(layer), faiss_options, self.faiss_index(layer, faiss_options))
        self.keep_faiss_index(layer, faiss_options, index)
        return vals

    def _layer_maps(self, x: Tensor, options: PuzzleSimOptions) -> dict[Any, Tensor]:
        """Eq. 1 per layer for checked test images ``x`` (the backbone runs here, with autograd if ``x`` needs it)."""
        layers = options.layers
        missing = [layer for layer in layers if layer not in self.layers]
        if missing:
            raise ValueError(f"`layers` {tuple(layers)} must be a subset of the memory's layers {tuple(self.layers)}")
        need_grad = x.requires_grad and torch.is_grad_enabled()
        if options.screening == "on" and need_grad:
            raise ValueError("`screening`='on' cannot be used when gradients are required (use 'auto' or 'off')")
        if options.search == "faiss" and need_grad:
            raise ValueError("`search`='faiss' gives no gradients; use search='exact' for differentiable maps")
        if options.screening == "on" and self.precision != "float32":
            raise ValueError(f"`screening`='on' needs precision 'float32'; the memory uses {self.precision!r}")
        with torch.enable_grad() if need_grad else torch.no_grad():
            feats = self.test_features(x, layers)
        return self.match_features(feats, options, need_grad)

    def layer_maps_for(self, images: Tensor, options: PuzzleSimOptions) -> dict[Any, Tensor]:
        """Per-layer best-match maps ``layer -> (B, h_l, w_l)`` (Eq. 1) of test images, with a validated options
        record (``options.layers`` a subset of the memory's; ``options.layer_weights`` unused)."""
        return self._layer_maps(self.check_test_images(images, layers=options.layers), options)

    def similarity_map_for(self, images: Tensor, options: PuzzleSimOptions) -> Tensor:
        """PuzzleSim maps ``(B, H, W)`` of test images with a validated options record: Eq. 1 per layer, then Eq. 3.

        The entry point of the metric, :meth:`similarity_map`, the functional API and the inpainting loop.

        Example:
            >>> import os, tempfile, torch
            >>> from scenemetrics.puzzlesim import PuzzleSimMemory, PuzzleSimOptions, random_checkpoint
            >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
            >>> opts = PuzzleSimOptions(weights_path=w)
            >>> memory = PuzzleSimMemory.adopt_or_build(torch.rand(2, 3, 48, 48), opts)
            >>> memory.similarity_map_for(torch.rand(1, 3, 48, 40), opts).shape
            torch.Size([1, 48, 40])
        """
        x = self.check_test_images(images, layers=options.layers)
        maps = self._layer_maps(x, options)
        return combine_layer_maps(maps, options.layers, options.layer_weights, x.shape, images.device)

    def soft_similarity_map_for(self, images: Tensor, temperature: float, options: PuzzleSimOptions) -> Tensor:
        """Soft PuzzleSim maps ``(B, H, W)``: each layer's max replaced by the Gibbs mean at ``temperature``, then
        Eq. 3. Differentiable w.r.t. ``images``; the images follow PuzzleSim's shape/dtype rules but are not
        range-checked."""
        t = check_temperature(temperature)
        x = self.check_test_images(images, check_range=False, layers=options.layers)
        if x.shape[0] == 0:
            return x.new_zeros((0, *x.shape[-2:]))
        feats = self.test_features(x, options.layers)
        maps = {}
        for layer in options.layers:
            f = feats[layer]
            q = unit_rows(f)
            r = self.vectors_on(layer, q.device)
            maps[layer] = soft_gibbs_max(q, r, t, options.chunk_size).view(f.shape[0], *f.shape[2:])
        return combine_layer_maps(maps, options.layers, options.layer_weights, x.shape, images.device)

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
        options = self.call_options(
            layers=self.layers if layers is None else layers,
            layer_weights=None,
            chunk_size=chunk_size,
            screening=screening,
            search=search,
            faiss_options=faiss_options,
        )
        return self.layer_maps_for(images, options)

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
        options = self.call_options(
            layers=self.layers if layers is None else layers,
            layer_weights=layer_weights,
            chunk_size=chunk_size,
            screening=screening,
            search=search,
            faiss_options=faiss_options,
        )
        return self.similarity_map_for(images, options)

    __call__ = similarity_map

    # ------------------------------------------------------------------ derived caches
    def derived(self, key: Any, build: Callable[[], T]) -> T:
        """A cached value derived from the vectors (built by ``build()`` on first use; dropped by :meth:`add` and
        :meth:`to`)."""
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    def vectors_on(self, layer: Any, device: torch.device) -> Tensor:
        """The unit vectors of ``layer`` on ``device`` (a copy made once per device and cached)."""
        v = self._vectors[layer]
        if v.device == device:
            return v
        return self.derived(("copy", layer, str(device)), lambda: v.to(device))

    def _adopt(self, layer: Any, device: torch.device, vectors: Tensor) -> None:
        # adopt an index's cluster-ordered copy (same vectors, other order) instead of keeping two copies
        if device == self.device:
            self._vectors[layer] = vectors
        else:
            self._derived[("copy", layer, str(device))] = vectors
        self._derived[("ordered", layer, str(device))] = True

    def screen_index(self, layer: Any, device: torch.device) -> _search.ScreenIndex:
        """The bf16 screening index of ``layer`` on ``device`` (built once; the memory adopts its row order)."""
        key = ("screen", layer, str(device))
        if key not in self._derived:
            vectors = self.vectors_on(layer, device)
            ordered = ("ordered", layer, str(device)) in self._derived
            index = _search.ScreenIndex.build(vectors, reorder=not ordered)
            self._adopt(layer, device, index.vectors)
            self._derived[key] = index
        return self._derived[key]

    def bound_index(self, layer: Any, device: torch.device) -> _search.BoundIndex:
        """The projection-bound index of ``layer`` on ``device`` (rebuilt when the vectors were re-ordered)."""
        key = ("bound", layer, str(device))
        index = self._derived.get(key)
        if index is None or index.vectors is not self.vectors_on(layer, device):
            index = self._derived[key] = _search.BoundIndex.build(self.vectors_on(layer, device))
        return index

    def faiss_index(self, layer: Any, faiss_options: Mapping | None) -> Any:
        """The cached faiss index of ``layer`` for these options, or ``None`` (see :meth:`keep_faiss_index`)."""
        return self._derived.get(("faiss", layer, repr(sorted((faiss_options or {}).items()))))

    def keep_faiss_index(self, layer: Any, faiss_options: Mapping | None, index: Any) -> None:
        """Cache a faiss index built over ``features(layer)`` for these options."""
        self._derived[("faiss", layer, repr(sorted((faiss_options or {}).items())))] = index


def _describe(backbone: Any) -> str:
    return repr(backbone) if isinstance(backbone, str) else f"a {type(backbone).__name__} module"
