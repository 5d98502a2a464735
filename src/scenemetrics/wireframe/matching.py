"""Corner and edge distances with a one-to-one (Hungarian) matching, next to their nearest-neighbour Chamfer forms.

The paper's Chamfer edge distance (Eq. 1, :func:`~scenemetrics.wireframe.chamfer_distance`) lets every point take
its nearest neighbour on the other side, so many predicted points may sit on one GT point and a missing part costs
only through the GT-to-prediction term. The one-to-one form matches the two point sets with
``scipy.optimize.linear_sum_assignment`` on the full Euclidean distance matrix (minimum total distance; no
threshold, no dummy nodes), so each point is used at most once. Both forms exist for the corners (the vertex sets)
and for the edges (the deterministic edge samples of :func:`~scenemetrics.wireframe.sample_edges`, the same points
the Chamfer distance uses):

- vertices: :func:`corner_chamfer` (registry name ``corner_chamfer``) and :func:`corner_matching_distance`
  (``corner_matching``);
- edge samples: :func:`~scenemetrics.wireframe.chamfer_distance` (``chamfer``) and :func:`edge_matching_distance`
  (``edge_matching``).

**Definition (Decision; the paper gives no formula for the one-to-one form).** For point sets ``A`` (prediction)
and ``B`` (GT), ``(r, c) = linear_sum_assignment(D)`` with ``D[i, j] = ||a_i - b_j||`` pairs ``min(|A|, |B|)``
points. Each point is charged the distance to its partner; a point left without a partner (only in the larger set,
when the sizes differ) is charged its nearest-neighbour distance to the other set, the least any matching could
charge it. With ``d_A`` the charges of ``A`` and ``d_B`` those of ``B``, the distance is
``0.5 * (mean d_A + mean d_B)`` (``direction="pred_to_gt"`` / ``"gt_to_pred"``: one term), exactly the Chamfer
formula with nearest neighbours replaced by partners. Consequences (tested): with ``|A| == |B|`` it is the mean
distance of the optimal assignment (the earth mover's distance between the two uniform point sets); it is never
below the Chamfer form (each charge is at least the nearest-neighbour distance) and equals it when the
nearest-neighbour map is already one-to-one; it is symmetric and 0 for a relabelled copy. Ties between several
optimal assignments that leave different points unmatched can change the value (general-position inputs have one
optimal assignment).

Degenerate inputs: no predicted vertex (corners) or no predicted edge (edges) gives ``nan`` and a ``UserWarning``,
as :func:`~scenemetrics.wireframe.chamfer_distance` does; the GT needs at least one vertex (corners) or one edge
(edges), else ``ValueError``. Cost: the assignment is O(n³) on an ``n x m`` matrix; more than
:data:`MAX_MATRIX_ENTRIES` pairs raise ``ValueError`` (use a larger ``spacing`` or fewer
``points_per_wireframe``).

Example:
    >>> from scenemetrics.wireframe import corner_chamfer, corner_matching_distance
    >>> pred = [[0, 0, 0], [0.1, 0, 0]]          # both predicted corners near GT corner 0
    >>> gt = [[0, 0, 0], [1, 0, 0]]
    >>> round(corner_chamfer(pred, gt), 6), round(corner_matching_distance(pred, gt), 6)
    (0.25, 0.45)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from scenemetrics.checks import check_choice
from scenemetrics.types import ArrayLike
from scenemetrics.wireframe.options import check_sampling
from scenemetrics.wireframe.scores import sample_edges
from scenemetrics.wireframe.types import validate_vertices, validate_wireframe

__all__ = [
    "DIRECTIONS",
    "MAX_MATRIX_ENTRIES",
    "check_corner_distance_options",
    "check_edge_matching_options",
    "corner_chamfer",
    "corner_matching_distance",
    "edge_matching_distance",
    "matched_distances",
]

DIRECTIONS = ("symmetric", "pred_to_gt", "gt_to_pred")
"""The ``direction`` values of the distances of this module (as :func:`~scenemetrics.wireframe.chamfer_distance`)."""

MAX_MATRIX_ENTRIES = 25_000_000
"""Largest ``|A| * |B|`` the one-to-one forms accept (a 200 MB float64 distance matrix)."""


def check_corner_distance_options(direction: Any = "symmetric") -> None:
    """Options of :func:`corner_chamfer` and :func:`corner_matching_distance` (used by ``make_metric``)."""
    check_choice(direction, "direction", DIRECTIONS)


def check_edge_matching_options(
    spacing: Any = None, points_per_wireframe: Any = 1000, direction: Any = "symmetric"
) -> None:
    """Options of :func:`edge_matching_distance` (used by ``make_metric``)."""
    check_sampling(spacing, points_per_wireframe)
    check_choice(direction, "direction", DIRECTIONS)


def matched_distances(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-point charges of the one-to-one matching of two non-empty point sets (see the module docstring).

    Args:
        a: ``(n, 3)`` points.
        b: ``(m, 3)`` points.

    Returns:
        ``(d_a (n,), d_b (m,))`` float64: the distance of each point to its partner in the minimum-total-distance
        assignment, or, for a point left without a partner, to its nearest neighbour in the other set.

    Raises:
        ValueError: an empty set, or ``n * m`` above :data:`MAX_MATRIX_ENTRIES`.

    Example:
        >>> d_a, d_b = matched_distances([[0, 0, 0], [0.1, 0, 0]], [[0, 0, 0], [1, 0, 0]])
        >>> d_a.round(6).tolist(), d_b.round(6).tolist()
        ([0.0, 0.9], [0.0, 0.9])
    """
    pa, pb = validate_vertices(a, arg="a"), validate_vertices(b, arg="b")
    if len(pa) == 0 or len(pb) == 0:
        raise ValueError(f"both point sets must be non-empty; received {len(pa)} and {len(pb)} points.")
    if len(pa) * len(pb) > MAX_MATRIX_ENTRIES:
        raise ValueError(
            f"a one-to-one matching of {len(pa)} x {len(pb)} points exceeds {MAX_MATRIX_ENTRIES} pairs; "
            "sample fewer points (a larger `spacing` or a smaller `points_per_wireframe`)."
        )
    d = cdist(pa, pb)
    r, c = linear_sum_assignment(d)
    d_a, d_b = d.min(axis=1), d.min(axis=0)  # the charge of a point left without a partner
    d_a[r] = d[r, c]
    d_b[c] = d[r, c]
    return d_a, d_b


