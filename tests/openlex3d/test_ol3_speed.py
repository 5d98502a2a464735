"""The spec's §9 scene scaled down 10x with loose time bounds (full numbers: benchmarks/openlex3d_speed.py)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from scenemetrics.openlex3d import evaluate_segmentation, retrieval_ap

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "openlex3d_speed.py"


@pytest.mark.slow
def test_scaled_down_reference_scene():
    spec = importlib.util.spec_from_file_location("openlex3d_speed", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    scene = bench.build_scene(seed=0, scale=0.1)
    assert len(scene["gt_points"]) == 20_000 and len(scene["prompts"]) == 1500 and len(scene["queries"]) == 1500

    seg_args = [scene[k] for k in ("pred_points", "pred_features")] + [None, scene["text_features"], scene["prompts"]]
    seg_args += [scene[k] for k in ("gt_points", "gt_ids", "categories")]
    start = time.process_time()
    res = evaluate_segmentation(*seg_args, top_n=(5,), set_ranking=True)
    seg_cpu = time.process_time() - start
    assert sum(res.topn[5].frequencies.values()) == pytest.approx(1.0)
    assert 0 < res.set_ranking.scores["overall"] < 1
    # the full-size target is about 2.6 CPU s (the toolkit: 131 s); a loose bound for slow, shared CI machines
    assert seg_cpu < 20, seg_cpu

    start = time.process_time()
    ret = retrieval_ap(scene["pred_points"], scene["instance_features"], scene["instance_index"],
                       scene["query_features"], scene["queries"], scene["gt_points"], scene["gt_ids"])  # fmt: skip
    ret_cpu = time.process_time() - start
    assert ret.n_queries == 1500 and ret.n_gt_instances > 0
    assert ret_cpu < 20, ret_cpu
