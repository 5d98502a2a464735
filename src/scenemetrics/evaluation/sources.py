"""What other pipelines leave on disk, read as they write it.

* **NerfBaselines** 1.2.x: a predictions folder (``color/``, ``gt-color/``, optional ``mask/``, ``info.json``), as
  ``nerfbaselines render`` writes it; and the output folder of ``nerfbaselines train``, which holds
  ``checkpoint-<step>/``, ``predictions-<step>.tar.gz`` and ``results-<step>.json`` side by side (predictions of
  another split are ``predictions-<step>-<split>.tar.gz``: not test views, never read). ``info.json`` records the
  dataset's ``background_color`` (Blender-like scenes), which NerfBaselines' ``evaluate`` composites RGBA images onto
  before rounding them down to 8 bits.
* **3D Gaussian Splatting** (graphdeco-inria ``train.py`` / ``render.py``): the model folder holds ``cfg_args`` (the
  training arguments, a printed ``argparse.Namespace``) and, per rendered split and iteration,
  ``<split>/ours_<iteration>/{renders,gt}/``. ``train/ours_<iteration>/gt/`` is the ground truth of the training
  cameras (the training images as the model saw them); ``train/ours_<iteration>/renders/`` are renders, never
  references.

Nothing here executes what it reads: ``cfg_args`` is parsed with :mod:`ast` and only literal values are taken.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "cfg_args").write_text("Namespace(eval=True, images='images', white_background=False)")
    >>> read_cfg_args(d)
    {'eval': True, 'images': 'images', 'white_background': False}
    >>> (d / "predictions-5000.tar.gz").touch(); (d / "predictions-30000.tar.gz").touch()
    >>> found = nerfbaselines_predictions(d)
    >>> found.path.name, found.step, found.steps
    ('predictions-30000.tar.gz', 30000, (5000, 30000))
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Found",
    "gaussian_splatting_iterations",
    "nerfbaselines_background",
    "nerfbaselines_predictions",
    "read_cfg_args",
    "read_nerfbaselines_info",
]

_PREDICTIONS_DIR_RE = re.compile(r"^predictions-(\d+)$")
_PREDICTIONS_ARCHIVE_RE = re.compile(r"^predictions-(\d+)\.tar\.gz$")
_OURS_RE = re.compile(r"^ours_(\d+)$")
_CFG_ARGS_MAX_BYTES = 1 << 20
_INFO_MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class Found:
    """What a scene folder holds at one step.

    Attributes:
        path: the folder (or ``.tar.gz`` archive) chosen.
        step: its step or iteration (``None`` for a predictions folder without one).
        steps: every step found, ascending.
        archive: ``path`` is an archive that must be unpacked first.
    """

    path: Path | None
    step: int | None
    steps: tuple[int, ...]
    archive: bool = False

    def describe(self, what: str) -> str:
        """``"predictions-30000.tar.gz (step 30000 of 5000, 30000)"``-style text for messages and records."""
        if self.path is None:
            return ""
        if self.step is None:
            return str(self.path)
        others = f" of {', '.join(map(str, self.steps))}" if len(self.steps) > 1 else ""
        return f"{self.path} ({what} {self.step}{others})"


def _pick(candidates: Mapping[int, tuple[Path, bool]], step: int | None) -> Found:
    steps = tuple(sorted(candidates))
    if not steps:
        return Found(None, None, ())
    chosen = steps[-1] if step is None else step
    if chosen not in candidates:
        return Found(None, chosen, steps)
    path, archive = candidates[chosen]
    return Found(path, chosen, steps, archive)


def nerfbaselines_predictions(scene_dir: Path, step: int | None = None) -> Found:
    """The NerfBaselines predictions of a scene folder: the folder itself (it holds ``color/``), or the
    ``predictions-<step>/`` folder or ``predictions-<step>.tar.gz`` archive of ``step`` (default: the highest).

    A step present both as a folder and as an archive is read from the folder. ``Found.path`` is ``None`` when
    there are no predictions, or none at the requested ``step`` (``Found.steps`` then lists those there are).
    """
    scene_dir = Path(scene_dir)
    if (scene_dir / "color").is_dir():
        return Found(scene_dir, None, ())
    candidates: dict[int, tuple[Path, bool]] = {}
    for d in sorted(scene_dir.iterdir()) if scene_dir.is_dir() else ():
        m = _PREDICTIONS_DIR_RE.match(d.name)
        if m and d.is_dir() and (d / "color").is_dir():
            candidates[int(m.group(1))] = (d, False)
    for f in sorted(scene_dir.iterdir()) if scene_dir.is_dir() else ():
        m = _PREDICTIONS_ARCHIVE_RE.match(f.name)
        if m and f.is_file() and int(m.group(1)) not in candidates:
            candidates[int(m.group(1))] = (f, True)
    return _pick(candidates, step)


def gaussian_splatting_iterations(model_dir: Path, split: str, step: int | None = None) -> Found:
    """``<model>/<split>/ours_<iteration>/`` holding ``renders/`` (3DGS ``render.py``) at ``step`` (default: the
    highest iteration)."""
    folder = Path(model_dir) / split
    candidates: dict[int, tuple[Path, bool]] = {}
    for d in sorted(folder.iterdir()) if folder.is_dir() else ():
        m = _OURS_RE.match(d.name)
        if m and (d / "renders").is_dir():
            candidates[int(m.group(1))] = (d, False)
    return _pick(candidates, step)


def read_nerfbaselines_info(folder: Path) -> dict[str, Any]:
    """The ``info.json`` of a predictions folder as a dict (``{}`` without one).

    Raises:
        ValueError: the file is not a JSON object, or is larger than 16 MiB (the message names it).
    """
    path = Path(folder) / "info.json"
    if not path.is_file():
        return {}
    if path.stat().st_size > _INFO_MAX_BYTES:
        raise ValueError(f"{path}: larger than {_INFO_MAX_BYTES >> 20} MiB; not a NerfBaselines info.json")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(info, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return info


def nerfbaselines_background(info: Mapping[str, Any], where: str = "info.json") -> tuple[int, int, int] | None:
    """The 8-bit background colour NerfBaselines' ``evaluate`` composites RGBA images onto, or ``None`` (black).

    ``evaluate`` reads the metadata of ``render_dataset_metadata`` when the key exists, else of
    ``dataset_metadata``, and its ``background_color`` (stored as three 8-bit integers).

    Raises:
        ValueError: a ``background_color`` that is not three integers in [0, 255] (naming ``where``).

    Example:
        >>> nerfbaselines_background({"render_dataset_metadata": {"background_color": [255, 255, 255]}})
        (255, 255, 255)
        >>> nerfbaselines_background({"dataset_metadata": {"name": "mipnerf360"}}) is None
        True
    """
    meta = info.get("render_dataset_metadata", info.get("dataset_metadata"))
    if not isinstance(meta, Mapping):
        return None
    color = meta.get("background_color")
    if color is None:
        return None
    ok = (
        isinstance(color, list)
        and len(color) == 3
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in color)
    )
    if not ok:
        raise ValueError(f"{where}: `background_color` must be three integers in [0, 255]; received {color!r}")
    return (int(color[0]), int(color[1]), int(color[2]))


def read_cfg_args(model_dir: Path) -> dict[str, Any]:
    """The literal arguments of 3DGS's ``cfg_args`` (``Namespace(sh_degree=3, source_path='...', eval=True, ...)``),
    ``{}`` when the file is missing or not of that form.

    The text is parsed, never evaluated: only keyword arguments whose values are Python literals are kept.
    """
    path = Path(model_dir) / "cfg_args"
    try:
        if not path.is_file() or path.stat().st_size > _CFG_ARGS_MAX_BYTES:
            return {}
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace").strip(), mode="eval")
    except (OSError, SyntaxError, ValueError):
        return {}
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Namespace"):
        return {}
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return out
