"""Training views of a unit: which folder they come from, and which of its images (never the held-out test views).

The training views are PuzzleSim's references. Where they come from, in this order:

1. ``--train-views DIR`` (:func:`candidate_folder`: ``DIR/<scene>/images/``, ``DIR/<scene>/``, ``DIR``): what the
   user names always wins;
2. the scene folder's own training views, when its layout has them (``train/`` for the scenemetrics layout,
   ``train/gt-rgb/`` from ``ns-render --split train+test``, ``train/ours_<iteration>/gt/`` from 3DGS ``render.py``:
   the ground truth of the training cameras). A folder that holds something else (3DGS's ``train/`` also holds
   ``renders/`` of every iteration) is never read as references;
3. ``--data DIR``: ``DIR/<scene>/train/``.

A source dataset folder often holds the held-out test views too (3DGS trained with ``--eval`` reads the whole
``images/`` folder and holds out every 8th image). Where the split is known, the test views are dropped
(:func:`split_views`) and the count is reported:

* Blender scenes (``transforms_train.json`` in the folder or its parent): only its frames (3DGS, NerfBaselines and
  nerfstudio all train on them; a 3DGS run without ``--eval`` also trains on ``transforms_test.json``'s);
* NerfBaselines split files (``train_list.txt`` / ``test_list.txt`` beside ``images/``): the listed training images;
* nerfstudio datasets (``transforms.json`` with ``train_filenames``): the listed files; without lists, for a
  nerfstudio unit, the dataparser's default split (``eval_mode="fraction"``, 90 % training images equally spaced
  over the file names in order);
* 3DGS with ``--eval`` (``cfg_args`` says ``eval=True``) on a COLMAP scene: every 8th image in name order
  (``llffhold = 8``, index 0 first) is a test view; the count is checked against the test views ``render.py`` wrote;
* NerfBaselines on a COLMAP scene (a ``sparse/`` folder) without split files: the same every-8th rule, its default.

Elsewhere nothing is dropped, and the evaluation warns when a reference is pixel-identical to a test target.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> files = {f"img{i:02d}": d / f"img{i:02d}.png" for i in range(10)}
    >>> kept, dropped, rule = split_views(d, files, pipeline="gaussian-splatting", cfg_args={"eval": True})
    >>> sorted(dropped), len(kept)
    (['img00', 'img08'], 8)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from scenemetrics.image import IMAGE_EXTENSIONS

__all__ = ["LLFF_HOLD", "NERFSTUDIO_TRAIN_FRACTION", "TrainingViews", "candidate_folder", "split_views"]

LLFF_HOLD = 8
"""3DGS's and NerfBaselines' ``llffhold``: every 8th image (in name order, index 0 first) is a test view."""
NERFSTUDIO_TRAIN_FRACTION = 0.9
"""nerfstudio's dataparser default ``train_split_fraction`` (``eval_mode="fraction"``)."""
_JSON_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class TrainingViews:
    """A unit's training views and where they come from.

    Attributes:
        files: the images, sorted by name.
        origin: a sentence saying where they come from (printed per unit and stored with the results); when
            ``files`` is empty, why there are none.
        held_out: images of the source folder dropped as test (or validation) views.
        rule: the split rule that dropped them (``""``: none known).
        warning: a doubt about the rule (e.g. the held-out count differs from the rendered test views), or ``""``.
    """

    files: tuple[Path, ...] = ()
    origin: str = ""
    held_out: int = 0
    rule: str = ""
    warning: str = ""


def _has_images(folder: Path) -> bool:
    return any(p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS for p in folder.iterdir())


def candidate_folder(train_views: Path, scene: str) -> tuple[Path | None, list[Path]]:
    """The folder of ``--train-views DIR`` for ``scene``: ``DIR/<scene>/images/``, ``DIR/<scene>/`` or ``DIR``, the
    first that holds images (or a Blender ``transforms_train.json``); also every path tried."""
    tried = [train_views / scene / "images", train_views / scene, train_views]
    for candidate in tried:
        if candidate.is_dir() and (_has_images(candidate) or (candidate / "transforms_train.json").is_file()):
            return candidate, tried
    return None, tried


def _strip(path: str) -> str:
    """A frame's ``file_path`` as a ``/``-separated relative path without an image extension."""
    p = PurePosixPath(path.replace("\\", "/"))
    parts = [x for x in p.parts if x not in (".", "")]
    p = PurePosixPath(*parts) if parts else PurePosixPath(".")
    return p.with_suffix("").as_posix() if p.suffix.lower() in IMAGE_EXTENSIONS else p.as_posix()


def _text(path: Path) -> str:
    if path.stat().st_size > _JSON_MAX_BYTES:
        raise ValueError(f"{path}: larger than {_JSON_MAX_BYTES >> 20} MiB; not a split or camera file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err})") from None


