"""Property "unit tests" for wireframe metrics (paper Sec. 2, Table 2).

Each of the 17 tests perturbs every ground-truth house in a controlled way and checks a property of the metric's
dissimilarity ``d(a, b) = metric(pred=a, gt=b)`` (or ``1 - metric`` for higher-is-better metrics, which must lie
in ``[0, 1]``): monotonicity under growing damage, identity of indiscernibles, symmetry, quasi-proportionality
under a growing shift and the triangle inequality. A cell of the table is the fraction of houses that passed; a
test passes at ``>= PASS_FRACTION`` (0.90).

Random numbers: house ``i`` uses ``numpy.random.SeedSequence([seed, i])``, spawned into one independent stream per
test, so a result is reproducible for a seed and a version of this library (not across implementations). A
metric's own ``UserWarning``\\ s (e.g. "no true positive") are silenced inside the suite; the non-finite value they
come with fails the test for that house.

Example:
    >>> from scenemetrics.wireframe import property_suite, synthetic_houses
    >>> table = property_suite("wed", synthetic_houses(2), steps=4)
    >>> table["identity"], table.passed["symmetry_shift"]
    (1.0, False)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from scenemetrics.checks import check_int
from scenemetrics.wireframe.registry import (
    TABLE2_COLUMNS,
    ScalarMetric,
    make_metric,
    metric_option_names,
)
from scenemetrics.wireframe.types import as_wireframe

__all__ = [
    "PASS_FRACTION",
    "PROPERTY_TESTS",
    "PropertyTable",
    "format_property_table",
    "property_suite",
    "property_table",
]

PROPERTY_TESTS: tuple[tuple[str, str], ...] = (
    ("monotonic_wrong_edges", "Monotonic (wrong edges)"),
    ("monotonic_deform_split", "Monotonic (deform/split)"),
    ("monotonic_moving_vertex", "Monotonic (moving vertex)"),
    ("monotonic_disconnect_edges", "Monotonic (disconnect edges)"),
    ("monotonic_delete_vertices", "Monotonic (delete vertices)"),
    ("monotonic_delete_edges", "Monotonic (delete edges)"),
    ("identity", "Identity of indiscernibles"),
    ("near_identity", "Near identity of indiscernibles"),
    ("symmetry_zero_mean", "Symmetry (0 mean, weighted)"),
    ("near_symmetry_zero_mean", "Near symmetry (0 mean, weighted)"),
    ("symmetry_shift", "Symmetry (shift, weighted)"),
    ("near_symmetry_shift", "Near symmetry (shift, weighted)"),
    ("quasi_proportionality_far", "Quasi-proportionality (shift, far)"),
    ("quasi_proportionality_close", "Quasi-proportionality (shift, close)"),
    ("triangle_random_other", "Triangle ineq. (rand other)"),
    ("triangle_add_noise", "Triangle ineq. (add noise)"),
    ("triangle_del1_del2", "Triangle ineq. (del1/del2)"),
)
"""``(test id, paper row label)`` in the order of the paper's Table 2."""

PASS_FRACTION = 0.90
"""A test passes when at least this fraction of houses passed it."""

_TEST_IDS = tuple(t for t, _ in PROPERTY_TESTS)


class PropertyTable(Mapping[str, float]):
    """One metric's column of Table 2: test id -> fraction of houses that passed, in :data:`PROPERTY_TESTS` order.

    Attributes:
        metric_name: the metric's name.
        n_houses: number of GT houses.
        per_house: test id -> boolean array (one entry per house).
        passed: test id -> fraction ``>= PASS_FRACTION``.
        pass_count: number of passed tests (of 17).

    Example:
        >>> t = PropertyTable("m", {k: np.ones(2, bool) for k, _ in PROPERTY_TESTS})
        >>> t.pass_count, len(t)
        (17, 17)
    """

    def __init__(self, metric_name: str, per_house: Mapping[str, np.ndarray]) -> None:
        self.metric_name = metric_name
        self.per_house = {k: np.asarray(per_house[k], dtype=bool) for k in _TEST_IDS}
        self.n_houses = len(next(iter(self.per_house.values())))
        self._fractions = {k: float(np.mean(v)) if len(v) else float("nan") for k, v in self.per_house.items()}
        self.passed = {k: bool(f >= PASS_FRACTION) for k, f in self._fractions.items()}
        self.pass_count = int(sum(self.passed.values()))

    def __getitem__(self, key: str) -> float:
        return self._fractions[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_TEST_IDS)

    def __len__(self) -> int:
        return len(_TEST_IDS)

    def __repr__(self) -> str:
        return f"PropertyTable({self.metric_name!r}, n_houses={self.n_houses}, pass_count={self.pass_count}/17)"

    def to_markdown(self) -> str:
        """This column alone in the Table 2 layout (see :func:`format_property_table`)."""
        return format_property_table({self.metric_name: self})


