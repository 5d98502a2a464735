"""Unbiased RBF MMD² and the median heuristic against NumPy float64 references; anchors; PRISMMMD (also DDP)."""

from __future__ import annotations

import datetime
import math
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

pytest.importorskip("safetensors")

import scenemetrics as sm
from scenemetrics.prism import PRISMMMD, load_anchors, median_bandwidth, mmd_rbf, save_anchors
from scenemetrics.prism import mmd as mmd_module


def _reference(x: np.ndarray, y: np.ndarray, bandwidth: str | float = "median") -> tuple[float, float]:
    """Textbook float64 estimator: full kernel matrices, diagonals removed, sigma = lower median of pair distances."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    z = np.concatenate([x, y])
    m, n = len(x), len(y)
    diff = z[:, None, :] - z[None, :, :]
    d2 = np.einsum("ijk,ijk->ij", diff, diff)
    if bandwidth == "median":
        dist = np.sort(np.sqrt(d2[np.triu_indices(m + n, 1)]))
        sigma = dist[(len(dist) - 1) // 2]
    else:
        sigma = float(bandwidth)
    k = np.exp(-d2 / (2 * sigma**2))
    kxx = (k[:m, :m].sum() - np.trace(k[:m, :m])) / (m * (m - 1))
    kyy = (k[m:, m:].sum() - np.trace(k[m:, m:])) / (n * (n - 1))
    return float(kxx + kyy - 2 * k[:m, m:].mean()), float(sigma)


def _assert_close_to_reference(value: float, ref: float) -> None:
    if abs(ref) >= 1e-3:
        assert abs(value - ref) <= 1e-6 * abs(ref), (value, ref)
    else:
        assert abs(value - ref) <= 1e-9, (value, ref)


CASES = [(37, 53, 16, 0.0), (120, 80, 64, 0.3), (5, 9, 300, 0.0), (64, 31, 128, 0.05), (2, 3, 7, 1.0)]


@pytest.mark.parametrize(("m", "n", "d", "shift"), CASES)
@pytest.mark.parametrize("bandwidth", ["median", 3.0])
def test_matches_float64_reference_on_float32_inputs(m, n, d, shift, bandwidth):
    g = torch.Generator().manual_seed(m * 1000 + n)
    x = torch.randn(m, d, generator=g)
    y = torch.randn(n, d, generator=g) * 1.1 + shift
    bw = bandwidth if bandwidth == "median" else bandwidth * math.sqrt(d)
    ref, sigma = _reference(x.numpy(), y.numpy(), bw)
    value = mmd_rbf(x, y, bw)
    assert value.dtype == torch.float32 and value.shape == ()
    _assert_close_to_reference(float(value), ref)
    if bandwidth == "median":
        assert abs(float(median_bandwidth(x, y)) - sigma) <= 1e-6 * sigma


def test_float64_inputs_stay_float64_and_half_inputs_are_upcast():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 8, generator=g, dtype=torch.float64), torch.randn(20, 8, generator=g, dtype=torch.float64)
    ref, _ = _reference(x.numpy(), y.numpy())
    value = mmd_rbf(x, y)
    assert value.dtype == torch.float64 and abs(float(value) - ref) <= 1e-12
    assert mmd_rbf(x.half(), y.bfloat16()).dtype == torch.float32


def test_identical_sets_follow_the_closed_form():
    # with Y = X the unbiased estimate is exactly -2 (1 - mean_{i != j} k(x_i, x_j)) / m
    g = torch.Generator().manual_seed(1)
    x = torch.randn(50, 6, generator=g, dtype=torch.float64)
    sigma = float(median_bandwidth(x, x))
    d2 = torch.cdist(x, x) ** 2
    k = torch.exp(-d2 / (2 * sigma**2))
    off = (k.sum() - k.trace()) / (50 * 49)
    assert abs(float(mmd_rbf(x, x)) - float(-2 * (1 - off) / 50)) <= 1e-12


def test_two_samples_of_one_distribution_give_about_zero():
    g = torch.Generator().manual_seed(2)
    x = torch.nn.functional.normalize(torch.randn(200, 2048, generator=g), dim=1)
    y = torch.nn.functional.normalize(torch.randn(200, 2048, generator=g), dim=1)
    assert abs(float(mmd_rbf(x, y))) < 1e-3


def test_grows_with_the_mean_shift():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(150, 4, generator=g)
    noise = torch.randn(170, 4, generator=g)
    e1 = torch.tensor([1.0, 0.0, 0.0, 0.0])
    values = [float(mmd_rbf(noise + mu * e1, base)) for mu in (0.0, 0.5, 1.0, 2.0)]
    assert values == sorted(values) and values[0] < values[1] < values[2] < values[3]


def test_symmetric():
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(40, 5, generator=g), torch.randn(25, 5, generator=g) + 0.5
    assert abs(float(mmd_rbf(x, y)) - float(mmd_rbf(y, x))) <= 1e-6 * abs(float(mmd_rbf(x, y)))
    assert float(median_bandwidth(x, y)) == float(median_bandwidth(y, x))


@pytest.mark.parametrize(("m", "n"), [(2, 3), (3, 3), (4, 7)])  # P = 10 (even), 15 (odd), 55 (odd)
def test_median_bandwidth_is_numpys_lower_median(m, n):
    g = torch.Generator().manual_seed(m + n)
    x, y = torch.randn(m, 3, generator=g, dtype=torch.float64), torch.randn(n, 3, generator=g, dtype=torch.float64)
    z = np.concatenate([x.numpy(), y.numpy()])
    dist = np.sort([np.linalg.norm(z[i] - z[j]) for i in range(len(z)) for j in range(i + 1, len(z))])
    lower_median = dist[(len(dist) - 1) // 2]
    assert abs(float(median_bandwidth(x, y)) - lower_median) <= 1e-12 * lower_median
    # duplicates count, at distance 0
    x2 = torch.zeros(3, 2, dtype=torch.float64)
    y2 = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64)  # distances: six 0s, four 5s -> lower median 0
    y3 = torch.tensor([[3.0, 4.0], [3.0, 4.0], [6.0, 8.0]], dtype=torch.float64)
    assert float(median_bandwidth(x2, y2)) == 0.0
    assert float(median_bandwidth(x2[:2], y3)) == 5.0  # 0,5,5,10,5,5,10,0,5,5 -> sorted lower median 5


def test_chunked_tiles_equal_one_tile():
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(30, 4, generator=g, dtype=torch.float64), torch.randn(23, 4, generator=g, dtype=torch.float64)
    assert abs(float(mmd_rbf(x, y, chunk_size=7)) - float(mmd_rbf(x, y))) <= 1e-12
    assert abs(float(median_bandwidth(x, y, chunk_size=7)) - float(median_bandwidth(x, y))) <= 1e-12


def test_selection_path_above_4096_points_equals_the_direct_median(monkeypatch):
    g = torch.Generator().manual_seed(6)
    x, y = torch.randn(2600, 1, generator=g), torch.randn(2400, 1, generator=g) * 1.3 + 0.2  # N = 5000 > 4096
    selected = median_bandwidth(x, y)
    monkeypatch.setattr(mmd_module, "_SMALL_PAIRS", 10**9)  # collect every pair and take kthvalue
    direct = median_bandwidth(x, y)
    assert float(selected) == float(direct)


@pytest.mark.parametrize(("cap_values", "points", "bins"), [(50, 16, 4), (3, 8, 2), (1, 4, 2)])
def test_selection_refines_when_the_bracket_misses(monkeypatch, cap_values, points, bins):
    """Tiny collection caps force the histogram refinement; ties and duplicates included."""
    g = torch.Generator().manual_seed(7)
    sets = [
        (torch.randn(40, 3, generator=g, dtype=torch.float64), torch.randn(33, 3, generator=g, dtype=torch.float64)),
        (torch.randint(0, 3, (40, 1), generator=g).double(), torch.randint(0, 3, (31, 1), generator=g).double()),
        (torch.zeros(20, 2, dtype=torch.float64), torch.randn(25, 2, generator=g, dtype=torch.float64)),
    ]
    expected = [float(median_bandwidth(x, y, chunk_size=7)) for x, y in sets]
    monkeypatch.setattr(mmd_module, "_SMALL_PAIRS", 0)
    monkeypatch.setattr(mmd_module, "_COLLECT_BYTES", 8 * cap_values)
    monkeypatch.setattr(mmd_module, "_BRACKET_POINTS", points)
    monkeypatch.setattr(mmd_module, "_HIST_BINS", bins)
    assert [float(median_bandwidth(x, y, chunk_size=7)) for x, y in sets] == expected


def test_zero_median_gives_nan_and_a_warning():
    x = torch.zeros(5, 3)
    y = torch.cat([torch.zeros(4, 3), torch.ones(1, 3)])
    with pytest.warns(UserWarning, match="median"):
        assert torch.isnan(mmd_rbf(x, y))


@pytest.mark.parametrize(
    ("x", "y", "error"),
    [
        (torch.randn(1, 4), torch.randn(5, 4), ValueError),
        (torch.randn(5, 4), torch.randn(1, 4), ValueError),
        (torch.randn(5, 4), torch.randn(5, 3), ValueError),
        (torch.randn(5), torch.randn(5, 1), ValueError),
        (torch.randint(0, 5, (5, 4)), torch.randn(5, 4), TypeError),
        (torch.randn(5, 4), [[0.0] * 4] * 5, TypeError),
        (torch.full((5, 4), float("nan")), torch.randn(5, 4), ValueError),
    ],
)
def test_bad_inputs_raise(x, y, error):
    with pytest.raises(error):
        mmd_rbf(x, y)


@pytest.mark.parametrize("bandwidth", ["mean", 0.0, -1.0, float("inf"), True])
def test_bad_bandwidth_raises(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        mmd_rbf(torch.randn(4, 2), torch.randn(4, 2), bandwidth)
    with pytest.raises(ValueError, match="chunk_size"):
        mmd_rbf(torch.randn(4, 2), torch.randn(4, 2), chunk_size=0)


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
