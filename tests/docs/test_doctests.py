"""The ``>>>`` examples of every scenemetrics module run and print what they say."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import scenemetrics

SRC = Path(scenemetrics.__file__).resolve().parent

# examples that build networks or run whole pipelines (over ~3 s each on 2 shared cores): left to `-m slow`
SLOW = {
    "scenemetrics.agreement",
    "scenemetrics.agreement.stats",
    "scenemetrics.callbacks.evaluation",
    "scenemetrics.callbacks.lightning",
    "scenemetrics.callbacks.nerfstudio",
    "scenemetrics.inpainting.loop",
    "scenemetrics.osim.functional",
    "scenemetrics.osim.metric",
    "scenemetrics.osim.patches",
    "scenemetrics.osim.saliency",
    "scenemetrics.osim.random",
    "scenemetrics.osim.yolox",
    "scenemetrics.puzzlesim",
    "scenemetrics.puzzlesim.functional",
    "scenemetrics.puzzlesim.memory",
}


# modules whose examples use an optional extra: their doctests skip, naming the extra, where it is not installed (the
# README's environment has no nerfstudio; a minimal `.[dev]` install has none of them)
NEEDS = {
    "scenemetrics.callbacks.lightning": ("lightning",),
    "scenemetrics.callbacks.nerfstudio": ("nerfstudio",),
    "scenemetrics.callbacks.nerfstudio_methods": ("nerfstudio",),
    "scenemetrics.inpainting.inpainters": ("inpaint",),
    "scenemetrics.inpainting.loop": ("inpaint",),
    "scenemetrics.prism.training": ("lightning",),
    "scenemetrics.prism.viewmatch.backends": ("inpaint",),
    "scenemetrics.prism.viewmatch.masks": ("inpaint",),
}


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(SRC.rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_modules_with_examples_are_found():
    assert {"scenemetrics", "scenemetrics.puzzlesim", "scenemetrics.callbacks.monitor"} <= set(MODULES)
    assert set(MODULES) >= SLOW, f"modules listed as slow without an example any more: {sorted(SLOW - set(MODULES))}"
    assert set(MODULES) >= set(NEEDS), f"listed in NEEDS without an example: {sorted(set(NEEDS) - set(MODULES))}"


@pytest.mark.parametrize(
    "name",
    [pytest.param(m, marks=[*([pytest.mark.slow] if m in SLOW else []), pytest.mark.extra(*NEEDS.get(m, ()))])
     for m in MODULES],
)  # fmt: skip
def test_docstring_examples(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name, globs=dict(vars(module)))
    tests = [t for t in tests if t.examples and (t.name == name or t.name.startswith(name + "."))]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)[-6000:]