# --------------------------------------------------------------------------------------------------- perturbations


def _unit(rng: np.random.Generator) -> np.ndarray:
    while True:
        u = rng.normal(size=3)
        n = np.linalg.norm(u)
        if n > 1e-12:
            return u / n


def _diameter(v: np.ndarray) -> float:
    from scipy.spatial.distance import pdist

    return float(pdist(v).max()) if len(v) > 1 else 0.0


def _delete_vertex(v: np.ndarray, e: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray]:
    keep = (e[:, 0] != i) & (e[:, 1] != i)
    e = e[keep]
    e = e - (e > i)
    return np.delete(v, i, axis=0), e


def _wrong_edges(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int) -> list:
    out = [(v, e)]
    n = len(v)
    present = {(min(a, b), max(a, b)) for a, b in e.tolist()}
    for _ in range(steps):
        free = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in present]
        if not free:
            raise ValueError("monotonic_wrong_edges: a house ran out of non-adjacent vertex pairs; use fewer steps.")
        pair = free[int(rng.integers(len(free)))]
        present.add(pair)
        e = np.vstack((e, [pair]))
        out.append((v, e))
    return out


def _deform_split(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int) -> list:
    out = [(v, e)]
    for _ in range(steps):
        k = int(rng.integers(len(e)))
        a, b = e[k]
        t = rng.uniform(0.25, 0.75)
        m = v[a] + t * (v[b] - v[a]) + 0.05 * np.linalg.norm(v[b] - v[a]) * _unit(rng)
        v = np.vstack((v, m))
        mi = len(v) - 1
        e = e.copy()
        e[k] = (a, mi)
        e = np.vstack((e, [(mi, b)]))
        out.append((v, e))
    return out


def _moving_vertex(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int, s: float) -> list:
    out = [(v, e)]
    for i in rng.permutation(len(v))[:steps]:
        v = v.copy()
        v[i] = v[i] + rng.uniform(0.1, 0.2) * s * _unit(rng)
        out.append((v, e))
    return out


def _disconnect_edges(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int, s: float) -> list:
    out = [(v, e)]
    for k in rng.permutation(len(e))[:steps]:
        side = int(rng.integers(2))
        v = np.vstack((v, v[e[k, side]] + 0.01 * s * _unit(rng)))
        e = e.copy()
        e[k, side] = len(v) - 1
        out.append((v, e))
    return out


def _delete_vertices(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int) -> list:
    out = [(v, e)]
    for _ in range(steps):
        v, e = _delete_vertex(v, e, int(rng.integers(len(v))))
        out.append((v, e))
    return out


def _delete_edges(v: np.ndarray, e: np.ndarray, rng: np.random.Generator, steps: int) -> list:
    out = [(v, e)]
    for _ in range(steps):
        e = np.delete(e, int(rng.integers(len(e))), axis=0)
        out.append((v, e))
    return out


