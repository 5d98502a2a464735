"""One protocol preset per paper, and :func:`agreement_table`, which turns metric scores and human data into the
paper-style table (a JSON-ready dict).

=============  ==============================  ==============================================================
protocol       human data                      statistics
=============  ==============================  ==============================================================
``osim``       mean opinion scores per item    SRCC (PLCC, KRCC also reported), no fit; a metric's rows are
                                               averaged per item (model) first; ``COLMAP`` excluded
``wireframe``  pairwise comparisons            agreement with and without ties (mean over raters), plus the
                                               human side: win rates, Bradley-Terry, Elo, quality factor,
                                               rater-rater agreement and self-consistency
``prism``      comparisons with an ``aspect``  Pearson of the metric's preference sign with the majority vote
                                               per aspect (``vote_correlation(kind="sign")``), no fit
``puzzlesim``  human artifact maps             per-image pixel PLCC (logistic fit) and SRCC; mean per group;
                                               mean and std over images
``iqa``        mean opinion scores             PLCC, SRCC, KRCC, RMSE with a logistic fit and 95 % bootstrap
                                               intervals (the generic image-quality convention)
=============  ==============================  ==============================================================

Example:
    >>> from scenemetrics.agreement import agreement_table
    >>> scores = {"psnr": {"higher_is_better": True, "scores": {"a": 30, "b": 25, "c": 20, "d": 22}}}
    >>> table = agreement_table(scores, {"a": 4.5, "b": 3.0, "c": 1.0, "d": 2.5}, protocol="osim")
    >>> table["metrics"]["psnr"]["srcc"], table["ranking"]
    (1.0, ['psnr'])
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from scenemetrics.agreement.io import Comparisons, MetricScores

__all__ = ["PROTOCOLS", "Protocol", "agreement_table", "align_mos"]


@dataclass(frozen=True)
class Protocol:
    """How a paper measured agreement with people.

    Attributes:
        name: protocol name.
        human: kind of human data: ``"mos"``, ``"comparisons"`` or ``"maps"``.
        main: the statistic that ranks the metrics.
        fit: PLCC fit (``"none"``, ``"linear"``, ``"logistic5"``, ``"logistic5-maxcorr"``).
        aggregate: ``"pooled"`` (one statistic over all samples) or ``"mean"`` (per group, then the mean).
        pool_items: average a metric's rows per item (e.g. over scenes) before the statistics.
        ci: bootstrap confidence level, or ``None``.
        n_boot: bootstrap replicates.
        exclude: items left out (reported in the table's config).
        pred_is_quality: maps protocol: metric maps are high = plausible (negated before the statistics).
        tie_tol: pairwise protocols: metric score differences up to this are a tie.
        vote_kind: ``prism``: ``"sign"`` or ``"margin"``.
        description: one line for humans.
    """

    name: str
    human: str
    main: str
    fit: str = "none"
    aggregate: str = "pooled"
    pool_items: bool = False
    ci: float | None = None
    n_boot: int = 1000
    exclude: tuple[str, ...] = ()
    pred_is_quality: bool = True
    tie_tol: float = 0.0
    vote_kind: str = "sign"
    description: str = ""


PROTOCOLS: Mapping[str, Protocol] = MappingProxyType(
    {
        "osim": Protocol(
            "osim", "mos", "srcc", fit="none", pool_items=True, exclude=("COLMAP",),
            description="OSIM (Uchida et al.): Spearman across models of item-averaged metric vs MOS; COLMAP excluded",
        ),
        "wireframe": Protocol(
            "wireframe", "comparisons", "agreement",
            description="Wireframe (Langerman et al.): agreement with pairwise preferences, mean over raters",
        ),
        "prism": Protocol(
            "prism", "comparisons", "vote_correlation_mean", vote_kind="sign",
            description="PRISM (Stern et al.): Pearson of metric preference sign vs majority vote, per aspect",
        ),
        "puzzlesim": Protocol(
            "puzzlesim", "maps", "plcc", fit="logistic5", aggregate="mean", pred_is_quality=True,
            description="PuzzleSim (Hermann et al.): pixel PLCC (logistic fit) and SRCC vs human artifact maps",
        ),
        "iqa": Protocol(
            "iqa", "mos", "srcc", fit="logistic5", ci=0.95, n_boot=1000,
            description="Generic IQA: PLCC/SRCC/KRCC/RMSE with a 5-parameter logistic fit and 95 % bootstrap CIs",
        ),
    }
)  # fmt: skip
"""The presets by name (read-only)."""

_EXTRA_OPTIONS = ("seed", "show_progress", "paper", "groups", "drop_ties")


def _protocol(protocol: str | Protocol, overrides: Mapping[str, Any]) -> tuple[Protocol, dict[str, Any]]:
    if isinstance(protocol, Protocol):
        base = protocol
    elif protocol in PROTOCOLS:
        base = PROTOCOLS[protocol]
    else:
        raise ValueError(f"protocol must be one of {tuple(PROTOCOLS)}, got {protocol!r}.")
    fields = {f.name for f in dataclasses.fields(Protocol)} - {"name", "human"}
    unknown = set(overrides) - fields - set(_EXTRA_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; valid: {sorted(fields | set(_EXTRA_OPTIONS))}.")
    proto = dataclasses.replace(base, **{k: v for k, v in overrides.items() if k in fields})
    if isinstance(proto.exclude, str):
        proto = dataclasses.replace(proto, exclude=(proto.exclude,))
    extra = {k: overrides[k] for k in _EXTRA_OPTIONS if k in overrides}
    return proto, extra


def _metric_scores(name: str, entry: Any) -> MetricScores:
    if isinstance(entry, MetricScores):
        return entry
    if isinstance(entry, Mapping) and isinstance(entry.get("scores"), Mapping):
        items = [str(k) for k in entry["scores"]]
        groups_map = entry.get("groups") or {}
        return MetricScores(
            entry.get("higher_is_better"),
            items,
            np.asarray([float(v) for v in entry["scores"].values()], dtype=np.float64),
            [str(groups_map[i]) if i in groups_map else None for i in items],
        )
    raise ValueError(
        f"scores[{name!r}] must be read_scores' MetricScores or {{'higher_is_better': bool, 'scores': {{item: x}}}}."
    )


def _hib(name: str, ms: MetricScores) -> bool:
    if ms.higher_is_better is None:
        raise ValueError(
            f"higher_is_better is not given for metric {name!r}; add a higher_is_better column (true/false) or key."
        )
    return bool(ms.higher_is_better)


def align_mos(
    ms: MetricScores, human: Mapping[Any, float], *, pool_items: bool, exclude: Sequence[str] = ()
) -> tuple[list[str], np.ndarray, np.ndarray, list[str] | None]:
    """Pair a metric's rows with human scores: ``(items, metric values, human values, groups or None)``.

    With ``pool_items`` the rows of each item are averaged (over groups) first. Human scores keyed by
    ``(group, item)`` are used per row when present. An item without a human score raises ``ValueError``.

    Example:
        >>> from scenemetrics.agreement.io import MetricScores
        >>> ms = MetricScores(True, ["a", "a", "b"], np.array([1.0, 3.0, 5.0]), ["s1", "s2", "s1"])
        >>> items, x, y, g = align_mos(ms, {"a": 1.0, "b": 2.0}, pool_items=True)
        >>> items, x.tolist(), y.tolist(), g
        (['a', 'b'], [2.0, 5.0], [1.0, 2.0], None)
    """
    keep = [k for k, it in enumerate(ms.items) if it not in set(exclude)]
    items = [ms.items[k] for k in keep]
    vals = ms.scores[keep]
    groups = [ms.groups[k] for k in keep]

    def human_of(item: str, group: str | None) -> float:
        if group is not None and (group, item) in human:
            return float(human[(group, item)])
        if item in human:
            return float(human[item])
        raise ValueError(
            f"human scores have no entry for item {item!r}" + (f" (group {group!r})" if group else "") + "."
        )

    if pool_items:
        order = list(dict.fromkeys(items))
        pairs = list(zip(items, groups, strict=True))
        x = np.array([vals[[k for k, it in enumerate(items) if it == o]].mean() for o in order])
        y = np.array(
            [human_of(o, None) if o in human else np.mean([human_of(o, g) for it, g in pairs if it == o])
             for o in order]
        )  # fmt: skip
        return order, x, y, None
    y = np.array([human_of(it, g) for it, g in zip(items, groups, strict=False)])
    has_groups = any(g is not None for g in groups)
    return items, vals, y, ([str(g) for g in groups] if has_groups else None)


def _ranking(metrics: Mapping[str, Mapping[str, Any]], main: str) -> list[str]:
    def key(name: str) -> float:
        v = metrics[name].get(main)
        return -v if isinstance(v, (int, float)) and v is not None and math.isfinite(v) else math.inf

    return sorted(metrics, key=key)


def agreement_table(
    scores: Mapping[str, Any], human: Any, *, protocol: str | Protocol = "iqa", **overrides: Any
) -> dict:
    """Agreement of every metric with the human data, as a paper-style table (JSON-ready; NaN written as ``None``).

    Args:
        scores: ``{metric: MetricScores}`` (:func:`~scenemetrics.agreement.read_scores`) or
            ``{metric: {"higher_is_better": bool, "scores": {item: score}, "groups": {item: group}}}``; for the
            ``puzzlesim`` protocol ``{metric: pred_maps}`` (a list of 2-D maps or an ``(N, h, w)`` array).
        human: ``{item: score}`` (or ``{(group, item): score}``) for MOS protocols; a
            :class:`~scenemetrics.agreement.io.Comparisons` for ``wireframe`` / ``prism`` (metric scores are then
            per ``(house, item)``: the score file's ``group`` is the house); ``(N, H, W)`` human maps for
            ``puzzlesim``.
        protocol: a name of :data:`PROTOCOLS` or a :class:`Protocol`.
        **overrides: any :class:`Protocol` field (``fit``, ``aggregate``, ``ci``, ``n_boot``, ``exclude``, ...), and
            ``seed``, ``show_progress``, ``paper`` (a key of ``PAPER_TARGETS`` to compare with), ``groups`` (maps),
            ``drop_ties`` (pairwise).

    Returns:
        ``{"protocol", "config", "n_items", "metrics": {name: {...}}, "ranking", "paper"}`` (+ ``"human"`` for
        pairwise protocols).
    """
    from scenemetrics import __version__
    from scenemetrics.agreement.stats import _json_ready
    from scenemetrics.agreement.targets import compare_to_paper

    proto, extra = _protocol(protocol, overrides)
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty mapping metric -> scores.")
    seed = int(extra.get("seed", 0))
    show = bool(extra.get("show_progress", False))
    config: dict[str, Any] = {**dataclasses.asdict(proto), "seed": seed, "version": __version__}
    out: dict[str, Any] = {"protocol": proto.name, "config": config}
    if proto.human == "mos":
        metrics, n_items = _mos_table(scores, human, proto, seed, show, config)
    elif proto.human == "comparisons":
        metrics, n_items, human_side = _pairwise_table(scores, human, proto, bool(extra.get("drop_ties", False)))
        out["human"] = human_side
    else:
        metrics, n_items = _maps_table(scores, human, proto, extra.get("groups"), seed)
    out["n_items"] = n_items
    out["metrics"] = metrics
    out["ranking"] = _ranking(metrics, proto.main)
    out = _json_ready(out)
    paper = extra.get("paper")
    out["paper"] = _json_ready(compare_to_paper(out, paper)) if paper else None
    return out


def _mos_table(scores, human, proto: Protocol, seed: int, show: bool, config: dict) -> tuple[dict, int]:
    from scenemetrics.agreement.stats import correlations

    if not isinstance(human, Mapping):
        raise ValueError(f"protocol {proto.name!r} needs human scores as a mapping item -> score.")
    metrics = {}
    n_items = 0
    excluded: set[str] = set()
    for name, entry in scores.items():
        ms = _metric_scores(name, entry)
        hib = _hib(name, ms)
        excluded |= set(ms.items) & set(proto.exclude)
        items, x, y, groups = align_mos(ms, human, pool_items=proto.pool_items, exclude=proto.exclude)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = correlations(
                x, y, fit=proto.fit, higher_is_better=hib, groups=groups, aggregate=proto.aggregate, ci=proto.ci,
                n_boot=proto.n_boot, seed=seed, show_progress=show,
            )  # fmt: skip
        for w in caught:  # the same warnings, naming the metric they concern
            warnings.warn(f"metric {name!r}: {w.message}", w.category, stacklevel=3)
        d = res.to_dict()
        d["higher_is_better"] = hib
        metrics[name] = d
        n_items = max(n_items, len(items))
    config["excluded_items"] = sorted(excluded)
    return metrics, n_items


def _pair_scores(name: str, entry: Any) -> tuple[dict[tuple[str, str], float], bool]:
    ms = _metric_scores(name, entry)
    hib = _hib(name, ms)
    out = {}
    for it, g, v in zip(ms.items, ms.groups, ms.scores.tolist(), strict=False):
        out[(g if g is not None else "0", it)] = v
    return out, hib


def _pairwise_table(scores, human, proto: Protocol, drop_ties: bool) -> tuple[dict, int, dict]:
    from scenemetrics.agreement._checks import comparison_table
    from scenemetrics.agreement.pairwise import (
        majority_vote,
        pairwise_agreement,
        rater_agreement,
        self_consistency,
        vote_correlation,
    )

    comps = human if isinstance(human, Comparisons) else Comparisons.from_table(comparison_table(human, "human"))
    t = comps.table
    metrics: dict[str, dict[str, Any]] = {}
    if proto.name == "prism" or proto.main.startswith("vote_correlation"):
        aspects = comps.aspects or ["all"] * len(t)
        for name, entry in scores.items():
            lookup, hib = _pair_scores(name, entry)
            per_aspect = {}
            for aspect in dict.fromkeys(aspects):
                rows = np.array([a == aspect for a in aspects])
                mv = _presented_orientation(majority_vote(t[rows]), t[rows])
                houses, ii, jj = mv[:, 0].astype(int), mv[:, 1].astype(int), mv[:, 2].astype(int)

                def get(h: int, it: int, lookup=lookup, name=name) -> float:
                    key = (comps.houses[h], comps.items[it])
                    if key not in lookup:
                        raise ValueError(f"scores[{name!r}] has no score for (house, item) = {key}.")
                    return lookup[key]

                a = np.array([get(h, i) for h, i in zip(houses, ii, strict=False)])
                b = np.array([get(h, j) for h, j in zip(houses, jj, strict=False)])
                votes = mv[:, 5] if proto.vote_kind == "margin" else mv[:, 3]
                per_aspect[aspect] = vote_correlation(a, b, votes, higher_is_better=hib, kind=proto.vote_kind,
                                                      tie_tol=proto.tie_tol)  # fmt: skip
            vals = np.array(list(per_aspect.values()))
            metrics[name] = {
                "vote_correlation": per_aspect,
                "vote_correlation_mean": float(np.nanmean(vals)) if np.isfinite(vals).any() else math.nan,
                "higher_is_better": hib,
            }
        return metrics, len(t), {"n_comparisons": len(t), "aspects": list(dict.fromkeys(aspects))}

    for name, entry in scores.items():
        lookup, hib = _pair_scores(name, entry)
        res = pairwise_agreement(lookup, comps, higher_is_better=hib, tie_tol=proto.tie_tol, drop_ties=drop_ties)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            nt = pairwise_agreement(lookup, comps, higher_is_better=hib, tie_tol=proto.tie_tol, drop_ties=True)
        metrics[name] = {
            "agreement": res.agreement, "pooled": res.pooled, "agreement_no_ties": nt.agreement,
            "pooled_no_ties": nt.pooled, "per_rater": res.per_rater, "n": res.n, "n_human_ties": res.n_human_ties,
            "n_metric_ties": res.n_metric_ties, "higher_is_better": hib,
        }  # fmt: skip
    return metrics, len(t), _human_side(comps, rater_agreement, self_consistency)


def _single_thread(fn: Any, *args: Any) -> Any:
    """Run ``fn`` with one torch thread: Bradley-Terry's tensors are tiny, and on a busy CPU several threads make
    each optimiser step many times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(before)


def _presented_orientation(mv: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Majority-vote rows turned back to the orientation in which each pair was first presented (A = left).

    The correlation of preference signs with votes depends on which candidate is "A"; sorting ids would put the
    same item first in every pair and make the sign constant whenever ids follow quality.
    """
    first: dict[tuple[int, int, int], bool] = {}
    for h, i, j in t[:, 1:4].astype(np.int64).tolist():
        first.setdefault((h, min(i, j), max(i, j)), i > j)
    out = mv.copy()
    flip = np.array([first[(int(h), int(i), int(j))] for h, i, j in mv[:, :3]], dtype=bool)
    out[flip, 1], out[flip, 2] = mv[flip, 2], mv[flip, 1]
    out[flip, 3] = 1.0 - mv[flip, 3]
    out[flip, 5] = 1.0 - mv[flip, 5]
    return out


def _human_side(comps: Comparisons, rater_agreement, self_consistency) -> dict[str, Any]:
    """The wireframe paper's human-side numbers: win rates, Bradley-Terry, Elo, quality factor, reliability."""
    from scenemetrics.wireframe import bradley_terry, quality_factor, win_rate_matrix, win_rates

    t = comps.table
    n_items = int(t[:, 2:4].max()) + 1
    names = list(comps.items) + [str(k) for k in range(len(comps.items), n_items)]
    wr = win_rates(t[:, 2:], n_items)
    bt = _single_thread(bradley_terry, t[:, 2:], n_items)
    raters = np.unique(t[:, 0].astype(int))
    side: dict[str, Any] = {
        "win_rate": dict(zip(names, wr.tolist(), strict=False)),
        "bt_theta": dict(zip(names, bt.theta.tolist(), strict=False)),
        "bt_win_rate": dict(zip(names, bt.implied_win_rates.tolist(), strict=False)),
        "elo": dict(zip(names, bt.elo.tolist(), strict=False)),
    }
    if len(raters) >= 2:
        mat = win_rate_matrix([t[t[:, 0] == r][:, 2:] for r in raters], n_items)
        full = np.isfinite(mat).all(axis=1)
        if full.sum() >= 2:
            qf = np.full(n_items, math.nan)
            qf[full] = quality_factor(mat[full])
            side["quality_factor"] = dict(zip(names, qf.tolist(), strict=False))
        _rnames, m = rater_agreement(comps)
        off = m[~np.eye(len(m), dtype=bool)]
        side["rater_agreement_mean"] = float(np.nanmean(off)) if np.isfinite(off).any() else math.nan
        _rnames_nt, m_nt = rater_agreement(comps, drop_ties=True)
        off = m_nt[~np.eye(len(m_nt), dtype=bool)]
        side["rater_agreement_no_ties_mean"] = float(np.nanmean(off)) if np.isfinite(off).any() else math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        side["self_consistency"] = self_consistency(comps)
    return side


def _maps_table(scores, human, proto: Protocol, groups: Any, seed: int) -> tuple[dict, int]:
    from scenemetrics.agreement.maps import map_agreement

    metrics = {}
    n = 0
    for name, preds in scores.items():
        pq = proto.pred_is_quality
        if isinstance(preds, Mapping):
            pq = bool(preds.get("pred_is_quality", pq))
            preds = preds["maps"]
        res = map_agreement(preds, human, pred_is_quality=pq, fit=proto.fit, groups=groups, seed=seed)
        metrics[name] = {
            "plcc": res.plcc, "plcc_std": res.plcc_std, "srcc": res.srcc, "srcc_std": res.srcc_std,
            "plcc_group_std": res.plcc_group_std, "srcc_group_std": res.srcc_group_std, "per_group": res.per_group,
            "per_image": res.per_image, "n_valid": res.n_valid, "pred_is_quality": pq,
        }  # fmt: skip
        n = len(res.per_image)
    return metrics, n
