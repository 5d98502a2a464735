"""Top-N category frequency (OpenLex3D Sec. 3.3.1, Eq. 1; toolkit ``category_frequency_topn``) and its IoU form.

Every GT point of an evaluated object is matched to its nearest (downsampled) predicted point. It is "missing" if
that point is farther than ``missing_threshold``; otherwise its category is the best category (synonyms >
depictions > vis_sim > clutter > incorrect) among the matched point's N highest-scoring prompts. Per object the
categories' point fractions are computed, and the scene value of a category is the mean over objects.

Two forms (``form=`` of :func:`~scenemetrics.openlex3d.evaluate_segmentation`, the metric and the CLI):

* ``"frequency"`` (default): the toolkit's ``category_frequency_topn``, the numbers of the published tables (the
  NeurIPS version calls it "Top-N Frequency"). Per object ``n_{o,c} / n_o``: a recall, without a false-positive term.
* ``"iou"``: the paper's first (arXiv v1) form, "Top-N IoU" = ``TP / (TP + FP + FN)``, which its public text names
  without defining the sets and which the toolkit never computed. **Decision:** per evaluated object ``o`` and tier
  ``c`` (synonyms, depictions, vis_sim, clutter), ``TP`` = GT points of ``o`` in category ``c`` (as in the frequency
  form), ``FN`` = the other GT points of ``o`` (another category, missing or incorrect), and ``FP`` = GT points of
  *other* objects of the categories file (``-100`` and unlisted ids are ignored) that have a prediction within
  ``missing_threshold``, whose top-N labels are **incorrect for their own object** and whose best category with
  respect to ``o`` is ``c``: a wrong label that names ``o`` (its feature leaked onto another object). A label that
  is right for the point's own object (a chair labelled "chair" next to another chair) is not a false positive. So
  ``IoU_{o,c} = n_{o,c} / (n_o + FP_{o,c})``, never above the object's frequency and equal to it when nothing
  leaks; the scene value is the mean over the same evaluated objects.

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

from scenemetrics._lazy import lazy_exports
from scenemetrics.checks import check_int

from ._scene import PreparedScene
from .categories import CATEGORIES

__all__ = ["TIERS", "TOPN_FORMS", "TopNIoUResult", "TopNResult"]

_MISSING = CATEGORIES.index("missing")
_INCORRECT = CATEGORIES.index("incorrect")

TIERS = CATEGORIES[:4]
"""The label tiers the IoU form scores: ``("synonyms", "depictions", "vis_sim", "clutter")``."""

TOPN_FORMS = ("frequency", "iou")
"""The forms of Top-N: the toolkit's category frequency and the paper's IoU ``TP / (TP + FP + FN)``."""


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


@dataclass(frozen=True)
class TopNIoUResult:
    """Top-N IoU (the paper's ``TP / (TP + FP + FN)`` form) of one scene.

    Attributes:
        ious: tier -> mean over evaluated objects of ``TP / (TP + FP + FN)`` (keys :data:`TIERS`; NaN when no object
            is evaluated).
        object_ids: ``(O,)`` int64 evaluated objects present in ``gt_ids``, ascending (as in :class:`TopNResult`).
        object_ious: ``(O, 4)`` float64 per object and tier.
        tp: ``(O, 4)`` int64 GT points of the object in the tier.
        fp: ``(O, 4)`` int64 GT points of other listed objects whose labels are wrong for them and name the object
            in the tier.
        fn: ``(O, 4)`` int64 the object's other GT points (``n_o - tp``).
        top_n: N.
        n_unlabelled_points: GT points whose id is not in the categories (including -100 and -1).
    """

    ious: dict[str, float]
    object_ids: Tensor
    object_ious: Tensor
    tp: Tensor
    fp: Tensor
    fn: Tensor
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


def topn_iou_from_labels(
    scene: PreparedScene,
    labels: np.ndarray,
    top_n: int,
    missing_threshold: float,
    excluded_labels: tuple[str, ...],
    frequency: TopNResult | None = None,
) -> TopNIoUResult:
    """Top-N IoU from a prepared scene and the top labels of every GT point's match (form ``"iou"``).

    ``frequency``, the :class:`TopNResult` of the same scene and N when already computed, supplies the true
    positives; otherwise they are computed here.
    """
    if frequency is None:
        frequency = topn_from_labels(scene, labels, top_n, missing_threshold, excluded_labels)
    object_ids = frequency.object_ids.numpy()
    n_obj = len(object_ids)
    counts = np.zeros((n_obj, len(CATEGORIES)), dtype=np.int64)
    ev_codes = frequency.point_categories.numpy()
    ids = scene.gt_ids
    if n_obj:
        row = np.searchsorted(object_ids, ids)
        ev = ev_codes >= 0
        codes = row[ev] * len(CATEGORIES) + ev_codes[ev]
        counts = np.bincount(codes, minlength=n_obj * len(CATEGORIES)).reshape(n_obj, len(CATEGORIES))
    n_o = counts.sum(axis=1)
    tp = counts[:, : len(TIERS)]
    fp = _leaks(scene, labels[:, :top_n], missing_threshold, object_ids)
    fn = n_o[:, None] - tp
    if n_obj:
        object_ious = tp / (tp + fp + fn)  # the denominator is n_o + fp >= 1
        ious = object_ious.mean(axis=0)
    else:
        warnings.warn(
            "topn_iou: no GT point belongs to an evaluated object (in the categories, with a synonym, not an excluded "
            "label); the IoUs are NaN",
            UserWarning,
            stacklevel=3,
        )
        object_ious = np.zeros((0, len(TIERS)))
        ious = np.full(len(TIERS), np.nan)
    return TopNIoUResult(
        ious={c: float(v) for c, v in zip(TIERS, ious, strict=True)},
        object_ids=frequency.object_ids,
        object_ious=torch.from_numpy(object_ious.astype(np.float64)),
        tp=torch.from_numpy(tp.astype(np.int64)),
        fp=torch.from_numpy(fp.astype(np.int64)),
        fn=torch.from_numpy(fn.astype(np.int64)),
        top_n=top_n,
        n_unlabelled_points=frequency.n_unlabelled_points,
    )


_LEAK_CHUNK = 1 << 22  # (objects x label rows x N) codes gathered at once


def _leaks(scene: PreparedScene, labels: np.ndarray, missing_threshold: float, object_ids: np.ndarray) -> np.ndarray:
    """``(O, 4)`` false positives of the IoU form: per evaluated object and tier, the GT points of other listed
    objects, with a prediction within ``missing_threshold``, whose labels are incorrect for their own object and
    whose best category with respect to the evaluated object is that tier."""
    cats, ids = scene.categories, scene.gt_ids
    fp = np.zeros((len(object_ids), len(TIERS)), dtype=np.int64)
    uniq, inverse = np.unique(ids, return_inverse=True)
    listed_u = np.array([int(o) in cats for o in uniq], dtype=bool)
    inverse = inverse.reshape(-1)
    candidates = np.flatnonzero(listed_u[inverse] & (scene.distances <= missing_threshold))
    if not len(object_ids) or not candidates.size:
        return fp
    # the category of each candidate's labels for its own object; only the incorrect ones can leak
    own_ids = uniq[listed_u]
    own_table = cats.code_table([int(o) for o in own_ids], scene.prompts)
    own_row = np.searchsorted(own_ids, ids[candidates])
    own_best = own_table[own_row[:, None], labels[candidates]].min(axis=1)
    wrong = candidates[own_best == _INCORRECT]
    if not wrong.size:
        return fp
    # points that share their matched prediction share their labels: count each label row once
    rows, counts = np.unique(labels[wrong], axis=0, return_counts=True)
    table = cats.code_table([int(o) for o in object_ids], scene.prompts)
    step = max(1, _LEAK_CHUNK // max(1, rows.size))
    for a in range(0, len(object_ids), step):
        best = table[a : a + step][:, rows].min(axis=2)  # (chunk, R): category with respect to each object
        for t in range(len(TIERS)):
            fp[a : a + step, t] = ((best == t) * counts).sum(axis=1)
    return fp


def gt_top_labels(scene: PreparedScene, rows: np.ndarray, top: np.ndarray) -> np.ndarray:
    """``(G, N)`` top labels of every GT point's matched feature row (-1 rows without prediction)."""
    out = np.full((len(scene.gt_rows), top.shape[1]), -1, dtype=np.int64)
    has = scene.gt_rows >= 0
    out[has] = top[np.searchsorted(rows, scene.gt_rows[has])]
    return out


# ``topn_frequency`` runs the shared pass of ``segmentation.py``, which imports this module (imports flow one way);
# ``scenemetrics.openlex3d.topn.topn_frequency``, its former path, still resolves on first use
_old_path, __getattr__, __dir__ = lazy_exports(__name__, {"topn_frequency": "scenemetrics.openlex3d.segmentation"})
