"""The property suite (paper Table 2): definitional cells on synthetic houses, table format and errors."""

from __future__ import annotations

import numpy as np
import pytest

from scenemetrics.wireframe import (
    PASS_FRACTION,
    PROPERTY_TESTS,
    TABLE2_COLUMNS,
    PropertyTable,
    format_property_table,
    make_metric,
    property_suite,
    property_table,
    synthetic_houses,
)

TEST_IDS = [t for t, _ in PROPERTY_TESTS]
SYMMETRY = ["symmetry_zero_mean", "near_symmetry_zero_mean", "symmetry_shift", "near_symmetry_shift"]


@pytest.fixture(scope="module")
def houses():
    return synthetic_houses(8, seed=0)


@pytest.fixture(scope="module")
def tables(houses):
    opts = {"threshold": 0.5}
    names = ["corner_precision", "corner_recall", "corner_f1", "edge_precision", "edge_recall", "edge_f1"]
    out = {n: property_suite(n, houses, metric_options=opts) for n in names}
    for n in ("wed", "wed_prereg", "spectral_l2"):
        out[n] = property_suite(n, houses)
    return out


def test_table_layout(tables):
    t = tables["wed"]
    assert list(t) == TEST_IDS and len(t) == 17
    assert t.n_houses == 8 and t.metric_name == "wed"
    assert all(0.0 <= t[k] <= 1.0 for k in t)
    assert t.passed == {k: t[k] >= PASS_FRACTION for k in TEST_IDS}
    assert t.pass_count == sum(t.passed.values())
    assert all(len(v) == 8 for v in t.per_house.values())


@pytest.mark.parametrize(
    "name", ["corner_precision", "corner_recall", "corner_f1", "edge_precision", "edge_recall", "edge_f1"]
)
def test_prf_metrics_are_identities_and_symmetric(tables, name):
    t = tables[name]
    assert t["identity"] == 1.0 and t["near_identity"] == 1.0
    for row in SYMMETRY:
        assert t[row] == 1.0, row


def test_corner_metric_cells(tables):
    assert tables["corner_recall"]["monotonic_delete_vertices"] == 1.0
    assert tables["corner_f1"]["monotonic_delete_vertices"] == 1.0
    assert tables["corner_precision"]["monotonic_delete_vertices"] == 0.0  # precision stays 1
    for name in ("corner_precision", "corner_recall", "corner_f1"):
        assert tables[name]["monotonic_wrong_edges"] == 0.0  # corners do not change
        assert tables[name]["monotonic_delete_edges"] == 0.0


def test_edge_metric_cells(tables):
    assert tables["edge_f1"]["monotonic_wrong_edges"] == 1.0
    assert tables["edge_f1"]["monotonic_delete_edges"] == 1.0
    # a re-attached edge keeps its geometry: the Hausdorff matching is insensitive to "disconnect"
    for name in ("edge_precision", "edge_recall", "edge_f1"):
        assert tables[name]["monotonic_disconnect_edges"] == 0.0


def test_wed_cells(tables):
    t = tables["wed"]
    assert t["identity"] == 1.0
    for row in ("monotonic_wrong_edges", "monotonic_delete_vertices", "monotonic_delete_edges"):
        assert t[row] == 1.0, row
    assert tables["wed_prereg"]["identity"] <= 0.5  # Q1/Q3: relabelled copies do not score exactly 0
    assert tables["wed_prereg"]["near_identity"] == 1.0


def test_spectral_fails_exact_identity_under_relabelling_but_not_near_identity(tables):
    assert tables["spectral_l2"]["identity"] < PASS_FRACTION
    assert tables["spectral_l2"]["near_identity"] == 1.0


def test_exact_copy_instead_of_relabelling(houses):
    for name, opts in (("wed", {}), ("corner_f1", {"threshold": 0.5}), ("edge_f1", {"threshold": 0.5})):
        t = property_suite(name, houses[:3], metric_options=opts, relabel=False, steps=3)
        assert t["identity"] == 1.0, name
    assert property_suite("spectral_l1", houses[:3], relabel=False, steps=3)["identity"] == 1.0


