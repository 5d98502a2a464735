"""The checkpoint cache: ``$SCENEMETRICS_HOME`` and its per-family folders, offline mode, and the lock a download
holds on its folder.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.hub.cache import cache_dir
    >>> os.environ["SCENEMETRICS_HOME"] = tempfile.mkdtemp()
    >>> cache_dir("osim").name
    'osim'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["cache_dir", "is_offline", "scenemetrics_home"]

_TRUE = {"1", "true", "yes", "on"}


def is_offline() -> bool:
    """True when ``SCENEMETRICS_OFFLINE`` is set to 1/true/yes/on: no download is attempted."""
    return os.environ.get("SCENEMETRICS_OFFLINE", "").strip().lower() in _TRUE


def scenemetrics_home() -> Path:
    """``$SCENEMETRICS_HOME``, default ``torch.hub.get_dir()/scenemetrics``."""
    env = os.environ.get("SCENEMETRICS_HOME")
    if env:
        return Path(env).expanduser()
    import torch.hub

    return Path(torch.hub.get_dir()) / "scenemetrics"


def cache_dir(room: str) -> Path:
    """The cache folder of one metric family: ``$SCENEMETRICS_HOME/<family>`` (not created)."""
    return scenemetrics_home() / room


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on a cache folder while a download lands (where the file system supports ``flock``)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # e.g. a network file system without flock: go on unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
