"""Fixtures of the OpenLex3D tests: the spec's worked examples (§12) as tiny scenes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from .ol3_helpers import categories_dict, on_x, sample


@pytest.fixture
def seg_example() -> dict:
    """Spec §12.2 (voxel_size=None)."""
    prompts = ["sofa", "couch", "arm chair", "armchair", "cat", "table", "lamp", "wall"]
    text = torch.tensor(
        [[1, 0, 0, 0], [0.9, 0.3, 0, 0.1], [0.5, 0.5, 0.5, 0], [0.4, 0.6, 0.5, 0.1], [0, 1, 0.2, 0],
         [0, 0.1, 1, 0], [0.1, 0, 0.2, 1], [0.3, 0.3, 0.3, 0.3]], dtype=torch.float32)  # fmt: skip
    feats = torch.tensor(
        [[1, 0.2, 0, 0], [0.3, 1, 0.1, 0], [0, 0.2, 1, 0.1], [0.2, 0.9, 0.4, 0], [0.1, 0.1, 0.3, 1],
         [0.6, 0.1, 0.9, 0.2]], dtype=torch.float32)  # fmt: skip
    pred = [(0.01, 0), (0.07, 1), (0.19, 1), (1.02, 2), (1.13, 3), (2.0, 2), (3.01, 3), (4.02, 4), (4.09, 5),
            (5.0, 0), (6.0, 0)]  # fmt: skip
    gt = [(0.0, 1), (0.08, 1), (0.2, 1), (1.0, 2), (1.1, 2), (2.0, 3), (3.0, 4), (4.0, 5), (4.1, 5), (4.5, 5),
          (5.0, -100), (6.0, 9)]  # fmt: skip
    cats = categories_dict(
        sample(1, ["sofa", "couch"], ["cat"], ["armchair"], ["2"]),
        sample(2, ["table"], [], ["desk"], ["1", "7"]),
        sample(3, ["wall"]),
        sample(4, [], ["cat"], ["sofa"]),
        sample(5, ["lamp"], [], ["table"], ["1"]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # clutter id 7 names no object (part of the example)
        from scenemetrics.openlex3d import Categories

        categories = Categories.from_dict(cats)
    return {
        "pred_points": on_x([x for x, _ in pred]),
        "pred_features": feats,
        "pred_index": np.array([r for _, r in pred]),
        "text_features": text,
        "prompts": prompts,
        "gt_points": on_x([x for x, _ in gt]),
        "gt_ids": np.array([i for _, i in gt]),
        "categories": categories,
    }


@pytest.fixture
def ret_example() -> dict:
    """Spec §12.3 (top_k=3, alignment_threshold=0.001)."""
    from scenemetrics.openlex3d import RetrievalQuery

    gt = [(0, y, 0) for y in (0, 0.1, 0.2, 0.3)] + [(1, y, 0) for y in (0, 0.1, 0.2)] + [(2, 0, 0), (2, 0.1, 0)]
    gt += [(3, 0, 0)]
    pred = [(0, 0.01, 0), (0, 0.11, 0), (0, 0.21, 0), (1, 0, 0.02), (1, 0.1, 0.02), (1, 0.2, 0.02),
            (0, 0.3, 0.02), (2, 0, 0), (2, 0.1, 0.04), (3, 0, 0)]  # fmt: skip
    return {
        "pred_points": np.array(pred, dtype=np.float64),
        "pred_features": torch.tensor([[1, 0.1, 0], [0.8, 0.5, 0.1], [0.1, 0.2, 1], [0.9, 0, 0.3], [0, 1, 0]]),
        "pred_index": np.array([0, 0, 0, 1, 1, 1, 1, 2, 3, -1]),
        "query_features": torch.tensor([[1, 0.3, 0], [0, 0.1, 1], [0.7, 0.7, 0.05]]),
        "queries": [
            RetrievalQuery("level0_chair", "chair", (10, 11)),
            RetrievalQuery("level0_lamp", "lamp", (12,)),
            RetrievalQuery("level1_red chair", "red chair", (11, 99)),
        ],
        "gt_points": np.array(gt, dtype=np.float64),
        "gt_ids": np.array([10] * 4 + [11] * 3 + [12] * 2 + [-1]),
    }
