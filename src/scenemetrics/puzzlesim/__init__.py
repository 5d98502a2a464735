"""PuzzleSim (Hermann, Condor, Didyk, ICCV 2025): per-pixel artifact maps of novel views from unaligned references.

Example:
    >>> import os, tempfile, torch
    >>> import scenemetrics as sm
    >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
    >>> refs = torch.rand(3, 3, 64, 64)
    >>> sm.puzzlesim.puzzle_similarity_map(torch.rand(1, 3, 64, 64), refs, weights_path=w).shape
    torch.Size([1, 64, 64])
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

# names resolve on first use, so importing the package (or its ``cli`` module for ``--help``) does not import torch
_EXPORTS = {
    "BACKBONES": "backbone",
    "BackboneSpec": "backbone",
    "load_backbone": "backbone",
    "random_checkpoint": "backbone",
    "best_match_similarity": "functional",
    "puzzle_similarity": "similarity",
    "puzzle_similarity_map": "similarity",
    "soft_best_match_similarity": "functional",
    "DEFAULT_LAYERS": "options",
    "DEFAULT_LAYER_WEIGHTS": "options",
    "PuzzleSimOptions": "options",
    "PuzzleSimMemory": "memory",
    "PuzzleSim": "metric",
    "SoftPuzzleSimLoss": "loss",
    "save_map_pngs": "pictures",
}
_SUBMODULES = (
    "backbone",
    "options",
    "functional",
    "memory",
    "metric",
    "loss",
    "pictures",
    "search",
    "approximate",
    "cli",
)

_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
__all__ = [name for name in _all if name in _EXPORTS]
