"""Device names as users give them (``--device``, ``device=``), resolved to a ``torch.device``.

Example:
    >>> from scenemetrics.devices import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
"""

from __future__ import annotations

from typing import Any

__all__ = ["resolve_device"]


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
