"""Categories loader, label normalisation and per-label matching (spec §2.1, §2.2, §5.1)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from scenemetrics.openlex3d import CATEGORIES, EXCLUDED_LABELS, Categories, ObjectLabels, load_categories
from scenemetrics.openlex3d import normalize_label as nl

from .ol3_helpers import categories_dict, sample


def test_constants():
    assert CATEGORIES == ("synonyms", "depictions", "vis_sim", "clutter", "missing", "incorrect")
    assert EXCLUDED_LABELS == ("wall", "floor", "ceiling", "doorframe", "ledge", "windowledge")


def test_normalize_only_removes_ascii_spaces():
    assert nl("counter top") == "countertop"
    assert nl(" a  b ") == "ab"
    assert nl("Chair") == "Chair"
    assert nl("tab\tlabel") == "tab\tlabel"
    assert nl("non\u00a0breaking") == "non\u00a0breaking"


def test_round_trip_and_clutter_forms():
    data = categories_dict(
        sample(12, ["sofa", "couch"], ["flowers"], ["arm chair"], ["14", 15, " 16"], name="sofa", flag="ambiguous"),
        sample(14, ["table"]),
        sample(15, ["lamp"]),
        sample(16, ["rug"]),
    )
    cats = Categories.from_dict(data)
    obj = cats[12]
    assert obj == ObjectLabels(12, "sofa", ("sofa", "couch"), ("flowers",), ("arm chair",), (14, 15, 16), "ambiguous")
    assert list(cats) == [12, 14, 15, 16] and len(cats) == 4
    again = Categories.from_dict(cats.to_dict())
    assert dict(again.items()) == dict(cats.items())
    assert cats.to_dict()["dataset"]["samples"][0]["labels"]["image_attributes"]["clutter"] == ["14", "15", "16"]
    assert cats.to_dict()["dataset"]["samples"][0]["labels"]["flag"] == "ambiguous"
    assert "flag" not in cats.to_dict()["dataset"]["samples"][1]["labels"]


def test_missing_optional_keys_default_to_empty():
    data = {"dataset": {"samples": [{"object_id": 3}, {"object_id": 4, "labels": {"image_attributes": {}}}]}}
    cats = Categories.from_dict(data)
    assert cats[3] == ObjectLabels(3, "", (), (), (), (), None)
    assert cats[4].synonyms == () and cats[4].clutter == ()
    assert not cats.is_evaluated(3)


@pytest.mark.parametrize(
    ("samples", "match"),
    [
        ([sample(1), sample(1)], "sample 1: duplicate `object_id` 1"),
        ([{"name": "x"}], "sample 0: missing `object_id`"),
        ([{"object_id": "3"}], "sample 0: `object_id` must be an int"),
        ([{"object_id": True}], "sample 0: `object_id` must be an int"),
        ([{"object_id": 1.0}], "sample 0: `object_id` must be an int"),
        ([sample(1), sample(2, clutter=["12a"])], r"sample 1: `clutter\[0\]` must be an int or a string of an int"),
        ([sample(2, clutter=[1.5])], r"`clutter\[0\]`"),
        ([sample(2, clutter=[True])], r"`clutter\[0\]`"),
        ([sample(2, syn=["a", 3])], r"sample 0: `synonyms\[1\]` must be a string"),
        ([{"object_id": 2, "labels": {"image_attributes": {"vis_sim": "chair"}}}], "`vis_sim` must be a list"),
        ([{"object_id": 2, "labels": {"image_attributes": []}}], "`labels.image_attributes` must be an object"),
    ],
)
def test_loader_errors(samples, match):
    with pytest.raises(ValueError, match=match):
        Categories.from_dict(categories_dict(*samples))


def test_loader_structure_errors(tmp_path):
    with pytest.raises(TypeError):
        Categories.from_dict([])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dataset"):
        Categories.from_dict({"samples": []})
    path = tmp_path / "gt_categories.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"gt_categories\.json: not valid JSON"):
        load_categories(path)
    path.write_text(json.dumps(categories_dict(sample(1), sample(1))))
    with pytest.raises(ValueError, match=r"gt_categories.json: sample 1: duplicate"):
        load_categories(path)


def test_unknown_clutter_warns_once_and_never_matches(tmp_path):
    path = tmp_path / "gt_categories.json"
    path.write_text(
        json.dumps(categories_dict(sample(1, ["sofa"], clutter=["7", "8"]), sample(2, ["lamp"], clutter=["9"])))
    )
    with pytest.warns(UserWarning, match=r"clutter ids \[7, 8, 9\]") as record:
        cats = load_categories(path)
    assert len([w for w in record if "clutter" in str(w.message)]) == 1
    assert cats[1].clutter == (7, 8)
    assert cats.match(1, "lamp") == "incorrect"


def test_no_warning_when_clutter_known():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Categories.from_dict(categories_dict(sample(1, ["a"], clutter=[2]), sample(2, ["b"], clutter=["1"])))


@pytest.fixture
def cats():
    return Categories.from_dict(
        categories_dict(
            sample(1, ["counter top", "Chair", "sofa"], ["dog"], ["sofa", "bench"], ["2", "1"]),
            sample(2, ["table"], ["poster"], ["desk"], []),
            sample(3, ["window ledge", "sill"]),
            sample(4, ["Wall"]),
            sample(5, [], ["cat"], ["rug"]),
            sample(6, ["tab\tlabel"]),
        )
    )


def test_match_rules(cats):
    assert cats.match(1, "countertop") == "synonyms"  # "counter top" normalised
    assert cats.match(1, "counter  top") == "synonyms"
    assert cats.match(1, "chair") == "incorrect"  # case-sensitive
    assert cats.match(1, "Chair") == "synonyms"
    assert cats.match(1, "sofa") == "synonyms"  # in synonyms and vis_sim: the earlier list wins
    assert cats.match(1, "dog") == "depictions"
    assert cats.match(1, "bench") == "vis_sim"
    assert cats.match(1, "poster") == "clutter"  # a depiction of neighbour 2
    assert cats.match(1, "desk") == "clutter"
    assert cats.match(1, "table") == "clutter"
    assert cats.match(6, "tablabel") == "incorrect"  # tabs are not stripped
    assert cats.match(6, "tab\tlabel") == "synonyms"
    with pytest.raises(KeyError):
        cats.match(99, "x")


def test_is_evaluated(cats):
    assert cats.is_evaluated(1)
    assert not cats.is_evaluated(3)  # "window ledge" normalises to the excluded "windowledge"
    assert cats.is_evaluated(4)  # "Wall" is not "wall" (case-sensitive)
    assert not cats.is_evaluated(4, excluded_labels=("Wall",))
    assert not cats.is_evaluated(5)  # no synonym
    assert not cats.is_evaluated(42)  # not in the file
    assert cats.is_evaluated(3, excluded_labels=())


def test_minus_100_never_evaluated():
    cats = Categories.from_dict(categories_dict(sample(-100, ["thing"])))
    assert not cats.is_evaluated(-100)


def test_code_table_equals_match(cats):
    prompts = ["countertop", "counter top", "chair", "Chair", "dog", "bench", "poster", "desk", "wall", "sofa"]
    ids = [1, 2, 4, 6]
    table = cats.code_table(ids, prompts)
    expected = np.array([[CATEGORIES.index(cats.match(o, p)) for p in prompts] for o in ids])
    np.testing.assert_array_equal(table, expected)
    assert table.dtype == np.int8


def test_package_is_lazy_and_set_ranking_stays_the_function():
    code = (
        "import sys, scenemetrics.openlex3d as ol3\n"
        "assert ol3.normalize_label('a b') == 'ab' and 'torch' not in sys.modules\n"
        "import scenemetrics.openlex3d.segmentation\n"  # imports the submodule set_ranking.py
        "from scenemetrics.openlex3d import set_ranking\n"
        "assert callable(set_ranking) and callable(ol3.set_ranking) and ol3.set_ranking is set_ranking\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_segmentation_modules_import_one_way():
    # segmentation.py (the shared pass and the public functions) imports the metric modules, never the reverse
    import ast

    import scenemetrics.openlex3d as ol3

    folder = Path(ol3.__file__).parent
    for name in ("topn", "set_ranking"):
        tree = ast.parse((folder / f"{name}.py").read_text())
        modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert "_scene" in modules and "segmentation" not in modules, (name, modules)
    seg = ast.parse((folder / "segmentation.py").read_text())
    assert {"topn", "set_ranking"} <= {n.module for n in ast.walk(seg) if isinstance(n, ast.ImportFrom)}
    # one import path for the two functions: the package's (no alias in the metric modules)
    assert not hasattr(importlib.import_module("scenemetrics.openlex3d.topn"), "topn_frequency")
    assert callable(ol3.set_ranking) and callable(ol3.topn_frequency)
