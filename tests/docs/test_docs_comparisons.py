"""The figures of "Comparing metrics the way the papers did" come from the current ``docs/gen_comparison_figures.py``
(their hashes are checked with every other figure's by ``test_docs_figures.py``)."""

from __future__ import annotations

import json

from .helpers import DOCS, load_docs_module


def test_comparison_figures_come_from_the_current_script():
    manifest = json.loads((DOCS / "figures" / "MANIFEST.json").read_text())
    gen = load_docs_module("gen_comparison_figures.py")
    assert manifest["comparisons_generator_sha256"] == gen.generator_hash(), (
        "docs/gen_comparison_figures.py changed: rerun it"
    )
    made = {name for name, entry in manifest["figures"].items() if entry["group"] == "comparisons"}
    assert made == {"comparisons_sweep.png", "comparisons_sweep.md", "comparisons_baselines.md",
                    "comparisons_distribution.md", "comparisons_objects.png"}  # fmt: skip
    page = (DOCS / "guides" / "paper-comparisons.md").read_text()
    assert all(f"figures/{name}" in page for name in made)
