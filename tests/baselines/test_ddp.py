"""Under DDP a rank that saw no image still takes part in the sync, and every rank computes the one-process value
(the embedding lists are kept flattened so that torchmetrics' 1-D placeholder of an empty rank gathers with them)."""

from __future__ import annotations

import datetime
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

pytestmark = [pytest.mark.slow, pytest.mark.extra("baselines")]

CASES = (("CMMD", "clip"), ("KernelDistance", "clip"), ("FrechetDistance", "clip"), ("EmbeddingSimilarity", "clip"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _metric(cls: str, folder: str):
    import scenemetrics.baselines as baselines

    return getattr(baselines, cls)("clip", weights=folder)


def _ddp_worker(rank: int, port: int, folder: str, renders: torch.Tensor, refs: torch.Tensor, queue) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=120)
    )
    try:
        out = {}
        for cls, _ in CASES:
            metric = _metric(cls, folder)
            if rank == 0:  # rank 1 sees nothing at all
                metric.update(renders[:3], refs[:3])
                metric.update(renders[3:], refs[3:])
            out[cls] = float(metric.compute())
        queue.put((rank, out))
    finally:
        dist.destroy_process_group()


def test_a_rank_without_images_still_syncs(clip_folder):
    g = torch.Generator().manual_seed(0)
    renders, refs = torch.rand(5, 3, 24, 24, generator=g), torch.rand(5, 3, 24, 24, generator=g)
    expected = {}
    for cls, _ in CASES:
        metric = _metric(cls, str(clip_folder))
        metric.update(renders, refs)
        expected[cls] = float(metric.compute())
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["torch", "torchmetrics", "scenemetrics.baselines.metric"])
    queue = ctx.SimpleQueue()
    args = (_free_port(), str(clip_folder), renders, refs, queue)
    mp.start_processes(_ddp_worker, args=args, nprocs=2, join=True, start_method=method)
    results = [queue.get() for _ in range(2)]
    assert sorted(r[0] for r in results) == [0, 1]
    for _, values in results:
        for cls, value in values.items():
            assert value == pytest.approx(expected[cls], rel=1e-5, abs=1e-7), cls
