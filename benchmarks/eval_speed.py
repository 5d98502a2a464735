"""Whole-process speed of ``scenemetrics eval`` against NerfBaselines' ``evaluate`` on one predictions folder; prints
one JSON object.

Workload (issue 30): a NerfBaselines predictions folder of ``--views`` render/ground-truth pairs of ``--height`` x
``--width`` (default 24 views of 400 x 600, PNG, ``info.json`` with the default protocol), scored by

* ``nerfbaselines``: ``python -m nerfbaselines evaluate P -o results.json`` (PSNR, SSIM, MAE, MSE, LPIPS-Alex), when
  the ``nerfbaselines`` package can be imported (``--nerfbaselines-path DIR`` puts a ``pip install --target DIR``
  folder on its ``PYTHONPATH``);
* ``scenemetrics``: ``python -m scenemetrics eval --predictions P --metrics psnr,ssim,lpips`` (the issue's command);
* ``scenemetrics_protocol``: the same with ``--protocol nerfbaselines`` (NerfBaselines' own SSIM and LPIPS
  definitions; its SSIM is computed in float64, as NerfBaselines does);
* ``scenemetrics_devices<N>``: the issue's command with ``--devices N`` for each N of ``--devices`` (Lightning
  Fabric on the CPU, N processes of one thread: the unit's views are split between them; forked, the default on
  Linux), when ``lightning`` can be imported; with ``--ddp-too`` also ``scenemetrics_devices<N>_ddp`` with
  ``--strategy ddp`` (the other processes re-run the command line and import everything again).

Each is a fresh process with one thread (``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1``), all offline, all on the same
random AlexNet backbone in torchvision's layout (written into a private ``TORCH_HOME`` for NerfBaselines, given with
``--lpips-weights`` to scenemetrics; the speed does not depend on the weights). The commands take turns in every
repeat; each figure is the median over ``--repeats`` of the CPU time (user + system, from ``wait4``: what a loaded
machine disturbs least) and wall time, and ``ratio_cpu`` is the median of the per-repeat ratios (scenemetrics /
NerfBaselines) measured back to back. The CPU time counts every process a command starts (this script is their
"subreaper": the other ranks that Lightning starts are reaped here and counted, even when they outlive rank 0).
``scaling`` gives, for ``--devices N``, the median wall-time speed-up over one process (per-repeat ratios) and the
total CPU time. ``values`` compares the scores all wrote. ``imports`` gives the CPU time of a bare
``python -c "import ..."`` for the heavy packages (the floor under each process).

Example:
    python benchmarks/eval_speed.py --views 4 --height 64 --width 96 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

IMPORTS = {
    "python": "pass",
    "torch": "import torch",
    "torch+torchvision": "import torch, torchvision",
    "torchmetrics": "import torchmetrics",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--views", type=int, default=24)
    p.add_argument("--height", type=int, default=400)
    p.add_argument("--width", type=int, default=600)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--nerfbaselines-path", default=None, help="folder put on PYTHONPATH to import nerfbaselines")
    p.add_argument("--skip-protocol", action="store_true", help="do not time --protocol nerfbaselines")
    p.add_argument("--devices", default="2", help="comma-separated process counts timed with --devices ('' for none)")
    p.add_argument("--ddp-too", action="store_true", help="also time --devices N with --strategy ddp")
    p.add_argument("--import-repeats", type=int, default=3, help="0 skips the import measurements")
    return p


def _write_predictions(folder: Path, n: int, h: int, w: int) -> None:
    """``color/``, ``gt-color/`` and ``info.json`` as NerfBaselines writes them: smooth ground truth, noisy renders."""
    import numpy as np
    from PIL import Image
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(0)
    for sub in ("color", "gt-color"):
        (folder / sub).mkdir(parents=True)
    for i in range(n):
        gt = gaussian_filter(rng.random((h, w, 3)), (3, 3, 0))
        gt = (gt - gt.min()) / (gt.max() - gt.min() + 1e-12)
        render = np.clip(gt + rng.normal(0.0, 0.03, gt.shape), 0, 1)
        Image.fromarray((gt * 255).round().astype(np.uint8)).save(folder / "gt-color" / f"{i:05d}.png")
        Image.fromarray((render * 255).round().astype(np.uint8)).save(folder / "color" / f"{i:05d}.png")
    meta = {"name": "bench", "scene": "scene", "color_space": "srgb", "evaluation_protocol": "default"}
    info = {"method": "bench", "evaluation_protocol": "default", "dataset_metadata": meta}
    info["render_dataset_metadata"] = meta
    (folder / "info.json").write_text(json.dumps(info))


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``), so that the CPU
    time of processes a command starts but does not wait for (Lightning's other ranks) is counted too."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _cpu_run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """``(CPU seconds of the command's processes: user + system, wall seconds, output)``; raises when it fails.

    The command's own process is waited for, then every orphaned descendant (reparented to this subreaper) until
    none is left: ``wait4`` reports each one's usage with that of the descendants it waited for itself.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    while True:  # orphans: other ranks that outlived the command's process
        try:
            _, _, orphan = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += orphan.ru_utime + orphan.ru_stime
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-3000:]}")
    return cpu, wall, out


