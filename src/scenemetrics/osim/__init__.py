"""OSIM, Objectness SIMilarity (Uchida et al., ICCV 2025 workshops): object-level fidelity of renders.

YOLOX (pure PyTorch, Megvii checkpoints) detects objects on the reference views; each object is scored by the
cosine similarity of reference and render features over its box, and objects are pooled per class over the
whole scene with GBVS saliency weights. Names are imported lazily.

Example:
    >>> import scenemetrics as sm
    >>> sm.osim.YOLOX_VARIANTS[-1]
    'yolox_x'
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "YOLOX": "scenemetrics.osim.yolox",
    "YOLOX_VARIANTS": "scenemetrics.osim.checkpoints",
    "COCO_CLASSES": "scenemetrics.osim.yolox",
    "FEATURE_LAYERS": "scenemetrics.osim.yolox",
    "YOLOXOutput": "scenemetrics.osim.boxes",
    "Detections": "scenemetrics.osim.boxes",
    "Letterbox": "scenemetrics.osim.boxes",
    "letterbox": "scenemetrics.osim.boxes",
    "decode_outputs": "scenemetrics.osim.boxes",
    "postprocess": "scenemetrics.osim.boxes",
    "random_checkpoint": "scenemetrics.osim.random",
    "osim": "scenemetrics.osim.functional",
    "OSIMResult": "scenemetrics.osim.functional",
    "scene_score": "scenemetrics.osim.functional",
    "box_to_span": "scenemetrics.osim.functional",
    "load_detector": "scenemetrics.osim.detector",
    "FrozenDetector": "scenemetrics.osim.detector",
    "gbvs": "scenemetrics.osim.saliency",
    "OSIM": "scenemetrics.osim.metric",
    "OSIMPatches": "scenemetrics.osim.metric",
    "PatchScore": "scenemetrics.osim.patches",
    "embedding_score": "scenemetrics.osim.patches",
    "osim_patches": "scenemetrics.osim.patches",
    "psnr_score": "scenemetrics.osim.patches",
    "UNLABELLED": "scenemetrics.osim.regions",
    "COCO_POOLS": "scenemetrics.osim.regions",
    "BoxesFile": "scenemetrics.osim.regions",
    "read_boxes_file": "scenemetrics.osim.regions",
    "pool_names": "scenemetrics.osim.regions",
    "OSIMLoss": "scenemetrics.osim.loss",
    "draw_low_objects": "scenemetrics.osim.viz",
    "low_objects_picture": "scenemetrics.osim.viz",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = _all
