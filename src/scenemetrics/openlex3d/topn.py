"""Top-N category frequency (OpenLex3D Sec. 3.3.1, Eq. 1; toolkit ``category_frequency_topn``).

Every GT point of an evaluated object is matched to its nearest (downsampled) predicted point. It is "missing" if
that point is farther than ``missing_threshold``; otherwise its category is the best category (synonyms >
depictions > vis_sim > clutter > incorrect) among the matched point's N highest-scoring prompts. Per object the
categories' point fractions are computed, and the scene value of a category is the mean over objects.

This module holds the math on a prepared scene; :func:`~scenemetrics.openlex3d.topn_frequency`
(in ``segmentation.py``) runs the shared preprocessing pass and calls it.

Example:
    >>> import torch
    >>> from scenemetrics.openlex3d import topn_frequency
    >>> cats = {"dataset": {"samples": [{"object_id": 1, "labels": {"image_attributes": {"synonyms": ["sofa"]}}}]}}
    >>> res = topn_frequency(torch.zeros(1, 3), torch.tensor([[1.0, 0.0]]), None, torch.eye(2), ["sofa", "lamp"],
    ...                      torch.zeros(2, 3), torch.tensor([1, 1]), cats, top_n=1, voxel_size=None)
    >>> res.frequencies["synonyms"], res.point_categories.tolist()
    (1.0, [0, 0])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from scenemetrics.checks import check_int

from ._scene import PreparedScene
from .categories import CATEGORIES

__all__ = ["TopNResult"]

_MISSING = CATEGORIES.index("missing")


@dataclass(frozen=True)
class TopNResult:
    """Top-N category frequency of one scene.

    Attributes:
        frequencies: category -> mean over evaluated objects of the fraction of the object's GT points in that
            category (keys in :data:`CATEGORIES` order; they sum to 1; NaN when no object is evaluated).
        object_ids: ``(O,)`` int64 evaluated objects present in ``gt_ids``, ascending.
        object_frequencies: ``(O, 6)`` float64, row ``o`` = category fractions of object ``object_ids[o]``.
        point_categories: ``(G,)`` int8 category code per GT point (index into :data:`CATEGORIES`), -1 = not
            evaluated.
        point_labels: ``(G, N)`` int64 prompt indices of the matched prediction's top-N, best first (for every GT
            point, evaluated or not; -1 when there is no prediction).
        distances: ``(G,)`` float64 distance to the matched prediction (inf when there is none).
        top_n: N.
        n_unlabelled_points: GT points whose id is not in the categories (including -100 and -1).
    """

    frequencies: dict[str, float]
    object_ids: Tensor
    object_frequencies: Tensor
    point_categories: Tensor
    point_labels: Tensor
    distances: Tensor
    top_n: int
    n_unlabelled_points: int


def check_excluded_labels(excluded_labels: Any) -> tuple[str, ...]:
    if isinstance(excluded_labels, str) or not isinstance(excluded_labels, Sequence):
        raise TypeError(f"`excluded_labels` must be a sequence of strings; received {type(excluded_labels).__name__}")
    if not all(isinstance(e, str) for e in excluded_labels):
        raise TypeError("`excluded_labels` must contain only strings")
    return tuple(excluded_labels)


def check_top_n(top_n: Any, n_prompts: int) -> int:
    return check_int(top_n, "top_n", low=1, high=n_prompts)


def topn_from_labels(
    scene: PreparedScene,
    labels: np.ndarray,
    top_n: int,
    missing_threshold: float,
    excluded_labels: tuple[str, ...],
) -> TopNResult:
    """Top-N result from a prepared scene and the ``(G, >= top_n)`` top labels of every GT point's match."""
    cats, ids = scene.categories, scene.gt_ids
    uniq, inverse = np.unique(ids, return_inverse=True)
    evaluated_u = np.array([cats.is_evaluated(int(o), excluded_labels) for o in uniq], dtype=bool)
    labelled_u = np.array([int(o) in cats for o in uniq], dtype=bool)
    object_ids = uniq[evaluated_u]
    obj_row = (np.cumsum(evaluated_u) - 1)[inverse]
    evaluated = evaluated_u[inverse]
    n_unlabelled = int((~labelled_u[inverse]).sum())

    point_cat = np.full(len(ids), -1, dtype=np.int8)
    ev = np.flatnonzero(evaluated)
    missing = ~(scene.distances[ev] <= missing_threshold)  # strict ">" (and inf = no prediction)
    point_cat[ev[missing]] = _MISSING
    present = ev[~missing]
    if present.size:
        table = cats.code_table([int(o) for o in object_ids], scene.prompts)
        point_cat[present] = table[obj_row[present][:, None], labels[present, :top_n]].min(axis=1)

    n_obj, n_cat = len(object_ids), len(CATEGORIES)
    counts = np.bincount(obj_row[ev] * n_cat + point_cat[ev], minlength=n_obj * n_cat).reshape(n_obj, n_cat)
    object_freq = counts / counts.sum(axis=1, keepdims=True) if n_obj else np.zeros((0, n_cat))
    if n_obj:
        freq = object_freq.mean(axis=0)
    else:
        warnings.warn(
            "topn_frequency: no GT point belongs to an evaluated object (in the categories, with a synonym, not an "
            "excluded label); the frequencies are NaN",
            UserWarning,
            stacklevel=3,
        )
        freq = np.full(n_cat, np.nan)
    return TopNResult(
        frequencies={c: float(f) for c, f in zip(CATEGORIES, freq, strict=True)},
        object_ids=torch.from_numpy(object_ids.astype(np.int64)),
        object_frequencies=torch.from_numpy(object_freq.astype(np.float64)),
        point_categories=torch.from_numpy(point_cat),
        point_labels=torch.from_numpy(np.ascontiguousarray(labels[:, :top_n])),
        distances=torch.from_numpy(scene.distances.copy()),
        top_n=top_n,
        n_unlabelled_points=n_unlabelled,
    )


def gt_top_labels(scene: PreparedScene, rows: np.ndarray, top: np.ndarray) -> np.ndarray:
    """``(G, N)`` top labels of every GT point's matched feature row (-1 rows without prediction)."""
    out = np.full((len(scene.gt_rows), top.shape[1]), -1, dtype=np.int64)
    has = scene.gt_rows >= 0
    out[has] = top[np.searchsorted(rows, scene.gt_rows[has])]
    return out
