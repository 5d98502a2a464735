"""Fused GPU search of PuzzleSim: tile GEMM and running max in one Triton kernel, no similarity matrix in memory.

Each program owns ``BLOCK_M`` query rows and walks over all reference rows in tiles of ``BLOCK_N``, accumulating
``<q, r>`` over the channels in slices of ``BLOCK_C`` (``tl.dot`` with IEEE fp32 inputs for float32, fp32
accumulation for float16 / bfloat16), and keeps a running max (and argmax) per query in registers. Memory traffic is
the query and reference matrices only; the ``M x K`` similarities never leave the chip.

Used automatically by ``screening="auto"`` on CUDA when Triton is installed (it ships with torch's CUDA builds).
With ``TRITON_INTERPRET=1`` the same kernel runs on CPU tensors through Triton's interpreter (slow; for tests).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import Tensor

__all__ = ["triton_available", "triton_max"]

_KERNELS: dict[bool, Any] = {}


def _interpret() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")


def triton_available(device: torch.device | str | None = None) -> bool:
    """Whether :func:`triton_max` can run on ``device``: Triton importable, and CUDA (or the interpreter on CPU)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    dev = torch.device(device) if device is not None else None
    if dev is None or dev.type == "cuda":
        return True
    return dev.type == "cpu" and _interpret()


def _kernel() -> Any:
    """Build (once per interpreter mode) the jit kernel; Triton reads ``TRITON_INTERPRET`` when it is defined."""
    mode = _interpret()
    if mode in _KERNELS:
        return _KERNELS[mode]
    import triton
    import triton.language as tl

    def max_sim_kernel(
        q_ptr,
        r_ptr,
        out_ptr,
        idx_ptr,
        m,
        k,
        c,
        stride_qm,
        stride_qc,
        stride_rk,
        stride_rc,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_C: tl.constexpr,
        IEEE: tl.constexpr,
        WITH_IDX: tl.constexpr,
    ):
        pid = tl.program_id(0)
        offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = offs_m < m
        best = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        best_i = tl.zeros((BLOCK_M,), tl.int64)
        for k0 in range(0, k, BLOCK_N):
            offs_n = k0 + tl.arange(0, BLOCK_N)
            col_ok = offs_n < k
            acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
            for c0 in range(0, c, BLOCK_C):
                offs_c = c0 + tl.arange(0, BLOCK_C)
                c_ok = offs_c < c
                q = tl.load(
                    q_ptr + offs_m[:, None] * stride_qm + offs_c[None, :] * stride_qc,
                    mask=row_ok[:, None] & c_ok[None, :],
                    other=0.0,
                )
                r = tl.load(
                    r_ptr + offs_n[None, :] * stride_rk + offs_c[:, None] * stride_rc,
                    mask=col_ok[None, :] & c_ok[:, None],
                    other=0.0,
                )
                if IEEE:
                    acc += tl.dot(q, r, input_precision="ieee")
                else:
                    acc += tl.dot(q, r)
            acc = tl.where(col_ok[None, :], acc, float("-inf"))
            tile_max = tl.max(acc, axis=1)
            if WITH_IDX:
                tile_arg = tl.argmax(acc, axis=1).to(tl.int64) + k0
                best_i = tl.where(tile_max > best, tile_arg, best_i)
            best = tl.maximum(best, tile_max)
        tl.store(out_ptr + offs_m, best, mask=row_ok)
        if WITH_IDX:
            tl.store(idx_ptr + offs_m, best_i, mask=row_ok)

    if mode:  # Triton may have read TRITON_INTERPRET at import, before it was set: wrap explicitly
        from triton.runtime.interpreter import InterpretedFunction

        kernel = InterpretedFunction(max_sim_kernel)
    else:
        kernel = triton.jit(max_sim_kernel)
    _KERNELS[mode] = kernel
    return kernel


def triton_max(
    q: Tensor,
    r: Tensor,
    *,
    with_indices: bool = False,
    block_m: int = 64,
    block_n: int = 64,
    block_c: int = 32,
) -> tuple[Tensor, Tensor | None]:
    """Exact ``max_k <q_i, r_k>`` (and the first argmax) with the fused kernel.

    Args:
        q: ``(M, C)`` query rows; float32, float16 or bfloat16 (same dtype as ``r``).
        r: ``(K, C)`` reference rows, ``K >= 1``.
        with_indices: also return the argmax ``k`` per query (earliest tile wins ties).
        block_m, block_n, block_c: tile sizes (powers of two, at least 16).

    Returns:
        ``(values (M,) float32, indices (M,) int64 or None)``.

    Raises:
        ValueError: tensors on a device Triton cannot run on (CPU without ``TRITON_INTERPRET=1``), mismatched
            shapes or dtypes.
    """
    if q.ndim != 2 or r.ndim != 2 or q.shape[1] != r.shape[1] or r.shape[0] == 0:
        raise ValueError(f"`q` (M, C) and `r` (K >= 1, C) must share C; received {tuple(q.shape)} and {tuple(r.shape)}")
    if q.dtype != r.dtype or q.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"`q` and `r` must both be float32, float16 or bfloat16; received {q.dtype} and {r.dtype}")
    if q.device != r.device or not triton_available(q.device):
        raise ValueError(
            f"the Triton search runs on CUDA tensors (or CPU tensors with TRITON_INTERPRET=1); received {q.device} "
            f"and {r.device}"
        )
    m, c = q.shape
    out = torch.empty(m, dtype=torch.float32, device=q.device)
    idx = torch.empty(m, dtype=torch.int64, device=q.device) if with_indices else out
    if m == 0:
        return out, (idx if with_indices else None)
    kernel = _kernel()
    grid = ((m + block_m - 1) // block_m,)
    kernel[grid](
        q,
        r,
        out,
        idx,
        m,
        r.shape[0],
        c,
        q.stride(0),
        q.stride(1),
        r.stride(0),
        r.stride(1),
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_C=block_c,
        IEEE=q.dtype == torch.float32,
        WITH_IDX=with_indices,
    )
    return out, (idx if with_indices else None)
