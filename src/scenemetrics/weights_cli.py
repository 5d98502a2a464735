"""``scenemetrics weights``: the checkpoint cache as a user manages it.

Subcommands:

* ``list``: every checkpoint scenemetrics knows (metric family, file, size, URL, whether it is cached and whether its
  hash checks out; the sha256 recorded for files without a published hash).
* ``download NAME... | --all | --family NAME``: download into ``$SCENEMETRICS_HOME`` with a progress bar, resuming an
  interrupted download (``<file>.part``), and verify.
* ``verify [NAME...]``: rehash the cached files and compare with the published or recorded hashes.
* ``path NAME``: the local path of a checkpoint (where it is cached, or where it would be).
* ``convert IN OUT --i-trust-this-file``: re-save a checkpoint that the safe loader refuses as plain tensors.

Names are the keys of :data:`scenemetrics.hub.CHECKPOINTS` (``osim/yolox_x``), or their part after the metric
family (``yolox_x``) or the file name (``yolox_x.pth``) when that is unambiguous.

Air-gapped clusters: run ``scenemetrics weights download --all`` (or ``--family osim``) on a machine with internet
access, copy ``$SCENEMETRICS_HOME`` to the cluster, and set ``SCENEMETRICS_HOME`` to the copy and
``SCENEMETRICS_OFFLINE=1`` on the compute nodes.

Example:
    scenemetrics weights list
    scenemetrics weights download yolox_x squeezenet1_1
    scenemetrics weights convert old.pth old.safe.pth --i-trust-this-file
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scenemetrics import hub
from scenemetrics.cliutils import CLIError, add_quiet_arg

__all__ = ["convert_checkpoint", "find_cached", "register", "resolve_names"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "weights",
        help="list, download, verify and locate checkpoints; re-save a checkpoint safely",
        description=(
            "Manage the checkpoint cache ($SCENEMETRICS_HOME). For an air-gapped cluster: download on a login "
            "node, copy $SCENEMETRICS_HOME, and set SCENEMETRICS_OFFLINE=1 on the compute nodes."
        ),
    )
    sub = p.add_subparsers(dest="weights_command", metavar="SUBCOMMAND")
    sub.required = True

    ls = sub.add_parser("list", help="every known checkpoint: metric family, file, size, URL, cached?, hash ok?")
    ls.add_argument("--family", default=None, help="only the checkpoints of this metric family (e.g. osim)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=_list)

    dl = sub.add_parser("download", help="download checkpoints into the cache (resumable, verified)")
    dl.add_argument("names", nargs="*", metavar="NAME", help="checkpoints to download (e.g. yolox_x, osim/yolox_s)")
    dl.add_argument("--all", action="store_true", help="every known checkpoint")
    dl.add_argument("--family", default=None, help="every checkpoint of this metric family (e.g. osim, puzzlesim)")
    dl.add_argument("--force", action="store_true", help="download again even when a verified copy is cached")
    add_quiet_arg(dl)
    dl.set_defaults(func=_download)

    ve = sub.add_parser("verify", help="rehash cached checkpoints and compare with their published/recorded hash")
    ve.add_argument("names", nargs="*", metavar="NAME", help="checkpoints to verify (default: every cached one)")
    ve.add_argument("--family", default=None, help="only the checkpoints of this metric family (e.g. osim)")
    ve.set_defaults(func=_verify)

    pa = sub.add_parser("path", help="print the local path of a checkpoint (exit 1 when it is not cached)")
    pa.add_argument("name", metavar="NAME")
    pa.set_defaults(func=_path)

    co = sub.add_parser(
        "convert",
        help="re-save a checkpoint the safe loader refuses as plain tensors (trusted files only)",
        description=(
            "Load IN with the full pickle loader, which can run code hidden in the file, and write OUT with plain "
            "tensors and containers only, in the same layout (e.g. {'model': state_dict} for YOLOX), so that "
            "scenemetrics can read OUT with torch.load(weights_only=True). Python objects that are not tensors, "
            "numbers, strings or containers are converted where that is lossless (modules to their state_dict, "
            "numpy arrays to tensors, argparse.Namespace to dicts) and otherwise dropped, with a list of what was "
            "dropped. Only run it on a file whose origin you trust; it asks for --i-trust-this-file."
        ),
    )
    co.add_argument("src", metavar="IN", help="the checkpoint to re-save")
    co.add_argument("dst", metavar="OUT", help="the new file (must not exist)")
    co.add_argument(
        "--i-trust-this-file",
        dest="trust",
        action="store_true",
        help="confirm that IN comes from a source you trust (loading it may run code it contains)",
    )
    co.set_defaults(func=_convert)


# ------------------------------------------------------------------------------------------------ names and status


def resolve_names(names: Sequence[str] = (), *, all_: bool = False, family: str | None = None) -> list[str]:
    """Registry keys for the names given on the command line (full keys, short names or file names).

    Raises:
        CLIError: an unknown or ambiguous name, an unknown metric family, or nothing selected.
    """
    keys = sorted(hub.CHECKPOINTS)
    families = sorted({c.room for c in hub.CHECKPOINTS.values()})
    if family is not None and family not in families:
        raise CLIError(f"--family {family!r} is not a metric family with checkpoints; families: {', '.join(families)}")
    selected: list[str] = []
    if all_:
        selected += keys
    if family is not None:
        selected += [k for k in keys if hub.CHECKPOINTS[k].room == family]
    for name in names:
        if name in hub.CHECKPOINTS:
            selected.append(name)
            continue
        matches = [k for k in keys if k.split("/", 1)[1] == name or hub.CHECKPOINTS[k].filename == name]
        if len(matches) != 1:
            why = "is ambiguous: " + ", ".join(matches) if matches else "is not a known checkpoint"
            raise CLIError(f"{name!r} {why} (see `scenemetrics weights list`; known: {', '.join(keys)})")
        selected.append(matches[0])
    return list(dict.fromkeys(selected))


def find_cached(key: str) -> Path | None:
    """Where a checkpoint is cached (``$SCENEMETRICS_HOME`` first, then the publisher's own caches), or ``None``."""
    ckpt = hub.CHECKPOINTS[key]
    for folder in (hub.cache_dir(ckpt.room), *(extra() for extra in ckpt.extra_dirs)):
        if (folder / ckpt.filename).is_file():
            return folder / ckpt.filename
    return None


def _hash_kind(ckpt: hub.Checkpoint) -> str:
    if ckpt.md5:
        return "md5 (published)"
    if ckpt.sha256:
        return "sha256 (published)"
    if ckpt.sha256_prefix:
        return "sha256 prefix (published)"
    return "sha256 (recorded at download)"


def _status(key: str, *, rehash: bool) -> dict[str, Any]:
    """One row of ``list`` / ``verify``; ``rehash`` ignores the ``.verified`` stamp and records a missing sidecar."""
    ckpt = hub.CHECKPOINTS[key]
    path = find_cached(key)
    target = path if path is not None else hub.cache_dir(ckpt.room) / ckpt.filename
    published = bool(ckpt.md5 or ckpt.sha256 or ckpt.sha256_prefix)
    row: dict[str, Any] = {
        "name": key,
        "family": ckpt.room,
        "file": ckpt.filename,
        "url": ckpt.url,
        "hash": _hash_kind(ckpt),
        "cached": path is not None,
        "path": str(target),
        "size": path.stat().st_size if path is not None else None,
        "sidecar": None,
        "recorded_sha256": None,
        "hash_ok": None,
        "problem": None,
    }
    if path is None:
        return row
    try:
        if not published and not rehash and hub.read_sidecar(path) is None:
            row["problem"] = f"no recorded sha256 yet ({hub.sidecar_path(path).name} is written at the next load)"
            return row
        sha = hub.verify_file(path, key, record=rehash, use_stamp=not rehash)
        row["hash_ok"] = True
        if not published:
            row["sidecar"], row["recorded_sha256"] = str(hub.sidecar_path(path)), sha
    except ValueError as err:
        row["hash_ok"] = False
        row["problem"] = str(err)
    return row


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


# ------------------------------------------------------------------------------------------------ subcommands


def _list(args: argparse.Namespace) -> int:
    keys = resolve_names(all_=args.family is None, family=args.family)
    rows = [_status(k, rehash=False) for k in keys]
    if args.json:
        print(json.dumps({"home": str(hub.scenemetrics_home()), "checkpoints": rows}, indent=2))
        return 0
    table = [["NAME", "FAMILY", "FILE", "SIZE", "CACHED", "HASH OK", "URL"]]
    for r in rows:
        ok = "-" if not r["cached"] else ("yes" if r["hash_ok"] else ("no" if r["hash_ok"] is False else "unknown"))
        table.append(
            [r["name"], r["family"], r["file"], _size(r["size"]), "yes" if r["cached"] else "no", ok, r["url"]]
        )
    print(f"cache: {hub.scenemetrics_home()}" + ("  (SCENEMETRICS_OFFLINE=1)" if hub.is_offline() else ""))
    print(_table(table))
    notes = [f"{r['name']}: {r['problem']}" for r in rows if r["problem"]]
    notes += [f"{r['name']}: sha256 {r['recorded_sha256']} recorded in {r['sidecar']}" for r in rows if r["sidecar"]]
    if notes:
        print()
        print("\n".join(notes))
    return 0


def _download(args: argparse.Namespace) -> int:
    if not (args.names or args.all or args.family):
        raise CLIError(
            "name the checkpoints to download, or pass --all or --family NAME (see `scenemetrics weights list`)"
        )
    if hub.is_offline():
        raise CLIError("SCENEMETRICS_OFFLINE=1 is set: unset it to download (on a machine with internet access)")
    keys = resolve_names(args.names, all_=args.all, family=args.family)
    failed = []
    for key in keys:
        try:
            path = hub.download(key, progress=not args.quiet, force=args.force)
        except (OSError, ValueError) as err:
            failed.append(key)
            print(f"scenemetrics: {key}: {err}", file=sys.stderr)
            continue
        print(f"{key}: {path}")
    if failed:
        raise CLIError(f"{len(failed)} of {len(keys)} download(s) failed: {', '.join(failed)}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    keys = resolve_names(args.names, all_=not args.names and args.family is None, family=args.family)
    rows = [_status(k, rehash=True) for k in keys]
    if args.names:
        missing = [r["name"] for r in rows if not r["cached"]]
        if missing:
            raise CLIError(f"not cached: {', '.join(missing)} (scenemetrics weights download {' '.join(missing)})")
    checked = [r for r in rows if r["cached"]]
    bad = []
    for r in checked:
        if r["hash_ok"]:
            print(f"ok        {r['name']}  {r['path']}")
        else:
            bad.append(r["name"])
            print(f"FAILED    {r['name']}  {r['path']}: {r['problem']}")
    if not checked:
        print(f"nothing cached in {hub.scenemetrics_home()}")
    if bad:
        raise CLIError(f"{len(bad)} of {len(checked)} cached checkpoint(s) failed verification: {', '.join(bad)}")
    return 0


def _path(args: argparse.Namespace) -> int:
    (key,) = resolve_names([args.name])
    path = find_cached(key)
    if path is not None:
        print(path)
        return 0
    ckpt = hub.CHECKPOINTS[key]
    print(hub.cache_dir(ckpt.room) / ckpt.filename)
    print(f"scenemetrics: {key} is not cached yet (scenemetrics weights download {key})", file=sys.stderr)
    return 1


def _convert(args: argparse.Namespace) -> int:
    if not args.trust:
        print(
            "scenemetrics: error: `weights convert` loads IN with the full pickle loader, which runs any code hidden "
            "in the file. Only do this for a file whose origin you trust, and confirm with --i-trust-this-file.",
            file=sys.stderr,
        )
        return 2
    dropped = convert_checkpoint(args.src, args.dst)
    print(f"wrote {args.dst} (loads with torch.load(weights_only=True))")
    for item in dropped:
        print(f"dropped: {item}")
    return 0


# ------------------------------------------------------------------------------------------------ convert


def convert_checkpoint(src: str | os.PathLike, dst: str | os.PathLike) -> list[str]:
    """Re-save a checkpoint as tensors and plain containers, loadable with ``torch.load(weights_only=True)``.

    **This runs the full unpickler on** ``src`` (``torch.load(weights_only=False)``), which executes any code the
    file holds: call it only for files whose origin you trust. The structure is kept (a Megvii training checkpoint
    stays ``{"model": state_dict, "start_epoch": ..., ...}``); tensors are kept (parameters become plain tensors),
    ``nn.Module`` objects become their ``state_dict()``, numpy arrays become tensors and numpy scalars numbers,
    ``argparse.Namespace`` objects become dicts, ``torch.Size`` a tuple, dtypes and devices their names. Any other
    object is dropped and listed in the return value.

    Args:
        src: the trusted checkpoint.
        dst: the new file; it must not exist (the original is never overwritten).

    Returns:
        ``"<where>: <type>"`` for every dropped object (empty when nothing was dropped).

    Raises:
        ValueError: ``dst`` exists, ``src`` cannot be read, or the result still needs the unsafe loader.
    """
    import pickle

    import torch

    src_p, dst_p = Path(src), Path(dst)
    if dst_p.exists():
        raise ValueError(f"{dst_p} exists; choose a new file name (the original is never overwritten)")
    try:
        obj = torch.load(src_p, map_location="cpu", weights_only=False)
    except Exception as err:
        raise ValueError(f"could not read checkpoint {os.fspath(src_p)!r}: {type(err).__name__}: {err}") from err
    dropped: list[str] = []
    plain = _plain(obj, "<root>", dropped)
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst_p.with_name(f".{dst_p.name}.{os.getpid()}.tmp")
    try:
        torch.save(plain, tmp)
        try:
            torch.load(tmp, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as err:  # a guard: _plain only emits allowed types
            raise ValueError(f"the re-saved checkpoint still needs the unsafe loader: {err}") from err
        os.replace(tmp, dst_p)
    finally:
        tmp.unlink(missing_ok=True)
    return dropped


def _plain(obj: Any, where: str, dropped: list[str]) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if obj is None or type(obj) in (bool, int, float, complex, str, bytes):  # exact: np.float64 is a float
        return obj
    if isinstance(obj, torch.nn.Module):
        return _plain(obj.state_dict(), where, dropped)
    if isinstance(obj, torch.Size):
        return tuple(int(v) for v in obj)
    if isinstance(obj, (torch.dtype, torch.device)):
        return str(obj)
    if isinstance(obj, argparse.Namespace):
        return _plain(vars(obj), where, dropped)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                dropped.append(f"{where}[{k!r}]: key of type {type(k).__module__}.{type(k).__qualname__}")
                continue
            item = _plain(v, f"{where}[{k!r}]", dropped)
            if item is not _DROP:
                out[k] = item
        return out
    if isinstance(obj, (list, tuple)):
        items = [_plain(v, f"{where}[{i}]", dropped) for i, v in enumerate(obj)]
        items = [v for v in items if v is not _DROP]
        return items if isinstance(obj, list) else tuple(items)
    module = type(obj).__module__
    if module == "numpy" or module.startswith("numpy."):
        import numpy as np

        if isinstance(obj, np.ndarray) and obj.dtype != object:
            return torch.from_numpy(np.ascontiguousarray(obj).copy())
        if isinstance(obj, np.generic):
            return obj.item()
    primitive = next((t for t in (bool, int, float, complex, str, bytes) if isinstance(obj, t)), None)
    if primitive is not None:  # a subclass such as an IntEnum: its plain value
        return primitive(obj)
    dropped.append(f"{where}: {module}.{type(obj).__qualname__}")
    return _DROP


_DROP = object()
