"""WED, the wireframe edit distance, in its variants (``WED_VARIANTS``: the corrected form, S23DR 2024's, AP-style).

Example:
    >>> from scenemetrics.wireframe import wed
    >>> square = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
    >>> edges = [[0, 1], [1, 2], [2, 3], [3, 0]]
    >>> wed(square, edges, square, edges)
    0.0
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist, pdist

from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.edges import _member
from scenemetrics.wireframe.options import (
    check_wed_options,
)
from scenemetrics.wireframe.segments import _edge_lengths
from scenemetrics.wireframe.types import (
    _pair,
    edge_codes,
)

__all__ = ["wed"]


def _diameter(g: np.ndarray) -> float:
    if len(g) < 2:
        return 0.0
    pts = g
    if len(g) > 2000:  # the diameter is attained on the convex hull; avoids an O(N^2) matrix
        from scipy.spatial import ConvexHull, QhullError

        try:
            pts = g[ConvexHull(g).vertices]
        except QhullError:  # flat or degenerate point set: fall back to all pairs
            pts = g
    return float(pdist(pts).max())


def _preregister(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Match the prediction's mean and (single) scale to the GT's; no rotation (the 2024 scorer's formula)."""
    mu_g, mu_p = g.mean(axis=0), p.mean(axis=0)
    sd_g, sd_p = np.std(g, axis=0), np.std(p, axis=0)
    sd_p[(sd_p == 0) | np.isnan(sd_p)] = 1.0
    sd_g[(sd_g == 0) | np.isnan(sd_g)] = 1.0
    return (p - mu_p) / np.linalg.norm(sd_p) * np.linalg.norm(sd_g) + mu_g


def _wed_assignment(d: np.ndarray, variant: str) -> tuple[np.ndarray, np.ndarray]:
    n_p = d.shape[0]
    if n_p == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if variant == "corrected":
        r, c = linear_sum_assignment(d)
        return r.astype(np.int64), c.astype(np.int64)
    nearest_g = np.argmin(d, axis=1)
    if variant == "mnn":
        nearest_p = np.argmin(d, axis=0)
        rows = np.flatnonzero(nearest_p[nearest_g] == np.arange(n_p))
        return rows, nearest_g[rows]
    # "nearest": every prediction snaps to its nearest GT vertex, the closest snapper (lowest index) keeps it
    idx = np.arange(n_p)
    order = np.lexsort((idx, d[idx, nearest_g], nearest_g))
    g_sorted = nearest_g[order]
    first = np.ones(n_p, dtype=bool)
    first[1:] = g_sorted[1:] != g_sorted[:-1]
    rows = order[first]
    return rows, nearest_g[rows]


def _wed_costs(
    P: np.ndarray,
    p_edges: np.ndarray,
    G: np.ndarray,
    g_edges: np.ndarray,
    g_len: np.ndarray,
    d: np.ndarray,
    variant: str,
    cv_ins: float,
    cv_del: float,
    ce: float,
) -> float:
    n_p, n_g = len(P), len(G)
    rows, cols = _wed_assignment(d, variant)
    translation = np.sum(d[rows, cols])
    deletion = cv_del * (n_p - len(rows))
    insertion = cv_ins * (n_g - len(cols))
    gmap = np.full(n_p, -1, dtype=np.int64)
    gmap[rows] = cols
    p_len = _edge_lengths(P, p_edges)
    if len(p_edges):
        ua, ub = gmap[p_edges[:, 0]], gmap[p_edges[:, 1]]
        codes = np.where((ua >= 0) & (ub >= 0), edge_codes(np.column_stack((ua, ub)), n_g), -1)
    else:
        codes = np.zeros(0, dtype=np.int64)
    gt_codes = edge_codes(g_edges, n_g)
    kept = (codes >= 0) & _member(codes, gt_codes)
    edge_deletion = ce * np.sum(p_len[~kept])
    edge_insertion = ce * np.sum(g_len[~_member(gt_codes, codes[kept])])
    return float(translation + deletion + insertion + edge_deletion + edge_insertion)


