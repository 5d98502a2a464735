"""Does this CPU multiply bf16 matrices fast? The decision behind PuzzleSim's bf16-screened search.

The bf16-screened search pays off only where a bf16 GEMM (fp32 accumulation) is clearly faster than fp32: CPUs with
native bf16 dot products (x86 AVX512-BF16 or AMX-BF16). Elsewhere torch emulates bf16 and the same GEMM is tens of
times *slower* than fp32, so timing a large one would cost many seconds. The decision is therefore made from the
CPU's capabilities, with a probe of a few milliseconds only where the capabilities do not settle it:

* x86 without AVX512-BF16 and AMX-BF16: not fast (no probe).
* x86 with one of them, and other CPUs (ARM, Apple): a staged probe, a ``(32x256)@(256x256)`` product first (stops
  at once when bf16 is slower than fp32), then ``(256x256)@(256x2048)``: fast when bf16 is >= 1.5x faster than fp32
  and, on unit-norm non-negative vectors, within 2^-6 of fp32 (a kernel that accumulates in bf16 fails that test;
  the screening's error bound assumes fp32 accumulation).

The result is cached per process and per machine in ``$SCENEMETRICS_HOME/puzzlesim/bf16.json`` (keyed by CPU
model, bf16 flags, architecture and torch version), so later processes do not probe again. The environment variable
``SCENEMETRICS_BF16`` = ``auto`` (default) | ``on`` | ``off`` forces either answer; so does the ``mode`` argument
of :func:`bf16_decision`, and ``screening="on"`` / ``"off"`` of the PuzzleSim functions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from scenemetrics.fileio import atomic_write_text

__all__ = ["ENV_VAR", "MODES", "bf16_decision", "cache_path", "cpu_bf16_capabilities", "probe_bf16_gemm"]

ENV_VAR = "SCENEMETRICS_BF16"
MODES = ("auto", "on", "off")
MIN_SPEEDUP = 1.5
MAX_ERROR = 2.0**-6
_FORMAT = 1
_X86 = {"x86_64", "amd64", "i386", "i686", "x86"}

_process_cache: dict[str, dict[str, Any]] = {}


def _mode(mode: str | None) -> str:
    if mode is not None:
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {', '.join(map(repr, MODES))} or None; received {mode!r}")
        return mode
    env = os.environ.get(ENV_VAR, "").strip().lower() or "auto"
    if env not in MODES:
        raise ValueError(
            f"the environment variable {ENV_VAR} must be one of {', '.join(MODES)}; received {os.environ[ENV_VAR]!r}"
        )
    return env


def _cpuinfo() -> tuple[str, set[str]]:
    """CPU model name and feature flags from /proc/cpuinfo (empty where there is none)."""
    model, flags = "", set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip().lower()
            if key in ("model name", "cpu model", "hardware") and not model:
                model = value.strip()
            elif key in ("flags", "features") and not flags:
                flags = set(value.split())
            if model and flags:
                break
    return model or platform.processor() or "unknown", flags


def cpu_bf16_capabilities() -> dict[str, Any]:
    """What the CPU says about bf16: ``{"arch", "model", "avx512_bf16", "amx_bf16", "arm_bf16", "torch_capability"}``.

    Flags are ``True`` / ``False``, or ``None`` where they do not apply or cannot be read. x86 flags come from torch
    (``torch.cpu._is_avx512_bf16_supported``, ``_is_amx_tile_supported``) where available, else ``/proc/cpuinfo``.
    """
    import torch

    arch = platform.machine().lower()
    model, flags = _cpuinfo()
    caps: dict[str, Any] = {"arch": arch, "model": model, "avx512_bf16": None, "amx_bf16": None, "arm_bf16": None}
    if arch in _X86:
        caps["avx512_bf16"] = "avx512_bf16" in flags if flags else None
        caps["amx_bf16"] = "amx_bf16" in flags if flags else None
        cpu = getattr(torch, "cpu", None)
        with contextlib.suppress(Exception):
            caps["avx512_bf16"] = bool(cpu._is_avx512_bf16_supported())
        with contextlib.suppress(Exception):
            caps["amx_bf16"] = bool(cpu._is_amx_tile_supported()) and (not flags or "amx_bf16" in flags)
    elif flags:
        caps["arm_bf16"] = "bf16" in flags
    try:
        caps["torch_capability"] = str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # pragma: no cover - very old torch
        caps["torch_capability"] = "unknown"
    return caps


def probe_bf16_gemm(shape: tuple[int, int, int] = (256, 256, 2048), repeats: int = 3) -> dict[str, Any]:
    """Time an ``(m x k) @ (k x n)`` product in bf16 and fp32 and measure the bf16 error on unit vectors.

    A ``(32x256)@(256x256)`` pre-check runs first and ends the probe when bf16 is slower than fp32 (then the CPU
    emulates bf16 and the full-size timing would only waste time). Milliseconds on CPUs with native bf16.

    Returns:
        ``{"speedup": fp32_time / bf16_time, "max_error", "fast": speedup >= 1.5, "accurate": max_error <= 2^-6,
        "shape": [m, k, n]}`` (``max_error`` is ``None`` when the pre-check stopped the probe).
    """
    import torch

    def best_time(x: torch.Tensor, y: torch.Tensor, n: int) -> float:
        torch.mm(x, y)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            torch.mm(x, y)
            times.append(time.perf_counter() - t0)
        return min(times)

    g = torch.Generator().manual_seed(0)
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with torch.no_grad():
            a, b = torch.rand(32, 256, generator=g), torch.rand(256, 256, generator=g)
            pre = best_time(a, b, 2) / max(best_time(a.bfloat16(), b.bfloat16(), 2), 1e-12)
            if pre < 1.0:
                return {"speedup": pre, "max_error": None, "fast": False, "accurate": None, "shape": [32, 256, 256]}
            m, k, n = shape
            a = torch.rand(m, k, generator=g)
            b = torch.rand(n, k, generator=g)
            a = a / a.norm(dim=1, keepdim=True)
            b = (b / b.norm(dim=1, keepdim=True)).T.contiguous()
            ab, bb = a.bfloat16(), b.bfloat16()
            speedup = best_time(a, b, repeats) / max(best_time(ab, bb, repeats), 1e-12)
            err = float((torch.mm(ab, bb).float() - a @ b).abs().max())
    finally:
        torch.set_float32_matmul_precision(old)
    return {
        "speedup": speedup,
        "max_error": err,
        "fast": speedup >= MIN_SPEEDUP,
        "accurate": err <= MAX_ERROR,
        "shape": [m, k, n],
    }


def cache_path() -> Path:
    """``$SCENEMETRICS_HOME/puzzlesim/bf16.json``: the per-machine decisions."""
    from scenemetrics.hub import cache_dir

    return cache_dir("puzzlesim") / "bf16.json"


def _fingerprint(caps: dict[str, Any]) -> str:
    import torch

    key = json.dumps({**caps, "torch": torch.__version__}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _read_cache(path: Path, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
        entry = data["machines"][key] if data.get("format") == _FORMAT else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("enabled"), bool):
        return None
    return entry


def _write_cache(path: Path, key: str, entry: dict[str, Any]) -> None:
    """Add ``entry`` to the cache file (atomic replace); a cache that cannot be written is skipped."""
    with contextlib.suppress(OSError):
        try:
            data = json.loads(path.read_text())
            machines = data["machines"] if data.get("format") == _FORMAT and isinstance(data["machines"], dict) else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            machines = {}
        machines[key] = entry
        atomic_write_text(path, json.dumps({"format": _FORMAT, "machines": machines}, indent=1, sort_keys=True))


def _decide(caps: dict[str, Any]) -> dict[str, Any]:
    """The decision from capabilities, probing only where they do not settle it."""
    if caps["arch"] in _X86 and caps["avx512_bf16"] is False and caps["amx_bf16"] is False:
        return {
            "enabled": False,
            "fast": False,
            "accurate": None,
            "speedup": None,
            "max_error": None,
            "source": "capabilities",
            "reason": "x86 CPU without AVX512-BF16 or AMX-BF16: bf16 matrix products are emulated (slow)",
        }
    probe = probe_bf16_gemm()
    enabled = bool(probe["fast"] and probe["accurate"])
    native = [n for n in ("avx512_bf16", "amx_bf16", "arm_bf16") if caps.get(n)]
    why = "fast and accurate" if enabled else ("not accurate" if probe["fast"] else "not fast")
    return {
        "enabled": enabled,
        "fast": bool(probe["fast"]),
        "accurate": probe["accurate"],
        "speedup": probe["speedup"],
        "max_error": probe["max_error"],
        "source": "probe",
        "reason": f"bf16 GEMM probe ({', '.join(native) or 'no bf16 flags known'}): {why}, "
        f"{probe['speedup']:.2f}x fp32",
    }


def bf16_decision(mode: str | None = None, *, refresh: bool = False) -> dict[str, Any]:
    """Whether PuzzleSim's ``screening="auto"`` uses the bf16-screened search on this CPU.

    Args:
        mode: ``"auto"`` (decide from the CPU, see the module docstring), ``"on"`` or ``"off"`` (force);
            ``None`` (default) reads the environment variable ``SCENEMETRICS_BF16`` (unset = ``"auto"``).
        refresh: ignore the process and file caches and decide again (the file entry is rewritten).

    Returns:
        ``{"enabled": bool, "fast", "accurate", "speedup", "max_error", "source", "reason", "mode"}``;
        ``source`` is ``"forced"``, ``"capabilities"``, ``"probe"`` or ``"cache"``.

    Raises:
        ValueError: a ``mode`` or ``SCENEMETRICS_BF16`` value other than auto / on / off.

    Example:
        >>> bf16_decision("off")["enabled"]
        False
    """
    mode = _mode(mode)
    if mode != "auto":
        on = mode == "on"
        return {
            "enabled": on,
            "fast": None,
            "accurate": None,
            "speedup": None,
            "max_error": None,
            "source": "forced",
            "reason": f"forced {mode} (mode argument or {ENV_VAR})",
            "mode": mode,
        }
    path = cache_path()
    slot = str(path)
    if not refresh and slot in _process_cache:
        return _process_cache[slot]
    caps = cpu_bf16_capabilities()
    key = _fingerprint(caps)
    entry = None if refresh else _read_cache(path, key)
    if entry is not None:
        result = {**entry, "source": "cache", "mode": "auto"}
    else:
        result = {**_decide(caps), "mode": "auto"}
        _write_cache(path, key, {**result, "cpu": caps["model"], "decided_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
    _process_cache[slot] = result
    return result