def _reduce(d_a: np.ndarray, d_b: np.ndarray, direction: str) -> float:
    if direction == "pred_to_gt":
        return float(np.mean(d_a))
    if direction == "gt_to_pred":
        return float(np.mean(d_b))
    return float(0.5 * (np.mean(d_a) + np.mean(d_b)))


def _corner_sets(pred_vertices: Any, gt_vertices: Any, fn: str) -> tuple[np.ndarray, np.ndarray] | None:
    p = validate_vertices(pred_vertices, arg="pred_vertices")
    g = validate_vertices(gt_vertices, arg="gt_vertices")
    if len(g) == 0:
        raise ValueError("gt_vertices is empty; the ground truth needs at least one vertex.")
    if len(p) == 0:
        warnings.warn(f"{fn}: the prediction has no vertex; returning nan.", UserWarning, stacklevel=3)
        return None
    return p, g


def corner_chamfer(pred_vertices: ArrayLike, gt_vertices: ArrayLike, *, direction: str = "symmetric") -> float:
    """Chamfer distance between the vertex sets: nearest neighbours, ``0.5 (mean d_A + mean d_B)`` (lower is better).

    ``d_A`` are the distances of the predicted vertices to their nearest GT vertex, ``d_B`` the reverse. The
    nearest-neighbour form of the corner distance, next to :func:`corner_matching_distance`.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        gt_vertices: ``(N', 3)`` GT vertices, ``N' >= 1``.
        direction: ``"symmetric"``, ``"pred_to_gt"`` (mean ``d_A``) or ``"gt_to_pred"`` (mean ``d_B``).

    Returns:
        The distance in length units; ``nan`` with a ``UserWarning`` when the prediction has no vertex.

    Example:
        >>> corner_chamfer([[0, 0, 0], [0.1, 0, 0]], [[0, 0, 0], [1, 0, 0]], direction="gt_to_pred")
        0.45
    """
    check_corner_distance_options(direction)
    sets = _corner_sets(pred_vertices, gt_vertices, "corner_chamfer")
    if sets is None:
        return float("nan")
    d = cdist(*sets)
    return _reduce(d.min(axis=1), d.min(axis=0), direction)


