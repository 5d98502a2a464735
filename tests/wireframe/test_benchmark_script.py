"""The benchmark of spec 12 lives at ``benchmarks/wireframe.py``; its naive WED reference agrees with ``wed``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from scenemetrics.wireframe import wed

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "wireframe.py"


def _load():
    spec = importlib.util.spec_from_file_location("wireframe_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_script_has_the_spec_name_and_its_pairs_follow_the_recipe():
    assert SCRIPT.is_file(), "spec 12 names the benchmark benchmarks/wireframe.py"
    bench = _load()
    pairs = bench.make_pairs(3)
    for pv, pe, gv, ge in pairs:
        # GT edges minus 10 % (rounded), plus one edge for each of the 2 extra vertices
        assert len(pv) == len(gv) + 2
        assert len(pe) == len(ge) - round(0.1 * len(ge)) + 2
        assert np.abs(bench.naive_wed(pv, pe, gv, ge) - wed(pv, pe, gv, ge)) < 1e-12
