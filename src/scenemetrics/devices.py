"""Device names as users give them (``--device``, ``device=``), resolved to a ``torch.device``; the end of a
command's process group.

Example:
    >>> from scenemetrics.devices import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
"""

from __future__ import annotations

from typing import Any

__all__ = ["end_process_group", "resolve_device"]


def resolve_device(device: str | None) -> Any:
    """``device`` as a ``torch.device``; ``None`` means cuda when available, else cpu.

    Raises:
        ValueError: a name torch does not know, or a CUDA device on a machine without CUDA (the message names
            ``--device``).
    """
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"--device {device!r} is not a torch device: {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device!r}: CUDA is not available on this machine")
    return dev


def end_process_group() -> bool:
    """Destroy ``torch.distributed``'s default process group, if there is one; whether there was.

    Each rank of a multi-process command calls it when its work (every collective) is done. Lightning destroys only
    NCCL groups at exit; a gloo group left to interpreter shutdown can abort the process (SIGABRT, "terminate called
    without an active exception") while its worker threads still hold finished work. Destroying is local to the
    rank: it waits for no other.

    Example:
        >>> end_process_group()  # no process group here
        False
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return False
    dist.destroy_process_group()
    return True