def test_constant_metric_hand_computed_column(houses):
    def zero(pv, pe, gv, ge):
        return 0.0

    t = property_suite(zero, houses[:3], higher_is_better=False, steps=3)
    expected = {k: 0.0 if k.startswith("monotonic") else 1.0 for k in TEST_IDS}
    assert dict(t) == expected
    assert t.pass_count == 11


def test_higher_is_better_metric_uses_one_minus_value(houses):
    def one(pv, pe, gv, ge):
        return 1.0

    one.higher_is_better = True
    t = property_suite(one, houses[:2], steps=2)
    assert t["identity"] == 1.0 and t.pass_count == 11

    def two(pv, pe, gv, ge):
        return 2.0

    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        property_suite(two, houses[:2], higher_is_better=True, steps=2)


def test_nan_values_fail(houses):
    t = property_suite(lambda *a: float("nan"), houses[:2], higher_is_better=False, steps=2)
    assert t.pass_count == 0


def test_results_are_reproducible_per_seed(houses):
    a = property_suite("wed_mnn", houses[:3], steps=4, seed=5)
    b = property_suite("wed_mnn", houses[:3], steps=4, seed=5)
    assert dict(a) == dict(b)
    assert {k: v.tolist() for k, v in a.per_house.items()} == {k: v.tolist() for k, v in b.per_house.items()}


def test_input_errors(houses):
    with pytest.raises(ValueError, match="at least 2 houses"):
        property_suite("wed", houses[:1])
    small = synthetic_houses(2, annex=False)  # 10 vertices, 17 edges
    with pytest.raises(ValueError, match=r"gt_wireframes\[0\] has 10 vertices"):
        property_suite("wed", small, steps=10)
    property_suite("wed", small, steps=8)  # 10 >= 8 + 2
    with pytest.raises(ValueError, match="higher_is_better is required"):
        property_suite(lambda *a: 0.0, houses[:2])
    with pytest.raises(ValueError, match="needs the option"):
        property_suite("corner_f1", houses[:2])
    with pytest.raises(ValueError, match="metric_options only apply"):
        property_suite(make_metric("wed"), houses[:2], metric_options={"ce": 2.0})
    with pytest.raises(ValueError, match="steps"):
        property_suite("wed", houses[:2], steps=0)


def test_property_table_routes_options_and_formats(houses):
    metrics = {"corner_f1": "corner_f1", "wed": "wed", "mine": make_metric("edge_f1", threshold=0.5)}
    tabs = property_table(metrics, houses[:2], steps=2, metric_options={"threshold": 0.5})
    assert list(tabs) == ["corner_f1", "wed", "mine"]
    per = property_table(
        {"corner_f1": "corner_f1", "wed": "wed"}, houses[:2], steps=2, metric_options={"corner_f1": {"threshold": 0.5}}
    )
    assert dict(per["corner_f1"]) == dict(tabs["corner_f1"])
    with pytest.raises(TypeError, match="taken by none"):
        property_table({"wed": "wed"}, houses[:2], steps=2, metric_options={"radius": 0.5})

    text = format_property_table(tabs)
    lines = text.splitlines()
    assert len(lines) == 2 + 17 + 1
    labels = dict(TABLE2_COLUMNS)
    assert lines[0] == f"| Property | {labels['corner_f1']} | wed | {labels['edge_f1']} |"
    assert [ln.split(" | ")[0].lstrip("| ") for ln in lines[2:19]] == [label for _, label in PROPERTY_TESTS]
    assert lines[-1].startswith("| Pass count | ") and lines[-1].count("/17") == 3
    assert tabs["wed"].to_markdown().splitlines()[0] == "| Property | wed |"


def test_property_table_object_from_per_house_results():
    per_house = {k: np.array([True] * 9 + [False]) for k in TEST_IDS}
    per_house["identity"] = np.array([True] * 8 + [False] * 2)
    t = PropertyTable("x", per_house)
    assert t["monotonic_wrong_edges"] == 0.9 and t.passed["monotonic_wrong_edges"]
    assert t["identity"] == 0.8 and not t.passed["identity"]
    assert t.pass_count == 16
