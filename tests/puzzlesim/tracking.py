"""A tensor-allocation tracker for memory-budget tests (it sees torch's tensors, not a kernel's private scratch)."""

from __future__ import annotations

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class TensorMemoryPeak(TorchDispatchMode):
    """Peak bytes of live tensor storages allocated inside the ``with`` block (checked after every operation)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.before: set[int] = set()
        self.peak = 0
        self.largest = 0

    def track_existing(self, *tensors: torch.Tensor) -> None:
        """Storages of ``tensors`` (and views of them) were allocated before the block: never count them."""
        self.before.update(t.untyped_storage().data_ptr() for t in tensors)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.live = {k: v for k, v in self.live.items() if not v[0].expired()}
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                key = st.data_ptr()
                if key in self.before or key in self.live or st.nbytes() == 0:
                    continue
                self.live[key] = (StorageWeakRef(st), st.nbytes())
                self.largest = max(self.largest, st.nbytes())
        self.peak = max(self.peak, sum(v[1] for v in self.live.values()))
        return out
