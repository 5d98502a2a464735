"""The checks that need a GPU, in one command, written as one table (``gpu_check.json`` and ``gpu_check.md``).

    python benchmarks/gpu_check.py --out runs/gpu_check           # a CUDA machine: about 8 minutes at most
    python benchmarks/gpu_check.py --tiny --out /tmp/gpu_check    # small sizes; on a CPU-only machine (CI) the
                                                                  # CUDA-only rows are skipped, each naming why

Every row has the same columns (:data:`COLUMNS`): ``check``, ``variant``, ``device``, ``status`` (``ok``,
``skipped`` with the reason in ``note``, or ``failed`` with the error in ``note``), ``max_abs_diff``, ``time_s`` (median
seconds, CUDA synchronised), ``baseline`` and ``baseline_time_s`` (what ``time_s`` is compared with), ``ratio``
(``time_s / baseline_time_s``) and ``note``. The checks:

* **PuzzleSim search** on the speed benchmark's references (``benchmarks/puzzlesim_speed.py``: 34 synthetic views of
  416×628, one novel view): the automatic search (the plain GEMM search on CUDA) against the exhaustive fp32
  search (max map difference, time per image), and against ``puzzle-sim``'s default path (``PuzzleSim(refs)(test)``,
  its CUDA path on a GPU).
* **gsplat example training**: ``examples/monitor_gsplat.py``'s loop (simple_trainer-shaped) for 500 steps with
  ``gsplat.rasterization``, without and with ``SceneMetricsMonitor`` (PuzzleSim + PSNR on 4 views) every 100 steps:
  the training slowdown. Two monitor rows: ``synchronous``, and ``background`` (``SceneMetricsMonitor(...,
  background=True)``: the loop only renders, a worker thread on side CUDA streams scores, draws and logs).
* **autocast**: OSIM, PRISM distance (random-weight tiny Zero123 and head) and the full-reference maps (SSIM, LPIPS,
  absolute error) in fp32 against ``torch.autocast`` fp16 and bf16: max difference of the score or map, and time.
* **scenemetrics eval** on a generated results tree, ``--device cuda`` against ``--device cpu``: max difference per
  metric over the per-view values, wall time of each run.
* **ns-train splatfacto-scenemetrics** for 200 iterations on a generated Blender-format scene, evaluating every 100:
  the run succeeds and TensorBoard holds ``scenemetrics/puzzlesim`` at 100 and 200.

Nothing is downloaded: every network has random weights built here (PuzzleSim's SqueezeNet, LPIPS's AlexNet, OSIM's
YOLOX, PRISM's tiny Zero123) or bundled with a package (torchmetrics' LPIPS linear layers); the scores are
uncalibrated, the differences and times are what is checked. Needs ``pip install -e ".[all,dev,nerfstudio]"`` for
every row (an absent extra skips its rows, naming it); gsplat's CUDA kernels compile at their first use unless gsplat
came as a prebuilt wheel, which the row ``first rasterization`` times. ``--budget-s`` (default 480) skips the checks
that would start after the budget is spent.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "src").is_dir() and str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

COLUMNS = (
    "check",
    "variant",
    "device",
    "status",
    "max_abs_diff",
    "time_s",
    "baseline",
    "baseline_time_s",
    "ratio",
    "note",
)
"""The table's columns, in order (JSON keys and Markdown header)."""

CHECKS = (
    "PuzzleSim search",
    "gsplat example training",
    "autocast",
    "scenemetrics eval",
    "ns-train splatfacto-scenemetrics",
)
"""The checks, in the order they run."""

MONITOR_MODES: dict[str, dict[str, Any]] = {
    "synchronous": {},
    "background": {"background": True},
}
"""Monitor modes timed in the gsplat training check: extra keyword arguments of ``SceneMetricsMonitor``."""


@dataclass
class Row:
    """One line of the table (see :data:`COLUMNS`)."""

    check: str
    variant: str
    device: str
    status: str = "ok"
    max_abs_diff: float | None = None
    time_s: float | None = None
    baseline: str | None = None
    baseline_time_s: float | None = None
    ratio: float | None = None
    note: str = ""


