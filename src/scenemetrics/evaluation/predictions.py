"""NerfBaselines predictions as ``scenemetrics eval`` units: folders or ``.tar.gz`` / ``.zip`` archives.

A predictions folder holds ``color/`` (renders), ``gt-color/`` (ground truth, same relative paths), optionally
``mask/`` (same relative paths, ``.png``) and ``info.json``, whose method, dataset and scene name the unit
(``method`` and ``dataset_metadata.{name|id, scene}``, or top-level ``dataset`` / ``scene``); without them the
unit is named after the path. Its recorded ``background_color`` composites RGBA images, rounded to 8 bits, as
NerfBaselines' ``evaluate`` does (:mod:`scenemetrics.evaluation.sources`).

Archives are unpacked once into ``<out>/inputs/<name>-<hash>/`` (the evaluation reads, fingerprints and resumes from
files, and a ``.tar.gz`` allows no random access). Every member is checked first: an absolute name, a ``..``
component, a link, a device or sparse file, two members for one path or a member under another member's file path is
refused with an error naming the member, and nothing is written. Archives are bounded too: the declared sizes must
fit the extraction limit (half the free disk space, at most 64 GiB; ``--max-archive-size`` sets another), no member
may expand more than 200 times its compressed size, and the bytes actually written are counted while unpacking.

Example:
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "predictions"
    >>> for sub in ("color", "gt-color"):
    ...     (d / sub).mkdir(parents=True)
    ...     Image.new("RGB", (8, 8)).save(d / sub / "0000.png")
    >>> info = {"method": "zipnerf", "dataset_metadata": {"name": "mipnerf360", "scene": "garden"}}
    >>> _ = (d / "info.json").write_text(__import__("json").dumps(info))
    >>> [u.key for u in read_predictions([d], tempfile.mkdtemp())]
    ['zipnerf/mipnerf360-garden']
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from scenemetrics.evaluation.layout import Unit, _read_unit
from scenemetrics.evaluation.sources import read_nerfbaselines_info
from scenemetrics.fileio import safe_name

__all__ = [
    "ARCHIVE_LIMIT_CAP",
    "ARCHIVE_MAX_RATIO",
    "ARCHIVE_MIN_MEMBER_BYTES",
    "ARCHIVE_RATIO_FLOOR",
    "ARCHIVE_SUFFIXES",
    "extraction_limit",
    "parse_size",
    "read_predictions",
    "safe_extract",
    "unpack_predictions",
]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


def _is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


ARCHIVE_MAX_RATIO = 200
"""A member that expands more than this many times its compressed size (and past :data:`ARCHIVE_RATIO_FLOOR`) is
refused: images, JSON and arrays in a predictions archive compress far less; a zip bomb compresses about 1000:1."""
ARCHIVE_RATIO_FLOOR = 1 << 20
"""Members (or, for ``.tar.gz``, archives) that expand to less than this are not ratio-checked (1 MiB)."""
ARCHIVE_LIMIT_CAP = 64 << 30
"""The largest default extraction limit (64 GiB), whatever the free space."""
ARCHIVE_MIN_MEMBER_BYTES = 4096
"""Each member counts as at least this many bytes (one file system block) against the limit."""


def extraction_limit(dest: str | os.PathLike) -> int:
    """The default limit on what one archive may unpack into ``dest``: half the free space of its file system, at
    most :data:`ARCHIVE_LIMIT_CAP` (``scenemetrics eval --max-archive-size`` sets another).

    The other half stays free for the evaluation's own outputs (states, thumbnails, the report).

    Example:
        >>> import tempfile
        >>> 0 < extraction_limit(tempfile.gettempdir()) <= ARCHIVE_LIMIT_CAP
        True
    """
    folder = Path(dest)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return max(0, min(ARCHIVE_LIMIT_CAP, shutil.disk_usage(folder).free // 2))


def parse_size(text: str, name: str = "size") -> int:
    """A byte count from ``"500M"``, ``"20G"``, ``"1.5T"`` or plain bytes (powers of 1024); ``ValueError`` naming
    ``name`` otherwise.

    Example:
        >>> parse_size("20G"), parse_size("1536"), parse_size("1.5k")
        (21474836480, 1536, 1536)
    """
    units = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B") if str(text).strip() else ""
    unit = t[-1:] if t[-1:] in units else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        value = -1.0
    if not (value > 0 and value * units[unit] < float(1 << 62)):
        raise ValueError(f"`{name}` must be a positive size such as 500M, 20G or 1.5T; received {text!r}")
    return int(value * units[unit])


def _size(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _check_member(name: str, archive: Path) -> str:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"{archive}: member {name!r} has an absolute path; refused")
    if ".." in pure.parts:
        raise ValueError(f"{archive}: member {name!r} escapes the archive's root ('..'); refused")
    return str(pure)


def _check_ratio(archive: Path, name: str, size: int, packed: int) -> None:
    if size > ARCHIVE_RATIO_FLOOR and size > ARCHIVE_MAX_RATIO * max(packed, 1):
        raise ValueError(
            f"{archive}: member {name!r} expands {size / max(packed, 1):.0f} times ({_size(packed)} to {_size(size)}), "
            f"more than the {ARCHIVE_MAX_RATIO}:1 a predictions archive can hold (a compression bomb?); refused"
        )


def _members(archive: Path) -> list[tuple[str, Any, int]]:
    """``(checked name, member, declared size)`` of every regular file; links, special files, sparse members,
    members that expand too much, duplicates and a member under another member's file path are refused."""
    out = []
    dirs: set[str] = set()
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                mode = (info.external_attr >> 16) & 0o170000
                if mode == 0o120000:
                    raise ValueError(f"{archive}: member {info.filename!r} is a symbolic link; refused")
                if info.is_dir():
                    dirs.add(_check_member(info.filename, archive).rstrip("/"))
                    continue
                name = _check_member(info.filename, archive)
                _check_ratio(archive, info.filename, info.file_size, info.compress_size)
                out.append((name, info, info.file_size))
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                name = _check_member(member.name, archive)
                if member.isdir():
                    dirs.add(name)
                    continue
                if not member.isfile():
                    kind = "link" if (member.issym() or member.islnk()) else "special file"
                    raise ValueError(f"{archive}: member {member.name!r} is a {kind}; refused")
                if member.sparse is not None:
                    raise ValueError(
                        f"{archive}: member {member.name!r} is a sparse file declaring {_size(member.size)}; refused "
                        "(predictions archives hold plain files)"
                    )
                out.append((name, member, member.size))
        # a compressed tar has no per-member sizes: the whole archive's ratio stands for its largest member
        if out and archive.name.lower().endswith((".gz", ".tgz")):
            largest = max(out, key=lambda m: m[2])
            total = sum(m[2] for m in out)
            if total > ARCHIVE_RATIO_FLOOR and total > ARCHIVE_MAX_RATIO * archive.stat().st_size:
                raise ValueError(
                    f"{archive}: expands {total / archive.stat().st_size:.0f} times ({_size(archive.stat().st_size)} "
                    f"to {_size(total)}; largest member {largest[1].name!r}, {_size(largest[2])}), more than the "
                    f"{ARCHIVE_MAX_RATIO}:1 a predictions archive can hold (a compression bomb?); refused"
                )
    files: dict[str, str] = {}
    for name, member, _ in out:
        raw = member.filename if isinstance(member, zipfile.ZipInfo) else member.name
        if name in files:
            raise ValueError(f"{archive}: members {files[name]!r} and {raw!r} are the same file; refused")
        files[name] = raw
    for name, member, _ in out:
        raw = member.filename if isinstance(member, zipfile.ZipInfo) else member.name
        parents = [str(p) for p in PurePosixPath(name).parents if str(p) != "."]
        clash = next((p for p in parents if p in files), None)
        if clash is not None:
            raise ValueError(f"{archive}: member {raw!r} lies under {files[clash]!r}, which is a file; refused")
        if name in dirs:
            raise ValueError(f"{archive}: member {raw!r} is both a file and a folder; refused")
    return out