def _relabel(v: np.ndarray, e: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(len(v))
    v2 = np.empty_like(v)
    v2[perm] = v
    e2 = perm[e][rng.permutation(len(e))]
    flip = rng.random(len(e2)) < 0.5
    e2[flip] = e2[flip][:, ::-1]
    return v2, e2


def _weighted_noise(v: np.ndarray, rng: np.random.Generator, s: float, shift: bool) -> np.ndarray:
    w = rng.uniform(0.0, 1.0, size=len(v))
    disp = w[:, None] * rng.normal(0.0, 0.02 * s, size=v.shape)
    disp -= disp.mean(axis=0)
    if shift:
        disp = disp + rng.normal(0.0, 0.05 * s, size=3)
    return v + disp


# --------------------------------------------------------------------------------------------------- the suite


def _resolve(
    metric_fn: ScalarMetric | str | Callable, higher_is_better: bool | None, options: Mapping[str, Any] | None
) -> tuple[Callable, bool, str]:
    if isinstance(metric_fn, str):
        metric_fn = make_metric(metric_fn, **dict(options or {}))
    elif options:
        raise ValueError("metric_options only apply when metric_fn is a registry name (a string).")
    if not callable(metric_fn):
        raise TypeError(f"metric_fn must be a registry name, a ScalarMetric or a callable, got {metric_fn!r}.")
    hib = higher_is_better if higher_is_better is not None else getattr(metric_fn, "higher_is_better", None)
    if hib is None:
        raise ValueError(
            "higher_is_better is required for a plain callable (it decides whether d = metric or d = 1 - metric)."
        )
    name = getattr(metric_fn, "name", None) or getattr(metric_fn, "__name__", None) or type(metric_fn).__name__
    return metric_fn, bool(hib), str(name)


def _close(u: float, v: float, rtol: float, atol: float) -> bool:
    return math.isfinite(u) and math.isfinite(v) and abs(u - v) <= atol + rtol * max(abs(u), abs(v))


def property_suite(
    metric_fn: ScalarMetric | str | Callable,
    gt_wireframes: Sequence[Any],
    *,
    higher_is_better: bool | None = None,
    seed: int = 0,
    steps: int = 10,
    relabel: bool = True,
    near_rtol: float = 1e-6,
    near_atol: float = 1e-9,
    qp_ratio: float = 0.1,
    metric_options: Mapping[str, Any] | None = None,
    show_progress: bool = False,
) -> PropertyTable:
    """Run the 17 property tests of the paper's Table 2 for one metric.

    Tests (``x`` a GT house, ``s`` its diameter, ``u`` a uniformly random unit vector):

    * ``monotonic_*``: ``x_0 = x`` and ``steps`` growing perturbations (add a wrong edge; split an edge at a
      displaced point; move a not-yet-moved vertex by ``U(0.1, 0.2) s``; re-attach an edge end to a new vertex
      ``0.01 s`` away; delete a vertex; delete an edge); passes iff ``d(x_k, x)`` increases strictly.
    * ``identity`` / ``near_identity``: ``y`` a relabelled copy (vertex permutation, edge order shuffled, edges
      flipped with probability 1/2; ``relabel=False``: an exact copy); ``d(y, x) == 0`` / close to 0.
    * ``symmetry_*`` / ``near_symmetry_*``: per-vertex weighted noise ``w_i N(0, (0.02 s)^2)`` with zero mean
      (``_shift``: plus a common ``N(0, (0.05 s)^2)`` shift); ``d(y, x) == d(x, y)`` / close.
    * ``quasi_proportionality_far`` / ``_close``: ``y_k = x + k δ s u`` (δ = 0.05 / 0.002); with
      ``Δ_k = d(y_k, x) - d(y_{k-1}, x)``: ``var(Δ) <= qp_ratio mean(|Δ|)^2 + near_atol`` (population variance).
    * ``triangle_*``: ``d(x, z) <= d(x, y) + d(y, z) + near_atol + near_rtol |d(x, y) + d(y, z)|`` for ``(y, z)``
      = (noisy ``x``, next house moved onto ``x``'s centroid), (``x`` + noise, that + noise), (``x`` minus a
      vertex, that minus another).

    "Close" means both finite and ``|u - v| <= near_atol + near_rtol max(|u|, |v|)``; a non-finite value fails.

    Args:
        metric_fn: a :class:`ScalarMetric`, a registry name (then ``metric_options`` are its options) or a callable
            ``(pred_vertices, pred_edges, gt_vertices, gt_edges) -> float``.
        gt_wireframes: at least 2 houses, each with ``>= steps + 2`` vertices and edges.
        higher_is_better: required for a callable without a ``higher_is_better`` attribute.
        seed: base seed.
        steps: perturbation steps of the monotonic and quasi-proportionality tests.
        relabel: relabel the identity copy (default) or use an exact copy.
        near_rtol: relative tolerance of the "near" tests.
        near_atol: absolute tolerance of the "near" tests.
        qp_ratio: quasi-proportionality tolerance.
        metric_options: options for a registry name.
        show_progress: a tqdm bar over houses.

    Returns:
        A :class:`PropertyTable`.

    Raises:
        ValueError: fewer than 2 houses, a house too small for ``steps``, a higher-is-better metric outside
            ``[0, 1]``, or a callable without ``higher_is_better``.

    Example:
        >>> from scenemetrics.wireframe import synthetic_houses
        >>> property_suite("corner_f1", synthetic_houses(2), metric_options={"threshold": 0.5},
        ...                steps=4)["identity"]
        1.0
    """
    fn, hib, name = _resolve(metric_fn, higher_is_better, metric_options)
    check_int(steps, "steps", low=1)
    houses = [as_wireframe(h, name=f"gt_wireframes[{i}]") for i, h in enumerate(gt_wireframes)]
    if len(houses) < 2:
        raise ValueError(f"gt_wireframes needs at least 2 houses (a triangle test uses another), got {len(houses)}.")
    for i, h in enumerate(houses):
        if len(h.vertices) < steps + 2 or len(h.edges) < steps + 2:
            raise ValueError(
                f"gt_wireframes[{i}] has {len(h.vertices)} vertices and {len(h.edges)} edges; steps={steps} needs at "
                f"least {steps + 2} of each (use bigger houses or fewer steps)."
            )

    def d(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            value = float(fn(a[0], a[1], b[0], b[1]))
        if not math.isfinite(value):
            return value
        if hib:
            if value < 0.0 or value > 1.0:
                raise ValueError(f"{name} is higher-is-better but returned {value}; d = 1 - metric needs [0, 1].")
            return 1.0 - value
        return value

    results = {k: np.zeros(len(houses), dtype=bool) for k in _TEST_IDS}
    iterator: Any = range(len(houses))
    if show_progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc=f"property suite {name}")
    for i in iterator:
        x = (houses[i].vertices, houses[i].edges)
        v, e = x
        s = _diameter(v)
        streams = [np.random.default_rng(ss) for ss in np.random.SeedSequence([seed, i]).spawn(9)]

        def monotonic(seq: list, x: tuple[np.ndarray, np.ndarray] = x) -> bool:
            vals = np.array([d(y, x) for y in seq])
            return bool(np.all(np.isfinite(vals)) and np.all(np.diff(vals) > 0))

        results["monotonic_wrong_edges"][i] = monotonic(_wrong_edges(v, e, streams[0], steps))
        results["monotonic_deform_split"][i] = monotonic(_deform_split(v, e, streams[1], steps))
        results["monotonic_moving_vertex"][i] = monotonic(_moving_vertex(v, e, streams[2], steps, s))
        results["monotonic_disconnect_edges"][i] = monotonic(_disconnect_edges(v, e, streams[3], steps, s))
        results["monotonic_delete_vertices"][i] = monotonic(_delete_vertices(v, e, streams[4], steps))
        results["monotonic_delete_edges"][i] = monotonic(_delete_edges(v, e, streams[5], steps))

        rng = streams[6]
        y = _relabel(v, e, rng) if relabel else (v.copy(), e.copy())
        dy = d(y, x)
        results["identity"][i] = dy == 0.0
        results["near_identity"][i] = _close(dy, 0.0, near_rtol, near_atol)

        for key, shift in (("zero_mean", False), ("shift", True)):
            y = (_weighted_noise(v, rng, s, shift), e)
            a, b = d(y, x), d(x, y)
            results[f"symmetry_{key}"][i] = math.isfinite(a) and a == b
            results[f"near_symmetry_{key}"][i] = _close(a, b, near_rtol, near_atol)

        u = _unit(streams[7])
        for key, delta in (("far", 0.05), ("close", 0.002)):
            vals = np.array([d((v + k * delta * s * u, e), x) for k in range(steps + 1)])
            if np.all(np.isfinite(vals)):
                diffs = np.diff(vals)
                ok = np.var(diffs) <= qp_ratio * np.mean(np.abs(diffs)) ** 2 + near_atol
            else:
                ok = False
            results[f"quasi_proportionality_{key}"][i] = bool(ok)

        rng = streams[8]
        other = houses[(i + 1) % len(houses)]
        z_other = (other.vertices - other.vertices.mean(axis=0) + v.mean(axis=0), other.edges)
        y1 = _weighted_noise(v, rng, s, False)
        y2 = v + rng.normal(0.0, 0.02 * s, size=v.shape)
        z2 = y2 + rng.normal(0.0, 0.02 * s, size=v.shape)
        y3 = _delete_vertex(v, e, int(rng.integers(len(v))))
        z3 = _delete_vertex(y3[0], y3[1], int(rng.integers(len(y3[0]))))
        for key, (yy, zz) in (
            ("triangle_random_other", ((y1, e), z_other)),
            ("triangle_add_noise", ((y2, e), (z2, e))),
            ("triangle_del1_del2", (y3, z3)),
        ):
            xz, xy, yz = d(x, zz), d(x, yy), d(yy, zz)
            total = xy + yz
            results[key][i] = bool(
                math.isfinite(xz) and math.isfinite(total) and xz <= total + near_atol + near_rtol * abs(total)
            )
    return PropertyTable(name, results)


def _route_options(
    metrics: Mapping[str, Any], options: Mapping[str, Any] | None
) -> dict[str, Mapping[str, Any] | None]:
    """Per-metric options (``{key: {...}}``) or shared ones (``{"threshold": ...}``, each metric takes its own)."""
    if not options:
        return dict.fromkeys(metrics)
    if all(k in metrics and isinstance(v, Mapping) for k, v in options.items()):
        return {k: options.get(k) for k in metrics}
    routed: dict[str, Mapping[str, Any] | None] = {}
    used: set[str] = set()
    for key, m in metrics.items():
        if isinstance(m, str):
            accepted = metric_option_names(m)
            taken = {k: v for k, v in options.items() if k in accepted}
            routed[key] = taken
            used |= set(taken)
        else:
            routed[key] = None
    unused = sorted(set(options) - used)
    if unused:
        raise TypeError(f"metric_options {unused} are taken by none of the registry metrics {sorted(metrics)}.")
    return routed


def property_table(
    metrics: Mapping[str, ScalarMetric | str | Callable], gt_wireframes: Sequence[Any], **kwargs: Any
) -> dict[str, PropertyTable]:
    """:func:`property_suite` for several metrics (same houses and options), keyed like ``metrics``.

    ``metric_options`` may map a key of ``metrics`` to its options (``{"edge_f1": {"threshold": 0.5}}``), or be one
    flat mapping shared by every registry-name metric, each taking the options it accepts (``{"threshold": 0.5,
    "radius": 0.5}``); an option no metric takes raises ``TypeError``.

    Args:
        metrics: name -> registry name, :class:`ScalarMetric` or callable.
        gt_wireframes: the GT houses.
        **kwargs: keyword arguments of :func:`property_suite`.

    Returns:
        name -> :class:`PropertyTable`, in the order of ``metrics``.

    Example:
        >>> from scenemetrics.wireframe import synthetic_houses
        >>> tabs = property_table({"wed": "wed", "wed_mnn": "wed_mnn"}, synthetic_houses(2), steps=3)
        >>> list(tabs)
        ['wed', 'wed_mnn']
    """
    routed = _route_options(metrics, kwargs.pop("metric_options", None))
    return {k: property_suite(m, gt_wireframes, metric_options=routed[k], **kwargs) for k, m in metrics.items()}


def format_property_table(tables: Mapping[str, PropertyTable]) -> str:
    """Markdown in the layout of the paper's Table 2: 17 rows, one column per metric, then "Pass count" (``k/17``).

    Column labels are the paper's (:data:`TABLE2_COLUMNS`) for known registry names, else the key.

    Args:
        tables: name -> :class:`PropertyTable`.

    Returns:
        The markdown table.

    Example:
        >>> t = PropertyTable("wed", {k: np.ones(4, bool) for k, _ in PROPERTY_TESTS})
        >>> format_property_table({"wed": t}).splitlines()[-1]
        '| Pass count | 17/17 |'
    """
    labels = dict(TABLE2_COLUMNS)
    cols = [labels.get(key) or labels.get(tab.metric_name) or key for key, tab in tables.items()]
    lines = ["| Property | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for test, row_label in PROPERTY_TESTS:
        lines.append(f"| {row_label} | " + " | ".join(f"{tab[test]:.2f}" for tab in tables.values()) + " |")
    lines.append("| Pass count | " + " | ".join(f"{tab.pass_count}/17" for tab in tables.values()) + " |")
    return "\n".join(lines)
