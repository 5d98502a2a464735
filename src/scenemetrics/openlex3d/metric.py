"""torchmetrics classes for OpenLex3D: accumulate scenes, average (Top-N, set ranking) or pool (retrieval AP).

States are fixed-size float64/int64 sums (``dist_reduce_fx="sum"``), except the retrieval entries, which are
``"cat"`` lists so that the pooled precision/recall curve can be rebuilt after a DDP sync. Results are float64
scalar tensors. Prompt embeddings are a plain attribute (not a state, not in ``state_dict``).

Example:
    >>> import torch
    >>> from scenemetrics import OpenLex3DTopN
    >>> cats = {"dataset": {"samples": [{"object_id": 1, "labels": {"image_attributes": {"synonyms": ["sofa"]}}}]}}
    >>> metric = OpenLex3DTopN(torch.eye(2), ["sofa", "lamp"], top_n=1, voxel_size=None)
    >>> metric.update(torch.zeros(1, 3), torch.tensor([[1.0, 0.0]]), None, torch.zeros(2, 3), torch.tensor([1, 1]),
    ...               cats)
    >>> float(metric.compute()["synonyms"])
    1.0
"""

from __future__ import annotations

import math
import warnings
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from scenemetrics.checks import check_choice, check_int, check_positive
from scenemetrics.types import TensorOrArray

from ._checks import check_features, check_prompts
from ._checks import check_voxel_size as _check_voxel_size
from .categories import CATEGORIES, EXCLUDED_LABELS
from .retrieval import RetrievalQuery, RetrievalResult, _summary, check_ap_range, pooled_ap, retrieval_ap
from .segmentation import evaluate_segmentation
from .set_ranking import COMPAT_MODES, SCORE_KEYS, SetRankingResult
from .topn import TIERS, TOPN_FORMS, TopNIoUResult, TopNResult, check_excluded_labels

__all__ = ["OpenLex3DRetrieval", "OpenLex3DSetRanking", "OpenLex3DTopN"]


def _text(text_features: Any, prompts: Any) -> tuple[Tensor, list[str]]:
    prompt_list = check_prompts(prompts)
    text = check_features(text_features, "text_features")
    if text.shape[0] != len(prompt_list):
        raise ValueError(
            f"`text_features` must have one row per prompt ({len(prompt_list)}); received {tuple(text.shape)}"
        )
    return text, prompt_list


def _cat(state: list[Tensor] | Tensor, dtype: torch.dtype) -> np.ndarray:
    """A "cat" list state (a tensor after a DDP sync) as one numpy array."""
    if isinstance(state, Tensor):
        return state.cpu().numpy()
    return dim_zero_cat(state).cpu().numpy() if state else torch.zeros(0, dtype=dtype).numpy()


def _f64(value: float) -> Tensor:
    return torch.tensor(value, dtype=torch.float64)


class _ResultMetric(Metric):
    """A metric whose scenes may also be given as precomputed functional results."""

    @abstractmethod
    def _update_from_result(self, result: Any) -> None:
        """Add one scene's result to the states."""

    def update_from_result(self, result: Any) -> None:
        """Accumulate a scene already evaluated with the functional API (e.g. one ``evaluate_segmentation`` call
        shared by several metrics, as the CLI does); equivalent to ``update`` on that scene's inputs."""
        # torchmetrics' own update wrapper (update count, cache reset), applied per call: a wrapper stored on the
        # instance would survive ``clone()`` still bound to the original metric
        self._wrap_update(self._update_from_result)(result)


