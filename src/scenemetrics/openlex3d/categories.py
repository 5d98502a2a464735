"""OpenLex3D ground-truth label categories: loading, label normalisation and per-label matching.

A scene's ``gt_categories.json`` gives every GT object four label lists: ``synonyms``, ``depictions``,
``vis_sim`` (visually similar) and ``clutter`` (ids of neighbouring objects, whose labels count as clutter).
Predicted labels are matched against them after :func:`normalize_label` (every ASCII space removed, nothing else:
matching is case-sensitive).

Example:
    >>> from scenemetrics.openlex3d import Categories
    >>> cats = Categories.from_dict({"dataset": {"samples": [
    ...     {"object_id": 1, "name": "sofa", "labels": {"image_attributes": {
    ...         "synonyms": ["sofa", "couch"], "depictions": [], "vis_sim": ["arm chair"], "clutter": ["2"]}}},
    ...     {"object_id": 2, "name": "lamp", "labels": {"image_attributes": {"synonyms": ["lamp"]}}}]}})
    >>> cats.match(1, "armchair"), cats.match(1, "lamp"), cats.match(1, "Sofa")
    ('vis_sim', 'clutter', 'incorrect')
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = [
    "CATEGORIES",
    "EXCLUDED_LABELS",
    "Categories",
    "ObjectLabels",
    "as_categories",
    "load_categories",
    "normalize_label",
]

CATEGORIES = ("synonyms", "depictions", "vis_sim", "clutter", "missing", "incorrect")
"""Category names; a category's integer code is its position (``missing`` = 4, ``incorrect`` = 5, ``-1`` = none)."""

EXCLUDED_LABELS = ("wall", "floor", "ceiling", "doorframe", "ledge", "windowledge")
"""Objects with one of these (normalised) synonyms are not evaluated by Top-N (toolkit defaults)."""

_LABEL_KEYS = ("synonyms", "depictions", "vis_sim")
_CODE = {name: code for code, name in enumerate(CATEGORIES)}


def normalize_label(label: str) -> str:
    """Remove every ASCII space (U+0020) and nothing else: case, tabs and other whitespace are kept.

    Example:
        >>> normalize_label("counter top"), normalize_label("Chair\\t")
        ('countertop', 'Chair\\t')
    """
    return label.replace(" ", "")


@dataclass(frozen=True)
class ObjectLabels:
    """The human labels of one GT object (raw strings, file order).

    Attributes:
        object_id: id of the object in the scene's GT instance segmentation.
        name: informative name (unused by the metrics).
        synonyms: labels that name the object.
        depictions: labels of what the object depicts (e.g. the picture on a poster).
        vis_sim: labels of visually similar objects.
        clutter: ids of neighbouring objects whose labels count as "clutter".
        flag: optional annotation flag such as ``"ambiguous"`` (unused by every metric).
    """

    object_id: int
    name: str
    synonyms: tuple[str, ...]
    depictions: tuple[str, ...]
    vis_sim: tuple[str, ...]
    clutter: tuple[int, ...]
    flag: str | None = None


