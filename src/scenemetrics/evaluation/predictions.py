"""NerfBaselines predictions as ``scenemetrics eval`` units: folders or ``.tar.gz`` / ``.zip`` archives.

A predictions folder holds ``color/`` (renders), ``gt-color/`` (ground truth, same relative paths), optionally
``mask/`` (same relative paths, ``.png``) and ``info.json``, whose method, dataset and scene name the unit
(``method`` and ``dataset_metadata.{name|id, scene}``, or top-level ``dataset`` / ``scene``); without them the
unit is named after the path.

Archives are unpacked once into ``<out>/inputs/<name>-<hash>/`` (the evaluation reads, fingerprints and resumes from
files, and a ``.tar.gz`` allows no random access). Every member is checked first: an absolute name, a ``..``
component, a link or a device file is refused with an error naming the member, and nothing is written.

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
import json
import os
import shutil
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from scenemetrics.evaluation.layout import Unit, _read_unit

__all__ = ["ARCHIVE_SUFFIXES", "read_predictions", "safe_extract"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


def _is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _check_member(name: str, archive: Path) -> str:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"{archive}: member {name!r} has an absolute path; refused")
    if ".." in pure.parts:
        raise ValueError(f"{archive}: member {name!r} escapes the archive's root ('..'); refused")
    return str(pure)


def _members(archive: Path) -> list[tuple[str, Any]]:
    """``(checked name, member)`` of every regular file; links and special files are refused."""
    out = []
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                mode = (info.external_attr >> 16) & 0o170000
                if mode == 0o120000:
                    raise ValueError(f"{archive}: member {info.filename!r} is a symbolic link; refused")
                if info.is_dir():
                    _check_member(info.filename, archive)
                    continue
                out.append((_check_member(info.filename, archive), info))
        return out
    with tarfile.open(archive) as tf:
        for member in tf.getmembers():
            name = _check_member(member.name, archive)
            if member.isdir():
                continue
            if not member.isfile():
                kind = "link" if (member.issym() or member.islnk()) else "special file"
                raise ValueError(f"{archive}: member {member.name!r} is a {kind}; refused")
            out.append((name, member))
    return out


def safe_extract(archive: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Unpack ``archive`` into ``dest`` after checking every member (see the module docstring); returns ``dest``.

    An already complete ``dest`` (it holds the marker file ``.complete``) is reused as is.

    Raises:
        ValueError: a member with an absolute name, a ``..`` component, a link or a special file.
    """
    archive, dest = Path(archive), Path(dest)
    if (dest / ".complete").is_file():
        return dest
    members = _members(archive)  # all checks before anything is written
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for name, info in members:
                target = partial / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    else:
        with tarfile.open(archive) as tf:
            for name, member in members:
                target = partial / name
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(member)
                assert src is not None  # a regular file, checked above
                with src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    (partial / ".complete").write_text("")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    return dest


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
    info_path = root / "info.json"
    if not info_path.is_file():
        return "predictions", fallback
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{info_path}: not valid JSON ({err})") from None
    if not isinstance(info, dict):
        raise ValueError(f"{info_path}: expected a JSON object")
    meta = info.get("dataset_metadata") or info.get("render_dataset_metadata") or {}
    method = str(info.get("method") or info.get("method_id") or "predictions")
    dataset = info.get("dataset") or (meta.get("name") or meta.get("id") if isinstance(meta, dict) else None)
    scene = info.get("scene") or (meta.get("scene") if isinstance(meta, dict) else None) or fallback
    return method, f"{dataset}-{scene}" if dataset else str(scene)


def read_predictions(
    paths: Sequence[str | os.PathLike],
    cache: str | os.PathLike,
    *,
    data: str | os.PathLike | None = None,
    train_views: str | os.PathLike | None = None,
) -> list[Unit]:
    """One unit per NerfBaselines predictions folder or archive.

    Args:
        paths: predictions folders, ``.tar.gz`` / ``.tgz`` / ``.tar`` or ``.zip`` archives.
        cache: where archives are unpacked (``<out>/inputs`` for ``scenemetrics eval``).
        data: dataset folder ``<data>/<scene>/{gt,train}/`` for what the predictions lack (scene as named).
        train_views: training views for PuzzleSim references (``<dir>/<scene>/images/``, ``<dir>/<scene>/``, ``<dir>``).

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
            digest = hashlib.sha256(f"{path.resolve()}\0{path.stat().st_size}\0{path.stat().st_mtime_ns}".encode())
            folder = safe_extract(path, Path(cache) / f"{_archive_stem(path)}-{digest.hexdigest()[:10]}")
            fallback = _archive_stem(path)
        elif path.is_dir():
            folder, fallback = path, path.name
        else:
            raise ValueError(f"predictions {path}: expected a folder or a {', '.join(ARCHIVE_SUFFIXES)} archive")
        root = _predictions_root(folder)
        method, scene = _names(root, fallback)
        unit = _read_unit(method, scene, root, "nerfbaselines", data_p, None, train_p)
        if unit.key in seen:
            raise ValueError(f"predictions {path} and {seen[unit.key]} both name {unit.key!r}")
        seen[unit.key] = path
        units.append(unit)
    return units