class SkipCheck(Exception):  # noqa: N818 (not an error: the row says why a check did not run)
    """Raised by a check that cannot run here; the message is the reason written in the row."""


@dataclass
class Settings:
    """Sizes and places of one run (``tiny``: seconds on a CPU; otherwise the full GPU check)."""

    tiny: bool
    device: str
    tmp: Path
    budget_s: float
    repeats: int
    start: float = field(default_factory=time.perf_counter)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def remaining(self) -> float:
        return self.budget_s - (time.perf_counter() - self.start)


# -- helpers ----------------------------------------------------------------------------------------------------------


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: str, repeats: int) -> tuple[float, Any]:
    """Median wall seconds of ``fn()`` over ``repeats`` calls after one warm-up call, and the last output;
    ``repeats=0`` times the one (cold) call (``--tiny``: its times only show that the code runs)."""
    if repeats == 0:
        t0 = time.perf_counter()
        out = fn()
        _sync(device)
        return time.perf_counter() - t0, out
    out = fn()
    _sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def max_abs_diff(a: Any, b: Any) -> float:
    """Largest absolute difference of two tensors (NaN where exactly one of a pair is NaN; equal NaNs count as 0)."""
    a = torch.as_tensor(a).detach().double().cpu()
    b = torch.as_tensor(b).detach().double().cpu()
    both = torch.isnan(a) & torch.isnan(b)
    diff = (a - b).abs().masked_fill(both, 0.0)
    return float(diff.max()) if diff.numel() else 0.0


def attempt(check: str, variant: str, device: str, fn: Callable[[], dict[str, Any]]) -> Row:
    """A row from ``fn()``'s fields; ``SkipCheck`` gives a skipped row, any other exception a failed one."""
    try:
        return Row(check, variant, device, **fn())
    except SkipCheck as reason:
        return Row(check, variant, device, status="skipped", note=str(reason))
    except Exception as err:  # a check that breaks is reported in its row, and the other checks still run
        traceback.print_exc()
        return Row(check, variant, device, status="failed", note=f"{type(err).__name__}: {err}"[:400])


def _need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise SkipCheck(f'needs the [{extra}] extra ({module}; pip install "scenemetrics[{extra}]")')


def _need_cuda(device: str, what: str) -> None:
    if not device.startswith("cuda"):
        raise SkipCheck(f"needs CUDA ({what})")


def _load_script(path: Path) -> Any:
    """Import a script by path, registered under its name (its dataclasses look the module up)."""
    if path.stem not in sys.modules:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return sys.modules[path.stem]


def _random_squeezenet(tmp: Path) -> Path:
    from scenemetrics.puzzlesim import random_checkpoint

    path = tmp / "squeezenet1_1.pth"
    return path if path.exists() else random_checkpoint("squeezenet1_1", path)


# -- 1. PuzzleSim search -----------------------------------------------------------------------------------------------