def _env(extra_path: str | None, torch_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "src")] + ([extra_path] if extra_path else []) + [env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.update(
        {
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "SCENEMETRICS_OFFLINE": "1",
            "HF_HUB_OFFLINE": "1",
            "TORCH_HOME": str(torch_home),
            "SCENEMETRICS_HOME": str(torch_home / "scenemetrics"),
        }
    )
    return env


def _values(nb_json: Path | None, sm_out: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    if nb_json is not None and nb_json.is_file():
        metrics = json.loads(nb_json.read_text())["metrics"]
        out["nerfbaselines"] = {k: float(metrics[k]) for k in ("psnr", "ssim", "lpips")}
    doc = json.loads((sm_out / "results.json").read_text())
    out["scenemetrics"] = {k: float(v) for k, v in doc["scenes"][0]["values"].items()}
    return out


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    import torch

    from scenemetrics.puzzlesim import random_checkpoint

    subreaper = _become_subreaper()
    work = Path(tempfile.mkdtemp(prefix="eval-speed-"))
    try:
        preds = work / "predictions"
        _write_predictions(preds, args.views, args.height, args.width)
        torch_home = work / "torch"
        weights = random_checkpoint("alexnet", torch_home / "hub" / "checkpoints" / "alexnet-owt-7be5be79.pth")
        env = _env(args.nerfbaselines_path, torch_home)
        has_nb = (
            subprocess.run([sys.executable, "-c", "import nerfbaselines.evaluation"], env=env, capture_output=True)
        ).returncode == 0
        sm_cmd = [sys.executable, "-m", "scenemetrics", "eval", "--predictions", str(preds), "--metrics",
                  "psnr,ssim,lpips", "--lpips-weights", str(weights), "--device", "cpu", "--quiet"]  # fmt: skip
        commands: dict[str, list[str]] = {"scenemetrics": sm_cmd}
        if not args.skip_protocol:
            commands["scenemetrics_protocol"] = [*sm_cmd, "--protocol", "nerfbaselines"]
        has_lightning = (
            subprocess.run([sys.executable, "-c", "import lightning.fabric"], env=env, capture_output=True)
        ).returncode == 0
        devices = [int(n) for n in args.devices.split(",") if n.strip() and int(n) > 1] if has_lightning else []
        for n in devices:
            commands[f"scenemetrics_devices{n}"] = [*sm_cmd, "--devices", str(n)]
            if args.ddp_too:
                commands[f"scenemetrics_devices{n}_ddp"] = [*sm_cmd, "--devices", str(n), "--strategy", "ddp"]
        if has_nb:
            commands = {"nerfbaselines": [sys.executable, "-m", "nerfbaselines", "evaluate", str(preds)], **commands}
        cpu: dict[str, list[float]] = {k: [] for k in commands}
        wall: dict[str, list[float]] = {k: [] for k in commands}
        ratios: dict[str, list[float]] = {k: [] for k in commands if k != "nerfbaselines"}
        speedups: dict[str, list[float]] = {k.removeprefix("scenemetrics_"): [] for k in commands if "_devices" in k}
        for r in range(args.repeats):
            outs = {}
            for name, cmd in commands.items():
                out = work / f"{name}-{r}"
                full = [*cmd, "-o", str(out / "results.json")] if name == "nerfbaselines" else [*cmd, "--out", str(out)]
                out.mkdir(exist_ok=name == "nerfbaselines")
                c, w, _ = _cpu_run(full, env, work)
                cpu[name].append(c)
                wall[name].append(w)
                outs[name] = out
            if has_nb:
                for name in ratios:
                    ratios[name].append(cpu[name][-1] / cpu["nerfbaselines"][-1])
            for name in speedups:
                speedups[name].append(wall["scenemetrics"][-1] / wall[f"scenemetrics_{name}"][-1])
            last = outs
        values = _values(last["nerfbaselines"] / "results.json" if has_nb else None, last["scenemetrics"])
        for name in commands:
            if name.startswith("scenemetrics_"):
                doc = json.loads((last[name] / "results.json").read_text())
                values[name] = {k: float(v) for k, v in doc["scenes"][0]["values"].items()}
        scaling = {
            name: {
                "wall_speedup_vs_1": round(statistics.median(speedups[name]), 3),
                "wall_seconds": round(statistics.median(wall[f"scenemetrics_{name}"]), 3),
                "cpu_seconds_all_processes": round(statistics.median(cpu[f"scenemetrics_{name}"]), 3),
            }
            for name in speedups
        }
        imports = {}
        for name, code in IMPORTS.items() if args.import_repeats else ():
            runs = [_cpu_run([sys.executable, "-c", code], env, work)[0] for _ in range(args.import_repeats)]
            imports[name] = round(statistics.median(runs), 3)
        result = {
            "benchmark": "eval_speed",
            "workload": {"views": args.views, "height": args.height, "width": args.width, "threads": 1},
            "repeats": args.repeats,
            "nerfbaselines_installed": has_nb,
            "lightning_installed": has_lightning,
            "cpu_counted_for_every_process": subreaper,
            "cpu_seconds": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
            "wall_seconds": {k: round(statistics.median(v), 3) for k, v in wall.items()},
            "cpu_seconds_all": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
            "ratio_cpu": {k: round(statistics.median(v), 3) for k, v in ratios.items() if v},
            "scaling": scaling,
            "values": values,
            "imports_cpu_seconds": imports,
            "machine": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "cpus": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "rusage_self_cpu": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 3),
            },
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
