"""Input validation shared by the OpenLex3D functions (internal).

Every check raises ``ValueError`` (``TypeError`` for a wrong kind of object, :class:`DtypeError`, both at once, for
an array of the wrong dtype) naming the argument, what was expected and what was received.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class DtypeError(TypeError, ValueError):
    """An array of the wrong dtype (e.g. float ``gt_ids``).

    Both a ``TypeError`` (the Python convention, and the documented error for a non-integer ``pred_index``) and a
    ``ValueError`` (the documented error for every other bad array argument, such as ``gt_ids`` "not 1-D integer").
    """


def _describe(x: Any) -> str:
    if isinstance(x, (Tensor, np.ndarray)):
        return f"shape {tuple(x.shape)} dtype {x.dtype}"
    return type(x).__name__


def _check_not_meta(x: Tensor, name: str) -> None:
    if x.device.type == "meta":
        raise ValueError(f"`{name}` is on the meta device (it holds no data); pass a tensor on the CPU or a GPU")


def to_numpy(x: Any, name: str) -> np.ndarray:
    """A tensor or array as a numpy array (CPU, detached); anything else is a ``TypeError``."""
    if isinstance(x, Tensor):
        _check_not_meta(x, name)
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy()
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"`{name}` must be a torch.Tensor or numpy.ndarray; received {type(x).__name__}")


def _is_real_numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "iuf"


def check_points(x: Any, name: str) -> np.ndarray:
    """``(P, 3)`` finite real coordinates as float64 numpy (``P = 0`` allowed)."""
    arr = to_numpy(x, name)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"`{name}` must have shape (N, 3); received {_describe(arr)}")
    if not _is_real_numeric(arr.dtype):
        raise DtypeError(f"`{name}` must hold real numbers; received dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr.sum()):  # a finite sum proves every coordinate finite; else find the bad rows
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if bad.size:
            raise ValueError(
                f"`{name}` must contain finite coordinates; {bad.size} point(s) hold NaN or Inf (first at row {bad[0]})"
            )
    return arr


def check_features(x: Any, name: str) -> Tensor:
    """``(K, D)`` finite float features as a tensor on their own device (float16/bfloat16 become float32)."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "f":
            raise DtypeError(f"`{name}` must be a float array; received dtype {x.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(x))
    elif isinstance(x, Tensor):
        _check_not_meta(x, name)
        t = x.detach()
    else:
        raise TypeError(f"`{name}` must be a torch.Tensor or numpy.ndarray; received {type(x).__name__}")
    if t.dtype not in _FLOAT_DTYPES:
        raise DtypeError(f"`{name}` must be a float tensor; received dtype {t.dtype}")
    if t.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (rows, D); received {_describe(t)}")
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    # fast path: a finite sum proves every entry finite (an overflowing sum only falls through to the exact check)
    if t.numel() and not bool(torch.isfinite(t.sum())):
        finite = torch.isfinite(t).all(dim=1)
        bad = torch.nonzero(~finite).flatten()
        if bad.numel():
            raise ValueError(
                f"`{name}` must be finite; {bad.numel()} row(s) contain NaN or Inf (first at row {int(bad[0])})"
            )
    return t


def check_int_array(x: Any, name: str, length: int | None = None) -> np.ndarray:
    """A 1-D integer array as int64 numpy; :class:`DtypeError` (TypeError and ValueError) for other dtypes."""
    arr = to_numpy(x, name)
    if arr.dtype.kind not in "iu":
        raise DtypeError(f"`{name}` must be an integer array; received dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; received {_describe(arr)}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"`{name}` must have length {length}; received length {arr.shape[0]}")
    return arr.astype(np.int64, copy=False)


def check_index(x: Any, n_points: int, n_rows: int, *, allow_unassigned: bool, name: str = "pred_index") -> np.ndarray:
    """Point -> feature-row index as int64 numpy; ``None`` is the identity (requires ``n_rows == n_points``)."""
    if x is None:
        if n_rows != n_points:
            raise ValueError(
                f"`{name}=None` means one feature row per point, so `pred_features` must have {n_points} rows "
                f"(one per point of `pred_points`); received {n_rows}"
            )
        return np.arange(n_points, dtype=np.int64)
    idx = check_int_array(x, name, n_points)
    if idx.size:
        low = -1 if allow_unassigned else 0
        bad = (idx < low) | (idx >= n_rows)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            allowed = f"[-1, {n_rows})" if allow_unassigned else f"[0, {n_rows})"
            raise ValueError(
                f"`{name}` values must lie in {allowed} (rows of `pred_features`"
                f"{', -1 = no instance' if allow_unassigned else ''}); {int(bad.sum())} value(s) are out of range, "
                f"first {int(idx[first])} at position {first}"
            )
    return idx


def check_text_features(x: Any, n_texts: int, dim: int, name: str, texts_name: str) -> Tensor:
    """``(M, D)`` finite float text embeddings aligned with ``n_texts`` texts."""
    t = check_features(x, name)
    if t.shape[0] != n_texts or t.shape[1] != dim:
        raise ValueError(
            f"`{name}` must have shape ({n_texts}, {dim}) (one row per entry of `{texts_name}`, the feature "
            f"dimension of `pred_features`); received {tuple(t.shape)}"
        )
    return t


def check_prompts(prompts: Any, name: str = "prompts") -> list[str]:
    if isinstance(prompts, str) or not isinstance(prompts, Sequence):
        raise TypeError(f"`{name}` must be a sequence of strings; received {type(prompts).__name__}")
    out = list(prompts)
    for i, p in enumerate(out):
        if not isinstance(p, str):
            raise TypeError(f"`{name}[{i}]` must be a string; received {type(p).__name__}")
    if not out:
        raise ValueError(f"`{name}` must not be empty")
    return out


def check_voxel_size(voxel_size: Any) -> float | None:
    """``None`` or ``0`` (no downsampling) or a finite positive number."""
    if voxel_size is None:
        return None
    if isinstance(voxel_size, bool) or not isinstance(voxel_size, numbers.Real):
        raise ValueError(f"`voxel_size` must be None, 0 or a finite positive number; received {voxel_size!r}")
    v = float(voxel_size)
    if v == 0:
        return None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"`voxel_size` must be None, 0 or a finite positive number; received {voxel_size!r}")
    return v