def safe_extract(archive: str | os.PathLike, dest: str | os.PathLike, *, max_bytes: int | None = None) -> Path:
    """Unpack ``archive`` into ``dest`` after checking every member (see the module docstring); returns ``dest``.

    An already complete ``dest`` (it holds the marker file ``.complete``) is reused as is. Before anything is
    written the declared sizes (each member counted as at least 4 KiB) are summed and compared with the limit, and
    each member's compression ratio with :data:`ARCHIVE_MAX_RATIO`; while unpacking the bytes actually written are
    counted, and unpacking stops at the limit. Whatever goes wrong, the half-written ``<dest>.partial`` folder is
    removed.

    Args:
        archive: a ``.zip``, ``.tar``, ``.tar.gz`` or ``.tgz`` file.
        dest: the folder to create.
        max_bytes: the most bytes the archive may unpack to (``None``: :func:`extraction_limit`, half the free space
            at ``dest``, at most 64 GiB).

    Raises:
        ValueError: a member with an absolute name, a ``..`` component, a link, a special or sparse file, two
            members for one path, a member under another member's file path, a member that expands more than
            :data:`ARCHIVE_MAX_RATIO` times, or more bytes (declared or written) than the limit; the message names
            the member and the limit.
    """
    archive, dest = Path(archive), Path(dest)
    if (dest / ".complete").is_file():
        return dest
    limit = extraction_limit(dest) if max_bytes is None else int(max_bytes)
    members = _members(archive)  # all checks before anything is written
    declared = sum(max(size, ARCHIVE_MIN_MEMBER_BYTES) for _, _, size in members)
    if declared > limit:
        largest = max(members, key=lambda m: m[2])
        raise ValueError(
            f"{archive}: its {len(members)} member(s) declare {_size(declared)} (largest {largest[0]!r}, "
            f"{_size(largest[2])}), more than the extraction limit of {_size(limit)} "
            + (
                "(--max-archive-size / max_bytes=)"
                if max_bytes is not None
                else f"(half the free space at {dest.parent}, at most {_size(ARCHIVE_LIMIT_CAP)})"
            )
            + "; raise it with --max-archive-size SIZE (max_bytes=) if the archive is genuine"
        )
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        written = 0
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for name, info, size in members:
                    with zf.open(info) as src:
                        written = _copy(src, partial / name, written, limit, size, archive, info.filename)
        else:
            with tarfile.open(archive) as tf:
                for name, member, size in members:
                    src = tf.extractfile(member)
                    assert src is not None  # a regular file, checked above
                    with src:
                        written = _copy(src, partial / name, written, limit, size, archive, member.name)
        (partial / ".complete").write_text("")
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return dest


