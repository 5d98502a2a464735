"""OSIM part of ``scenemetrics demo``: score a scene's renders (with planted artifacts) against clean references.

``scenemetrics.demo`` calls :func:`run_demo` with a scene object holding ``novel_views`` (renders, ``(3, H, W)``
float in [0, 1]), ``novel_targets`` (the same views without artifacts) and ``names``.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch

__all__ = ["DEMO_DETECTOR", "RANDOM_DETECTOR", "run_demo"]

DEMO_DETECTOR = "yolox_x"
"""The paper's detector, used with real weights."""

RANDOM_DETECTOR = "yolox_nano"
"""The variant built with random weights (``random_weights=True``): the smallest, for speed."""

_CONF = 0.35


def run_demo(
    scene: Any,
    out_dir: str | os.PathLike,
    *,
    random_weights: bool,
    weights_path: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    quiet: bool = False,
    detector: str | None = None,
    report_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Scene OSIM of ``scene.novel_views`` against ``scene.novel_targets``; overlays and a JSON in ``out_dir``.

    Args:
        scene: has ``novel_views`` and ``novel_targets`` (lists of aligned ``(3, H, W)`` tensors in [0, 1]) and
            ``names`` (one per view, used for file names).
        out_dir: output folder (created): ``osim_overlays/<name>.png`` (each view with its objects below the scene
            score outlined and labelled, see :func:`~scenemetrics.osim.viz.low_objects_picture`) and ``osim.json``.
        random_weights: build random YOLOX weights in the official layout (through
            :func:`scenemetrics.osim.random_checkpoint` and the normal ``weights_path`` loader) instead of
            the Megvii checkpoint; the scores are then uncalibrated. If such a detector finds nothing at the
            paper's confidence 0.35, the threshold is lowered to 90% of the best detection score and the summary
            says so.
        weights_path: YOLOX checkpoint file or folder for ``detector`` (ignored with ``random_weights``).
        device: torch device (default CPU).
        quiet: no progress output.
        detector: YOLOX variant (default ``yolox_x``, or ``yolox_nano`` with random weights).
        report_dir: folder the returned (and written) file paths are relative to (default ``out_dir``).

    Returns:
        A JSON-able summary: scene score, per-view scores, per-class scores, the weights used and where the
        files are (paths relative to ``report_dir``).

    Raises:
        ValueError: the scene's lists differ in length, or a render and its target differ in shape.
        scenemetrics.hub.WeightsNotFoundError: no checkpoint (without ``random_weights``).
    """
    from tqdm.auto import tqdm

    from scenemetrics.jsonio import write_json
    from scenemetrics.osim.detector import load_detector
    from scenemetrics.osim.metric import OSIM
    from scenemetrics.osim.random import random_checkpoint
    from scenemetrics.osim.viz import low_objects_picture

    views, targets, names = list(scene.novel_views), list(scene.novel_targets), list(scene.names)
    if not (len(views) == len(targets) == len(names)):
        raise ValueError(
            f"scene.novel_views ({len(views)}), scene.novel_targets ({len(targets)}) and scene.names ({len(names)}) "
            "must have the same length"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    variant = detector or (RANDOM_DETECTOR if random_weights else DEMO_DETECTOR)
    if random_weights:
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = random_checkpoint(variant, Path(tmp) / f"{variant}.pth", seed=0)
            model = load_detector(variant, ckpt, dev)
        weights = "random (uncalibrated)"
    else:
        model = load_detector(variant, weights_path, dev)
        weights = str(weights_path) if weights_path is not None else f"official {variant} (scenemetrics cache)"

    conf, conf_note = _CONF, None
    if random_weights:
        best = max((_best_score(model, t.to(dev)) for t in targets), default=0.0)
        if 0.0 < best < _CONF:
            conf = 0.9 * best
            conf_note = f"random weights detected nothing at 0.35; conf_threshold lowered to {conf:.4g}"

    metric = OSIM(model=model, conf_threshold=conf).to(dev)
    results = []
    for view, target in tqdm(list(zip(views, targets, strict=True)), desc="osim demo", disable=quiet):
        if view.shape != target.shape:
            raise ValueError(f"a novel view {tuple(view.shape)} and its target {tuple(target.shape)} differ in shape")
        metric.update(view[None].to(dev), target[None].to(dev))
        results.append(metric.last_result)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if quiet else "default")
        score = float(metric.compute())
    per_view = []
    overlay_dir = out / "osim_overlays"
    root = Path(report_dir) if report_dir is not None else out
    for name, view, res in zip(names, views, results, strict=True):
        view_score = res.view_scores(1)[0]
        picture = low_objects_picture(
            view, res, threshold=score, title=f"OSIM {name}: view score {view_score:.4f}, scene score {score:.4f}"
        )
        path = picture.save(overlay_dir / f"{Path(str(name)).stem}.png")
        per_view.append(
            {
                "name": str(name),
                "osim": view_score,
                "objects": int(res.r.numel()),
                "below_scene": int((res.r < score).sum()) if not math.isnan(score) else 0,
                "overlay": _relative(path, root),
            }
        )
    summary: dict[str, Any] = {
        "metric": "osim",
        "osim": score,
        "detector": variant,
        "weights": weights,
        "conf_threshold": conf,
        "num_views": len(views),
        "num_objects": int(metric.count.sum()),
        "class_scores": metric.class_scores(),
        "views": per_view,
        "overlays": _relative(overlay_dir, root),
    }
    if random_weights:
        summary["note"] = "random YOLOX weights: the detections and scores are uncalibrated, for a smoke test only"
    if conf_note:
        summary["conf_note"] = conf_note
    if math.isnan(score):
        summary["nan_reason"] = f"no object was detected in any reference at conf_threshold={conf:.4g}"
    summary["json"] = _relative(out / "osim.json", root)
    write_json(out / "osim.json", summary)
    return summary


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX separators), as report files give their paths."""
    return Path(os.path.relpath(path, root)).as_posix()


def _best_score(model: Any, image: torch.Tensor) -> float:
    raw = model.detect(image, conf_threshold=float("inf")).raw[0]
    return float((raw[:, 4] * raw[:, 5:].amax(1)).max()) if raw.numel() else 0.0
