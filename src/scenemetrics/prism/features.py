"""PRISM's diffusion features: one conditioned Zero123 denoising step, nine U-Net blocks pooled and concatenated.

The triplet (source image, relative pose, target image) is scored by encoding the target to a latent, noising it at
one timestep with a fixed noise sample, and running one U-Net pass conditioned on the source (concat latent and CLIP
embedding + pose). The outputs of the 4 down blocks, the mid block and the 4 up blocks are L2-normalised per pixel
and spatially averaged; their concatenation (8320-d for Zero123 / SD1.x) is the feature a
:class:`~scenemetrics.prism.ProjectionHead` maps to the PRISM embedding.

Numbers produced with this implementation are not the paper's numbers: the authors released no code, head or data.

Example:
    >>> from scenemetrics.prism import BLOCK_NAMES, block_channels
    >>> BLOCK_NAMES[:2], sum(block_channels((320, 640, 1280, 1280)))
    (('down0', 'down1'), 8320)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.checks import check_int, check_positive_int
from scenemetrics.image import check_images
from scenemetrics.prism.zero123 import (
    check_pose,
    encode_pose,
    load_zero123_components,
    require_extra,
    resolve_model_folder,
)

__all__ = [
    "BLOCK_NAMES",
    "CLIP_MEAN",
    "CLIP_STD",
    "Zero123Features",
    "attach_frozen",
    "block_channels",
    "embed_features",
    "load_view",
    "move_frozen",
    "prism_distance",
    "prism_embed",
]

BLOCK_NAMES = ("down0", "down1", "down2", "down3", "mid", "up0", "up1", "up2", "up3")
"""The nine U-Net blocks whose pooled outputs form the feature, in output order."""

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_HALF = (torch.float16, torch.bfloat16)


def block_channels(block_out_channels: Sequence[int]) -> tuple[int, ...]:
    """Output channels of the nine blocks for a U-Net's ``block_out_channels`` ``(c0, c1, c2, c3)``.

    Down blocks give ``c0..c3``, the mid block ``c3``, up blocks ``c3, c2, c1, c0``; the feature size is their sum
    (8320 for SD1.x's ``(320, 640, 1280, 1280)``).

    Raises:
        ValueError: not exactly four entries.
    """
    c = tuple(int(v) for v in block_out_channels)
    if len(c) != 4:
        raise ValueError(f"PRISM needs a U-Net with 4 down and 4 up blocks; block_out_channels is {c}")
    return (*c, c[3], *reversed(c))


def _check_same_shape(source: Any, target: Any, target_name: str) -> None:
    if isinstance(source, Tensor) and isinstance(target, Tensor):
        s_shape = tuple(source.shape) if source.ndim != 3 else (1, *source.shape)
        t_shape = tuple(target.shape) if target.ndim != 3 else (1, *target.shape)
        if s_shape != t_shape:
            raise ValueError(
                f"`source` and `{target_name}` must have the same shape; received {tuple(source.shape)} and "
                f"{tuple(target.shape)}"
            )


class Zero123Features(nn.Module):
    """PRISM's frozen feature extractor: one conditioned Zero123 step, nine U-Net blocks pooled (``(B, 8320)``).

    Build it with :meth:`from_pretrained` from a diffusers folder or hub id (either public layout), or from
    already-built modules. The output for a triplet does not depend on the batch it is computed in: the noise is
    one fixed sample (``noise_seed``) shared by every sample of every call, and the VAE posterior mode is used.

    Args:
        vae: diffusers ``AutoencoderKL`` (``config.scaling_factor``, ``config.latent_channels``).
        unet: diffusers ``UNet2DConditionModel`` with 8 input channels and 4 down / 4 up blocks.
        image_encoder: transformers ``CLIPVisionModelWithProjection``.
        camera_projection: ``Linear(projection_dim + 4, cross_attention_dim)`` mapping CLIP embedding + pose.
        alphas_cumprod: ``ᾱ_t`` of the training noise schedule (float32, 1-D).
        timestep: the one timestep ``t`` (default 0, the paper's best linear-probe timestep).
        noise_seed: seed of the CPU generator that draws the shared noise.
        image_size: side of the square images the model sees (a positive multiple of 64; Zero123 uses 256).
        clip_image_size: side of the CLIP input (default ``image_encoder.config.image_size``, 224 for the real model).
        resize: accept square images of another size and resize them (antialiased bilinear) to ``image_size``.

    Attributes:
        feature_dim: size of the output (sum of ``block_channels``).
        block_names / block_channels / block_slices: where each block's pooled vector sits in the output.
        layout: ``"cc_projection"``, ``"clip_camera_projection"`` or ``"modules"`` (built by ``__init__``).
        source_id: the path or repo id it was loaded from (``""`` for ``__init__``).

    Example:
        >>> import torch
        >>> from scenemetrics.prism import Zero123Features
        >>> extractor = Zero123Features.from_pretrained("path/to/zero123-xl-diffusers")  # doctest: +SKIP
        >>> src, tgt = torch.rand(2, 3, 256, 256), torch.rand(2, 3, 256, 256)  # doctest: +SKIP
        >>> extractor(src, tgt, torch.tensor([0.0, 90.0, 0.0])).shape  # doctest: +SKIP
        torch.Size([2, 8320])
    """

    def __init__(
        self,
        vae: nn.Module,
        unet: nn.Module,
        image_encoder: nn.Module,
        camera_projection: nn.Linear,
        alphas_cumprod: Tensor,
        *,
        timestep: int = 0,
        noise_seed: int = 0,
        image_size: int = 256,
        clip_image_size: int | None = None,
        resize: bool = False,
    ) -> None:
        super().__init__()
        alphas = torch.as_tensor(alphas_cumprod).detach().to("cpu", torch.float32)
        if alphas.ndim != 1 or alphas.numel() == 0:
            raise ValueError(f"`alphas_cumprod` must be a non-empty 1-D tensor; received shape {tuple(alphas.shape)}")
        check_int(timestep, "timestep", low=0, high=alphas.numel() - 1)
        check_int(noise_seed, "noise_seed")
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size <= 0 or image_size % 64:
            raise ValueError(
                f"`image_size` must be a positive multiple of 64 (the VAE downsamples by 8 and the U-Net three more "
                f"times); received {image_size!r}"
            )
        if clip_image_size is None:
            clip_image_size = int(image_encoder.config.image_size)
        check_positive_int(clip_image_size, "clip_image_size")
        n_down, n_up = len(unet.down_blocks), len(unet.up_blocks)
        if n_down != 4 or n_up != 4:
            raise ValueError(f"PRISM needs a U-Net with 4 down and 4 up blocks; this one has {n_down} and {n_up}")
        unet_in = int(unet.config.in_channels)
        latent = int(vae.config.latent_channels)
        if unet_in != 2 * latent:
            raise ValueError(
                f"a Zero123 U-Net takes the noisy target latent and the source latent ({2 * latent} channels); this "
                f"one has in_channels={unet_in}"
            )

        self.vae = vae
        self.unet = unet
        self.image_encoder = image_encoder
        self.camera_projection = camera_projection
        self.alphas_cumprod = alphas  # plain attribute: stays float32 on the CPU whatever .to() does
        self.timestep = timestep
        self.noise_seed = noise_seed
        self.image_size = image_size
        self.clip_image_size = clip_image_size
        self.resize = bool(resize)
        self.layout = "modules"
        self.source_id = ""
        self.block_names = BLOCK_NAMES
        self.block_channels = block_channels(unet.config.block_out_channels)
        self.feature_dim = sum(self.block_channels)
        offsets = [0]
        for c in self.block_channels:
            offsets.append(offsets[-1] + c)
        self.block_slices = {n: slice(a, b) for n, a, b in zip(BLOCK_NAMES, offsets[:-1], offsets[1:], strict=True)}

        for module in (vae, unet, image_encoder, camera_projection):
            module.eval()
            module.requires_grad_(False)
        self._captured: dict[str, Tensor] = {}
        blocks = [*unet.down_blocks, unet.mid_block, *unet.up_blocks]
        for name, block in zip(BLOCK_NAMES, blocks, strict=True):
            # a partial of a bound method survives deepcopy (the copy's hooks write into the copy's dict)
            block.register_forward_hook(functools.partial(self._capture, name))
        self.eval()

    def _capture(self, name: str, module: nn.Module, inputs: Any, output: Any) -> None:
        # down blocks return (hidden_states, skip_states): the first element is the output after the downsampler
        self._captured[name] = output[0] if isinstance(output, tuple) else output

    def train(self, mode: bool = True) -> Zero123Features:
        """The backbone is frozen: it stays in eval mode whatever ``mode`` is."""
        return super().train(False)

    @property
    def device(self) -> torch.device:
        return next(self.unet.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.unet.parameters()).dtype

    @classmethod
    def from_pretrained(
        cls,
        path_or_repo_id: str | os.PathLike | None = None,
        *,
        timestep: int = 0,
        noise_seed: int = 0,
        image_size: int = 256,
        clip_image_size: int | None = None,
        resize: bool = False,
        torch_dtype: torch.dtype = torch.float32,
        device: str | torch.device | None = None,
        revision: str | None = None,
        variant: str | None = None,
        local_files_only: bool | None = None,
    ) -> Zero123Features:
        """Load Zero123 / Zero123-XL from a local diffusers folder or a Hugging Face hub id.

        Both public layouts load (``cc_projection/`` as in ``kxic/zero123-xl``, ``clip_camera_projection/`` as in
        ``ashawkey/zero123-xl-diffusers``); safetensors and pickled ``.bin`` weights both work. Hub files go to the
        standard Hugging Face cache (never to ``$SCENEMETRICS_HOME``); ``safety_checker/`` and
        ``feature_extractor/`` are never fetched.

        Args:
            path_or_repo_id: a local folder, a hub id, or ``None`` for :data:`DEFAULT_MODEL`
                (``"ashawkey/zero123-xl-diffusers"``). A local folder plays the role of ``weights_path=``.
            timestep / noise_seed / image_size / clip_image_size / resize: see the class.
            torch_dtype: weights dtype; float16/bfloat16 only on CUDA (pooling always runs in float32).
            device: where to put the model (default CPU).
            revision: hub revision, e.g. ``"refs/pr/1"`` for kxic's safetensors files.
            variant: weight-file variant, e.g. ``"fp16"``.
            local_files_only: only read the Hugging Face cache (implied by ``HF_HUB_OFFLINE=1`` or
                ``SCENEMETRICS_OFFLINE=1``).

        Returns:
            The frozen extractor in eval mode.

        Raises:
            ImportError: the ``[prism]`` extra (diffusers, transformers, safetensors, huggingface_hub) is missing.
            scenemetrics.hub.WeightsNotFoundError: the folder or a component is missing, or the hub files are not
                cached offline / cannot be downloaded.
            ValueError: no projection layout or no projection folder (the latter error is also a
                ``WeightsNotFoundError``), a projection of the wrong size, bad options, or half precision on the CPU.

        Example:
            >>> from scenemetrics.prism import Zero123Features
            >>> Zero123Features.from_pretrained("kxic/zero123-xl", revision="refs/pr/1")  # doctest: +SKIP
        """
        require_extra("Zero123Features.from_pretrained")
        dev = torch.device(device) if device is not None else torch.device("cpu")
        if torch_dtype not in (torch.float32, *_HALF):
            raise ValueError(f"`torch_dtype` must be float32, float16 or bfloat16; received {torch_dtype}")
        if torch_dtype in _HALF and dev.type != "cuda":
            raise ValueError(f"`torch_dtype={torch_dtype}` needs a CUDA device (received device {dev}); use float32")
        folder, source_id = resolve_model_folder(
            path_or_repo_id, revision=revision, variant=variant, local_files_only=local_files_only
        )
        parts = load_zero123_components(folder, variant=variant, source_id=source_id)
        model = cls(
            parts.vae,
            parts.unet,
            parts.image_encoder,
            parts.camera_projection,
            parts.alphas_cumprod,
            timestep=timestep,
            noise_seed=noise_seed,
            image_size=image_size,
            clip_image_size=clip_image_size,
            resize=resize,
        )
        model.to(device=dev, dtype=torch_dtype)
        model.layout = parts.layout
        model.source_id = source_id
        return model

    def provenance(self) -> dict[str, Any]:
        """Settings that make two feature sets comparable: ``{"model", "timestep", "noise_seed", "image_size"}``."""
        return {
            "model": self.source_id,
            "timestep": self.timestep,
            "noise_seed": self.noise_seed,
            "image_size": self.image_size,
        }

    def _prepare(self, images: Tensor, name: str, check_range: bool = True) -> Tensor:
        x = check_images(images, name, check_range=check_range)
        h, w = x.shape[-2:]
        if h != w:
            raise ValueError(
                f"`{name}` must be square (PRISM never crops); received {h}x{w} (shape {tuple(x.shape)}); crop it first"
            )
        if h != self.image_size:
            if not self.resize:
                raise ValueError(
                    f"`{name}` must be {self.image_size}x{self.image_size} (the extractor's image_size); received "
                    f"{h}x{w}; resize it or build the extractor with resize=True"
                )
            if x.shape[0]:
                x = F.interpolate(
                    x, size=(self.image_size, self.image_size), mode="bilinear", antialias=True, align_corners=False
                )
        return x

    def check_inputs(
        self, source: Tensor, target: Tensor, pose: Tensor, *, target_name: str = "target", check_target_range=True
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Validate and convert a triplet as :meth:`forward` does.

        Returns:
            ``(source, target, pose)``: float32 ``(B, 3, image_size, image_size)`` images on the input's device and
            the ``(B, 3)`` float32 pose.

        Raises:
            ValueError: see :meth:`forward`.
        """
        _check_same_shape(source, target, target_name)
        src = self._prepare(source, "source")
        tgt = self._prepare(target, target_name, check_range=check_target_range)
        return src, tgt, check_pose(pose, src.shape[0])

    def check_target(self, source: Tensor, target: Tensor, *, name: str = "target") -> Tensor:
        """Validate and convert a second target view for a triplet whose ``source`` :meth:`check_inputs` already
        checked (the source and pose are not checked again)."""
        _check_same_shape(source, target, name)
        return self._prepare(target, name)

    def forward(self, source: Tensor, target: Tensor, pose: Tensor) -> Tensor:
        """Features of the triplets ``(source, pose, target)``.

        Args:
            source: ``(B, 3, H, W)`` or ``(3, H, W)`` source views, RGB float in [0, 1] or uint8.
            target: the (generated or ground-truth) target views, same shape as ``source``.
            pose: ``(B, 3)`` or ``(3,)`` ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``, target minus source
                in Zero123's convention: polar measured from +z (so ``delta_polar = -delta_elevation``), azimuth
                counter-clockwise seen from +z (toward the camera's right), radius in scene units (0 for a fixed
                distance). :func:`~scenemetrics.prism.relative_pose` builds it from two cameras.

        Returns:
            ``(B, feature_dim)`` float32 features on the input's device (``(0, feature_dim)`` for ``B == 0``).
            Differentiable w.r.t. ``source`` and ``target`` when grad mode is on.

        Raises:
            ValueError: wrong rank/channels/dtype, NaN, values outside [0, 1], ``source``/``target`` shapes that
                differ, non-square images, a size other than ``image_size`` without ``resize=True``, a pose that is
                not ``(B, 3)``/``(3,)``, or half-precision weights on the CPU.
        """
        src, tgt, pose = self.check_inputs(source, target, pose)
        return self.forward_checked(src, tgt, pose)

    def forward_checked(self, src: Tensor, tgt: Tensor, pose: Tensor) -> Tensor:
        """:meth:`forward` on inputs already returned by :meth:`check_inputs` (no validation repeated).

        Used by ``prism_distance`` and ``PRISMLoss``, which validate prediction and target with different rules.
        """
        out_device = src.device
        b = src.shape[0]
        if b == 0:
            return torch.zeros(0, self.feature_dim, device=out_device, dtype=torch.float32)
        dev, dtype = self.device, self.dtype
        if dtype in _HALF and dev.type != "cuda":
            raise ValueError(
                f"Zero123Features holds {dtype} weights on {dev}; half precision is only supported on CUDA (move it "
                "to a GPU or cast it to float32)"
            )
        x_src = (src.to(dev) * 2.0 - 1.0).to(dtype)
        x_tgt = (tgt.to(dev) * 2.0 - 1.0).to(dtype)
        try:
            # one VAE pass for both images: no layer mixes samples, so this equals two separate passes
            latents = self.vae.encode(torch.cat([x_tgt, x_src])).latent_dist.mode()
            z0 = latents[:b] * self.vae.config.scaling_factor
            c = latents[b:]  # Zero123 conditions on the *unscaled* source latent
            gen = torch.Generator(device="cpu").manual_seed(self.noise_seed)
            eps = torch.randn((1, *z0.shape[1:]), generator=gen, dtype=torch.float32).to(dev, dtype)
            a = self.alphas_cumprod[self.timestep]
            z_t = (a**0.5).to(dev, dtype) * z0 + ((1.0 - a) ** 0.5).to(dev, dtype) * eps

            s = self.clip_image_size
            xc = F.interpolate(x_src, size=(s, s), mode="bicubic", align_corners=True)
            mean = torch.tensor(CLIP_MEAN, device=dev, dtype=dtype).view(1, 3, 1, 1)
            std = torch.tensor(CLIP_STD, device=dev, dtype=dtype).view(1, 3, 1, 1)
            xc = ((xc + 1.0) / 2.0 - mean) / std
            emb = self.image_encoder(pixel_values=xc).image_embeds[:, None, :]
            pose_vec = encode_pose(pose.to(dev))[:, None, :].to(dtype)
            ehs = self.camera_projection(torch.cat([emb, pose_vec], dim=-1))

            t_vec = torch.full((b,), self.timestep, dtype=torch.long, device=dev)
            self.unet(torch.cat([z_t, c], dim=1), t_vec, encoder_hidden_states=ehs)
            pooled = [F.normalize(self._captured[n].float(), p=2, dim=1).mean(dim=(2, 3)) for n in BLOCK_NAMES]
        finally:
            self._captured.clear()
        return torch.cat(pooled, dim=1).to(out_device)

    def extra_repr(self) -> str:
        return (
            f"source_id={self.source_id!r}, layout={self.layout!r}, timestep={self.timestep}, "
            f"noise_seed={self.noise_seed}, image_size={self.image_size}, feature_dim={self.feature_dim}"
        )


def attach_frozen(owner: nn.Module, extractor: nn.Module | None, head: nn.Module | None, *, optional: bool) -> None:
    """Check, freeze (eval, no grad) and attach ``extractor`` and ``head`` to ``owner`` as plain attributes.

    Plain attributes, not submodules: they stay out of ``owner.state_dict()`` (a model holding a PRISM metric or
    loss does not save Zero123's weights) and are never synced; the owner's ``_apply`` moves them.

    Raises:
        TypeError: ``extractor`` (``None`` allowed only when ``optional``) or ``head`` is not an ``nn.Module``.
    """
    if not isinstance(extractor, nn.Module) and not (optional and extractor is None):
        allowed = " or None" if optional else ""
        raise TypeError(f"`extractor` must be a Zero123Features module{allowed}; received {type(extractor).__name__}")
    if head is not None and not isinstance(head, nn.Module):
        raise TypeError(f"`head` must be a ProjectionHead (nn.Module) or None; received {type(head).__name__}")
    for module in (extractor, head):
        if module is not None:
            module.eval()
            module.requires_grad_(False)
    owner.__dict__["extractor"] = extractor
    owner.__dict__["head"] = head


def move_frozen(owner: nn.Module, device: torch.device) -> None:
    """Move the extractor and head :func:`attach_frozen` put on ``owner`` to ``device`` (called from the owner's
    ``_apply``, so ``owner.to(device)`` moves them although they are not submodules)."""
    for module in (owner.__dict__.get("extractor"), owner.__dict__.get("head")):
        if module is not None:
            module.to(device)


def embed_features(features: Tensor, head: nn.Module | None) -> Tensor:
    """Embeddings of features: ``head(features)``, or the L2-normalised features with ``head=None`` ("raw" mode).

    The head is moved to the features' device.
    """
    if head is None:
        return F.normalize(features, p=2, dim=-1)
    head_param = next(head.parameters(), None)
    if head_param is not None and head_param.device != features.device:
        head.to(features.device)
    return head(features)


def prism_embed(
    extractor: Zero123Features, head: nn.Module | None, source: Tensor, target: Tensor, pose: Tensor
) -> Tensor:
    """PRISM embeddings of triplets: ``head(extractor(source, target, pose))``.

    Args:
        extractor: the feature extractor.
        head: a trained :class:`~scenemetrics.prism.ProjectionHead`, or ``None`` for "raw" mode (the L2-normalised
            8320-d feature: untrained diffusion-feature scores, not PRISM as published). The head is moved to the
            features' device.
        source / target / pose: as :meth:`Zero123Features.forward`.

    Returns:
        ``(B, E)`` unit-norm float32 embeddings on the input's device.

    Example:
        >>> import torch
        >>> from scenemetrics.prism import ProjectionHead, prism_embed
        >>> emb = prism_embed(extractor, ProjectionHead.load("head.safetensors"), src, tgt, pose)  # doctest: +SKIP
    """
    return embed_features(extractor(source, target, pose), head)


def prism_distance(
    extractor: Zero123Features,
    head: nn.Module | None,
    source: Tensor,
    pred: Tensor,
    target: Tensor,
    pose: Tensor,
) -> Tensor:
    """Reference-based D_PRISM (paper Eq. 1): ``0.5 * ||e(source, pred, pose) - e(source, target, pose)||_2``.

    With unit embeddings D lies in [0, 1] (clamped for float rounding only); identical ``pred`` and ``target`` give
    0 (the extractor's noise is shared). It equals ``sqrt((1 - cos) / 2)``, not ``(1 - cos) / 2``.

    Args:
        extractor: the feature extractor.
        head: trained head or ``None`` (raw mode).
        source: ``(B, 3, H, W)`` source views.
        pred: generated target views, same shape.
        target: ground-truth target views, same shape.
        pose: ``(B, 3)`` or ``(3,)`` relative pose (see :meth:`Zero123Features.forward`).

    Returns:
        ``(B,)`` float32 distances in [0, 1] on the input's device.

    Example:
        >>> d = prism_distance(extractor, head, src, pred, gt, torch.tensor([0.0, 45.0, 0.0]))  # doctest: +SKIP
    """
    src, prd, pose_b = extractor.check_inputs(source, pred, pose, target_name="pred")
    tgt = extractor.check_target(source, target)
    b = src.shape[0]
    feats = extractor.forward_checked(torch.cat([src, src]), torch.cat([prd, tgt]), torch.cat([pose_b, pose_b]))
    emb = embed_features(feats, head)
    return (0.5 * torch.linalg.vector_norm(emb[:b] - emb[b:], dim=-1)).clamp(0.0, 1.0)


def load_view(path: str | os.PathLike, image_size: int = 256) -> Tensor:
    """Read a view for PRISM: RGBA composited onto white, resized (LANCZOS) to ``image_size`` if needed.

    The file is read by :func:`scenemetrics.image.read_image` (8/16-bit, palette and float images exactly; alpha
    composited onto white as ``rgb * a + (1 - a)``). 8-bit content is resized by PIL on bytes, as Zero123's own
    preprocessing does; finer content is resized per channel in float (LANCZOS overshoot clamped to [0, 1]).

    Args:
        path: image file (PNG/JPEG/TIFF...; RGBA, LA, P with transparency, RGB or grey; 8/16-bit or float).
        image_size: output side; the image must be square or it is resized anisotropically (documented: PRISM
            views are square renders).

    Returns:
        ``(3, image_size, image_size)`` float32 in [0, 1].

    Example:
        >>> from scenemetrics.prism import load_view
        >>> load_view("views/000.png").shape  # doctest: +SKIP
        torch.Size([3, 256, 256])
    """
    import numpy as np
    from PIL import Image

    from scenemetrics.image import read_image

    rgb = read_image(path, background="white")  # every mode (8/16-bit, palette, float) exactly, alpha over white
    if tuple(rgb.shape[-2:]) == (image_size, image_size):
        return rgb
    size = (image_size, image_size)
    as_bytes = (rgb * 255.0).round()
    if torch.equal(as_bytes / 255.0, rgb):  # 8-bit content: PIL's uint8 LANCZOS, as Zero123's preprocessing does
        arr = np.asarray(as_bytes.to(torch.uint8).permute(1, 2, 0).numpy())
        out = np.asarray(Image.fromarray(arr, "RGB").resize(size, Image.Resampling.LANCZOS), dtype=np.uint8)
        return torch.from_numpy(out.copy()).permute(2, 0, 1).float().div_(255.0)
    # finer content (16-bit, float, composited alpha): LANCZOS per channel in float, its ringing clamped to [0, 1]
    planes = [np.asarray(Image.fromarray(c.numpy(), "F").resize(size, Image.Resampling.LANCZOS)) for c in rgb]
    return torch.from_numpy(np.stack(planes)).clamp_(0.0, 1.0)
