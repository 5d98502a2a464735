"""PuzzleSim speed and memory: scenemetrics vs the authors' ``puzzle-sim`` package, same run, same machine.

Per test image with references cached (warm-up excluded): ours (``screening="auto"``), ours plain
(``screening="off"``), ``puzzle-sim``'s default path (``PuzzleSim(refs)(test)``: ``mem_save=True``, ``stride=4``)
and its naive path (``mem_save=False``). The ratio that counts (the library's speed target: at most 0.5, or 0.9 on
a CPU without a fast bf16 matmul, maps within 1e-4) is the median over alternating pairs of
``cpu_ours / cpu_puzzle_sim_default`` in process CPU time with torch on one thread; wall-time ratios are reported
alongside. Peak RSS (``VmHWM``) is measured in a separate child process per implementation (embedding + one
call): each child loads the same images from a file the parent wrote, and a child running scenemetrics alone never
imports ``puzzle-sim`` (whose import pulls in ``transformers``); ``baseline`` is a child that only imports and loads
the images, ``baseline_puzzle_sim_import`` the same plus ``import puzzle_sim``.

Prints one JSON object. Default weights are deterministic random weights (benchmarks never download); real
ImageNet weights change timings little. Images come from :mod:`scenemetrics.synthetic` (seeded).

Usage:
    python benchmarks/puzzlesim_speed.py                 # 34 refs of 416x628, threads 1 and torch's default
    python benchmarks/puzzlesim_speed.py --threads 1 --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

SRC = Path(__file__).resolve().parents[1] / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from scenemetrics.puzzlesim import (  # noqa: E402
    PuzzleSimMemory,
    bf16,
    random_checkpoint,
)
from scenemetrics.puzzlesim.options import default_batch_size  # noqa: E402
from scenemetrics.synthetic import make_scene  # noqa: E402

TV_FILE = {"squeezenet1_1": "squeezenet1_1-b8a52dc0.pth"}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _setup(args: argparse.Namespace, tmp: Path) -> tuple[Path, torch.Tensor, torch.Tensor]:
    weights = Path(args.weights) if args.weights else random_checkpoint("squeezenet1_1", tmp / TV_FILE["squeezenet1_1"])
    # puzzle-sim loads through torchvision's cache: put the same file there
    hub_dir = tmp / "torch_hub"
    (hub_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    link = hub_dir / "checkpoints" / TV_FILE["squeezenet1_1"]
    if not link.exists():
        link.symlink_to(weights.resolve())
    torch.hub.set_dir(str(hub_dir))
    if args.data:  # a child process: the parent's images, without the generator's transient memory
        data = torch.load(args.data, map_location="cpu", weights_only=True)
        return weights, data["refs"].to(args.device), data["test"].to(args.device)
    scene = make_scene(num_train=args.refs, num_novel=1, size=tuple(args.size), seed=args.seed)
    refs = torch.stack(scene.train_views).to(args.device)
    test = scene.novel_views[0].unsqueeze(0).to(args.device)
    return weights, refs, test


def _implementations(
    weights: Path, refs: torch.Tensor, test: torch.Tensor, only: str | None = None, batch_size: int | None = None
) -> dict:
    """name -> (embed_seconds, callable returning the (H, W) map)."""
    impls = {}

    def want(name: str) -> bool:
        return only is None or name == only

    if want("ours") or want("ours_plain"):
        t0 = time.perf_counter()
        memory = PuzzleSimMemory(refs, weights_path=weights, batch_size=batch_size)
        embed = time.perf_counter() - t0
        if want("ours"):
            impls["ours"] = (embed, lambda: memory.similarity_map(test, screening="auto")[0])
        if want("ours_plain"):
            impls["ours_plain"] = (embed, lambda: memory.similarity_map(test, screening="off")[0])
    if not (want("puzzle_sim_default") or want("puzzle_sim_naive")):
        return impls  # a process running ours alone never imports puzzle-sim (nor its transformers import)
    try:
        import puzzle_sim
    except ImportError:
        return impls
    ps = puzzle_sim.PuzzleSim(refs)
    t0 = time.perf_counter()
    with torch.no_grad():
        ps.reference_feats = ps.feature_extractor.compute_features(ps.reference, (2, 3, 4), True)
    embed = time.perf_counter() - t0

    def theirs(mem_save: bool):
        def call():
            with torch.no_grad():
                return ps(test, mem_save=mem_save)

        return call

    if want("puzzle_sim_default"):
        impls["puzzle_sim_default"] = (embed, theirs(True))
    if want("puzzle_sim_naive"):
        impls["puzzle_sim_naive"] = (embed, theirs(False))
    return impls


def _timed(fn) -> tuple[float, float, torch.Tensor]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``, which on Linux keeps the parent's
    high-water mark across fork + exec and so would report the benchmark's own peak), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_rss(args: argparse.Namespace, name: str, data: Path, batch_size: int | None = None) -> float | None:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        name,
        "--data",
        str(data),
        "--refs",
        str(args.refs),
        "--size",
        *map(str, args.size),
        "--seed",
        str(args.seed),
        "--device",
        args.device,
        "--threads",
        "1",
    ]
    batch_size = args.batch_size if batch_size is None else batch_size
    if batch_size is not None:
        cmd += ["--batch-size", str(batch_size)]
    if args.weights:
        cmd += ["--weights", args.weights]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])["peak_rss_mb"]
    except (IndexError, KeyError, json.JSONDecodeError):
        return None


def _run_threads(args: argparse.Namespace, impls: dict, threads: int) -> dict:
    torch.set_num_threads(threads) if threads > 0 else torch.set_num_threads(_DEFAULT_THREADS)
    names = list(impls)
    maps = {}
    for name in names:  # warm-up (builds lazy caches such as the screening index), excluded
        maps[name] = impls[name][1]()
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    pair_cpu, pair_wall = [], []
    for rep in range(args.repeats):
        order = names if rep % 2 == 0 else names[::-1]  # who goes first alternates
        for name in order:
            w, c, _ = _timed(impls[name][1])
            wall[name].append(w)
            cpu[name].append(c)
        if "ours" in impls and "puzzle_sim_default" in impls:
            pair_cpu.append(cpu["ours"][-1] / cpu["puzzle_sim_default"][-1])
            pair_wall.append(wall["ours"][-1] / wall["puzzle_sim_default"][-1])
    base = maps.get("puzzle_sim_default")
    base_cpu = statistics.median(cpu["puzzle_sim_default"]) if base is not None else None
    base_wall = statistics.median(wall["puzzle_sim_default"]) if base is not None else None
    out = {}
    for name in names:
        entry = {
            "median_wall_s": statistics.median(wall[name]),
            "wall_s": wall[name],
            "median_cpu_s": statistics.median(cpu[name]),
            "cpu_s": cpu[name],
            "reference_embedding_s": impls[name][0],
        }
        if base is not None:
            diff = (maps[name].float().cpu() - base.float().cpu()).abs().max()
            entry["max_abs_diff_vs_puzzle_sim_default"] = float(diff)
            entry["cpu_ratio_vs_puzzle_sim_default"] = entry["median_cpu_s"] / base_cpu
            entry["wall_ratio_vs_puzzle_sim_default"] = entry["median_wall_s"] / base_wall
        out[name] = entry
    result = {"threads": torch.get_num_threads(), "implementations": out}
    if pair_cpu:
        result["alternating_pairs_cpu_ratio"] = pair_cpu
        result["median_pair_cpu_ratio_ours_vs_puzzle_sim_default"] = statistics.median(pair_cpu)
        result["median_pair_wall_ratio_ours_vs_puzzle_sim_default"] = statistics.median(pair_wall)
    return result


_DEFAULT_THREADS = torch.get_num_threads()


def _scaling(args: argparse.Namespace, tmp: Path) -> list[dict]:
    """Time per test image (CPU, one thread) of ours (auto) and the exhaustive search vs #references and size."""
    weights = Path(args.weights) if args.weights else random_checkpoint("squeezenet1_1", tmp / "scaling.pth")
    torch.set_num_threads(1)
    cases = [(n, tuple(args.scaling_size)) for n in args.scaling_refs]
    cases += [(args.scaling_size_refs, tuple(sz)) for sz in ((104, 157), (208, 314), (416, 628))]
    rows = []
    for n, size in cases:
        scene = make_scene(num_train=n, num_novel=1, size=size, seed=args.seed)
        refs, test = torch.stack(scene.train_views), scene.novel_views[0].unsqueeze(0)
        del scene
        memory = PuzzleSimMemory(refs, weights_path=weights, batch_size=args.batch_size)
        del refs
        row = {"references": n, "size": list(size), "vectors_layer2": int(memory.features(2).shape[0])}
        maps = {}
        for name, screening in (("ours", "auto"), ("exhaustive", "off")):
            t0 = time.perf_counter()
            maps[name] = memory.similarity_map(test, screening=screening)  # warm-up (builds the index)
            row[f"{name}_first_call_s"] = time.perf_counter() - t0
            cpu = []
            for _ in range(args.scaling_repeats):
                _, c, _ = _timed(lambda s=screening, m=memory, t=test: m.similarity_map(t, screening=s))
                cpu.append(c)
            row[f"{name}_cpu_s"] = statistics.median(cpu)
        row["ratio"] = row["ours_cpu_s"] / row["exhaustive_cpu_s"]
        row["max_abs_diff"] = float((maps["ours"] - maps["exhaustive"]).abs().max())
        rows.append(row)
        print(
            f"| {n} | {size[0]}x{size[1]} | {row['vectors_layer2']} | {row['ours_cpu_s']:.2f} | "
            f"{row['exhaustive_cpu_s']:.2f} | {row['ratio']:.2f} | {row['max_abs_diff']:.1e} |",
            file=sys.stderr,
            flush=True,
        )
        del memory
    return rows


