"""torchmetrics classes (spec §6): accumulation over scenes, reset, state_dict, DDP with 2 gloo processes."""

from __future__ import annotations

import datetime
import math
import multiprocessing
import os
import socket
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import scenemetrics as sm
from scenemetrics.openlex3d import (
    CATEGORIES,
    SCORE_KEYS,
    evaluate_segmentation,
    pooled_retrieval_ap,
    retrieval_ap,
)

SEG = ("pred_points", "pred_features", "pred_index", "gt_points", "gt_ids", "categories")
RET = ("pred_points", "pred_features", "pred_index", "query_features", "queries", "gt_points", "gt_ids")


def seg_scenes(base: dict) -> list[dict]:
    """Three scenes: the worked example, a variant with other features, and one whose only object is a wall (no
    Top-N object, set ranking without secondary labels)."""
    other = dict(base, pred_features=base["pred_features"].flip(0).contiguous())
    wall = dict(base, gt_ids=np.where(base["gt_ids"] > 0, 3, base["gt_ids"]))
    return [base, other, wall]


def ret_scenes(base: dict) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    noisy = dict(base, pred_features=base["pred_features"] + 0.3 * torch.rand(base["pred_features"].shape, generator=g))
    fewer = dict(base, queries=base["queries"][:2], query_features=base["query_features"][:2])
    return [base, noisy, fewer]


def test_topn_accumulates_the_mean(seg_example):
    scenes = seg_scenes(seg_example)
    metric = sm.OpenLex3DTopN(seg_example["text_features"], seg_example["prompts"], top_n=2, voxel_size=None)
    results = []
    for s in scenes[:2]:
        metric.update(*(s[k] for k in SEG))
        results.append(metric.last_result)
    with pytest.warns(UserWarning) as record:
        metric.update(*(scenes[2][k] for k in SEG))
    assert any("scene without evaluated object skipped" in str(w.message) for w in record)
    assert metric.last_result.object_ids.numel() == 0
    out = metric.compute()
    assert list(out) == [*CATEGORIES, "n_scenes"]
    assert int(out["n_scenes"]) == 2
    for c in CATEGORIES:
        assert out[c].dtype == torch.float64 and out[c].ndim == 0
        assert float(out[c]) == pytest.approx(np.mean([r.frequencies[c] for r in results]), abs=1e-15)
    assert "text_features" not in metric.state_dict() and not any("text" in k for k in metric.state_dict())
    metric.reset()
    with pytest.warns(UserWarning) as record:
        assert math.isnan(float(metric.compute()["synonyms"]))
    assert any("before any evaluated scene" in str(w.message) for w in record)


def test_set_ranking_skips_nan_keys_per_scene(seg_example):
    scenes = seg_scenes(seg_example)
    metric = sm.OpenLex3DSetRanking(seg_example["text_features"], seg_example["prompts"], voxel_size=None)
    per_scene = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for s in scenes:
            metric.update(*(s[k] for k in SEG))
            per_scene.append(metric.last_result.scores)
        out = metric.compute()
    assert math.isnan(per_scene[2]["secondary"]) and not math.isnan(per_scene[2]["synonyms"])
    assert list(out) == list(SCORE_KEYS)
    for k in SCORE_KEYS:
        values = [s[k] for s in per_scene if not math.isnan(s[k])]
        expected = np.mean(values) if values else math.nan
        assert float(out[k]) == pytest.approx(expected, abs=1e-15, nan_ok=True), k
        assert out[k].dtype == torch.float64
    metric.reset()
    with pytest.warns(UserWarning) as record:
        assert math.isnan(float(metric.compute()["overall"]))
    assert any("before any scene" in str(w.message) for w in record)


def test_update_from_result_equals_update(seg_example):
    kw = {"text_features": seg_example["text_features"], "prompts": seg_example["prompts"]}
    a = sm.OpenLex3DTopN(**kw, top_n=1, voxel_size=None)
    b = sm.OpenLex3DTopN(**kw, top_n=1, voxel_size=None)
    a.update(*(seg_example[k] for k in SEG))
    res = evaluate_segmentation(*(seg_example[k] for k in SEG[:3]), kw["text_features"], kw["prompts"],
                                *(seg_example[k] for k in SEG[3:]), top_n=(1, 2), voxel_size=None)  # fmt: skip
    b.update_from_result(res.topn[1])
    assert {k: float(v) for k, v in a.compute().items()} == {k: float(v) for k, v in b.compute().items()}
    with pytest.raises(ValueError, match="Top-2 result"):
        b.update_from_result(res.topn[2])
    clone = b.clone()
    clone.update_from_result(res.topn[1])  # the clone's states only
    assert int(clone.n_scenes) == 2 and int(b.n_scenes) == 1


