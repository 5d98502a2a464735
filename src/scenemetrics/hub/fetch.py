"""Finding a checkpoint (a given path, the cache, the places a user may already hold it) and downloading it into
the cache (resumed, locked, verified before it replaces anything); :class:`WeightsNotFoundError` names what was
searched and where to get the file.
"""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from scenemetrics.hub.cache import _folder_lock, cache_dir, is_offline
from scenemetrics.hub.catalogue import Checkpoint, _entry, _published
from scenemetrics.hub.hashes import (
    ChecksumError,
    _remember,
    _stamp_path,
    _write_sidecar,
    file_hashes,
    sidecar_path,
    verify_file,
)

__all__ = ["PART_SUFFIX", "WeightsNotFoundError", "download", "resolve_weights"]

logger = logging.getLogger("scenemetrics.hub")

PART_SUFFIX = ".part"
"""Suffix of an unfinished download (resumed by the next download)."""


class WeightsNotFoundError(FileNotFoundError):
    """A checkpoint is neither where it was asked for, nor cached, nor downloadable (offline or failed download).

    Attributes:
        filename: the checkpoint's file name (or a Hugging Face repo id / component).
        searched: every path that was looked at, in order.
        url: where the file can be downloaded from (``None`` when there is no public URL).
    """

    def __init__(
        self, message: str, *, filename: str, searched: Sequence[str | os.PathLike] = (), url: str | None = None
    ) -> None:
        super().__init__(message)
        self.filename = filename
        self.searched = [str(p) for p in searched]
        self.url = url

    def __str__(self) -> str:
        return str(self.args[0])


def _urlopen(url: str, start: int) -> Any:
    """Open ``url`` asking for the bytes from ``start`` on; the only network call of scenemetrics' own downloads.

    Returns the response (status 200: the whole file; 206: from ``start``). Tests replace this function.
    """
    headers = {"User-Agent": "scenemetrics"}
    if start > 0:
        headers["Range"] = f"bytes={start}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)


def _download(url: str, dst: Path, progress: bool = True) -> None:
    """Download ``url`` into ``dst``, resuming a partial ``dst`` with an HTTP Range request.

    A server that ignores the range (status 200) sends the whole file, which replaces the partial one; a range past
    the end (status 416) means ``dst`` is already complete. On an error the partial file is kept for the next try.
    """
    from tqdm.auto import tqdm

    start = dst.stat().st_size if dst.is_file() else 0
    try:
        resp = _urlopen(url, start)
    except urllib.error.HTTPError as err:
        if err.code == 416 and start > 0:
            return
        raise
    with resp:
        status = getattr(resp, "status", 200)
        if status != 206:
            start = 0
        length = resp.headers.get("Content-Length")
        total = start + int(length) if length else None
        with (
            open(dst, "ab" if start else "wb") as out,
            tqdm(
                total=total,
                initial=start,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=f"downloading {dst.name.removesuffix(PART_SUFFIX)}",
                disable=not progress,
            ) as bar,
        ):
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
                bar.update(len(block))


def _not_found(ckpt: Checkpoint, searched: Iterable[Path], reason: str) -> WeightsNotFoundError:
    searched = list(searched)
    where = ", ".join(str(p) for p in searched) or "nothing"
    msg = (
        f"Could not find {ckpt.description}: file {ckpt.filename!r} ({reason}). "
        f"Searched: {where}. "
        f"Download it from {ckpt.url} into {cache_dir(ckpt.room)}{os.sep} (or set $SCENEMETRICS_HOME), "
        f"or pass weights_path= pointing at the file or its folder."
    )
    return WeightsNotFoundError(msg, filename=ckpt.filename, searched=searched, url=ckpt.url)


