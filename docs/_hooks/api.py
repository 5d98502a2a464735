"""MkDocs hook: the API reference pages, generated at build time from the package's public ``__all__`` lists.

Every public name is documented at its public import path (``scenemetrics.puzzlesim.PuzzleSim``), whatever module
defines it today: the hook imports the package, resolves each name of each ``__all__`` (the lazy exports included)
to the object it gives, and lets mkdocstrings render that object's docstring under the public name. An anchor with
the public path (``#scenemetrics.puzzlesim.PuzzleSim``) is written for each name, so links and cross-references keep
working when the code moves between internal modules. It also serves MathJax from the ``django-static-mathjax``
package (installed by the ``docs`` extra), so the site renders its formulas without any network access.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

# (public module, page, title, one-line description). Every public package and core module of scenemetrics is listed
# here; tests/docs/test_docs_api.py checks that none is missing. The command-line modules (``scenemetrics.cli``,
# ``scenemetrics.weights_cli``) are documented by the command pages, not here.
MODULES: tuple[tuple[str, str, str, str], ...] = (
    ("scenemetrics", "scenemetrics", "scenemetrics", "Top-level names: the metric classes and the rooms."),
    ("scenemetrics.puzzlesim", "puzzlesim", "PuzzleSim", "Per-pixel artifact maps from unaligned references."),
    ("scenemetrics.osim", "osim", "OSIM", "Object-level fidelity from detector features and saliency."),
    ("scenemetrics.prism", "prism", "PRISM", "Zero123 features, projection head, distance and MMD."),
    ("scenemetrics.prism.viewmatch", "prism-viewmatch", "PRISM ViewMatch data", "Building head-training data."),
    ("scenemetrics.wireframe", "wireframe", "Wireframes", "Wireframe metrics, property suite, preference tools."),
    ("scenemetrics.openlex3d", "openlex3d", "OpenLex3D", "Open-vocabulary 3D segmentation metrics."),
    ("scenemetrics.fullref", "fullref", "Full-reference maps", "SSIM, LPIPS and error maps; published protocols."),
    ("scenemetrics.baselines", "baselines", "Baselines", "FID, KID, CMMD, FD-DINOv2, joint variants, CLIP-S."),
    ("scenemetrics.agreement", "agreement", "Agreement", "Metric-vs-human statistics and protocols."),
    ("scenemetrics.losses", "losses", "Losses", "Differentiable soft relaxations (lower is better)."),
    ("scenemetrics.callbacks", "callbacks", "Callbacks", "Lightning, nerfstudio and plain-loop monitors."),
    ("scenemetrics.inpainting", "inpainting", "Inpainting", "The PuzzleSim-guided inpainting loop."),
    ("scenemetrics.evaluation", "evaluation", "Evaluation", "`scenemetrics eval` as a library."),
    ("scenemetrics.hub", "hub", "hub", "Pretrained checkpoints: table, cache, verification."),
    ("scenemetrics.image", "image", "image", "The one input rule for every image API, and the one image file reader."),
    ("scenemetrics.viz", "viz", "viz", "Colour maps, overlays, panels, PNG helpers."),
    ("scenemetrics.checks", "checks", "checks", "Option checkers shared by every room."),
    ("scenemetrics.synthetic", "synthetic", "synthetic", "The procedural demo scene."),
    ("scenemetrics.tiny_splat", "tiny-splat", "tiny_splat", "A tiny pure-PyTorch Gaussian-splat renderer (CPU demos)."),
    ("scenemetrics.jsonio", "jsonio", "jsonio", "JSON helpers for reports."),
    ("scenemetrics.demo", "demo", "demo", "`scenemetrics demo` as a library: the demo scene through every metric."),
    ("scenemetrics.registry", "registry", "registry", "Metric adapters and their option schemas."),
    ("scenemetrics.builtin_metrics", "builtin-metrics", "builtin_metrics", "The built-in metrics' adapters."),
    ("scenemetrics.stats", "stats", "stats", "AUC, class separation, the RBF MMD and array converters shared by rooms."),
    ("scenemetrics.devices", "devices", "devices", "Device resolution (`--device`, `device=`); ending a process group."),
    ("scenemetrics.fileio", "fileio", "fileio", "Atomic writes, safe names from files, checked counts and arrays."),
    ("scenemetrics.types", "types", "types", "Array type aliases of the public signatures."),
    ("scenemetrics.cliutils", "cliutils", "cliutils", "Shared command-line flags, messages and progress."),
)

_VALUE_LIMIT = 400


def _is_submodule(package: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


def _defining_module(package: str, name: str, obj: Any) -> str | None:
    """The module under ``package`` whose source assigns ``name`` at top level and holds ``obj`` under it."""
    pattern = re.compile(rf"^{re.escape(name)}\s*(:[^=\n]*)?=", re.M)
    for modname, mod in sorted(sys.modules.items()):
        if mod is None or not (modname == package or modname.startswith(package + ".")):
            continue
        if vars(mod).get(name) is not obj:
            continue
        try:
            source = inspect.getsource(mod)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return modname
    return None


def _resolve(package: str, name: str) -> tuple[str, str | None]:
    """``(kind, target)``: kind is ``module``, ``object`` (rendered by mkdocstrings from ``target``) or ``value``."""
    try:
        obj = getattr(importlib.import_module(package), name)
    except ImportError:
        if not _is_submodule(package, name):
            raise
        return "module", f"{package}.{name}"  # its optional dependency is missing: documented from its source
    if isinstance(obj, types.ModuleType):
        return "module", obj.__name__
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if (
        (inspect.isclass(obj) or inspect.isfunction(obj))
        and isinstance(module, str)
        and module.startswith("scenemetrics")
        and "<" not in (qualname or "<")
    ):
        return "object", f"{module}.{qualname}"
    modname = _defining_module(package, name, obj)
    if modname is not None:
        return "object", f"{modname}.{name}"
    value = repr(obj)
    return "value", value if len(value) <= _VALUE_LIMIT else value[:_VALUE_LIMIT] + " ..."


def _public_names(package: str) -> list[str]:
    return sorted(importlib.import_module(package).__all__, key=str.lower)


def _canonical(entries: dict[tuple[str, str], tuple[str, str | None]]) -> dict[str, tuple[str, str]]:
    """Rendered object -> the (package, name) that documents it: the package deepest in the defining module's path."""
    best: dict[str, tuple[str, str]] = {}
    for (package, name), (kind, target) in entries.items():
        if kind == "value" or target is None:
            continue
        current = best.get(target)
        depth = len(package) if target.startswith(package + ".") else -1
        if current is None or depth > (len(current[0]) if target.startswith(current[0] + ".") else -1):
            best[target] = (package, name)
    return best