def puzzlesim_rows(s: Settings) -> list[Row]:
    check = CHECKS[0]
    speed = _load_script(ROOT / "benchmarks" / "puzzlesim_speed.py")
    from scenemetrics.puzzlesim import PuzzleSimMemory
    from scenemetrics.puzzlesim.functional import search_method

    refs_n, size = (4, (64, 96)) if s.tiny else (34, (416, 628))
    args = argparse.Namespace(weights=None, data=None, refs=refs_n, size=size, seed=0, device=s.device)
    (s.tmp / "puzzlesim").mkdir(exist_ok=True)
    weights, refs, test = speed._setup(args, s.tmp / "puzzlesim")
    memory = PuzzleSimMemory(refs, weights_path=weights)
    method = search_method("auto", refs.device, int(memory.features(2).shape[0]), False)
    setting = f"{refs_n} refs {size[0]}x{size[1]}, time per image"
    auto: dict[str, Any] = {}

    def auto_vs_exhaustive() -> dict[str, Any]:
        t_auto, auto["map"] = timed(lambda: memory.similarity_map(test, screening="auto"), s.device, s.repeats)
        auto["time"] = t_auto
        t_off, exhaustive = timed(lambda: memory.similarity_map(test, screening="off"), s.device, s.repeats)
        return {
            "status": "ok",
            "max_abs_diff": max_abs_diff(auto["map"], exhaustive),
            "time_s": t_auto,
            "baseline": "exhaustive fp32",
            "baseline_time_s": t_off,
            "ratio": t_auto / t_off,
            "note": setting,
        }

    def versus_puzzle_sim() -> dict[str, Any]:
        _need("puzzle_sim", "dev")
        if "map" not in auto:
            raise SkipCheck("the automatic search failed (row above)")
        ((_, theirs),) = speed._implementations(weights, refs, test, only="puzzle_sim_default").values()
        t_theirs, their_map = timed(theirs, s.device, s.repeats)
        path = "its CUDA path" if s.cuda else "on the CPU"
        return {
            "max_abs_diff": max_abs_diff(auto["map"][0], their_map.reshape(auto["map"][0].shape)),
            "time_s": auto["time"],
            "baseline": "puzzle-sim default (mem_save, stride 4)",
            "baseline_time_s": t_theirs,
            "ratio": auto["time"] / t_theirs,
            "note": f"{setting}; puzzle-sim {path}",
        }

    return [
        attempt(check, f"{method} (auto) vs exhaustive fp32", s.device, auto_vs_exhaustive),
        attempt(check, "ours (auto) vs puzzle-sim", s.device, versus_puzzle_sim),
    ]


# -- 2. the gsplat example's training loop with and without the monitor ------------------------------------------------


