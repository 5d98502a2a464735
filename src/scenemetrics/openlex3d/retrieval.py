"""OpenLex3D object retrieval: text queries, predicted masks and ScanNet-style AP / AP50 / AP25 (Sec. 3.3.2).

Each query (an object's synonym, or "<depiction> <synonym>") has GT instances: the GT points of every object it
names. Predicted instances are the ``top_k`` feature rows most similar to the query (min-max normalised cosine
similarity), each with the mask of GT points lying within ``sqrt(alignment_threshold)`` of one of its points.
Predictions and GT instances of the same query are matched greedily per IoU threshold, as the authors' toolkit
(adapted from the ScanNet instance evaluation) does, and AP is the area under the resulting precision/recall curve.

The AP thresholds (``ap_range="toolkit"``, default) are 0.5, 0.55, ..., 0.9 plus 0.25: the toolkit's range stops
before 0.95 (a ``range`` that excludes its end), and its numbers are the published ones. ``ap_range="paper"`` uses
the range the paper writes, 0.50:0.05:0.95 (ten thresholds, 0.95 included, the COCO/ScanNet convention), plus 0.25;
``ap`` is then the mean over those ten. Not implemented (unused by the paper's numbers): the ``clip_threshold``
selection criterion, the ``global`` mask alignment mode and the inverse-rank metric.

Example:
    >>> import torch
    >>> from scenemetrics.openlex3d import RetrievalQuery, retrieval_ap
    >>> gt = torch.tensor([[0.0, 0, 0], [0.0, 0.1, 0], [1.0, 0, 0]])
    >>> res = retrieval_ap(gt, torch.eye(2), torch.tensor([0, 0, 1]), torch.tensor([[1.0, 0.0]]),
    ...                    [RetrievalQuery("level0_chair", "chair", (7,))], gt, torch.tensor([7, 7, 8]))
    >>> res.ap, res.ap50, res.ap25
    (1.0, 1.0, 1.0)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import torch
from scipy.spatial import cKDTree
from torch import Tensor

from scenemetrics.checks import check_choice, check_int, check_positive
from scenemetrics.types import TensorOrArray

from ._checks import (
    check_features,
    check_index,
    check_int_array,
    check_points,
    check_text_features,
)
from .categories import EXCLUDED_LABELS, as_categories, normalize_label
from .text import _CHUNK_BYTES, _unit_rows, compute_dtype, single_torch_thread, stable_topk, unique_rows

__all__ = [
    "AP_RANGES",
    "PAPER_THRESHOLDS",
    "THRESHOLDS",
    "RetrievalQuery",
    "RetrievalResult",
    "average_precision",
    "generate_queries",
    "pooled_retrieval_ap",
    "retrieval_ap",
]

THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.25)
"""IoU thresholds of the AP curve (the toolkit's range); ``ap`` averages all but the last, ``ap50`` is the first,
``ap25`` the last."""

PAPER_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.25)
"""IoU thresholds of the range the paper writes (0.50:0.05:0.95) plus 0.25; ``ap`` averages the first ten."""

AP_RANGES: Mapping[str, tuple[float, ...]] = MappingProxyType({"toolkit": THRESHOLDS, "paper": PAPER_THRESHOLDS})
"""``ap_range`` name -> its thresholds."""

_LEVELS = {"l0": ("level0",), "l1": ("level1",), "all": ("level0", "level1")}


class RetrievalQuery(NamedTuple):
    """One text query and the GT objects it should retrieve.

    Attributes:
        query_id: ``"level0_<text>"`` or ``"level1_<text>"``.
        text: the raw text that is embedded.
        object_ids: ids of the GT objects (order and repeats kept; each entry is one GT instance).
    """

    query_id: str
    text: str
    object_ids: tuple[int, ...]


@dataclass(frozen=True)
class RetrievalResult:
    """Retrieval AP of one scene (or of several, pooled).

    Attributes:
        ap: mean AP over the IoU thresholds of the range (0.5:0.05:0.9 for the toolkit's, 0.5:0.05:0.95 for the
            paper's; NaN-skipping), a fraction (the paper prints x100).
        ap50: AP at IoU 0.5.
        ap25: AP at IoU 0.25.
        ap_per_threshold: ``(T,)`` float64 in ``thresholds`` order, NaN without GT instance.
        n_queries: number of queries.
        n_gt_instances: GT instances (query, object with GT points).
        n_pred_instances: predicted instances (selected rows with a non-empty mask).
        n_skipped_gt_instances: (query, object) pairs whose object has no GT point (skipped).
        match_scores: per threshold, the confidences of the TP and FP entries (float64).
        match_true: per threshold, ``True`` for the TP entries.
        hard_false_negatives: ``(T,)`` int64 unmatched GT instances per threshold.
        thresholds: the IoU thresholds (:data:`THRESHOLDS` or :data:`PAPER_THRESHOLDS`, the last one is 0.25).
    """

    ap: float
    ap50: float
    ap25: float
    ap_per_threshold: Tensor
    n_queries: int
    n_gt_instances: int
    n_pred_instances: int
    n_skipped_gt_instances: int
    match_scores: tuple[Tensor, ...]
    match_true: tuple[Tensor, ...]
    hard_false_negatives: Tensor
    thresholds: tuple[float, ...] = THRESHOLDS


def generate_queries(categories: Any, level: str = "all") -> list[RetrievalQuery]:
    """Build the retrieval queries of a scene from its categories (toolkit ``queries_adder.py``).

    Level 0: every synonym; level 1: ``f"{depiction} {synonym}"`` for every depiction (outer) and synonym
    (inner) of objects that have both. Texts whose normalised form is an excluded label (``wall``, ``floor``,
    ...) are skipped. Each text maps to the ids of the objects that list it, in order of appearance (an object
    listing a text twice appears twice).

    Args:
        categories: :class:`~scenemetrics.openlex3d.Categories`, the parsed ``gt_categories.json`` or its path.
        level: ``"all"`` (level 0 then level 1), ``"l0"`` or ``"l1"``.

    Returns:
        The queries, ids ``"level0_<text>"`` / ``"level1_<text>"``.

    Example:
        >>> cats = {"dataset": {"samples": [{"object_id": 4, "labels": {"image_attributes": {
        ...     "synonyms": ["pillow"], "depictions": ["dog"]}}}]}}
        >>> [q.query_id for q in generate_queries(cats)]
        ['level0_pillow', 'level1_dog pillow']
    """
    if level not in _LEVELS:
        raise ValueError(f"`level` must be one of 'all', 'l0', 'l1'; received {level!r}")
    cats = as_categories(categories)
    excluded = set(EXCLUDED_LABELS)
    texts: dict[str, dict[str, list[int]]] = {"level0": {}, "level1": {}}
    for oid, obj in cats.items():
        candidates = [("level0", s) for s in obj.synonyms]
        if obj.depictions and obj.synonyms:
            candidates += [("level1", f"{d} {s}") for d in obj.depictions for s in obj.synonyms]
        for lvl, text in candidates:
            if normalize_label(text) not in excluded:
                texts[lvl].setdefault(text, []).append(oid)
    return [
        RetrievalQuery(f"{lvl}_{text}", text, tuple(ids)) for lvl in _LEVELS[level] for text, ids in texts[lvl].items()
    ]


def _check_queries(queries: Any) -> list[RetrievalQuery]:
    if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence):
        raise TypeError(f"`queries` must be a sequence of RetrievalQuery; received {type(queries).__name__}")
    out = []
    for i, q in enumerate(queries):
        if not isinstance(q, tuple) or len(q) != 3:
            raise TypeError(f"`queries[{i}]` must be a RetrievalQuery (query_id, text, object_ids); received {q!r}")
        qid, text, ids = q
        if not isinstance(qid, str) or not isinstance(text, str):
            raise TypeError(f"`queries[{i}]`: query_id and text must be strings")
        ids = tuple(ids)
        for o in ids:
            if isinstance(o, bool) or not isinstance(o, (int, np.integer)):
                raise TypeError(f"`queries[{i}].object_ids` must be ints; received {o!r}")
        out.append(RetrievalQuery(qid, text, tuple(int(o) for o in ids)))
    return out


def average_precision(scores: np.ndarray, true: np.ndarray, hard_fn: int, n_gt: int, n_pred: int) -> float:
    """AP of one threshold from its (score, is-TP) entries, as the ScanNet/OpenSun3D evaluation computes it.

    NaN without GT instance, 0 without predicted instance. Otherwise precision/recall at every unique score
    (ascending), the point (p=1, r=0) appended, and the central-difference step widths of the recall sequence.

    Example:
        >>> import numpy as np
        >>> average_precision(np.array([0.9, 0.4]), np.array([True, False]), hard_fn=1, n_gt=2, n_pred=2)
        0.5
    """
    if n_gt == 0:
        return float("nan")
    if n_pred == 0 or len(scores) == 0:
        return 0.0
    order = np.argsort(scores, kind="stable")
    s = np.asarray(scores, dtype=np.float64)[order]
    t = np.asarray(true, dtype=bool)[order]
    _, first = np.unique(s, return_index=True)
    cum = np.cumsum(t)
    total, n = int(cum[-1]), len(s)
    before = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0)
    tp = total - before
    fp = n - first - tp
    fn = before + hard_fn
    precision = np.append(tp / (tp + fp), 1.0)
    recall = np.append(tp / (tp + fn), 0.0)
    padded = np.concatenate(([recall[0]], recall, [0.0]))
    steps = np.convolve(padded, [-0.5, 0, 0.5], "valid")
    return float(np.dot(precision, steps))


def _summary(per_threshold: np.ndarray) -> tuple[float, float, float]:
    """``(ap, ap50, ap25)``: the range is every threshold but the last (0.25), which starts at 0.5."""
    main = per_threshold[:-1]
    ap = float(np.mean(main[~np.isnan(main)])) if (~np.isnan(main)).any() else float("nan")
    return ap, float(per_threshold[0]), float(per_threshold[-1])


def check_ap_range(ap_range: Any) -> tuple[float, ...]:
    """The thresholds of an ``ap_range`` name (``"toolkit"`` or ``"paper"``)."""
    return AP_RANGES[check_choice(ap_range, "ap_range", tuple(AP_RANGES))]


def _masks(
    gt: np.ndarray, points: np.ndarray, index: np.ndarray, n_rows: int, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """Unique (GT point, feature row) pairs with squared distance ``< threshold``, sorted by GT point then row."""
    valid = index >= 0
    pts, rows = points[valid], index[valid]
    if len(pts) == 0 or len(gt) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    radius = math.sqrt(threshold) * (1 + 1e-9)
    pairs = cKDTree(gt).sparse_distance_matrix(cKDTree(pts), radius, output_type="ndarray")
    gi, pj = pairs["i"].astype(np.int64), pairs["j"].astype(np.int64)
    d2 = ((gt[gi] - pts[pj]) ** 2).sum(axis=1)
    keep = d2 < threshold
    key = np.unique(gi[keep] * n_rows + rows[pj[keep]])
    return key // n_rows, key % n_rows


def _select(
    features: Tensor, query_features: Tensor, top_k: int, has_mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query: the ``top_k`` rows by min-max normalised similarity, with their confidences; rows whose mask is
    empty keep their slot but are flagged invalid. Returns ``(rows (Q, k), conf (Q, k), valid (Q, k))``."""
    n_rows, n_q = features.shape[0], query_features.shape[0]
    k = min(top_k, n_rows)
    sel = np.zeros((n_q, k), dtype=np.int64)
    conf = np.zeros((n_q, k), dtype=np.float64)
    if k == 0 or n_q == 0:
        return sel, conf, np.zeros((n_q, k), dtype=bool)
    dtype = compute_dtype(features, query_features)
    # duplicated feature rows are multiplied once and copied: their confidences tie exactly and the tie rule (lower
    # row first) applies, instead of a BLAS rounding difference deciding
    distinct, inverse = unique_rows(features.to(dtype))
    fn = _unit_rows(distinct)
    qn = _unit_rows(query_features.to(features.device, dtype))
    chunk = max(1, _CHUNK_BYTES // (n_rows * 8))
    for a in range(0, n_q, chunk):
        product = fn @ qn[a : a + chunk].T
        if inverse is not None:
            product = product[inverse]
        s = (product.to(torch.float64) + 1.0) / 2.0  # (K, c)
        low, high = s.min(dim=0).values, s.max(dim=0).values
        c = ((s - low) / (high - low).clamp_min(1e-8)).T  # (c, K)
        top = stable_topk(c, k)
        sel[a : a + chunk] = top.cpu().numpy()
        conf[a : a + chunk] = c.gather(1, top).cpu().numpy()
    return sel, conf, has_mask[sel]


def _greedy(
    iou: np.ndarray, gt_q: np.ndarray, slot: np.ndarray, conf: np.ndarray, valid: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """Toolkit/ScanNet greedy matching for one threshold: (scores, is-TP, hard false negatives)."""
    n_q, k = conf.shape
    hit = (iou > threshold) & valid[gt_q]
    used = np.zeros((n_q, k), dtype=bool)
    matched = np.zeros(len(gt_q), dtype=bool)
    tp_score = np.zeros(len(gt_q))
    fp_scores = []
    col = np.arange(k)[None, :]
    # GT instances of one query are handled in order; different queries never share a prediction, so all GT
    # instances with the same position inside their query are processed together
    for s in range(int(slot.max()) + 1 if len(slot) else 0):
        g = np.flatnonzero(slot == s)
        q = gt_q[g]
        avail = hit[g] & ~used[q]
        found = avail.any(axis=1)
        first = avail.argmax(axis=1)
        c = conf[q]
        running = np.maximum.accumulate(np.where(avail, c, -np.inf), axis=1)
        before = np.concatenate((np.full((len(g), 1), -np.inf), running[:, :-1]), axis=1)
        later = avail & (col > first[:, None])
        fp_scores.append(np.minimum(before, c)[later])
        tp_score[g[found]] = running[found, -1]
        matched[g[found]] = True
        used[q[found], first[found]] = True
    flat = (gt_q[:, None] * k + col)[hit]
    pred_hit = np.bincount(flat, minlength=n_q * k).reshape(n_q, k) > 0
    unmatched = conf[valid & ~pred_hit]
    fp = np.concatenate([*fp_scores, unmatched]) if fp_scores else unmatched
    scores = np.concatenate((tp_score[matched], fp))
    true = np.zeros(len(scores), dtype=bool)
    true[: int(matched.sum())] = True
    return scores, true, int((~matched).sum())


def retrieval_ap(
    pred_points: TensorOrArray,
    pred_features: TensorOrArray,
    pred_index: TensorOrArray | None,
    query_features: TensorOrArray,
    queries: Sequence[RetrievalQuery],
    gt_points: TensorOrArray,
    gt_ids: TensorOrArray,
    *,
    top_k: int = 10,
    alignment_threshold: float = 0.001,
    ap_range: str = "toolkit",
) -> RetrievalResult:
    """Object retrieval AP of one scene (OpenLex3D Sec. 3.3.2, toolkit ``evaluate_queries``).

    Predicted masks: GT point ``g`` belongs to the mask of feature row ``m`` iff some predicted point with index
    ``m`` lies at squared distance ``< alignment_threshold`` (the toolkit's FAISS L2 is squared; 0.001 m² ≈
    3.16 cm). The prediction is not downsampled; points with index -1 belong to no mask. Confidences: cosine
    similarity mapped to ``(s + 1) / 2`` and min-max normalised over all feature rows per query (float64 after
    the cosine). Per query the ``top_k`` rows are selected (ties: lower row first) and rows with an empty mask are
    dropped afterwards. Query object ids without GT points are skipped, counted and reported in one warning.

    Args:
        pred_points: ``(P, 3)`` predicted points.
        pred_features: ``(K, D)`` features; for object-centric methods the instance id is the row.
        pred_index: ``(P,)`` row of every point in ``[-1, K)`` (-1 = no instance), or ``None`` for the identity.
        query_features: ``(Q, D)`` query embeddings, row ``q`` embeds ``queries[q].text``.
        queries: the :class:`RetrievalQuery` list, e.g. :func:`generate_queries` or
            :func:`~scenemetrics.openlex3d.load_query_mapping` output.
        gt_points: ``(G, 3)`` GT points (the full GT cloud, not the visible one).
        gt_ids: ``(G,)`` GT object ids.
        top_k: predicted instances per query (>= 1).
        alignment_threshold: squared distance (m²) for mask alignment (> 0).
        ap_range: ``"toolkit"`` (IoU 0.5:0.05:0.9, the toolkit's range and the published numbers) or ``"paper"``
            (0.5:0.05:0.95, the range the paper writes); 0.25 is added to both for ``ap25``.

    Returns:
        :class:`RetrievalResult` (fractions; x100 for the paper's table). AP is NaN without GT instance and 0
        without predicted instance.

    Raises:
        ValueError: bad shapes, non-finite values, index out of range, ``top_k < 1``, ``alignment_threshold <= 0``,
            an unknown ``ap_range``.
        TypeError: non-integer index/ids or malformed queries.
    """
    on_cpu = not isinstance(pred_features, Tensor) or pred_features.device.type == "cpu"
    with single_torch_thread(on_cpu):
        return _retrieval_ap(
            pred_points,
            pred_features,
            pred_index,
            query_features,
            queries,
            gt_points,
            gt_ids,
            top_k,
            alignment_threshold,
            ap_range,
        )


def _retrieval_ap(
    pred_points: Any,
    pred_features: Any,
    pred_index: Any,
    query_features: Any,
    queries: Sequence[RetrievalQuery],
    gt_points: Any,
    gt_ids: Any,
    top_k: int,
    alignment_threshold: float,
    ap_range: str,
) -> RetrievalResult:
    thresholds = check_ap_range(ap_range)
    k_top = check_int(top_k, "top_k", low=1)
    threshold = check_positive(alignment_threshold, "alignment_threshold")
    query_list = _check_queries(queries)
    points = check_points(pred_points, "pred_points")
    features = check_features(pred_features, "pred_features")
    n_rows = features.shape[0]
    index = check_index(pred_index, len(points), n_rows, allow_unassigned=True)
    qf = check_text_features(query_features, len(query_list), features.shape[1], "query_features", "queries")
    gt = check_points(gt_points, "gt_points")
    ids = check_int_array(gt_ids, "gt_ids", len(gt))

    mask_g, mask_r = _masks(gt, points, index, max(n_rows, 1), threshold)
    mask_size = np.bincount(mask_r, minlength=n_rows)
    sel, conf, valid = _select(features, qf, k_top, mask_size > 0)

    # GT instances in query order, then object order within the query
    uniq_ids, gt_inv = np.unique(ids, return_inverse=True)
    n_points = np.bincount(gt_inv.reshape(-1), minlength=len(uniq_ids))
    q_of = np.repeat(np.arange(len(query_list)), [len(q.object_ids) for q in query_list])
    obj = np.array([o for q in query_list for o in q.object_ids], dtype=np.int64)
    pos = np.clip(np.searchsorted(uniq_ids, obj), 0, max(len(uniq_ids) - 1, 0))
    present = (uniq_ids[pos] == obj) if len(uniq_ids) else np.zeros(len(obj), dtype=bool)
    skipped = obj[~present]
    if skipped.size:
        warnings.warn(
            f"retrieval_ap: {skipped.size} (query, object) pair(s) name objects without GT points (ids "
            f"{sorted(set(skipped.tolist()))[:10]}); they are skipped",
            UserWarning,
            stacklevel=2,
        )
    gt_q, gt_o = q_of[present], pos[present]
    starts = np.searchsorted(gt_q, np.arange(len(query_list)))
    slot = np.arange(len(gt_q)) - starts[gt_q]

    # intersections from one (object x row) table built from the (GT point, row) mask pairs
    inter_key, inter = np.unique(gt_inv.reshape(-1)[mask_g] * n_rows + mask_r, return_counts=True)
    key = gt_o[:, None] * n_rows + sel[gt_q]
    i_count = np.zeros(key.shape, dtype=np.int64)
    if len(inter_key):
        at = np.minimum(np.searchsorted(inter_key, key), len(inter_key) - 1)
        i_count = np.where(inter_key[at] == key, inter[at], 0)
    union = n_points[gt_o][:, None] + mask_size[sel[gt_q]] - i_count
    iou = np.where(i_count > 0, i_count / np.maximum(union, 1), 0.0)

    n_gt, n_pred = len(gt_q), int(valid.sum())
    scores, trues, hard = [], [], []
    for th in thresholds:
        s, t, h = _greedy(iou, gt_q, slot, conf, valid, th)
        scores.append(s)
        trues.append(t)
        hard.append(h)
    per_thr = np.array([average_precision(s, t, h, n_gt, n_pred) for s, t, h in zip(scores, trues, hard, strict=True)])
    ap, ap50, ap25 = _summary(per_thr)
    return RetrievalResult(
        ap=ap,
        ap50=ap50,
        ap25=ap25,
        ap_per_threshold=torch.from_numpy(per_thr),
        n_queries=len(query_list),
        n_gt_instances=n_gt,
        n_pred_instances=n_pred,
        n_skipped_gt_instances=int(skipped.size),
        match_scores=tuple(torch.from_numpy(s.astype(np.float64)) for s in scores),
        match_true=tuple(torch.from_numpy(t) for t in trues),
        hard_false_negatives=torch.tensor(hard, dtype=torch.int64),
        thresholds=thresholds,
    )


def pooled_ap(
    scores: Sequence[np.ndarray], trues: Sequence[np.ndarray], hard_fn: np.ndarray, n_gt: int, n_pred: int
) -> np.ndarray:
    """``(T,)`` AP per threshold from pooled entries (internal; shared with the metric class)."""
    return np.array([average_precision(scores[t], trues[t], int(hard_fn[t]), n_gt, n_pred) for t in range(len(scores))])


def pooled_retrieval_ap(results: Sequence[RetrievalResult]) -> RetrievalResult:
    """Dataset-level AP: the entries of all scenes pooled into one curve per threshold (the paper's numbers).

    Hard false negatives, GT and predicted instances are summed; the AP formula is applied once per threshold. All
    results must use the same ``ap_range`` (``ValueError`` otherwise).

    Example:
        >>> import torch
        >>> from scenemetrics.openlex3d import RetrievalQuery, retrieval_ap
        >>> gt = torch.zeros(1, 3)
        >>> one = retrieval_ap(gt, torch.ones(1, 2), None, torch.ones(1, 2), [RetrievalQuery("level0_a", "a", (1,))],
        ...                    gt, torch.tensor([1]))
        >>> pooled_retrieval_ap([one, one]).ap
        1.0
    """
    results = list(results)
    ranges = {r.thresholds for r in results}
    if len(ranges) > 1:
        raise ValueError(
            "`results` mix AP threshold ranges (ap_range 'toolkit' and 'paper'); pool results of one range"
        )
    thresholds = ranges.pop() if ranges else THRESHOLDS
    n_thr = len(thresholds)
    scores = [np.concatenate([r.match_scores[t].numpy() for r in results] or [np.zeros(0)]) for t in range(n_thr)]
    trues = [np.concatenate([r.match_true[t].numpy() for r in results] or [np.zeros(0, bool)]) for t in range(n_thr)]
    hard = np.sum([r.hard_false_negatives.numpy() for r in results], axis=0) if results else np.zeros(n_thr, np.int64)
    n_gt = sum(r.n_gt_instances for r in results)
    n_pred = sum(r.n_pred_instances for r in results)
    per_thr = pooled_ap(scores, trues, hard, n_gt, n_pred)
    ap, ap50, ap25 = _summary(per_thr)
    return RetrievalResult(
        ap=ap,
        ap50=ap50,
        ap25=ap25,
        ap_per_threshold=torch.from_numpy(per_thr),
        n_queries=sum(r.n_queries for r in results),
        n_gt_instances=n_gt,
        n_pred_instances=n_pred,
        n_skipped_gt_instances=sum(r.n_skipped_gt_instances for r in results),
        match_scores=tuple(torch.from_numpy(s.astype(np.float64)) for s in scores),
        match_true=tuple(torch.from_numpy(t.astype(bool)) for t in trues),
        hard_false_negatives=torch.from_numpy(np.asarray(hard, dtype=np.int64)),
        thresholds=thresholds,
    )
