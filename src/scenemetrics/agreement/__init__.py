"""Agreement of metrics with people: correlations with mean opinion scores, pairwise-preference agreement, human
artifact-map agreement, discriminability (AUC), bootstrap confidence intervals and ranking stability, plus one
protocol preset per paper of this library and the papers' published numbers to compare with.

Everything runs on the CPU in float64 with numpy/scipy; torch tensors are accepted and converted. Names are
imported lazily, so ``import scenemetrics`` does not load this room.

Example:
    >>> from scenemetrics import agreement
    >>> agreement.auc([0.9, 0.8], [0.1, 0.8])
    0.875
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "discrim": ("Separation", "auc", "linear_probe_auc", "separation"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

_SUBMODULES = ("discrim",)

_all, __getattr__, __dir__ = lazy_exports(__name__, _WHERE, _SUBMODULES)
__all__ = _all
