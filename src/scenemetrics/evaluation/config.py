"""What ``scenemetrics eval`` is asked to do (:class:`EvalConfig`) and what it reports back (:class:`EvalSummary`).

Example:
    >>> from scenemetrics.evaluation.config import EvalConfig
    >>> EvalConfig(root="runs", out="results", metrics=("psnr", "ssim")).devices
    '1'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RANDOM_BANNER", "EvalConfig", "EvalSummary"]

RANDOM_BANNER = (
    "RANDOM WEIGHTS: every network is a deterministic random one (--random-weights); the scores are UNCALIBRATED "
    "and only show that the pipeline runs."
)


@dataclass
class EvalConfig:
    """Everything ``scenemetrics eval`` needs (the CLI flags, one to one).

    Attributes:
        root: ``<root>/<method>/<scene>/`` tree (``None`` when only ``predictions`` are scored).
        out: output folder (commit log, states, tables, report).
        metrics: metric names (``("all",)`` for every available one).
        layout: ``auto``, ``scenemetrics``, ``nerfbaselines`` or ``nerfstudio``.
        data: dataset folder ``<data>/<scene>/{gt,train}`` for what scene folders lack.
        split: ns-render split.
        methods, scenes: restrict to these names (of the ``root`` tree).
        predictions: NerfBaselines predictions folders or archives, scored next to the ``root`` tree.
        max_archive_bytes: the most bytes one predictions archive may unpack to (``None``: half the free space at
            ``out``, at most 64 GiB).
        nerfstudio_configs: trained nerfstudio runs (``config.yml``), rendered on the ``split`` (default test).
        train_views: the training views of every scene (``<dir>/<scene>/images/``, ``<dir>/<scene>/``, ``<dir>``);
            they win over a scene folder's own.
        step: the step (NerfBaselines ``predictions-<step>``) or iteration (3DGS ``ours_<iteration>``) to read
            (``None``: the highest).
        protocol: a published protocol whose variants replace ``ssim`` and ``lpips`` in ``metrics`` (``"3dgs"``,
            ``"nerfbaselines"``, ``"scenemetrics"``; :func:`scenemetrics.registry.apply_protocol`).
        options: per-metric options, ``{"lpips": {"net": "vgg"}, ...}``.
        plugins: modules or ``.py`` files that register more metrics.
        random_weights: deterministic random networks everywhere (smoke tests; uncalibrated scores).
        background: composite RGBA images onto ``"white"`` or ``"black"`` (``None``: the background the folder's
            pipeline recorded, else drop alpha, with a warning).
        max_thumbnails: map thumbnails per unit and map-producing metric in the report.
        thumbnail_height: thumbnail height in pixels.
        max_panels: render | ground truth | map panels of the worst views, per unit and full-reference map metric
            (``ssim_map``, ``lpips_map``, ``abs_error``: metrics with a map and a ground truth); the report shows
            each method's worst this many.
        report: write the HTML report.
        force: recompute everything (a new record overrides the old ones).
        dry_run: only plan and print what would run.
        device: ``--device`` (``None``: Fabric's ``auto``).
        devices, num_nodes, strategy: Lightning Fabric's.
        quiet: no progress bars.
    """

    root: str | os.PathLike | None
    out: str | os.PathLike
    metrics: Sequence[str] = ("psnr", "ssim", "lpips", "puzzlesim")
    layout: str = "auto"
    data: str | os.PathLike | None = None
    split: str | None = None
    methods: Sequence[str] | None = None
    scenes: Sequence[str] | None = None
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    plugins: Sequence[str] = ()
    random_weights: bool = False
    background: str | None = None
    max_thumbnails: int = 4
    thumbnail_height: int = 96
    max_panels: int = 2
    report: bool = True
    force: bool = False
    dry_run: bool = False
    device: str | None = None
    devices: str | int = "1"
    num_nodes: int = 1
    strategy: str = "auto"
    quiet: bool = False
    predictions: Sequence[str | os.PathLike] = ()
    max_archive_bytes: int | None = None
    train_views: str | os.PathLike | None = None
    nerfstudio_configs: Sequence[str | os.PathLike] = ()
    step: int | None = None
    protocol: str | None = None


@dataclass
class EvalSummary:
    """What rank 0 returns.

    Attributes:
        out: the output folder.
        evaluated: units evaluated in this run.
        skipped_done: units whose requested metrics were all done before.
        failures: ``"method/scene metric: message"`` for every (unit, metric) whose latest result is an error.
        error_groups: the errors of this run, one entry per distinct (metric, message):
            ``{"metric", "error", "units"}`` (``units``: ``"method/scene"`` in order). Nothing is printed for them
            while the run goes on; ``scenemetrics eval`` prints each group once at the end.
        unavailable: metric name -> why it could not run.
        files: name -> path of what was written (results.csv, leaderboard.csv, results.json, report).
    """

    out: Path
    evaluated: int = 0
    skipped_done: int = 0
    failures: list[str] = field(default_factory=list)
    error_groups: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
