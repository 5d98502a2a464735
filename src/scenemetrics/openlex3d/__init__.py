"""OpenLex3D: open-vocabulary 3D segmentation metrics (Top-N category frequency, set ranking, retrieval AP).

Kassab et al., "OpenLex3D: A Tiered Benchmark for Open-Vocabulary 3D Scene Representations" (arXiv 2503.19764).
Names are imported lazily, so ``import scenemetrics.openlex3d`` (and the CLI's ``--help``) stays cheap.

``scenemetrics.openlex3d.set_ranking`` is the *function*, although a submodule ``set_ranking.py`` has the same
name; import that module's other names with ``from scenemetrics.openlex3d.set_ranking import ...``.

Example:
    >>> from scenemetrics import openlex3d as ol3
    >>> ol3.CATEGORIES[:3], ol3.normalize_label("arm chair")
    (('synonyms', 'depictions', 'vis_sim'), 'armchair')
    >>> callable(ol3.set_ranking)
    True
"""

from __future__ import annotations

from scenemetrics._lazy import keep_names_over_submodules, lazy_exports

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
    "datasets": ("BENCHMARK_SCENES", "DATASETS", "load_gt_scene"),
    "text": ("encode_prompts",),
    "geometry": ("downsample_predictions",),
    "topn": ("TIERS", "TOPN_FORMS", "TopNIoUResult", "TopNResult"),
    "set_ranking": ("SCORE_KEYS", "SetRankingResult"),
    "segmentation": ("SegmentationResult", "evaluate_segmentation", "set_ranking", "topn_frequency", "topn_iou"),
    "retrieval": (
        "AP_RANGES",
        "PAPER_THRESHOLDS",
        "THRESHOLDS",
        "RetrievalQuery",
        "RetrievalResult",
        "generate_queries",
        "pooled_retrieval_ap",
        "retrieval_ap",
    ),
    "metric": ("OpenLex3DRetrieval", "OpenLex3DSetRanking", "OpenLex3DTopN"),
    "viz": (
        "CATEGORY_COLORS",
        "category_picture",
        "colorize_categories",
        "render_topdown",
        "save_category_ply",
        "save_category_png",
    ),
}
_WHERE = {name: module for module, names in _NAMES.items() for name in names}


_all, __getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = _all


keep_names_over_submodules(__name__, _WHERE)  # the function ``set_ranking`` wins over the module ``set_ranking.py``
