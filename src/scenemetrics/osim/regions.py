"""User-given object regions for OSIM: boxes for objects the detector misses (the paper's stated limitation).

OSIM scores only the objects YOLOX finds on the references. ``boxes=`` adds regions of your own, per image, next to
the detector's: each is scored exactly as a detection with the same box and class would be (its ``r_ij`` from the
feature cells of the box, its ``s_ij`` from the saliency inside it) and pooled with the objects of its class. A box
without a class joins one extra pool, :data:`UNLABELLED` (class id ``num_classes``, one past the detector's), so the
per-class sums of OSIM have ``num_classes + 1`` entries.

Boxes are ``x1, y1, x2, y2`` in original image pixels with pixel-edge coordinates, as the detector reports them
(``[0, 0, W, H]`` is the whole image); parts outside the image are clamped as the detector's are, but a box must be
finite, have a positive width and height, and overlap the image.

Per image, ``boxes[i]`` is ``None`` (no region), a ``(K, 4)`` array-like (regions without a class), or a mapping
``{"boxes": (K, 4), "classes": [class, ...]}`` with one class per box: a class name of the detector's head, its
index, or ``None`` (unlabelled).

A **boxes file** (``scenemetrics osim --boxes FILE``, ``scenemetrics eval --osim-boxes FILE``) is JSON or CSV.
JSON::

    {"format": "scenemetrics.osim.boxes/1",
     "views": {"r_000": [{"box": [10, 20, 110, 200], "class": "chair"}, {"box": [300, 40, 380, 90]}],
               "r_001": [[12, 22, 108, 199]]},
     "scenes": {"garden": {"r_000": [{"box": [5, 5, 60, 60], "class": 58}]}}}

``views`` maps a view name (the image path relative to its folder, ``/``-separated; an image extension is ignored)
to its boxes, each ``{"box": [x1, y1, x2, y2], "class": ...}`` (``class`` optional) or a bare ``[x1, y1, x2, y2]``.
``scenes`` (only for ``scenemetrics eval``, whose result trees hold several scenes) maps a scene name to a
``views``-like mapping for that scene alone; a view of a scene listed there takes its boxes from there. ``format``
is optional. CSV: a header naming at least ``view,x1,y1,x2,y2``, optionally ``class`` and ``scene``, one box per
row (an empty ``class`` is unlabelled, an empty ``scene`` means every scene).

The reader treats the file as untrusted: at most :data:`MAX_FILE_BYTES` bytes, a spreadsheet's byte-order mark is
ignored, deep JSON nesting and malformed CSV fields are ``ValueError`` naming the file, every box is checked (four
finite numbers, ``x1 < x2``, ``y1 < y2``) and no name from the file ever becomes a path (names only select views).

Example:
    >>> import torch
    >>> given = check_given_boxes([[[0, 0, 8, 8]], {"boxes": [[2, 2, 6, 6]], "classes": ["cat"]}], 2, (16, 16), 80)
    >>> given[0][1].tolist(), given[1][1].tolist()  # unlabelled -> the extra pool 80; "cat" -> COCO index 15
    ([80], [15])
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from torch import Tensor

from scenemetrics.osim.yolox import COCO_CLASSES

__all__ = [
    "BOXES_FORMAT",
    "COCO_POOLS",
    "MAX_FILE_BYTES",
    "UNLABELLED",
    "BoxesFile",
    "GivenBoxes",
    "check_given_boxes",
    "pool_names",
    "read_boxes_file",
    "view_key",
]

UNLABELLED = "unlabelled"
"""Name of the pool of given boxes without a class (class id ``num_classes``, one past the detector's classes)."""

COCO_POOLS = (*COCO_CLASSES, UNLABELLED)
"""The pools of OSIM's per-class sums with the official 80-class detector: the COCO names, then ``"unlabelled"``."""

BOXES_FORMAT = "scenemetrics.osim.boxes/1"
"""The optional ``format`` value of a JSON boxes file."""

MAX_FILE_BYTES = 64 * 2**20
"""The largest boxes file read (64 MiB: about a million boxes); a larger file is refused before it is parsed."""

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")

GivenBoxes = tuple[Tensor, Tensor]
"""The checked regions of one image: ``(K, 4)`` float64 boxes in original pixels and ``(K,)`` int64 pool ids."""


def pool_names(class_names: Sequence[str] | None, num_classes: int) -> tuple[str, ...]:
    """The name of every pool of OSIM's per-class sums: the detector's classes, then :data:`UNLABELLED`.

    Example:
        >>> pool_names(["cat", "dog"], 2)
        ('cat', 'dog', 'unlabelled')
    """
    names = tuple(class_names) if class_names is not None else None
    if names is None:
        names = COCO_CLASSES if num_classes == len(COCO_CLASSES) else tuple(str(i) for i in range(num_classes))
    return (*names, UNLABELLED)


def _class_id(value: Any, where: str, names: Sequence[str], num_classes: int) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return num_classes
    if isinstance(value, bool):
        raise ValueError(f"{where}: a class must be a class name, an index or null; received {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if text in names:
            return names.index(text)
        if text.lstrip("-").isdigit():
            value = int(text)
        else:
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise ValueError(f"{where}: unknown class {text!r} (the detector's classes: {shown}; or leave it empty)")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"{where}: a class must be a class name, an index or null; received {value!r}")
    if value == -1:
        return num_classes
    if not 0 <= value < num_classes:
        raise ValueError(f"{where}: class index {value} is outside 0..{num_classes - 1} (or -1 / null: unlabelled)")
    return value


def _box_rows(value: Any, where: str) -> list[list[float]]:
    if isinstance(value, Tensor):
        value = value.detach().cpu().tolist()
    elif hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{where} must be a (K, 4) list of x1, y1, x2, y2 boxes; received {type(value).__name__}")
    rows = []
    for k, row in enumerate(value):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 4:
            raise ValueError(f"{where}[{k}] must be four numbers x1, y1, x2, y2; received {row!r:.80}")
        rows.append([_coordinate(v, f"{where}[{k}]") for v in row])
    return rows


def _coordinate(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: box coordinates must be numbers; received {v!r:.40}")
    x = float(v)
    if not math.isfinite(x):
        raise ValueError(f"{where}: box coordinates must be finite; received {v!r}")
    return x


def _check_inside(rows: list[list[float]], where: str, size: tuple[int, int]) -> None:
    h, w = size
    for k, (x1, y1, x2, y2) in enumerate(rows):
        if not (x1 < x2 and y1 < y2):
            raise ValueError(f"{where}[{k}] = {[x1, y1, x2, y2]} needs x1 < x2 and y1 < y2 (pixel edges)")
        if not (x1 < w and x2 > 0 and y1 < h and y2 > 0):
            raise ValueError(
                f"{where}[{k}] = {[x1, y1, x2, y2]} lies outside the {w}x{h} image (original pixels, [0, 0, {w}, {h}] "
                "is the whole image)"
            )


def check_given_boxes(
    boxes: Sequence[Any] | None,
    num_images: int,
    image_size: tuple[int, int],
    num_classes: int,
    class_names: Sequence[str] | None = None,
) -> list[GivenBoxes] | None:
    """Checked user-given regions, one entry per image (see the module for the accepted forms).

    Args:
        boxes: one entry per image, or ``None`` (no given region at all).
        num_images: the batch size B.
        image_size: ``(H, W)`` of the images, in pixels.
        num_classes: the detector's head size (unlabelled boxes get the pool id ``num_classes``).
        class_names: the head's class names (``None``: COCO for an 80-class head, the indices as text otherwise).

    Returns:
        ``None`` when ``boxes`` is ``None``, else per image ``(boxes (K, 4) float64, pool ids (K,) int64)``.

    Raises:
        ValueError: not one entry per image, a malformed box, a box outside the image or empty, an unknown class
            name, a class index out of range, or classes that do not match the boxes in number; the message names
            ``boxes[i]``.
    """
    if boxes is None:
        return None
    if isinstance(boxes, (str, bytes, Mapping)) or not isinstance(boxes, Sequence) or len(boxes) != num_images:
        got = len(boxes) if isinstance(boxes, Sequence) and not isinstance(boxes, (str, bytes)) else type(boxes)
        raise ValueError(f"`boxes` must hold one entry per image ({num_images}), each None, a (K, 4) list or "
                         f"{{'boxes': ..., 'classes': ...}}; received {got!r}")  # fmt: skip
    names = pool_names(class_names, num_classes)[:-1]
    out = []
    for i, entry in enumerate(boxes):
        where = f"boxes[{i}]"
        classes: Sequence[Any] | None = None
        if entry is None:
            rows: list[list[float]] = []
        elif isinstance(entry, Mapping):
            unknown = sorted(set(entry) - {"boxes", "classes"})
            if unknown or "boxes" not in entry:
                raise ValueError(f"{where} must be a mapping with 'boxes' (and optionally 'classes'); received keys "
                                 f"{sorted(entry)}")  # fmt: skip
            rows = _box_rows(entry["boxes"], f"{where}['boxes']")
            classes = entry.get("classes")
        else:
            rows = _box_rows(entry, where)
        _check_inside(rows, where, image_size)
        if classes is None:
            ids = [num_classes] * len(rows)
        else:
            if isinstance(classes, Tensor):
                classes = classes.tolist()
            if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence) or len(classes) != len(rows):
                raise ValueError(f"{where}['classes'] must hold one class per box ({len(rows)})")
            ids = [_class_id(c, f"{where}['classes'][{k}]", names, num_classes) for k, c in enumerate(classes)]
        out.append((torch.tensor(rows, dtype=torch.float64).view(-1, 4), torch.tensor(ids, dtype=torch.int64).view(-1)))
    return out


def view_key(name: str) -> str:
    """A view name as boxes files and result trees key it: ``/``-separated, an image extension dropped.

    Example:
        >>> view_key("sub\\\\r_000.PNG"), view_key("r_001")
        ('sub/r_000', 'r_001')
    """
    text = str(name).replace("\\", "/").strip()
    if PurePosixPath(text).suffix.lower() in _IMAGE_SUFFIXES:
        text = str(PurePosixPath(text).with_suffix(""))
    return text


@dataclass(frozen=True)
class BoxesFile:
    """The regions of a boxes file (:func:`read_boxes_file`), as given: classes are checked when used.

    Attributes:
        path: the file read.
        views: view name -> ``{"boxes": [[x1, y1, x2, y2], ...], "classes": [class or None, ...]}``.
        scenes: scene name -> the same mapping for that scene alone.
    """

    path: str
    views: Mapping[str, Mapping[str, list]] = field(default_factory=dict)
    scenes: Mapping[str, Mapping[str, Mapping[str, list]]] = field(default_factory=dict)

    def for_view(self, view: str, scene: str | None = None) -> Mapping[str, list] | None:
        """The regions of ``view`` (of ``scene``: its ``scenes`` entry first, then ``views``), or ``None``.

        Example:
            >>> f = BoxesFile("b.json", {"a": {"boxes": [[0, 0, 2, 2]], "classes": [None]}})
            >>> f.for_view("a.png"), f.for_view("b")
            ({'boxes': [[0, 0, 2, 2]], 'classes': [None]}, None)
        """
        key = view_key(view)
        if scene is not None and scene in self.scenes and key in self.scenes[scene]:
            return self.scenes[scene][key]
        return self.views.get(key)

    @property
    def num_boxes(self) -> int:
        """Boxes in the file."""
        per_scene = sum(len(e["boxes"]) for v in self.scenes.values() for e in v.values())
        return sum(len(e["boxes"]) for e in self.views.values()) + per_scene


def _add(table: dict[str, dict[str, list]], view: Any, box: list[float], cls: Any, where: str) -> None:
    if not isinstance(view, str) or not view.strip():
        raise ValueError(f"{where}: a view name must be a non-empty string; received {view!r:.80}")
    if any(ord(c) < 32 for c in view):
        raise ValueError(f"{where}: the view name {view!r:.80} holds control characters")
    if (cls is not None and not isinstance(cls, (str, int, float))) or isinstance(cls, bool):
        raise ValueError(f"{where}: a class must be a class name, an index or null; received {cls!r:.80}")
    entry = table.setdefault(view_key(view), {"boxes": [], "classes": []})
    entry["boxes"].append(box)
    entry["classes"].append(cls)


def _json_views(views: Any, path: str, where: str) -> dict[str, dict[str, list]]:
    if not isinstance(views, Mapping):
        raise ValueError(f"{path}: {where} must map view names to lists of boxes")
    table: dict[str, dict[str, list]] = {}
    for view, items in views.items():
        at = f"{path}: {where}[{view!r:.80}]"
        if not isinstance(items, list):
            raise ValueError(f"{at} must be a list of boxes")
        if not items:
            table.setdefault(view_key(str(view)), {"boxes": [], "classes": []})
        for k, item in enumerate(items):
            if isinstance(item, Mapping):
                extra = sorted(set(item) - {"box", "class"})
                if "box" not in item or extra:
                    raise ValueError(
                        f"{at}[{k}] must be {{'box': [x1, y1, x2, y2], 'class': ...}}; keys {sorted(item)}"
                    )
                box, cls = item["box"], item.get("class")
            else:
                box, cls = item, None
            _add(table, view, _box_rows([box], f"{at}[{k}]")[0], cls, f"{at}[{k}]")
    return table


def _read_text(path: str | os.PathLike) -> str:
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as err:
        raise ValueError(f"could not read boxes file {os.fspath(p)!r}: {err}") from None
    if size > MAX_FILE_BYTES:
        raise ValueError(
            f"boxes file {os.fspath(p)!r} is {size} bytes, more than the {MAX_FILE_BYTES} a boxes file may hold"
        )
    try:
        # utf-8-sig: spreadsheets start their CSV files with a byte-order mark, which must not become part of a name
        return p.read_bytes()[: MAX_FILE_BYTES + 1].decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"could not read boxes file {os.fspath(p)!r}: {err}") from None


