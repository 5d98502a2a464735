"""The baselines the papers compare their metrics with, as metrics of their own: distribution distances between
renders and references (FID, KID, CMMD, FD-DINOv2), PRISM's "joint" variants over (source view, image) pairs (JFID,
JCMMD, JFD-DINOv2), and the embedding similarity of a render with its reference (CLIP-S, DINO similarity).

Which package computes what:

* the FID InceptionV3 is torchmetrics' ``NoTrainInceptionV3`` (torch-fidelity's port of the TensorFlow graph), its
  weights resolved, verified and read with ``weights_only=True`` by :mod:`scenemetrics.hub`;
* CLIP and DINOv2 are ``transformers``' ``CLIPModel`` and ``Dinov2Model``, from a local folder or the Hugging Face
  cache (:func:`scenemetrics.hub.resolve_hf_model`);
* KID's polynomial MMD is torchmetrics' ``poly_mmd``; CMMD's RBF MMD is the core :func:`scenemetrics.stats.mmd_rbf`
  (shared with PRISM); the Fréchet distance and the cosine are written here from their definitions and tested
  against torchmetrics and direct computations.

The registered names (``scenemetrics eval --metrics``, the callbacks, ``scenemetrics agreement``) are ``fid``,
``kid``, ``cmmd``, ``fd_dinov2``, ``jfid``, ``jcmmd``, ``jfd_dinov2``, ``clip_s``, ``clip_s_src``, ``dino_sim`` and
``dino_sim_src``. Names are imported lazily (``import scenemetrics.baselines`` imports no network package); the
networks need the ``[baselines]`` extra (torch-fidelity, transformers, huggingface_hub, safetensors).

Example:
    >>> import torch
    >>> from scenemetrics import baselines
    >>> g = torch.Generator().manual_seed(0)
    >>> real = torch.randn(500, 3, generator=g, dtype=torch.float64)
    >>> round(float(baselines.frechet_distance(real + 1.0, real)), 6)  # on embeddings: a shift by 1 in 3 dimensions
    3.0
    >>> clip_s = baselines.EmbeddingSimilarity("clip")  # doctest: +SKIP
    >>> clip_s.update(renders, ground_truth)  # doctest: +SKIP
    >>> clip_s.compute()  # doctest: +SKIP
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "CMMD_SCALE": "functional",
    "CMMD_SIGMA": "functional",
    "cmmd": "functional",
    "cosine_similarity": "functional",
    "frechet_distance": "functional",
    "frechet_distance_from_moments": "functional",
    "kernel_distance": "functional",
    "FEATURES": "features",
    "FeatureSpec": "features",
    "embed": "features",
    "joint_features": "features",
    "INCEPTION_DIM": "inception",
    "InceptionFeatures": "inception",
    "inception_layout": "inception",
    "load_inception": "inception",
    "resolve_inception": "inception",
    "CLIPFeatures": "transformers_models",
    "DINOv2Features": "transformers_models",
    "load_clip": "transformers_models",
    "load_dinov2": "transformers_models",
    "CMMD": "metric",
    "EmbeddingSimilarity": "metric",
    "FrechetDistance": "metric",
    "JointCMMD": "metric",
    "JointFrechetDistance": "metric",
    "KernelDistance": "metric",
    "random_clip_folder": "random",
    "random_dinov2_folder": "random",
    "random_inception_checkpoint": "random",
}
_SUBMODULES = ("functional", "features", "inception", "transformers_models", "metric", "random")

_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
__all__ = [name for name in _all if name in _EXPORTS]
