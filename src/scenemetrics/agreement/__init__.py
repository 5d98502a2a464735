"""Agreement of metrics with people: correlations with mean opinion scores, pairwise-preference agreement, human
artifact-map agreement, discriminability (AUC), bootstrap confidence intervals and ranking stability, the wireframe
study's corrupted ground truths, controlled image degradations and sweep statistics (does a metric get worse as a
view degrades?), one protocol preset per paper of this library and the papers' published numbers.

The statistics run on the CPU in float64 with numpy/scipy (torch tensors are accepted and converted); the image
degradations run in torch on the images' device. Names are imported lazily, so ``import scenemetrics`` does not load
this room (nor scipy).

Example:
    >>> from scenemetrics import agreement
    >>> agreement.auc([0.9, 0.8], [0.1, 0.8])
    0.875
    >>> callable(agreement.corrupt)
    True
    >>> round(agreement.srcc([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 4)
    0.8208
"""

from __future__ import annotations

from scenemetrics._lazy import keep_names_over_submodules, lazy_exports

_EXPORTS = {
    "stats": (
        "CorrelationResult",
        "Logistic5Fit",
        "correlations",
        "fit_logistic5",
        "krcc",
        "logistic5",
        "metric_correlation_matrix",
        "plcc",
        "rmse",
        "srcc",
    ),
    "bootstrap": ("BootstrapCI", "StabilityResult", "bootstrap_ci", "kendall_stability"),
    "pairwise": (
        "PairwiseAgreement",
        "easy_pair_accuracy",
        "majority_error_probability",
        "majority_vote",
        "pairwise_agreement",
        "rank_concordance",
        "rater_agreement",
        "self_consistency",
        "vote_correlation",
    ),
    "maps": ("MapAgreement", "human_map_from_masks", "map_agreement"),
    "discrim": ("Separation", "auc", "linear_probe_auc", "separation"),
    "corrupt": ("CORRUPTION_KINDS", "CORRUPTION_LEVELS", "CORRUPTION_PARAMS", "corrupt", "corruption_pool"),
    "degrade": (
        "DEGRADATIONS",
        "DEGRADATION_PARAMS",
        "MISALIGNMENT_ANGLES",
        "MisalignedCameras",
        "SweepStatistics",
        "blur_objects",
        "degrade",
        "gaussian_blur",
        "gaussian_noise",
        "hue_shift",
        "misaligned_cameras",
        "salt_and_pepper",
        "sweep_statistics",
    ),
    "protocols": ("PROTOCOLS", "Protocol", "agreement_table", "align_mos"),
    "targets": ("PAPER_TARGETS", "compare_to_paper", "paper_keys"),
    "io": ("Comparisons", "MetricScores", "read_comparisons", "read_human", "read_maps", "read_scores"),
    "viz": ("ranking_plot", "scatter_plot", "stability_plot", "sweep_plot"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

# "corrupt" and "degrade" are the functions; their modules are reached with ``import scenemetrics.agreement.corrupt``
# and ``import scenemetrics.agreement.degrade``
_SUBMODULES = ("stats", "bootstrap", "pairwise", "maps", "discrim", "protocols", "targets", "io", "viz", "cli")

_all, __getattr__, __dir__ = lazy_exports(__name__, _WHERE, _SUBMODULES)
__all__ = _all


keep_names_over_submodules(__name__, _WHERE)  # the functions ``corrupt``/``degrade`` win over their modules