def _soft(args: argparse.Namespace, tmp: Path) -> dict:
    """CPU time (one thread) of the soft loss forward and backward vs the hard map (default search and exhaustive),
    same memory and image; every timing includes the backbone's passes (as a training step runs them)."""
    from scenemetrics.losses import SoftPuzzleSimLoss

    weights = Path(args.weights) if args.weights else random_checkpoint("squeezenet1_1", tmp / "soft.pth")
    torch.set_num_threads(1)
    scene = make_scene(num_train=args.soft_refs, num_novel=1, size=tuple(args.soft_size), seed=args.seed)
    refs, test = torch.stack(scene.train_views), scene.novel_views[0].unsqueeze(0)
    memory = PuzzleSimMemory(refs, weights_path=weights, batch_size=args.batch_size)
    loss_fn = SoftPuzzleSimLoss(memory, weights_path=weights)
    memory.similarity_map(test)  # warm-up: builds the search index

    def hard() -> None:
        memory.similarity_map(test)

    def hard_grad() -> None:
        x = test.clone().requires_grad_(True)
        memory.similarity_map(x).mean().backward()

    def soft_forward() -> torch.Tensor:
        x = test.clone().requires_grad_(True)
        return loss_fn(x)

    out = {"references": args.soft_refs, "size": list(args.soft_size), "temperature": loss_fn.temperature}
    timed = (("hard_map_s", hard), ("hard_map_forward_backward_s", hard_grad), ("soft_forward_s", soft_forward))
    for name, fn in timed:
        out[name] = statistics.median(_timed(fn)[1] for _ in range(args.soft_repeats))
    backward = []
    for _ in range(args.soft_repeats):
        loss = soft_forward()
        c0 = time.process_time()
        loss.backward()
        backward.append(time.process_time() - c0)
    out["soft_backward_s"] = statistics.median(backward)

    def exhaustive_grad() -> None:
        x = test.clone().requires_grad_(True)
        memory.similarity_map(x, screening="off").mean().backward()

    out["exhaustive_hard_map_s"] = statistics.median(
        _timed(lambda: memory.similarity_map(test, screening="off"))[1] for _ in range(args.soft_repeats)
    )
    out["exhaustive_hard_map_forward_backward_s"] = statistics.median(
        _timed(exhaustive_grad)[1] for _ in range(args.soft_repeats)
    )
    total = out["soft_forward_s"] + out["soft_backward_s"]
    out["soft_forward_backward_over_hard_forward_backward"] = total / out["hard_map_forward_backward_s"]
    out["soft_forward_backward_over_exhaustive_hard_map"] = total / out["exhaustive_hard_map_s"]
    out["soft_forward_backward_over_exhaustive_hard_forward_backward"] = (
        total / out["exhaustive_hard_map_forward_backward_s"]
    )
    out["soft_forward_over_exhaustive_hard_map"] = out["soft_forward_s"] / out["exhaustive_hard_map_s"]
    out["soft_forward_over_hard_map"] = out["soft_forward_s"] / out["hard_map_s"]
    out["soft_backward_over_hard_map"] = out["soft_backward_s"] / out["hard_map_s"]
    out["soft_forward_over_hard_forward_backward"] = out["soft_forward_s"] / out["hard_map_forward_backward_s"]
    out["soft_backward_over_hard_forward_backward"] = out["soft_backward_s"] / out["hard_map_forward_backward_s"]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--refs", type=int, default=34)
    p.add_argument("--size", type=int, nargs=2, default=(416, 628), metavar=("H", "W"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="thread counts to run (0 = torch default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--weights", default=None, help="squeezenet1_1 checkpoint (default: deterministic random weights)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--batch-size", type=int, default=None, help="reference images per backbone pass (ours; default: the library's)"
    )
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    p.add_argument("--no-compare", action="store_true", help="skip the comparison (e.g. to run --scaling alone)")
    p.add_argument("--scaling", action="store_true", help="also time ours vs the exhaustive search over sizes")
    p.add_argument("--scaling-refs", type=int, nargs="+", default=[4, 16, 64, 256])
    p.add_argument("--scaling-size", type=int, nargs=2, default=(208, 314), metavar=("H", "W"))
    p.add_argument("--scaling-size-refs", type=int, default=16, help="references of the resolution sweep")
    p.add_argument("--scaling-repeats", type=int, default=1)
    p.add_argument("--soft", action="store_true", help="also time the soft loss forward/backward vs the hard map")
    p.add_argument("--soft-refs", type=int, default=8)
    p.add_argument("--soft-size", type=int, nargs=2, default=(208, 314), metavar=("H", "W"))
    p.add_argument("--soft-repeats", type=int, default=5)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if args.child:
            torch.set_num_threads(1)
            weights, refs, test = _setup(args, tmp)
            if args.child == "baseline":  # torch, scenemetrics and the images: what every process holds anyway
                pass
            elif args.child == "baseline_puzzle_sim_import":  # the same plus `import puzzle_sim`
                import puzzle_sim  # noqa: F401
            else:
                impls = _implementations(weights, refs, test, only=args.child, batch_size=args.batch_size)
                impls[args.child][1]()
            print(json.dumps({"peak_rss_mb": _peak_rss_mb()}))
            return
        report: dict = {"torch": torch.__version__, "cpu_model": _cpu_model(), "cpu_count": os.cpu_count()}
        decision = bf16.bf16_decision()
        report["bf16_decision"] = decision
        report["bf16_capabilities"] = bf16.cpu_bf16_capabilities()
        if not args.no_compare:
            weights, refs, test = _setup(args, tmp)
            impls = _implementations(weights, refs, test, batch_size=args.batch_size)
            torch.set_num_threads(1)
            probe = bf16.probe_bf16_gemm()
            report.update(
                {
                    "setting": {
                        "references": args.refs,
                        "size": list(args.size),
                        "backbone": "squeezenet1_1",
                        "layers": [2, 3, 4],
                        "weights": args.weights or "deterministic random (seed 0)",
                        "device": args.device,
                        "repeats": args.repeats,
                        "batch_size": args.batch_size or f"default: {default_batch_size(args.device)}",
                    },
                    "bf16_probe_one_thread": probe,
                    "fast_bf16_matmul": bool(probe["fast"]),
                    "bf16_screening_enabled": bool(decision["enabled"]),
                    "search_auto": "bf16-screened" if decision["enabled"] else "projection bound",
                    "runs": [_run_threads(args, impls, t) for t in args.threads],
                }
            )
            if not args.no_rss:
                data = tmp / "images.pt"
                torch.save({"refs": refs.cpu(), "test": test.cpu()}, data)
                names = ["baseline", "baseline_puzzle_sim_import", "ours", "ours_plain"]
                names += ["puzzle_sim_default", "puzzle_sim_naive"]
                rss = {name: _child_rss(args, name, data) for name in names}
                rss["ours_batch_size_8"] = _child_rss(args, "ours", data, batch_size=8)
                rss = {k: v for k, v in rss.items() if v is not None}
                report["peak_rss_mb"] = rss
                if rss.get("puzzle_sim_default"):
                    report["peak_rss_ratio_vs_puzzle_sim_default"] = {
                        k: v / rss["puzzle_sim_default"] for k, v in rss.items() if not k.startswith("baseline")
                    }
                if "baseline" in rss:
                    work = {k: v - rss["baseline"] for k, v in rss.items() if k != "baseline"}
                    report["rss_above_baseline_mb"] = work
                    if work.get("puzzle_sim_default"):
                        report["rss_above_baseline_ratio_vs_puzzle_sim_default"] = {
                            k: v / work["puzzle_sim_default"] for k, v in work.items()
                        }
            del impls, refs, test
        if args.scaling:
            print("| refs | size | layer-2 vectors | ours s | exhaustive s | ratio | max diff |", file=sys.stderr)
            print("|---|---|---|---|---|---|---|", file=sys.stderr)
            report["scaling_cpu_one_thread"] = _scaling(args, tmp)
        if args.soft:
            report["soft_loss_cpu_one_thread"] = _soft(args, tmp)
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
