"""Griffe extension for the package's docstrings, applied to the text mkdocstrings renders (the source is untouched).

* A Google-style ``Example:`` section is read as an examples section (as ``Examples:`` is); without this the
  doctest lines would render as plain text.
* Sphinx cross-reference roles (``:class:`~scenemetrics.x.Y```, ``:func:`f```) are shown as inline code (``Y``,
  ``f``), as Python's own help() shows them, instead of raw role markup.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:\s*$", re.M)
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        text = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
        obj.docstring.value = _ROLE.sub(_role, text)
