"""PRISM's anchor files and PRISMMMD (also DDP) on the core MMD (``scenemetrics.stats.mmd_rbf``)."""

from __future__ import annotations

import datetime
import math
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

pytest.importorskip("safetensors")

import scenemetrics as sm
from scenemetrics.prism import PRISMMMD, load_anchors, save_anchors
from scenemetrics.stats import median_bandwidth, mmd_rbf
from scenemetrics.stats import mmd as mmd_module

# ---- anchors files and PRISMMMD ---------------------------------------------------------------------------------


def test_anchor_file_round_trip(tmp_path):
    emb = torch.randn(12, 6)
    save_anchors(emb, tmp_path / "a.safetensors", metadata={"note": "x"})
    assert torch.equal(load_anchors(tmp_path / "a.safetensors"), emb)
    save_anchors(emb, tmp_path / "h.safetensors", dtype=torch.float16)
    loaded = load_anchors(tmp_path / "h.safetensors")
    assert loaded.dtype == torch.float32 and torch.equal(loaded, emb.half().float())
    from safetensors.torch import save_file

    save_file({"anchors": emb}, str(tmp_path / "foreign.safetensors"), metadata={"format": "other/1"})
    with pytest.raises(ValueError, match="not a PRISM anchor file"):
        load_anchors(tmp_path / "foreign.safetensors")
    with pytest.raises(ValueError, match="dtype"):
        save_anchors(emb, tmp_path / "x.safetensors", dtype=torch.float64)


def test_metric_from_precomputed_embeddings_matches_mmd_rbf():
    g = torch.Generator().manual_seed(8)
    anchors, a, b = torch.randn(40, 8, generator=g), torch.randn(15, 8, generator=g), torch.randn(10, 8, generator=g)
    metric = sm.PRISMMMD(anchors=anchors)
    metric.add_embeddings(a)
    metric.add_embeddings(b)
    expected = mmd_rbf(torch.cat([a, b]), anchors)
    assert torch.allclose(metric.compute(), expected, rtol=1e-6, atol=0)
    assert torch.allclose(metric.bandwidth_, median_bandwidth(torch.cat([a, b]), anchors))
    fixed = PRISMMMD(anchors=anchors, bandwidth=2.0)
    fixed.add_embeddings(a)
    assert torch.allclose(fixed.compute(), mmd_rbf(a, anchors, 2.0), rtol=1e-6)


def test_anchors_survive_reset_and_stay_out_of_the_state_dict(tmp_path):
    g = torch.Generator().manual_seed(9)
    metric = PRISMMMD(anchors=torch.randn(10, 4, generator=g))
    metric.add_embeddings(torch.randn(6, 4, generator=g))
    assert set(metric.state_dict()) <= {"embeddings"}
    metric.save_anchors(tmp_path / "anchors.safetensors")
    before = metric.anchors.clone()
    metric.reset()
    assert metric.embeddings == [] and torch.equal(metric.anchors, before)
    metric.reset_anchors()
    assert metric.anchors is None
    metric.load_anchors(tmp_path / "anchors.safetensors")
    assert torch.equal(metric.anchors, before)
    metric.load_anchors(tmp_path / "anchors.safetensors")  # loading replaces, it does not append
    assert metric.anchors.shape == (10, 4)
    from_path = PRISMMMD(anchors=tmp_path / "anchors.safetensors")
    assert torch.equal(from_path.anchors, before)
    moved = metric.to(torch.device("meta"))
    assert moved.anchors.device.type == "meta"


def test_squared_false_returns_zero_for_a_negative_estimate():
    g = torch.Generator().manual_seed(10)
    x = torch.randn(30, 3, generator=g)
    squared = PRISMMMD(anchors=x)
    squared.add_embeddings(x.clone())
    assert float(squared.compute()) < 0  # identical sets: the unbiased estimate is negative
    plain = PRISMMMD(anchors=x, squared=False)
    plain.add_embeddings(x.clone())
    assert float(plain.compute()) == 0.0
    shifted = PRISMMMD(anchors=x, squared=False)
    shifted.add_embeddings(x + 2.0)
    assert abs(float(shifted.compute()) - math.sqrt(float(mmd_rbf(x + 2.0, x)))) <= 1e-6


def test_degenerate_cases_warn_and_return_nan():
    metric = PRISMMMD()
    metric.add_embeddings(torch.randn(5, 3))
    with pytest.warns(UserWarning, match="2 anchors"):
        assert torch.isnan(metric.compute())
    few = PRISMMMD(anchors=torch.randn(5, 3))
    few.add_embeddings(torch.randn(1, 3))
    with pytest.warns(UserWarning, match="2 generated embeddings"):
        assert torch.isnan(few.compute())
    with pytest.raises(ValueError, match="dimension"):
        few.add_embeddings(torch.randn(2, 4))
    with pytest.raises(RuntimeError, match="extractor"):
        few.update(torch.rand(1, 3, 64, 64), torch.rand(1, 3, 64, 64), torch.zeros(3))
    with pytest.raises(ValueError, match="chunk_size"):
        PRISMMMD(chunk_size=0)
    with pytest.raises(ValueError, match="bandwidth"):
        PRISMMMD(bandwidth="mean")
    with pytest.raises(ValueError, match="anchors"):
        PRISMMMD().save_anchors("never.safetensors")


