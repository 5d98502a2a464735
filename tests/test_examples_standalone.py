"""Every script in ``examples/`` runs from an install: it imports the package (and its extras), never the test tree,
and never edits ``sys.path`` to reach files of a clone (a sibling example beside it is found without that)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_examples_are_found() -> None:
    assert {"monitor_gsplat.py", "monitor_tiny_splat.py", "callbacks_lightning_gsplat.py"} <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_needs_no_clone(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    siblings = {p.stem for p in EXAMPLES}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]] if node.level == 0 else ["<relative>"]
        else:
            roots = []
        for root in roots:
            assert root not in {"tests", "benchmarks", "examples", "<relative>"}, f"{path.name}:{node.lineno}"
            if root in siblings:
                assert (path.parent / f"{root}.py").is_file()
        if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
            raise AssertionError(f"{path.name}:{node.lineno} edits sys.path")
