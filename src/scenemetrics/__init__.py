"""scenemetrics: perceptual and structural metrics for 3D reconstruction and novel view synthesis.

Public names are imported lazily, so ``import scenemetrics`` stays cheap (no torch-heavy import at top level) and
an optional extra is only needed when its room is used.

Example:
    >>> import scenemetrics as sm
    >>> sm.__version__
    '0.1.0'
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "losses",
    "callbacks",
    "inpainting",
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
}

__all__ = ["__version__", *_SUBMODULES, *_CLASSES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"scenemetrics.{name}")
    if name in _CLASSES:
        return getattr(importlib.import_module(_CLASSES[name]), name)
    raise AttributeError(f"module 'scenemetrics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
