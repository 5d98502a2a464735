"""Training callbacks: log scenemetrics scores and metric maps while a 3DGS / NeRF model trains.

* :class:`SceneMetricsCallback` (Lightning; ``pip install "scenemetrics[lightning]"``);
* :class:`SceneMetricsMonitor`, the same evaluation for any other training loop (gsplat's ``simple_trainer.py``, the
  original 3DGS ``train.py``): ``monitor.maybe_log(step, render_fn)``;
* :mod:`scenemetrics.callbacks.nerfstudio`: ``SceneMetricsTrainingCallback``, ``add_scenemetrics`` and the method
  plugins ``nerfacto-scenemetrics`` / ``splatfacto-scenemetrics`` (``pip install "scenemetrics[nerfstudio]"``);
* :class:`RenderedView` and :class:`SceneRenderable`, the view types both share;
* :class:`BackgroundEvaluationError`: a failure of an evaluation run with ``background=True``, raised in the training
  thread at its next call.

Names resolve lazily: ``import scenemetrics.callbacks`` imports neither Lightning nor nerfstudio.

Example:
    >>> import scenemetrics.callbacks as cb
    >>> cb.RenderedView._fields
    ('render', 'target', 'extras')
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_NAMES = {
    "RenderedView": "scenemetrics.callbacks.views",
    "SceneRenderable": "scenemetrics.callbacks.views",
    "MetricRunner": "scenemetrics.callbacks.evaluation",
    "EvaluationResult": "scenemetrics.callbacks.evaluation",
    "SceneMetricsCallback": "scenemetrics.callbacks.lightning",
    "SceneMetricsMonitor": "scenemetrics.callbacks.monitor",
    "BackgroundEvaluationError": "scenemetrics.callbacks.background",
}
_SUBMODULES = ("nerfstudio", "lightning", "logging", "evaluation", "pictures", "views", "monitor", "background")


_, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _SUBMODULES)
__all__ = sorted([*_NAMES, "nerfstudio"])
