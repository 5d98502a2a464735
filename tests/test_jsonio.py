"""scenemetrics.jsonio: the one JSON writer (standard JSON; non-finite numbers as null plus their reason)."""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np
import pytest

from scenemetrics.jsonio import NON_FINITE_KEY, dumps, restore, standard, write_json


def _strict(text: str):
    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


def test_non_finite_numbers_become_null_with_json_pointers():
    doc = {
        "a": math.nan,
        "b": [1.0, math.inf, {"c/d": -math.inf, "e~f": 2}],
        "ok": 0.5,
        "n": np.float32("nan"),
        "arr": np.array([1.0, np.inf]),
        "flag": True,
    }
    text = dumps(doc)
    parsed = _strict(text)
    assert parsed["a"] is None and parsed["b"][1] is None and parsed["b"][2]["c/d"] is None
    assert parsed["n"] is None and parsed["arr"] == [1.0, None] and parsed["flag"] is True
    # RFC 6901: "/" is escaped as "~1" and "~" as "~0"
    assert parsed[NON_FINITE_KEY] == {
        "/a": "NaN",
        "/b/1": "Infinity",
        "/b/2/c~1d": "-Infinity",
        "/n": "NaN",
        "/arr/1": "Infinity",
    }
    back = restore(_strict(text))
    assert math.isnan(back["a"]) and back["b"][1] == math.inf and back["b"][2]["c/d"] == -math.inf
    assert math.isnan(back["n"]) and back["arr"] == [1.0, math.inf] and back["b"][2]["e~f"] == 2
    assert NON_FINITE_KEY not in back


def test_finite_documents_are_unchanged():
    doc = {"x": [1, 2.5, "s", None], "y": {"z": False}}
    assert standard(doc) == doc
    assert _strict(dumps(doc)) == doc


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="top level"):
        standard([math.nan])
    with pytest.raises(ValueError, match="non_finite"):
        standard({"non_finite": 1, "x": math.nan})
    with pytest.raises(TypeError, match="/x"):
        standard({"x": object()})


def test_write_json_is_standard_and_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_json(tmp_path / "sub" / "r.json", {"psnr": math.inf})
    finally:
        os.umask(old)
    assert path == tmp_path / "sub" / "r.json"
    assert _strict(path.read_text()) == {"psnr": None, "non_finite": {"/psnr": "Infinity"}}
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left behind