def _wed_s23dr2024(
    P: np.ndarray,
    p_edges: np.ndarray,
    G: np.ndarray,
    g_edges: np.ndarray,
    d: np.ndarray,
    cv_ins: float,
    cv_del: float,
    ce: float,
) -> float:
    """The S23DR-2024 challenge scorer (``hoho/wed.py`` of ``s23dr/hoho2025``), quirks Q1-Q4 included (see ``wed``)."""
    n_p, n_g = len(P), len(G)
    r, c = linear_sum_assignment(d) if n_p else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    translation = np.sum(d[r, c])
    deletion = cv_del * (n_p - len(r))
    insertion = cv_ins * (n_g - len(c))
    pos_r = np.full(n_p, -1, dtype=np.int64)
    pos_r[r] = np.arange(len(r))
    # Q1: keys are tuples of Python sets, whose order for u = v (mod 8) depends on insertion order
    pred_keys = set()
    for a, b in p_edges.tolist():
        ka, kb = pos_r[a], pos_r[b]
        if ka >= 0 and kb >= 0:  # Q4: edges with an unassigned endpoint vanish at no cost
            pred_keys.add(tuple(set((int(c[ka]), int(c[kb])))))
    gt_keys = {tuple(set((int(u), int(v)))) for u, v in g_edges.tolist()}
    pos_c = np.zeros(n_g, dtype=np.int64)
    pos_c[c] = np.arange(len(c))
    # Q2: the deleted edge's length is read at the *positions* of its GT indices in c, not mapped through r
    to_delete = [k for k in pred_keys - gt_keys if len(k) == 2]
    to_insert = [k for k in gt_keys - pred_keys if len(k) == 2]
    if to_delete:
        kd = np.array(to_delete, dtype=np.int64)
        edge_deletion = ce * np.sum(np.linalg.norm(P[pos_c[kd[:, 0]]] - P[pos_c[kd[:, 1]]], axis=1))
    else:
        edge_deletion = 0.0
    if to_insert:
        ki = np.array(to_insert, dtype=np.int64)
        edge_insertion = ce * np.sum(np.linalg.norm(G[ki[:, 0]] - G[ki[:, 1]], axis=1))
    else:
        edge_insertion = 0.0
    return float(translation + deletion + insertion + edge_deletion + edge_insertion)