def gsplat_rows(s: Settings) -> list[Row]:
    check = CHECKS[1]
    example = _load_script(ROOT / "examples" / "monitor_gsplat.py")
    import scenemetrics as sm
    from scenemetrics.callbacks import SceneMetricsMonitor
    from scenemetrics.tiny_splat import intrinsics, look_at
    from scenemetrics.tiny_splat import rasterization as tiny_rasterization

    steps, every = (10, 5) if s.tiny else (500, 100)
    use_gsplat = s.cuda and importlib.util.find_spec("gsplat") is not None
    if s.tiny:
        size, gaussians, num_train, num_eval = 24, 48, 3, 2
    elif use_gsplat:
        size, gaussians, num_train, num_eval = 384, 50_000, 32, 4
    else:  # tiny_splat composites every Gaussian at every pixel: (N, H, W) tensors, so a smaller scene
        size, gaussians, num_train, num_eval = 128, 4096, 32, 4
    backend = "gsplat.rasterization" if use_gsplat else "scenemetrics.tiny_splat.rasterization"
    if use_gsplat:
        why = ""
    elif not s.cuda:
        why = "needs CUDA (gsplat has no CPU rasterizer)"
    else:
        why = 'needs the [gsplat] extra (pip install "scenemetrics[gsplat]")'

    rasterize = example.gsplat_rasterization() if use_gsplat else tiny_rasterization
    rows = []

    def first_call() -> dict[str, Any]:
        if not use_gsplat:
            raise SkipCheck(f"gsplat.rasterization {why}")
        on = {"device": s.device}
        t0 = time.perf_counter()
        rasterize(torch.zeros(1, 3, **on), torch.tensor([[1.0, 0, 0, 0]], **on), torch.full((1, 3), 0.1, **on),
                  torch.ones(1, **on), torch.ones(1, 3, **on), look_at((3, 0, 0))[None].to(s.device),
                  intrinsics(8, 8)[None].to(s.device), 8, 8)  # fmt: skip
        _sync(s.device)
        return {"time_s": time.perf_counter() - t0, "note": "includes compiling gsplat's CUDA kernels if not cached"}

    rows.append(attempt(check, "first rasterization", s.device, first_call))
    trainset, valset = example.make_dataset(
        rasterize, num_train=num_train, num_eval=num_eval, size=size, num_gaussians=512, device=s.device
    )
    scene_scale = 1.1 * float(trainset.camtoworlds[:, :3, 3].norm(dim=-1).max())
    weights = _random_squeezenet(s.tmp)
    t0 = time.perf_counter()
    puzzlesim = sm.PuzzleSim(references=trainset.images.permute(0, 3, 1, 2), weights_path=weights).to(s.device)
    embed_s = time.perf_counter() - t0

    def run(mode: str | None, seed: int) -> tuple[float, list[float]]:
        from torchmetrics.image import PeakSignalNoiseRatio

        splats, optimizers = example.create_splats_with_optimizers(
            gaussians, scene_scale=scene_scale, device=s.device, seed=seed
        )
        evals: list[float] = []
        monitor = None
        if mode is not None:
            monitor = SceneMetricsMonitor(
                {"puzzlesim": puzzlesim, "psnr": PeakSignalNoiseRatio(data_range=1.0)},
                every_n_steps=every,
                logger=lambda result, step: evals.append(result.scalars["scenemetrics/eval_seconds"]),
                **MONITOR_MODES[mode],
            ).to(s.device)
        result = example.train(splats, optimizers, trainset, valset, rasterize, max_steps=steps, monitor=monitor)
        if monitor is not None:
            monitor.close()  # background mode: pending evaluations finish (after the timed loop)
        return result.seconds, evals

    if s.repeats:
        run(None, seed=99)  # warm-up: allocator, kernels, cuDNN
    runs: dict[str | None, list[float]] = {None: []}
    evals: dict[str, list[float]] = {}
    modes = list(MONITOR_MODES)
    for mode in modes:
        runs[mode], evals[mode] = [], []
    for repeat in range(max(1, s.repeats)):
        for mode in [None, *modes]:  # alternating, so that drifts of the machine hit every variant alike
            seconds, ev = run(mode, seed=repeat)
            runs[mode].append(seconds)
            if mode is not None:
                evals[mode].extend(ev)
    base = statistics.median(runs[None])
    setting = f"{backend}, {steps} steps, {gaussians} Gaussians, {size}x{size}, {num_eval} eval views"
    instead = f"; not gsplat.rasterization, which {why}" if why else ""
    rows.append(Row(check, "without monitor", s.device, time_s=base, note=setting + instead))

    for mode in MONITOR_MODES:

        def timing(mode: str = mode) -> dict[str, Any]:
            seconds = statistics.median(runs[mode])
            n = len(evals[mode]) // max(1, s.repeats)
            eval_s = statistics.median(evals[mode]) if evals[mode] else float("nan")
            return {
                "time_s": seconds,
                "baseline": "without monitor",
                "baseline_time_s": base,
                "ratio": seconds / base,
                "note": f"slowdown {100 * (seconds / base - 1):+.1f} %; {n} evaluations (every {every} steps, "
                f"PuzzleSim + PSNR), eval_seconds median {eval_s:.3g}; reference embedding {embed_s:.3g} s done "
                f"before timing{instead}",
            }

        rows.append(attempt(check, f"monitor every {every}, {mode}", s.device, timing))
    return rows


# -- 3. autocast ----------------------------------------------------------------------------------------------------


@contextmanager
def _autocast(device: str, dtype: torch.dtype | None) -> Iterator[None]:
    if dtype is None:
        yield
    else:
        with torch.autocast(device_type=torch.device(device).type, dtype=dtype):
            yield


