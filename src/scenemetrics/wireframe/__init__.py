"""Wireframe metrics for structured 3D reconstruction (Langerman et al., ICCV 2025, arXiv 2503.08208).

Every metric of the paper's Table 2 as a function (prediction first, ground truth second; CPU float64), the
``WireframeMetrics`` torchmetrics class, the property "unit tests" of Table 2, the preference analysis tools of
Sec. 4 and a synthetic house generator. Names are imported lazily; trimesh/manifold3d (the ``[hss]`` extra) are
only imported by the HSS-2025 IoU.

Example:
    >>> import scenemetrics as sm
    >>> v, e = [[0, 0, 0], [1, 0, 0], [1, 1, 0]], [[0, 1], [1, 2]]
    >>> sm.wireframe.edge_prf(v, e, v, e, threshold=0.1).f1
    1.0
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "scenemetrics.wireframe.types": (
        "PRF",
        "HSSResult",
        "Wireframe",
        "as_wireframe",
        "clean_wireframe",
        "validate_vertices",
        "validate_wireframe",
    ),
    "scenemetrics.wireframe.scores": (
        "WED_VARIANTS",
        "chamfer_distance",
        "corner_offset",
        "corner_prf",
        "edge_prf",
        "hausdorff_distance",
        "hss",
        "iou",
        "jaccard_distance",
        "laplacian_spectrum",
        "sample_edges",
        "segment_hausdorff_matrix",
        "spectral_distance",
        "wed",
    ),
    "scenemetrics.wireframe.matching": (
        "corner_chamfer",
        "corner_matching_distance",
        "edge_matching_distance",
        "matched_distances",
    ),
    "scenemetrics.wireframe.registry": (
        "METRIC_NAMES",
        "TABLE2_COLUMNS",
        "ScalarMetric",
        "make_metric",
        "metric_option_names",
    ),
    "scenemetrics.wireframe.properties": (
        "PASS_FRACTION",
        "PROPERTY_TESTS",
        "PropertyTable",
        "format_property_table",
        "property_suite",
        "property_table",
    ),
    "scenemetrics.wireframe.ranking": (
        "BTResult",
        "agreement",
        "agreement_matrix",
        "bradley_terry",
        "elo",
        "implied_win_rates",
        "preferences_from_scores",
        "quality_factor",
        "win_rate_matrix",
        "win_rates",
    ),
    "scenemetrics.wireframe.synthetic": ("synthetic_house", "synthetic_houses"),
    "scenemetrics.wireframe.formats": (
        "building3d_normalize",
        "match_by_order_id",
        "read_obj_wireframe",
        "read_s23dr",
        "read_xyz_points",
    ),
    "scenemetrics.wireframe.metric": ("DEFAULT_METRICS", "WireframeMetrics"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


_SUBMODULES = (
    "types",
    "options",
    "scores",
    "matching",
    "registry",
    "metrics",
    "hss2025",
    "properties",
    "ranking",
    "synthetic",
    "metric",
    "formats",
    "cli",
)


_all, __getattr__, __dir__ = lazy_exports(__name__, _WHERE, _SUBMODULES)
__all__ = _all
