"""Every pretrained checkpoint scenemetrics can use: where it comes from, how it is verified, where it is cached.

Resolution order for a checkpoint (:func:`resolve_weights`):

1. ``weights_path=``: a file is used as given (no hash check, so locally built or fine-tuned weights work);
   a folder is searched for the checkpoint's file name.
2. The cache ``$SCENEMETRICS_HOME/<room>/<file>`` (default ``$SCENEMETRICS_HOME`` is
   ``torch.hub.get_dir()/scenemetrics``).
3. Extra places a user may already hold the file (for torchvision backbones: torch's own
   ``torch.hub.get_dir()/checkpoints``; for the LPIPS linear layers: the copies torchmetrics installs).
4. A download into the cache (resumed from ``<file>.part`` after an interruption).

Verification (:func:`verify_file`): a file found in steps 2-4 is checked on **every** load, not only after its
download. Files with a published hash (sha256, a sha256 prefix, or md5) are compared with it. For files whose
publisher gives none (the Megvii YOLOX releases), the sha256 is recorded at the first download in a sidecar
``<file>.sha256`` and every later load compares the file with it; a mismatch raises :class:`ChecksumError` naming
both hashes. So that a 750 MB file is not rehashed on every run, a successful check is remembered in
``<file>.verified`` (size, modification time, inode, digests); an unchanged file is not read again, any change to
it is rehashed.

Loading (:func:`load_torch_checkpoint`): ``torch.load(..., weights_only=True)`` only. A file that needs the full
unpickler is refused with a ``ValueError`` that gives the command to re-save it as plain tensors
(``scenemetrics weights convert IN OUT --i-trust-this-file``).

With ``SCENEMETRICS_OFFLINE=1`` step 4 is skipped; when nothing is found, or a download fails, a
:class:`WeightsNotFoundError` names the file, every path searched and the URL to fetch it from.

Example:
    >>> from scenemetrics import hub
    >>> hub.CHECKPOINTS["puzzlesim/squeezenet1_1"].filename
    'squeezenet1_1-b8a52dc0.pth'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shlex
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from scenemetrics.fileio import atomic_write_text

__all__ = [
    "CHECKPOINTS",
    "PART_SUFFIX",
    "SIDECAR_SUFFIX",
    "STAMP_SUFFIX",
    "Checkpoint",
    "ChecksumError",
    "WeightsNotFoundError",
    "cache_dir",
    "download",
    "file_hash",
    "file_hashes",
    "is_offline",
    "load_torch_checkpoint",
    "numpy_safe_globals",
    "read_sidecar",
    "register",
    "resolve_weights",
    "scenemetrics_home",
    "sidecar_path",
    "verify_file",
]

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}

SIDECAR_SUFFIX = ".sha256"
"""Suffix of the file that records the sha256 of a download without a published hash."""
STAMP_SUFFIX = ".verified"
"""Suffix of the file that remembers a successful check (size, mtime, inode, digests) of an unchanged file."""
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


@dataclass(frozen=True)
class Checkpoint:
    """One published checkpoint.

    Attributes:
        room: the scenemetrics room that uses it; the cache folder is ``$SCENEMETRICS_HOME/<room>``.
        filename: file name in the cache (and the name searched for inside a ``weights_path`` folder).
        urls: download locations, tried in order.
        description: what the file is, for error messages.
        sha256: full sha256 hex digest published for the file, if any.
        sha256_prefix: leading hex digits of the sha256 (torchvision puts the first 8 in the file name).
        md5: md5 hex digest, where only that is published.
        extra_dirs: callables returning further folders to search before downloading.
    """

    room: str
    filename: str
    urls: tuple[str, ...]
    description: str
    sha256: str | None = None
    sha256_prefix: str | None = None
    md5: str | None = None
    extra_dirs: tuple[Callable[[], Path], ...] = field(default=(), compare=False)

    @property
    def url(self) -> str:
        return self.urls[0]


def _torch_hub_checkpoints() -> Path:
    import torch.hub

    return Path(torch.hub.get_dir()) / "checkpoints"


def _torchvision(room: str, arch: str, filename: str, description: str) -> Checkpoint:
    # torchvision names its files <arch>-<first 8 hex digits of sha256>.pth and verifies that prefix.
    return Checkpoint(
        room=room,
        filename=filename,
        urls=(f"https://download.pytorch.org/models/{filename}",),
        description=description,
        sha256_prefix=filename.rsplit("-", 1)[1].split(".")[0],
        extra_dirs=(_torch_hub_checkpoints,),
    )


def _yolox(variant: str) -> Checkpoint:
    # Megvii publishes no hash for the 0.1.1rc0 release: the sha256 is recorded in a sidecar at the first download.
    return Checkpoint(
        room="osim",
        filename=f"{variant}.pth",
        urls=(f"https://github.com/Megvii-BaseDetection/YOLOX/releases/download/0.1.1rc0/{variant}.pth",),
        description=f"Megvii YOLOX release 0.1.1rc0 checkpoint {variant} (OSIM detector)",
    )


def _torchmetrics_lpips_models() -> Path:
    # torchmetrics (a core dependency) ships the LPIPS v0.1 linear layers byte-identical to the published files;
    # find_spec locates the package without importing it (importing torchmetrics takes seconds)
    import importlib.util

    spec = importlib.util.find_spec("torchmetrics")
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(roots[0]) / "functional" / "image" / "lpips_models" if roots else Path(os.devnull)


# richzhang/PerceptualSimilarity (BSD-2-Clause): the commit that last changed lpips/weights/v0.1/*.pth. The sha256
# below were recorded from the files at this commit; the lpips 0.1.4 wheel on PyPI, torchmetrics' lpips_models/ and
# NerfBaselines' _lpips_weights/ hold byte-identical copies (same git blob ids: alex 1df9dfe6, vgg 47e943cf,
# squeeze a3bd383b).
_LPIPS_COMMIT = "c33f89e9f46522a584cf41d8880eb0afa982708b"
_LPIPS_SHA256 = {
    "alex": "df73285e35b22355a2df87cdb6b70b343713b667eddbda73e1977e0c860835c0",
    "vgg": "a78928a0af1e5f0fcb1f3b9e8f8c3a2a5a3de244d830ad5c1feddc79b8432868",
    "squeeze": "4a5350f23600cb79923ce65bb07cbf57dca461329894153e05a1346bd531cf76",
}


def _lpips_linear(net: str) -> Checkpoint:
    path = f"richzhang/PerceptualSimilarity/{_LPIPS_COMMIT}/lpips/weights/v0.1/{net}.pth"
    return Checkpoint(
        room="fullref",
        filename=f"{net}.pth",
        urls=(
            f"https://raw.githubusercontent.com/{path}",
            f"https://github.com/{path.replace(_LPIPS_COMMIT, 'raw/' + _LPIPS_COMMIT, 1)}",
        ),
        description=f"LPIPS v0.1 linear layers for {net} (richzhang/PerceptualSimilarity, BSD-2-Clause)",
        sha256=_LPIPS_SHA256[net],
        extra_dirs=(_torchmetrics_lpips_models,),
    )


_REGISTRY: dict[str, Checkpoint] = {
    "puzzlesim/squeezenet1_1": _torchvision(
        "puzzlesim", "squeezenet1_1", "squeezenet1_1-b8a52dc0.pth", "torchvision ImageNet SqueezeNet 1.1 weights"
    ),
    "puzzlesim/alexnet": _torchvision(
        "puzzlesim", "alexnet", "alexnet-owt-7be5be79.pth", "torchvision ImageNet AlexNet weights"
    ),
    "puzzlesim/vgg16": _torchvision("puzzlesim", "vgg16", "vgg16-397923af.pth", "torchvision ImageNet VGG16 weights"),
    **{f"fullref/lpips_{net}": _lpips_linear(net) for net in ("alex", "vgg", "squeeze")},
    **{f"osim/{v}": _yolox(v) for v in ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")},
    "inpainting/big-lama": Checkpoint(
        room="inpainting",
        filename="big-lama.pt",
        urls=(
            "https://github.com/Sanster/models/releases/download/add_big_lama/big-lama.pt",
            "https://github.com/enesmsahin/simple-lama-inpainting/releases/download/v0.1.0/big-lama.pt",
        ),
        description="big-LaMa TorchScript export (lama-cleaner / IOPaint)",
        # IOPaint pins the md5; the sha256 of that same 205,669,692-byte file is the one LaMa users pin (TorchScript
        # runs code at load, so LaMaInpainter loads no other file without trust_file=True)
        sha256="344c77bbcb158f17dd143070d1e789f38a66c04202311ae3a258ef66667a9ea9",
        md5="e3aa4aaa15225a33ec84f9f4bc47e500",
    ),
}

CHECKPOINTS: Mapping[str, Checkpoint] = MappingProxyType(_REGISTRY)
"""Read-only mapping ``"<room>/<name>" -> Checkpoint`` of every known checkpoint."""


def register(key: str, checkpoint: Checkpoint) -> None:
    """Add a checkpoint to :data:`CHECKPOINTS` (for rooms that build entries at import time).

    Raises:
        ValueError: if ``key`` is already registered with a different checkpoint.
    """
    old = _REGISTRY.get(key)
    if old is not None and old != checkpoint:
        raise ValueError(f"checkpoint key {key!r} is already registered for {old.filename!r}")
    _REGISTRY[key] = checkpoint


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
    """The cache folder of one room: ``$SCENEMETRICS_HOME/<room>`` (not created)."""
    return scenemetrics_home() / room


def file_hash(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


def _published(ckpt: Checkpoint) -> list[tuple[str, str, bool]]:
    """``(algorithm, hex, is_prefix)`` of every hash the publisher gives."""
    out = []
    if ckpt.md5 is not None:
        out.append(("md5", ckpt.md5.lower(), False))
    if ckpt.sha256 is not None:
        out.append(("sha256", ckpt.sha256.lower(), False))
    elif ckpt.sha256_prefix is not None:
        out.append(("sha256", ckpt.sha256_prefix.lower(), True))
    return out


def _file_stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


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


def file_hashes(path: str | os.PathLike, algorithms: Sequence[str]) -> dict[str, str]:
    """Several hex digests of a file in one read (1 MiB blocks)."""
    hs = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            for h in hs.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hs.items()}


def _entry(key: str | Checkpoint) -> Checkpoint:
    if isinstance(key, Checkpoint):
        return key
    if key not in _REGISTRY:
        raise KeyError(f"unknown checkpoint {key!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[key]


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


@contextlib.contextmanager
def _room_lock(folder: Path) -> Iterator[None]:
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
    with _room_lock(target.parent):
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


def _re_save_hint(path: str | os.PathLike) -> str:
    p = Path(path)
    out = p.with_name(f"{p.stem}.safe{p.suffix or '.pth'}")
    return (
        f"If you trust where this file comes from, re-save it as plain tensors with "
        f"`scenemetrics weights convert {shlex.quote(os.fspath(p))} {shlex.quote(os.fspath(out))} "
        f"--i-trust-this-file` and pass the new file as weights_path= (CLI: --weights)."
    )


def numpy_safe_globals(*, scalars: bool = False) -> list[Any]:
    """numpy's reconstruction functions for ``torch.serialization.safe_globals`` (``weights_only=True`` loads).

    Files written by ``torch.save`` of numpy arrays (``scalars=True``: also numpy scalars, as in nerfstudio's
    training checkpoints) name these functions; they rebuild arrays, dtypes and scalars from bytes and call nothing
    else. Both the numpy 1 (``numpy.core``) and numpy 2 (``numpy._core``) names are listed, whichever numpy wrote the
    file.

    Example:
        >>> import io, numpy as np, torch
        >>> buf = io.BytesIO(); torch.save({"a": np.arange(3)}, buf); _ = buf.seek(0)
        >>> with torch.serialization.safe_globals(numpy_safe_globals()):
        ...     torch.load(buf, weights_only=True)["a"].tolist()
        [0, 1, 2]
    """
    import numpy as np

    core = getattr(np, "_core", None)
    multiarray = core.multiarray if core is not None and hasattr(core, "multiarray") else np.core.multiarray
    out: list[Any] = []
    names = ["_reconstruct", *(["scalar"] if scalars else [])]
    for name in names:
        fn = getattr(multiarray, name)
        out += [(fn, f"numpy.core.multiarray.{name}"), (fn, f"numpy._core.multiarray.{name}")]
    out += [np.ndarray, np.dtype, *{type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDG"}]
    return out


def load_torch_checkpoint(path: str | os.PathLike) -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)``, with errors that name the file.

    scenemetrics never uses the full unpickler to read a checkpoint: it can run code hidden in the file. A file that
    holds pickled Python objects besides tensors and plain containers (old training checkpoints sometimes store
    ``argparse.Namespace`` or numpy objects) is refused with a :class:`ValueError` that gives the command to re-save
    it safely (``scenemetrics weights convert IN OUT --i-trust-this-file``).

    Raises:
        ValueError: the file cannot be read as a torch checkpoint with ``weights_only=True``.

    Example:
        >>> import os, tempfile, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "w.pth")
        >>> torch.save({"model": {"w": torch.ones(2)}}, path)
        >>> load_torch_checkpoint(path)["model"]["w"]
        tensor([1., 1.])
    """
    import pickle

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        text = str(err)
        # refused Python objects (as opposed to bytes that are no pickle at all) are named as "GLOBAL module.name"
        refused = re.search(r"GLOBAL (\S+)|unrecognized function|Unsupported class", text)
        if refused:
            what = f" ({refused.group(1)})" if refused.group(1) else ""
            raise ValueError(
                f"refusing to load {os.fspath(path)!r}: it holds pickled Python objects{what} that the safe loader "
                "(torch.load with weights_only=True) does not accept. scenemetrics never unpickles arbitrary objects, "
                "because that can run code hidden in the file. " + _re_save_hint(path)
            ) from None
        raise ValueError(f"could not read checkpoint {os.fspath(path)!r}: {type(err).__name__}: {err}") from err
    except Exception as err:
        raise ValueError(f"could not read checkpoint {os.fspath(path)!r}: {type(err).__name__}: {err}") from err
