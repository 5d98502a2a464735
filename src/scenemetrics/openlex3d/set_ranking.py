"""Set ranking (OpenLex3D Sec. 3.3.1, Eqs. 2-4; Supp. Sec. 10; toolkit ``set_based_ranking``).

For every GT point of an object listed in the categories, its matched prediction ranks all ``M`` prompts by
cosine similarity. The object's synonyms should occupy the first ranks ``[0, |S| - 1]`` and its depictions and
visually similar labels the next ones ``[|S|, |S| + |DV| - 1]``. A label ranked inside its box scores 1; ranked
above its box (too early) it scores ``left(k) = 1 + (k - l) / (l + 1e-8)``, below (too late)
``right(k) = 1 - (k - r) / (L - r)`` with ``L = M - 1``.

Keys of :attr:`SetRankingResult.scores`, in order: ``overall`` (mR), ``synonyms``, ``secondary``,
``synonym_inlier_rate`` (I_S), ``secondary_inlier_rate`` (I_DV), ``synonym_undershooting``,
``secondary_overshooting``, ``secondary_undershooting``, and the paper's penalties ``P_S``, ``P_DV_left``,
``P_DV_right`` (one minus the three violator means; the toolkit reports the raw means only).

``compat="toolkit"`` computes the inlier rates and violator means of an object from its last GT point only, as
the toolkit's loop does (this produced the paper's numbers); the default ``"corrected"`` pools all points.

This module holds the math on a prepared scene; :func:`~scenemetrics.openlex3d.set_ranking`
(in ``segmentation.py``) runs the shared preprocessing pass and calls it.

Example:
    >>> import torch
    >>> from scenemetrics.openlex3d import set_ranking
    >>> cats = {"dataset": {"samples": [{"object_id": 1, "labels": {"image_attributes": {"synonyms": ["sofa"]}}}]}}
    >>> res = set_ranking(torch.zeros(1, 3), torch.tensor([[1.0, 0.0]]), None, torch.eye(2), ["sofa", "lamp"],
    ...                   torch.zeros(2, 3), torch.tensor([1, 1]), cats, voxel_size=None)
    >>> res.scores["overall"], res.scores["synonym_inlier_rate"]
    (1.0, 1.0)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ._scene import PreparedScene
from .categories import normalize_label

__all__ = ["SCORE_KEYS", "SetRankingResult"]

SCORE_KEYS = (
    "overall",
    "synonyms",
    "secondary",
    "synonym_inlier_rate",
    "secondary_inlier_rate",
    "synonym_undershooting",
    "secondary_overshooting",
    "secondary_undershooting",
    "P_S",
    "P_DV_left",
    "P_DV_right",
)
"""The 11 keys of :attr:`SetRankingResult.scores`; the first 8 are the columns of ``object_scores``."""

COMPAT_MODES = ("corrected", "toolkit")
"""Values of ``compat``: pool the inlier rates and violators over all GT points, or the toolkit's last point."""

_EPS = 1e-8


@dataclass(frozen=True)
class SetRankingResult:
    """Set ranking of one scene.

    Attributes:
        scores: the 11 :data:`SCORE_KEYS` -> NaN-skipping mean over objects (NaN where no object defines it).
        object_ids: ``(O,)`` int64 objects with >= 1 label in the prompt list that occur in ``gt_ids``, ascending.
        object_scores: ``(O, 8)`` float64, columns = the first 8 keys, NaN where undefined for the object.
        compat: ``"corrected"`` or ``"toolkit"``.
    """

    scores: dict[str, float]
    object_ids: Tensor
    object_scores: Tensor
    compat: str


@dataclass
class RankingPairs:
    """The (feature row, object) pairs whose label ranks set ranking needs (internal).

    Attributes:
        object_ids: ``(O,)`` objects of the metric, ascending.
        labels: ``(O, Lmax)`` prompt indices of the object's synonyms then secondary labels (padded with 0).
        n_syn, n_sec: ``(O,)`` set sizes |S_o| and |DV_o|.
        pair_row: ``(Q,)`` feature row of each pair, non-decreasing.
        pair_obj: ``(Q,)`` object position of each pair.
        pair_count: ``(Q,)`` number of GT points behind each pair.
        last_pair: ``(O,)`` pair of the object's last GT point (toolkit compat).
    """

    object_ids: np.ndarray
    labels: np.ndarray
    n_syn: np.ndarray
    n_sec: np.ndarray
    pair_row: np.ndarray
    pair_obj: np.ndarray
    pair_count: np.ndarray
    last_pair: np.ndarray


