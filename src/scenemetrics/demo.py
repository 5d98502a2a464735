"""``scenemetrics demo``: evaluate a small procedural scene that ships with the package and write a report folder.

The scene (:mod:`scenemetrics.synthetic`) has training views and novel views with planted artifacts (noise
squares, blurry floaters, needle streaks, blur patches, colour blotches) plus the clean novel views. Each metric
with standard public weights adds a section: PuzzleSim scores the novel views against the training views; OSIM
compares each novel view with its clean counterpart.

Weights come from the hub (downloaded on first use). Offline, the demo stops with the hub's error; with
``--random-weights`` it runs end to end on uncalibrated random backbones and says so loudly.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from scenemetrics import cliutils as _cli
from scenemetrics.jsonio import write_json

__all__ = ["DEMO_SECTIONS", "register", "run", "run_demo"]

DEMO_SECTIONS = ("scenemetrics.osim.demo",)
"""The sections after PuzzleSim, by module, in report order: each module's public ``run_demo(scene, out_dir, *,
random_weights, weights_path, device, quiet, report_dir)`` returns a JSON-able summary whose file paths are relative
to ``report_dir``. :func:`run_demo` calls them by direct import (no module lookup by name)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="evaluate the bundled procedural scene and write a report folder",
        description=__doc__.strip().split("\n\n")[0],
    )
    _cli.add_out_arg(p, default="scenemetrics_demo")
    _cli.add_weights_arg(p)
    _cli.add_device_arg(p)
    _cli.add_quiet_arg(p)
    p.add_argument("--seed", type=int, default=0, help="scene seed")
    p.set_defaults(func=run)


def _auc(scores_pos, scores_neg) -> float:
    """Probability that a random artifact pixel has a lower PuzzleSim value than a random clean pixel (ties 1/2)."""
    import torch

    both = torch.cat([scores_pos, scores_neg]).double()
    ranks = torch.empty_like(both)
    order = torch.argsort(both, stable=True)
    ranks[order] = torch.arange(1, both.numel() + 1, dtype=torch.float64)
    # average ranks over ties
    uniq, inv, counts = torch.unique(both, return_inverse=True, return_counts=True)
    sums = torch.zeros_like(uniq).index_add_(0, inv, ranks)
    ranks = (sums / counts)[inv]
    n_pos, n_neg = scores_pos.numel(), scores_neg.numel()
    u_pos = float(ranks[:n_pos].sum()) - n_pos * (n_pos + 1) / 2
    return 1.0 - u_pos / (n_pos * n_neg)


def _puzzlesim_section(scene: Any, out: Path, weights_path: str | None, device: Any, quiet: bool) -> dict:
    import torch

    from scenemetrics.puzzlesim import PuzzleSimMemory, save_map_pngs

    memory = PuzzleSimMemory(
        scene.train_views, weights_path=weights_path, device=device, progress=_cli.show_progress(quiet)
    )
    views = {}
    for name, img, mask in _cli.progress(
        list(zip(scene.names, scene.novel_views, scene.artifact_masks, strict=True)), quiet=quiet, desc="puzzlesim"
    ):
        with torch.no_grad():
            sim_map = memory.similarity_map(img.to(device))[0].cpu()
        entry: dict[str, Any] = {"score": float(sim_map.mean())}
        files = save_map_pngs(
            img, sim_map, out, name, panel=True, extra_tiles=[("planted artifacts (white)", mask.float())]
        )
        entry.update({key: f"{out.name}/{rel}" for key, rel in files.items()})  # relative to the report folder
        if bool(mask.any()) and bool((~mask).any()):
            entry["mean_in_artifacts"] = float(sim_map[mask].mean())
            entry["mean_elsewhere"] = float(sim_map[~mask].mean())
            entry["artifact_auc"] = _auc(sim_map[mask], sim_map[~mask])
        views[name] = entry
    scores = [v["score"] for v in views.values()]
    aucs = [v["artifact_auc"] for v in views.values() if "artifact_auc" in v]
    return {
        "metric": "PuzzleSim (squeezenet1_1, layers 2-4)",
        "higher_is_better": True,
        "scene_score": sum(scores) / len(scores),
        "mean_artifact_auc": sum(aucs) / len(aucs) if aucs else None,
        "views": views,
        "note": (
            "puzzlesim/maps/<view>_raw.npy: exact float32 maps. Pictures (puzzlesim/maps/, overlays/, panels/ = "
            "novel view | map | map over the view | planted artifacts): reversed jet, warm = low similarity = likely "
            "artifact; colours span the 2nd-98th percentile of each map, the colour bar gives the real values."
        ),
    }


