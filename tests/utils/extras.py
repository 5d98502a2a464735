"""Tests that need an optional extra skip, naming the extra, when it is not installed.

Two forms, both giving the reason ``needs the [EXTRA] extra (pip install "scenemetrics[EXTRA]")``:

* ``pytestmark = pytest.mark.extra("lightning")`` (or ``@pytest.mark.extra("prism", "inpaint")`` on one test):
  ``tests/conftest.py`` skips the test when a module of one of the extras is missing;
* ``cv2 = need("inpaint", "cv2")`` at the top of a test module (or inside a test): skips the module (or the test)
  and returns the imported module, for modules that import the extra's packages at import time.

``EXTRA_MODULES`` is the one table of which importable modules stand for which extra (see pyproject.toml's
``[project.optional-dependencies]``; ``tests/test_extras_table.py`` checks the two agree).
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "lightning": ("lightning", "tensorboard"),
    "prism": ("diffusers", "transformers", "safetensors", "huggingface_hub"),
    "inpaint": ("cv2",),
    "faiss": ("faiss",),
    "hss": ("trimesh", "manifold3d"),
    "openlex3d": ("plyfile", "lzf"),
    "wireframe": ("pyarrow",),
    "clip": ("open_clip",),
    "baselines": ("torch_fidelity", "transformers", "huggingface_hub", "safetensors"),
    "wandb": ("wandb",),
    "viz": ("matplotlib",),
    "nerfstudio": ("nerfstudio",),
    "gsplat": ("gsplat",),
    "dev": ("pytest", "xdist", "hypothesis", "puzzle_sim", "lpips"),
}


def reason(extra: str) -> str:
    """The skip reason for a missing ``extra``."""
    return f'needs the [{extra}] extra (pip install "scenemetrics[{extra}]")'


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False


def missing(*extras: str) -> list[str]:
    """The extras among ``extras`` that are not (completely) installed."""
    unknown = [e for e in extras if e not in EXTRA_MODULES]
    if unknown:
        raise ValueError(f"unknown extra(s) {unknown}; known: {sorted(EXTRA_MODULES)}")
    return [e for e in extras if not all(_installed(m) for m in EXTRA_MODULES[e])]


def missing_extra_of(error: BaseException) -> str | None:
    """The extra an ``ImportError`` of scenemetrics asks for (``pip install "scenemetrics[X]"``), if it is missing.

    ``None`` when the error names no extra, or names one that is installed (then the error is a real failure).
    """
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.split(".")[0]
        named = [extra for extra, modules in EXTRA_MODULES.items() if top in modules]
    else:
        named = re.findall(r"scenemetrics\[(\w+)\]", str(error))
    absent = [extra for extra in named if extra in EXTRA_MODULES and missing(extra)]
    return absent[0] if absent else None


def need(extra: str, module: str | None = None) -> ModuleType | None:
    """Skip (module level or inside a test) unless ``extra`` is installed; return ``module`` imported, if named."""
    absent = missing(extra)
    if absent:
        pytest.skip(reason(extra), allow_module_level=True)
    if module is None:
        return None
    return pytest.importorskip(module, reason=reason(extra))
