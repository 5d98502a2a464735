"""Verifying checkpoint files: hashes (one read for several algorithms), the sha256 sidecars recorded at the first
download of a file without a published hash, and the ``.verified`` stamps that spare rehashing unchanged files.

Example:
    >>> import os, tempfile
    >>> from scenemetrics.hub.hashes import file_hash
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> _ = open(path, "wb").write(b"abc")
    >>> file_hash(path)[:16]
    'ba7816bf8f01cfea'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from scenemetrics.fileio import atomic_write_text
from scenemetrics.hub.cache import cache_dir
from scenemetrics.hub.catalogue import Checkpoint, _entry, _published

__all__ = [
    "SIDECAR_SUFFIX",
    "STAMP_SUFFIX",
    "ChecksumError",
    "file_hash",
    "file_hashes",
    "read_sidecar",
    "sidecar_path",
    "verify_file",
]

logger = logging.getLogger("scenemetrics.hub")

SIDECAR_SUFFIX = ".sha256"
"""Suffix of the file that records the sha256 of a download without a published hash."""


STAMP_SUFFIX = ".verified"
"""Suffix of the file that remembers a successful check (size, mtime, inode, digests) of an unchanged file."""


def file_hash(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hashes(path: str | os.PathLike, algorithms: Sequence[str]) -> dict[str, str]:
    """Several hex digests of a file in one read (1 MiB blocks)."""
    hs = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            for h in hs.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hs.items()}


class ChecksumError(ValueError):
    """A checkpoint file does not carry the hash it must have (published, or recorded at its first download).

    Attributes:
        path: the file.
        algorithm: ``"sha256"`` or ``"md5"``.
        expected: the hash it should have (a prefix for torchvision files).
        actual: the hash it has.
    """

    def __init__(self, path: Path, algorithm: str, expected: str, actual: str, origin: str) -> None:
        self.path, self.algorithm, self.expected, self.actual = Path(path), algorithm, expected, actual
        super().__init__(
            f"{algorithm} of {os.fspath(path)} is {actual}, expected {expected} ({origin}). The file is damaged or "
            f"was replaced: download it again (`scenemetrics weights download --force {path.name}`), or pass your own "
            "file as weights_path="
        )


def sidecar_path(path: str | os.PathLike) -> Path:
    """``<file>.sha256``: the sha256 recorded at the first download of a file whose publisher gives no hash.

    It holds one line in the format of ``sha256sum`` (``<hex>  <file name>``), so ``sha256sum -c`` checks it too.
    """
    p = Path(path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + STAMP_SUFFIX)


def read_sidecar(path: str | os.PathLike) -> str | None:
    """The sha256 recorded in ``<file>.sha256`` (``None`` without a sidecar).

    Raises:
        ValueError: the sidecar does not start with a 64-digit hex sha256.
    """
    side = sidecar_path(path)
    if not side.is_file():
        return None
    text = side.read_text(errors="replace").strip()
    digest = text.split()[0].lower() if text else ""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"{side} does not hold a sha256 (expected '<64 hex digits>  {Path(path).name}')")
    return digest


def _write_sidecar(path: Path, digest: str) -> None:
    _atomic_write_text(sidecar_path(path), f"{digest}  {path.name}\n")


def _atomic_write_text(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _file_stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


# in-process memory of verified files: (resolved path) -> (size, mtime_ns, inode, {algorithm: hex})


# in-process memory of verified files: (resolved path) -> (size, mtime_ns, inode, {algorithm: hex})
_VERIFIED: dict[str, tuple[tuple[int, int, int], dict[str, str]]] = {}


def _known_digests(path: Path, persistent: bool) -> dict[str, str]:
    """Digests of ``path`` computed earlier while its size, mtime and inode were the same (else ``{}``)."""
    stamp = _file_stamp(path)
    memo = _VERIFIED.get(str(path.resolve()))
    if memo is not None and memo[0] == stamp:
        return dict(memo[1])
    if persistent:
        try:
            data = json.loads(_stamp_path(path).read_text())
            if [data["size"], data["mtime_ns"], data["inode"]] == list(stamp):
                return {str(k): str(v) for k, v in data["digests"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return {}


def _remember(path: Path, digests: Mapping[str, str], persistent: bool) -> None:
    stamp = _file_stamp(path)
    _VERIFIED[str(path.resolve())] = (stamp, dict(digests))
    if persistent:
        size, mtime_ns, inode = stamp
        # a read-only cache (e.g. a shared copy on a cluster) is fine: the in-process memo still holds
        with contextlib.suppress(OSError):
            _atomic_write_text(
                _stamp_path(path),
                json.dumps({"size": size, "mtime_ns": mtime_ns, "inode": inode, "digests": dict(digests)}) + "\n",
            )


def verify_file(path: str | os.PathLike, key: str | Checkpoint, *, record: bool = True, use_stamp: bool = True) -> str:
    """Check a file against its published hash, or against the sha256 recorded in its sidecar.

    Files with a published hash (sha256, a sha256 prefix, or md5) are compared with it. Files without one are
    compared with ``<file>.sha256``; a file that has no sidecar yet gets one (``record=True``: trust on first use,
    logged as a warning). Hashing a large file takes seconds, so a successful check is remembered in
    ``<file>.verified`` (size, modification time and inode of the file, and its digests): while these are unchanged
    the file is not read again. Any change to the file (a new modification time) triggers a full check.

    Args:
        path: the file.
        key: a key of :data:`CHECKPOINTS` or a :class:`Checkpoint`.
        record: write a missing sidecar (otherwise a missing sidecar is a ``ValueError``).
        use_stamp: trust the ``.verified`` stamp of an unchanged file (``False`` always rehashes).

    Returns:
        The sha256 of the file.

    Raises:
        ChecksumError: the file does not carry the expected hash; the message names both hashes.
        ValueError: ``record=False`` and a file without published hash has no sidecar.
    """
    ckpt = _entry(key)
    p = Path(path)
    persistent = p.parent == cache_dir(ckpt.room)
    known = _known_digests(p, persistent) if use_stamp else {}
    published = _published(ckpt)
    recorded = None if published else read_sidecar(p)
    needed = {algo for algo, _, _ in published} | {"sha256"}
    missing = needed - known.keys()
    digests = dict(known)
    if missing:
        digests.update(file_hashes(p, sorted(missing)))
    for algo, want, prefix in published:
        if not digests[algo].startswith(want):
            raise ChecksumError(p, algo, want if not prefix else f"a prefix {want}", digests[algo], "published")
    if not published:
        if recorded is None:
            if not record:
                raise ValueError(f"{p} has no published hash and no recorded sha256 ({sidecar_path(p)} is missing)")
            logger.warning(
                "%s has no published hash and no recorded sha256 yet; recording %s in %s",
                p,
                digests["sha256"],
                sidecar_path(p),
            )
            try:
                _write_sidecar(p, digests["sha256"])
            except OSError as err:
                logger.warning("could not write %s: %s", sidecar_path(p), err)
        elif digests["sha256"] != recorded:
            raise ChecksumError(p, "sha256", recorded, digests["sha256"], f"recorded at download in {sidecar_path(p)}")
    if missing:
        _remember(p, digests, persistent)
    return digests["sha256"]
