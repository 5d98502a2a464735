"""Griffe extension: read a Google-style ``Example:`` section as an examples section (as ``Examples:`` is).

The package's docstrings write ``Example:`` (singular); without this the doctest lines would render as plain text.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
