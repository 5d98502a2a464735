"""Generate every figure of the documentation site into ``docs/figures/`` (run from the repository root).

    python docs/gen_figures.py            # all figures (a few minutes on 2 CPU cores)
    python docs/gen_figures.py puzzlesim  # some: puzzlesim osim tensorboard callbacks eval prism wireframe openlex3d

Every figure is a real output of the library on the package's procedural demo scene (``scenemetrics.synthetic``,
the scene of ``scenemetrics demo``) or on other generated data, computed with **random network weights** (no
download; the pictures show what the outputs look like, not calibrated scores). The pages' captions say so.
``docs/figures/MANIFEST.json`` records each figure with the hash of this script, so a test can tell when the
figures are older than the script that makes them. The ``eval`` report screenshot needs ``chromium``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
MANIFEST = FIGURES / "MANIFEST.json"


def _cli(*args: str) -> None:
    from scenemetrics.cli import main

    code = main(list(args))
    if code != 0:
        raise RuntimeError(f"scenemetrics {' '.join(args)} exited with {code}")


def _copy(src: Path, name: str) -> str:
    shutil.copyfile(src, FIGURES / name)
    return name


def demo_figures(work: Path) -> list[str]:
    """``scenemetrics demo --random-weights``: PuzzleSim panels/maps/overlays and OSIM red-mask overlays."""
    out = work / "demo"
    _cli("demo", "--random-weights", "--quiet", "--out", str(out))
    return [
        _copy(out / "puzzlesim" / "panels" / "novel_00.png", "puzzlesim_panel.png"),
        _copy(out / "puzzlesim" / "overlays" / "novel_01.png", "puzzlesim_overlay.png"),
        _copy(out / "puzzlesim" / "maps" / "novel_01.png", "puzzlesim_map.png"),
        _copy(out / "scene" / "novel" / "novel_01.png", "demo_novel_view.png"),
        _copy(out / "osim" / "osim_overlays" / "novel_00.png", "osim_overlay.png"),
    ]


def tensorboard_figure(work: Path) -> list[str]:
    """The images ``SceneMetricsMonitor`` logs to TensorBoard during a short toy training loop, laid out as
    TensorBoard's image panel shows them (tag, step, picture), read back from the event file."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = work / "tb"
    cmd = [sys.executable, str(ROOT / "examples" / "monitor_tiny_splat.py"), "--steps", "20", "--every-n-steps",
           "10", "--eval-views", "2", "--random-weights", "--out", str(logdir)]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    acc = EventAccumulator(str(logdir), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = sorted(acc.Tags()["images"])[:4]
    if not tags:
        raise RuntimeError("the training run logged no image")
    fig, axes = plt.subplots(1, len(tags), figsize=(4.2 * len(tags), 3.6), squeeze=False)
    fig.patch.set_facecolor("#f5f5f5")
    for ax, tag in zip(axes[0], tags, strict=True):
        event = acc.Images(tag)[-1]
        ax.imshow(Image.open(io.BytesIO(event.encoded_image_string)).convert("RGB"))
        ax.set_title(f"{tag}\nstep {event.step}", fontsize=9, loc="left", family="monospace")
        ax.set_xticks([])
        ax.set_yticks([])
    scalars = ", ".join(f"{t} = {acc.Scalars(t)[-1].value:.4f}" for t in sorted(acc.Tags()["scalars"]))
    fig.suptitle("TensorBoard, IMAGES tab: what SceneMetricsMonitor logged (random weights)", x=0.01, ha="left")
    fig.text(0.01, 0.01, textwrap.fill(f"SCALARS tab, last step: {scalars}", 110), fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.09, 1, 0.95))
    fig.savefig(FIGURES / "tensorboard_images.png", dpi=80)
    plt.close(fig)
    return ["tensorboard_images.png"]