def _read_json(text: str, path: str) -> BoxesFile:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:  # RecursionError: nesting deeper than Python's stack
        raise ValueError(f"{path}: not valid JSON ({type(err).__name__}: {err})") from None
    if not isinstance(doc, Mapping):
        raise ValueError(f"{path} must hold a JSON object with a 'views' (and/or 'scenes') mapping")
    unknown = sorted(set(doc) - {"format", "views", "scenes"})
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; a boxes file holds 'format', 'views' and 'scenes'")
    if "format" in doc and doc["format"] != BOXES_FORMAT:
        raise ValueError(f"{path}: `format` must be {BOXES_FORMAT!r}; received {doc['format']!r:.80}")
    if "views" not in doc and "scenes" not in doc:
        raise ValueError(f"{path} must hold a 'views' (and/or 'scenes') mapping from view names to boxes")
    views = _json_views(doc.get("views", {}), path, "views")
    scenes_doc = doc.get("scenes", {})
    if not isinstance(scenes_doc, Mapping):
        raise ValueError(f"{path}: 'scenes' must map scene names to view mappings")
    scenes = {}
    for scene, scene_views in scenes_doc.items():
        if not str(scene).strip():
            raise ValueError(f"{path}: a scene name must not be empty")
        scenes[str(scene)] = _json_views(scene_views, path, f"scenes[{scene!r:.80}]")
    return BoxesFile(path, views, scenes)