def test_provenance_mismatch_warns(tmp_path, extractor64):
    metric = PRISMMMD(extractor64, None)
    metric.add_anchors(torch.randn(4, 208))
    metric.save_anchors(tmp_path / "raw.safetensors")
    other = PRISMMMD(extractor64, sm.prism.ProjectionHead(in_dim=208, out_dim=8, hidden_dim=8))
    with pytest.warns(UserWarning, match="not comparable"):
        other.load_anchors(tmp_path / "raw.safetensors")


def test_update_with_the_extractor(extractor64):
    g = torch.Generator().manual_seed(11)
    src, gt, pred = (torch.rand(3, 3, 64, 64, generator=g) for _ in range(3))
    pose = torch.tensor([0.0, 45.0, 0.0])
    metric = PRISMMMD(extractor64)
    metric.update_anchors(src, gt, pose)
    metric.update(src, pred, pose)
    with torch.no_grad():
        e_gt = sm.prism.prism_embed(extractor64, None, src, gt, pose)
        e_pred = sm.prism.prism_embed(extractor64, None, src, pred, pose)
    assert torch.allclose(metric.anchors, e_gt, atol=1e-6)
    assert torch.allclose(metric.compute(), mmd_rbf(e_pred, e_gt), atol=1e-6)
    assert not any("unet" in k for k in metric.state_dict())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank: int, port: int, anchors: torch.Tensor, emb: torch.Tensor, queue) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=120)
    )
    try:
        metric = PRISMMMD(anchors=anchors)
        if rank == 0:  # rank 1 has no generated embeddings at all
            metric.add_embeddings(emb[:7])
            metric.add_embeddings(emb[7:])
        value = float(metric.compute())
        both = PRISMMMD(anchors=anchors)
        both.add_embeddings(emb[:10] if rank == 0 else emb[10:])
        queue.put((rank, value, float(both.compute())))
    finally:
        dist.destroy_process_group()


def test_ddp_gathers_embeddings_even_from_an_empty_rank():
    g = torch.Generator().manual_seed(12)
    anchors, emb = torch.randn(20, 5, generator=g), torch.randn(16, 5, generator=g) + 0.3
    expected = float(mmd_rbf(emb, anchors))
    # forkserver: the heavy imports happen once in a fresh server process, and both ranks fork from it. A plain fork
    # of the (multi-threaded) pytest worker can deadlock gloo's collectives.
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["torch", "torchmetrics", "scenemetrics.prism.metric"])
    queue = ctx.SimpleQueue()
    mp.start_processes(_ddp_worker, args=(_free_port(), anchors, emb, queue), nprocs=2, join=True, start_method=method)
    results = [queue.get() for _ in range(2)]
    assert sorted(r[0] for r in results) == [0, 1]
    for _, one_empty, both in results:
        assert abs(one_empty - expected) <= 1e-6 * abs(expected)
        assert abs(both - expected) <= 1e-6 * abs(expected)


def test_head_and_anchor_files_share_one_reader_that_names_the_file(tmp_path):
    # one safetensors reader serves both kinds: each checks its own format tag, so neither file passes for the other
    import re

    from scenemetrics.prism import ProjectionHead

    head_path, anchors_path = tmp_path / "head.safetensors", tmp_path / "anchors.safetensors"
    ProjectionHead(in_dim=4, out_dim=3, hidden_dim=5).save(head_path)
    save_anchors(torch.randn(6, 3), anchors_path)
    with pytest.raises(ValueError, match=re.escape(f"{str(head_path)!r} is not a PRISM anchor file")):
        load_anchors(head_path)
    with pytest.raises(ValueError, match=re.escape(f"{str(anchors_path)!r} is not a PRISM head file")):
        ProjectionHead.load(anchors_path)
    for load in (load_anchors, ProjectionHead.load):
        with pytest.raises(FileNotFoundError, match=r"missing\.safetensors"):
            load(tmp_path / "missing.safetensors")
    (tmp_path / "pickle.pt").write_bytes(b"\x80\x04K\x01.")  # a pickle: never unpickled, refused as unreadable
    for load in (load_anchors, ProjectionHead.load):
        with pytest.raises(ValueError, match=r"pickle\.pt'? is not a readable safetensors file"):
            load(tmp_path / "pickle.pt")


def test_mmd_options_are_checked_once():
    opts = mmd_module.MMDOptions(bandwidth=2, squared=False, chunk_size=8)
    assert (opts.bandwidth, opts.squared, opts.chunk_size) == (2.0, False, 8)
    for kwargs in ({"bandwidth": "mean"}, {"bandwidth": -1.0}, {"chunk_size": 0}):
        with pytest.raises(ValueError):
            mmd_module.MMDOptions(**kwargs)
    x, y = torch.randn(6, 3, generator=torch.Generator().manual_seed(1)), torch.randn(5, 3) + 1
    metric = PRISMMMD(anchors=y, bandwidth=2, squared=False, chunk_size=4)
    assert metric.options == mmd_module.MMDOptions(2.0, False, 4)
    metric.add_embeddings(x)
    expected = mmd_rbf(x, y, 2.0, chunk_size=4).clamp_min(0).sqrt()
    with pytest.MonkeyPatch.context() as mp_:
        mp_.setattr(mmd_module, "check_bandwidth", lambda b: (_ for _ in ()).throw(AssertionError("checked again")))
        assert float(metric.compute()) == pytest.approx(float(expected), rel=1e-6)