def test_retrieval_pooled_and_scene_mean(ret_example):
    scenes = ret_scenes(ret_example)
    metric = sm.OpenLex3DRetrieval(top_k=3)
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for s in scenes:
            metric.update(*(s[k] for k in RET))
            results.append(retrieval_ap(*(s[k] for k in RET), top_k=3))
    out = metric.compute()
    pooled = pooled_retrieval_ap(results)
    assert float(out["ap"]) == pooled.ap and float(out["ap50"]) == pooled.ap50 and float(out["ap25"]) == pooled.ap25
    assert float(out["ap_scene_mean"]) == pytest.approx(np.mean([r.ap for r in results]), abs=1e-15)
    assert float(out["ap25_scene_mean"]) == pytest.approx(np.mean([r.ap25 for r in results]), abs=1e-15)
    assert all(v.dtype == torch.float64 for v in out.values())
    assert metric.higher_is_better is True and sm.OpenLex3DTopN.higher_is_better is None
    # scene order does not matter
    reordered = sm.OpenLex3DRetrieval(top_k=3)
    for r in reversed(results):
        reordered.update_from_result(r)
    assert float(reordered.compute()["ap"]) == pytest.approx(pooled.ap, abs=1e-15)
    metric.reset()
    with pytest.warns(UserWarning) as record:
        assert math.isnan(float(metric.compute()["ap"]))
    assert any("without any GT instance" in str(w.message) for w in record)


# ---------------------------------------------------------------------------------------------- DDP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank: int, world: int, port: int, seg: list[dict], ret: list[dict], text, prompts, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        warnings.simplefilter("ignore", UserWarning)
        topn = sm.OpenLex3DTopN(text, prompts, top_n=2, voxel_size=None)
        ranking = sm.OpenLex3DSetRanking(text, prompts, voxel_size=None, compat="toolkit")
        retrieval = sm.OpenLex3DRetrieval(top_k=3)
        for s in seg[rank::world]:
            topn.update(*(s[k] for k in SEG))
            ranking.update(*(s[k] for k in SEG))
        for s in ret if rank == 0 else []:  # rank 1 sees no retrieval scene at all
            retrieval.update(*(s[k] for k in RET))
        out = {**topn.compute(), **ranking.compute(), **retrieval.compute()}
        torch.save({k: float(v) for k, v in out.items()}, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_two_processes_equal_single_process(seg_example, ret_example, tmp_path):
    seg, ret = seg_scenes(seg_example), ret_scenes(ret_example)
    # plain containers only: the categories go as their dict so that the spawned processes rebuild them
    seg = [dict(s, categories=s["categories"].to_dict()) for s in seg]
    text, prompts = seg_example["text_features"], seg_example["prompts"]
    # forkserver: the heavy imports happen once, in a fresh server process (no OpenMP state inherited from pytest),
    # and both ranks fork from it
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["torch", "torchmetrics", "scenemetrics.openlex3d.metric"]
    )
    args = (2, _free_port(), seg, ret, text, prompts, str(tmp_path))
    mp.start_processes(_ddp_worker, args=args, nprocs=2, join=True, start_method="forkserver")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        topn = sm.OpenLex3DTopN(text, prompts, top_n=2, voxel_size=None)
        ranking = sm.OpenLex3DSetRanking(text, prompts, voxel_size=None, compat="toolkit")
        retrieval = sm.OpenLex3DRetrieval(top_k=3)
        for s in seg:
            topn.update(*(s[k] for k in SEG))
            ranking.update(*(s[k] for k in SEG))
        for s in ret:
            retrieval.update(*(s[k] for k in RET))
        single = {k: float(v) for k, v in {**topn.compute(), **ranking.compute(), **retrieval.compute()}.items()}
    for rank in (0, 1):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        assert got.keys() == single.keys()
        for k, v in single.items():
            assert got[k] == pytest.approx(v, abs=1e-12, nan_ok=True), (rank, k)