def _read_csv(text: str, path: str) -> BoxesFile:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        cols = [(c or "").strip() for c in (reader.fieldnames or [])]
        raw = list(reader)
        rows = [{(k or "").strip(): (v or "").strip() if isinstance(v, str) else v for k, v in r.items()} for r in raw]
    except csv.Error as err:
        raise ValueError(f"{path}, line {reader.line_num}: not a CSV table ({err})") from None
    required = ["view", "x1", "y1", "x2", "y2"]
    missing = [c for c in required if c not in cols]
    if missing:
        raise ValueError(f"{path}: a boxes CSV needs the columns {required} (and optionally class, scene); "
                         f"missing {missing}")  # fmt: skip
    views: dict[str, dict[str, list]] = {}
    scenes: dict[str, dict[str, dict[str, list]]] = {}
    for n, (row, original) in enumerate(zip(rows, raw, strict=True), start=2):
        where = f"{path}, line {n}"
        if None in original:  # more fields than the header names
            raise ValueError(f"{where}: more fields than the header's {len(cols)}")
        box = []
        for c in ("x1", "y1", "x2", "y2"):
            try:
                box.append(_coordinate(float(row[c]), where))
            except (TypeError, ValueError) as err:
                if isinstance(err, ValueError) and str(err).startswith(where):
                    raise
                raise ValueError(f"{where}: {c} = {row[c]!r:.40} is not a number") from None
        scene = row.get("scene") or ""
        target = scenes.setdefault(scene, {}) if scene else views
        _add(target, row["view"], box, row.get("class") or None, where)
    return BoxesFile(path, views, scenes)


