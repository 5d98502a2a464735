"""Plots of agreement results (matplotlib, from the ``[viz]`` extra, imported only when a plot is made).

Example:
    >>> import numpy as np, os, tempfile
    >>> from scenemetrics.agreement import scatter_plot
    >>> x = np.linspace(0, 1, 20)
    >>> path = scatter_plot(x, 2 * x + 1, os.path.join(tempfile.mkdtemp(), "s.png"), metric="toy")  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["VIZ_HINT", "ranking_plot", "scatter_plot", "stability_plot", "sweep_plot"]

VIZ_HINT = 'plots need matplotlib: pip install "scenemetrics[viz]"'


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(VIZ_HINT) from err
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    _plt().close(fig)
    return p


def _fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.3f}"


def scatter_plot(
    pred: Any,
    human: Any,
    path: str | os.PathLike,
    *,
    metric: str = "metric",
    fit: Any = None,
    plcc: float | None = None,
    srcc: float | None = None,
    human_label: str = "human score (MOS, higher = better)",
    hexbin: bool = False,
    xlabel: str | None = None,
) -> Path:
    """Metric vs human scatter (or hexbin for many pixels), with the fitted curve and PLCC/SRCC in the title.

    Args:
        pred: metric values as plotted on the x axis (already oriented if the caller wants that).
        human: human scores.
        path: PNG file to write.
        metric: name for the x label and title.
        fit: a callable ``q(x)`` (e.g. :class:`~scenemetrics.agreement.Logistic5Fit`) drawn as a curve.
        plcc: PLCC for the title.
        srcc: SRCC for the title.
        human_label: y label.
        hexbin: draw a hexbin density (for pixel clouds) instead of points.
        xlabel: x label (default: ``"<metric> (metric score)"``).

    Returns:
        The written path.
    """
    plt = _plt()
    x, y = np.asarray(pred, dtype=np.float64).reshape(-1), np.asarray(human, dtype=np.float64).reshape(-1)
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    if hexbin:
        hb = ax.hexbin(x, y, gridsize=50, bins="log", cmap="viridis", mincnt=1)
        fig.colorbar(hb, ax=ax, label="pixels (log scale)")
    else:
        ax.scatter(x, y, s=22, alpha=0.8, color="tab:blue", edgecolor="white", linewidth=0.5, label="items")
    if fit is not None and len(x) and np.ptp(x) > 0:
        xs = np.linspace(x.min(), x.max(), 200)
        ax.plot(xs, fit(xs), color="tab:red", linewidth=2, label="fitted curve")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel(xlabel or f"{metric} (metric score)")
    ax.set_ylabel(human_label)
    ax.set_title(f"{metric}: PLCC {_fmt(plcc)}, SRCC {_fmt(srcc)}")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def ranking_plot(
    values: Mapping[str, float],
    path: str | os.PathLike,
    *,
    statistic: str = "SRCC",
    ci: Mapping[str, Sequence[float]] | None = None,
    reference: float | None = None,
    reference_label: str = "human-human agreement",
    title: str | None = None,
) -> Path:
    """Horizontal bars of a statistic per metric, best on top, with optional CI whiskers and a dashed reference line.

    Args:
        values: ``{metric: value}`` (NaN/None drawn as an empty bar labelled n/a).
        path: PNG file to write.
        statistic: x-axis label.
        ci: optional ``{metric: (low, high)}``.
        reference: optional value drawn as a dashed vertical line (e.g. the mean human-human agreement).
        reference_label: legend text of that line.
        title: plot title.

    Returns:
        The written path.
    """
    plt = _plt()

    def val(v: Any) -> float:
        return float(v) if v is not None and math.isfinite(float(v)) else math.nan

    names = sorted(values, key=lambda k: -val(values[k]) if math.isfinite(val(values[k])) else math.inf)
    vals = np.array([val(values[k]) for k in names])
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(names) + 1.6))
    ypos = np.arange(len(names))[::-1]
    ax.barh(ypos, np.nan_to_num(vals), color="tab:blue", alpha=0.85)
    text_x = np.nan_to_num(vals).copy()
    if ci:
        lo = np.array([val((ci.get(k) or [math.nan, math.nan])[0]) for k in names])
        hi = np.array([val((ci.get(k) or [math.nan, math.nan])[1]) for k in names])
        ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(vals)
        if ok.any():
            ax.errorbar(vals[ok], ypos[ok], xerr=[vals[ok] - lo[ok], hi[ok] - vals[ok]], fmt="none", ecolor="black",
                        capsize=3, label="confidence interval")  # fmt: skip
            text_x[ok] = np.maximum(text_x[ok], hi[ok])  # labels right of the whiskers
    for yp, v, tx in zip(ypos, vals, text_x, strict=True):
        ax.text(tx, yp, f"  {_fmt(v)}", va="center", fontsize=8)
    if reference is not None and math.isfinite(reference):
        ax.axvline(reference, linestyle="--", color="tab:red", label=f"{reference_label} ({reference:.3f})")
    ax.set_yticks(ypos)
    ax.set_yticklabels(names)
    ax.set_xlabel(statistic)
    ax.set_ylabel("metric")
    lo_x = min(0.0, float(np.nanmin(vals)) if np.isfinite(vals).any() else 0.0)
    ax.set_xlim(lo_x, max(1.0, float(np.nanmax(vals)) if np.isfinite(vals).any() else 1.0) * 1.12)
    if title:
        ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def stability_plot(result: Any, path: str | os.PathLike, *, title: str | None = None) -> Path:
    """Mean Kendall tau and its interval against the subsample size, with the threshold and the minimal size.

    Args:
        result: a :class:`~scenemetrics.agreement.StabilityResult`.
        path: PNG file to write.
        title: plot title (default names the unit).

    Returns:
        The written path.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    order = np.argsort(result.sizes)
    s = np.asarray(result.sizes)[order]
    ax.fill_between(s, np.asarray(result.tau_low)[order], np.asarray(result.tau_high)[order], alpha=0.25,
                    color="tab:blue", label="interval over resamples")  # fmt: skip
    ax.plot(s, np.asarray(result.tau_mean)[order], marker="o", markersize=3, color="tab:blue", label="mean tau")
    ax.axhline(result.threshold, linestyle="--", color="tab:red", label=f"threshold {result.threshold:g}")
    if result.min_size is not None:
        ax.axvline(result.min_size, linestyle=":", color="black", label=f"smallest stable size {result.min_size}")
    unit = {"rater": "raters", "house": "houses", "comparison": "comparisons per rater"}.get(result.unit, result.unit)
    ax.set_xlabel(f"number of {unit} in the subsample")
    ax.set_ylabel("Kendall tau-b vs ranking from all data")
    ax.set_title(title or f"Ranking stability over {unit}")
    ax.set_ylim(min(0.0, float(np.nanmin(result.tau_low)) if np.isfinite(result.tau_low).any() else 0.0), 1.02)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