def build_pairs(scene: PreparedScene) -> RankingPairs:
    """Collect the objects of the metric, their label sets and the (row, object) pairs of their GT points."""
    cats = scene.categories
    first: dict[str, int] = {}
    for m, p in enumerate(scene.prompts):
        first.setdefault(normalize_label(p), m)

    def indices(labels: Sequence[str]) -> list[int]:
        # first prompt with that normalised string; labels absent from the prompt list are dropped, repeats kept
        return [first[n] for n in map(normalize_label, labels) if n in first]

    ids = scene.gt_ids
    uniq, inverse = np.unique(ids, return_inverse=True)
    obj_ids: list[int] = []
    syn_sets: list[list[int]] = []
    sec_sets: list[list[int]] = []
    obj_of_uniq = np.full(len(uniq), -1, dtype=np.int64)
    for u, oid in enumerate(uniq.tolist()):
        if oid not in cats:
            continue
        obj = cats[oid]
        s, dv = indices(obj.synonyms), indices(obj.depictions) + indices(obj.vis_sim)
        if s or dv:
            obj_of_uniq[u] = len(obj_ids)
            obj_ids.append(oid)
            syn_sets.append(s)
            sec_sets.append(dv)
    n_obj = len(obj_ids)
    width = max((len(s) + len(dv) for s, dv in zip(syn_sets, sec_sets, strict=True)), default=0)
    labels = np.zeros((n_obj, width), dtype=np.int64)
    for o, (s, dv) in enumerate(zip(syn_sets, sec_sets, strict=True)):
        labels[o, : len(s) + len(dv)] = s + dv

    point_obj = obj_of_uniq[inverse]
    points = np.flatnonzero((point_obj >= 0) & (scene.gt_rows >= 0))
    key = scene.gt_rows[points] * max(n_obj, 1) + point_obj[points]
    pair_key, pair_inverse, pair_count = np.unique(key, return_inverse=True, return_counts=True)
    # last GT point of each object: points are ascending, so a stable sort by object keeps that order per object
    order = np.argsort(point_obj[points], kind="stable")
    sorted_obj = point_obj[points][order]
    is_last = np.r_[sorted_obj[1:] != sorted_obj[:-1], True] if len(order) else np.zeros(0, dtype=bool)
    last_pair = np.full(n_obj, -1, dtype=np.int64)
    last_pair[sorted_obj[is_last]] = pair_inverse.reshape(-1)[order[is_last]]
    return RankingPairs(
        object_ids=np.asarray(obj_ids, dtype=np.int64),
        labels=labels,
        n_syn=np.array([len(s) for s in syn_sets], dtype=np.int64),
        n_sec=np.array([len(dv) for dv in sec_sets], dtype=np.int64),
        pair_row=pair_key // max(n_obj, 1),
        pair_obj=pair_key % max(n_obj, 1),
        pair_count=pair_count.astype(np.int64),
        last_pair=last_pair,
    )