def autocast_rows(s: Settings) -> list[Row]:
    check = CHECKS[2]
    from scenemetrics.synthetic import make_scene

    size = (64, 96) if s.tiny else (480, 640)
    views = 1 if s.tiny else 2
    scene = make_scene(num_train=2, num_novel=views, size=size, seed=1)
    preds = torch.stack(scene.novel_views).to(s.device)
    target = torch.stack(scene.novel_targets).to(s.device)

    def osim() -> Callable[[], Any]:
        from scenemetrics.osim import YOLOX, osim
        from scenemetrics.osim.random import random_checkpoint

        variant = "yolox_nano" if s.tiny else "yolox_x"
        ckpt = random_checkpoint(variant, s.tmp / f"{variant}.pth", calib_size=128 if s.tiny else 256)
        model = YOLOX.from_official(variant, ckpt, device=s.device)
        return lambda: osim(preds, target, model=model).score

    def prism() -> Callable[[], Any]:
        _need("diffusers", "prism")
        from scenemetrics.prism import PRISMDistance, ProjectionHead, Zero123Features, random_checkpoint

        folder = s.tmp / "zero123_tiny"
        if not folder.exists():
            random_checkpoint(folder, size="tiny")
        extractor = Zero123Features.from_pretrained(folder, image_size=64, resize=True, device=s.device)
        torch.manual_seed(0)
        head = ProjectionHead(in_dim=extractor.feature_dim, out_dim=64, hidden_dim=128)
        metric = PRISMDistance(extractor, head).to(s.device)
        square = torch.nn.functional.interpolate(torch.cat([target, preds]), size=(64, 64), mode="area")
        source, pred, tgt = square[:views].roll(1, 0), square[views:], square[:views]
        pose = torch.tensor([[10.0, 30.0, 0.0]], device=s.device).expand(views, 3)

        def score() -> Any:
            metric.reset()
            metric.update(source, pred, tgt, pose)
            return metric.compute()

        return score

    def fullref(name: str) -> Callable[[], Callable[[], Any]]:
        def build() -> Callable[[], Any]:
            from scenemetrics import fullref as fr
            from scenemetrics.puzzlesim import random_checkpoint

            if name == "ssim_map":
                return lambda: fr.ssim_map(preds, target)
            if name == "abs_error_map":
                return lambda: fr.abs_error_map(preds, target)
            alex = s.tmp / "alexnet_features.pth"
            if not alex.exists():
                random_checkpoint("alexnet", alex, include_classifier=False)
            return lambda: fr.lpips_map(preds, target, net="alex", weights_path=alex)

        return build

    cases = {
        "OSIM score": osim,
        "PRISM distance": prism,
        "SSIM map": fullref("ssim_map"),
        "LPIPS map (alex)": fullref("lpips_map"),
        "abs error map": fullref("abs_error_map"),
    }
    repeats = min(s.repeats, 3)  # OSIM (detector + GBVS) is the slow case: 3 repeats keep the check within its budget
    rows = []
    for name, build in cases.items():
        state: dict[str, Any] = {}

        def reference(build: Callable = build, state: dict = state) -> None:
            if "error" in state:
                raise state["error"]
            if "fn" not in state:
                try:
                    state["fn"] = build()
                    with torch.no_grad():
                        state["time"], state["out"] = timed(state["fn"], s.device, repeats)
                except Exception as err:
                    state["error"] = err
                    raise

        for dtype in (torch.float16, torch.bfloat16):

            def compare(dtype: torch.dtype = dtype, reference: Callable = reference, state: dict = state) -> dict:
                reference()
                with torch.no_grad(), _autocast(s.device, dtype):
                    t, out = timed(state["fn"], s.device, repeats)
                return {
                    "max_abs_diff": max_abs_diff(state["out"], out),
                    "time_s": t,
                    "baseline": "fp32",
                    "baseline_time_s": state["time"],
                    "ratio": t / state["time"],
                    "note": f"{views} view(s) {size[0]}x{size[1]}, random weights; output dtype {out.dtype}",
                }

            rows.append(attempt(check, f"{name}: {str(dtype).split('.')[1]} vs fp32", s.device, compare))
    return rows


# -- 4. scenemetrics eval, cuda vs cpu ---------------------------------------------------------------------------------


EVAL_METRICS = ("psnr", "ssim", "lpips", "puzzlesim")


