"""The API reference covers every public name: each package's ``__all__`` (lazy exports included) gets an entry at
its public import path in the pages the docs hook generates."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import scenemetrics

from .helpers import load_docs_module

# modules with an ``__all__`` that the reference leaves to the command pages, and why
NOT_IN_REFERENCE = {
    "scenemetrics.cli": "the `scenemetrics` command (documented by the command pages)",
    "scenemetrics.weights_cli": "the `scenemetrics weights` command (documented on the weights page)",
    "scenemetrics._lazy": "private",
}


def _public_modules_with_all() -> set[str]:
    """Every public package of scenemetrics with an ``__all__``, and every top-level module with one."""
    found = {"scenemetrics"}
    for info in pkgutil.walk_packages(scenemetrics.__path__, "scenemetrics."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]):
            continue
        if not info.ispkg and len(parts) > 2:
            continue  # a module inside a room: its public names are the room's __all__
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            found.add(info.name)
    return found - set(NOT_IN_REFERENCE)


@pytest.fixture(scope="module")
def api():
    return load_docs_module("_hooks/api.py")


def test_every_public_module_has_a_reference_page(api):
    listed = [pkg for pkg, *_ in api.MODULES]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert _public_modules_with_all() == set(listed)


@pytest.mark.slow  # imports every room (torch, lightning, diffusers, nerfstudio ...): about 30 s
def test_every_public_name_has_an_entry_at_its_public_path(api):
    pages = api.pages()
    text = "\n".join(pages.values())
    anchors = set(re.findall(r"\{#([\w.]+)\}", text))
    missing = [
        f"{pkg}.{name}" for pkg, *_ in api.MODULES for name in importlib.import_module(pkg).__all__
        if f"{pkg}.{name}" not in anchors
    ]  # fmt: skip
    assert missing == []
    # the heavy names are rendered from their docstrings, not only mentioned
    puzzlesim = pages["puzzlesim.md"]
    assert "[](){#scenemetrics.puzzlesim.PuzzleSim}\n::: scenemetrics.puzzlesim." in puzzlesim
    assert 'heading: "scenemetrics.puzzlesim.PuzzleSim"' in puzzlesim
    # a name re-exported by two packages is rendered once and linked from the other
    assert "The same object as [`scenemetrics.puzzlesim.PuzzleSim`]" in pages["scenemetrics.md"]
    # losses live in their rooms: rendered on the room's page, linked from the losses page
    assert "[](){#scenemetrics.puzzlesim.SoftPuzzleSimLoss}\n::: scenemetrics." in puzzlesim
    assert "The same object as [`scenemetrics.puzzlesim.SoftPuzzleSimLoss`]" in pages["losses.md"]
