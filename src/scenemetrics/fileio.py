"""Atomic file writes: the one helper every module that replaces a file in place uses.

A file is written to a temporary sibling, flushed and fsynced, then renamed over the target, so a reader (or a
process killed midway) sees either the old file or the new one, never a half-written one. The file's mode follows
the umask, as with ``open()``.

Example:
    >>> import tempfile, pathlib
    >>> from scenemetrics.fileio import atomic_write_text
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a" / "note.txt"
    >>> atomic_write_text(p, "hello\\n").read_text()
    'hello\\n'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where the OS allows (Linux: ``/proc/self/status``);
    elsewhere set-and-restore under a lock (another thread creating a file in between could still see 0)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0)  # reading the umask means setting it; put it back at once
        os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file, fsync and a rename; missing parent folders are created.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode open() would have (0666 & ~umask)
        with contextlib.suppress(AttributeError, NotImplementedError):
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded with ``encoding``."""
    return atomic_write_bytes(path, text.encode(encoding))
