"""Read the history rows of an offline W&B run file (``run-<id>.wandb``), for tests.

The file is a LevelDB-style log: a 7-byte file header (``":W&B"``, a 2-byte magic, a 1-byte version), then 32 KiB
blocks holding records with a 7-byte header: CRC32C (4 bytes, not checked here), little-endian payload length
(2 bytes) and a type (1 full, 2 first, 3 middle, 4 last; a payload that does not fit a block is split). A block
tail shorter than a record header is zero padding. Each reassembled payload is a ``wandb_internal_pb2.Record``.
wandb 0.25 shipped a reader (``wandb.sdk.internal.datastore``); later versions do not.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections import Counter
from typing import Any

__all__ = ["read_history", "record_types", "wait_for_exit_record"]

_BLOCK = 32 * 1024
_HEADER = 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _payloads(data: bytes) -> list[bytes]:
    if data[:4] != b":W&B":
        raise ValueError("not a W&B run file (missing ':W&B' header)")
    out: list[bytes] = []
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _HEADER:  # zero padding at the end of a block
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if kind == 0 and length == 0:  # padding / unused tail
            pos += room
            continue
        chunk = data[pos + _HEADER : pos + _HEADER + length]
        pos += _HEADER + length
        if kind == _FULL:
            out.append(chunk)
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            out.append(pending + chunk)
            pending = b""
        else:
            raise ValueError(f"unknown record type {kind} at offset {pos}")
    return out


def _records(path: str | os.PathLike) -> list[Any]:
    from wandb.proto import wandb_internal_pb2

    with open(path, "rb") as f:
        data = f.read()
    out = []
    for payload in _payloads(data):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        out.append(record)
    return out


def record_types(path: str | os.PathLike) -> Counter:
    """How many records of each type the file holds (for diagnostics)."""
    return Counter(r.WhichOneof("record_type") for r in _records(path))


def wait_for_exit_record(path: str | os.PathLike, timeout: float = 60.0) -> bool:
    """Wait until the run file holds its ``exit`` record (the W&B service may still be writing after finish())."""
    deadline = time.monotonic() + timeout
    while True:
        if os.path.exists(path) and record_types(path)["exit"]:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def read_history(path: str | os.PathLike) -> list[dict[str, Any]]:
    """History rows (``wandb.log`` calls) of a run file: ``{key: decoded JSON value}`` per row, in order."""
    rows = []
    for record in _records(path):
        if record.WhichOneof("record_type") != "history":
            continue
        row = {}
        for item in record.history.item:
            key = item.key or "/".join(item.nested_key)
            row[key] = json.loads(item.value_json)
        rows.append(row)
    return rows