def _event_images(logdir: Path) -> dict[str, dict[int, Path]]:
    """Every image of a TensorBoard run as a PNG file: ``{tag: {step: path}}`` (written next to the events)."""
    import io

    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"images": 0})
    acc.Reload()
    out: dict[str, dict[int, Path]] = {}
    for tag in acc.Tags()["images"]:
        for event in acc.Images(tag):
            path = logdir / f"{tag.replace('/', '_')}_{event.step}.png"
            Image.open(io.BytesIO(event.encoded_image_string)).convert("RGB").save(path)
            out.setdefault(tag, {})[event.step] = path
    return out


def callbacks_figures(work: Path) -> list[str]:
    """What the training callbacks log, read back from TensorBoard after a real (tiny, CPU) training run of
    ``examples/monitor_tiny_splat.py``: a render | target | error panel, the same view at two steps on one display
    range, the error over time; and a panel of the ``scenemetrics eval`` report's worst views."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    logdir = work / "tb"
    cmd = [sys.executable, str(ROOT / "examples" / "monitor_tiny_splat.py"), "--steps", "100", "--every-n-steps",
           "50", "--random-weights", "--out", str(logdir)]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    images = _event_images(logdir)
    made = [
        _copy(images["scenemetrics/panel/0"][100], "callbacks_panel.png"),
        _copy(images["scenemetrics/panel_over_time/0"][100], "callbacks_panel_over_time.png"),
    ]
    tags = ("scenemetrics/panel/0", "scenemetrics/puzzlesim/map/0")
    fig, axes = plt.subplots(len(tags), 2, figsize=(8.4, 7.4), squeeze=False)
    fig.patch.set_facecolor("#f5f5f5")
    for row, tag in enumerate(tags):
        for col, step in enumerate((50, 100)):
            ax = axes[row][col]
            ax.imshow(Image.open(images[tag][step]), interpolation="nearest")
            ax.set_title(f"{tag}\nstep {step}", fontsize=9, loc="left", family="monospace")
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("TensorBoard step slider at 50 and 100: one display range per view, so colours compare", x=0.01,
                 ha="left", fontsize=11)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(FIGURES / "callbacks_two_steps.png", dpi=90)
    plt.close(fig)
    made.append("callbacks_two_steps.png")

    spec = importlib.util.spec_from_file_location("eval_synthetic", ROOT / "examples" / "eval_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = module.write_tree(work / "tree")
    results = work / "results"
    _cli("eval", "--root", str(root), "--out", str(results), "--metrics", "abs_error,ssim_map", "--panels", "1",
         "--quiet")  # fmt: skip
    panels = sorted((results / "report" / "panels" / "artifacts").rglob("abs_error-000.png"))
    made.append(_copy(panels[0], "eval_panel.png"))
    return made


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("the eval report screenshot needs chromium (Debian: apt-get install -y chromium)")


def screenshot(url: str, out: Path, profile: Path, *, width: int = 1280, height: int = 900) -> None:
    """Headless chromium screenshot of ``url`` (offline; no network access needed)."""
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--run-all-compositor-stages-before-draw", "--virtual-time-budget=15000",
           f"--window-size={width},{height}", f"--screenshot={out}", url]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=180)


def eval_figure(work: Path) -> list[str]:
    """``scenemetrics eval`` on a generated results tree (3 methods x 2 scenes), screenshot of its HTML report."""
    spec = importlib.util.spec_from_file_location("eval_synthetic", ROOT / "examples" / "eval_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = module.write_tree(work / "tree")
    results = work / "results"
    _cli("eval", "--root", str(root), "--out", str(results), "--metrics", "psnr,ssim,puzzlesim", "--random-weights",
         "--thumbnails", "1", "--quiet")  # fmt: skip
    page = results / "report" / "index.html"
    eager = page.with_name("eager.html")  # the report loads thumbnails lazily; a screenshot wants them all
    eager.write_text(page.read_text().replace('loading="lazy"', 'loading="eager"'))
    screenshot(eager.as_uri(), FIGURES / "eval_report.png", work / "profile", height=1100)
    return ["eval_report.png"]


def wireframe_table(work: Path) -> list[str]:
    """The property suite (the paper's Table 2 layout) of a few metrics on procedural houses, as a Markdown table."""
    import scenemetrics as sm

    houses = sm.wireframe.synthetic_houses(4, seed=0)
    # the F1 match radius has no default: 0.5 in the houses' unit (metres). The voxel IoU is left out (minutes here).
    options = {"corner_f1": {"threshold": 0.5}, "edge_f1": {"threshold": 0.5}, "wed": {}, "spectral_l1": {}}
    tables = {
        name: sm.wireframe.property_suite(name, houses, seed=0, metric_options=opts) for name, opts in options.items()
    }
    (FIGURES / "wireframe_properties.md").write_text(sm.wireframe.format_property_table(tables) + "\n")
    return ["wireframe_properties.md"]


def openlex3d_figure(work: Path) -> list[str]:
    """Top-N category colouring of a procedural room (boxes of points, random features near chosen labels)."""
    import numpy as np

    import scenemetrics as sm

    rng = np.random.default_rng(0)
    # object id -> (GT label, box centre, box size, label its features are drawn near)
    objects = {
        1: ("sofa", (0.0, 0.0), (2.0, 0.9), "couch"),  # a synonym -> synonym
        2: ("table", (0.2, 1.6), (1.2, 0.7), "desk"),  # visually similar -> vis_sim
        3: ("lamp", (2.2, 0.0), (0.4, 0.4), "lamp"),  # the label itself -> synonym
        4: ("painting", (-2.0, 1.5), (0.9, 0.2), "dog"),  # what the painting depicts -> depiction
        5: ("chair", (2.0, 1.8), (0.6, 0.6), "rug"),  # an object next to it -> clutter
        6: ("plant", (-2.2, -0.4), (0.5, 0.5), "bed"),  # unrelated -> incorrect
        7: ("rug", (0.0, -1.6), (1.8, 1.0), None),  # no prediction near it -> missing
    }
    attributes = {
        1: {"synonyms": ["sofa", "couch"], "depictions": [], "vis_sim": ["bed"], "clutter": ["5"]},
        2: {"synonyms": ["table"], "depictions": [], "vis_sim": ["desk"], "clutter": ["5"]},
        3: {"synonyms": ["lamp"], "depictions": [], "vis_sim": [], "clutter": []},
        4: {"synonyms": ["painting"], "depictions": ["dog"], "vis_sim": [], "clutter": []},
        5: {"synonyms": ["chair"], "depictions": [], "vis_sim": [], "clutter": ["7"]},  # ids of objects nearby
        6: {"synonyms": ["plant"], "depictions": [], "vis_sim": [], "clutter": []},
        7: {"synonyms": ["rug"], "depictions": [], "vis_sim": [], "clutter": []},
    }
    categories = {"dataset": {"samples": [
        {"object_id": oid, "name": objects[oid][0], "labels": {"image_attributes": attributes[oid]}} for oid in objects
    ]}}  # fmt: skip
    prompts = ["sofa", "couch", "table", "desk", "lamp", "painting", "dog", "chair", "rug", "plant", "bed", "wall"]
    text = rng.normal(size=(len(prompts), 32))
    gt_points, gt_ids, pred_points, pred_index, features = [], [], [], [], []
    for oid, (_, centre, size, near) in objects.items():
        n = int(600 * size[0] * size[1]) + 60
        x = centre[0] + (rng.random(n) - 0.5) * size[0]
        y = centre[1] + (rng.random(n) - 0.5) * size[1]
        pts = np.column_stack([x, y, rng.random(n) * 0.8])
        gt_points.append(pts)
        gt_ids.append(np.full(n, oid))
        if near is not None:
            pred_points.append(pts + rng.normal(0, 0.01, size=pts.shape))
            pred_index.append(np.full(n, len(features)))
            features.append(text[prompts.index(near)] + rng.normal(0, 0.3, size=32))
    result = sm.openlex3d.topn_frequency(
        np.concatenate(pred_points), np.stack(features), np.concatenate(pred_index), text, prompts,
        np.concatenate(gt_points), np.concatenate(gt_ids), categories, top_n=1,
    )  # fmt: skip
    sm.openlex3d.save_category_png(
        FIGURES / "openlex3d_categories.png", np.concatenate(gt_points), result.point_categories, resolution=480,
        title="OpenLex3D Top-1 categories (procedural room, random features)",
    )
    return ["openlex3d_categories.png"]


def prism_figure(work: Path) -> list[str]:
    """PRISM distances (raw mode: no head) of the demo scene's novel views, rendered with planted artifacts or
    noise, against their clean versions, with a random-weight tiny Zero123 in the official diffusers layout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    import scenemetrics as sm
    from scenemetrics.synthetic import make_scene

    scene = make_scene(num_train=2, num_novel=4, size=(96, 96), seed=0)  # resized to 256 px by the extractor
    extractor = sm.prism.Zero123Features.from_pretrained(sm.prism.random_checkpoint(work / "zero123"), resize=True)
    n = len(scene.novel_views)
    source = scene.train_views[0][None].expand(n, -1, -1, -1)
    target = torch.stack(list(scene.novel_targets))
    noisy = (target + 0.1 * torch.randn(target.shape, generator=torch.Generator().manual_seed(0))).clamp(0, 1)
    pose = torch.tensor([[0.0, 30.0, 0.0]]).expand(n, -1)  # (delta polar deg, delta azimuth deg, delta radius)
    renders = {"clean": target, "planted artifacts": torch.stack(list(scene.novel_views)), "noise 0.1": noisy}
    distances = {}
    for name, pred in renders.items():
        metric = sm.PRISMDistance(extractor)
        metric.update(source, pred, target, pose)
        distances[name] = metric.last_distances.numpy()
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    width = 0.8 / len(distances)
    for k, (name, values) in enumerate(distances.items()):
        ax.bar([i + k * width for i in range(n)], values, width, label=name)
    ax.set_xticks([i + width for i in range(n)], [f"novel view {i}" for i in range(n)])
    ax.set_ylabel("D_PRISM (lower = better)")
    ax.set_title("PRISMDistance, raw mode, random-weight tiny Zero123 (output format only)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURES / "prism_distances.png", dpi=90)
    plt.close(fig)
    return ["prism_distances.png"]


STEPS: dict[str, Callable[[Path], list[str]]] = {
    "puzzlesim": demo_figures,  # also the OSIM overlays: one demo run makes both
    "tensorboard": tensorboard_figure,
    "callbacks": callbacks_figures,
    "eval": eval_figure,
    "prism": prism_figure,
    "wireframe": wireframe_table,
    "openlex3d": openlex3d_figure,
}


def generator_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a not in STEPS and a != "osim"]
    if unknown:
        print(f"gen_figures: unknown figure group(s) {unknown}; choose from {sorted(STEPS)}", file=sys.stderr)
        return 2
    chosen = [name for name in STEPS if not argv or name in argv or (name == "puzzlesim" and "osim" in argv)]
    FIGURES.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"figures": {}}
    with tempfile.TemporaryDirectory(prefix="scenemetrics-docs-") as tmp:
        for name in chosen:
            for figure in STEPS[name](Path(tmp) / name):
                digest = hashlib.sha256((FIGURES / figure).read_bytes()).hexdigest()
                manifest["figures"][figure] = {"group": name, "sha256": digest}
                print(f"docs/figures/{figure}")
    if not argv:  # only a full run vouches that every figure comes from this version of the script
        manifest["generator_sha256"] = generator_hash()
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
