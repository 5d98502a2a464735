"""Hypothesis property tests: symmetry, identity and bounds of every metric on random small wireframes.

Coordinates come from ``numpy.random.default_rng(seed)`` with a hypothesis-drawn seed, so points are in general
position (hypothesis' own floats produce exact ties, under which optimal assignments are not unique).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scenemetrics.wireframe import (
    chamfer_distance,
    corner_offset,
    corner_prf,
    edge_prf,
    hausdorff_distance,
    iou,
    spectral_distance,
    wed,
)

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=30, deadline=None)
SLOW = settings(max_examples=12, deadline=None)


def random_wireframe(rng: np.random.Generator, n_min: int = 3, n_max: int = 20) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.integers(n_min, n_max + 1))
    v = rng.uniform(-5.0, 5.0, (n, 3))
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    m = int(rng.integers(1, min(len(pairs), 2 * n) + 1))
    e = pairs[rng.choice(len(pairs), m, replace=False)]
    flip = rng.random(m) < 0.5
    e[flip] = e[flip][:, ::-1]
    return v, e


def perturbed(rng: np.random.Generator, v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A noisy partial copy with extra vertices and edges, so matches are neither all nor none."""
    keep = np.sort(rng.choice(len(v), int(rng.integers(max(1, len(v) // 2), len(v) + 1)), replace=False))
    remap = np.full(len(v), -1)
    remap[keep] = np.arange(len(keep))
    pv = v[keep] + rng.normal(0.0, 0.3, (len(keep), 3))
    pe = remap[e]
    pe = pe[(pe >= 0).all(axis=1)]
    n_extra = int(rng.integers(0, 4))
    pv = np.vstack([pv, rng.uniform(-5.0, 5.0, (n_extra, 3))])
    extra_edges = [(len(keep) + k, int(rng.integers(len(keep)))) for k in range(n_extra)]
    pe = np.vstack([pe.reshape(-1, 2), np.array(extra_edges, dtype=np.int64).reshape(-1, 2)])
    if len(pe) == 0:
        pe = np.array([[0, len(pv) - 1]]) if len(pv) > 1 else pe
    return pv, pe


def relabelled(rng: np.random.Generator, v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(len(v))
    v2 = np.empty_like(v)
    v2[perm] = v
    e2 = perm[e][rng.permutation(len(e))]
    flip = rng.random(len(e2)) < 0.5
    e2[flip] = e2[flip][:, ::-1]
    return v2, e2


def pair(seed: int):
    rng = np.random.default_rng(seed)
    gt = random_wireframe(rng)
    return rng, perturbed(rng, *gt), gt


@FAST
@given(SEEDS)
def test_corner_and_edge_prf_swap_precision_and_recall(seed):
    _, (pv, pe), (gv, ge) = pair(seed)
    for fn in (
        lambda a, b, c, d: corner_prf(a, c, 0.5),
        lambda a, b, c, d: edge_prf(a, b, c, d, 0.5),
        lambda a, b, c, d: edge_prf(a, b, c, d, 0.5, matching="endpoint"),
    ):
        if len(pe) == 0:
            continue
        ab, ba = fn(pv, pe, gv, ge), fn(gv, ge, pv, pe)
        assert (ab.precision, ab.recall, ab.tp) == (ba.recall, ba.precision, ba.tp)
        assert ab.f1 == ba.f1
        for x in (ab.precision, ab.recall, ab.f1):
            assert 0.0 <= x <= 1.0


@FAST
@given(SEEDS)
def test_distances_are_exactly_symmetric_and_non_negative(seed):
    _, (pv, pe), (gv, ge) = pair(seed)
    if len(pe) == 0:
        return
    for fn in (
        lambda a, b, c, d: spectral_distance(a, b, c, d, p=1),
        lambda a, b, c, d: spectral_distance(a, b, c, d, p=2),
        lambda a, b, c, d: spectral_distance(a, b, c, d, p=1, padding="empirical"),
        hausdorff_distance,
        chamfer_distance,
        lambda a, b, c, d: chamfer_distance(a, b, c, d, squared=True),
    ):
        ab, ba = fn(pv, pe, gv, ge), fn(gv, ge, pv, pe)
        assert ab == ba
        assert ab >= 0.0
    assert chamfer_distance(pv, pe, gv, ge) <= hausdorff_distance(pv, pe, gv, ge)


@SLOW
@given(SEEDS)
def test_voxel_iou_is_exactly_symmetric_and_bounded(seed):
    _, (pv, pe), (gv, ge) = pair(seed)
    if len(pe) == 0:
        return
    ab = iou(pv, pe, gv, ge, radius=0.5, resolution=2)
    assert ab == iou(gv, ge, pv, pe, radius=0.5, resolution=2)
    assert 0.0 <= ab <= 1.0


@FAST
@given(SEEDS)
def test_relabelled_copy_is_an_exact_identity(seed):
    rng = np.random.default_rng(seed)
    v, e = random_wireframe(rng)
    rv, re = relabelled(rng, v, e)
    for variant in ("corrected", "mnn", "nearest", "ap"):
        assert wed(rv, re, v, e, variant=variant) == 0.0
    assert hausdorff_distance(rv, re, v, e) == 0.0
    assert chamfer_distance(rv, re, v, e) == 0.0
    assert corner_prf(rv, v, 0.0).f1 == 1.0
    assert corner_offset(rv, v, 0.0) == 0.0
    assert edge_prf(rv, re, v, e, 0.0).f1 == 1.0
    assert edge_prf(rv, re, v, e, 0.0, matching="endpoint").f1 == 1.0
    assert spectral_distance(rv, re, v, e) < 1e-9


@SLOW
@given(SEEDS)
def test_relabelled_copy_has_voxel_iou_exactly_one(seed):
    rng = np.random.default_rng(seed)
    v, e = random_wireframe(rng, 3, 10)
    assert iou(*relabelled(rng, v, e), v, e, radius=0.5, resolution=2) == 1.0


@FAST
@given(SEEDS)
def test_s23dr2024_equals_corrected_with_preregistration_when_no_quirk_can_act(seed):
    rng = np.random.default_rng(seed)
    gv, ge = random_wireframe(rng, 3, 8)
    pv, pe = perturbed(rng, gv, ge)
    pv, pe = pv[: len(gv)], pe[(pe < len(gv)).all(axis=1)] if len(pe) else pe
    a = wed(pv, pe, gv, ge, variant="s23dr2024")
    b = wed(pv, pe, gv, ge, variant="corrected", preregister=True)
    assert abs(a - b) <= 1e-12 * max(1.0, abs(b))


@FAST
@given(SEEDS)
def test_wed_is_non_negative_and_zero_only_for_an_exact_match(seed):
    _, (pv, pe), (gv, ge) = pair(seed)
    for variant in ("corrected", "mnn", "nearest", "ap", "s23dr2024"):
        value = wed(pv, pe, gv, ge, variant=variant)
        assert value >= 0.0
        assert value > 0.0  # the noisy copy is never an exact match
