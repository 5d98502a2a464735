"""The HTML report: tables, images, escaping; opened in headless Chromium to check the images really load."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from scenemetrics.cli import main
from scenemetrics.evaluation.report import format_value
from scenemetrics.fileio import safe_name

from .conftest import PLUGIN, SCENES, VIEWS

ODD = "m #1 & <x>"  # a method folder name that needs HTML escaping and URL quoting


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, str]]] = {}
        self.imgs: list[dict[str, str]] = []
        self._table: str | None = None
        self.banners: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "table" and "id" in a:
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table and "data-method" in a:
            self.tables[self._table].append(a)
        elif tag == "img":
            self.imgs.append(a)
        elif tag == "div" and "banner" in a.get("class", ""):
            self.banners.append(a.get("id", ""))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None


@pytest.fixture(scope="module")
def report(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("report")
    root = Path(shutil.copytree(tree, base / "root"))
    (root / "m_noise").rename(root / ODD)
    out = base / "out"
    args = ["eval", "--root", str(root), "--out", str(out), "--metrics", "psnr,puzzlesim,standin", "--plugin"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCENEMETRICS_OFFLINE", "1")
        assert main([*args, str(PLUGIN), "--random-weights", "--quiet", "--device", "cpu"]) == 0
    return out


def test_format_value():
    assert [format_value(v) for v in (31.4159, 0.123456, float("inf"), float("-inf"), None)] == [
        "31.42",
        "0.1235",
        "inf",
        "-inf",
        "\u2014",
    ]


def test_report_tables_images_and_banner(report):
    page = (report / "report" / "index.html").read_text()
    doc = _Collect()
    doc.feed(page)
    methods = sorted(["m_art", "m_clean", ODD])  # ODD sorts first (space < underscore)
    assert [r["data-method"] for r in doc.tables["leaderboard"]] == methods
    assert [r["data-method"] for r in doc.tables["pooled"]] == methods
    assert [(r["data-scene"], r["data-method"]) for r in doc.tables["per-scene"]] == [
        (s, m) for s in SCENES for m in methods
    ]
    assert "random-weights" in doc.banners and "UNCALIBRATED" in page
    assert "m #1 &amp; &lt;x&gt;" in page and "<x>" not in page
    srcs = [unquote(i["src"]) for i in doc.imgs]
    thumbs = [s for s in srcs if s.startswith("thumbs/")]
    assert len(thumbs) == 3 * len(SCENES) * len(VIEWS)
    # the odd method name is a folder name only through safe_name (its <, >, & and # never reach a path)
    assert f"thumbs/{safe_name(ODD)}/alpha/puzzlesim-000.png" in thumbs and safe_name(ODD) != ODD
    violins = [s for s in srcs if "violin" in s]
    assert violins == ["standin_violin_all.png", "standin_violin_000.png", "standin_violin_001.png"]
    for img in doc.imgs:
        path = report / "report" / unquote(img["src"])
        assert path.is_file() and path.stat().st_size > 0, img
        assert img["alt"] and int(img["width"]) > 0 and int(img["height"]) > 0
    # best values are highlighted; the clean renders equal their ground truth, so their PSNR is inf, which is shown
    # but never highlighted: the best finite PSNR is
    leaderboard = page[page.index('<table id="leaderboard"') :]
    leaderboard = leaderboard[: leaderboard.index("</table>")]
    rows = {m: leaderboard[leaderboard.index(f'data-method="{m}"') :].split("</tr>")[0] for m in ("m_clean", "m_art")}
    assert '<td class="value">inf</td>' in rows["m_clean"] and '<td class="best">inf</td>' not in page
    assert "is never highlighted" in page
    psnr_column = 2 + doc_columns(page).index("psnr")
    best_psnr = [m for m, row in rows.items() if _cells(row)[psnr_column].startswith('<td class="best"')]
    assert best_psnr == ["m_art"]  # m_art (planted artifacts, else exact) beats the noisy method


def doc_columns(page: str) -> list[str]:
    head = page[page.index('<table id="leaderboard"') :]
    head = head[: head.index("</thead>")]
    return [re.sub(r"<[^>]+>|[\u2191\u2193]", "", c).strip() for c in re.findall(r"<th>(.*?)</th>", head)][2:]


def _cells(row: str) -> list[str]:
    return re.findall(r"<td[^>]*>.*?</td>", row)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


_PROBE = """
<script>
window.addEventListener("load", () => {
  const info = Array.from(document.images, (img) => [img.getAttribute("src"), img.naturalWidth, img.naturalHeight]);
  document.body.setAttribute("data-probe", JSON.stringify(info));
});
</script>
"""


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary (Debian: apt-get install -y chromium)")
def test_report_opens_in_headless_chromium(report, tmp_path):
    page = (report / "report" / "index.html").read_text()
    probe = report / "report" / "probe.html"  # next to index.html so relative paths resolve the same way
    # eager loading, so the window's load event waits for every image (the report itself loads them lazily)
    probe.write_text(page.replace('loading="lazy"', 'loading="eager"').replace("</body>", _PROBE + "</body>"))
    cmd = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=15000", "--dump-dom", probe.as_uri(),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert '<table id="leaderboard">' in dom and '<table id="per-scene">' in dom
    assert dom.count('data-method="m_clean"') == 4  # leaderboard, pooled, and two per-scene rows
    match = re.search(r'data-probe="([^"]*)"', dom)
    assert match, "the probe script did not run"
    images = json.loads(html.unescape(match.group(1)))
    assert len(images) == 3 * len(SCENES) * len(VIEWS) + 3
    broken = [src for src, w, h in images if not (w > 0 and h > 0)]
    assert broken == []
    sizes = {unquote(src): (w, h) for src, w, h in images}
    # a thumbnail is the 96-px render and map plus a title, labels, a colour bar and a note on the scaling
    assert all(h > 96 and w > 2 * 96 for src, (w, h) in sizes.items() if src.startswith("thumbs/"))
