"""The built documentation site: every public name has an API entry, and in headless chromium the home page and a
family page show their figures and rendered formulas (MathJax served by the site itself, no network)."""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import ROOT, chromium, chromium_run, load_docs_module

pytestmark = pytest.mark.slow  # building the site imports every room and renders ~300 docstrings (1-2 minutes)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site CI built (``SCENEMETRICS_DOCS_SITE``), else one built here with ``mkdocs build --strict``."""
    built = os.environ.get("SCENEMETRICS_DOCS_SITE")
    if built:
        assert (Path(built) / "index.html").is_file(), f"SCENEMETRICS_DOCS_SITE={built} holds no built site"
        return Path(built)
    pytest.importorskip("mkdocs", reason='the docs extra is not installed (pip install ".[docs]")')
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_every_public_name_has_an_anchor_in_the_built_reference(site):
    api = load_docs_module("_hooks/api.py")
    ids: set[str] = set()
    for page in (site / "reference").rglob("index.html"):
        ids |= set(re.findall(r'id="([\w.]+)"', page.read_text()))
    names = [f"{pkg}.{n}" for pkg, *_ in api.MODULES for n in importlib.import_module(pkg).__all__]
    assert len(names) > 250
    assert [n for n in names if n not in ids] == []
    # rendered from the docstring: PuzzleSim's signature and its Args table are on its page
    puzzlesim = (site / "reference" / "puzzlesim" / "index.html").read_text()
    assert "set_references" in puzzlesim and "keep_maps" in puzzlesim


_PROBE = """
<script>
window.addEventListener("load", () => {
  const done = () => {
    const images = Array.from(document.images, (img) => [img.getAttribute("src"), img.naturalWidth]);
    const math = document.querySelectorAll(".arithmatex").length;
    const rendered = document.querySelectorAll(".arithmatex mjx-container svg").length;
    document.body.setAttribute("data-probe", JSON.stringify({images, math, rendered}));
  };
  (window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve()).then(done, done);
});
</script>
"""


def _probe(site: Path, page: str, tmp_path: Path) -> dict:
    copy = tmp_path / "site"
    if not copy.exists():
        shutil.copytree(site, copy)
    target = copy / page
    probe = target.with_name("probe.html")  # beside the page, so its relative links resolve the same way
    probe.write_text(target.read_text().replace('loading="lazy"', "").replace("</body>", _PROBE + "</body>"))
    proc = chromium_run(["--dump-dom", probe.as_uri()], tmp_path / "profile")
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match, "the probe script did not run"
    return json.loads(html.unescape(match.group(1)))


@pytest.mark.skipif(chromium() is None, reason="no chromium binary (Debian: apt-get install -y chromium)")
@pytest.mark.parametrize(
    ("page", "figures", "min_math"),
    [("index.html", 6, 0), ("puzzlesim/index.html", 1, 3)],
)  # fmt: skip
def test_page_shows_figures_and_rendered_math(site, tmp_path, page, figures, min_math):
    info = _probe(site, page, tmp_path)
    shown = [src for src, width in info["images"] if "figures/" in src and width > 0]
    broken = [src for src, width in info["images"] if width == 0]
    assert broken == []
    assert len(shown) >= figures
    assert info["math"] >= min_math
    assert info["rendered"] == info["math"], "some formulas were not typeset by MathJax"
