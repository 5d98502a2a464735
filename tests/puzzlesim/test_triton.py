"""The fused Triton search: checked on the CPU through Triton's interpreter (small shapes), and on CUDA against the
exhaustive torch search and the authors' ``puzzle-sim`` (``gpu`` marker: skipped without a CUDA device)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSimMemory
from scenemetrics.puzzlesim import search as S
from scenemetrics.puzzlesim.functional import search_method
from scenemetrics.puzzlesim.triton_search import triton_available, triton_max

from .naive import smooth_images
from .test_search import exact_max

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    """Outputs of ``triton_cases.py`` run with ``TRITON_INTERPRET=1`` in a fresh process (Triton reads it at import)."""
    out = tmp_path_factory.mktemp("triton") / "cases.pt"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    res = subprocess.run(
        [sys.executable, "-m", "tests.puzzlesim.triton_cases", str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return torch.load(out, weights_only=True)


@pytest.mark.slow  # one fresh process importing torch and Triton: ~10 s on an idle machine
@pytest.mark.parametrize("case", ["ragged", "one-tile", "c-below-block", "zeros"])
def test_interpreted_kernel_equals_the_exhaustive_search(interpreted, case):
    got = interpreted[case]
    q, r, values, idx = got["q"], got["r"], got["values"], got["idx"]
    m = q.shape[0]
    assert values.dtype == torch.float32 and idx.dtype == torch.int64 and values.shape == idx.shape == (m,)
    torch.testing.assert_close(values.double(), exact_max(q, r), atol=1e-6, rtol=0)
    torch.testing.assert_close((q * r[idx]).sum(1), values, atol=1e-6, rtol=0)  # the index attains the max
    plain, _ = S.plain_max(q, r, 1 << 20)
    torch.testing.assert_close(values, plain, atol=1e-6, rtol=0)
    assert torch.equal(got["values_only"], values)
    if case == "zeros":
        assert float(values[0]) == 0.0
    assert interpreted["empty"]["values"].shape == (0,)


def test_bad_inputs_raise(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q = torch.rand(4, 8)
    assert triton_available("cpu") is False
    with pytest.raises(ValueError, match="CUDA tensors"):
        triton_max(q, q)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(ValueError, match="share C"):
        triton_max(q, torch.rand(4, 9))
    with pytest.raises(ValueError, match="float32"):
        triton_max(q, q.double())


def test_auto_uses_the_kernel_on_cuda(monkeypatch):
    import scenemetrics.puzzlesim.triton_search as T

    monkeypatch.setattr(T, "triton_available", lambda device=None: True)
    assert search_method("auto", torch.device("cuda"), 10, False) == "triton"
    assert search_method("auto", torch.device("cuda"), 10, True) == "triton"
    assert search_method("auto", torch.device("cuda"), 10, False, "float16") == "triton"
    assert search_method("off", torch.device("cuda"), 10, False) == "plain"
    monkeypatch.setattr(T, "triton_available", lambda device=None: False)
    assert search_method("auto", torch.device("cuda"), 10, False) == "plain"


# ------------------------------------------------------------------------------------------------ CUDA
@pytest.mark.gpu
def test_cuda_kernel_matches_torch_and_puzzle_sim(squeeze_ckpt, torchvision_cache):
    refs = smooth_images(6, 192, 256, seed=3).cuda()
    image = smooth_images(1, 192, 256, seed=4).cuda()
    memory = PuzzleSimMemory(refs, weights_path=squeeze_ckpt)
    fused = memory.similarity_map(image)  # auto: the Triton kernel
    exhaustive = memory.similarity_map(image, screening="off")
    torch.testing.assert_close(fused, exhaustive, atol=1e-5, rtol=0)
    x = image.clone().requires_grad_(True)
    memory.similarity_map(x).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    puzzle_sim = pytest.importorskip("puzzle_sim")
    torchvision_cache("squeezenet1_1", squeeze_ckpt)
    theirs = puzzle_sim.PuzzleSim(refs)
    with torch.no_grad():
        their_map = theirs(image, mem_save=False)
    torch.testing.assert_close(fused[0], their_map.reshape(fused.shape[1:]).float(), atol=1e-3, rtol=0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        memory.similarity_map(image)
    torch.cuda.synchronize()
    ours = (time.perf_counter() - t0) / 5
    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(5):
            theirs(image)
    torch.cuda.synchronize()
    theirs_s = (time.perf_counter() - t0) / 5
    print(f"per image on {torch.cuda.get_device_name()}: ours {ours * 1e3:.1f} ms, puzzle-sim {theirs_s * 1e3:.1f} ms")