def write_results_tree(root: Path, *, scenes: int, views: int, size: tuple[int, int]) -> Path:
    """``root/<method>/<scene>/{train,renders,gt}/`` from the procedural scene (renders with planted artifacts)."""
    from scenemetrics import viz
    from scenemetrics.synthetic import make_scene

    for k in range(scenes):
        scene = make_scene(num_train=4, num_novel=views, size=size, seed=k)
        folder = root / "artifacts" / f"scene{k}"
        for i, view in enumerate(scene.train_views):
            viz.save_png(view, folder / "train" / f"train_{i:03d}.png")
        for i, (render, gt) in enumerate(zip(scene.novel_views, scene.novel_targets, strict=True)):
            viz.save_png(render, folder / "renders" / f"test_{i:03d}.png")
            viz.save_png(gt, folder / "gt" / f"test_{i:03d}.png")
    return root


def eval_values(results: dict) -> dict[str, dict[str, float]]:
    """``{metric: {"<scene>/<view>": value}}`` from a ``results.json`` (every scene's per-view values)."""
    out: dict[str, dict[str, float]] = {}
    for scene in results["scenes"]:
        for metric, per_view in scene.get("per_view", {}).items():
            for view, values in per_view.items():
                out.setdefault(metric, {})[f"{scene['folder']}/{view}"] = float(values[metric])
    return out


def _package_env(s: Settings) -> dict[str, str]:
    """The environment of child processes: this scenemetrics first on the path, private caches, offline."""
    import scenemetrics

    src = str(Path(scenemetrics.__file__).resolve().parents[1])
    path = os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    home = s.tmp / "home"
    return {
        **os.environ,
        "PYTHONPATH": path,
        "SCENEMETRICS_HOME": str(home / "scenemetrics"),
        "TORCH_HOME": str(home / "torch"),
        "SCENEMETRICS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "offline",
    }


def eval_rows(s: Settings) -> list[Row]:
    check = CHECKS[3]
    scenes, views, size = (1, 2, (64, 96)) if s.tiny else (2, 4, (416, 628))
    root = write_results_tree(s.tmp / "eval_tree", scenes=scenes, views=views, size=size)
    runs: dict[str, tuple[float, dict]] = {}

    def run(device: str) -> tuple[float, dict]:
        out = s.tmp / f"eval_{device.replace(':', '_')}"
        cmd = [sys.executable, "-m", "scenemetrics", "eval", "--root", str(root), "--out", str(out),
               "--metrics", ",".join(EVAL_METRICS), "--random-weights", "--no-report", "--quiet",
               "--device", device]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=_package_env(s), capture_output=True, text=True, timeout=max(60, s.remaining()))
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"scenemetrics eval --device {device} exited {proc.returncode}: {proc.stderr[-300:]}")
        runs[device] = seconds, eval_values(json.loads((out / "results.json").read_text()))
        return runs[device]

    def cpu_run() -> dict[str, Any]:
        seconds, values = run("cpu")
        means = ", ".join(f"{m} {statistics.mean(v.values()):.4g}" for m, v in values.items())
        return {"time_s": seconds, "note": f"{scenes} scene(s) x {views} views {size[0]}x{size[1]}; means: {means}"}

    rows = [attempt(check, "cpu run (wall, incl. start-up)", "cpu", cpu_run)]

    def cuda_run() -> dict[str, Any]:
        _need_cuda(s.device, "--device cuda")
        if "cpu" not in runs:
            raise SkipCheck("the cpu run failed (row above)")
        seconds, _ = run(s.device)
        return {"time_s": seconds, "baseline": "cpu run", "baseline_time_s": runs["cpu"][0],
                "ratio": seconds / runs["cpu"][0]}  # fmt: skip

    rows.append(attempt(check, "cuda run (wall, incl. start-up)", s.device, cuda_run))
    for metric in EVAL_METRICS:

        def compare(metric: str = metric) -> dict[str, Any]:
            _need_cuda(s.device, "--device cuda")
            if s.device not in runs or "cpu" not in runs:
                raise SkipCheck("a run failed (rows above)")
            cpu, gpu = runs["cpu"][1].get(metric, {}), runs[s.device][1].get(metric, {})
            if not cpu or cpu.keys() != gpu.keys():
                raise RuntimeError(f"per-view {metric} values differ in views: cpu {sorted(cpu)}, cuda {sorted(gpu)}")
            keys = sorted(cpu)
            diff = max_abs_diff([cpu[k] for k in keys], [gpu[k] for k in keys])
            return {"max_abs_diff": diff, "note": f"over {len(keys)} per-view values"}

        rows.append(attempt(check, f"{metric}: cuda vs cpu", s.device, compare))
    return rows


