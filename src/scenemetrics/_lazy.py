"""Lazy public names for scenemetrics packages: nothing heavy (torch, an optional extra) is imported until used.

Example:
    >>> import scenemetrics.osim as osim  # no torch import yet
    >>> "OSIM" in dir(osim)
    True
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """Build ``__all__``, a module ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        names: public name -> module that defines it; a module without a dot is a submodule of ``package``.
        submodules: submodules also reachable as attributes (``package.<sub>``).

    Returns:
        ``(__all__, __getattr__, __dir__)``. A resolved name is cached in the package's namespace.
    """
    where = {name: (mod if "." in mod else f"{package}.{mod}") for name, mod in names.items()}
    subs = tuple(submodules)
    public = sorted({*where, *subs})

    def getattr_(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(where[name]), name)
            vars(sys.modules[package])[name] = value
            return value
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(public))

    return public, getattr_, dir_


class _NamesOverSubmodules(types.ModuleType):
    """A package module type whose public names win over same-named submodules.

    The import system binds every imported submodule as an attribute of its package, which would replace, e.g., the
    function ``set_ranking`` by the submodule ``set_ranking.py`` as soon as anything imports that submodule.
    """

    _public_names: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self)._public_names and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


def keep_names_over_submodules(package: str, names: Iterable[str]) -> None:
    """Keep ``package``'s public ``names`` bound to the objects ``__getattr__`` gives, even when a submodule of the
    same name is imported (``scenemetrics.openlex3d.set_ranking``, ``scenemetrics.agreement.corrupt``)."""
    module_type = type(f"{package}.<package>", (_NamesOverSubmodules,), {"_public_names": frozenset(names)})
    sys.modules[package].__class__ = module_type
