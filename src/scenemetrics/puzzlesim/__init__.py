"""PuzzleSim (Hermann, Condor, Didyk, ICCV 2025): per-pixel artifact maps of novel views from unaligned references.

Example:
    >>> import os, tempfile, torch
    >>> import scenemetrics as sm
    >>> w = sm.puzzlesim.random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
    >>> refs = torch.rand(3, 3, 64, 64)
    >>> sm.puzzlesim.puzzle_similarity_map(torch.rand(1, 3, 64, 64), refs, weights_path=w).shape
    torch.Size([1, 64, 64])
"""

from scenemetrics.puzzlesim.backbone import BACKBONES, BackboneSpec, load_backbone, random_checkpoint
from scenemetrics.puzzlesim.functional import (
    best_match_similarity,
    puzzle_similarity,
    puzzle_similarity_map,
    soft_best_match_similarity,
)
from scenemetrics.puzzlesim.memory import DEFAULT_LAYER_WEIGHTS, DEFAULT_LAYERS, PuzzleSimMemory
from scenemetrics.puzzlesim.metric import PuzzleSim

__all__ = [
    "BACKBONES",
    "DEFAULT_LAYERS",
    "DEFAULT_LAYER_WEIGHTS",
    "BackboneSpec",
    "PuzzleSim",
    "PuzzleSimMemory",
    "best_match_similarity",
    "load_backbone",
    "puzzle_similarity",
    "puzzle_similarity_map",
    "random_checkpoint",
    "soft_best_match_similarity",
]
