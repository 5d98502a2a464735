"""The baselines on a CUDA device give the CPU's values (networks and states follow the device; skipped without one)."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.extra("baselines")]


def _images(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 3, 40, 48, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    ("cls", "features", "joint"),
    [
        ("FrechetDistance", "inception", False),
        ("FrechetDistance", "dinov2", False),
        ("JointFrechetDistance", "dinov2", True),
        ("KernelDistance", "dinov2", False),
        ("CMMD", "clip", False),
        ("JointCMMD", "clip", True),
        ("EmbeddingSimilarity", "clip", False),
    ],
)
def test_cuda_gives_the_cpu_values(cls, features, joint, clip_folder, dinov2_folder, inception_path):
    import scenemetrics.baselines as baselines

    weights = {"clip": clip_folder, "dinov2": dinov2_folder, "inception": inception_path}[features]
    kwargs = {"image_size": 28} if features == "dinov2" else {}
    if cls == "KernelDistance":
        kwargs.update(subsets=7, subset_size=4)
    args = [_images(5, 0), _images(5, 1)]
    if joint:
        args.insert(0, _images(5, 2))
    values = []
    for device in ("cpu", "cuda"):
        metric = getattr(baselines, cls)(features, weights=weights, **kwargs).to(device)
        metric.update(*(a.to(device) for a in args))
        value = metric.compute()
        assert value.device.type == device
        values.append(float(value))
    # TF32 is off by default for matrix products in PyTorch; convolutions may use it, hence the tolerance
    assert values[1] == pytest.approx(values[0], rel=2e-3, abs=1e-4)