def _entry(package: str, name: str, kind: str, target: str | None, canonical: tuple[str, str] | None) -> str:
    public = f"{package}.{name}"
    if kind == "value":
        return f"### `{public}` {{#{public}}}\n\nA `{name}` constant:\n\n```python\n{target}\n```\n"
    if canonical is not None and canonical != (package, name):
        other = ".".join(canonical)
        return f"### `{public}` {{#{public}}}\n\nThe same object as [`{other}`][{other}].\n"
    options = f'    options:\n      heading: "{public}"\n      toc_label: "{name}"\n'
    if kind == "module":
        options += "      members: false\n"
    return f"[](){{#{public}}}\n::: {target}\n{options}"


def page_markdown(
    package: str, title: str, description: str, entries: dict[tuple[str, str], tuple[str, str | None]],
    canonical: dict[str, tuple[str, str]],
) -> str:
    lines = [
        f"# `{package}` — {title}" if title != package else f"# `{package}`",
        "",
        description,
        "",
        "Generated from the docstrings; every name is documented at its public import path.",
        "",
        f"::: {package}\n    options:\n      members: false\n      show_root_heading: false\n"
        "      show_root_toc_entry: false\n",
    ]
    for name in _public_names(package):
        kind, target = entries[(package, name)]
        lines.append(_entry(package, name, kind, target, canonical.get(target or "")))
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Page path under ``reference/`` -> its Markdown, for every module of ``MODULES``."""
    entries = {(pkg, name): _resolve(pkg, name) for pkg, *_ in MODULES for name in _public_names(pkg)}
    canonical = _canonical(entries)
    out = {"index.md": index_markdown()}
    for package, page, title, description in MODULES:
        out[f"{page}.md"] = page_markdown(package, title, description, entries, canonical)
    return out


def index_markdown() -> str:
    rows = [f"| [`{pkg}`]({page}.md) | {desc} |" for pkg, page, _, desc in MODULES]
    head = [
        "# API reference",
        "",
        "Every public name of every package, generated from the docstrings at build time. Names are listed at the",
        "path you import them from; the modules that define them are internal and may move between releases.",
        "",
        "| module | what it holds |",
        "|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in pages().items():
        files.append(File.generated(config, f"reference/{path}", content=content))
    import mathjax  # the django-static-mathjax package: MathJax 3's files, served with the site

    js = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg.js"
    files.append(File.generated(config, "assets/mathjax/tex-svg.js", abs_src_path=str(js)))
    return files
