"""Shared preprocessing of the segmentation metrics (internal): validation, downsampling, GT -> prediction matching.

Top-N and set ranking both start from the same prepared scene; :func:`evaluate_segmentation` prepares it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor

from ._checks import (
    check_features,
    check_index,
    check_int_array,
    check_points,
    check_prompts,
    check_text_features,
    check_voxel_size,
)
from .categories import Categories, as_categories
from .geometry import _downsample, nearest_prediction


@dataclass
class PreparedScene:
    """A validated scene after downsampling and matching.

    Attributes:
        features: ``(K, D)`` prediction features (device of the input).
        text: ``(M, D)`` prompt embeddings.
        prompts: the ``M`` prompt strings.
        categories: the scene's GT categories.
        gt_ids: ``(G,)`` int64 GT object ids.
        distances: ``(G,)`` float64 distance to the nearest downsampled prediction (inf without prediction).
        gt_rows: ``(G,)`` int64 feature row of that prediction (-1 without prediction).
        n_pred: number of downsampled predicted points.
    """

    features: Tensor
    text: Tensor
    prompts: list[str]
    categories: Categories
    gt_ids: np.ndarray
    distances: np.ndarray
    gt_rows: np.ndarray
    n_pred: int


def prepare_scene(
    pred_points: Any,
    pred_features: Any,
    pred_index: Any,
    text_features: Any,
    prompts: Any,
    gt_points: Any,
    gt_ids: Any,
    categories: Any,
    voxel_size: Any,
) -> PreparedScene:
    """Validate every input (raising the documented errors), downsample the prediction and match GT points."""
    cats = as_categories(categories)
    prompt_list = check_prompts(prompts)
    points = check_points(pred_points, "pred_points")
    features = check_features(pred_features, "pred_features")
    index = check_index(pred_index, len(points), features.shape[0], allow_unassigned=False)
    text = check_text_features(text_features, len(prompt_list), features.shape[1], "text_features", "prompts")
    gt = check_points(gt_points, "gt_points")
    ids = check_int_array(gt_ids, "gt_ids", len(gt))
    ds_points, ds_rows = _downsample(points, index, check_voxel_size(voxel_size))
    distances, nn = nearest_prediction(gt, ds_points)
    gt_rows = np.where(nn >= 0, ds_rows[np.maximum(nn, 0)] if len(ds_rows) else -1, -1)
    return PreparedScene(features, text, prompt_list, cats, ids, distances, gt_rows.astype(np.int64), len(ds_points))