def _copy(src: Any, target: Path, written: int, limit: int, size: int, archive: Path, member: str) -> int:
    """Copy one member in 1 MiB blocks, stopping past its declared size or the archive's limit; returns the total."""
    target.parent.mkdir(parents=True, exist_ok=True)
    own = 0
    with open(target, "wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            own += len(block)
            written += len(block)
            if own > size:
                raise ValueError(f"{archive}: member {member!r} holds more than the {size} bytes it declares; refused")
            if written > limit:
                raise ValueError(f"{archive}: unpacking stopped at the extraction limit of {_size(limit)} ({member!r})")
            dst.write(block)
    return written


def _archive_stem(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _predictions_root(folder: Path) -> Path:
    """The folder holding ``color/``: ``folder`` itself or its only sub-folder (archives often wrap one)."""
    if (folder / "color").is_dir():
        return folder
    subs = [d for d in folder.iterdir() if d.is_dir() and (d / "color").is_dir()]
    if len(subs) == 1:
        return subs[0]
    raise ValueError(f"{folder}: not a NerfBaselines predictions folder (no color/ folder)")


def _names(root: Path, fallback: str) -> tuple[str, str]:
    """``(method, scene)`` from ``info.json`` (scene as ``<dataset>-<scene>`` when the dataset is known)."""
    info = read_nerfbaselines_info(root)
    if not info:
        return "predictions", fallback
    meta = info.get("dataset_metadata") or info.get("render_dataset_metadata") or {}
    method = str(info.get("method") or info.get("method_id") or "predictions")
    dataset = info.get("dataset") or (meta.get("name") or meta.get("id") if isinstance(meta, dict) else None)
    scene = info.get("scene") or (meta.get("scene") if isinstance(meta, dict) else None) or fallback
    return method, f"{dataset}-{scene}" if dataset else str(scene)


def unpack_predictions(archive: str | os.PathLike, cache: str | os.PathLike, *, max_bytes: int | None = None) -> Path:
    """Unpack a predictions archive once into ``cache`` (:func:`safe_extract`; reused while the archive is unchanged)
    and return the folder holding ``color/``: the :data:`~scenemetrics.evaluation.layout.Unpack` function of
    ``scenemetrics eval`` for the ``predictions-<step>.tar.gz`` of ``nerfbaselines train``.

    Raises:
        ValueError: an unsafe or oversized archive, or one that holds no predictions folder.
    """
    path = Path(archive)
    digest = hashlib.sha256(f"{path.resolve()}\0{path.stat().st_size}\0{path.stat().st_mtime_ns}".encode())
    dest = Path(cache) / safe_name(f"{_archive_stem(path)}-{digest.hexdigest()[:10]}")
    return _predictions_root(safe_extract(path, dest, max_bytes=max_bytes))


def read_predictions(
    paths: Sequence[str | os.PathLike],
    cache: str | os.PathLike,
    *,
    data: str | os.PathLike | None = None,
    train_views: str | os.PathLike | None = None,
    max_archive_bytes: int | None = None,
) -> list[Unit]:
    """One unit per NerfBaselines predictions folder or archive.

    Args:
        paths: predictions folders, ``.tar.gz`` / ``.tgz`` / ``.tar`` or ``.zip`` archives.
        cache: where archives are unpacked (``<out>/inputs`` for ``scenemetrics eval``).
        data: dataset folder ``<data>/<scene>/{gt,train}/`` for what the predictions lack (scene as named).
        train_views: training views for PuzzleSim references (``<dir>/<scene>/images/``, ``<dir>/<scene>/``, ``<dir>``).
        max_archive_bytes: the most bytes one archive may unpack to (``None``: :func:`extraction_limit`).

    Raises:
        FileNotFoundError: a path that does not exist.
        ValueError: not a predictions folder, an unsafe archive, a malformed ``info.json``, two paths naming the
            same (method, scene).
    """
    units: list[Unit] = []
    seen: dict[str, Path] = {}
    data_p = Path(data) if data is not None else None
    train_p = Path(train_views) if train_views is not None else None
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"predictions {path}: no such file or folder")
        if _is_archive(path):
            root = unpack_predictions(path, cache, max_bytes=max_archive_bytes)
            fallback = _archive_stem(path)
        elif path.is_dir():
            root, fallback = _predictions_root(path), path.name
        else:
            raise ValueError(f"predictions {path}: expected a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")
        method, scene = _names(root, fallback)
        unit = _read_unit(method, scene, root, "nerfbaselines", data_p, None, train_p)
        if unit.key in seen:
            raise ValueError(f"predictions {path} and {seen[unit.key]} both name {unit.key!r}")
        seen[unit.key] = path
        units.append(unit)
    return units
