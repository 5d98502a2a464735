"""Finding what to evaluate: ``<root>/<method>/<scene>/`` folders in three layouts, and ``cameras.json``.

A **unit** is one (method, scene) pair: its rendered test views, the ground-truth views they pair with, the scene's
training views and, optionally, the cameras PRISM needs. Three scene-folder layouts are recognised (``auto`` picks
per folder, in this order):

* ``scenemetrics``: ``renders/``, ``gt/``, ``train/`` and an optional ``cameras.json``.
* ``nerfbaselines``: a NerfBaselines predictions folder, i.e. ``color/`` (renders) and ``gt-color/`` (ground truth)
  directly in the scene folder, or in its ``predictions-<step>/`` sub-folders (the highest step is used). Archives
  (``predictions-<step>.tar.gz``/``.zip``) must be extracted first.
* ``nerfstudio``: ``ns-render dataset`` output, i.e. ``<split>/rgb/`` (renders) and ``<split>/gt-rgb/`` (ground
  truth), split ``test`` (else ``val``) unless one is named; ``train/gt-rgb/`` (from ``--split train+test``) serves as
  the training views.
* ``gaussian-splatting``: the original 3DGS ``render.py`` output, i.e. ``test/ours_<iteration>/renders/`` and
  ``.../gt/`` (the highest iteration is used), file names as written.

NerfBaselines ``mask/`` folders (same relative paths, ``.png``) are attached to their views: full-reference metrics
then compare ``render * mask`` with ``gt * mask``, as NerfBaselines' own evaluation does. ``train_views`` (the
``--train-views`` flag) gives scenes without training views their references: ``<dir>/<scene>/images/``,
``<dir>/<scene>/`` or ``<dir>`` itself, the first that holds images.

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
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

_PREDICTIONS_RE = re.compile(r"^predictions-(\d+)$")
_OURS_RE = re.compile(r"^ours_(\d+)$")
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

    @property
    def key(self) -> str:
        """``"<method>/<scene>"``."""
        return f"{self.method}/{self.scene}"

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


def _nerfbaselines_folder(scene_dir: Path) -> Path | None:
    if (scene_dir / "color").is_dir():
        return scene_dir
    steps = []
    for d in scene_dir.iterdir() if scene_dir.is_dir() else ():
        m = _PREDICTIONS_RE.match(d.name)
        if m and d.is_dir() and (d / "color").is_dir():
            steps.append((int(m.group(1)), d))
    return max(steps)[1] if steps else None


def _gaussian_splatting_folder(scene_dir: Path) -> Path | None:
    """``test/ours_<iteration>/`` with ``renders/`` (the highest iteration), as 3DGS's ``render.py`` writes it."""
    test = scene_dir / "test"
    steps = []
    for d in test.iterdir() if test.is_dir() else ():
        m = _OURS_RE.match(d.name)
        if m and (d / "renders").is_dir():
            steps.append((int(m.group(1)), d))
    return max(steps)[1] if steps else None


def _train_views_dir(train_views: Path | None, scene: str) -> Path | None:
    if train_views is None:
        return None
    for candidate in (train_views / scene / "images", train_views / scene, train_views):
        if candidate.is_dir() and any(p.suffix.lower() in IMAGE_EXTENSIONS for p in candidate.iterdir()):
            return candidate
    return None


def _split_names(split: str | None) -> str:
    return split if split else "|".join(_NERFSTUDIO_SPLITS)


def _nerfstudio_split(scene_dir: Path, split: str | None) -> str | None:
    splits = (split,) if split else _NERFSTUDIO_SPLITS
    for s in splits:
        if (scene_dir / s / "rgb").is_dir():
            return s
    return None


def detect_layout(scene_dir: str | os.PathLike, split: str | None = None) -> str | None:
    """The layout of one scene folder (``"scenemetrics"``, ``"nerfbaselines"``, ``"nerfstudio"``), or ``None``."""
    d = Path(scene_dir)
    if (d / "renders").is_dir():
        return "scenemetrics"
    if _nerfbaselines_folder(d) is not None:
        return "nerfbaselines"
    if _nerfstudio_split(d, split) is not None:
        return "nerfstudio"
    if _gaussian_splatting_folder(d) is not None:
        return "gaussian-splatting"
    return None


def _fallback(primary: Path, data: Path | None, scene: str, name: str, *, is_dir: bool) -> Path | None:
    for candidate in (primary, (data / scene / name) if data is not None else None):
        if candidate is not None and (candidate.is_dir() if is_dir else candidate.is_file()):
            return candidate
    return None