# -- 5. ns-train splatfacto-scenemetrics -----------------------------------------------------------------------------


def write_blender_scene(root: Path, *, size: int, num_train: int, num_val: int) -> Path:
    """A NeRF-synthetic-layout scene (``transforms_{train,val,test}.json`` + PNGs) of a random Gaussian scene."""
    from scenemetrics import viz
    from scenemetrics.tiny_splat import make_splat_scene

    fov = 50.0
    scene = make_splat_scene(num_gaussians=256, num_train=num_train, num_eval=num_val, size=size)
    flip = torch.diag(torch.tensor([1.0, -1.0, -1.0, 1.0]))  # OpenCV camera -> OpenGL camera (Blender's)
    splits = {"train": (scene.train_viewmats, scene.train_images), "val": (scene.eval_viewmats, scene.eval_images)}
    splits["test"] = splits["val"]
    for split, (viewmats, images) in splits.items():
        frames = []
        for i, (viewmat, image) in enumerate(zip(viewmats, images, strict=True)):
            viz.save_png(image, root / split / f"r_{i}.png")
            c2w = torch.linalg.inv(viewmat) @ flip
            frames.append({"file_path": f"./{split}/r_{i}", "transform_matrix": c2w.tolist()})
        transforms = {"camera_angle_x": math.radians(fov), "frames": frames}
        (root / f"transforms_{split}.json").write_text(json.dumps(transforms))
    return root


def ns_train_rows(s: Settings) -> list[Row]:
    check = CHECKS[4]
    iterations, every = 200, 100
    scene = write_blender_scene(s.tmp / "blender", size=32 if s.tiny else 64, num_train=8, num_val=2)

    def train() -> dict[str, Any]:
        _need_cuda(s.device, "splatfacto rasterizes with gsplat, which has no CPU rasterizer")
        _need("nerfstudio", "nerfstudio")
        try:
            importlib.metadata.distribution("scenemetrics")
        except importlib.metadata.PackageNotFoundError:
            raise SkipCheck(
                "needs scenemetrics pip-installed (ns-train finds the method through its entry point)"
            ) from None
        import scenemetrics as sm

        env = _package_env(s)
        # splatfacto builds torchmetrics' LPIPS, which loads torchvision's AlexNet from the torch hub cache
        sm.puzzlesim.random_checkpoint("alexnet", Path(env["TORCH_HOME"]) / "hub/checkpoints/alexnet-owt-7be5be79.pth")
        out = s.tmp / "ns_outputs"
        cmd = [
            sys.executable, "-m", "nerfstudio.scripts.train", "splatfacto-scenemetrics",
            "--max-num-iterations", str(iterations), "--vis", "tensorboard",
            "--viewer.quit-on-train-completion", "True", "--steps-per-save", "100000",
            "--steps-per-eval-batch", "0", "--steps-per-eval-image", "0", "--steps-per-eval-all-images", "0",
            "--output-dir", str(out), "--experiment-name", "gpu_check", "--timestamp", "run",
            "--pipeline.scenemetrics.metrics", "puzzlesim", "--pipeline.scenemetrics.every-n-steps", str(every),
            "--pipeline.scenemetrics.num-eval-views", "1",
            "--pipeline.scenemetrics.puzzlesim-weights", str(_random_squeezenet(s.tmp)),
            "blender-data", "--data", str(scene),
        ]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=s.tmp, capture_output=True, text=True, timeout=max(60, s.remaining()))
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"ns-train exited {proc.returncode}: {proc.stderr[-400:]}")
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        (events,) = (out / "gpu_check" / "splatfacto-scenemetrics" / "run").glob("events.out.tfevents.*")
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        steps = [e.step for e in acc.Scalars("scenemetrics/puzzlesim")]
        status = "ok" if steps == [every, 2 * every] else "failed"
        return {
            "status": status,
            "time_s": seconds,
            "note": f"scenemetrics/puzzlesim logged at {steps} (wall, incl. start-up)",
        }

    return [attempt(check, f"{iterations} iterations, evaluation every {every}", s.device, train)]


