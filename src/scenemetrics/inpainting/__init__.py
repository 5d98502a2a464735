"""PuzzleSim-guided progressive artifact inpainting (PuzzleSim paper, Hermann et al., ICCV 2025, Sec. 5).

:func:`puzzle_inpaint` finds implausible pixels with PuzzleSim against the training views, inpaints candidate masks
with a backend (:class:`LaMaInpainter`, the paper's; :class:`OpenCVInpainter`, offline; :class:`DiffusersInpainter`,
optional) and keeps only changes that raise the PuzzleSim quality. Names are imported lazily; OpenCV and diffusers
only when their backend is first called.

Example:
    >>> import scenemetrics as sm
    >>> sm.inpainting.OpenCVInpainter(method="ns")
    OpenCVInpainter(method='ns', radius=3)
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_NAMES = {
    "puzzle_inpaint": "scenemetrics.inpainting.loop",
    "InpaintResult": "scenemetrics.inpainting.loop",
    "candidate_masks": "scenemetrics.inpainting.loop",
    "candidate_thresholds": "scenemetrics.inpainting.loop",
    "eq7_thresholds": "scenemetrics.inpainting.loop",
    "Inpainter": "scenemetrics.inpainting.inpainters",
    "OpenCVInpainter": "scenemetrics.inpainting.inpainters",
    "LaMaInpainter": "scenemetrics.inpainting.inpainters",
    "DiffusersInpainter": "scenemetrics.inpainting.inpainters",
    "pad_symmetric": "scenemetrics.inpainting.inpainters",
}


_all, __getattr__, __dir__ = lazy_exports(__name__, _NAMES)
__all__ = _all
