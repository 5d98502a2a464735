"""Speed of ``scenemetrics.fullref`` against torchmetrics on the evaluation workload; prints one JSON object.

Workload (the ``scenemetrics eval --metrics psnr,ssim,lpips`` case of the speed issue): ``--views`` render/target pairs
of ``--height`` x ``--width`` (default 24 views of 400 x 600), scored one view per call, on ``--threads`` CPU threads
(default 1). Every figure is the median over ``--repeats`` runs of the whole set of views, measured in the same
process with the compared functions taking turns in every repeat, so the ratios hold on a shared machine:

* ``ssim``: torchmetrics' ``structural_similarity_index_measure(data_range=1.0)`` (a grouped 11 x 11 ``conv2d``
  over five stacked maps) against :func:`scenemetrics.fullref.ssim_map` (two 1-D passes); also ``ssim_3dgs`` and
  ``ssim_nerfbaselines``, and NerfBaselines' own NumPy SSIM when the ``nerfbaselines`` package is importable.
  ``max_abs_diff`` compares the per-view SSIM of torchmetrics and scenemetrics.
* ``lpips``: torchmetrics' ``LearnedPerceptualImagePatchSimilarity(net_type, normalize=True)`` (``update`` per view)
  against :func:`scenemetrics.fullref.lpips` and :func:`~scenemetrics.fullref.lpips_map`; random backbone weights in
  torchvision's layout (speed does not depend on the values), the published linear layers.
* ``imports``: CPU seconds (user + system) of a fresh ``python -c "import ..."`` for torch, ``torchmetrics``,
  ``torchmetrics.metric``, ``scenemetrics.fullref.functional`` and ``scenemetrics.fullref.metric`` (median of
  ``--import-repeats``), and Python's own ``-X importtime`` cumulative figure for each.

Example:
    python benchmarks/fullref_speed.py --views 4 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

IMPORTS = {
    "torch": "import torch",
    "torchmetrics": "import torchmetrics",
    "torchmetrics.metric": "from torchmetrics.metric import Metric",
    "scenemetrics.fullref.functional": "from scenemetrics.fullref.functional import ssim_map",
    "scenemetrics.fullref.perceptual": "from scenemetrics.fullref.perceptual import lpips_map",
    "scenemetrics.fullref.metric": "from scenemetrics.fullref.metric import SSIMMap",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--views", type=int, default=24)
    p.add_argument("--height", type=int, default=400)
    p.add_argument("--width", type=int, default=600)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--lpips-net", default="alex", choices=("alex", "vgg", "squeeze"))
    p.add_argument("--skip-lpips", action="store_true")
    p.add_argument("--import-repeats", type=int, default=3, help="0 skips the import measurements")
    return p


def _views(n: int, h: int, w: int, device: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        target = torch.randint(0, 256, (1, 3, h, w), generator=g, dtype=torch.uint8)
        noise = torch.randint(-12, 13, (1, 3, h, w), generator=g)
        render = (target.int() + noise).clamp(0, 255).to(torch.uint8)
        out.append((render.float().div(255).to(device), target.float().div(255).to(device)))
    return out


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _median_times(fns: dict[str, Callable[[], object]], repeats: int, device: str) -> dict[str, float]:
    """Median wall time of each function; the functions take turns in every repeat, so a change of load on a shared
    machine hits them alike and their ratios stay meaningful."""
    for fn in fns.values():
        fn()  # warm-up (allocator, lazy loading, cached networks), not timed
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def bench_ssim(views, repeats: int, device: str) -> dict:
    from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

    from scenemetrics.fullref import ssim_3dgs, ssim_map, ssim_nerfbaselines

    def run(fn):
        return lambda: [fn(p, t) for p, t in views]

    fns = {
        "torchmetrics_s": run(lambda p, t: tm_ssim(p, t, data_range=1.0)),
        "ssim_map_s": run(ssim_map),
        "ssim_3dgs_s": run(ssim_3dgs),
        "ssim_nerfbaselines_s": run(ssim_nerfbaselines),
    }
    try:
        from nerfbaselines.metrics import ssim as nb_ssim
    except ImportError:
        nb_ssim = None
    else:
        arrays = [(p.cpu().permute(0, 2, 3, 1).numpy(), t.cpu().permute(0, 2, 3, 1).numpy()) for p, t in views]
        fns["nerfbaselines_s"] = lambda: [nb_ssim(t, p) for p, t in arrays]
    with torch.no_grad():
        tm = [float(tm_ssim(p, t, data_range=1.0)) for p, t in views]
        ours = [float(ssim_map(p, t).mean()) for p, t in views]
        out: dict = _median_times(fns, repeats, device)
        out["max_abs_diff"] = max(abs(a - b) for a, b in zip(tm, ours, strict=True))
        out["speedup_vs_torchmetrics"] = out["torchmetrics_s"] / out["ssim_map_s"]
        if nb_ssim is not None:
            nb = [float(nb_ssim(t, p)[0]) for p, t in arrays]
            ours_nb = [float(ssim_nerfbaselines(p, t)[0]) for p, t in views]
            out["nerfbaselines_max_abs_diff"] = max(abs(a - b) for a, b in zip(nb, ours_nb, strict=True))
            out["ssim_nerfbaselines_speedup_vs_nerfbaselines"] = out["nerfbaselines_s"] / out["ssim_nerfbaselines_s"]
        else:
            out["nerfbaselines_s"] = None
    return out


def _torchmetrics_lpips(net: str, backbone: Path, hub_dir: Path, device: str):
    """torchmetrics' LPIPS on ``backbone``: torchvision reads its pretrained file from a private torch hub folder."""
    import torchvision
    from torchmetrics.image import LearnedPerceptualImagePatchSimilarity

    from scenemetrics import hub
    from scenemetrics.fullref import NETS

    arch = {"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"}[net]
    with torch.device("meta"):
        reference = getattr(torchvision.models, arch)(weights=None).state_dict()
    state = dict(torch.load(backbone, weights_only=True))
    state.update({k: torch.zeros(()).expand(v.shape) for k, v in reference.items() if k.startswith("classifier.")})
    (hub_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.save(state, hub_dir / "checkpoints" / hub.CHECKPOINTS[NETS[net].backbone_key].filename)
    old = torch.hub.get_dir()
    torch.hub.set_dir(str(hub_dir))
    try:
        return LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True).to(device)
    finally:
        torch.hub.set_dir(old)