def _parse_int(value: Any) -> int | None:
    """An int (not a bool) or a string ``int()`` accepts; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _parse_labels(sample: int, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"sample {sample}: `{key}` must be a list of strings; received {type(value).__name__}")
    for j, label in enumerate(value):
        if not isinstance(label, str):
            raise ValueError(f"sample {sample}: `{key}[{j}]` must be a string; received {label!r}")
    return tuple(value)


class Categories(Mapping[int, ObjectLabels]):
    """The GT categories of one scene: a read-only mapping ``object_id -> ObjectLabels`` in file order.

    Args:
        objects: the objects, in file order; ids must be unique.

    Raises:
        TypeError: an element is not an :class:`ObjectLabels`.
        ValueError: duplicate object id.

    Warns:
        UserWarning: once, listing clutter ids that name no object of the scene (they are kept and never match).

    Example:
        >>> cats = Categories([ObjectLabels(3, "chair", ("chair",), (), ("stool",), ())])
        >>> list(cats), cats.match(3, "stool"), cats.is_evaluated(3)
        ([3], 'vis_sim', True)
    """

    def __init__(self, objects: Iterable[ObjectLabels]) -> None:
        self._objects: dict[int, ObjectLabels] = {}
        for obj in objects:
            if not isinstance(obj, ObjectLabels):
                raise TypeError(f"Categories expects ObjectLabels; received {type(obj).__name__}")
            if obj.object_id in self._objects:
                raise ValueError(f"duplicate object_id {obj.object_id} in the categories")
            self._objects[obj.object_id] = obj
        unknown = sorted({c for obj in self._objects.values() for c in obj.clutter if c not in self._objects})
        if unknown:
            warnings.warn(
                f"clutter ids {unknown} name no object of the categories; they never match a label",
                UserWarning,
                stacklevel=2,
            )

    # Mapping protocol
    def __getitem__(self, object_id: int) -> ObjectLabels:
        return self._objects[object_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def __repr__(self) -> str:
        return f"Categories({len(self)} objects)"

    @classmethod
    def from_dict(cls, data: dict) -> Categories:
        """Build from the parsed JSON of a ``gt_categories.json`` file (``{"dataset": {"samples": [...]}}``).

        Missing ``labels``, ``image_attributes`` keys and ``name`` default to empty (the toolkit would raise
        ``KeyError`` for a missing ``synonyms``/``depictions``/``vis_sim``). Raw label strings are kept.

        Raises:
            TypeError: ``data`` is not a dict.
            ValueError: malformed structure, missing/non-int/duplicate ``object_id``, a non-string label, or a
                clutter entry that is neither an int nor a string of an int; the message names the sample index.
        """
        if not isinstance(data, dict):
            raise TypeError(f"categories data must be a dict (parsed gt_categories.json); received {type(data)}")
        dataset = data.get("dataset")
        if not isinstance(dataset, dict) or not isinstance(dataset.get("samples"), list):
            raise ValueError('categories data must look like {"dataset": {"samples": [...]}}')
        objects = []
        seen: set[int] = set()
        for i, sample in enumerate(dataset["samples"]):
            if not isinstance(sample, dict):
                raise ValueError(f"sample {i}: must be an object (dict); received {type(sample).__name__}")
            if "object_id" not in sample:
                raise ValueError(f"sample {i}: missing `object_id`")
            oid = sample["object_id"]
            if isinstance(oid, bool) or not isinstance(oid, numbers.Integral):
                raise ValueError(f"sample {i}: `object_id` must be an int; received {oid!r}")
            oid = int(oid)
            if oid in seen:
                raise ValueError(f"sample {i}: duplicate `object_id` {oid}")
            seen.add(oid)
            name = sample.get("name", "")
            if not isinstance(name, str):
                raise ValueError(f"sample {i}: `name` must be a string; received {name!r}")
            labels = sample.get("labels") or {}
            if not isinstance(labels, dict):
                raise ValueError(f"sample {i}: `labels` must be an object (dict); received {type(labels).__name__}")
            attrs = labels.get("image_attributes", {})
            if not isinstance(attrs, dict):
                raise ValueError(
                    f"sample {i}: `labels.image_attributes` must be an object (dict); received {type(attrs).__name__}"
                )
            lists = {key: _parse_labels(i, key, attrs.get(key)) for key in _LABEL_KEYS}
            raw_clutter = attrs.get("clutter") or []
            if not isinstance(raw_clutter, (list, tuple)):
                raise ValueError(f"sample {i}: `clutter` must be a list of ids; received {type(raw_clutter).__name__}")
            clutter = []
            for j, entry in enumerate(raw_clutter):
                value = _parse_int(entry)
                if value is None:
                    raise ValueError(
                        f"sample {i}: `clutter[{j}]` must be an int or a string of an int; received {entry!r}"
                    )
                clutter.append(value)
            flag = labels.get("flag")
            if flag is not None and not isinstance(flag, str):
                raise ValueError(f"sample {i}: `flag` must be a string; received {flag!r}")
            objects.append(ObjectLabels(oid, name, lists["synonyms"], lists["depictions"], lists["vis_sim"],
                                        tuple(clutter), flag))  # fmt: skip
        return cls(objects)

    def to_dict(self) -> dict:
        """The ``gt_categories.json`` structure (clutter ids as strings); ``from_dict(to_dict())`` round-trips."""
        samples = []
        for obj in self._objects.values():
            labels: dict[str, Any] = {
                "image_attributes": {
                    "synonyms": list(obj.synonyms),
                    "depictions": list(obj.depictions),
                    "vis_sim": list(obj.vis_sim),
                    "clutter": [str(c) for c in obj.clutter],
                }
            }
            if obj.flag is not None:
                labels["flag"] = obj.flag
            samples.append({"object_id": obj.object_id, "name": obj.name, "labels": labels})
        return {"dataset": {"samples": samples}}

    @cached_property
    def _normalized(self) -> dict[int, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        return {
            oid: tuple(tuple(normalize_label(s) for s in getattr(obj, key)) for key in _LABEL_KEYS)  # type: ignore[misc]
            for oid, obj in self._objects.items()
        }

    def _clutter_labels(self, object_id: int) -> set[str]:
        out: set[str] = set()
        for cid in self._objects[object_id].clutter:
            for labels in self._normalized.get(cid, ()):
                out.update(labels)
        return out

    def match(self, object_id: int, label: str) -> str:
        """Category of a predicted ``label`` for object ``object_id`` (OpenLex3D Sec. 3.3.1).

        The first hit of synonyms, depictions, vis_sim wins; then ``"clutter"`` if the label is a synonym,
        depiction or vis_sim of an object listed in the object's clutter; else ``"incorrect"``. Labels are
        compared after :func:`normalize_label`, case-sensitively.

        Raises:
            KeyError: ``object_id`` is not in the categories.
        """
        if object_id not in self._objects:
            raise KeyError(f"object_id {object_id} is not in the categories")
        n = normalize_label(label)
        for key, labels in zip(_LABEL_KEYS, self._normalized[object_id], strict=True):
            if n in labels:
                return key
        return "clutter" if n in self._clutter_labels(object_id) else "incorrect"

    def is_evaluated(self, object_id: int, excluded_labels: Sequence[str] = EXCLUDED_LABELS) -> bool:
        """Whether Top-N evaluates the object: not ``-100``, listed with >= 1 synonym, no excluded synonym.

        Excluded labels and synonyms are compared normalised and case-sensitively.
        """
        if object_id == -100 or object_id not in self._objects:
            return False
        synonyms = self._normalized[object_id][0]
        if not synonyms:
            return False
        excluded = {normalize_label(e) for e in excluded_labels}
        return not any(s in excluded for s in synonyms)

    def code_table(self, object_ids: Sequence[int], prompts: Sequence[str]) -> np.ndarray:
        """``int8`` table ``(len(object_ids), len(prompts))`` of category codes (0-3, or 5 = incorrect).

        Row ``o``, column ``m`` is the code of :meth:`match` ``(object_ids[o], prompts[m])``.
        """
        by_label: dict[str, list[int]] = {}
        for m, p in enumerate(prompts):
            by_label.setdefault(normalize_label(p), []).append(m)
        table = np.full((len(object_ids), len(prompts)), _CODE["incorrect"], dtype=np.int8)
        for row, oid in enumerate(object_ids):
            syn, dep, vis = self._normalized[oid]
            # later assignments win, so go from the lowest-priority category to the highest
            for code, labels in ((3, self._clutter_labels(oid)), (2, vis), (1, dep), (0, syn)):
                cols = [m for s in labels for m in by_label.get(s, ())]
                table[row, cols] = code
        return table


def as_categories(categories: Any, name: str = "categories") -> Categories:
    """A :class:`Categories`, a parsed ``gt_categories.json`` dict or a path to one, as :class:`Categories`."""
    if isinstance(categories, Categories):
        return categories
    if isinstance(categories, dict):
        return Categories.from_dict(categories)
    if isinstance(categories, (str, os.PathLike)):
        return load_categories(categories)
    raise TypeError(
        f"`{name}` must be a Categories, a parsed gt_categories.json dict or a path; "
        f"received {type(categories).__name__}"
    )


def load_categories(path: str | os.PathLike) -> Categories:
    """Read a scene's ``gt_categories.json``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: invalid JSON or a malformed file (see :meth:`Categories.from_dict`); the message names the file.
    """
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{os.fspath(path)}: not valid JSON ({err})") from None
    try:
        return Categories.from_dict(data)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{os.fspath(path)}: {err}") from None
