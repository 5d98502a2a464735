"""Run the Triton kernel through Triton's interpreter on small cases and save inputs and outputs (a subprocess of
``test_triton.py``: ``TRITON_INTERPRET=1`` must be set before Triton is imported, for its standard library too).

Usage: ``TRITON_INTERPRET=1 python -m tests.puzzlesim.triton_cases OUT.pt``
"""

from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

CASES = {
    "ragged": (37, 150, 40, (16, 32, 16)),
    "one-tile": (16, 16, 16, (16, 16, 16)),
    "c-below-block": (50, 70, 8, (32, 16, 16)),
    "zeros": (20, 40, 16, (16, 16, 16)),
}


def main(out: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    from scenemetrics.puzzlesim.triton_search import triton_max

    results = {}
    for name, (m, k, c, (bm, bn, bc)) in CASES.items():
        g = torch.Generator().manual_seed(m + k + c)
        q = F.normalize(torch.rand(m, c, generator=g) ** 2, dim=1)
        r = F.normalize(torch.rand(k, c, generator=g) ** 2, dim=1)
        r[5] = r[90 % k]  # a tie
        q[3] = r[7]  # an exact match
        if name == "zeros":
            q[0] = 0
            r[::2] = 0
        values, idx = triton_max(q, r, with_indices=True, block_m=bm, block_n=bn, block_c=bc)
        only, none = triton_max(q, r, block_m=bm, block_n=bn, block_c=bc)
        assert none is None
        results[name] = {"q": q, "r": r, "values": values, "idx": idx, "values_only": only}
    results["empty"] = {"values": triton_max(torch.zeros(0, 8), torch.rand(3, 8))[0]}
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