_PARAM_TEXT = {
    "blur": lambda v: f"sigma {v:g}*",
    "hue": lambda v: f"{v * 360:g} deg",
    "noise": lambda v: f"sigma {v:g}",
    "saltpepper": lambda v: f"{v * 100:g} % px",
}


def sweep_plot(
    table: Mapping[str, Mapping[str, Mapping[str, Any]]],
    path: str | os.PathLike,
    *,
    higher_is_better: Mapping[str, bool | None] | None = None,
    max_rows: int = 40,
    title: str | None = None,
) -> Path:
    """A degradation sweep: one panel per (metric, degradation), score against level, with the statistics.

    Each panel draws every row of the sweep (a view, or a scene for scene-level metrics) as a thin line and their
    mean as a thick one; its title gives Spearman's rho and the fraction of rows that get worse at every level.
    Infinite scores (PSNR of an unchanged view) are left out of the lines and said in the panel.

    Args:
        table: ``metric -> degradation -> {"spearman", "monotone_fraction", "n", "unit", "levels", "params", "mean",
            "rows"}`` (:func:`scenemetrics.evaluation.sweep.sweep_table`).
        path: PNG file to write.
        higher_is_better: the direction of each metric, shown in its axis label.
        max_rows: at most this many thin lines per panel (the first ones).
        title: figure title.

    Returns:
        The written path.
    """
    plt = _plt()
    metrics = list(table)
    kinds = list(dict.fromkeys(k for m in metrics for k in table[m]))
    fig, axes = plt.subplots(len(metrics), len(kinds), figsize=(3.3 * len(kinds) + 0.6, 2.7 * len(metrics) + 0.8),
                             squeeze=False)  # fmt: skip
    hib = higher_is_better or {}
    for i, name in enumerate(metrics):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            s = table[name].get(kind)
            if s is None:
                ax.set_axis_off()
                continue
            levels = np.asarray(s["levels"], dtype=np.float64)
            rows = np.asarray(list(s["rows"].values()), dtype=np.float64).reshape(-1, len(levels))
            shown = rows[:max_rows].copy()
            shown[~np.isfinite(shown)] = np.nan
            for k, row in enumerate(shown):
                label = f"one {s['unit']}" if k == 0 else None
                ax.plot(levels, row, color="tab:blue", alpha=0.35, linewidth=0.8, label=label)
            mean = np.asarray(s["mean"], dtype=np.float64)
            finite = np.where(np.isfinite(mean), mean, np.nan)
            label = f"mean of the {s['unit']}s"
            ax.plot(levels, finite, color="tab:red", linewidth=2.2, marker="o", markersize=4, label=label)
            infinite = [int(lv) for lv, v in zip(levels, mean, strict=True) if np.isinf(v)]
            if infinite:
                ax.text(0.02, 0.04, f"level {', '.join(map(str, infinite))}: score +inf (unchanged view)",
                        transform=ax.transAxes, fontsize=7, color="dimgray")  # fmt: skip
            rho, mono = s["spearman"], s["monotone_fraction"]
            mono_text = "n/a" if mono is None or not math.isfinite(mono) else f"{100 * mono:.0f}%"
            ax.set_title(f"{kind}: rho {_fmt(rho)}, monotone {mono_text}\n(n = {s['n']} {s['unit']}s)", fontsize=9)
            params = s.get("params") or []
            ticks = ["0\noriginal"] + [
                f"{int(lv)}\n{_PARAM_TEXT.get(kind, lambda v: f'{v:g}')(p)}" if p is not None else str(int(lv))
                for lv, p in zip(levels[1:], params[1:], strict=False)
            ]
            ax.set_xticks(levels)
            ax.set_xticklabels(ticks, fontsize=7)
            if i == len(metrics) - 1:
                ax.set_xlabel("degradation level", fontsize=8)
            if j == 0:
                arrow = {True: " (higher = better)", False: " (lower = better)"}.get(hib.get(name), "")
                ax.set_ylabel(f"{name}{arrow}", fontsize=9)
            ax.tick_params(axis="y", labelsize=7)
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(loc="best", fontsize=7)
    fig.suptitle(title or "Controlled-degradation sweep: does each metric get worse at every level?", fontsize=11)
    if "blur" in kinds:
        fig.text(0.005, 0.003, "* blur sigma in pixels at a 256-pixel shorter side, scaled with the image", fontsize=7,
                 color="dimgray")  # fmt: skip
    fig.tight_layout(rect=(0, 0.015, 1, 1))  # room for the footnote
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p
