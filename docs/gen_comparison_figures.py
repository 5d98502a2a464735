"""Generate the figures of "Comparing metrics the way the papers did" into ``docs/figures/`` (run from the repo root).

    python docs/gen_comparison_figures.py        # about ten minutes on 2 CPU cores

Every figure is a real output of the library on the package's procedural demo scene (``scenemetrics.synthetic``, the
scene of ``scenemetrics demo``), computed with **random network weights** (``--random-weights``: no download; the
numbers show what the outputs look like, not calibrated scores). It writes:

* ``comparisons_sweep.png`` and ``comparisons_sweep.md``: ``scenemetrics agreement sweep`` over two demo scenes;
* ``comparisons_baselines.md``: ``scenemetrics eval`` of four "methods" (the clean views, the views with the demo's
  planted artifacts, Gaussian noise, Gaussian blur) with the whole-image metrics next to OSIM and its Bbox-patch
  baselines, the planted artifacts' boxes given as regions the detector may miss (``--osim-boxes``);
* ``comparisons_distribution.md``: the same four methods scored by PRISM's distribution baselines (FID, KID, CMMD,
  FD-DINOv2) and the embedding similarities (CLIP-S, DINO similarity, OSIM's CLIP patch baseline), on a random
  Inception checkpoint and small random CLIP / DINOv2 models;
* ``comparisons_objects.png``: the objects one view is scored on (detected and given), with their OSIM ``r`` and patch
  PSNR.

Each figure is recorded in ``docs/figures/MANIFEST.json`` (group ``comparisons``) with its hash, and the manifest's
``comparisons_generator_sha256`` with the hash of this script, which ``tests/docs`` compare.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
MANIFEST = FIGURES / "MANIFEST.json"
SCENES = ("scene0", "scene1")
SIZE = (128, 192)  # small views: the whole script takes minutes on 2 CPU cores
CONF = "0.3"  # the random detector's scores are low; 0.3 keeps a handful of detections per view


def restore(doc: dict) -> dict:
    """A written JSON document with its non-finite numbers back (``+inf`` PSNR is written as null + a note)."""
    from scenemetrics.jsonio import restore as _restore

    return _restore(doc)


def _cli(*args: str) -> None:
    from scenemetrics.cli import main

    code = main(list(args))
    if code != 0:
        raise RuntimeError(f"scenemetrics {' '.join(args)} exited with {code}")


def write_demo(work: Path) -> dict:
    """Two demo scenes: their clean views (the ground truth), training views, planted artifacts and boxes."""
    import torch
    import torch.nn.functional as F

    from scenemetrics import synthetic, viz

    boxes: dict[str, dict[str, list]] = {}
    methods = ("clean", "artifacts", "noise", "blur")
    for s, scene_name in enumerate(SCENES):
        sc = synthetic.make_scene(num_train=4, num_novel=3, size=SIZE, seed=s)
        boxes[scene_name] = {}
        for i, (art, gt, info) in enumerate(zip(sc.novel_views, sc.novel_targets, sc.artifacts, strict=True)):
            name = sc.names[i]
            viz.save_png(gt, work / "views" / scene_name / f"{name}.png")
            noise = 0.05 * torch.randn(gt.shape, generator=torch.Generator().manual_seed(10 * s + i))
            blurred = F.avg_pool2d(gt[None], 5, stride=1, padding=2, count_include_pad=False)[0]
            renders = {"clean": gt, "artifacts": art, "noise": (gt + noise).clamp(0, 1), "blur": blurred}
            for method in methods:
                d = work / "tree" / method / scene_name
                viz.save_png(renders[method], d / "renders" / f"{name}.png")
                viz.save_png(gt, d / "gt" / f"{name}.png")
            # the planted artifacts' boxes ([y0, x0, y1, x1], pixel edges) as regions of our own, without a class
            boxes[scene_name][name] = [[a["box"][1], a["box"][0], a["box"][3], a["box"][2]] for a in info]
        for i, t in enumerate(sc.train_views):
            viz.save_png(t, work / "train" / scene_name / f"{sc.train_names[i]}.png")
            for method in methods:
                viz.save_png(t, work / "tree" / method / scene_name / "train" / f"{sc.train_names[i]}.png")
    (work / "boxes.json").write_text(json.dumps({"format": "scenemetrics.osim.boxes/1", "scenes": boxes}, indent=1))
    return {"methods": methods, "boxes": boxes}


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return f"{v:.{digits}f}"


def sweep_figures(work: Path) -> list[str]:
    """``scenemetrics agreement sweep`` with whole-image, cross-reference and object metrics; the plot and a table."""
    out = work / "sweep"
    metrics = "psnr,ssim,lpips,puzzlesim,osim"
    _cli("agreement", "sweep", "--views", str(work / "views"), "--train-views", str(work / "train"), "--metrics",
         metrics, "--degradations", "blur,hue,noise,saltpepper", "--levels", "3", "--out", str(out), "--plots",
         "--random-weights", "--osim-conf", CONF, "--quiet", "--device", "cpu")  # fmt: skip
    shutil.copyfile(out / "sweep.png", FIGURES / "comparisons_sweep.png")
    doc = restore(json.loads((out / "sweep.json").read_text()))
    kinds = doc["config"]["degradations"]
    lines = ["| metric | rows | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for name, entry in doc["metrics"].items():
        arrow = {True: " ↑", False: " ↓"}.get(entry["higher_is_better"], "")
        cells = []
        for kind in kinds:
            s = entry[kind]
            mono = s["monotone_fraction"]
            mono_text = "n/a" if mono is None else f"{100 * mono:.0f} %"
            cells.append(f"{_fmt(s['spearman'], 2)} · {mono_text}")
        n = entry[kinds[0]]["n"]
        lines.append(f"| `{name}`{arrow} | {n} {entry[kinds[0]]['unit']}s | " + " | ".join(cells) + " |")
    (FIGURES / "comparisons_sweep.md").write_text("\n".join(lines) + "\n")
    return ["comparisons_sweep.png", "comparisons_sweep.md"]


def baseline_figures(work: Path, demo: dict) -> list[str]:
    """``scenemetrics eval`` of four methods: whole-image metrics next to OSIM and its Bbox-patch baselines."""
    out = work / "eval"
    columns = ["psnr", "ssim", "lpips", "osim", "osim_patch_psnr", "osim_patch_ssim", "osim_patch_lpips"]
    _cli("eval", "--root", str(work / "tree"), "--out", str(out), "--metrics", ",".join(columns), "--random-weights",
         "--osim-conf", CONF, "--osim-boxes", str(work / "boxes.json"), "--no-report", "--quiet", "--device",
         "cpu")  # fmt: skip
    doc = restore(json.loads((out / "results.json").read_text()))
    rows = {r["method"]: r for r in doc["leaderboard"]}
    arrows = {"psnr": "↑", "ssim": "↑", "lpips": "↓", "osim": "↑", "osim_patch_psnr": "↑", "osim_patch_ssim": "↑",
              "osim_patch_lpips": "↓"}  # fmt: skip
    lines = ["| method | " + " | ".join(f"`{c}` {arrows[c]}" for c in columns) + " |", "|---|" + "---|" * len(columns)]
    for method in demo["methods"]:
        mean = rows[method]["mean"]
        digits = {"psnr": 2, "osim_patch_psnr": 2}
        lines.append(f"| {method} | " + " | ".join(_fmt(mean.get(c), digits.get(c, 3)) for c in columns) + " |")
    (FIGURES / "comparisons_baselines.md").write_text("\n".join(lines) + "\n")
    return ["comparisons_baselines.md"]


DISTRIBUTION = ("fid", "kid", "cmmd", "fd_dinov2", "clip_s", "dino_sim", "osim_patch_clip")


def distribution_figures(work: Path, demo: dict) -> list[str]:
    """``scenemetrics eval`` of the four methods with the distribution and embedding baselines (random weights)."""
    out = work / "eval_distribution"
    # KID's subsets can hold at most the views of one scene (3): the default 1000 would be cut down, with a warning
    _cli("eval", "--root", str(work / "tree"), "--out", str(out), "--metrics", ",".join(DISTRIBUTION),
         "--random-weights", "--inception-subset-size", "3", "--inception-subsets", "10", "--osim-conf", CONF, "--osim-boxes",
         str(work / "boxes.json"), "--no-report", "--quiet", "--device", "cpu")  # fmt: skip
    doc = restore(json.loads((out / "results.json").read_text()))
    rows = {r["method"]: r for r in doc["leaderboard"]}
    arrows = {"clip_s": "↑", "dino_sim": "↑", "osim_patch_clip": "↑"}
    head = " | ".join(f"`{c}` {arrows.get(c, '↓')}" for c in DISTRIBUTION)
    lines = [f"| method | {head} |", "|---|" + "---|" * len(DISTRIBUTION)]
    for method in demo["methods"]:
        mean = rows[method]["mean"]
        lines.append(f"| {method} | " + " | ".join(_fmt(mean.get(c), 3) for c in DISTRIBUTION) + " |")
    (FIGURES / "comparisons_distribution.md").write_text("\n".join(lines) + "\n")
    return ["comparisons_distribution.md"]


def objects_figure(work: Path, demo: dict) -> list[str]:
    """One view: the objects OSIM scores (detected, faint; given, dashed), the changed ones labelled with r and PSNR."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    import scenemetrics as sm
    from scenemetrics.image import read_image

    scene, view = SCENES[0], "novel_01"
    ref = read_image(work / "tree" / "artifacts" / scene / "gt" / f"{view}.png")[None]
    render = read_image(work / "tree" / "artifacts" / scene / "renders" / f"{view}.png")[None]
    # the detector eval builds with --random-weights (yolox_nano, seed 0), through the same loader
    weights = sm.osim.random_checkpoint("yolox_nano", work / "yolox_nano.pth")
    model = sm.osim.load_detector("yolox_nano", weights)
    given = [demo["boxes"][scene][view]]
    res = sm.osim.osim(render, ref, model=model, conf_threshold=float(CONF), boxes=given)
    patch = sm.osim.osim_patches(render, ref, sm.osim.psnr_score(), model=model, conf_threshold=float(CONF),
                                 boxes=given)  # fmt: skip
    psnr = patch.r.tolist()
    changed = [k for k in range(len(psnr)) if math.isfinite(psnr[k]) and not bool(res.given[k])]
    shown = sorted(changed, key=lambda k: float(res.r[k]))[:6]
    fig, axes = plt.subplots(1, 2, figsize=(13.0, 5.2))
    for ax, image, title in ((axes[0], ref, "reference (ground truth): every object OSIM scores"),
                             (axes[1], render, "render with planted artifacts: the objects it changes")):  # fmt: skip
        ax.imshow(image[0].permute(1, 2, 0).numpy())
        ax.set_title(title, fontsize=10)
        ax.set_axis_off()

    def box(ax, k, colour, **style):
        x1, y1, x2, y2 = res.boxes[k].tolist()
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, edgecolor=colour, **style))

    def label(ax, k, colour, below=False):
        x1, y1, _, y2 = res.boxes[k].tolist()
        name = res.class_names[int(res.classes[k])]
        text = f"{name}: r {float(res.r[k]):.3f}, PSNR {_fmt(psnr[k], 1)} dB"
        y = y2 + 5 if below else max(y1 - 1.5, 4)  # given boxes labelled under the box, detections above
        ax.text(max(x1, 0), y, text, color="white", fontsize=7,
                bbox={"facecolor": colour, "alpha": 0.85, "pad": 1, "edgecolor": "none"})  # fmt: skip

    for k in range(res.r.numel()):
        if bool(res.given[k]):
            for ax in axes:
                box(ax, k, "tab:blue", linewidth=1.8, linestyle="--")
            label(axes[1], k, "tab:blue", below=True)
        else:
            box(axes[0], k, "tab:red", linewidth=0.6, alpha=0.35)
    for k in shown:
        box(axes[1], k, "tab:red", linewidth=1.4)
        label(axes[1], k, "tab:red")
    n_det = int((~res.given).sum())
    fig.suptitle(
        f"The objects of one view (random YOLOX weights: {n_det} detections, classes meaningless) and "
        f"{int(res.given.sum())} given boxes (blue, dashed; no class: 'unlabelled').\n"
        f"Right: the given boxes and the {len(shown)} detected objects whose pixels the render changes most "
        f"(lowest r); the others' patches are unchanged (PSNR +inf). View OSIM {res.view_scores(1)[0]:.3f}.",
        fontsize=10,
    )
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.84, wspace=0.04)
    fig.savefig(FIGURES / "comparisons_objects.png", dpi=95)
    plt.close(fig)
    return ["comparisons_objects.png"]


def generator_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    if argv:
        print("gen_comparison_figures: takes no argument (it makes every figure of the page)", file=sys.stderr)
        return 2
    FIGURES.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"figures": {}}
    with tempfile.TemporaryDirectory(prefix="scenemetrics-comparisons-") as tmp:
        work = Path(tmp)
        demo = write_demo(work)
        figures = (
            sweep_figures(work)
            + baseline_figures(work, demo)
            + distribution_figures(work, demo)
            + objects_figure(work, demo)
        )
    for figure in figures:
        digest = hashlib.sha256((FIGURES / figure).read_bytes()).hexdigest()
        manifest["figures"][figure] = {"group": "comparisons", "sha256": digest}
        print(f"docs/figures/{figure}")
    manifest["comparisons_generator_sha256"] = generator_hash()
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
