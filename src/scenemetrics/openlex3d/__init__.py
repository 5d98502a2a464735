"""OpenLex3D: open-vocabulary 3D segmentation metrics (Top-N category frequency, set ranking, retrieval AP).

Kassab et al., "OpenLex3D: A Tiered Benchmark for Open-Vocabulary 3D Scene Representations" (arXiv 2503.19764).
Names are imported lazily, except :func:`set_ranking`: the function shares its name with the submodule
``set_ranking.py``, so it is bound eagerly (otherwise importing the submodule would shadow it). Import that
module's other names with ``from scenemetrics.openlex3d.set_ranking import ...``.

Example:
    >>> from scenemetrics import openlex3d as ol3
    >>> ol3.CATEGORIES[:3], ol3.normalize_label("arm chair")
    (('synonyms', 'depictions', 'vis_sim'), 'armchair')
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "categories": (
        "CATEGORIES",
        "EXCLUDED_LABELS",
        "Categories",
        "ObjectLabels",
        "load_categories",
        "normalize_label",
    ),
    "io": (
        "load_gt_cloud",
        "load_prediction_folder",
        "load_prompt_list",
        "load_query_mapping",
        "read_point_cloud",
        "transfer_labels",
    ),
    "text": ("encode_prompts",),
    "geometry": ("downsample_predictions",),
    "topn": ("TopNResult", "topn_frequency"),
    "set_ranking": ("SCORE_KEYS", "SetRankingResult", "set_ranking"),
    "segmentation": ("SegmentationResult", "evaluate_segmentation"),
    "retrieval": (
        "THRESHOLDS",
        "RetrievalQuery",
        "RetrievalResult",
        "generate_queries",
        "pooled_retrieval_ap",
        "retrieval_ap",
    ),
    "metric": ("OpenLex3DRetrieval", "OpenLex3DSetRanking", "OpenLex3DTopN"),
    "viz": ("CATEGORY_COLORS", "colorize_categories", "render_topdown", "save_category_ply", "save_category_png"),
}
from .set_ranking import set_ranking  # noqa: E402, F401  (see the module docstring)

_WHERE = {name: module for module, names in _NAMES.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'scenemetrics.openlex3d' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"scenemetrics.openlex3d.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