def run_demo(
    out: str | Path,
    *,
    random_weights: bool = False,
    weights_path: str | None = None,
    device: Any = None,
    quiet: bool = False,
    seed: int = 0,
) -> dict:
    """Generate the scene, run every available section, write ``<out>/report.json``; return the report.

    Raises:
        scenemetrics.hub.WeightsNotFoundError: real weights requested but not available (offline).
    """
    import torch

    from scenemetrics import hub, viz
    from scenemetrics.osim.demo import run_demo as osim_section
    from scenemetrics.puzzlesim import random_checkpoint
    from scenemetrics.synthetic import make_scene

    out = Path(out)
    device = torch.device("cpu") if device is None else torch.device(device)
    scene = make_scene(num_train=8, num_novel=4, size=(192, 288), seed=seed)
    for name, img in zip(scene.train_names, scene.train_views, strict=True):
        viz.save_png(img, out / "scene" / "train" / f"{name}.png")
    for name, img, clean in zip(scene.names, scene.novel_views, scene.novel_targets, strict=True):
        viz.save_png(img, out / "scene" / "novel" / f"{name}.png")
        viz.save_png(clean, out / "scene" / "novel_clean" / f"{name}.png")

    report: dict[str, Any] = {
        "scene": {
            "train_views": len(scene.train_views),
            "novel_views": len(scene.novel_views),
            "size": list(scene.novel_views[0].shape[-2:]),
            "seed": seed,
            "artifacts": dict(zip(scene.names, scene.artifacts, strict=True)),
        },
        "weights": "random (uncalibrated)" if random_weights else (weights_path or "pretrained (hub)"),
        "sections": {},
    }
    if random_weights:
        report["warning"] = _cli.RANDOM_BANNER
    with tempfile.TemporaryDirectory() as tmp:
        ps_weights = weights_path
        if random_weights:
            ps_weights = str(random_checkpoint("squeezenet1_1", Path(tmp) / "squeezenet1_1-random.pth"))
        try:
            report["sections"]["puzzlesim"] = _puzzlesim_section(scene, out / "puzzlesim", ps_weights, device, quiet)
        except hub.WeightsNotFoundError as err:
            raise hub.WeightsNotFoundError(
                f"{err} (The demo needs the weights once; offline, run `scenemetrics demo --random-weights` for an "
                "uncalibrated smoke test.)",
                filename=err.filename,
                searched=err.searched,
                url=err.url,
            ) from None
        report["sections"]["osim"] = osim_section(
            scene,
            out / "osim",
            random_weights=random_weights,
            weights_path=None,
            device=device,
            quiet=quiet,
            report_dir=out,
        )
    write_json(out / "report.json", report)
    return report


def run(args: argparse.Namespace) -> int:
    device = _cli.resolve_device(args.device)
    _cli.random_weights_banner(args)
    report = run_demo(
        args.out,
        random_weights=args.random_weights,
        weights_path=args.weights,
        device=device,
        quiet=args.quiet,
        seed=args.seed,
    )
    out = Path(args.out)
    lines = [f"scenemetrics demo: report in {out / 'report.json'}"]
    ps = report["sections"]["puzzlesim"]
    lines.append(
        f"  PuzzleSim scene score {ps['scene_score']:.4f} (higher = fewer artifacts); planted-artifact AUC "
        f"{ps['mean_artifact_auc']:.3f}; maps in {out / 'puzzlesim'}"
    )
    for name, section in report["sections"].items():
        score = section.get("scene_score", section.get(name)) if isinstance(section, dict) else None
        if name != "puzzlesim" and isinstance(score, float):
            lines.append(f"  {name} scene score {score:.4f}; outputs in {out / name}")
    if args.random_weights:
        lines.append("  " + _cli.RANDOM_BANNER)
    print("\n".join(lines))
    return 0
