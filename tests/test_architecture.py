"""The architecture rules that import-linter's contracts cannot express, checked on the source tree.

import-linter (``lint-imports`` in CI, contracts in pyproject.toml) checks the layers and that rooms never import each
other. This file checks the private-name rule: nothing imports a ``_private`` module or name that belongs to another
package. A private module ``a.b._m`` belongs to package ``a.b``; a private name ``_f`` defined in module ``a.b.m``
belongs to package ``a.b``. Only modules inside the owning package may import them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _owner(module: str) -> str:
    """The package a module's private things belong to: the module's parent package."""
    return module.rsplit(".", 1)[0] if "." in module else module


def _inside(importer: str, package: str) -> bool:
    return importer == package or importer.startswith(package + ".")


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_violations(importer: str, source: str, *, is_package: bool = False) -> list[str]:
    """Every import in ``source`` (module ``importer``) of another package's private module or name."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[tuple[str, str | None]] = []
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = [(_resolve(importer, is_package, node), alias.name) for alias in node.names]
        for module, name in targets:
            if not module.startswith("scenemetrics"):
                continue
            parts = module.split(".")
            for i, part in enumerate(parts):
                if _is_private(part):
                    owner = ".".join(parts[:i])
                    if not _inside(importer, owner):
                        found.append(f"{importer}:{node.lineno} imports private module {'.'.join(parts[: i + 1])}")
                    break
            if name is not None and _is_private(name) and not _inside(importer, _owner(module)):
                found.append(f"{importer}:{node.lineno} imports private name {module}.{name}")
    return found


def test_checker_catches_violations():
    bad = (
        "from scenemetrics.osim.yolox import _letterbox_tensor\n"
        "import scenemetrics.openlex3d._checks\n"
        "def f():\n    from scenemetrics.agreement._checks import check_finite\n"
    )
    found = private_violations("scenemetrics.losses.osim", bad)
    assert len(found) == 3, found
    ok = (
        "from scenemetrics.osim.yolox import _letterbox_tensor\n"  # same room
        "from ._checks import check_points\n"
        "from scenemetrics._lazy import lazy_exports\n"  # the root package's helper, used inside the package
    )
    assert private_violations("scenemetrics.osim.loss", ok.replace("._checks", "scenemetrics.osim._c")) == []
    assert private_violations("scenemetrics.openlex3d.metric", "from ._checks import check_points\n") == []
    assert private_violations("scenemetrics.prism.viewmatch.evaluate", "from .._x import y\n") == []
    assert private_violations("scenemetrics.wireframe.metric", "from ..osim._x import y\n") != []


def test_no_module_imports_another_packages_private_names():
    found: list[str] = []
    for path in sorted((SRC / "scenemetrics").rglob("*.py")):
        found += private_violations(_module_name(path), path.read_text(), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_import_linter_contracts_cover_every_top_level_module():
    """Every top-level module or package of scenemetrics sits in one layer of the contract (new ones too)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    listed = {m.strip() for layer in layers for m in layer.replace(":", "|").split("|")}
    here = {
        f"scenemetrics.{p.stem if p.suffix == '.py' else p.name}"
        for p in (SRC / "scenemetrics").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert here - listed == set(), f"modules missing from the layers contract: {sorted(here - listed)}"
    assert listed - here == set(), f"layers name modules that do not exist: {sorted(listed - here)}"


def test_no_import_cycles_between_modules():
    """No two modules import each other, directly or through others, at any level (function-level imports count;
    imports only for type checking do not). Packages' ``__init__`` re-exports are left out: they are lazy."""
    import grimp  # import-linter's graph builder (the [dev] extra)

    graph = grimp.build_graph("scenemetrics", cache_dir=None, exclude_type_checking_imports=True)
    packages = {m for m in graph.modules if graph.find_children(m)}
    edges = {
        m: {d for d in graph.find_modules_directly_imported_by(m) if d not in packages}
        for m in graph.modules
        if m not in packages
    }
    cycles = []
    for start in sorted(edges):
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen and nxt > start:  # report each cycle once, from its smallest module
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


# A package's __init__ may export the names of its own modules (lazily); a name exported anywhere else has one home.
# Documented exceptions: ``scenemetrics.losses`` is the `sm.losses.*` namespace of the rooms' losses, and
# ``scenemetrics.agreement`` (through its ``discrim`` module) re-exports the core statistics (docs/architecture.md).
_NAMESPACES = {
    "scenemetrics.losses": "scenemetrics.",
    "scenemetrics.agreement": "scenemetrics.stats",
    "scenemetrics.agreement.discrim": "scenemetrics.stats",
}


def reexports(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """Names in ``module``'s ``__all__`` (or its lazy exports) that are defined in a module outside its own package."""
    tree = ast.parse(source)
    exported: set[str] = set()
    imported: dict[str, str] = {}
    lazy: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                exported |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(module, is_package, node)
            imported.update({alias.asname or alias.name: origin for alias in node.names})
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "lazy_exports" and len(call.args) > 1:
                table = call.args[1]
                if isinstance(table, ast.Name):  # lazy_exports(__name__, _TABLE)
                    table = next(
                        (n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "")
                         == table.id), table,
                    )  # fmt: skip
                if isinstance(table, ast.Dict):
                    for k, v in zip(table.keys, table.values, strict=True):
                        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                            target = v.value if v.value.startswith("scenemetrics") else f"{module}.{v.value}"
                            lazy[k.value] = target
    package = module if is_package else module.rsplit(".", 1)[0]
    allowed = _NAMESPACES.get(module)
    found = []
    for name, origin in sorted({**{n: imported[n] for n in exported & set(imported)}, **lazy}.items()):
        if not origin.startswith("scenemetrics"):
            continue  # a third-party name (a type alias of torch, say) is not an import path of ours
        if is_package and _inside(origin, package):
            continue
        if allowed is not None and origin.startswith(allowed):
            continue
        found.append(f"{module} exports {name} from {origin}")
    return found


def test_reexport_checker():
    assert reexports("scenemetrics.a.m", "from scenemetrics.b import f\n__all__ = ['f', 'g']\n") == [
        "scenemetrics.a.m exports f from scenemetrics.b"
    ]
    assert reexports("scenemetrics.a.m", "from scenemetrics.a.n import f\n__all__ = ['f']\n") != []  # a sibling's
    assert reexports("scenemetrics.a.m", "from scenemetrics.b import f\n__all__ = ['g']\n") == []  # used, not exported
    assert reexports("scenemetrics.a", "from scenemetrics.a.m import f\n__all__ = ['f']\n", is_package=True) == []
    lazy = "x = lazy_exports(__name__, {'f': 'scenemetrics.b.m'})\n"
    assert reexports("scenemetrics.a.cli", lazy) == ["scenemetrics.a.cli exports f from scenemetrics.b.m"]


def test_one_import_path_per_name():
    """Nothing has been released: no module keeps another module's name importable under a second path."""
    found: list[str] = []
    for path in sorted((SRC / "scenemetrics").rglob("*.py")):
        module = _module_name(path)
        if not any(_is_private(part) for part in module.split(".")):  # a private module is no import path
            found += reexports(module, path.read_text(), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)