def _read_unit(
    method: str,
    scene: str,
    scene_dir: Path,
    layout: str,
    data: Path | None,
    split: str | None,
    train_views: Path | None = None,
) -> Unit:
    mask_dir = None
    if layout == "scenemetrics":
        folder = scene_dir
        render_dir = scene_dir / "renders"
        gt_dir = _fallback(scene_dir / "gt", data, scene, "gt", is_dir=True)
        train_dir = _fallback(scene_dir / "train", data, scene, "train", is_dir=True)
    elif layout == "nerfbaselines":
        found = _nerfbaselines_folder(scene_dir)
        if found is None:
            raise ValueError(f"{scene_dir} is not a NerfBaselines predictions folder (no color/ folder)")
        folder = found
        render_dir = found / "color"
        gt_dir = _fallback(found / "gt-color", data, scene, "gt", is_dir=True)
        train_dir = _fallback(scene_dir / "train", data, scene, "train", is_dir=True)
        mask_dir = found / "mask" if (found / "mask").is_dir() else None
    elif layout == "nerfstudio":
        s = _nerfstudio_split(scene_dir, split)
        if s is None:
            raise ValueError(f"{scene_dir} has no ns-render output ({_split_names(split)}/rgb/)")
        folder = scene_dir
        render_dir = scene_dir / s / "rgb"
        gt_dir = _fallback(scene_dir / s / "gt-rgb", data, scene, "gt", is_dir=True)
        train_dir = _fallback(scene_dir / "train" / "gt-rgb", data, scene, "train", is_dir=True)
    elif layout == "gaussian-splatting":
        found = _gaussian_splatting_folder(scene_dir)
        if found is None:
            raise ValueError(f"{scene_dir} has no 3DGS render.py output (test/ours_<iteration>/renders/)")
        folder = found
        render_dir = found / "renders"
        gt_dir = _fallback(found / "gt", data, scene, "gt", is_dir=True)
        train_dir = _fallback(scene_dir / "train", data, scene, "train", is_dir=True)
    else:
        raise ValueError(f"`layout` must be one of {', '.join(LAYOUTS)}; received {layout!r}")
    problems: list[tuple[str, str]] = []
    try:
        renders = list_image_files(render_dir)
    except ValueError as err:
        renders, problems = {}, [("renders", str(err))]
    gt = None
    if gt_dir is not None:
        try:
            gt = list_image_files(gt_dir)
        except ValueError as err:
            gt, problems = {}, [*problems, ("gt", str(err))]
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
    if train_dir is None:
        train_dir = _train_views_dir(train_views, scene)
    train: tuple[Path, ...] = ()
    if train_dir is not None:
        try:
            train = tuple(p for _, p in sorted(list_image_files(train_dir).items()))
        except ValueError as err:
            problems.append(("train", str(err)))
    if not views and not problems:
        problems.append(("renders", f"no rendered image in {render_dir}"))
    cameras = _fallback(scene_dir / "cameras.json", data, scene, "cameras.json", is_dir=False)
    return Unit(
        method=method,
        scene=scene,
        layout=layout,
        folder=folder,
        views=views,
        train=train,
        cameras=cameras,
        has_gt=gt_dir is not None,
        problems=tuple(problems) + pair_problems,
    )


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
) -> list[Unit]:
    """Every (method, scene) unit under ``root``, sorted by method then scene.

    Args:
        root: folder holding one folder per method, each holding one folder per scene.
        layout: ``"auto"`` (detect per scene folder), ``"scenemetrics"``, ``"nerfbaselines"`` or ``"nerfstudio"``.
        data: optional dataset folder ``<data>/<scene>/{gt,train}/`` (+ ``cameras.json``) used for whatever a
            scene folder lacks (NerfBaselines and ns-render outputs usually hold no training views).
        split: ns-render split folder (default ``test``, else ``val``).
        methods: only these methods (names must exist).
        train_views: training views for scenes that have none: ``<dir>/<scene>/images/``, ``<dir>/<scene>/`` or
            ``<dir>`` (e.g. the source dataset of 3DGS models).
        scenes: only these scenes (names must exist in at least one method).
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
                    f"skipped {scene_dir}: no renders/ (scenemetrics), color/ (NerfBaselines), "
                    f"{_split_names(split)}/rgb/ (ns-render) or test/ours_<iteration>/renders/ (3DGS) folder",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            units.append(_read_unit(method, scene_dir.name, scene_dir, kind, data_p, split, train_p))
    if scenes is not None:
        _select(sorted(all_scenes), scenes, "scene(s)", root_p)
    if not units:
        raise ValueError(
            f"no (method, scene) folder to evaluate under {root_p}: expected <root>/<method>/<scene>/ with renders/ "
            "(or a NerfBaselines color/ folder, or ns-render <split>/rgb/)"
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
