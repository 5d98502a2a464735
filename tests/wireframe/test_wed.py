"""WED variants: the worked examples and the 2024-scorer reference values of spec 5.4, quirks Q1-Q4, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenemetrics.wireframe import wed

from ._helpers import cube_wireframe, split_every_edge


def _rel(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def _grid():
    v = np.array([[10.0 * i, 10.0 * (i % 4), 10.0 * (i // 4)] for i in range(16)])
    gt = [(i, i + 1) for i in range(15)] + [(i, i + 8) for i in range(8)]
    pred = [(i, i + 1) for i in range(15)] + [(i + 8, i) for i in range(8)]
    return v, np.array(pred), np.array(gt)


Q2_GT = np.array([(0.0, 0, 0), (10, 0, 0), (0, 10, 0)])
Q2_PRED = np.array([(100.0, 100, 100), (0, 0, 0), (10, 0, 0), (0, 10, 0)])


def _cases():
    cv, ce = cube_wireframe()
    sub = np.array([(i, j) for i, j in ce if i < 7 and j < 7])
    gv, gpe, gge = _grid()
    return {
        "cube reversed": ((cv, ce[:, ::-1], cv, ce), {}, 5.314084872698858e-17, 0.0),
        "cube empty": ((np.zeros((0, 3)), np.zeros((0, 2), int), cv, ce), {}, 1.5773502691896257, 1.5773502691896257),
        "cube 0-6": ((cv[:7], sub, cv, ce), {}, 0.394480673372574, 0.3221687836487032),
        "cube + vertex 8": (
            (np.vstack([cv, [[50.0, 50, 50]]]), np.vstack([ce, [[8, 0], [8, 7]]]), cv, ce),
            {},
            0.07110655833052039,
            0.18042195912175804,
        ),
        "cube x2 shifted": ((cv * 2 + [1000.0, 0, 0], ce, cv, ce), {}, 5.314084872698858e-17, 8.031709560115651),
        "cube x2 shifted no prereg": (
            (cv * 2 + [1000.0, 0, 0], ce, cv, ce),
            {"preregister": False},
            8.031709560115651,
            8.031709560115651,
        ),
        "grid Q1": ((gv, gpe, gv, gge), {}, 1.420381089972361, 0.0),
        "Q2 prereg": ((Q2_PRED, [(1, 3)], Q2_GT, [(0, 1)]), {}, 4.869922786520795, 2.353553390593274),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_reference_values_of_the_2024_scorer(case):
    args, kw, s23, corrected = _cases()[case]
    got = wed(*args, variant="s23dr2024", **kw)
    assert _rel(got, s23), (got, s23)
    got_c = wed(*args, variant="corrected", **kw)
    assert _rel(got_c, corrected), (got_c, corrected)


def test_q1_worked_example_set_order():
    v = np.random.default_rng(0).normal(size=(10, 3))
    assert wed(v, [(9, 1)], v, [(1, 9)], variant="s23dr2024", preregister=False) == 2.0
    assert wed(v, [(1, 9)], v, [(1, 9)], variant="s23dr2024", preregister=False) == 0.0
    # (7, 15) and (15, 7): a 2-element set of ints congruent mod 8 reverses this insertion order
    v16 = np.random.default_rng(1).normal(size=(16, 3))
    assert wed(v16, [(15, 7)], v16, [(7, 15)], variant="s23dr2024", preregister=False) == 2.0
    assert wed(v16, [(7, 15)], v16, [(7, 15)], variant="s23dr2024", preregister=False) == 0.0
    # non-congruent pairs are order-free
    assert wed(v16, [(9, 2)], v16, [(2, 9)], variant="s23dr2024", preregister=False) == 0.0
    for variant in ("corrected", "mnn", "nearest", "ap"):
        assert wed(v, [(9, 1)], v, [(1, 9)], variant=variant) == 0.0


def test_q2_q4_worked_example_all_variants():
    args = (Q2_PRED, [(1, 3)], Q2_GT, [(0, 1)])
    assert _rel(wed(*args, variant="s23dr2024", preregister=False), 18.116608004833484, 1e-12)
    expected = (0.25 * math.sqrt(200) + 10 + 10) / 10
    for variant in ("corrected", "mnn", "nearest"):
        assert _rel(wed(*args, variant=variant), expected, 1e-12)
    assert expected == pytest.approx(2.353553390593274, abs=1e-15)
    assert _rel(wed(*args, variant="ap"), 18.76305461424021, 1e-12)


def test_q2_deletion_length_uses_positions_not_vertices():
    # Hand computation of the quirk: r = [1, 2, 3], c = [0, 1, 2]; the mapped key (0, 2) is deleted and its length
    # is read at pred positions 0 and 2: |(100, 100, 100) - (10, 0, 0)| = sqrt(28100)
    cost = 0.25 * math.sqrt(200) + math.sqrt(28100) + 10
    assert _rel(wed(Q2_PRED, [(1, 3)], Q2_GT, [(0, 1)], variant="s23dr2024", preregister=False), cost / 10, 1e-12)
    assert _rel(
        wed(Q2_PRED, [(1, 3)], Q2_GT, [(0, 1)], variant="s23dr2024", preregister=False, normalized=False), cost, 1e-12
    )


def test_q4_dangling_edges_are_free_only_in_s23dr2024():
    gt = np.array([(0.0, 0, 0), (10, 0, 0)])
    pred = np.array([(0.0, 0, 0), (10, 0, 0), (50, 0, 0)])  # vertex 2 is left out of the assignment
    s23 = wed(pred, [(0, 1), (1, 2)], gt, [(0, 1)], variant="s23dr2024", preregister=False)
    corrected = wed(pred, [(0, 1), (1, 2)], gt, [(0, 1)], preregister=False)
    assert s23 == pytest.approx(0.25 * 10 / 10, abs=1e-15)  # only the vertex deletion
    assert corrected == pytest.approx((0.25 * 10 + 40) / 10, abs=1e-15)  # plus the dangling edge's length


def test_q3_identity_is_not_exactly_zero_with_preregistration(cube):
    v, e = cube
    assert wed(v, e, v, e, variant="s23dr2024") > 0.0
    assert wed(v, e, v, e, variant="s23dr2024") < 1e-15
    assert wed(v, e, v, e) == 0.0


def test_fig1_split_cube():
    v, e = cube_wireframe()
    sv, se, added = split_every_edge(v, e, [[0.5]] * len(e))
    assert added == 12
    assert _rel(wed(sv, se, v, e), 2.4330127018922, 1e-12)
    assert _rel(wed(sv, se, v, e), (12 * 0.25 * 100 * math.sqrt(3) + 24 * 50 + 1200) / 1200, 1e-12)
    assert _rel(wed(sv, se, v, e, variant="s23dr2024"), 1.5011596570704964)
    assert wed(sv, se, v, e, variant="ap") == 0.5


def test_mnn_and_nearest_assignments_hand_case():
    gt = np.array([(0.0, 0, 0), (10, 0, 0)])  # diameter 10, total GT edge length 10
    # distances: pred0 [2, 8], pred1 [1, 9], pred2 [9, 1]; gt0's nearest pred is 1, gt1's is 2 (both mutual)
    pred = np.array([(2.0, 0, 0), (1, 0, 0), (9, 0, 0)])
    expected = (1 + 1 + 0.25 * 10) / 10  # two moves, pred 0 deleted; (1, 2) maps onto the GT edge
    for variant in ("mnn", "nearest", "corrected"):
        assert wed(pred, [(1, 2)], gt, [(0, 1)], variant=variant) == pytest.approx(expected, abs=1e-15)
    # pred 0 at (6, 0, 0) snaps to gt1 but gt1's nearest is pred 2: deleted by both rules; its edge (0, 1) pays 5
    pred2 = np.array([(6.0, 0, 0), (1, 0, 0), (9, 0, 0)])
    exp2 = (1 + 1 + 0.25 * 10 + 5.0) / 10
    for variant in ("mnn", "nearest", "corrected"):
        assert wed(pred2, [(1, 2), (0, 1)], gt, [(0, 1)], variant=variant) == pytest.approx(exp2, abs=1e-15)


def test_mnn_differs_from_nearest():
    gt = np.array([(0.0, 0, 0), (2, 0, 0)])  # diameter 2, GT edge length 2
    # pred0 (1.2) is nearest to gt1 (0.8); pred1 (-1.5) snaps to gt0; gt0's nearest pred is pred0 (1.2 < 1.5)
    pred = np.array([(1.2, 0, 0), (-1.5, 0, 0)])
    # mnn keeps only (pred0, gt1): move 0.8, delete pred1 (0.5), insert gt0 (1.0), edge (0, 1) has an unassigned
    # end (2.7), the GT edge is not hit (2)
    assert wed(pred, [(0, 1)], gt, [(0, 1)], variant="mnn") == pytest.approx((0.8 + 0.5 + 1.0 + 2.7 + 2) / 2)
    # nearest gives gt0 its only snapper pred1: moves 0.8 + 1.5 and the edge maps onto the GT edge
    assert wed(pred, [(0, 1)], gt, [(0, 1)], variant="nearest") == pytest.approx(2.3 / 2)
    assert wed(pred, [(0, 1)], gt, [(0, 1)], variant="corrected") == pytest.approx(2.3 / 2)


def test_ap_snapping_collapse_and_extra_pairs():
    gt = np.array([(0.0, 0, 0), (10, 0, 0), (10, 10, 0)])
    # pred 0, 1 snap to gt 0 (edge (0,1) collapses: free), pred 2 snaps to gt 2 -> pair {0, 2} is not a GT edge
    pred = np.array([(0.0, 1, 0), (1, 0, 0), (10, 9, 0)])
    cost = 1 + 1 + 1 + math.sqrt(200) + 10 + 10  # snapping, extra pair {0, 2}, GT edges (0,1), (1,2) not hit
    got = wed(pred, [(0, 1), (1, 2)], gt, [(0, 1), (1, 2)], variant="ap")
    assert got == pytest.approx(cost / 20, abs=1e-14)
    assert wed(np.zeros((0, 3)), [], gt, [(0, 1), (1, 2)], variant="ap") == 1.0


def test_absolute_costs_ce_and_unnormalised():
    gt = np.array([(0.0, 0, 0), (10, 0, 0)])
    pred = np.array([(0.0, 0, 0)])
    assert wed(pred, [], gt, [(0, 1)], cv_ins=3.0, normalized=False) == pytest.approx(3.0 + 10.0)
    assert wed(pred, [], gt, [(0, 1)], cv_ins=3.0, ce=2.0, normalized=False) == pytest.approx(3.0 + 20.0)
    assert wed(pred, [], gt, [(0, 1)], cv_ins=0, normalized=True) == 1.0


def test_preregistration_maps_a_single_predicted_vertex_onto_the_gt_mean():
    gt = np.array([(0.0, 0, 0), (3, 4, 0)])
    pred = np.array([(7.0, 7, 7)])
    # preregistration of a single vertex maps it onto the GT mean (its std is 0 -> 1)
    got = wed(pred, [], gt, [(0, 1)], preregister=True, normalized=False)
    assert got == pytest.approx(2.5 + 0.5 * 5 + 5.0)


def test_wed_errors():
    v = np.array([(0.0, 0, 0), (1, 0, 0)])
    with pytest.raises(ValueError, match="variant"):
        wed(v, [(0, 1)], v, [(0, 1)], variant="hungarian")
    with pytest.raises(ValueError, match="cv_ins and cv_del"):
        wed(v, [(0, 1)], v, [(0, 1)], variant="ap", cv_ins=-1.0)
    with pytest.raises(ValueError, match="zero total length"):
        wed(v, [(0, 1)], np.zeros((2, 3)), [(0, 1)])
    with pytest.raises(ValueError, match="gt_edges is empty"):
        wed(v, [(0, 1)], v, [])
    with pytest.raises(ValueError, match="finite"):
        wed(v, [(0, 1)], v, [(0, 1)], ce=math.inf)
    with pytest.raises(TypeError, match="cv_del"):
        wed(v, [(0, 1)], v, [(0, 1)], cv_del="big")
