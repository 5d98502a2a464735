"""Finding what to evaluate: ``<root>/<method>/<scene>/`` folders in three layouts, and ``cameras.json``.

A **unit** is one (method, scene) pair: its rendered test views, the ground-truth views they pair with, the scene's
training views and, optionally, the cameras PRISM needs. Three scene-folder layouts are recognised (``auto`` picks
per folder, in this order):

* ``scenemetrics``: ``renders/``, ``gt/``, ``train/`` and an optional ``cameras.json``.
* ``nerfbaselines``: a NerfBaselines predictions folder, i.e. ``color/`` (renders) and ``gt-color/`` (ground truth)
  directly in the scene folder; or the output folder of ``nerfbaselines train``, which holds
  ``predictions-<step>.tar.gz`` (and ``results-<step>.json``, ``checkpoint-<step>/``) per evaluated step, or
  ``predictions-<step>/`` folders: the highest step is read unless ``step`` names one. Archives are unpacked by the
  ``unpack`` function the caller gives (``scenemetrics eval`` unpacks them safely into ``<out>/inputs/``).
  ``info.json``'s recorded ``background_color`` composites RGBA images, as NerfBaselines' ``evaluate`` does.
* ``nerfstudio``: ``ns-render dataset`` output, i.e. ``<split>/rgb/`` (renders) and ``<split>/gt-rgb/`` (ground
  truth), split ``test`` (else ``val``) unless one is named; ``train/gt-rgb/`` (from ``--split train+test``) serves as
  the training views.
* ``gaussian-splatting``: the original 3DGS model folder, i.e. ``test/ours_<iteration>/renders/`` and ``.../gt/``
  (the highest iteration, or ``step``), file names as written; ``train/ours_<iteration>/gt/`` (the ground truth of
  the training cameras) serves as the training views, never ``train/`` itself (it holds renders too); ``cfg_args``
  tells whether the model held out test views (``--eval``) and its background.

NerfBaselines ``mask/`` folders (same relative paths, ``.png``) are attached to their views: full-reference metrics
then compare ``render * mask`` with ``gt * mask``, as NerfBaselines' own evaluation does. Training views come from
``--train-views`` first (``train_views``: ``<dir>/<scene>/images/``, ``<dir>/<scene>/`` or ``<dir>``), then from the
scene folder, then from ``<data>/<scene>/train/``; test views a source dataset holds are dropped where its split is
known (:mod:`scenemetrics.evaluation.splits`).

Render and ground-truth files pair by their path relative to their folder **without the extension** (``r_0.png``
pairs with ``r_0.jpg``; nested folders are allowed). A folder missing in the scene (``gt/``, ``train/``,
``cameras.json``) is looked up in ``<data>/<scene>/`` when a dataset folder is given.

Example:
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for sub in ("renders", "gt", "train"):
    ...     (root / "nerfacto" / "lego" / sub).mkdir(parents=True)
    ...     Image.new("RGB", (8, 8)).save(root / "nerfacto" / "lego" / sub / "r_0.png")
    >>> [(u.key, len(u.views), len(u.train)) for u in discover_units(root)]
    [('nerfacto/lego', 1, 1)]
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.sources import (
    Found,
    gaussian_splatting_iterations,
    nerfbaselines_background,
    nerfbaselines_predictions,
    read_cfg_args,
    read_nerfbaselines_info,
)
from scenemetrics.evaluation.splits import TrainingViews, candidate_folder, split_views
from scenemetrics.image import IMAGE_EXTENSIONS

__all__ = [
    "CAMERAS_FORMAT",
    "LAYOUTS",
    "CameraEntry",
    "Unit",
    "View",
    "check_output_folder",
    "detect_layout",
    "discover_units",
    "list_image_files",
    "read_cameras",
]

LAYOUTS = ("auto", "scenemetrics", "nerfbaselines", "nerfstudio", "gaussian-splatting")
"""Accepted values of ``layout=`` / ``--layout``."""

CAMERAS_FORMAT = "scenemetrics.eval.cameras/1"
"""The ``format`` value of a ``cameras.json`` file (optional in the file)."""

_NERFSTUDIO_SPLITS = ("test", "val")


@dataclass(frozen=True)
class View:
    """One rendered test view and its ground truth.

    Attributes:
        name: path relative to the renders folder without extension, ``/``-separated (the key used everywhere).
        render: the rendered image file.
        gt: the ground-truth image file (``None`` when the unit has no ground truth).
        mask: a mask image (white = scored) applied to render and ground truth for full-reference metrics.
    """

    name: str
    render: Path
    gt: Path | None = None
    mask: Path | None = None


@dataclass(frozen=True)
class Unit:
    """One (method, scene) to evaluate.

    Attributes:
        method: method folder name.
        scene: scene folder name.
        layout: the layout its folder was read with.
        folder: the scene folder (for NerfBaselines, the predictions folder).
        views: rendered views, sorted by name (each with its ground truth when ``has_gt``).
        train: training views (references for cross-reference metrics), sorted by name; may be empty.
        cameras: the ``cameras.json`` file, or ``None``.
        has_gt: a ground-truth folder exists.
        problems: ``(input, message)`` pairs found while reading the folders, ``input`` being ``"renders"``,
            ``"gt"`` or ``"train"``: a metric that needs that input fails with the message, the others still run.
        source: where the renders were read from when the layout chose among several (a step, an archive).
        train_origin: where the training views come from (a sentence: folder, count, held-out test views and the
            split rule); when there are none, why.
        held_out: images of the training-views folder dropped as held-out test views.
        background: 8-bit RGB colour that RGBA images are composited onto, recorded by the pipeline that wrote
            the folder (NerfBaselines' ``info.json``, 3DGS's ``cfg_args``); ``--background`` overrides it.
        background_origin: where ``background`` was read.
        round_composites: composites are rounded down to 8 bits, as NerfBaselines' ``evaluate`` does.
        warnings: doubts found while reading the folders (reported with the unit's results).
    """

    method: str
    scene: str
    layout: str
    folder: Path
    views: tuple[View, ...]
    train: tuple[Path, ...] = ()
    cameras: Path | None = None
    has_gt: bool = False
    problems: tuple[tuple[str, str], ...] = field(default=())
    source: str = ""
    train_origin: str = ""
    held_out: int = 0
    background: tuple[int, int, int] | None = None
    background_origin: str = ""
    round_composites: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``"<method>/<scene>"``."""
        return f"{self.method}/{self.scene}"

    def sources(self) -> dict[str, Any]:
        """Where the unit's inputs come from, as stored with its results (``renders``, ``train_views``,
        ``held_out``, ``background``)."""
        out: dict[str, Any] = {"train_views": self.train_origin, "held_out": self.held_out}
        if self.source:
            out["renders"] = self.source
        if self.background is not None:
            out["background"] = {"rgb": list(self.background), "from": self.background_origin}
        return out

    def input_files(self) -> list[Path]:
        """Every file the unit's scores depend on."""
        files = [v.render for v in self.views] + [v.gt for v in self.views if v.gt is not None] + list(self.train)
        files += [v.mask for v in self.views if v.mask is not None]
        if self.cameras is not None:
            files.append(self.cameras)
        return files

    def fingerprint(self) -> str:
        """A short hash of the unit's input files (relative name, size, modification time).

        A rerun recomputes a unit whose fingerprint changed (a file was added, removed, replaced or touched).
        """
        h = hashlib.sha256()
        h.update(f"{self.layout}\0".encode())
        for role, files in (
            ("render", [v.render for v in self.views]),
            ("gt", [v.gt for v in self.views if v.gt is not None]),
            ("train", list(self.train)),
            ("mask", [v.mask for v in self.views if v.mask is not None]),
            ("cameras", [self.cameras] if self.cameras is not None else []),
        ):
            for f in files:
                st = f.stat()
                h.update(f"{role}\0{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()[:16]


_EVAL_OUTPUT_MARKERS = ("results.jsonl", ".eval.lock")
"""Files that make a folder an output folder of ``scenemetrics eval``, never a method or a scene."""


def _is_hidden(path: Path) -> bool:
    return path.name.startswith((".", "_"))


def list_image_files(folder: Path) -> dict[str, Path]:
    """Image files under ``folder`` (recursively, hidden names skipped) keyed by relative path without extension.

    Raises:
        ValueError: two files share a key (e.g. ``a.png`` and ``a.jpg``).
    """
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if name.startswith(".") or p.suffix.lower() not in IMAGE_EXTENSIONS:
                continue
            key = p.relative_to(folder).with_suffix("").as_posix()
            if key in out:
                raise ValueError(f"{folder}: {out[key].name!r} and {name!r} both give the view name {key!r}")
            out[key] = p
    return out


def _names(keys: Iterable[str], limit: int = 5) -> str:
    keys = sorted(keys)
    return ", ".join(keys[:limit]) + (f" ... ({len(keys)} in all)" if len(keys) > limit else "")


def _pair(renders: dict[str, Path], gt: dict[str, Path] | None) -> tuple[tuple[View, ...], tuple[tuple[str, str], ...]]:
    if gt is None:
        return tuple(View(k, renders[k]) for k in sorted(renders)), ()
    problems = []
    no_gt = set(renders) - set(gt)
    no_render = set(gt) - set(renders)
    if no_gt:
        problems.append(("gt", f"{len(no_gt)} render(s) have no ground truth: {_names(no_gt)}"))
    if no_render:
        problems.append(("gt", f"{len(no_render)} ground-truth view(s) have no render: {_names(no_render)}"))
    views = tuple(View(k, renders[k], gt.get(k)) for k in sorted(renders))
    return views, tuple(problems)


def _split_names(split: str | None) -> str:
    return split if split else "|".join(_NERFSTUDIO_SPLITS)


def _nerfstudio_split(scene_dir: Path, split: str | None) -> str | None:
    splits = (split,) if split else _NERFSTUDIO_SPLITS
    for s in splits:
        if (scene_dir / s / "rgb").is_dir():
            return s
    return None


def detect_layout(scene_dir: str | os.PathLike, split: str | None = None) -> str | None:
    """The layout of one scene folder (``"scenemetrics"``, ``"nerfbaselines"``, ``"nerfstudio"``,
    ``"gaussian-splatting"``), or ``None``."""
    d = Path(scene_dir)
    if (d / "renders").is_dir():
        return "scenemetrics"
    if nerfbaselines_predictions(d).steps or (d / "color").is_dir():
        return "nerfbaselines"
    if _nerfstudio_split(d, split) is not None:
        return "nerfstudio"
    if gaussian_splatting_iterations(d, "test").steps:
        return "gaussian-splatting"
    return None


def _fallback(primary: Path, data: Path | None, scene: str, name: str, *, is_dir: bool) -> Path | None:
    for candidate in (primary, (data / scene / name) if data is not None else None):
        if candidate is not None and (candidate.is_dir() if is_dir else candidate.is_file()):
            return candidate
    return None


Unpack = Callable[[Path], Path]
"""``unpack(archive) -> folder holding color/``: how a ``predictions-<step>.tar.gz`` becomes a folder."""


def _from_source(folder: Path, how: str, pipeline: str, cfg_args: Mapping[str, Any], num_test: int) -> TrainingViews:
    """Training views from a source folder (``--train-views``, ``--data``), held-out views dropped where known."""
    files = list_image_files(folder)
    kept, dropped, rule = split_views(folder, files, pipeline=pipeline, cfg_args=cfg_args)
    views = tuple(kept[k] for k in sorted(kept))
    if not rule:
        origin = (
            f"{how} {folder} ({len(files)} images; its train/test split is not known: references identical to a "
            "test target are reported)"
        )
        return TrainingViews(views, origin)
    origin = f"{how} {folder}: {len(kept)} of {len(files)} images, {len(dropped)} held out ({rule})"
    warning = ""
    if rule.startswith("3DGS") and len(dropped) != num_test:
        warning = (
            f"{folder}: 3DGS's --eval rule holds out {len(dropped)} of its {len(files)} images, but render.py wrote "
            f"{num_test} test views: this may not be the image folder the model was trained on (cfg_args "
            f"source_path {cfg_args.get('source_path')!r}, images {cfg_args.get('images')!r})"
        )
    return TrainingViews(views, origin, len(dropped), rule, warning)


def _training_views(
    scene: str,
    pipeline: str,
    own: tuple[Path | None, str],
    explicit: Path | None,
    data: Path | None,
    cfg_args: Mapping[str, Any],
    num_test: int,
) -> TrainingViews:
    """The unit's training views: ``--train-views`` first, then the scene folder's own, then ``--data``."""
    if explicit is not None:
        folder, tried = candidate_folder(explicit, scene)
        if folder is None:
            return TrainingViews(
                origin=f"--train-views {explicit} holds no images for scene {scene!r} (looked in "
                f"{', '.join(map(str, tried))})"
            )
        return _from_source(folder, "--train-views", pipeline, cfg_args, num_test)
    own_dir, own_what = own
    if own_dir is not None and own_dir.is_dir():
        files = list_image_files(own_dir)
        return TrainingViews(tuple(files[k] for k in sorted(files)), f"{own_what} {own_dir} ({len(files)} images)")
    if data is not None and (data / scene / "train").is_dir():
        return _from_source(data / scene / "train", "--data", pipeline, cfg_args, num_test)
    where = {
        "scenemetrics": "no train/ folder in the scene folder",
        "nerfbaselines": "NerfBaselines predictions hold no training views",
        "nerfstudio": "no train/gt-rgb/ folder (ns-render dataset --split train+test writes one)",
        "gaussian-splatting": "no train/ours_<iteration>/gt/ folder (render.py without --skip_train writes one)",
    }[pipeline]
    hint = ""
    if cfg_args.get("source_path"):
        hint = f"; the model was trained on {cfg_args['source_path']!r} (cfg_args): pass --train-views with it"
    return TrainingViews(origin=f"none: {where}, and no --train-views DIR or --data DIR/{scene}/train/{hint}")


def _read_unit(
    method: str,
    scene: str,
    scene_dir: Path,
    layout: str,
    data: Path | None,
    split: str | None,
    train_views: Path | None = None,
    *,
    step: int | None = None,
    unpack: Unpack | None = None,
) -> Unit:
    problems: list[tuple[str, str]] = []
    mask_dir = None
    render_dir: Path | None
    source = ""
    own: tuple[Path | None, str] = (None, "")
    cfg_args: dict[str, Any] = {}
    background: tuple[int, int, int] | None = None
    background_origin = ""
    if layout == "scenemetrics":
        folder = scene_dir
        render_dir = scene_dir / "renders"
        gt_dir = _fallback(scene_dir / "gt", data, scene, "gt", is_dir=True)
        own = (scene_dir / "train", "scene folder")
    elif layout == "nerfbaselines":
        found = nerfbaselines_predictions(scene_dir, step)
        if found.path is None and not found.steps:
            raise ValueError(
                f"{scene_dir} is not a NerfBaselines predictions folder (no color/, no predictions-<step>.tar.gz)"
            )
        folder, render_dir, gt_dir = scene_dir, None, None
        if found.path is None:
            problems.append(("renders", _no_step(scene_dir, "predictions", found)))
        else:
            source = found.describe("step") if found.step is not None else ""
            folder = found.path
            if found.archive:
                if unpack is None:
                    raise ValueError(
                        f"{found.path} is an archive: pass `unpack` (scenemetrics eval unpacks it into <out>/inputs/)"
                    )
                folder = unpack(found.path)
            render_dir = folder / "color"
            gt_dir = _fallback(folder / "gt-color", data, scene, "gt", is_dir=True)
            mask_dir = folder / "mask" if (folder / "mask").is_dir() else None
            background = nerfbaselines_background(read_nerfbaselines_info(folder), str(folder / "info.json"))
            background_origin = f"{folder / 'info.json'} background_color" if background is not None else ""
        own = (scene_dir / "train", "scene folder")
    elif layout == "nerfstudio":
        s = _nerfstudio_split(scene_dir, split)
        if s is None:
            raise ValueError(f"{scene_dir} has no ns-render output ({_split_names(split)}/rgb/)")
        folder = scene_dir
        render_dir = scene_dir / s / "rgb"
        gt_dir = _fallback(scene_dir / s / "gt-rgb", data, scene, "gt", is_dir=True)
        own = (scene_dir / "train" / "gt-rgb", "ns-render train split")
    elif layout == "gaussian-splatting":
        found = gaussian_splatting_iterations(scene_dir, "test", step)
        if found.path is None and not found.steps:
            raise ValueError(f"{scene_dir} has no 3DGS render.py output (test/ours_<iteration>/renders/)")
        folder, render_dir, gt_dir = scene_dir, None, None
        if found.path is None:
            problems.append(("renders", _no_step(scene_dir / "test", "ours_<iteration>", found)))
        else:
            source = found.describe("iteration")
            folder = found.path
            render_dir = found.path / "renders"
            gt_dir = _fallback(found.path / "gt", data, scene, "gt", is_dir=True)
        train_found = gaussian_splatting_iterations(scene_dir, "train", found.step)
        if train_found.path is None:
            train_found = gaussian_splatting_iterations(scene_dir, "train")
        if train_found.path is not None:
            own = (train_found.path / "gt", "3DGS render.py, ground truth of the training cameras:")
        cfg_args = read_cfg_args(scene_dir)
        if isinstance(cfg_args.get("white_background"), bool):
            background = (255, 255, 255) if cfg_args["white_background"] else (0, 0, 0)
            background_origin = f"{scene_dir / 'cfg_args'} white_background={cfg_args['white_background']}"
    else:
        raise ValueError(f"`layout` must be one of {', '.join(LAYOUTS)}; received {layout!r}")
    renders: dict[str, Path] = {}
    if render_dir is not None:
        try:
            renders = list_image_files(render_dir)
        except ValueError as err:
            problems.append(("renders", str(err)))
    gt = None
    if gt_dir is not None:
        try:
            gt = list_image_files(gt_dir)
        except ValueError as err:
            gt = {}
            problems.append(("gt", str(err)))
    views, pair_problems = _pair(renders, gt)
    if mask_dir is not None:
        try:
            masks = list_image_files(mask_dir)
        except ValueError as err:
            masks, problems = {}, [*problems, ("gt", str(err))]
        missing = [v.name for v in views if v.name not in masks]
        if missing:
            problems.append(("gt", f"{len(missing)} view(s) have no mask in {mask_dir}: {_names(missing)}"))
        views = tuple(View(v.name, v.render, v.gt, masks.get(v.name)) for v in views)
    try:
        train = _training_views(scene, layout, own, train_views, data, cfg_args, len(views))
    except ValueError as err:
        train = TrainingViews(origin=f"unreadable: {err}")
        problems.append(("train", str(err)))
    if not views and not problems:
        problems.append(("renders", f"no rendered image in {render_dir}"))
    # 3DGS's train.py writes its own cameras.json (a list of COLMAP cameras) into the model folder: not PRISM's file
    own_cameras = data / scene / "cameras.json" if layout == "gaussian-splatting" and data is not None else None
    cameras = (
        own_cameras
        if layout == "gaussian-splatting"
        else _fallback(scene_dir / "cameras.json", data, scene, "cameras.json", is_dir=False)
    )
    cameras = cameras if cameras is not None and cameras.is_file() else None
    return Unit(
        method=method,
        scene=scene,
        layout=layout,
        folder=folder,
        views=views,
        train=train.files,
        cameras=cameras,
        has_gt=gt_dir is not None,
        problems=tuple(problems) + pair_problems,
        source=source,
        train_origin=train.origin,
        held_out=train.held_out,
        background=background,
        background_origin=background_origin,
        round_composites=layout == "nerfbaselines",
        warnings=(train.warning,) if train.warning else (),
    )


def _no_step(folder: Path, what: str, found: Found) -> str:
    steps = ", ".join(map(str, found.steps))
    return f"{folder} has no {what} at step {found.step} (steps found: {steps}); choose one with --step"


_OUTPUT_FOLDERS = ("states", "report", "inputs")
"""Sub-folders ``scenemetrics eval`` writes into its output folder (never scene folders)."""


def check_output_folder(root: str | os.PathLike, out: str | os.PathLike, split: str | None = None) -> None:
    """Refuse an output folder that is the results tree, one of its method folders or one of its scene folders.

    The output folder is never scanned (nor is any folder holding an ``eval`` commit log or lock), so writing into a
    method or scene folder would silently drop it from the evaluation. A folder elsewhere inside the tree (e.g.
    ``<root>/_eval`` or ``<root>/results``) is fine.

    Raises:
        ValueError: ``out`` is ``root``, a method folder holding scene folders, or a scene folder of a known layout;
            the message names it and suggests ``<root>/_eval``.
    """
    root_p = Path(root)
    if root_p.is_dir():
        _check_excluded(root_p, {Path(out).resolve()}, split)


def _check_excluded(root: Path, excluded: set[Path], split: str | None) -> None:
    top = root.resolve()
    for ex in excluded:
        if ex == top:
            raise ValueError(
                f"the output folder {ex} is the results tree itself; choose a folder that is not a method or a "
                f"scene folder, e.g. {root / '_eval'} (names starting with _ or . are never scanned)"
            )
        if not ex.is_relative_to(top) or not ex.is_dir():
            continue
        depth = len(ex.relative_to(top).parts)
        if depth == 1:
            scenes = sorted(
                d.name
                for d in ex.iterdir()
                if d.is_dir() and not _is_hidden(d) and d.name not in _OUTPUT_FOLDERS and detect_layout(d, split)
            )
            what = f"the method folder {ex.name!r} (it holds the scene folder(s) {_names(scenes)})" if scenes else ""
        else:
            scene = depth == 2 and detect_layout(ex, split) is not None
            what = f"the scene folder {ex.relative_to(top).as_posix()!r}" if scene else ""
        if what:
            raise ValueError(
                f"the output folder {ex} is {what}: as the output folder it would not be evaluated, and the "
                f"leaderboard would lack it. Choose another output folder, e.g. {root / '_eval'} (names starting "
                "with _ or . are never scanned) or one outside the tree"
            )


def _select(found: Sequence[str], wanted: Sequence[str] | None, what: str, root: Path) -> list[str]:
    if wanted is None:
        return list(found)
    missing = [w for w in wanted if w not in found]
    if missing:
        raise ValueError(f"{what} {', '.join(map(repr, missing))} not found in {root}; found: {_names(found, 20)}")
    return [f for f in found if f in set(wanted)]


def discover_units(
    root: str | os.PathLike,
    *,
    layout: str = "auto",
    data: str | os.PathLike | None = None,
    split: str | None = None,
    methods: Sequence[str] | None = None,
    scenes: Sequence[str] | None = None,
    exclude: Sequence[str | os.PathLike] = (),
    train_views: str | os.PathLike | None = None,
    step: int | None = None,
    unpack: Unpack | None = None,
) -> list[Unit]:
    """Every (method, scene) unit under ``root``, sorted by method then scene.

    Args:
        root: folder holding one folder per method, each holding one folder per scene.
        layout: ``"auto"`` (detect per scene folder), ``"scenemetrics"``, ``"nerfbaselines"``, ``"nerfstudio"`` or
            ``"gaussian-splatting"``.
        data: optional dataset folder ``<data>/<scene>/{gt,train}/`` (+ ``cameras.json``) used for whatever a
            scene folder lacks (NerfBaselines and ns-render outputs usually hold no training views).
        split: ns-render split folder (default ``test``, else ``val``).
        methods: only these methods (names must exist).
        train_views: the training views of every scene (they win over the scene folder's own):
            ``<dir>/<scene>/images/``, ``<dir>/<scene>/`` or ``<dir>`` (e.g. the source dataset of 3DGS models);
            held-out test views are dropped where the dataset's split is known.
        scenes: only these scenes (names must exist in at least one method).
        step: the training step (NerfBaselines ``predictions-<step>``) or iteration (3DGS ``ours_<iteration>``) to
            read; ``None``: the highest. A unit without it fails its metrics, naming the steps it has.
        unpack: ``unpack(archive) -> folder`` for the ``predictions-<step>.tar.gz`` of ``nerfbaselines train``
            (``scenemetrics eval`` unpacks them safely into ``<out>/inputs/``); without it such a folder is an
            error.
        exclude: folders that are never a method or a scene, nor scanned (``scenemetrics eval`` passes its output
            folder, which may lie inside ``root``); one that is ``root`` itself, or a method or scene folder with
            something to evaluate, is an error.

    Returns:
        The units. Folders whose names start with ``.`` or ``_`` are ignored, and so are the folders of
        ``exclude`` and every output folder of ``scenemetrics eval`` (it holds ``results.jsonl`` or
        ``.eval.lock``); in ``auto`` mode a scene folder of no known layout is skipped with a ``UserWarning``.

    Raises:
        FileNotFoundError: ``root`` (or ``data``) is not a folder.
        ValueError: unknown ``layout``, a requested method or scene that does not exist, an ``exclude`` folder that
            is the tree or a method or scene folder, or no unit at all.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"`layout` must be one of {', '.join(LAYOUTS)}; received {layout!r}")
    root_p = Path(root)
    if not root_p.is_dir():
        raise FileNotFoundError(f"`root` {os.fspath(root)!r} is not a folder")
    data_p = Path(data) if data is not None else None
    if data_p is not None and not data_p.is_dir():
        raise FileNotFoundError(f"`data` {os.fspath(data)!r} is not a folder")
    train_p = Path(train_views) if train_views is not None else None
    if train_p is not None and not train_p.is_dir():
        raise FileNotFoundError(f"`train_views` {os.fspath(train_views)!r} is not a folder")
    excluded = {Path(p).resolve() for p in exclude}
    _check_excluded(root_p, excluded, split)

    def skip(d: Path) -> bool:
        return (
            not d.is_dir()
            or _is_hidden(d)
            or d.resolve() in excluded
            or any((d / marker).is_file() for marker in _EVAL_OUTPUT_MARKERS)
        )

    method_dirs = sorted(d.name for d in root_p.iterdir() if not skip(d))
    units = []
    all_scenes: set[str] = set()
    for method in _select(method_dirs, methods, "method(s)", root_p):
        scene_dirs = sorted(d for d in (root_p / method).iterdir() if not skip(d))
        for scene_dir in scene_dirs:
            all_scenes.add(scene_dir.name)
            if scenes is not None and scene_dir.name not in set(scenes):
                continue
            kind = detect_layout(scene_dir, split) if layout == "auto" else layout
            if kind is None:
                warnings.warn(
                    f"skipped {scene_dir}: no renders/ (scenemetrics), color/ or predictions-<step>.tar.gz "
                    f"(NerfBaselines), {_split_names(split)}/rgb/ (ns-render) or test/ours_<iteration>/renders/ (3DGS)",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            units.append(
                _read_unit(method, scene_dir.name, scene_dir, kind, data_p, split, train_p, step=step, unpack=unpack)
            )
    if scenes is not None:
        _select(sorted(all_scenes), scenes, "scene(s)", root_p)
    if not units:
        raise ValueError(
            f"no (method, scene) folder to evaluate under {root_p}: expected <root>/<method>/<scene>/ with renders/ "
            "(or NerfBaselines color/ or predictions-<step>.tar.gz, ns-render <split>/rgb/, 3DGS "
            "test/ours_<iteration>/)"
        )
    return units


# ---- cameras.json ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CameraEntry:
    """PRISM's inputs for one rendered view, read from ``cameras.json``.

    Attributes:
        source: the source (input) view's image file.
        pose: ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``, target minus source, when given directly.
        source_camera / target_camera: cameras to derive the pose from, each ``{"polar_deg", "azimuth_deg",
            "radius"}`` or ``{"c2w": 4x4}`` (z-up world), when ``pose`` is not given.
    """

    source: Path
    pose: tuple[float, float, float] | None = None
    source_camera: Mapping[str, Any] | None = None
    target_camera: Mapping[str, Any] | None = None


def _finite_numbers(value: Any, n: int) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) == n
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)
    )


def _check_camera(cam: Any, where: str) -> Mapping[str, Any]:
    if isinstance(cam, Mapping):
        if "c2w" in cam:
            c2w = cam["c2w"]
            if isinstance(c2w, (list, tuple)) and len(c2w) == 4 and all(_finite_numbers(r, 4) for r in c2w):
                return cam
            raise ValueError(f"{where}: `c2w` must be a 4x4 list of finite numbers; received {c2w!r}")
        keys = ("polar_deg", "azimuth_deg", "radius")
        if all(k in cam for k in keys) and _finite_numbers([cam[k] for k in keys], 3):
            return cam
    raise ValueError(
        f"{where} must be {{'polar_deg': ..., 'azimuth_deg': ..., 'radius': ...}} or {{'c2w': 4x4}}; received {cam!r}"
    )


def read_cameras(path: str | os.PathLike) -> dict[str, CameraEntry]:
    """Read a ``cameras.json``: the source view and relative pose of each rendered view (PRISM's triplets).

    Format (``format`` is optional)::

        {"format": "scenemetrics.eval.cameras/1",
         "views": {"r_000": {"source": "train/r_012.png", "pose": [dpolar_deg, dazimuth_deg, dradius]},
                   "r_001": {"source": "train/r_012.png",
                             "source_camera": {"polar_deg": 60, "azimuth_deg": 0, "radius": 2.7},
                             "target_camera": {"c2w": [[...], [...], [...], [...]]}}}}

    Keys are view names (render path relative to the renders folder, extension optional). ``source`` is relative to
    the folder holding ``cameras.json`` (or absolute). The pose follows PRISM's convention (that of
    ``scenemetrics.prism.relative_pose``): target minus source, polar from +z (Δpolar = −Δelevation), azimuth
    counter-clockwise seen from +z, radius difference.

    Returns:
        View name (without extension) -> :class:`CameraEntry`.

    Raises:
        ValueError: not JSON, a wrong ``format``, no ``views`` mapping, or an entry without ``source`` or without a
            valid ``pose`` / camera pair; the message names the file and the view.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"could not read cameras file {p}: {err}") from err
    if not isinstance(doc, Mapping):
        raise ValueError(f"{p} must hold a JSON object with a 'views' mapping")
    if "format" in doc and doc["format"] != CAMERAS_FORMAT:
        raise ValueError(f"{p}: `format` must be {CAMERAS_FORMAT!r}; received {doc['format']!r}")
    views = doc.get("views")
    if not isinstance(views, Mapping):
        raise ValueError(f"{p} must hold a 'views' mapping from view name to {{'source': ..., 'pose': ...}}")
    out: dict[str, CameraEntry] = {}
    for raw_key, entry in views.items():
        where = f"{p} view {raw_key!r}"
        key = raw_key
        if Path(raw_key).suffix.lower() in IMAGE_EXTENSIONS:
            key = Path(raw_key).with_suffix("").as_posix()
        if not isinstance(entry, Mapping) or not isinstance(entry.get("source"), str):
            raise ValueError(f"{where} must be an object with a 'source' image path")
        source = Path(entry["source"])
        source = source if source.is_absolute() else p.parent / source
        if "pose" in entry:
            if not _finite_numbers(entry["pose"], 3):
                raise ValueError(
                    f"{where}: `pose` must be [delta_polar_deg, delta_azimuth_deg, delta_radius]; "
                    f"received {entry['pose']!r}"
                )
            out[key] = CameraEntry(source, pose=tuple(float(x) for x in entry["pose"]))
        elif "source_camera" in entry and "target_camera" in entry:
            out[key] = CameraEntry(
                source,
                source_camera=_check_camera(entry["source_camera"], f"{where} source_camera"),
                target_camera=_check_camera(entry["target_camera"], f"{where} target_camera"),
            )
        else:
            raise ValueError(f"{where} needs a 'pose' or both 'source_camera' and 'target_camera'")
    return out
