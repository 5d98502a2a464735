"""A real ``ns-train nerfacto-scenemetrics`` run on the CPU (tiny Blender scene), read back from TensorBoard."""

from __future__ import annotations

import glob
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.utils.extras import need

pytestmark = [pytest.mark.nerfstudio, pytest.mark.slow]

need("nerfstudio")
need("lightning")  # TensorBoard

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import scenemetrics as sm  # noqa: E402
from tests.utils.blender_scene import write_blender_scene  # noqa: E402


def _installed() -> bool:
    try:
        importlib.metadata.distribution("scenemetrics")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _offline_weights(tmp_path: Path) -> Path:
    """Random SqueezeNet for PuzzleSim; random AlexNet where torchvision looks for it (nerfacto builds LPIPS)."""
    torch_home = Path(os.environ["TORCH_HOME"])
    sm.puzzlesim.random_checkpoint("alexnet", torch_home / "hub" / "checkpoints" / "alexnet-owt-7be5be79.pth")
    return sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "squeezenet1_1.pth")


def _ns_train(tmp_path: Path, method: str, extra: list[str], timeout: int) -> Path:
    scene = write_blender_scene(tmp_path / "scene", size=32, num_train=8, num_val=2, num_test=1)
    weights = _offline_weights(tmp_path)
    cmd = [
        sys.executable, "-m", "nerfstudio.scripts.train", method,
        "--max-num-iterations", "30", "--vis", "tensorboard", "--viewer.quit-on-train-completion", "True",
        "--steps-per-save", "1000", "--steps-per-eval-batch", "0", "--steps-per-eval-image", "0",
        "--steps-per-eval-all-images", "0",
        "--output-dir", str(tmp_path / "outputs"), "--experiment-name", "tiny", "--timestamp", "run",
        *extra,
        "--pipeline.scenemetrics.metrics", "puzzlesim", "--pipeline.scenemetrics.every-n-steps", "10",
        "--pipeline.scenemetrics.num-eval-views", "1",
        "--pipeline.scenemetrics.puzzlesim-weights", str(weights),
        "blender-data", "--data", str(scene),
    ]  # fmt: skip
    env = {**os.environ, "SCENEMETRICS_OFFLINE": "1", "WANDB_MODE": "offline", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])
    files = glob.glob(str(tmp_path / "outputs" / "tiny" / method / "run" / "events.out.tfevents.*"))
    assert len(files) == 1, files
    return Path(files[0])


def _check_events(path: Path) -> None:
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    values = [(e.step, e.value) for e in acc.Scalars("scenemetrics/puzzlesim")]
    assert [s for s, _ in values] == [10, 20]
    assert all(0.0 <= v <= 1.0 for _, v in values)
    assert [e.step for e in acc.Scalars("scenemetrics/eval_seconds")] == [10, 20]
    images = acc.Images("scenemetrics/puzzlesim/map/0")
    assert [e.step for e in images] == [10, 20]
    # the map picture for people: the 32x32 map enlarged to at least 160 px, with a title and a colour bar
    assert images[0].height >= 160 and images[0].width >= 160
    # render | target | abs error panel of the eval view (32x32 tiles, unscaled) and its error over time
    panels = acc.Images("scenemetrics/panel/0")
    assert [e.step for e in panels] == [10, 20] and 3 * 32 < panels[0].width < 3 * 32 + 200
    assert [e.step for e in acc.Images("scenemetrics/panel_over_time/0")] == [10, 20]


@pytest.mark.skipif(
    not _installed(), reason="ns-train finds the plugin through its entry point: pip-install the package"
)
@pytest.mark.parametrize("background", [False, True])
def test_ns_train_nerfacto_scenemetrics_cpu(tmp_path, background) -> None:
    # CPU needs the torch implementation and no mixed precision; the small model sizes only make it fast. In the
    # background mode the same tags land at the same steps (handed to nerfstudio's writer iterations later; the last
    # one at the checkpoint that ends training)
    cpu = [
        "--machine.device-type", "cpu", "--pipeline.model.implementation", "torch", "--mixed-precision", "False",
        "--pipeline.datamanager.train-num-rays-per-batch", "64",
        "--pipeline.datamanager.eval-num-rays-per-batch", "64",
        "--pipeline.model.log2-hashmap-size", "12", "--pipeline.model.num-levels", "4",
        "--pipeline.model.max-res", "64",
        "--pipeline.model.num-nerf-samples-per-ray", "16", "--pipeline.model.num-proposal-samples-per-ray", "32", "16",
        "--pipeline.scenemetrics.background", str(background),
    ]  # fmt: skip
    _check_events(_ns_train(tmp_path, "nerfacto-scenemetrics", cpu, timeout=600))


@pytest.mark.gpu
@pytest.mark.skipif(
    not _installed(), reason="ns-train finds the plugin through its entry point: pip-install the package"
)
def test_ns_train_splatfacto_scenemetrics_gpu(tmp_path) -> None:
    _check_events(_ns_train(tmp_path, "splatfacto-scenemetrics", [], timeout=600))
