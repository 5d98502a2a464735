"""OpenLex3D open-set segmentation: Top-N frequencies and set ranking from one shared preprocessing pass.

:func:`evaluate_segmentation` validates the inputs, downsamples the prediction, matches GT points and computes
the logits of the used feature rows once (in chunks), then derives every requested Top-N and the set ranking.
Its results equal :func:`~scenemetrics.openlex3d.topn_frequency` and :func:`~scenemetrics.openlex3d.set_ranking`
exactly.

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
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

from ._checks import check_compat, check_positive, check_prompts
from ._scene import PreparedScene, prepare_scene
from .categories import EXCLUDED_LABELS
from .set_ranking import SetRankingResult, build_pairs, set_ranking_from_ranks
from .text import label_pass, single_torch_thread
from .topn import TopNResult, check_excluded_labels, check_top_n, gt_top_labels, topn_from_labels

__all__ = ["SegmentationResult", "evaluate_segmentation"]


@dataclass(frozen=True)
class SegmentationResult:
    """Segmentation metrics of one scene.

    Attributes:
        topn: N -> :class:`~scenemetrics.openlex3d.TopNResult`, one entry per requested N (in request order).
        set_ranking: the :class:`~scenemetrics.openlex3d.SetRankingResult`, or ``None`` when not requested.
    """

    topn: dict[int, TopNResult]
    set_ranking: SetRankingResult | None


def _check_top_ns(top_n: Any, n_prompts: int) -> list[int]:
    if isinstance(top_n, numbers.Integral) and not isinstance(top_n, bool):
        values: Sequence[Any] = [top_n]
    elif isinstance(top_n, Sequence) and not isinstance(top_n, str):
        values = top_n
    else:
        raise ValueError(f"`top_n` must be an int or a sequence of ints in [1, {n_prompts}]; received {top_n!r}")
    return list(dict.fromkeys(check_top_n(n, n_prompts) for n in values))


def evaluate_segmentation(
    pred_points: Any,
    pred_features: Any,
    pred_index: Any,
    text_features: Any,
    prompts: Sequence[str],
    gt_points: Any,
    gt_ids: Any,
    categories: Any,
    *,
    top_n: int | Sequence[int] = (1, 5, 10),
    set_ranking: bool = True,
    voxel_size: float | None = 0.05,
    missing_threshold: float = 0.05,
    excluded_labels: Sequence[str] = EXCLUDED_LABELS,
    compat: str = "corrected",
) -> SegmentationResult:
    """Top-N category frequencies (one per requested N) and set ranking of one scene, sharing the preprocessing.

    Arguments are those of :func:`~scenemetrics.openlex3d.topn_frequency` and
    :func:`~scenemetrics.openlex3d.set_ranking`; ``top_n`` may be an int or a sequence of ints (``()`` for set
    ranking only) and ``set_ranking`` switches the set ranking on or off.

    Returns:
        :class:`SegmentationResult`.

    Raises:
        ValueError: bad inputs or options (see the two functions), or nothing requested.
        TypeError: non-integer index/ids, a wrong ``categories`` type or a non-bool ``set_ranking``.
    """
    prompt_list = check_prompts(prompts)
    top_ns = _check_top_ns(top_n, len(prompt_list))
    if not isinstance(set_ranking, bool):
        raise TypeError(f"`set_ranking` must be a bool; received {type(set_ranking).__name__}")
    if not top_ns and not set_ranking:
        raise ValueError("nothing to compute: `top_n` is empty and `set_ranking` is False")
    threshold = check_positive(missing_threshold, "missing_threshold")
    excluded = check_excluded_labels(excluded_labels)
    compat = check_compat(compat)
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
        return _evaluate(scene, top_ns, set_ranking, threshold, excluded, compat)


def _evaluate(
    scene: PreparedScene,
    top_ns: list[int],
    set_ranking: bool,
    threshold: float,
    excluded: tuple[str, ...],
    compat: str,
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
    if top_ns:
        labels = gt_top_labels(scene, rows, top)  # type: ignore[arg-type]
        topn = {n: topn_from_labels(scene, labels, n, threshold, excluded) for n in top_ns}
    ranking = None
    if pairs is not None:
        ranking = set_ranking_from_ranks(pairs, ranks, len(scene.prompts), compat, scene.n_pred)  # type: ignore[arg-type]
    return SegmentationResult(topn=topn, set_ranking=ranking)
