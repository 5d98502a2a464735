"""Training callbacks: log scenemetrics scores and metric maps while a 3DGS / NeRF model trains.

* :class:`SceneMetricsCallback` (Lightning; ``pip install "scenemetrics[lightning]"``);
* :mod:`scenemetrics.callbacks.nerfstudio`: ``SceneMetricsTrainingCallback``, ``add_scenemetrics`` and the method
  plugins ``nerfacto-scenemetrics`` / ``splatfacto-scenemetrics`` (``pip install "scenemetrics[nerfstudio]"``);
* :class:`RenderedView` and :class:`SceneRenderable`, the view types both share.

Names resolve lazily: ``import scenemetrics.callbacks`` imports neither Lightning nor nerfstudio.

Example:
    >>> import scenemetrics.callbacks as cb
    >>> cb.RenderedView._fields
    ('render', 'target', 'extras')
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "RenderedView": "scenemetrics.callbacks.views",
    "SceneRenderable": "scenemetrics.callbacks.views",
    "MetricRunner": "scenemetrics.callbacks.evaluation",
    "EvaluationResult": "scenemetrics.callbacks.evaluation",
    "SceneMetricsCallback": "scenemetrics.callbacks.lightning",
}
_SUBMODULES = ("nerfstudio", "lightning", "logging", "evaluation", "views")

__all__ = sorted([*_NAMES, "nerfstudio"])


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"scenemetrics.callbacks.{name}")
    raise AttributeError(f"module 'scenemetrics.callbacks' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
