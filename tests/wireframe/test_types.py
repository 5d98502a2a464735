"""Input validation (spec section 3), clean_wireframe and accepted input forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scenemetrics.wireframe import (
    Wireframe,
    as_wireframe,
    clean_wireframe,
    corner_prf,
    edge_prf,
    validate_wireframe,
    wed,
)

V = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
E = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])


def _call(side: str, vertices, edges):
    """Run a metric with the bad input on one side and a good wireframe on the other."""
    if side == "pred":
        return wed(vertices, edges, V, E)
    return wed(V, E, vertices, edges)


BAD = [
    ("vertices (N, 2)", np.zeros((4, 2)), E, ValueError, "_vertices must have shape (N, 3)"),
    ("vertices 1-D", np.zeros(6), np.zeros((0, 2), int), ValueError, "_vertices must have shape (N, 3)"),
    ("vertices bool", np.ones((4, 3), bool), E, TypeError, "real numbers"),
    ("vertices str", [["a", "b", "c"]] * 4, E, TypeError, "real numbers"),
    ("vertices ragged", [[0, 0, 0], [1, 0]], [], ValueError, "could not be read"),
    ("vertex nan", np.vstack([V[:3], [np.nan, 0, 0]]), E, ValueError, "_vertices[3] = (nan, 0.0, 0.0) is not finite"),
    ("vertex inf", np.vstack([V[:3], [0, np.inf, 0]]), E, ValueError, "is not finite"),
    ("edges (M, 3)", V, np.zeros((2, 3), int), ValueError, "_edges must have shape (M, 2)"),
    ("edges float", V, E.astype(float), TypeError, "must be integer indices"),
    ("edges bool", V, np.ones((2, 2), bool), TypeError, "must be integer indices"),
    ("index too large", V, np.array([[0, 1], [2, 17]]), ValueError, "_edges[1] = (2, 17) indexes a vertex"),
    ("index negative", V, np.array([[0, 1], [-1, 2]]), ValueError, "_edges[1] = (-1, 2) indexes a vertex"),
    ("self-loop", V, np.array([[0, 1], [2, 2]]), ValueError, "_edges[1] = (2, 2) is a self-loop"),
    ("duplicate", V, np.array([[0, 1], [1, 2], [0, 1]]), ValueError, "_edges[2] = (0, 1) duplicates"),
    ("reversed duplicate", V, np.array([[0, 1], [1, 2], [1, 0]]), ValueError, "clean_wireframe"),
]


@pytest.mark.parametrize("side", ["pred", "gt"])
@pytest.mark.parametrize(("case", "verts", "edges", "exc", "msg"), BAD, ids=[b[0] for b in BAD])
def test_invalid_inputs_raise_naming_the_argument(side, case, verts, edges, exc, msg):
    with pytest.raises(exc) as info:
        _call(side, verts, edges)
    text = str(info.value)
    assert msg in text
    assert text.startswith(f"{side}_")  # the message names the argument


def test_uint64_index_beyond_int64_is_rejected_not_wrapped():
    edges = np.array([[0, 2**63 + 1]], dtype=np.uint64)
    with pytest.raises(ValueError, match="indexes a vertex"):
        validate_wireframe(V, edges)


def test_empty_inputs_are_accepted_with_canonical_shapes():
    for empty in ([], np.zeros((0,)), np.zeros((0, 5)), torch.zeros(0)):
        wf = validate_wireframe(empty, empty)
        assert wf.vertices.shape == (0, 3) and wf.vertices.dtype == np.float64
        assert wf.edges.shape == (0, 2) and wf.edges.dtype == np.int64


def test_valid_oddities_coincident_vertices_zero_length_edge_isolated_vertex():
    v = np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 0], [5, 5, 5]])
    wf = validate_wireframe(v, [[0, 1], [1, 2]])
    assert wf.edges.tolist() == [[0, 1], [1, 2]]


def test_gt_without_vertices_or_edges_is_an_error_empty_prediction_is_not():
    with pytest.raises(ValueError, match="gt_vertices is empty"):
        corner_prf(V, [], threshold=1.0)
    with pytest.raises(ValueError, match="gt_edges is empty"):
        edge_prf(V, E, V, [], threshold=1.0)
    assert corner_prf([], V, threshold=1.0).f1 == 0.0


def test_validation_copies_and_converts():
    v_int = V.astype(np.int32)
    wf = validate_wireframe(v_int, E.astype(np.int16))
    assert wf.vertices.dtype == np.float64 and wf.edges.dtype == np.int64
    wf.vertices[0, 0] = 99.0
    assert v_int[0, 0] == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_inputs_match_numpy(dtype):
    vt = torch.tensor(V, dtype=dtype, requires_grad=dtype.is_floating_point)
    expect = wed(V, E, V + 0.25, E)
    got = wed(vt, torch.tensor(E), torch.tensor(V + 0.25, dtype=dtype), torch.tensor(E))
    assert got == pytest.approx(expect, rel=1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-12)


def test_list_and_mapping_inputs_match_numpy():
    pred = V + np.array([0.1, 0.0, 0.05])
    expect = edge_prf(pred, E[:3], V, E, threshold=0.2)
    assert edge_prf(pred.tolist(), E[:3].tolist(), V.tolist(), E.tolist(), threshold=0.2) == expect
    hoho = as_wireframe({"wf_vertices": pred, "wf_edges": E[:3]})
    plain = as_wireframe({"vertices": pred.tolist(), "edges": E[:3].tolist()})
    assert np.array_equal(hoho.vertices, pred) and np.array_equal(plain.edges, E[:3])
    assert as_wireframe((pred, E)).vertices.shape == (4, 3)
    assert isinstance(as_wireframe(Wireframe(V, E)), Wireframe)


def test_as_wireframe_rejects_other_objects():
    with pytest.raises(TypeError, match="mapping must hold"):
        as_wireframe({"points": V})
    with pytest.raises(TypeError, match="must be a Wireframe"):
        as_wireframe(V)


def test_clean_wireframe_drops_self_loops_and_duplicates_keeping_first_orientation():
    wf = clean_wireframe(V, [[1, 0], [2, 2], [0, 1], [2, 3], [3, 2], [3, 0]])
    assert wf.edges.tolist() == [[1, 0], [2, 3], [3, 0]]
    assert np.array_equal(wf.vertices, V)
    validate_wireframe(*wf)


def test_clean_wireframe_merges_by_distance_single_linkage_and_renumbers():
    v = np.array([[5.0, 0, 0], [0, 0, 0], [5.0, 0, 0.004], [0.006, 0, 0], [5.0, 0, 0.008], [9, 9, 9]])
    e = [[0, 1], [2, 3], [0, 2], [4, 5], [1, 3]]
    wf = clean_wireframe(v, e, merge_distance=0.005)
    # groups by first appearance: {0, 2, 4} (chained 0.004 apart), {1}, {3}? 0.006 > 0.005 so 1 and 3 stay apart
    assert len(wf.vertices) == 4
    assert np.allclose(wf.vertices[0], [5.0, 0, 0.004])
    assert np.allclose(wf.vertices[1], [0, 0, 0]) and np.allclose(wf.vertices[2], [0.006, 0, 0])
    assert np.allclose(wf.vertices[3], [9, 9, 9])
    # (0,1) -> (0,1); (2,3) -> (0,2); (0,2) -> self-loop dropped; (4,5) -> (0,3); (1,3) -> (1,2)
    assert wf.edges.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2]]
    validate_wireframe(*wf)


def test_clean_wireframe_merge_is_strict_and_validates():
    v = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    assert len(clean_wireframe(v, [[0, 1]], merge_distance=1.0).vertices) == 2
    assert len(clean_wireframe(v, [[0, 1]], merge_distance=1.0 + 1e-9).vertices) == 1
    with pytest.raises(ValueError, match="merge_distance"):
        clean_wireframe(v, [[0, 1]], merge_distance=-1)
    with pytest.raises(ValueError, match="indexes a vertex"):
        clean_wireframe(v, [[0, 5]])