def resolve_weights(
    key: str | Checkpoint, weights_path: str | os.PathLike | None = None, *, progress: bool = True
) -> Path:
    """Find (or download) a checkpoint file, verify it, and return its path.

    Args:
        key: a key of :data:`CHECKPOINTS` (e.g. ``"puzzlesim/squeezenet1_1"``) or a :class:`Checkpoint`.
        weights_path: a checkpoint file (used as given, no hash check) or a folder holding ``filename`` (used as
            given too: your own files are yours to vouch for).
        progress: show a progress bar while downloading.

    Returns:
        The path of a local file. A file from the cache or torch's cache passed :func:`verify_file`.

    Raises:
        KeyError: unknown ``key``.
        WeightsNotFoundError: ``weights_path`` does not exist or lacks the file; or nothing was cached and
            ``SCENEMETRICS_OFFLINE=1`` is set or every download failed. The message names the file, the
            paths searched and the URL.
        ChecksumError: a cached file does not carry its published or recorded hash (a ``ValueError``).

    Example:
        >>> import os, tempfile
        >>> from scenemetrics import hub
        >>> os.environ["SCENEMETRICS_HOME"] = tempfile.mkdtemp()
        >>> os.environ["SCENEMETRICS_OFFLINE"] = "1"
        >>> try:
        ...     hub.resolve_weights("osim/yolox_s")
        ... except hub.WeightsNotFoundError as err:
        ...     print(err.filename, err.url.endswith("yolox_s.pth"))
        yolox_s.pth True
        >>> del os.environ["SCENEMETRICS_OFFLINE"]
    """
    ckpt = _entry(key)

    if weights_path is not None:
        p = Path(weights_path).expanduser()
        if p.is_file():
            return p
        if p.is_dir():
            if (p / ckpt.filename).is_file():
                return p / ckpt.filename
            raise _not_found(ckpt, [p / ckpt.filename], "not in the folder given as weights_path")
        raise _not_found(ckpt, [p], "weights_path does not exist")

    target = cache_dir(ckpt.room) / ckpt.filename
    searched = [target]
    if target.is_file():
        verify_file(target, ckpt)
        return target
    for extra in ckpt.extra_dirs:
        candidate = extra() / ckpt.filename
        searched.append(candidate)
        if candidate.is_file():
            verify_file(candidate, ckpt, record=False)
            return candidate

    if is_offline():
        raise _not_found(ckpt, searched, "SCENEMETRICS_OFFLINE=1 is set, so nothing is downloaded")
    return download(ckpt, progress=progress, searched=searched)


def download(
    key: str | Checkpoint, *, progress: bool = True, force: bool = False, searched: Sequence[Path] = ()
) -> Path:
    """Download a checkpoint into the cache (resuming ``<file>.part``), verify it, and return its path.

    An already cached file is verified and returned without a download unless ``force``. Files with a published hash
    are checked against it; for the others the sha256 is recorded in ``<file>.sha256``. ``SCENEMETRICS_OFFLINE`` is
    not consulted here: this is the explicit download (``scenemetrics weights download``).

    Raises:
        WeightsNotFoundError: every URL failed; the message lists the errors.
        ChecksumError: with ``force=False``, the cached file fails its check.
    """
    ckpt = _entry(key)
    target = cache_dir(ckpt.room) / ckpt.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(target.parent):
        if target.is_file() and not force:  # e.g. another process finished it while we waited for the lock
            verify_file(target, ckpt)
            return target
        part = target.with_name(target.name + PART_SUFFIX)
        errors = []
        for url in ckpt.urls:
            for attempt in range(2):
                resumed = part.is_file() and part.stat().st_size > 0
                try:
                    _download(url, part, progress=progress)
                except Exception as err:  # network trouble: keep the partial file for a resumed try
                    errors.append(f"{url}: {type(err).__name__}: {err}")
                    break
                try:
                    digests = file_hashes(part, sorted({a for a, _, _ in _published(ckpt)} | {"sha256"}))
                    for algo, want, prefix in _published(ckpt):
                        if not digests[algo].startswith(want):
                            raise ChecksumError(
                                part, algo, want if not prefix else f"a prefix {want}", digests[algo], "published"
                            )
                except Exception as err:
                    part.unlink(missing_ok=True)
                    if resumed and attempt == 0:  # the partial file may have been stale: once more from scratch
                        continue
                    errors.append(f"{url}: {type(err).__name__}: {err}")
                    break
                os.replace(part, target)  # atomic on one file system: no half-written cache entry
                _stamp_path(target).unlink(missing_ok=True)
                if not _published(ckpt):
                    _write_sidecar(target, digests["sha256"])
                    logger.warning(
                        "%s has no published hash; recorded the sha256 of the download, %s, in %s",
                        ckpt.filename,
                        digests["sha256"],
                        sidecar_path(target),
                    )
                _remember(target, digests, persistent=True)
                return target
    raise _not_found(ckpt, searched or [target], "download failed: " + "; ".join(errors))
