"""Approximate PuzzleSim search with faiss (optional extra ``[faiss]``; the exact search is the default).

Each returned value is a true similarity of some reference vector, so the approximate map never exceeds the exact
map (beyond float rounding). Never the default; no gradients; not combined with screening.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["DEFAULT_FAISS_OPTIONS", "faiss_max"]

DEFAULT_FAISS_OPTIONS = {"index": "HNSW32", "ef_search": 128}


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise ImportError('search="faiss" needs faiss: pip install "scenemetrics[faiss]"') from None
    return faiss


def _build(vectors: Tensor, options: dict) -> Any:
    faiss = _import_faiss()
    spec = options.get("index", DEFAULT_FAISS_OPTIONS["index"])
    unknown = set(options) - {"index", "ef_search", "nprobe", "seed"}
    if unknown:
        raise ValueError(f"`faiss_options` has unknown keys {sorted(unknown)}; known: index, ef_search, nprobe, seed")
    if not (str(spec).startswith("HNSW") or (str(spec).startswith("IVF") and str(spec).endswith(",Flat"))):
        raise ValueError(f"`faiss_options['index']` must be 'HNSW<M>' or 'IVF<n>,Flat'; received {spec!r}")
    data = vectors.detach().to("cpu", torch.float32).contiguous().numpy()
    index = faiss.index_factory(data.shape[1], spec, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(data)
    index.add(data)
    if str(spec).startswith("HNSW"):
        index.hnsw.efSearch = int(options.get("ef_search", DEFAULT_FAISS_OPTIONS["ef_search"]))
    else:
        index.nprobe = int(options.get("nprobe", 16))
    return index


def faiss_max(q: Tensor, vectors: Tensor, options: dict | None, index: Any = None) -> tuple[Tensor, Any]:
    """Approximate ``max_k <q_i, r_k>`` with a faiss inner-product index (built if ``index`` is None).

    Returns:
        ``(values (M,) float32 on q's device, index)`` so the caller can cache the index.
    """
    options = dict(DEFAULT_FAISS_OPTIONS if options is None else options)
    if index is None:
        index = _build(vectors, options)
    queries = q.detach().to("cpu", torch.float32).contiguous().numpy()
    dist, _ = index.search(queries, 1)
    return torch.from_numpy(dist[:, 0].copy()).to(q.device), index
