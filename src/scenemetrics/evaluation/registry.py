"""The metric registry under its former path: :mod:`scenemetrics.registry` (every name, the same objects).

``scenemetrics eval`` looks metrics up in the one registry every integration shares; this module keeps the names
plugins import from here working.

Example:
    >>> from scenemetrics.evaluation.registry import register_metric
    >>> from scenemetrics import registry
    >>> register_metric is registry.register_metric
    True
"""

from __future__ import annotations

from scenemetrics.builtin_metrics import lpips_checkpoint
from scenemetrics.registry import (
    ENTRY_POINT_GROUP,
    INPUTS,
    MetricAdapter,
    MetricConfig,
    MetricEntry,
    ViewItem,
    adapter_for,
    default_arguments,
    get_metric,
    load_plugins,
    metric_kind,
    metric_names,
    register_metric,
    resolve_metrics,
    unregister_metric,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "INPUTS",
    "MetricAdapter",
    "MetricConfig",
    "MetricEntry",
    "ViewItem",
    "adapter_for",
    "default_arguments",
    "get_metric",
    "load_plugins",
    "lpips_checkpoint",
    "metric_kind",
    "metric_names",
    "register_metric",
    "resolve_metrics",
    "unregister_metric",
]