def read_boxes_file(path: str | os.PathLike) -> BoxesFile:
    """Read a boxes file (JSON, or CSV by its ``.csv`` suffix; see the module for the formats).

    Boxes are checked for form here (four finite numbers, ``x1 < x2``, ``y1 < y2``); classes and the image size
    are checked when the boxes are used (:func:`check_given_boxes`), where the detector's classes and the image are
    known.

    Raises:
        ValueError: a file larger than :data:`MAX_FILE_BYTES`, not UTF-8, not valid JSON / CSV, or a malformed entry;
            the message names the file (and the line or key).

    Example:
        >>> import json, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "boxes.json")
        >>> _ = open(path, "w").write(json.dumps({"views": {"r_000.png": [{"box": [0, 0, 4, 4], "class": "cat"}]}}))
        >>> read_boxes_file(path).for_view("r_000")
        {'boxes': [[0.0, 0.0, 4.0, 4.0]], 'classes': ['cat']}
    """
    where = os.fspath(path)
    text = _read_text(path)
    out = _read_csv(text, where) if Path(path).suffix.lower() == ".csv" else _read_json(text, where)
    for table in (out.views, *out.scenes.values()):
        for key, entry in table.items():
            for k, (x1, y1, x2, y2) in enumerate(entry["boxes"]):
                if not (x1 < x2 and y1 < y2):
                    raise ValueError(f"{where}: view {key!r:.80}, box {k} = {[x1, y1, x2, y2]} needs x1 < x2 and "
                                     "y1 < y2 (pixel edges)")  # fmt: skip
    return out