def bench_lpips(views, repeats: int, device: str, net: str) -> dict:
    from scenemetrics.fullref import lpips, lpips_map
    from scenemetrics.puzzlesim import random_checkpoint

    arch = {"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"}[net]
    with tempfile.TemporaryDirectory() as tmp:
        backbone = random_checkpoint(arch, Path(tmp) / f"{arch}.pth", include_classifier=False)
        metric = _torchmetrics_lpips(net, backbone, Path(tmp) / "hub", device)

        def torchmetrics_run():
            metric.reset()
            for p, t in views:
                metric.update(p, t)
            return metric.compute()

        fns = {
            "torchmetrics_s": torchmetrics_run,
            "lpips_s": lambda: [lpips(p, t, net=net, weights_path=backbone) for p, t in views],
            "lpips_map_s": lambda: [lpips_map(p, t, net=net, weights_path=backbone) for p, t in views],
        }
        with torch.no_grad():
            out: dict = {"net": net, **_median_times(fns, repeats, device)}
            ours = torch.cat([lpips(p, t, net=net, weights_path=backbone) for p, t in views]).mean()
            out["abs_diff_of_means"] = abs(float(torchmetrics_run()) - float(ours))
    out["lpips_speedup_vs_torchmetrics"] = out["torchmetrics_s"] / out["lpips_s"]
    out["map_overhead_vs_lpips"] = out["lpips_map_s"] / out["lpips_s"] - 1
    return out


def _cpu_seconds(code: str, importtime: bool = False) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    args = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    before = os.times()
    res = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return cpu, res.stderr


def _importtime_total(stderr: str) -> float:
    """The largest cumulative figure of ``-X importtime`` (the outermost import), in seconds."""
    best = 0
    for line in stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            best = max(best, int(parts[1]))
    return best / 1e6


def bench_imports(repeats: int) -> dict:
    out = {}
    for name, code in IMPORTS.items():
        cpu = statistics.median(_cpu_seconds(code)[0] for _ in range(repeats))
        _, stderr = _cpu_seconds(code, importtime=True)
        _, check = _cpu_seconds(f"{code}\nimport sys\nprint('torchmetrics' in sys.modules, file=sys.stderr)")
        out[name] = {
            "cpu_s": cpu,
            "importtime_cumulative_s": _importtime_total(stderr),
            "imports_torchmetrics": check.strip().endswith("True"),
        }
    return out


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    torch.set_num_threads(args.threads)
    views = _views(args.views, args.height, args.width, args.device)
    result = {
        "workload": {
            "views": args.views,
            "size": [args.height, args.width],
            "threads": args.threads,
            "device": args.device,
            "repeats": args.repeats,
        },
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__},
        "ssim": bench_ssim(views, args.repeats, args.device),
    }
    if not args.skip_lpips:
        result["lpips"] = bench_lpips(views, args.repeats, args.device, args.lpips_net)
    if args.import_repeats > 0:
        result["imports"] = bench_imports(args.import_repeats)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
