"""Corrupted ground-truth wireframes: the "Pool 2" items of the wireframe preference study (Langerman et al.).

Four kinds at three severities. The paper describes the operations only in words, so every number in
:data:`CORRUPTION_PARAMS` is this library's choice; ``s`` is the ground truth's diameter (largest distance between
two vertices) and ``g`` a standard normal 3-vector:

* ``deform`` (split edges into several, perturb vertices, keep the topology): split ``ceil(f * E)`` random edges into
  ``k`` collinear pieces, then add ``sigma * s * g`` to every vertex.
* ``perturb`` (split a vertex into shifted copies and share its edges among them): replace ``ceil(f * V)`` random
  vertices by ``c`` copies at ``v + sigma * s * g``; a random permutation of the vertex's edges gives the first
  ``min(degree, c)`` edges to distinct copies and the rest to uniformly drawn copies; copies left without an edge
  are dropped (an isolated vertex keeps one copy).
* ``add`` (wrong edges): add ``ceil(f * E)`` edges between uniformly drawn non-adjacent vertex pairs.
* ``remove`` (missing corners): delete ``ceil(f * V)`` random vertices (at most ``V - 2``) and their edges.

Example:
    >>> from scenemetrics.agreement import corrupt
    >>> from scenemetrics.wireframe import synthetic_house
    >>> gt = synthetic_house(0)
    >>> len(corrupt(gt, "add", "low", seed=0).edges) - len(gt.edges)   # ceil(0.1 * 29)
    3
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from scenemetrics.checks import check_choice

__all__ = ["CORRUPTION_KINDS", "CORRUPTION_LEVELS", "CORRUPTION_PARAMS", "corrupt", "corruption_pool"]

CORRUPTION_KINDS = ("deform", "perturb", "add", "remove")
CORRUPTION_LEVELS = ("low", "medium", "high")

CORRUPTION_PARAMS: Mapping[str, Mapping[str, Mapping[str, float]]] = MappingProxyType(
    {
        "deform": MappingProxyType(
            {
                "low": MappingProxyType({"f": 0.25, "k": 2, "sigma": 0.005}),
                "medium": MappingProxyType({"f": 0.5, "k": 3, "sigma": 0.01}),
                "high": MappingProxyType({"f": 1.0, "k": 4, "sigma": 0.02}),
            }
        ),
        "perturb": MappingProxyType(
            {
                "low": MappingProxyType({"f": 0.25, "c": 2, "sigma": 0.01}),
                "medium": MappingProxyType({"f": 0.5, "c": 2, "sigma": 0.02}),
                "high": MappingProxyType({"f": 1.0, "c": 3, "sigma": 0.04}),
            }
        ),
        "add": MappingProxyType(
            {
                "low": MappingProxyType({"f": 0.1}),
                "medium": MappingProxyType({"f": 0.25}),
                "high": MappingProxyType({"f": 0.5}),
            }
        ),
        "remove": MappingProxyType(
            {
                "low": MappingProxyType({"f": 0.1}),
                "medium": MappingProxyType({"f": 0.25}),
                "high": MappingProxyType({"f": 0.5}),
            }
        ),
    }
)
"""Read-only ``{kind: {level: {parameter: value}}}``; override per call with ``corrupt(..., params=...)``."""

_LEVEL_ALIASES = {"med": "medium"}


def _level(level: str) -> str:
    lv = _LEVEL_ALIASES.get(level, level)
    if lv not in CORRUPTION_LEVELS:
        raise ValueError(f"level must be one of {CORRUPTION_LEVELS} (or 'med'), got {level!r}.")
    return lv


def _count(f: float, total: int) -> int:
    # the small epsilon keeps products such as 0.1 * 30 = 3.0000000000000004 from rounding up
    return math.ceil(f * total - 1e-9)


def corrupt(wireframe: Any, kind: str, level: str, seed: Any = 0, *, params: Mapping[str, float] | None = None):
    """A corrupted copy of a ground-truth wireframe (one of the 12 Pool-2 items).

    Args:
        wireframe: a :class:`scenemetrics.wireframe.Wireframe`, ``(vertices, edges)`` or a mapping with
            ``"vertices"``/``"edges"``.
        kind: ``"deform"``, ``"perturb"``, ``"add"`` or ``"remove"``.
        level: ``"low"``, ``"medium"`` (or ``"med"``) or ``"high"``.
        seed: int seed or ``numpy.random.Generator``.
        params: overrides of the level's parameters (keys of :data:`CORRUPTION_PARAMS` for that kind).

    Returns:
        A valid :class:`scenemetrics.wireframe.Wireframe`.

    Example:
        >>> from scenemetrics.wireframe import synthetic_house
        >>> gt = synthetic_house(0)
        >>> w = corrupt(gt, "remove", "medium", seed=1)
        >>> len(gt.vertices) - len(w.vertices)   # ceil(0.25 * 18)
        5
    """
    from scipy.spatial.distance import pdist

    from scenemetrics.wireframe import Wireframe, as_wireframe, validate_wireframe

    check_choice(kind, "kind", CORRUPTION_KINDS)
    lv = _level(level)
    p = dict(CORRUPTION_PARAMS[kind][lv])
    if params:
        unknown = set(params) - set(p)
        if unknown:
            raise ValueError(f"params for kind {kind!r} take {sorted(p)}, got unknown {sorted(unknown)}.")
        p.update(params)
    if not (0 <= p["f"] <= 1):
        raise ValueError(f"params f must be a fraction in [0, 1], got {p['f']!r}.")
    wf = as_wireframe(wireframe, name="wireframe")
    v, e = wf.vertices.copy(), wf.edges.copy()
    n_v, n_e = len(v), len(e)
    if n_v < 2:
        raise ValueError(f"wireframe must have at least 2 vertices to corrupt, got {n_v}.")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    diameter = float(pdist(v).max())

    if kind == "deform":
        k = int(p["k"])
        if k < 1:
            raise ValueError(f"params k must be an integer >= 1, got {p['k']!r}.")
        chosen = np.sort(rng.choice(n_e, size=_count(p["f"], n_e), replace=False)) if n_e else np.zeros(0, int)
        new_v, keep = [v], np.ones(n_e, dtype=bool)
        new_e = []
        nxt = n_v
        ts = np.arange(1, k) / k
        for idx in chosen:
            a, b = e[idx]
            pts = v[a] + ts[:, None] * (v[b] - v[a])
            chain = [a, *range(nxt, nxt + len(ts)), b]
            nxt += len(ts)
            new_v.append(pts)
            new_e.extend(itertools.pairwise(chain))
            keep[idx] = False
        v = np.concatenate(new_v)
        e = np.concatenate([e[keep], np.asarray(new_e, dtype=np.int64).reshape(-1, 2)])
        v = v + p["sigma"] * diameter * rng.standard_normal(v.shape)
    elif kind == "perturb":
        c = int(p["c"])
        if c < 1:
            raise ValueError(f"params c must be an integer >= 1, got {p['c']!r}.")
        chosen = rng.choice(n_v, size=_count(p["f"], n_v), replace=False)
        # endpoint[r, s]: which copy of edge r's s-th endpoint it is attached to (0 for unchosen vertices)
        endpoint_copy = np.zeros(e.shape, dtype=np.int64)
        offsets = {}
        for vert in chosen.tolist():
            offsets[vert] = p["sigma"] * diameter * rng.standard_normal((c, 3))
            inc = np.argwhere(e == vert)  # (edge row, side)
            order = rng.permutation(len(inc))
            for rank, r in enumerate(order.tolist()):
                copy = rank if rank < c else int(rng.integers(0, c))
                endpoint_copy[inc[r, 0], inc[r, 1]] = copy
        new_index: dict[tuple[int, int], int] = {}
        verts = []
        for vert in range(n_v):
            if vert not in offsets:
                new_index[(vert, 0)] = len(verts)
                verts.append(v[vert])
                continue
            used = sorted({int(endpoint_copy[r, s]) for r, s in np.argwhere(e == vert)}) or [0]
            for copy in used:
                new_index[(vert, copy)] = len(verts)
                verts.append(v[vert] + offsets[vert][copy])
        e = np.array(
            [[new_index[(int(e[r, s]), int(endpoint_copy[r, s]))] for s in range(2)] for r in range(n_e)],
            dtype=np.int64,
        ).reshape(-1, 2)
        v = np.asarray(verts, dtype=np.float64).reshape(-1, 3)
    elif kind == "add":
        want = _count(p["f"], n_e)
        adj = np.zeros((n_v, n_v), dtype=bool)
        adj[e[:, 0], e[:, 1]] = adj[e[:, 1], e[:, 0]] = True
        iu, ju = np.triu_indices(n_v, k=1)
        free = np.flatnonzero(~adj[iu, ju])
        if want > len(free):
            warnings.warn(
                f"corrupt(add): only {len(free)} non-adjacent vertex pairs left, adding those instead of {want}.",
                stacklevel=2,
            )
            want = len(free)
        pick = np.sort(rng.choice(free, size=want, replace=False))
        e = np.concatenate([e, np.column_stack([iu[pick], ju[pick]])]).astype(np.int64)
    else:  # remove
        if n_v < 3:
            raise ValueError(f"corrupt(remove) needs at least 3 vertices so that 2 remain, got {n_v}.")
        count = min(_count(p["f"], n_v), n_v - 2)
        gone = rng.choice(n_v, size=count, replace=False)
        alive = np.ones(n_v, dtype=bool)
        alive[gone] = False
        remap = np.cumsum(alive) - 1
        e = remap[e[alive[e].all(axis=1)]].reshape(-1, 2)
        v = v[alive]
    out = validate_wireframe(v, e, name="corrupted wireframe")
    return Wireframe(out.vertices, out.edges)


def corruption_pool(gt: Any, *, seed: int = 0) -> dict[str, Any]:
    """All 12 corrupted versions of a ground-truth wireframe, ``{"{kind}_{level}": Wireframe}``.

    Entry ``k`` (kinds outer, levels inner, in :data:`CORRUPTION_KINDS` x :data:`CORRUPTION_LEVELS` order) uses
    ``numpy.random.default_rng([seed, k])``, so one entry does not change when another's parameters do.

    Example:
        >>> from scenemetrics.wireframe import synthetic_house
        >>> sorted(corruption_pool(synthetic_house(0)))[:3]
        ['add_high', 'add_low', 'add_medium']
    """
    out = {}
    for k, (kind, level) in enumerate((a, b) for a in CORRUPTION_KINDS for b in CORRUPTION_LEVELS):
        out[f"{kind}_{level}"] = corrupt(gt, kind, level, np.random.default_rng([seed, k]))
    return out
