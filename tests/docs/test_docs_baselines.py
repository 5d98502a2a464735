"""docs/baselines.md's table of options is rendered from the baselines' option schemas (as docs/eval.md's)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.test_docs_options import END, START, render_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "baselines.md"
BASELINES = ("fid", "kid", "jfid", "cmmd", "jcmmd", "clip_s", "clip_s_src", "fd_dinov2", "jfd_dinov2", "dino_sim",
             "dino_sim_src")  # fmt: skip


def test_baselines_docs_table_is_the_schemas() -> None:
    text = DOCS.read_text()
    documented = text[text.index(START) + len(START) : text.index(END)].strip()
    expected = render_table(BASELINES)
    assert documented == expected, f"docs/baselines.md's table of options is out of date; paste:\n{expected}"
