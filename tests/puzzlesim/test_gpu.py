"""CUDA (spec sec. 6.4, 10.12): CPU vs CUDA float32, half-precision memories, TF32 left alone, loss backward.

Marked ``gpu``: skipped without a CUDA device (tests/conftest.py)."""

from __future__ import annotations

import pytest
import torch

from scenemetrics.losses import SoftPuzzleSimLoss
from scenemetrics.puzzlesim import PuzzleSim, PuzzleSimMemory, best_match_similarity, puzzle_similarity_map

from .naive import smooth_images

pytestmark = pytest.mark.gpu

REFS = [smooth_images(3, 96, 128, seed=130), smooth_images(2, 112, 96, seed=131)]
IMAGES = smooth_images(2, 104, 120, seed=132)


def cuda(x):
    return [t.cuda() for t in x] if isinstance(x, list) else x.cuda()


def test_cpu_and_cuda_float32_agree(squeeze_ckpt):
    cpu = puzzle_similarity_map(IMAGES, REFS, weights_path=squeeze_ckpt)
    gpu = puzzle_similarity_map(cuda(IMAGES), cuda(REFS), weights_path=squeeze_ckpt)
    assert gpu.device.type == "cuda" and gpu.dtype == torch.float32 and gpu.shape == cpu.shape
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-3, rtol=0)
    # a CPU memory serves CUDA images (vectors copied once) and a moved memory gives the same
    memory = PuzzleSimMemory(REFS, weights_path=squeeze_ckpt)
    torch.testing.assert_close(memory.similarity_map(cuda(IMAGES)).cpu(), cpu, atol=1e-3, rtol=0)
    memory.to("cuda")
    assert memory.device.type == "cuda" and memory.features(2).device.type == "cuda"
    torch.testing.assert_close(memory.similarity_map(cuda(IMAGES)).cpu(), cpu, atol=1e-3, rtol=0)


@pytest.mark.parametrize(("precision", "tol"), [("float16", 2e-3), ("bfloat16", 1e-2)])
def test_half_precision_memories(squeeze_ckpt, precision, tol):
    full = puzzle_similarity_map(cuda(IMAGES), cuda(REFS), weights_path=squeeze_ckpt)
    memory = PuzzleSimMemory(cuda(REFS), weights_path=squeeze_ckpt, precision=precision)
    assert memory.features(2).dtype == getattr(torch, precision)
    half = memory.similarity_map(cuda(IMAGES))
    assert half.dtype == torch.float32
    torch.testing.assert_close(half, full, atol=tol, rtol=0)
    with pytest.raises(ValueError, match=r"`screening`"):
        memory.similarity_map(cuda(IMAGES), screening="on")
    with pytest.raises(ValueError, match=r"CUDA"):
        memory.to("cpu")


def test_similarity_gemm_ignores_tf32(squeeze_ckpt):
    g = torch.Generator().manual_seed(0)
    feats = torch.rand(2, 256, 12, 16, generator=g)
    refs = torch.rand(6, 256, 20, 20, generator=g)
    expected = best_match_similarity(feats.double(), refs.double(), screening="off")
    old = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.set_float32_matmul_precision("high")
        got = best_match_similarity(feats.cuda(), refs.cuda())
        assert torch.get_float32_matmul_precision() == "high"  # the user's setting is restored
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old[0]
        torch.set_float32_matmul_precision(old[1])
    torch.testing.assert_close(got.cpu().double(), expected, atol=1e-5, rtol=0)


def test_metric_on_cuda(squeeze_ckpt):
    metric = PuzzleSim(weights_path=squeeze_ckpt).to("cuda")
    metric.set_references(cuda(REFS))
    assert metric.memory.device.type == "cuda"
    metric.update(cuda(IMAGES))
    assert metric.last_maps.device.type == "cuda"
    cpu = puzzle_similarity_map(IMAGES, REFS, weights_path=squeeze_ckpt).mean(dim=(1, 2)).mean()
    assert float(metric.compute().cpu()) == pytest.approx(float(cpu), abs=1e-3)


def test_soft_loss_backward_on_cuda(squeeze_ckpt):
    x_cpu = IMAGES.clone().requires_grad_(True)
    SoftPuzzleSimLoss(REFS, 0.05, weights_path=squeeze_ckpt)(x_cpu).backward()
    x = cuda(IMAGES).requires_grad_(True)
    loss = SoftPuzzleSimLoss(cuda(REFS), 0.05, weights_path=squeeze_ckpt)(x)
    loss.backward()
    assert x.grad.device.type == "cuda" and bool(torch.isfinite(x.grad).all())
    scale = float(x_cpu.grad.abs().max())
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, atol=1e-2 * scale, rtol=0)
    # hard-map gradients on CUDA too
    y = cuda(IMAGES).requires_grad_(True)
    puzzle_similarity_map(y, cuda(REFS), weights_path=squeeze_ckpt).sum().backward()
    assert bool(torch.isfinite(y.grad).all()) and float(y.grad.abs().max()) > 0


def test_cuda_map_matches_puzzle_sim(checkpoint, torchvision_cache):
    """The automatic CUDA search against the authors' ``puzzle-sim`` on the GPU (its CUDA path)."""
    puzzle_sim = pytest.importorskip("puzzle_sim", reason="needs puzzle-sim (the [dev] extra)")
    refs = smooth_images(6, 192, 256, seed=3).cuda()
    image = smooth_images(1, 192, 256, seed=4).cuda()
    full = checkpoint("squeezenet1_1", classifier=True)  # puzzle-sim loads torchvision's whole SqueezeNet strictly
    memory = PuzzleSimMemory(refs, weights_path=full)
    ours = memory.similarity_map(image)
    torch.testing.assert_close(ours, memory.similarity_map(image, screening="off"), atol=0, rtol=0)
    torchvision_cache("squeezenet1_1", full)
    with torch.no_grad():
        theirs = puzzle_sim.PuzzleSim(refs)(image, mem_save=False)
    torch.testing.assert_close(ours[0], theirs.reshape(ours.shape[1:]).float(), atol=1e-3, rtol=0)
