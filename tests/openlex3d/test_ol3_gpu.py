"""Logits, top-N and ranks run on the features' device; results match the CPU on tie-free scenes (spec §3.3)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import RetrievalQuery, evaluate_segmentation, retrieval_ap

from .ol3_helpers import random_scene

ARGS = ("pred_points", "pred_features", "pred_index", "text_features", "prompts", "gt_points", "gt_ids", "categories")


@pytest.mark.gpu
@pytest.mark.parametrize("dense", [True, False])
def test_cuda_equals_cpu(dense):
    scene = random_scene(3, dense=dense, voxel=0.05)
    cuda = dict(scene, pred_features=torch.as_tensor(scene["pred_features"]).cuda())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cpu_res = evaluate_segmentation(*(scene[k] for k in ARGS), top_n=(1, 3))
        gpu_res = evaluate_segmentation(*(cuda[k] for k in ARGS), top_n=(1, 3))
    for n in (1, 3):
        assert torch.equal(cpu_res.topn[n].point_labels, gpu_res.topn[n].point_labels)
        assert cpu_res.topn[n].frequencies == pytest.approx(gpu_res.topn[n].frequencies, abs=1e-12)
    assert cpu_res.set_ranking.scores == pytest.approx(gpu_res.set_ranking.scores, abs=1e-12, nan_ok=True)
    assert gpu_res.topn[1].point_labels.device.type == "cpu"


@pytest.mark.gpu
def test_cuda_retrieval_equals_cpu():
    rng = np.random.default_rng(0)
    gt = rng.uniform(0, 1, size=(300, 3))
    gt_ids = rng.integers(0, 6, size=300)
    pred = gt + rng.normal(0, 0.01, size=gt.shape)
    index = rng.integers(-1, 10, size=300)
    feats = torch.tensor(rng.normal(size=(10, 8)), dtype=torch.float32)
    queries = [RetrievalQuery(f"level0_q{i}", f"q{i}", (i % 6,)) for i in range(12)]
    qf = torch.tensor(rng.normal(size=(12, 8)), dtype=torch.float32)
    cpu = retrieval_ap(pred, feats, index, qf, queries, gt, gt_ids, top_k=4)
    gpu = retrieval_ap(pred, feats.cuda(), index, qf.cuda(), queries, gt, gt_ids, top_k=4)
    np.testing.assert_allclose(cpu.ap_per_threshold.numpy(), gpu.ap_per_threshold.numpy(), atol=1e-6)