def _json(path: Path) -> Any:
    try:
        return json.loads(_text(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def _frames(doc: Any, path: Path) -> list[str]:
    frames = doc.get("frames") if isinstance(doc, Mapping) else None
    if not isinstance(frames, list) or not all(isinstance(f, Mapping) and isinstance(f.get("file_path"), str)
                                               for f in frames):  # fmt: skip
        raise ValueError(f"{path}: expected {{'frames': [{{'file_path': ...}}, ...]}}")
    return [_strip(f["file_path"]) for f in frames]


def _beside(folder: Path, name: str) -> Path | None:
    for d in (folder, folder.parent):
        if (d / name).is_file():
            return d / name
    return None


def _relative(folder: Path, key: str, base: Path) -> str:
    """``folder/key`` relative to ``base`` (``/``-separated, no extension); ``key`` itself when outside it."""
    try:
        return (folder / key).relative_to(base).as_posix()
    except ValueError:
        return key


def _select(folder: Path, keys: Sequence[str], base: Path, wanted: set[str]) -> list[str] | None:
    """The keys naming an entry of ``wanted`` (paths relative to ``base``; by file name when no path matches),
    ``None`` when none matches."""
    kept = [k for k in keys if _relative(folder, k, base) in wanted]
    if not kept:
        names = {PurePosixPath(w).name for w in wanted}
        kept = [k for k in keys if PurePosixPath(k).name in names]
    return kept or None


def _every_nth(folder: Path, files: Mapping[str, Path], hold: int) -> list[str]:
    """The training keys of the every-``hold``-th rule: the file names (with extension, as 3DGS and NerfBaselines
    sort the COLMAP image names) in order, indices 0, hold, 2 hold, ... held out."""
    order = sorted(files, key=lambda k: files[k].relative_to(folder).as_posix())
    return [k for i, k in enumerate(order) if i % hold != 0]


def split_views(
    folder: Path,
    files: Mapping[str, Path],
    *,
    pipeline: str,
    cfg_args: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Path], list[str], str]:
    """Drop the held-out views of a source folder where its split is known (see the module docstring).

    Args:
        folder: the folder the images were listed from.
        files: its images, keyed by path relative to ``folder`` without extension.
        pipeline: the unit's layout (``gaussian-splatting``, ``nerfbaselines``, ``nerfstudio``, ``scenemetrics``):
            which pipeline's default rule applies when the folder has no split file.
        cfg_args: 3DGS's training arguments (:func:`scenemetrics.evaluation.sources.read_cfg_args`).

    Returns:
        ``(kept files, dropped keys, rule)``; ``rule`` is ``""`` when no split is known (nothing dropped).

    Raises:
        ValueError: a split file that cannot be read (naming it).
    """
    keys = sorted(files)
    cfg = dict(cfg_args or {})

    def result(kept: Sequence[str] | None, rule: str) -> tuple[dict[str, Path], list[str], str]:
        if kept is None:
            return dict(files), [], ""
        keep = set(kept)
        return {k: files[k] for k in keys if k in keep}, [k for k in keys if k not in keep], rule

    blender = _beside(folder, "transforms_train.json")
    if blender is not None:
        wanted = set(_frames(_json(blender), blender))
        rule = f"Blender split: the frames of {blender.name}"
        test = blender.with_name("transforms_test.json")
        if pipeline == "gaussian-splatting" and cfg.get("eval") is False and test.is_file():
            wanted |= set(_frames(_json(test), test))  # 3DGS without --eval trains on the test frames too
            rule = f"Blender split: the frames of {blender.name} and {test.name} (3DGS trained without --eval)"
        return result(_select(folder, keys, blender.parent, wanted), rule)
    lists = _beside(folder, "train_list.txt") or _beside(folder, "test_list.txt")
    if lists is not None:
        entries = {_strip(line.strip()) for line in _text(lists).splitlines() if line.strip()}
        if lists.name == "train_list.txt":
            return result(_select(folder, keys, lists.parent, entries), "NerfBaselines split file train_list.txt")
        test_keys = _select(folder, keys, lists.parent, entries) or []
        return result([k for k in keys if k not in set(test_keys)], "NerfBaselines split file test_list.txt")
    transforms = _beside(folder, "transforms.json")
    if transforms is not None:
        doc = _json(transforms)
        if isinstance(doc, Mapping) and isinstance(doc.get("train_filenames"), list):
            wanted = {_strip(str(x)) for x in doc["train_filenames"]}
            return result(
                _select(folder, keys, transforms.parent, wanted), "nerfstudio train_filenames (transforms.json)"
            )
        if pipeline == "nerfstudio":
            frames = sorted(_frames(doc, transforms))
            n_train = math.ceil(len(frames) * NERFSTUDIO_TRAIN_FRACTION)
            train = {frames[int(i)] for i in _linspace_int(len(frames) - 1, n_train)}
            rule = "nerfstudio dataparser default split (eval_mode=fraction, train_split_fraction=0.9)"
            return result(_select(folder, keys, transforms.parent, train), rule)
    colmap = any((d / "sparse").is_dir() for d in (folder, folder.parent))
    if pipeline == "gaussian-splatting" and cfg.get("eval") is True:
        rule = f"3DGS --eval (cfg_args eval=True): every {LLFF_HOLD}th image in name order is a test view"
        return result(_every_nth(folder, files, LLFF_HOLD), rule)
    if pipeline == "nerfbaselines" and colmap:
        rule = f"NerfBaselines' COLMAP default split: every {LLFF_HOLD}th image in name order is a test view"
        return result(_every_nth(folder, files, LLFF_HOLD), rule)
    return result(None, "")


def _linspace_int(stop: int, num: int) -> list[int]:
    """``numpy.linspace(0, stop, num, dtype=int)``: evenly spaced, truncated towards zero."""
    import numpy as np

    return [int(i) for i in np.linspace(0, stop, num, dtype=int)] if num > 0 else []
