"""Wireframe metrics for structured 3D reconstruction (Langerman et al., ICCV 2025, arXiv 2503.08208).

Every metric of the paper's Table 2 as a function (prediction first, ground truth second; CPU float64), the
``WireframeMetrics`` torchmetrics class, the property "unit tests" of Table 2, the preference analysis tools of
Sec. 4 and a synthetic house generator. Names are imported lazily; trimesh/manifold3d (the ``[hss]`` extra) are
only imported by the HSS-2025 IoU.

One module per metric family: ``corners`` (corner P/R/F1, offset), ``edges`` (edge P/R/F1), ``edit_distance``
(WED), ``spectral``, ``tubes`` (IoU, Jaccard, HSS), ``sampled`` (Hausdorff, Chamfer), ``matching`` (one-to-one
distances); ``segments`` holds the segment geometry they share. Every function takes the prediction first and the
ground truth (GT) second, validates both (:func:`~scenemetrics.wireframe.types.validate_wireframe`) and computes on
the CPU in float64 numpy/scipy; torch tensors are accepted (``.detach().cpu()``) and nothing here is differentiable.
Scalar metrics return a Python ``float``; P/R/F1 functions return :class:`~scenemetrics.wireframe.types.PRF`.
Distances between vertex sets are always ``scipy.spatial.distance.cdist`` (never the matmul-based ``torch.cdist``),
assignments use ``scipy.optimize.linear_sum_assignment`` on the full (unthresholded) matrix, and segments are
processed in a canonical orientation (lexicographically smaller endpoint first) wherever the result could otherwise
depend on how an edge is stored.

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
    "scenemetrics.wireframe.options": ("WED_VARIANTS",),
    "scenemetrics.wireframe.segments": ("segment_hausdorff_matrix",),
    "scenemetrics.wireframe.corners": ("corner_offset", "corner_prf"),
    "scenemetrics.wireframe.edges": ("edge_prf",),
    "scenemetrics.wireframe.edit_distance": ("wed",),
    "scenemetrics.wireframe.spectral": ("laplacian_spectrum", "spectral_distance"),
    "scenemetrics.wireframe.tubes": ("hss", "iou", "jaccard_distance"),
    "scenemetrics.wireframe.sampled": ("chamfer_distance", "hausdorff_distance", "sample_edges"),
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
    "segments",
    "corners",
    "edges",
    "edit_distance",
    "spectral",
    "tubes",
    "sampled",
    "matching",
    "registry",
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
