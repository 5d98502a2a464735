"""Atomic file writes, and the one rule that turns a name read from a file or folder into a path component.

A file is written to a temporary sibling, flushed and fsynced, then renamed over the target, so a reader (or a
process killed midway) sees either the old file or the new one, never a half-written one. The file's mode follows
the umask, as with ``open()``.

Example:
    >>> import tempfile, pathlib
    >>> from scenemetrics.fileio import atomic_write_text
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a" / "note.txt"
    >>> atomic_write_text(p, "hello\\n").read_text()
    'hello\\n'

Names that come from files (a method or scene named in ``info.json``, a class name, a file stem) are untrusted:
:func:`safe_name` makes each one a single, harmless path component before it is joined to an output folder.

    >>> safe_name("zipnerf"), safe_name("../../x")
    ('zipnerf', '_._.._x-9cdf6a50')
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
from pathlib import Path

__all__ = ["SAFE_NAME_MAX_BYTES", "atomic_write_bytes", "atomic_write_text", "safe_name"]

SAFE_NAME_MAX_BYTES = 120
"""The longest :func:`safe_name` result in UTF-8 bytes (file systems allow 255 per component; room for suffixes)."""

_SAFE_PUNCTUATION = frozenset("-_.+=@,~ ")
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"] + [f"{p}{i}" for p in ("COM", "LPT") for i in range(10)]
)


def safe_name(name: str) -> str:
    """``name`` made safe as **one** path component; an already safe name is returned unchanged.

    A name is safe when it is not empty, holds only letters, digits (any script) and ``- _ . + = @ , ~`` or inner
    spaces, does not start with ``.`` (so never ``.`` or ``..``, nor a hidden file) and does not end with ``.`` or a
    space, is not a Windows device name (``CON``, ``NUL``, ``COM1``, ...), and is at most
    :data:`SAFE_NAME_MAX_BYTES` bytes in UTF-8. Any other name has each other character (``/``, ``\\``, ``:``, NUL,
    control characters, ...) replaced by ``_``, a leading ``.`` replaced by ``_``, is shortened if needed, and gets
    ``-`` and the first 8 hex digits of the sha256 of the original name appended, so that two different names
    (``a/b`` and ``a_b``) never share a folder.

    Every scenemetrics command passes each name it reads from a file or a folder through this function before
    joining it to an output path (results record the real name next to the file they point at).

    Args:
        name: a method, scene, view, class or file name as read.

    Returns:
        A string with no path separator that cannot leave the folder it is joined to.

    Raises:
        TypeError: ``name`` is not a string.

    Example:
        >>> safe_name("garden"), safe_name("a/b"), safe_name(".."), safe_name("NUL")
        ('garden', 'a_b-c14cddc0', '_.-5ec1f7e7', 'NUL-ae6de182')
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str; received {type(name).__name__}")
    stem = name.split(".", 1)[0].upper()
    if (
        name
        and not name.startswith(".")
        and not name.endswith((".", " "))
        and not name.startswith(" ")
        and all(c.isalnum() or c in _SAFE_PUNCTUATION for c in name)
        and stem not in _WINDOWS_DEVICES
        and len(name.encode("utf-8")) <= SAFE_NAME_MAX_BYTES
    ):
        return name
    digest = hashlib.sha256(name.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
    body = "".join(c if (c.isalnum() or c in _SAFE_PUNCTUATION) and c != " " else "_" for c in name)
    if body.startswith("."):
        body = "_" + body[1:]
    limit = SAFE_NAME_MAX_BYTES - len(digest) - 1
    while len(body.encode("utf-8")) > limit:
        body = body[:-1]
    return f"{body or '_'}-{digest}"


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
