"""Test helper: make a hub entry publish the hash of a test's random-weight file.

Cached checkpoints are verified against their published hash on every load, so a random file placed in a cache under
an official name (``squeezenet1_1-b8a52dc0.pth``) is refused, as a swapped file should be. Tests that exercise the
cache lookup with such a file first "publish" its sha256, exactly as the real publisher's hash would be.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scenemetrics import hub


def publish_hash(monkeypatch: pytest.MonkeyPatch, key: str, path: str | Path) -> hub.Checkpoint:
    """Replace the registry entry ``key`` (for this test) by one whose published sha256 is that of ``path``."""
    entry = dataclasses.replace(hub.CHECKPOINTS[key], sha256=hub.file_hash(path), sha256_prefix=None, md5=None)
    monkeypatch.setitem(hub.catalogue._REGISTRY, key, entry)
    return entry
