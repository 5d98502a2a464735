"""``scenemetrics eval``: every metric of the package (and torchmetrics' PSNR/SSIM/LPIPS) over whole result trees.

One command scores ``<root>/<method>/<scene>/`` folders (own layout, NerfBaselines predictions, ns-render output),
shards the (method, scene) units over processes with Lightning Fabric, commits each finished unit atomically so a
rerun resumes, and writes a leaderboard (CSV/JSON) and a static HTML report. ``run_sweep`` (``scenemetrics agreement
sweep``) runs controlled-degradation sweeps of registered metrics the same resumable way. Names are imported lazily.

Example:
    >>> from scenemetrics import evaluation
    >>> evaluation.EvalConfig(root="runs", out="results").metrics
    ('psnr', 'ssim', 'lpips', 'puzzlesim')
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "LAYOUTS": "layout",
    "CameraEntry": "layout",
    "Unit": "layout",
    "View": "layout",
    "detect_layout": "layout",
    "discover_units": "layout",
    "read_cameras": "layout",
    "EvalConfig": "config",
    "EvalSummary": "config",
    "pooled_values": "states",
    "read_records": "records",
    "run_evaluation": "runner",
    "format_value": "report",
    "SweepConfig": "sweep",
    "SweepResult": "sweep",
    "run_sweep": "sweep",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = _all
