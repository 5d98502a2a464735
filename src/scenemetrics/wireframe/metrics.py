"""Former home of the wireframe metric functions and their registry, kept so that old imports keep working.

The functions are in :mod:`scenemetrics.wireframe.scores`, the registry (:func:`make_metric`, :data:`METRIC_NAMES`)
in :mod:`scenemetrics.wireframe.registry`; every public name is also importable from :mod:`scenemetrics.wireframe`.

Example:
    >>> from scenemetrics.wireframe.metrics import corner_prf, make_metric
    >>> from scenemetrics.wireframe import scores
    >>> corner_prf is scores.corner_prf
    True
"""

from __future__ import annotations

from scenemetrics.wireframe.registry import (
    METRIC_NAMES,
    TABLE2_COLUMNS,
    ScalarMetric,
    make_metric,
    metric_option_names,
)
from scenemetrics.wireframe.scores import (
    WED_VARIANTS,
    chamfer_distance,
    corner_offset,
    corner_prf,
    edge_prf,
    hausdorff_distance,
    hss,
    iou,
    jaccard_distance,
    laplacian_spectrum,
    sample_edges,
    segment_hausdorff_matrix,
    spectral_distance,
    wed,
)

__all__ = [
    "METRIC_NAMES",
    "TABLE2_COLUMNS",
    "WED_VARIANTS",
    "ScalarMetric",
    "chamfer_distance",
    "corner_offset",
    "corner_prf",
    "edge_prf",
    "hausdorff_distance",
    "hss",
    "iou",
    "jaccard_distance",
    "laplacian_spectrum",
    "make_metric",
    "metric_option_names",
    "sample_edges",
    "segment_hausdorff_matrix",
    "spectral_distance",
    "wed",
]