class OpenLex3DTopN(_ResultMetric):
    """Top-N over scenes: the mean over scenes of :func:`~scenemetrics.openlex3d.topn_frequency` (or, with
    ``form="iou"``, of :func:`~scenemetrics.openlex3d.topn_iou`).

    Args:
        text_features: ``(M, D)`` prompt embeddings (kept as a plain attribute, moved to each update's device).
        prompts: the ``M`` prompt strings.
        top_n, voxel_size, missing_threshold, excluded_labels: as in :func:`~scenemetrics.openlex3d.topn_frequency`.
        form: ``"frequency"`` (the toolkit's category frequency, the published numbers) or ``"iou"`` (the paper's
            ``TP / (TP + FP + FN)`` per label tier).
        kwargs: torchmetrics ``Metric`` options (``sync_on_compute``, ``process_group``, ...).

    ``update(pred_points, pred_features, pred_index, gt_points, gt_ids, categories)`` adds one scene (a scene
    without evaluated object is skipped with a warning). ``compute()`` returns the six category keys (``form="iou"``:
    the four tier keys of :data:`~scenemetrics.openlex3d.TIERS`; float64 scalars, mean over scenes) and
    ``"n_scenes"``; NaN with a ``UserWarning`` before any scene. :attr:`last_result` holds the last scene's
    :class:`~scenemetrics.openlex3d.TopNResult` (or :class:`~scenemetrics.openlex3d.TopNIoUResult`; not a state).

    Example:
        >>> import torch
        >>> m = OpenLex3DTopN(torch.eye(3), ["a", "b", "c"], top_n=2)
        >>> sorted(m.compute().keys())  # doctest: +SKIP
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    freq_sum: Tensor
    n_scenes: Tensor
    n_objects: Tensor

    def __init__(
        self,
        text_features: Any,
        prompts: Sequence[str],
        *,
        top_n: int = 5,
        voxel_size: float | None = 0.05,
        missing_threshold: float = 0.05,
        excluded_labels: Sequence[str] = EXCLUDED_LABELS,
        form: str = "frequency",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.form = check_choice(form, "form", TOPN_FORMS)
        self.keys = CATEGORIES if self.form == "frequency" else TIERS
        self.text_features, self.prompts = _text(text_features, prompts)
        self.top_n = check_int(top_n, "top_n", low=1, high=len(self.prompts))
        _check_voxel_size(voxel_size)
        self.voxel_size = voxel_size
        self.missing_threshold = check_positive(missing_threshold, "missing_threshold")
        self.excluded_labels = check_excluded_labels(excluded_labels)
        self.last_result: TopNResult | TopNIoUResult | None = None
        self.add_state("freq_sum", torch.zeros(len(self.keys), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("n_scenes", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("n_objects", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")

    def update(
        self,
        pred_points: TensorOrArray,
        pred_features: TensorOrArray,
        pred_index: TensorOrArray | None,
        gt_points: TensorOrArray,
        gt_ids: TensorOrArray,
        categories: Any,
    ) -> None:
        result = evaluate_segmentation(
            pred_points,
            pred_features,
            pred_index,
            self.text_features,
            self.prompts,
            gt_points,
            gt_ids,
            categories,
            top_n=self.top_n,
            set_ranking=False,
            voxel_size=self.voxel_size,
            missing_threshold=self.missing_threshold,
            excluded_labels=self.excluded_labels,
            topn_form=self.form,
        )
        self._update_from_result((result.topn if self.form == "frequency" else result.topn_iou)[self.top_n])

    def _update_from_result(self, result: TopNResult | TopNIoUResult) -> None:
        expected = TopNResult if self.form == "frequency" else TopNIoUResult
        if not isinstance(result, expected):
            raise TypeError(
                f"`result` must be a {expected.__name__} for form={self.form!r}; received {type(result).__name__}"
            )
        if result.top_n != self.top_n:
            raise ValueError(f"`result` is a Top-{result.top_n} result; this metric accumulates Top-{self.top_n}")
        self.last_result = result
        if len(result.object_ids) == 0:
            warnings.warn("OpenLex3DTopN: scene without evaluated object skipped", UserWarning, stacklevel=3)
            return
        values = result.frequencies if isinstance(result, TopNResult) else result.ious
        freq = torch.tensor([values[c] for c in self.keys], dtype=torch.float64)
        self.freq_sum += freq.to(self.freq_sum.device)
        self.n_scenes += 1
        self.n_objects += len(result.object_ids)

    def compute(self) -> dict[str, Tensor]:
        n = int(self.n_scenes)
        if n == 0:
            warnings.warn(
                "OpenLex3DTopN.compute() before any evaluated scene; returning NaN", UserWarning, stacklevel=2
            )
        mean = self.freq_sum / n if n else torch.full_like(self.freq_sum, math.nan)
        out = {c: mean[i] for i, c in enumerate(self.keys)}
        out["n_scenes"] = self.n_scenes.clone()
        return out


class OpenLex3DSetRanking(_ResultMetric):
    """Set ranking over scenes: per key, the mean over scenes where the key is finite.

    Args:
        text_features: ``(M, D)`` prompt embeddings (plain attribute, not a state).
        prompts: the ``M`` prompt strings.
        voxel_size, compat: as in :func:`~scenemetrics.openlex3d.set_ranking`.
        kwargs: torchmetrics ``Metric`` options.

    ``update(pred_points, pred_features, pred_index, gt_points, gt_ids, categories)``; ``compute()`` returns the
    11 keys of :data:`~scenemetrics.openlex3d.SCORE_KEYS` (float64 scalars; NaN where no scene defines the key).
    :attr:`last_result` holds the last :class:`~scenemetrics.openlex3d.SetRankingResult`.

    Example:
        >>> import torch
        >>> m = OpenLex3DSetRanking(torch.eye(3), ["a", "b", "c"], compat="toolkit")
        >>> m.compat
        'toolkit'
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    score_sum: Tensor
    score_count: Tensor

    def __init__(
        self,
        text_features: Any,
        prompts: Sequence[str],
        *,
        voxel_size: float | None = 0.05,
        compat: str = "corrected",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.text_features, self.prompts = _text(text_features, prompts)
        _check_voxel_size(voxel_size)
        self.voxel_size = voxel_size
        self.compat = check_choice(compat, "compat", COMPAT_MODES)
        self.last_result: SetRankingResult | None = None
        self.add_state("score_sum", torch.zeros(len(SCORE_KEYS), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("score_count", torch.zeros(len(SCORE_KEYS), dtype=torch.float64), dist_reduce_fx="sum")

    def update(
        self,
        pred_points: TensorOrArray,
        pred_features: TensorOrArray,
        pred_index: TensorOrArray | None,
        gt_points: TensorOrArray,
        gt_ids: TensorOrArray,
        categories: Any,
    ) -> None:
        result = evaluate_segmentation(
            pred_points,
            pred_features,
            pred_index,
            self.text_features,
            self.prompts,
            gt_points,
            gt_ids,
            categories,
            top_n=(),
            set_ranking=True,
            voxel_size=self.voxel_size,
            compat=self.compat,
        ).set_ranking
        self._update_from_result(result)  # type: ignore[arg-type]

    def _update_from_result(self, result: SetRankingResult) -> None:
        self.last_result = result
        values = torch.tensor([result.scores[k] for k in SCORE_KEYS], dtype=torch.float64)
        finite = torch.isfinite(values)
        self.score_sum += torch.where(finite, values, 0.0).to(self.score_sum.device)
        self.score_count += finite.to(self.score_count)

    def compute(self) -> dict[str, Tensor]:
        if not bool((self.score_count > 0).any()):
            warnings.warn(
                "OpenLex3DSetRanking.compute() before any scene with a finite score; NaN", UserWarning, stacklevel=2
            )
        mean = torch.where(self.score_count > 0, self.score_sum / self.score_count.clamp_min(1), math.nan)
        return {k: mean[i] for i, k in enumerate(SCORE_KEYS)}


class OpenLex3DRetrieval(_ResultMetric):
    """Retrieval AP over scenes: pooled curve (the paper's numbers) and the mean of per-scene APs.

    Args:
        top_k, alignment_threshold, ap_range: as in :func:`~scenemetrics.openlex3d.retrieval_ap` (``ap_range``:
            ``"toolkit"`` IoU 0.5:0.05:0.9, ``"paper"`` 0.5:0.05:0.95).
        kwargs: torchmetrics ``Metric`` options.

    ``update(pred_points, pred_features, pred_index, query_features, queries, gt_points, gt_ids)`` adds a scene.
    ``compute()`` returns ``ap``, ``ap50``, ``ap25`` (pooled; equal to
    :func:`~scenemetrics.openlex3d.pooled_retrieval_ap` over the same scenes, whatever their order or DDP rank)
    and ``ap_scene_mean``, ``ap50_scene_mean``, ``ap25_scene_mean`` (float64 scalars, fractions).
    :attr:`last_result` holds the last :class:`~scenemetrics.openlex3d.RetrievalResult`.

    Example:
        >>> m = OpenLex3DRetrieval(top_k=10)
        >>> m.higher_is_better
        True
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    scores: list[Tensor]
    true: list[Tensor]
    thr_index: list[Tensor]
    hard_fn: Tensor
    n_gt: Tensor
    n_pred: Tensor
    scene_ap_sum: Tensor
    scene_ap_count: Tensor

    _LIST_DTYPES: ClassVar[dict[str, torch.dtype]] = {
        "scores": torch.float64,
        "true": torch.uint8,
        "thr_index": torch.int64,
    }

    def __init__(
        self, *, top_k: int = 10, alignment_threshold: float = 0.001, ap_range: str = "toolkit", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.thresholds = check_ap_range(ap_range)
        self.ap_range = ap_range
        self.top_k = check_int(top_k, "top_k", low=1)
        self.alignment_threshold = check_positive(alignment_threshold, "alignment_threshold")
        self.last_result: RetrievalResult | None = None
        for name in self._LIST_DTYPES:
            self.add_state(name, [], dist_reduce_fx="cat")
        self.add_state("hard_fn", torch.zeros(len(self.thresholds), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("n_gt", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("n_pred", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("scene_ap_sum", torch.zeros(3, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("scene_ap_count", torch.zeros(3, dtype=torch.float64), dist_reduce_fx="sum")

    def update(
        self,
        pred_points: TensorOrArray,
        pred_features: TensorOrArray,
        pred_index: TensorOrArray | None,
        query_features: TensorOrArray,
        queries: Sequence[RetrievalQuery],
        gt_points: TensorOrArray,
        gt_ids: TensorOrArray,
    ) -> None:
        result = retrieval_ap(
            pred_points,
            pred_features,
            pred_index,
            query_features,
            queries,
            gt_points,
            gt_ids,
            top_k=self.top_k,
            alignment_threshold=self.alignment_threshold,
            ap_range=self.ap_range,
        )
        self._update_from_result(result)

    def _update_from_result(self, result: RetrievalResult) -> None:
        if result.thresholds != self.thresholds:
            raise ValueError(
                f"`result` uses the IoU thresholds {result.thresholds}; this metric (ap_range={self.ap_range!r}) "
                f"accumulates {self.thresholds}"
            )
        self.last_result = result
        device = self.hard_fn.device
        self.scores.append(torch.cat(result.match_scores).to(device))
        self.true.append(torch.cat(result.match_true).to(device, torch.uint8))
        sizes = torch.tensor([len(s) for s in result.match_scores])
        self.thr_index.append(torch.repeat_interleave(torch.arange(len(self.thresholds)), sizes).to(device))
        self.hard_fn += result.hard_false_negatives.to(device)
        self.n_gt += result.n_gt_instances
        self.n_pred += result.n_pred_instances
        aps = torch.tensor([result.ap, result.ap50, result.ap25], dtype=torch.float64)
        finite = torch.isfinite(aps)
        self.scene_ap_sum += torch.where(finite, aps, 0.0).to(device)
        self.scene_ap_count += finite.to(self.scene_ap_count)

    def _sync_dist(self, dist_sync_fn: Any = None, process_group: Any = None) -> None:
        # torchmetrics gives a rank without scenes an empty placeholder of the default dtype, which does not match
        # the other ranks' float64/uint8/int64 tensors; give it empty tensors of the states' own dtypes instead
        for name, dtype in self._LIST_DTYPES.items():
            if not getattr(self, name):
                setattr(self, name, [torch.zeros(0, dtype=dtype, device=self.hard_fn.device)])
        kwargs = {} if dist_sync_fn is None else {"dist_sync_fn": dist_sync_fn}
        super()._sync_dist(process_group=process_group, **kwargs)

    def compute(self) -> dict[str, Tensor]:
        n_gt = int(self.n_gt)
        if n_gt == 0:
            warnings.warn(
                "OpenLex3DRetrieval.compute() without any GT instance; returning NaN", UserWarning, stacklevel=2
            )
        scores, true, thr = (_cat(getattr(self, name), dtype) for name, dtype in self._LIST_DTYPES.items())
        true = true.astype(bool)
        per_thr = pooled_ap(
            [scores[thr == t] for t in range(len(self.thresholds))],
            [true[thr == t] for t in range(len(self.thresholds))],
            self.hard_fn.cpu().numpy(),
            n_gt,
            int(self.n_pred),
        )
        ap, ap50, ap25 = _summary(per_thr)
        count = self.scene_ap_count
        scene = torch.where(count > 0, self.scene_ap_sum / count.clamp_min(1), math.nan)
        return {
            "ap": _f64(ap),
            "ap50": _f64(ap50),
            "ap25": _f64(ap25),
            "ap_scene_mean": scene[0],
            "ap50_scene_mean": scene[1],
            "ap25_scene_mean": scene[2],
        }
