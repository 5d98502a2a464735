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
:func:`safe_name` makes each one a single, harmless path component before it is joined to an output folder. Counts
read from headers are untrusted too: :func:`check_count` compares a declared count with the bytes the file has
before a reader loops or allocates, and :func:`load_npy` / :func:`load_npz` do so for NumPy files.

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

__all__ = [
    "SAFE_NAME_MAX_BYTES",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_count",
    "load_npy",
    "load_npz",
    "safe_name",
]

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


def check_count(count: object, *, path: str | os.PathLike, what: str, min_bytes: int, available: int) -> int:
    """A count declared in a file's header, checked against the bytes the file has left, before anything loops on it.

    Args:
        count: the declared count (parsed as an int here).
        path: the file, named in the error.
        what: what is counted (``"vertex elements"``), named in the error.
        min_bytes: the fewest bytes one item takes in the file (e.g. 2 per value of an ASCII row: a digit and a
            separator; the record size of a binary row).
        available: the bytes of the file after the header.

    Returns:
        The count as an int.

    Raises:
        ValueError: the count is not a non-negative integer, or ``count * min_bytes > available``; the message
            names the file, the count and the bytes.

    Example:
        >>> check_count("3", path="a.ply", what="vertices", min_bytes=12, available=36)
        3
    """
    try:
        n = int(str(count).strip())
    except ValueError:
        raise ValueError(f"{os.fspath(path)}: the header declares {count!r} {what}, not a count") from None
    if n < 0:
        raise ValueError(f"{os.fspath(path)}: the header declares {n} {what}, a negative count")
    if n * max(int(min_bytes), 0) > available:
        raise ValueError(
            f"{os.fspath(path)}: the header declares {n} {what}, which need at least {n * min_bytes} bytes, but only "
            f"{available} bytes follow the header (a truncated file or a lying header)"
        )
    return n


def _npy_header(f: object, where: str) -> tuple[tuple[int, ...], object, int] | None:
    """``(shape, dtype, header bytes)`` of the ``.npy`` stream ``f`` (at its start); ``None`` for format 3.0
    (unicode field names), whose reading numpy keeps private: ``numpy.load`` checks those itself."""
    import numpy as np

    fmt = np.lib.format
    start = f.tell()  # type: ignore[attr-defined]
    try:
        version = fmt.read_magic(f)
        reader = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if reader is None:
            return None
        shape, _, dtype = reader(f)
    except ValueError as err:
        raise ValueError(f"{where}: not a NumPy .npy array ({err})") from None
    if dtype.hasobject:
        raise ValueError(f"{where}: holds Python objects (dtype {dtype}); only plain arrays are read (no pickle)")
    return tuple(shape), dtype, f.tell() - start  # type: ignore[attr-defined]


def _check_npy(header: tuple[tuple[int, ...], object, int] | None, size: int, where: str, holder: str) -> None:
    import math

    if header is None:
        return
    shape, dtype, length = header
    need = math.prod(shape) * dtype.itemsize  # type: ignore[attr-defined]
    if need > size - length:
        raise ValueError(
            f"{where}: the header declares an array of shape {shape} ({need} bytes of {dtype}), but the {holder} holds "
            f"{size - length} bytes after its header (a truncated file or a lying header)"
        )


def load_npy(path: str | os.PathLike, *, mmap_mode: str | None = None) -> object:
    """``numpy.load`` of a ``.npy`` file (no pickle), after checking that its header's shape fits the file's size.

    Raises:
        ValueError: not a ``.npy`` file, an object array, or a shape whose bytes exceed what the file holds; the
            message names the file and the shape.

    Example:
        >>> import tempfile, numpy as np, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
        >>> np.save(path, np.arange(3))
        >>> load_npy(path).tolist()
        [0, 1, 2]
    """
    import numpy as np

    p = Path(path)
    with open(p, "rb") as f:
        _check_npy(_npy_header(f, os.fspath(p)), p.stat().st_size, os.fspath(p), "file")
    return np.load(p, allow_pickle=False, mmap_mode=mmap_mode)  # type: ignore[arg-type]


def load_npz(path: str | os.PathLike) -> dict[str, object]:
    """Every array of a ``.npz`` file (no pickle) as ``{name: array}``, each member's header checked first.

    A member's declared shape must fit the uncompressed size its zip entry declares (zip then stops decoding at that
    size), so neither a lying header nor a lying entry makes the reader allocate more than the entry holds.

    Raises:
        ValueError: not a zip of ``.npy`` members, an object array, or a member whose shape exceeds its entry; the
            message names the file, the member and the shape.

    Example:
        >>> import tempfile, numpy as np, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.npz")
        >>> np.savez(path, x=np.arange(2))
        >>> {k: v.tolist() for k, v in load_npz(path).items()}
        {'x': [0, 1]}
    """
    import zipfile

    import numpy as np

    p = Path(path)
    try:
        with zipfile.ZipFile(p) as zf:
            for info in zf.infolist():
                where = f"{p} member {info.filename!r}"
                with zf.open(info) as f:
                    _check_npy(_npy_header(f, where), info.file_size, where, "entry")
    except zipfile.BadZipFile as err:
        raise ValueError(f"{p}: not a NumPy .npz file ({err})") from None
    with np.load(p, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}
