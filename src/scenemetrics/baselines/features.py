"""Which image embedding a baseline metric uses (:class:`FeatureSpec`), resolved once, and the embedding itself.

``"inception"`` is FID's InceptionV3 (:mod:`~scenemetrics.baselines.inception`), ``"clip"`` and ``"dinov2"`` the
``transformers`` models of :mod:`~scenemetrics.baselines.transformers_models`. A metric keeps only the spec (names
and paths: it pickles and moves between processes for free); the network comes from a cache shared by every metric,
on the device of the images, and is never part of a metric's ``state_dict``.

Example:
    >>> FeatureSpec("dinov2", "/models/dinov2").name
    'dinov2'
    >>> FeatureSpec("vgg")
    Traceback (most recent call last):
    ...
    ValueError: `features` must be one of inception, clip, dinov2; received 'vgg'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from scenemetrics.checks import check_positive_int
from scenemetrics.image import check_images

__all__ = ["FEATURES", "FeatureSpec", "embed", "joint_features"]

FEATURES = ("inception", "clip", "dinov2")
"""The image embeddings the baselines can use."""

_CHUNK = 32  # images per network call: bounds the activation memory of one update


@dataclass(frozen=True)
class FeatureSpec:
    """One image embedding: which network and where its weights are.

    Attributes:
        name: ``"inception"``, ``"clip"`` or ``"dinov2"``.
        weights: ``"inception"``: the checkpoint file or a folder holding it (``None``: the hub cache, then a verified
            download); ``"clip"`` / ``"dinov2"``: a ``save_pretrained`` folder or a Hugging Face repo id (``None``:
            the catalogue's model).
        revision: Hugging Face revision (``"clip"`` / ``"dinov2"`` only).
        antialias: ``"inception"`` only: antialiased resize to 299 px (torchmetrics' default) or torch-fidelity's
            TensorFlow-1-compatible one.
        image_size: ``"dinov2"`` only: the side images are resized to (FD-DINOv2 and dgm-eval: 224; a multiple of
            the model's patch size).
    """

    name: str
    weights: str | None = None
    revision: str | None = None
    antialias: bool = True
    image_size: int | None = None

    def __post_init__(self) -> None:
        if self.name not in FEATURES:
            raise ValueError(f"`features` must be one of {', '.join(FEATURES)}; received {self.name!r}")
        if self.weights is not None:
            object.__setattr__(self, "weights", os.fspath(self.weights))
        if self.revision is not None and self.name == "inception":
            raise ValueError("`revision` is a Hugging Face revision: it applies to the clip and dinov2 features only")
        object.__setattr__(self, "antialias", bool(self.antialias))
        if self.image_size is not None:
            if self.name != "dinov2":
                raise ValueError("`image_size` applies to the dinov2 features only (CLIP and Inception fix their own)")
            object.__setattr__(self, "image_size", check_positive_int(self.image_size, "image_size"))

    def resolved(self) -> FeatureSpec:
        """The spec with ``weights`` replaced by the local file or folder it resolves to (found or downloaded now,
        so that a missing file fails when the metric is built, not at its first update).

        Raises:
            scenemetrics.hub.WeightsNotFoundError: not found, offline or the download failed.
            ValueError: a Hugging Face folder of another kind of model.
        """
        if self.name == "inception":
            from scenemetrics.baselines.inception import resolve_inception

            return replace(self, weights=os.fspath(resolve_inception(self.weights)))
        from scenemetrics.baselines.transformers_models import resolve_model

        return replace(self, weights=os.fspath(resolve_model(self.name, self.weights, revision=self.revision)))

    @property
    def dim(self) -> int:
        """The embedding size (read from the model's config; nothing is loaded). Call on a :meth:`resolved` spec."""
        if self.name == "inception":
            from scenemetrics.baselines.inception import INCEPTION_DIM

            return INCEPTION_DIM
        from scenemetrics.baselines.transformers_models import model_dim

        return model_dim(self.name, self.weights or "")

    def network(self, device: torch.device | str) -> torch.nn.Module:
        """The frozen embedder on ``device`` (cached and shared)."""
        if self.name == "inception":
            from scenemetrics.baselines.inception import load_inception

            return load_inception(self.weights, antialias=self.antialias, device=device)
        from scenemetrics.baselines.transformers_models import load_clip, load_dinov2

        if self.name == "clip":
            return load_clip(self.weights, revision=self.revision, device=device)
        return load_dinov2(self.weights, revision=self.revision, device=device, image_size=self.image_size)


def embed(spec: FeatureSpec, images: Tensor, name: str = "images") -> Tensor:
    """Embed an image batch with ``spec``'s network, on the images' device.

    Args:
        spec: a resolved :class:`FeatureSpec`.
        images: ``(B, 3, H, W)`` or ``(3, H, W)``, float in [0, 1] or uint8 (:func:`scenemetrics.image.check_images`).
        name: the argument's name, for errors.

    Returns:
        ``(B, D)`` float32 embeddings on the images' device (``(0, D)`` for an empty batch, without running the
        network).

    Raises:
        ValueError: images that break the input rule (named by ``name``).
    """
    images = check_images(images, name)
    if images.shape[0] == 0:
        return images.new_zeros((0, spec.dim))
    net = spec.network(images.device)
    with torch.no_grad():
        return torch.cat([net(images[i : i + _CHUNK]) for i in range(0, images.shape[0], _CHUNK)])


def joint_features(source: Tensor, image: Tensor) -> Tensor:
    """The joint embedding of a (source view, image) pair: ``[φ(source), φ(image)]`` concatenated per pair.

    This is the pairing of the "joint" distribution metrics (JFID, JCMMD, JFD-DINOv2 in PRISM's comparison): the
    distribution of (source, render) pairs is compared with that of (source, ground truth) pairs, so a render that
    is realistic but unrelated to its source view moves the joint distribution even when the marginal one does not.
    Both halves come from the same network, unweighted (the conditional embedding of Fréchet Joint Distance is
    reweighted because it comes from another encoder; here it does not).

    Example:
        >>> joint_features(torch.ones(2, 3), torch.zeros(2, 3)).tolist()
        [[1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]]
    """
    if source.shape != image.shape:
        raise ValueError(
            f"joint features pair each image with its source view: `source` {tuple(source.shape)} and `image` "
            f"{tuple(image.shape)} must have the same shape"
        )
    return torch.cat([source, image], dim=1)
