"""Every rank of a multi-process command ends its gloo process group itself.

Lightning destroys only NCCL groups at exit; a gloo group left to interpreter shutdown aborted a rank of
`openlex3d eval --devices 2` once in CI (SIGABRT, "terminate called without an active exception").
"""

from __future__ import annotations

import types

import pytest
import torch.distributed as dist

from scenemetrics.devices import end_process_group


@pytest.fixture
def group(tmp_path):
    """A one-process gloo group, as Fabric's launcher leaves one on each rank."""
    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield
    if dist.is_initialized():  # the code under test did not end it
        dist.destroy_process_group()


def test_end_process_group_destroys_the_group_once(group):
    assert dist.is_initialized()
    assert end_process_group() is True and not dist.is_initialized()
    assert end_process_group() is False  # nothing left to end


def _boom(*args, **kwargs):
    raise RuntimeError("boom")


@pytest.mark.parametrize("rank", [0, 1])
def test_the_eval_worker_ends_the_group_even_when_it_fails(group, monkeypatch, rank):
    from scenemetrics.evaluation import runner

    monkeypatch.setattr(runner, "_worker", _boom)
    fabric = types.SimpleNamespace(global_rank=rank, world_size=2, device="cpu")
    if rank == 0:  # rank 0 hands its failure back as a value
        assert isinstance(runner._fabric_worker(fabric, None).failure, RuntimeError)
    else:  # the others raise their own
        with pytest.raises(RuntimeError, match="boom"):
            runner._fabric_worker(fabric, None)
    assert not dist.is_initialized()


def test_the_openlex3d_rank_ends_the_group(group, monkeypatch, tmp_path):
    from scenemetrics.openlex3d import cli

    monkeypatch.setattr(cli, "_evaluate", lambda fabric, config: 0)
    assert cli._evaluate_rank(None, {}) == 0 and not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store2'}", rank=0, world_size=1)
    monkeypatch.setattr(cli, "_evaluate", _boom)
    with pytest.raises(RuntimeError, match="boom"):
        cli._evaluate_rank(None, {})
    assert not dist.is_initialized()
