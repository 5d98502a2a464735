"""The one reader of PRISM's own safetensors files (projection heads and MMD anchor sets).

Safetensors holds raw tensors and string metadata only, so reading a file never runs code. Each scenemetrics file
records its kind in the ``format`` metadata string; :func:`read_prism_file` checks it, so a head is never read as
anchors (or a foreign file as either), and every error names the file.

Example:
    >>> import os, tempfile, torch
    >>> from scenemetrics.prism import ProjectionHead
    >>> from scenemetrics.prism.head import HEAD_FORMAT
    >>> path = os.path.join(tempfile.mkdtemp(), "head.safetensors")
    >>> ProjectionHead(in_dim=4, out_dim=2, hidden_dim=3).save(path)
    >>> tensors, meta = read_prism_file(path, HEAD_FORMAT, what="PRISM head", caller="ProjectionHead.load")
    >>> sorted(tensors), meta["out_dim"]
    (['fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight'], '2')
"""

from __future__ import annotations

import os

from torch import Tensor

__all__ = ["read_prism_file"]


def read_prism_file(
    path: str | os.PathLike, file_format: str, *, what: str, caller: str
) -> tuple[dict[str, Tensor], dict[str, str]]:
    """Every tensor (on the CPU, as stored) and the metadata strings of a scenemetrics PRISM safetensors file.

    Args:
        path: the file.
        file_format: the ``format`` metadata string the file must carry (e.g.
            :data:`~scenemetrics.prism.head.HEAD_FORMAT`).
        what: the kind of file, for the messages (``"PRISM head"``, ``"PRISM anchor"``).
        caller: the public function reading it, named when the ``[prism]`` extra is missing.

    Returns:
        ``(tensors, metadata)``.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: not a readable safetensors file, or its ``format`` is not ``file_format``.
        ImportError: safetensors is missing (``pip install "scenemetrics[prism]"``).
    """
    from scenemetrics.prism.zero123 import require_extra

    (safetensors,) = require_extra(caller, ("safetensors",))
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} file {path!r} does not exist")
    try:
        with safetensors.safe_open(path, framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    except Exception as err:
        raise ValueError(f"{path!r} is not a readable safetensors file: {err}") from err
    if meta.get("format") != file_format:
        raise ValueError(
            f"{path!r} is not a {what} file: its metadata format is {meta.get('format')!r}, expected {file_format!r}"
        )
    return tensors, dict(meta)
