"""Fine-tune a PRISM head end to end on synthetic posed views: build-dataset -> embed -> train-head -> evaluate-head.

The views are rendered analytically (boxes and a sphere, RGBA + exact z-depth, nerfstudio ``transforms.json``), so
the script runs offline. Every step is the ``scenemetrics`` command a user would type, run in its own process;
the script prints the wall time, CPU time and peak memory of each. Without ``--model`` the embedding uses a tiny
random-weight Zero123 (seconds, meaningless scores); pass a Zero123-XL diffusers folder or hub id for real features, and
``--inpainter diffusers`` (Stable Diffusion inpainting) for real inpaintings.

Usage:
    python examples/prism_finetune.py --work /tmp/prism_finetune
    python examples/prism_finetune.py --work runs/ft --model ashawkey/zero123-xl-diffusers --inpainter diffusers
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ANGLE_X = 0.8575  # 49.1 degrees


def orbit_c2w(azimuth_deg: float, elevation_deg: float = 30.0, distance: float = 2.7) -> np.ndarray:
    """Camera-to-world (OpenGL axes, z-up world) of a camera looking at the origin."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    centre = distance * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    forward = -centre / np.linalg.norm(centre)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    c2w = np.eye(4)
    c2w[:3, 0], c2w[:3, 1], c2w[:3, 2], c2w[:3, 3] = right, np.cross(right, forward), -forward, centre
    return c2w


def render(shape: str, half: np.ndarray, c2w: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """RGBA (colour from the normal) and z-depth of a box with half-sizes ``half`` or a unit sphere."""
    f = 0.5 * size / math.tan(0.5 * ANGLE_X)
    u = (np.arange(size) + 0.5 - size / 2) / f
    uu, vv = np.meshgrid(u, -u)
    dirs = np.stack([uu, vv, -np.ones_like(uu)], -1) @ c2w[:3, :3].T  # t along dirs = z-depth
    o = c2w[:3, 3]
    if shape == "sphere":
        a, b, c = (dirs * dirs).sum(-1), dirs @ o, o @ o - 1.0
        disc = b * b - a * c
        hit = disc > 0
        t = np.where(hit, (-b - np.sqrt(np.maximum(disc, 0))) / a, 0.0)
        normal = o + t[..., None] * dirs
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (-half - o) / dirs, (half - o) / dirs
        tmin, tmax = np.minimum(t1, t2), np.maximum(t1, t2)
        enter, leave = tmin.max(-1), tmax.min(-1)
        hit = (enter < leave) & (leave > 0)
        t = np.where(hit, enter, 0.0)
        axis = tmin.argmax(-1)
        normal = np.zeros_like(dirs)
        np.put_along_axis(normal, axis[..., None], -np.sign(np.take_along_axis(dirs, axis[..., None], -1)), -1)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True).clip(1e-12)
    rgba = np.zeros((size, size, 4), np.uint8)
    rgba[..., :3] = np.where(hit[..., None], np.rint((normal * 0.5 + 0.5) * 255), 255)
    rgba[..., 3] = np.where(hit, 255, 0)
    return rgba, t.astype(np.float32)


def write_views(root: Path, views: int, size: int) -> None:
    """Three objects as nerfstudio folders: RGBA PNGs, ``*_depth.npy`` z-depth, ``camera_angle_x``."""
    import cv2

    objects = {"box": np.array([0.6, 0.6, 0.6]), "slab": np.array([0.9, 0.4, 0.3]), "sphere": None}
    for name, half in objects.items():
        folder = root / name
        (folder / "images").mkdir(parents=True, exist_ok=True)
        frames = []
        for k in range(views):
            c2w = orbit_c2w(10.0 + 360.0 * k / views)
            rgba, depth = render("sphere" if half is None else "box", half, c2w, size)
            cv2.imwrite(str(folder / f"images/{k:03d}.png"), cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))
            np.save(folder / f"images/{k:03d}_depth.npy", depth)
            frames.append({"file_path": f"images/{k:03d}.png", "transform_matrix": c2w.tolist()})
        (folder / "transforms.json").write_text(json.dumps({"camera_angle_x": ANGLE_X, "frames": frames}))


def step(name: str, args: list[str], log: list[dict]) -> dict:
    """Run ``scenemetrics ARGS`` in a child process; record wall time and peak RSS; return its JSON summary."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "scenemetrics", *args], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed with exit code {proc.returncode}")
    peak_mb = usage.ru_maxrss / 1024  # Linux: kilobytes
    cpu = usage.ru_utime + usage.ru_stime  # less sensitive than wall time to other load on the machine
    log.append(
        {"step": name, "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_rss_mb": round(peak_mb)}
    )
    print(f"== {name}: {seconds:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak_mb:.0f} MB", file=sys.stderr)
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="working folder (created)")
    parser.add_argument("--views", type=int, default=6, help="views per object (default 6)")
    parser.add_argument("--size", type=int, default=128, help="render size in pixels (default 128)")
    parser.add_argument("--model", default=None, help="Zero123 diffusers folder or hub id (default: tiny random)")
    parser.add_argument("--image-size", type=int, default=None, help="embedding size (default 64 tiny / 256 real)")
    parser.add_argument("--inpainter", choices=("opencv", "diffusers"), default="opencv")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    log: list[dict] = []
    start = time.perf_counter()
    write_views(work / "renders", args.views, args.size)
    log.append({"step": "render (numpy)", "seconds": round(time.perf_counter() - start, 1)})
    model, image_size = args.model, args.image_size
    if model is None:
        from scenemetrics.prism.random import random_checkpoint

        model = str(random_checkpoint(work / "zero123_tiny_random"))
        image_size = image_size or 64
    image_size = image_size or 256

    built = step(
        "build-dataset",
        ["prism", "build-dataset", "--views", str(work / "renders"), "--out", str(work / "vm"),
         "--inpainter", args.inpainter, "--test-fraction", "0.34", "--no-progress"],
        log,
    )  # fmt: skip
    step(
        "embed",
        ["prism", "embed", str(work / "vm"), "--model", model, "--out", str(work / "cache"),
         "--image-size", str(image_size), "--no-progress"],
        log,
    )  # fmt: skip
    trained = step(
        "train-head",
        ["prism", "train-head", str(work / "cache"), "--out", str(work / "runs/head"), "--epochs", str(args.epochs),
         "--no-progress"],
        log,
    )  # fmt: skip
    tuned = step(
        "train-head --init-head",
        ["prism", "train-head", str(work / "cache"), "--out", str(work / "runs/finetuned"), "--epochs", "2",
         "--init-head", trained["head"], "--no-progress"],
        log,
    )  # fmt: skip
    evaluated = step(
        "evaluate-head",
        ["prism", "evaluate-head", "--data", str(work / "cache"), "--head", tuned["head"],
         "--out", str(work / "runs/eval")],
        log,
    )  # fmt: skip
    print(json.dumps({"dataset": built, "evaluation_auc": evaluated["auc"], "steps": log}, indent=1))


if __name__ == "__main__":
    main()
