"""OpenLex3D open-set segmentation: Top-N frequencies and set ranking from one shared preprocessing pass.

:func:`evaluate_segmentation` validates the inputs, downsamples the prediction, matches GT points and computes
the logits of the used feature rows once (in chunks), then derives every requested Top-N and the set ranking.
:func:`topn_frequency` and :func:`set_ranking` run the same pass for one metric, so their results equal
:func:`evaluate_segmentation`'s exactly. The math of each metric lives in ``topn.py`` and ``set_ranking.py``, which
this module imports (imports flow one way).

Example:
    >>> import torch
    >>> from scenemetrics.openlex3d import evaluate_segmentation
    >>> cats = {"dataset": {"samples": [{"object_id": 1, "labels": {"image_attributes": {"synonyms": ["sofa"]}}}]}}
    >>> res = evaluate_segmentation(torch.zeros(1, 3), torch.tensor([[0.0, 1.0]]), None, torch.eye(2),
    ...                             ["sofa", "lamp"], torch.zeros(2, 3), torch.tensor([1, 1]), cats,
    ...                             top_n=(1, 2), voxel_size=None)
    >>> res.topn[1].frequencies["incorrect"], res.topn[2].frequencies["synonyms"], res.set_ranking.scores["overall"]
    (1.0, 1.0, 0.0)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import Tensor

from scenemetrics.checks import check_choice, check_positive
from scenemetrics.types import TensorOrArray

from ._checks import check_prompts
from ._scene import PreparedScene, prepare_scene
from .categories import EXCLUDED_LABELS
from .set_ranking import COMPAT_MODES, SetRankingResult, build_pairs, set_ranking_from_ranks
from .text import label_pass, single_torch_thread
from .topn import (
    TOPN_FORMS,
    TopNIoUResult,
    TopNResult,
    check_excluded_labels,
    check_top_n,
    gt_top_labels,
    topn_from_labels,
    topn_iou_from_labels,
)

__all__ = ["SegmentationResult", "evaluate_segmentation", "set_ranking", "topn_frequency", "topn_iou"]


@dataclass(frozen=True)
class SegmentationResult:
    """Segmentation metrics of one scene.

    Attributes:
        topn: N -> :class:`~scenemetrics.openlex3d.TopNResult` (the frequency form), one entry per requested N (in
            request order); empty when only the IoU form was requested.
        set_ranking: the :class:`~scenemetrics.openlex3d.SetRankingResult`, or ``None`` when not requested.
        topn_iou: N -> :class:`~scenemetrics.openlex3d.TopNIoUResult` (the paper's IoU form) when requested.
    """

    topn: dict[int, TopNResult]
    set_ranking: SetRankingResult | None
    topn_iou: dict[int, TopNIoUResult] = field(default_factory=dict)


def _check_top_ns(top_n: Any, n_prompts: int) -> list[int]:
    if isinstance(top_n, numbers.Integral) and not isinstance(top_n, bool):
        values: Sequence[Any] = [top_n]
    elif isinstance(top_n, Sequence) and not isinstance(top_n, str):
        values = top_n
    else:
        raise ValueError(f"`top_n` must be an int or a sequence of ints in [1, {n_prompts}]; received {top_n!r}")
    return list(dict.fromkeys(check_top_n(n, n_prompts) for n in values))


def evaluate_segmentation(
    pred_points: TensorOrArray,
    pred_features: TensorOrArray,
    pred_index: TensorOrArray | None,
    text_features: TensorOrArray,
    prompts: Sequence[str],
    gt_points: TensorOrArray,
    gt_ids: TensorOrArray,
    categories: Any,
    *,
    top_n: int | Sequence[int] = (1, 5, 10),
    set_ranking: bool = True,
    voxel_size: float | None = 0.05,
    missing_threshold: float = 0.05,
    excluded_labels: Sequence[str] = EXCLUDED_LABELS,
    compat: str = "corrected",
    topn_form: str = "frequency",
) -> SegmentationResult:
    """Top-N category frequencies (one per requested N) and set ranking of one scene, sharing the preprocessing.

    Arguments are those of :func:`~scenemetrics.openlex3d.topn_frequency` and
    :func:`~scenemetrics.openlex3d.set_ranking`; ``top_n`` may be an int or a sequence of ints (``()`` for set
    ranking only) and ``set_ranking`` switches the set ranking on or off. ``topn_form`` chooses the Top-N form:
    ``"frequency"`` (the toolkit's, in ``topn``), ``"iou"`` (the paper's ``TP / (TP + FP + FN)``, in ``topn_iou``;
    see :func:`~scenemetrics.openlex3d.topn_iou`) or ``"both"``.

    Returns:
        :class:`SegmentationResult`.

    Raises:
        ValueError: bad inputs or options (see the two functions), or nothing requested.
        TypeError: non-integer index/ids, a wrong ``categories`` type or a non-bool ``set_ranking``.
    """
    topn_form = check_choice(topn_form, "topn_form", (*TOPN_FORMS, "both"))
    prompt_list = check_prompts(prompts)
    top_ns = _check_top_ns(top_n, len(prompt_list))
    if not isinstance(set_ranking, bool):
        raise TypeError(f"`set_ranking` must be a bool; received {type(set_ranking).__name__}")
    if not top_ns and not set_ranking:
        raise ValueError("nothing to compute: `top_n` is empty and `set_ranking` is False")
    threshold = check_positive(missing_threshold, "missing_threshold")
    excluded = check_excluded_labels(excluded_labels)
    compat = check_choice(compat, "compat", COMPAT_MODES)
    with single_torch_thread(not isinstance(pred_features, Tensor) or pred_features.device.type == "cpu"):
        scene = prepare_scene(
            pred_points,
            pred_features,
            pred_index,
            text_features,
            prompt_list,
            gt_points,
            gt_ids,
            categories,
            voxel_size,
        )
        return _evaluate(scene, top_ns, set_ranking, threshold, excluded, compat, topn_form)


def _evaluate(
    scene: PreparedScene,
    top_ns: list[int],
    set_ranking: bool,
    threshold: float,
    excluded: tuple[str, ...],
    compat: str,
    topn_form: str,
) -> SegmentationResult:
    pairs = build_pairs(scene) if set_ranking else None
    # the same rows (so the same chunks and logits) whatever is requested: results equal the separate functions
    rows = np.unique(scene.gt_rows[scene.gt_rows >= 0])
    top, ranks = label_pass(
        scene.features,
        scene.text,
        rows,
        top_n=max(top_ns, default=0),
        pair_pos=None if pairs is None else np.searchsorted(rows, pairs.pair_row),
        pair_labels=None if pairs is None else pairs.labels[pairs.pair_obj],
    )
    topn: dict[int, TopNResult] = {}
    topn_iou: dict[int, TopNIoUResult] = {}
    if top_ns:
        labels = gt_top_labels(scene, rows, top)  # type: ignore[arg-type]
        topn = {n: topn_from_labels(scene, labels, n, threshold, excluded) for n in top_ns}
        if topn_form != "frequency":
            topn_iou = {n: topn_iou_from_labels(scene, labels, n, threshold, excluded, topn[n]) for n in top_ns}
        if topn_form == "iou":
            topn = {}
    ranking = None
    if pairs is not None:
        ranking = set_ranking_from_ranks(pairs, ranks, len(scene.prompts), compat, scene.n_pred)  # type: ignore[arg-type]
    return SegmentationResult(topn=topn, set_ranking=ranking, topn_iou=topn_iou)


def topn_frequency(
    pred_points: TensorOrArray,
    pred_features: TensorOrArray,
    pred_index: TensorOrArray | None,
    text_features: TensorOrArray,
    prompts: Sequence[str],
    gt_points: TensorOrArray,
    gt_ids: TensorOrArray,
    categories: Any,
    *,
    top_n: int = 5,
    voxel_size: float | None = 0.05,
    missing_threshold: float = 0.05,
    excluded_labels: Sequence[str] = EXCLUDED_LABELS,
) -> TopNResult:
    """OpenLex3D Top-N category frequency of one scene.

    The prediction is voxel-downsampled (:func:`~scenemetrics.openlex3d.downsample_predictions`), each GT point is
    matched to its nearest downsampled point (distance ``> missing_threshold`` = missing), and the point takes
    the best category among that point's ``top_n`` prompts by cosine similarity. Equal logits rank by prompt index
    (lower first); exact ties only occur with duplicate or zero features.

    Args:
        pred_points: ``(P, 3)`` predicted points.
        pred_features: ``(K, D)`` features (per object or per point), on the device where logits are computed.
        pred_index: ``(P,)`` feature row of every point in ``[0, K)``, or ``None`` for the identity (``K == P``).
        text_features: ``(M, D)`` prompt embeddings, row ``m`` embeds ``prompts[m]``.
        prompts: the ``M`` prompt strings (raw; matched after normalisation).
        gt_points: ``(G, 3)`` GT points.
        gt_ids: ``(G,)`` GT object ids (ids not in ``categories`` are not evaluated).
        categories: :class:`~scenemetrics.openlex3d.Categories`, the parsed ``gt_categories.json`` or its path.
        top_n: N in ``[1, M]``.
        voxel_size: downsampling voxel in metres; ``None`` or ``0`` = no downsampling.
        missing_threshold: GT points farther than this from every prediction are "missing".
        excluded_labels: objects with one of these synonyms are not evaluated.

    Returns:
        :class:`TopNResult`. With no evaluated object the frequencies are NaN (``UserWarning``).

    Raises:
        ValueError: bad shapes, non-finite values, index out of range, bad options (``top_n`` outside ``[1, M]``,
            ``voxel_size`` not ``None``, ``0`` or a finite positive number, ``missing_threshold <= 0``).
        TypeError: non-integer index/ids or a wrong ``categories`` type.
    """
    result = evaluate_segmentation(
        pred_points,
        pred_features,
        pred_index,
        text_features,
        prompts,
        gt_points,
        gt_ids,
        categories,
        top_n=top_n,
        set_ranking=False,
        voxel_size=voxel_size,
        missing_threshold=missing_threshold,
        excluded_labels=excluded_labels,
    )
    return next(iter(result.topn.values()))


def topn_iou(
    pred_points: TensorOrArray,
    pred_features: TensorOrArray,
    pred_index: TensorOrArray | None,
    text_features: TensorOrArray,
    prompts: Sequence[str],
    gt_points: TensorOrArray,
    gt_ids: TensorOrArray,
    categories: Any,
    *,
    top_n: int = 5,
    voxel_size: float | None = 0.05,
    missing_threshold: float = 0.05,
    excluded_labels: Sequence[str] = EXCLUDED_LABELS,
) -> TopNIoUResult:
    """OpenLex3D Top-N in the paper's IoU form, ``TP / (TP + FP + FN)`` per evaluated object and label tier.

    Same preprocessing, matching, top-N labels and evaluated objects as :func:`topn_frequency` (the toolkit's form,
    the one behind the published tables). Per evaluated object ``o`` and tier ``c`` (synonyms, depictions, vis_sim,
    clutter): ``TP`` = GT points of ``o`` in category ``c``; ``FN`` = the rest of ``o``'s GT points; ``FP`` = GT
    points of other objects listed in ``categories``, matched within ``missing_threshold``, whose top-N labels are
    incorrect for their own object and whose best category with respect to ``o`` is ``c``. The scene value of a tier
    is the mean of ``TP / (TP + FP + FN)`` over the evaluated objects; it never exceeds the frequency of that
    category and equals it when no label leaks onto another object. The paper (arXiv v1) names this form without
    defining the sets; these are this library's definitions (see :mod:`scenemetrics.openlex3d.topn`).

    Args:
        pred_points: ``(P, 3)`` predicted points.
        pred_features: ``(K, D)`` features (per object or per point), on the device where logits are computed.
        pred_index: ``(P,)`` feature row of every point in ``[0, K)``, or ``None`` for the identity (``K == P``).
        text_features: ``(M, D)`` prompt embeddings, row ``m`` embeds ``prompts[m]``.
        prompts: the ``M`` prompt strings (raw; matched after normalisation).
        gt_points: ``(G, 3)`` GT points.
        gt_ids: ``(G,)`` GT object ids (ids not in ``categories`` are ignored).
        categories: :class:`~scenemetrics.openlex3d.Categories`, the parsed ``gt_categories.json`` or its path.
        top_n: N in ``[1, M]``.
        voxel_size: downsampling voxel in metres; ``None`` or ``0`` = no downsampling.
        missing_threshold: GT points farther than this from every prediction are "missing" (and never false
            positives).
        excluded_labels: objects with one of these synonyms are not evaluated.

    Returns:
        :class:`~scenemetrics.openlex3d.TopNIoUResult`. An empty prediction gives IoU 0 for every tier (every point
        is missing: ``TP = FP = 0``); with no evaluated object the IoUs are NaN (``UserWarning``).

    Raises:
        ValueError, TypeError: as :func:`topn_frequency`.

    Example:
        >>> import torch
        >>> cats = {"dataset": {"samples": [
        ...     {"object_id": 1, "labels": {"image_attributes": {"synonyms": ["sofa"]}}},
        ...     {"object_id": 2, "labels": {"image_attributes": {"synonyms": ["lamp"]}}}]}}
        >>> # the sofa's two points are labelled "sofa"; one lamp point is labelled "sofa" too (a leak)
        >>> points = torch.tensor([[0.0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [3.0, 0, 0]])
        >>> feats = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> res = topn_iou(points, feats, None, torch.eye(2), ["sofa", "lamp"], points, torch.tensor([1, 1, 2, 2]),
        ...                cats, top_n=1, voxel_size=None)
        >>> round(res.ious["synonyms"], 4)  # sofa: 2 / (2 + 1 + 0); lamp: 1 / (1 + 0 + 1)
        0.5833
    """
    result = evaluate_segmentation(
        pred_points,
        pred_features,
        pred_index,
        text_features,
        prompts,
        gt_points,
        gt_ids,
        categories,
        top_n=top_n,
        set_ranking=False,
        voxel_size=voxel_size,
        missing_threshold=missing_threshold,
        excluded_labels=excluded_labels,
        topn_form="iou",
    )
    return next(iter(result.topn_iou.values()))


def set_ranking(
    pred_points: TensorOrArray,
    pred_features: TensorOrArray,
    pred_index: TensorOrArray | None,
    text_features: TensorOrArray,
    prompts: Sequence[str],
    gt_points: TensorOrArray,
    gt_ids: TensorOrArray,
    categories: Any,
    *,
    voxel_size: float | None = 0.05,
    compat: str = "corrected",
) -> SetRankingResult:
    """OpenLex3D set ranking of one scene (mR, inlier rates, violator means and penalties).

    Uses every GT point whose id is in ``categories`` (no distance threshold, no excluded labels), matched to its
    nearest downsampled prediction. A label's rank is its 0-based position in the stable descending order of the
    prediction's logits (equal logits: lower prompt index first). Labels are mapped to the first prompt with the
    same normalised string; labels absent from the prompt list are dropped, repeated labels count twice.

    Args:
        pred_points: ``(P, 3)`` predicted points.
        pred_features: ``(K, D)`` features, on the device where logits are computed.
        pred_index: ``(P,)`` feature row of every point, or ``None`` for the identity (``K == P``).
        text_features: ``(M, D)`` prompt embeddings, row ``m`` embeds ``prompts[m]``.
        prompts: the ``M`` prompt strings.
        gt_points: ``(G, 3)`` GT points.
        gt_ids: ``(G,)`` GT object ids.
        categories: :class:`~scenemetrics.openlex3d.Categories`, the parsed ``gt_categories.json`` or its path.
        voxel_size: downsampling voxel in metres; ``None`` or ``0`` = no downsampling.
        compat: ``"corrected"`` (pool inlier rates/violators over all points) or ``"toolkit"`` (last point only).

    Returns:
        :class:`SetRankingResult`. Empty prediction or no object: NaN scores with a ``UserWarning``.

    Raises:
        ValueError: bad shapes, non-finite values, index out of range, bad ``compat``/``voxel_size``.
        TypeError: non-integer index/ids or a wrong ``categories`` type.
    """
    result = evaluate_segmentation(
        pred_points,
        pred_features,
        pred_index,
        text_features,
        prompts,
        gt_points,
        gt_ids,
        categories,
        top_n=(),
        set_ranking=True,
        voxel_size=voxel_size,
        compat=compat,
    )
    return result.set_ranking  # type: ignore[return-value]
