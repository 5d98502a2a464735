"""PRISM: task-aware novel-view-synthesis quality from Zero123 diffusion features (Stern, Sobol & Litany, 3DV 2026).

A triplet (source view, relative pose, generated target view) is embedded by one conditioned Zero123-XL denoising
step (:class:`Zero123Features`: nine U-Net blocks pooled, 8320-d) and a contrastively trained
:class:`ProjectionHead` (2048-d unit vectors). Two scores use the embedding:

* :class:`PRISMDistance` (reference-based): ``0.5 * ||e_pred - e_gt||`` in [0, 1];
* :class:`PRISMMMD` (reference-free): unbiased RBF MMD² against an anchor set of ground-truth triplets.

The authors released no code, head or data, so scores from this implementation are **not the paper's numbers**:
train a head on your own triplets (:func:`build_viewmatch_dataset` makes them from posed views with depth,
:func:`train_head` / ``scenemetrics prism train-head`` trains or fine-tunes the head) or use ``head=None``
(raw, untrained diffusion features). Names resolve lazily: ``import scenemetrics.prism`` needs only the core
dependencies; loading Zero123 needs the ``[prism]`` extra and the trainer the ``[lightning]`` extra.

Example:
    >>> import torch
    >>> from scenemetrics import prism
    >>> prism.BLOCK_NAMES[4], prism.DEFAULT_MODEL
    ('mid', 'ashawkey/zero123-xl-diffusers')
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_NAMES = {
    "Zero123Features": "features",
    "BLOCK_NAMES": "features",
    "block_channels": "features",
    "load_view": "features",
    "prism_embed": "features",
    "prism_distance": "features",
    "DEFAULT_MODEL": "zero123",
    "camera_pose": "zero123",
    "encode_pose": "zero123",
    "relative_pose": "zero123",
    "spherical_from_c2w": "zero123",
    "ProjectionHead": "head",
    "save_anchors": "anchors",
    "load_anchors": "anchors",
    "PRISMDistance": "metric",
    "PRISMMMD": "metric",
    "PRISMLoss": "loss",
    "build_feature_cache": "data",
    "read_feature_cache": "data",
    "mask_weight": "data",
    "enumerate_triplets": "data",
    "anchor_embeddings_from_cache": "data",
    "PRISMHeadModule": "training",
    "PRISMFeatureDataModule": "training",
    "train_head": "training",
    "evaluate_head": "training",
    "TrainHeadResult": "training",
    "random_checkpoint": "random",
    # ViewMatch-style training data (scenemetrics.prism.viewmatch)
    "build_viewmatch_dataset": "scenemetrics.prism.viewmatch.builder",
    "BuildConfig": "scenemetrics.prism.viewmatch.config",
    "BuildReport": "scenemetrics.prism.viewmatch.builder",
    "ViewSet": "scenemetrics.prism.viewmatch.views",
    "Camera": "scenemetrics.prism.viewmatch.views",
    "read_transforms": "scenemetrics.prism.viewmatch.views",
    "pair_masks": "scenemetrics.prism.viewmatch.masks",
    "head_discriminability": "scenemetrics.prism.viewmatch.evaluate",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, submodules=("viewmatch",))
__all__ = _all
