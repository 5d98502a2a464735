"""PRISM's projection head: a two-layer MLP mapping the 8320-d diffusion feature to a 2048-d unit embedding.

No pretrained PRISM head exists (the authors released none): train one with
:func:`~scenemetrics.prism.train_head` / ``scenemetrics prism train-head``, or use ``head=None`` ("raw" mode).

Example:
    >>> import torch
    >>> from scenemetrics.prism import ProjectionHead
    >>> _ = torch.manual_seed(0)
    >>> head = ProjectionHead(in_dim=16, out_dim=8, hidden_dim=8)
    >>> e = head(torch.randn(4, 16))
    >>> tuple(e.shape), bool(torch.allclose(e.norm(dim=-1), torch.ones(4)))
    ((4, 8), True)
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.checks import check_positive_int

__all__ = ["HEAD_FORMAT", "ProjectionHead"]

HEAD_FORMAT = "scenemetrics.prism.head/1"
"""The ``format`` metadata string of a head file."""

_KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


class ProjectionHead(nn.Module):
    """``fc1 = Linear(in_dim, hidden_dim)`` -> ReLU -> ``fc2 = Linear(hidden_dim, out_dim)`` -> L2 normalisation.

    The paper's head is a two-layer ReLU MLP with a 2048-d L2-normalised output; its hidden width is not given.
    ``hidden_dim=2048`` (no bottleneck narrower than the output, about 21 M parameters) is our choice; the width is
    stored in every head file, so heads of other widths load too.

    Args:
        in_dim: feature size (8320 for Zero123 / SD1.x).
        out_dim: embedding size (2048 in the paper).
        hidden_dim: hidden width.

    Example:
        >>> head = ProjectionHead()
        >>> head.in_dim, head.hidden_dim, head.out_dim
        (8320, 2048, 2048)
    """

    def __init__(self, in_dim: int = 8320, out_dim: int = 2048, hidden_dim: int = 2048) -> None:
        super().__init__()
        self.in_dim = check_positive_int(in_dim, "in_dim")
        self.out_dim = check_positive_int(out_dim, "out_dim")
        self.hidden_dim = check_positive_int(hidden_dim, "hidden_dim")
        self.fc1 = nn.Linear(in_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, out_dim)
        self.metadata: dict[str, str] = {}  # the metadata strings of the file it was loaded from

    def forward(self, v: Tensor) -> Tensor:
        """Map ``(..., in_dim)`` features to ``(..., out_dim)`` unit-norm embeddings.

        Raises:
            ValueError: the last dimension is not ``in_dim``.
        """
        if v.ndim == 0 or v.shape[-1] != self.in_dim:
            raise ValueError(
                f"ProjectionHead expects features of shape (..., {self.in_dim}); received {tuple(v.shape)}"
            )
        v = v.to(self.fc1.weight.dtype)
        return F.normalize(self.fc2(F.relu(self.fc1(v))), p=2, dim=-1, eps=1e-12)

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, hidden_dim={self.hidden_dim}, out_dim={self.out_dim}"

    def save(self, path: str | os.PathLike, *, metadata: dict[str, str] | None = None) -> None:
        """Write the head as a safetensors file (float32 tensors, sizes and ``format`` in the metadata).

        Args:
            path: output file (conventionally ``*.safetensors``).
            metadata: extra provenance strings (e.g. ``extractor``, ``trainer`` JSON).

        Raises:
            ImportError: safetensors is missing (``pip install "scenemetrics[prism]"``).
        """
        from scenemetrics.prism.zero123 import require_extra

        (st,) = require_extra("ProjectionHead.save", ("safetensors.torch",))
        meta = {str(k): str(v) for k, v in (metadata or {}).items()}
        meta.update(
            format=HEAD_FORMAT, in_dim=str(self.in_dim), hidden_dim=str(self.hidden_dim), out_dim=str(self.out_dim)
        )
        sd = self.state_dict()
        tensors = {k: sd[k].detach().to("cpu", torch.float32).contiguous() for k in _KEYS}
        st.save_file(tensors, os.fspath(path), metadata=meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ProjectionHead:
        """Read a head written by :meth:`save` (or by ``train_head``): eval mode, CPU, float32.

        Raises:
            ValueError: the file is not a scenemetrics head (another ``format``), or its tensors do not match its
                sizes.
            FileNotFoundError: no such file.

        Example:
            >>> from scenemetrics.prism import ProjectionHead
            >>> head = ProjectionHead.load("runs/head/head.safetensors")  # doctest: +SKIP
        """
        from scenemetrics.prism.files import read_prism_file

        path = os.fspath(path)
        tensors, meta = read_prism_file(path, HEAD_FORMAT, what="PRISM head", caller="ProjectionHead.load")
        try:
            dims = {k: int(meta[k]) for k in ("in_dim", "hidden_dim", "out_dim")}
        except (KeyError, ValueError) as err:
            raise ValueError(f"{path!r}: head metadata lacks valid in_dim/hidden_dim/out_dim ({err})") from err
        if set(tensors) != set(_KEYS):
            raise ValueError(f"{path!r}: a head file holds exactly {list(_KEYS)}; received {sorted(tensors)}")
        head = cls(in_dim=dims["in_dim"], out_dim=dims["out_dim"], hidden_dim=dims["hidden_dim"])
        try:
            head.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
        except RuntimeError as err:
            raise ValueError(f"{path!r}: tensor shapes do not match the sizes in its metadata: {err}") from err
        head.metadata = dict(meta)
        return head.eval()