def rank_scores(
    rank: np.ndarray | float, low: np.ndarray | float, high: np.ndarray | float, last: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, score)`` of 0-based ranks ``rank`` for the box ``[low, high]`` (Supp. Eqs. 5-7).

    ``left = 1 + min(0, (k - l) / (l + 1e-8))``, ``right = 1 - max(0, (k - r) / (L - r))`` with ``L = last``
    (``M - 1``; ``right = 1`` where ``r >= L``), ``score = min(left, right)``. The ``1e-8`` is the toolkit's.

    Example:
        >>> [round(float(v), 6) for v in rank_scores(0, 3, 5, 11)]
        [0.0, 1.0, 0.0]
    """
    k = np.asarray(rank, dtype=np.float64)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    left = 1.0 + np.minimum(0.0, (k - lo) / (lo + _EPS))
    with np.errstate(divide="ignore", invalid="ignore"):
        right = np.where(hi >= last, 1.0, 1.0 - np.maximum(0.0, (k - hi) / (last - hi)))
    return left, right, np.minimum(left, right)


def _label_scores(pairs: RankingPairs, ranks: np.ndarray, n_prompts: int) -> dict[str, np.ndarray]:
    """Per (pair, label): left, right, score and the set masks, all ``(Q, Lmax)``."""
    n_syn, n_sec = pairs.n_syn[pairs.pair_obj], pairs.n_sec[pairs.pair_obj]
    col = np.arange(pairs.labels.shape[1])[None, :]
    is_syn = col < n_syn[:, None]
    is_sec = (col >= n_syn[:, None]) & (col < (n_syn + n_sec)[:, None])
    lo = np.where(is_syn, 0, n_syn[:, None]).astype(np.float64)
    hi = np.where(is_syn, n_syn[:, None] - 1, (n_syn + n_sec)[:, None] - 1).astype(np.float64)
    left, right, score = rank_scores(ranks, lo, hi, n_prompts - 1)
    return {"left": left, "right": right, "score": score, "syn": is_syn, "sec": is_sec}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def set_ranking_from_ranks(
    pairs: RankingPairs, ranks: np.ndarray, n_prompts: int, compat: str, n_pred: int
) -> SetRankingResult:
    """Set ranking result from the label ranks of every pair (``(Q, Lmax)``, stable descending ranks)."""
    n_obj = len(pairs.object_ids)
    if n_pred == 0 or n_obj == 0:
        why = "the prediction is empty" if n_pred == 0 else "no GT point belongs to an object with a prompt label"
        warnings.warn(f"set_ranking: {why}; the scores are NaN", UserWarning, stacklevel=3)
        return SetRankingResult(
            scores=dict.fromkeys(SCORE_KEYS, float("nan")),
            object_ids=torch.from_numpy(pairs.object_ids),
            object_scores=torch.full((n_obj, 8), float("nan"), dtype=torch.float64),
            compat=compat,
        )
    s = _label_scores(pairs, ranks, n_prompts)
    syn, sec, score, left, right = s["syn"], s["sec"], s["score"], s["left"], s["right"]

    def per_object(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(pairs.pair_obj, weights=(values.sum(axis=1) * weights), minlength=n_obj)

    w = pairs.pair_count.astype(np.float64)
    zero = np.zeros_like(score)
    n_points = np.bincount(pairs.pair_obj, weights=w, minlength=n_obj)
    syn_sum = per_object(np.where(syn, score, zero), w)
    sec_sum = per_object(np.where(sec, score, zero), w)
    cols = np.full((n_obj, 8), np.nan)
    cols[:, 0] = _ratio(syn_sum + sec_sum, n_points * (pairs.n_syn + pairs.n_sec))
    cols[:, 1] = _ratio(syn_sum, n_points * pairs.n_syn)
    cols[:, 2] = _ratio(sec_sum, n_points * pairs.n_sec)

    # inlier rates and violators: all pairs weighted by their points (corrected) or the last point only (toolkit)
    sel = pairs.last_pair if compat == "toolkit" else np.arange(len(pairs.pair_obj))
    obj, w_v = pairs.pair_obj[sel], (np.ones(n_obj) if compat == "toolkit" else w)
    syn_v, sec_v, score_v, left_v, right_v = syn[sel], sec[sel], score[sel], left[sel], right[sel]

    def agg(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        num = np.bincount(obj, weights=np.where(mask, values, 0.0).sum(axis=1) * w_v, minlength=n_obj)
        den = np.bincount(obj, weights=mask.sum(axis=1) * w_v, minlength=n_obj)
        return num, den

    ones = np.ones_like(score_v)
    cols[:, 3] = _ratio(agg(ones, syn_v & (score_v == 1.0))[0], agg(ones, syn_v)[0])
    cols[:, 4] = _ratio(agg(ones, sec_v & (score_v == 1.0))[0], agg(ones, sec_v)[0])
    cols[:, 5] = _ratio(*agg(right_v, syn_v & (right_v < 1.0)))
    cols[:, 6] = _ratio(*agg(left_v, sec_v & (left_v < 1.0)))
    cols[:, 7] = _ratio(*agg(right_v, sec_v & (right_v < 1.0)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: reported once below
        scene = np.nanmean(cols, axis=0)
    scores = {key: float(v) for key, v in zip(SCORE_KEYS[:8], scene, strict=True)}
    scores["P_S"] = 1.0 - scores["synonym_undershooting"]
    scores["P_DV_left"] = 1.0 - scores["secondary_overshooting"]
    scores["P_DV_right"] = 1.0 - scores["secondary_undershooting"]
    undefined = [key for key in SCORE_KEYS[:8] if np.isnan(scores[key])]
    if undefined:
        warnings.warn(
            f"set_ranking: {', '.join(undefined)} undefined for every object (no such label or no violator); "
            "NaN returned",
            UserWarning,
            stacklevel=3,
        )
    return SetRankingResult(
        scores=scores,
        object_ids=torch.from_numpy(pairs.object_ids),
        object_scores=torch.from_numpy(cols),
        compat=compat,
    )
