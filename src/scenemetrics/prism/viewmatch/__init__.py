"""ViewMatch-style training data for the PRISM head, built from posed views with depth.

After the PRISM paper's ViewMatch recipe: for every ordered pair of views of an object, visibility / invisibility /
epipolar masks in the target view; plausible completions inpainted on ``invisibility | epipolar`` (positives) and
implausible ones on ``visibility | epipolar`` (negatives); the result is the image dataset that
``scenemetrics prism embed`` and ``scenemetrics prism train-head`` read. Names resolve lazily; masks need the
``[inpaint]`` extra (OpenCV), diffusion inpainting and BLIP captions the ``[prism]`` extra.

Example:
    >>> from scenemetrics.prism import viewmatch
    >>> viewmatch.BuildConfig().seed
    45
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_NAMES = {
    "Camera": "views",
    "ViewSet": "views",
    "MissingDepthError": "views",
    "read_transforms": "views",
    "load_depth": "views",
    "find_objects": "views",
    "PairMasks": "masks",
    "pair_masks": "masks",
    "refine_masks": "masks",
    "ellipse": "masks",
    "visibility_mask": "masks",
    "epipolar_mask": "masks",
    "BuildConfig": "config",
    "PAPER_NEGATIVE_PROMPT": "config",
    "ViewMatchInpainter": "backends",
    "OpenCVBackend": "backends",
    "DiffusersBackend": "backends",
    "FluxControlNetBackend": "backends",
    "BlipCaptioner": "backends",
    "inpaint_composite": "backends",
    "build_viewmatch_dataset": "builder",
    "BuildReport": "builder",
    "head_discriminability": "evaluate",
    "plot_distance_histogram": "evaluate",
    "json_ready": "evaluate",
}

_all, __getattr__, __dir__ = lazy_exports(__name__, _NAMES)
__all__ = _all
