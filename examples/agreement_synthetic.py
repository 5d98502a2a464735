"""Agreement with people on synthetic data where the truth is known.

A latent quality ``q ~ N(0, 1)`` per item; the "human" mean opinion score is ``MOS = q + e_h`` (rater noise) and
each metric is ``q + e_m`` (its own noise), reported on its own scale. For jointly normal scores the population
correlations are known in closed form::

    rho   = 1 / sqrt((1 + s_h^2) (1 + s_m^2))      Pearson
    SRCC  = (6 / pi) * arcsin(rho / 2)             Spearman
    KRCC  = (2 / pi) * arcsin(rho)                 Kendall

The script runs the generic ``iqa`` protocol (5-parameter logistic fit, 95 % bootstrap intervals) and checks which
reported intervals cover their true value. Each interval covers with probability about 0.95, so across the nine
intervals some seeds miss one; the script says which. ``--out DIR`` also writes ``agreement.json`` and the plots
(``[viz]`` extra)::

    python examples/agreement_synthetic.py --items 200 --n-boot 1000 --out runs/agreement_synthetic
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from scenemetrics.agreement import agreement_table, ranking_plot, scatter_plot
from scenemetrics.agreement.stats import Logistic5Fit

RATER_NOISE = 0.3
METRICS = {  # name: (noise sd, higher_is_better, how the metric reports q + e)
    "sharp_metric": (0.4, True, lambda z: 30 + 4 * z),  # a PSNR-like scale
    "noisy_metric": (1.2, True, lambda z: z),
    "distance_metric": (0.7, False, lambda z: 5 - 2 * z),  # lower is better
}


def truth(noise: float) -> dict[str, float]:
    """Population PLCC (of the linear relation), SRCC and KRCC for a metric with noise sd ``noise``."""
    rho = 1 / math.sqrt((1 + RATER_NOISE**2) * (1 + noise**2))
    return {"plcc": rho, "srcc": 6 / math.pi * math.asin(rho / 2), "krcc": 2 / math.pi * math.asin(rho)}


def run(n_items: int = 200, n_boot: int = 1000, seed: int = 0, out: str | None = None, quiet: bool = False) -> dict:
    """Simulate, run the ``iqa`` protocol and return ``{metric: {stat: {"truth", "estimate", "ci", "covered"}}}``."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=n_items)
    items = [f"item{k:04d}" for k in range(n_items)]
    mos = dict(zip(items, (q + RATER_NOISE * rng.normal(size=n_items)).tolist(), strict=True))
    scores: dict[str, Any] = {}
    for name, (noise, hib, scale) in METRICS.items():
        values = scale(q + noise * rng.normal(size=n_items))
        scores[name] = {"higher_is_better": hib, "scores": dict(zip(items, values.tolist(), strict=True))}
    table = agreement_table(scores, mos, protocol="iqa", n_boot=n_boot, seed=seed, show_progress=not quiet)
    report: dict[str, dict[str, Any]] = {}
    for name, (noise, _, _) in METRICS.items():
        m = table["metrics"][name]
        report[name] = {}
        for stat, value in truth(noise).items():
            low, high = m["ci"][stat]
            report[name][stat] = {
                "truth": value,
                "estimate": m[stat],
                "ci": [low, high],
                "covered": low <= value <= high,
            }
    if not quiet:
        for name, stats in report.items():
            cells = "  ".join(
                f"{s.upper()} {c['estimate']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}] truth {c['truth']:.3f}"
                f"{'' if c['covered'] else ' (missed)'}"
                for s, c in stats.items()
            )
            print(f"{name:<16} {cells}")
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "agreement.json").write_text(json.dumps({**table, "truth": report}, indent=2, allow_nan=False))
        for name, (_, hib, _) in METRICS.items():
            m = table["metrics"][name]
            x = np.array([scores[name]["scores"][it] for it in items])
            label = name if hib else f"-{name}"
            scatter_plot(x if hib else -x, [mos[it] for it in items], folder / f"scatter_{name}.png", metric=label,
                         fit=Logistic5Fit(tuple(m["fit_params"]), True), plcc=m["plcc"], srcc=m["srcc"])  # fmt: skip
        ranking_plot({n: table["metrics"][n]["srcc"] for n in METRICS}, folder / "ranking.png", statistic="SRCC",
                     ci={n: table["metrics"][n]["ci"]["srcc"] for n in METRICS},
                     title="Synthetic study: SRCC with 95 % bootstrap intervals")  # fmt: skip
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200, help="number of items (default: 200)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (default: 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="folder for agreement.json and the plots")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    report = run(args.items, args.n_boot, args.seed, args.out, args.quiet)
    missed = [(n, s) for n, stats in report.items() for s, c in stats.items() if not c["covered"]]
    print("every interval covers its true value" if not missed else f"intervals that missed: {missed}")


if __name__ == "__main__":
    main()