def _wed_ap(
    P: np.ndarray, p_edges: np.ndarray, G: np.ndarray, g_edges: np.ndarray, g_len: np.ndarray, d: np.ndarray, ce: float
) -> float:
    n_p, n_g = len(P), len(G)
    if n_p == 0:
        return float(ce * np.sum(g_len))
    snap = np.argmin(d, axis=1)
    translation = np.sum(d[np.arange(n_p), snap])
    gt_codes = edge_codes(g_edges, n_g)
    if len(p_edges):
        ua, ub = snap[p_edges[:, 0]], snap[p_edges[:, 1]]
        keep = ua != ub  # an edge collapsed onto one GT vertex costs nothing
        codes = np.unique(edge_codes(np.column_stack((ua, ub))[keep], n_g))
    else:
        codes = np.zeros(0, dtype=np.int64)
    extra = codes[~_member(codes, gt_codes)]
    extra_cost = ce * np.sum(np.linalg.norm(G[extra // n_g] - G[extra % n_g], axis=1)) if len(extra) else 0.0
    missing = ce * np.sum(g_len[~_member(gt_codes, codes)])
    return float(translation + extra_cost + missing)


def wed(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    *,
    variant: str = "corrected",
    cv_ins: float = -0.5,
    cv_del: float = -0.25,
    ce: float = 1.0,
    normalized: bool = True,
    preregister: bool | None = None,
) -> float:
    """Wireframe edit distance (lower is better).

    Cost model: a negative vertex cost ``cv`` means ``|cv| * diam(GT)``; a one-to-one partial vertex assignment
    (variant-specific) pays its distances, unassigned predicted/GT vertices pay ``cv_del``/``cv_ins``; a predicted
    edge that does not map onto a GT edge (or has an unassigned endpoint) pays ``ce`` times its own length, every
    GT edge not hit pays ``ce`` times its length; ``normalized`` divides by the total GT edge length.

    Variants:

    * ``"corrected"`` (default): Hungarian assignment on the full distance matrix; 0 exactly for any relabelled
      copy (vertex order and edge orientation permuted).
    * ``"s23dr2024"``: the S23DR-2024 challenge scorer ("WED prereg"), matched to 1e-9 relative with its quirks:
      set-ordered edge keys (Q1), deletion lengths read at the wrong vertices when ``N_pred > N_gt`` (Q2), free
      deletion of edges with an unassigned endpoint (Q4); preregistration on by default.
    * ``"mnn"``: mutual nearest neighbours (lowest index on ties). Decision: the paper only names it.
    * ``"nearest"``: every prediction snaps to its nearest GT vertex; per GT vertex the closest snapper is assigned,
      the others are deleted. Decision: the paper only names it.
    * ``"ap"``: Building3D's "WED AP" with its issue #6 fixed (the prediction's own edges are used): snapping cost
      plus the lengths of snapped predicted edges that are not GT edges and of GT edges not hit; no vertex costs
      (non-default ``cv_ins``/``cv_del`` raise). Decision: Building3D's added corner offsets are left out.

    ``preregister`` (``None`` = on for ``s23dr2024`` only) maps the prediction to the GT's mean and single scale:
    ``P <- (P - mean(P)) / ||std(P)|| * ||std(G)|| + mean(G)`` (per-axis population std, zeros/NaN -> 1).

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices (may be empty).
        pred_edges: ``(M, 2)`` predicted edges.
        gt_vertices: ``(N', 3)`` GT vertices, ``N' >= 1``.
        gt_edges: ``(M', 2)`` GT edges with non-zero total length.
        variant: one of :data:`WED_VARIANTS`.
        cv_ins: vertex insertion cost (negative: multiple of the GT diameter).
        cv_del: vertex deletion cost (negative: multiple of the GT diameter).
        ce: edge cost per unit length.
        normalized: divide by the total GT edge length (unitless result).
        preregister: see above.

    Returns:
        The edit cost (unitless if ``normalized``, else a length).

    Example:
        >>> v = [[0, 0, 0], [10, 0, 0], [0, 10, 0]]
        >>> wed(v, [[0, 1]], v, [[0, 1], [0, 2]])
        0.5
    """
    check_wed_options(variant, cv_ins, cv_del, ce)
    p, g = _pair(pred_vertices, pred_edges, gt_vertices, gt_edges)
    G = g.vertices
    g_len = _edge_lengths(G, g.edges)
    total = np.sum(g_len)
    if not total > 0:
        raise ValueError("gt_edges have zero total length; WED is normalised by it and needs a non-degenerate GT.")
    diam = _diameter(G) if min(cv_ins, cv_del) < 0 else 0.0
    cv_ins_abs = -cv_ins * diam if cv_ins < 0 else float(cv_ins)
    cv_del_abs = -cv_del * diam if cv_del < 0 else float(cv_del)
    P = p.vertices
    if (variant == "s23dr2024" if preregister is None else bool(preregister)) and len(P):
        P = _preregister(P, G)
    d = cdist(P, G)
    if variant == "s23dr2024":
        cost = _wed_s23dr2024(P, p.edges, G, g.edges, d, cv_ins_abs, cv_del_abs, float(ce))
    elif variant == "ap":
        cost = _wed_ap(P, p.edges, G, g.edges, g_len, d, float(ce))
    else:
        cost = _wed_costs(P, p.edges, G, g.edges, g_len, d, variant, cv_ins_abs, cv_del_abs, float(ce))
    return float(cost / total) if normalized else float(cost)