def corner_matching_distance(
    pred_vertices: ArrayLike, gt_vertices: ArrayLike, *, direction: str = "symmetric"
) -> float:
    """Corner distance with a one-to-one (Hungarian) matching of the vertex sets (lower is better).

    ``linear_sum_assignment`` on the full distance matrix; each vertex is charged the distance to its partner, or
    (when the counts differ) its nearest-neighbour distance if it has none; then ``0.5 (mean d_A + mean d_B)``.
    With as many predicted as GT vertices this is the mean distance of the optimal assignment. Unlike
    :func:`~scenemetrics.wireframe.corner_offset` there is no threshold: every pair counts.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        gt_vertices: ``(N', 3)`` GT vertices, ``N' >= 1``.
        direction: ``"symmetric"``, ``"pred_to_gt"`` or ``"gt_to_pred"``.

    Returns:
        The distance in length units (``>= corner_chamfer``); ``nan`` with a ``UserWarning`` when the prediction has
        no vertex.

    Example:
        >>> corner_matching_distance([[0, 0, 0], [1, 0, 0]], [[1, 0, 0.5], [0, 0, 0.5]])
        0.5
    """
    check_corner_distance_options(direction)
    sets = _corner_sets(pred_vertices, gt_vertices, "corner_matching_distance")
    if sets is None:
        return float("nan")
    return _reduce(*matched_distances(*sets), direction)


def edge_matching_distance(
    pred_vertices: ArrayLike,
    pred_edges: ArrayLike,
    gt_vertices: ArrayLike,
    gt_edges: ArrayLike,
    *,
    spacing: float | None = None,
    points_per_wireframe: int = 1000,
    direction: str = "symmetric",
) -> float:
    """Edge distance with a one-to-one (Hungarian) matching of the edge samples (lower is better).

    The points are those of :func:`~scenemetrics.wireframe.chamfer_distance` (:func:`sample_edges` with the same
    ``spacing`` / ``points_per_wireframe``); they are matched one-to-one (:func:`matched_distances`) instead of to
    their nearest neighbours. With ``spacing=None`` each wireframe gets about ``points_per_wireframe`` points spread
    evenly over its length, so a prediction covering half of the GT must stretch its points over the whole GT: the
    one-to-one form sees that, the Chamfer form's prediction-to-GT term does not.

    Args:
        pred_vertices: ``(N, 3)`` predicted vertices.
        pred_edges: ``(M, 2)`` predicted edges.
        gt_vertices: ``(N', 3)`` GT vertices.
        gt_edges: ``(M', 2)`` GT edges, ``M' >= 1``.
        spacing: common sample spacing, or ``None`` (each wireframe: total length / ``points_per_wireframe``).
        points_per_wireframe: see ``spacing``.
        direction: ``"symmetric"``, ``"pred_to_gt"`` or ``"gt_to_pred"``.

    Returns:
        The distance in length units (``>= chamfer_distance`` on the same samples); ``nan`` with a ``UserWarning``
        when the prediction has no edge.

    Raises:
        ValueError: invalid wireframes or options, a GT without edges, or too many samples for one assignment
            (:data:`MAX_MATRIX_ENTRIES`).

    Example:
        >>> edge_matching_distance([[0, 0, 0], [1, 0, 0]], [[0, 1]], [[0, 0.5, 0], [1, 0.5, 0]], [[0, 1]])
        0.5
    """
    check_edge_matching_options(spacing, points_per_wireframe, direction)
    p = validate_wireframe(pred_vertices, pred_edges, name="pred")
    g = validate_wireframe(gt_vertices, gt_edges, name="gt")
    if len(g.edges) == 0:
        raise ValueError("gt_edges is empty; this metric needs a ground truth with at least one edge.")
    if len(p.edges) == 0:
        warnings.warn("edge_matching_distance: the prediction has no edge; returning nan.", UserWarning, stacklevel=2)
        return float("nan")
    a = sample_edges(*p, spacing=spacing, points_per_wireframe=points_per_wireframe)
    b = sample_edges(*g, spacing=spacing, points_per_wireframe=points_per_wireframe)
    return _reduce(*matched_distances(a, b), direction)
