"""``SceneMetricsMonitor`` in a gsplat splatting loop on the CPU: ``examples/monitor_gsplat.py``'s simple_trainer-shaped
loop with gsplat's own pure-PyTorch projection and spherical harmonics and our compositor for the pixels (gsplat has no
CPU rasterizer; the real ``gsplat.rasterization`` runs in ``benchmarks/gpu_check.py``)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch
from torchmetrics.image import PeakSignalNoiseRatio

import scenemetrics as sm
from scenemetrics.callbacks import SceneMetricsMonitor

ROOT = Path(__file__).resolve().parents[2]


def _example():
    """The example script as a module (registered first: its dataclasses look their module up by name)."""
    if "monitor_gsplat" not in sys.modules:
        spec = importlib.util.spec_from_file_location("monitor_gsplat", ROOT / "examples" / "monitor_gsplat.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["monitor_gsplat"] = module
        spec.loader.exec_module(module)
    return sys.modules["monitor_gsplat"]


@pytest.mark.extra("gsplat")
def test_splatting_loop_trains_and_logs_on_cpu(tmp_path) -> None:
    from tests.utils.gsplat_cpu import gsplat_cpu_rasterization

    example = _example()
    calls: list[int] = []  # number of cameras of each rasterization call

    def rasterize(*args, **kwargs):
        calls.append(len(kwargs["viewmats"]) if "viewmats" in kwargs else len(args[5]))
        return gsplat_cpu_rasterization(*args, **kwargs)

    torch.manual_seed(0)
    trainset, valset = example.make_dataset(rasterize, num_train=4, num_eval=2, size=20, num_gaussians=96)
    calls.clear()
    splats, optimizers = example.create_splats_with_optimizers(64, sh_degree=3, scene_scale=3.3)
    logged: list[tuple[int, dict[str, float]]] = []
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "squeezenet1_1.pth")
    monitor = SceneMetricsMonitor(
        {"puzzlesim": sm.PuzzleSim(weights_path=weights), "psnr": PeakSignalNoiseRatio(data_range=1.0)},
        references=trainset.images.permute(0, 3, 1, 2),
        every_n_steps=4,
        logger=lambda result, step: logged.append((step, dict(result.scalars))),
    )
    result = example.train(
        splats, optimizers, trainset, valset, rasterize, max_steps=12, monitor=monitor, sh_degree_interval=3
    )

    # it trains: the L1 of the last steps is below the first step's (training views seen once each at least)
    assert len(result.losses) == 12 and sum(result.losses[-3:]) / 3 < result.losses[0]
    # the monitor evaluates at 4, 8, 12 only, rendering the 2 val views one camera at a time only then
    assert [step for step, _ in logged] == [4, 8, 12]
    assert calls == ([1] * 4 + [1, 1]) * 3
    for _, scalars in logged:
        assert 0.0 <= scalars["scenemetrics/puzzlesim"] <= 1.0
        assert math.isfinite(scalars["scenemetrics/psnr"]) and scalars["scenemetrics/eval_seconds"] > 0
    # the last PSNR is that of the final weights (step 12 is the last step), computed here by hand from gsplat's path
    with torch.no_grad():
        se, count = 0.0, 0
        for i in range(len(valset)):
            colors, _, _ = gsplat_cpu_rasterization(
                splats["means"], splats["quats"], splats["scales"].exp(), torch.sigmoid(splats["opacities"]),
                torch.cat([splats["sh0"], splats["shN"]], 1), torch.linalg.inv(valset.camtoworlds[i : i + 1]),
                valset.Ks[i : i + 1], 20, 20, sh_degree=3, backgrounds=torch.ones(1, 3),
            )  # fmt: skip
            se += float(((colors.clamp(0, 1) - valset.images[i : i + 1]) ** 2).sum())
            count += colors.numel()
    assert logged[-1][1]["scenemetrics/psnr"] == pytest.approx(10 * math.log10(count / se), rel=1e-5)


def test_gsplat_backend_without_cuda_is_a_usage_error(capsys) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit) as exc:
        _example().main(["--backend", "gsplat"])
    assert exc.value.code == 2 and "--backend tiny" in capsys.readouterr().err
