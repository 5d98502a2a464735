"""scenemetrics: perceptual and structural metrics for 3D reconstruction and novel view synthesis.

Public names are imported lazily, so ``import scenemetrics`` stays cheap (no torch-heavy import at top level) and
an optional extra is only needed when its room is used.

Example:
    >>> import scenemetrics as sm
    >>> sm.__version__
    '0.1.0'
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

__version__ = "0.1.0"

# room sub-packages, importable as attributes: sm.puzzlesim, sm.osim, ...
_SUBMODULES = (
    "hub",
    "image",
    "viz",
    "puzzlesim",
    "osim",
    "prism",
    "wireframe",
    "openlex3d",
    "fullref",
    "baselines",
    "losses",
    "callbacks",
    "inpainting",
    "agreement",
    "cli",
)

# top-level metric classes: name -> room that defines it
_CLASSES = {
    "PuzzleSim": "scenemetrics.puzzlesim",
    "OSIM": "scenemetrics.osim",
    "PRISMDistance": "scenemetrics.prism",
    "PRISMMMD": "scenemetrics.prism",
    "WireframeMetrics": "scenemetrics.wireframe",
    "OpenLex3DTopN": "scenemetrics.openlex3d",
    "OpenLex3DSetRanking": "scenemetrics.openlex3d",
    "OpenLex3DRetrieval": "scenemetrics.openlex3d",
    "SSIMMap": "scenemetrics.fullref",
    "LPIPSMap": "scenemetrics.fullref",
    "AbsErrorMap": "scenemetrics.fullref",
}


_, __getattr__, __dir__ = lazy_exports(__name__, _CLASSES, _SUBMODULES)
__all__ = ["__version__", *_SUBMODULES, *_CLASSES]