# -- the table ------------------------------------------------------------------------------------------------------


SECTIONS: dict[str, Callable[[Settings], list[Row]]] = dict(
    zip(CHECKS, (puzzlesim_rows, gsplat_rows, autocast_rows, eval_rows, ns_train_rows), strict=True)
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown(meta: dict[str, Any], rows: list[Row]) -> str:
    """The table as Markdown: a line of settings, then one row per :class:`Row`."""
    head = ", ".join(f"{k} {v}" for k, v in meta.items())
    lines = [f"# GPU check ({'tiny' if meta['tiny'] else 'full'})", "", head, "", "| " + " | ".join(COLUMNS) + " |"]
    lines.append("|" + "---|" * len(COLUMNS))
    lines += ["| " + " | ".join(_cell(getattr(row, c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _json_safe(row: Row) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(row).items()}


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("gsplat", "triton", "puzzle-sim", "nerfstudio", "scenemetrics"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


@contextmanager
def _private_caches(s: Settings) -> Iterator[None]:
    """Caches in the run's temporary folder and no downloads, for this process and its children; restored after."""
    saved_env, saved_hub = dict(os.environ), torch.hub.get_dir()
    os.environ.update({k: v for k, v in _package_env(s).items() if k != "PYTHONPATH"})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        torch.hub.set_dir(saved_hub)  # benchmarks/puzzlesim_speed.py points torch's hub at the temporary folder


def _run_checks(s: Settings, checks: list[str]) -> list[Row]:
    rows: list[Row] = []
    for check in checks:
        if s.remaining() <= 0:
            rows.append(Row(check, "all", s.device, "skipped", note=f"time budget of {s.budget_s:g} s spent"))
            continue
        print(f"== {check}", file=sys.stderr, flush=True)
        try:
            rows += SECTIONS[check](s)
        except Exception as err:  # a check whose set-up broke: one failed row, the others still run
            traceback.print_exc()
            rows.append(Row(check, "set-up", s.device, "failed", note=f"{type(err).__name__}: {err}"[:400]))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument("--tiny", action="store_true", help="small sizes (CI on the CPU)")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--budget-s", type=float, default=480.0, help="start no check after this many seconds")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5; 0 with --tiny: one call)")
    parser.add_argument("--only", nargs="+", choices=CHECKS, default=list(CHECKS), help="run only these checks")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    repeats = args.repeats if args.repeats is not None else (0 if args.tiny else 5)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        settings = Settings(tiny=args.tiny, device=device, tmp=Path(tmp), budget_s=args.budget_s, repeats=repeats)
        with _private_caches(settings):
            rows = _run_checks(settings, args.only)
        total = time.perf_counter() - settings.start
    meta = {
        "tiny": args.tiny,
        "repeats": repeats,
        "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else platform.processor() or "cpu",
        **_versions(),
        "total_s": round(total, 1),
    }
    report = {"meta": meta, "columns": list(COLUMNS), "rows": [_json_safe(r) for r in rows]}
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    (args.out / "gpu_check.md").write_text(markdown(meta, rows))
    print(markdown(meta, rows))
    return report


if __name__ == "__main__":
    main()
