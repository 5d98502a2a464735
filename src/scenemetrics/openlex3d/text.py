"""Text side of OpenLex3D: the optional CLIP prompt encoder and the chunked cosine logits / top-N / ranks.

:func:`encode_prompts` needs the ``[clip]`` extra (``open_clip_torch``), imported only when it is called. Every
metric takes precomputed embeddings, so nothing else in this room needs it.

Example:
    >>> import torch
    >>> from scenemetrics.openlex3d.text import cosine_logits
    >>> cosine_logits(torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 0.0], [0.0, 3.0]])).tolist()
    [[1.0, 0.0]]
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from scenemetrics import hub

__all__ = ["cosine_logits", "encode_prompts", "label_pass", "stable_topk", "unique_rows"]

_EPS = 1e-8
_CHUNK_BYTES = 64 * 2**20  # logits held at once (a chunk, its sorted copy and a gathered copy)
_CLIP_FILES = ("open_clip_pytorch_model.bin", "open_clip_model.safetensors")
_TRUE = {"1", "true", "yes", "on"}


def compute_dtype(features: Tensor, text: Tensor) -> torch.dtype:
    """float64 when both sides are float64, else float32 (the toolkit's precision)."""
    return torch.float64 if features.dtype == torch.float64 and text.dtype == torch.float64 else torch.float32


def _unit_rows(x: Tensor) -> Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(_EPS)


def unique_rows(x: Tensor) -> tuple[Tensor, Tensor | None]:
    """The distinct rows of ``x`` and the index that rebuilds ``x`` from them; ``(x, None)`` if all are distinct.

    A matrix product does not always give bit-identical values for identical rows (BLAS kernels round differently
    depending on a row's position in the block), so duplicated embeddings would get logits a rounding error apart
    and their exact tie would be broken by rounding instead of by the tie rule (lower index first). Multiplying
    each distinct row once and copying the result keeps such ties exact.
    """
    if x.shape[0] < 2:
        return x, None
    uniq, inverse = torch.unique(x, dim=0, return_inverse=True)
    if uniq.shape[0] == x.shape[0]:
        return x, None
    return uniq, inverse.reshape(-1)


def cosine_logits(features: Tensor, text: Tensor) -> Tensor:
    """``f·t / (max(|f|, 1e-8) · max(|t|, 1e-8))`` for every pair of rows: ``(K, M)`` on ``features.device``.

    Zero rows give 0 with every text; duplicated text rows give bit-identical columns. float32 unless both inputs
    are float64.
    """
    dtype = compute_dtype(features, text)
    distinct, inverse = unique_rows(text.to(features.device, dtype))
    logits = _unit_rows(features.to(dtype)) @ _unit_rows(distinct).T
    return logits if inverse is None else logits[:, inverse]


def stable_topk(logits: Tensor, n: int) -> Tensor:
    """Indices of the ``n`` largest entries of every row, best first; equal values: lower index first.

    ``torch.topk`` does the selection; rows with an exact tie among the selected values or across the cut (the
    ``n``-th and ``(n+1)``-th values equal) are redone with a stable full sort, which orders ties by index.
    """
    m = logits.shape[1]
    k = min(n + 1, m)
    vals, idx = torch.topk(logits, k, dim=1)
    tie = (vals[:, 1:] == vals[:, :-1]).any(dim=1)  # adjacent equal values, including across the cut
    out = idx[:, :n]
    if bool(tie.any()):
        out[tie] = torch.sort(logits[tie], dim=1, descending=True, stable=True).indices[:, :n]
    return out


def _logit_chunks(
    features: Tensor, text: Tensor, rows: np.ndarray, use_numpy: bool
) -> Iterator[tuple[int, int, Tensor]]:
    """Yield ``(a, b, logits)``: the cosine logits ``(b - a, M)`` of ``rows[a:b]``, about 64 MiB per chunk.

    On the CPU the chunks share one buffer (valid until the next chunk is requested). Duplicated text rows are
    multiplied once and copied, so their logits tie exactly (see :func:`unique_rows`).
    """
    device = features.device
    dtype = compute_dtype(features, text)
    m = text.shape[0]
    chunk = max(1, _CHUNK_BYTES // (m * torch.finfo(dtype).bits // 8))
    distinct, inverse = unique_rows(text.to(device, dtype))
    unit_text = _unit_rows(distinct)
    if use_numpy:
        # numpy's BLAS call into a reused buffer is about twice as fast here as torch.matmul, which allocates (and
        # page-faults) a new output per chunk
        text_t = unit_text.numpy().T
        n_out = min(chunk, len(rows))
        buffer = np.empty((n_out, m), dtype=text_t.dtype)
        columns = None if inverse is None else inverse.numpy()
        product = buffer if columns is None else np.empty((n_out, text_t.shape[1]), dtype=text_t.dtype)
        for a in range(0, len(rows), chunk):
            b = min(a + chunk, len(rows))
            feats = _unit_rows(features[torch.from_numpy(rows[a:b])].to(dtype)).numpy()
            np.matmul(feats, text_t, out=product[: b - a])
            if columns is not None:
                np.take(product[: b - a], columns, axis=1, out=buffer[: b - a], mode="clip")
            yield a, b, torch.from_numpy(buffer[: b - a])
    else:
        text_t = unit_text.T
        for a in range(0, len(rows), chunk):
            b = min(a + chunk, len(rows))
            logits = _unit_rows(features[torch.from_numpy(rows[a:b]).to(device)].to(dtype)) @ text_t
            yield a, b, logits if inverse is None else logits[:, inverse]


def _sorted_rows(logits: Tensor, buffer: np.ndarray | None) -> Tensor:
    if buffer is not None:
        # numpy's SIMD row sort is several times faster than torch.sort on the CPU for this shape
        out = buffer[: logits.shape[0]]
        out[...] = logits.numpy()
        out.sort(axis=1)
        return torch.from_numpy(out)
    return torch.sort(logits, dim=1).values


def _search(sorted_rows: Tensor, local: Tensor, values: Tensor, layer: Tensor, right: bool) -> Tensor:
    """``searchsorted`` of ``values[p]`` in ``sorted_rows[local[p]]``.

    Pairs are grouped by row and ``layer[p]`` is the pair's position in its group. Layer 0 holds at most one pair per
    row and is searched against the chunk's sorted rows in place (rows without a pair search dummies); the further
    layers (rows matched by GT points of several objects) are smaller and search copies of their rows.
    """
    first = layer == 0
    full = torch.zeros((sorted_rows.shape[0], values.shape[1]), dtype=values.dtype, device=values.device)
    full[local[first]] = values[first]
    out = torch.empty_like(values, dtype=torch.int64)
    out[first] = torch.searchsorted(sorted_rows, full, right=right)[local[first]]
    rest = ~first
    if bool(rest.any()):
        out[rest] = torch.searchsorted(sorted_rows[local[rest]], values[rest], right=right)
    return out


def _ranks(logits: Tensor, local: Tensor, labels: Tensor, sort_buffer: np.ndarray | None) -> Tensor:
    """Stable descending rank of ``labels[p, l]`` in row ``local[p]`` (non-decreasing) of ``logits`` (0 = best)."""
    c, m = logits.shape
    sorted_rows = _sorted_rows(logits, sort_buffer)
    values = torch.take(logits, local[:, None] * m + labels)
    n = local.numel()
    start = torch.ones(n, dtype=torch.bool, device=logits.device)
    start[1:] = local[1:] != local[:-1]
    positions = torch.arange(n, device=logits.device)
    layer = positions - torch.cummax(torch.where(start, positions, 0), dim=0).values
    rank = m - _search(sorted_rows, local, values, layer, right=True)
    # equal logits: the lower prompt index ranks first. Only rows holding a repeated value can need that
    # correction, and only entries whose value occurs more than once in the row
    if sort_buffer is not None:
        srt = sorted_rows.numpy()
        dup_row = torch.from_numpy((srt[:, 1:] == srt[:, :-1]).any(axis=1))  # ~4x faster than torch on the CPU
    else:
        dup_row = (sorted_rows[:, 1:] == sorted_rows[:, :-1]).any(dim=1)
    cand = dup_row[local]
    if bool(cand.any()):
        left = _search(sorted_rows, local[cand], values[cand], layer[cand], right=False)
        count = (m - rank[cand]) - left  # occurrences of the label's logit in its row
        tie_c, tie_l = torch.nonzero(count > 1, as_tuple=True)
        tie_p = torch.nonzero(cand).flatten()[tie_c]
        prompt = torch.arange(m, device=logits.device)
        for a in range(0, tie_p.numel(), max(1, c)):
            tp, tl = tie_p[a : a + c], tie_l[a : a + c]
            j, v = labels[tp, tl], values[tp, tl]
            row = logits[local[tp]]
            rank[tp, tl] += ((row == v[:, None]) & (prompt[None, :] < j[:, None])).sum(dim=1)
    return rank


def label_pass(
    features: Tensor,
    text: Tensor,
    rows: np.ndarray,
    *,
    top_n: int = 0,
    pair_pos: np.ndarray | None = None,
    pair_labels: np.ndarray | None = None,
    use_numpy: bool | None = None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """One chunked pass over the logits of the feature ``rows``: top-N prompt indices and label ranks.

    The full ``(len(rows), M)`` logit matrix is never held at once (chunks of about 64 MiB).

    Args:
        features: ``(K, D)`` features; the computation runs on their device.
        text: ``(M, D)`` text embeddings.
        rows: ``(R,)`` int64 feature rows to evaluate.
        top_n: ``N > 0`` returns the ``(R, N)`` top-N prompt indices (stable descending order), 0 skips it.
        pair_pos: ``(Q,)`` non-decreasing positions into ``rows``; each pair asks for the ranks of its labels.
        pair_labels: ``(Q, L)`` prompt indices whose ranks are wanted in row ``rows[pair_pos[q]]``.
        use_numpy: numpy matmul/sort into reused buffers, with torch's own ops on one thread (faster on the CPU);
            default: when the features are on the CPU. ``False`` runs the torch code path used on accelerators.

    Returns:
        ``(top (R, N) int64 or None, ranks (Q, L) int64 or None)`` numpy arrays; rank 0 = largest logit, equal
        logits rank by prompt index.
    """
    device = features.device
    top = np.empty((len(rows), top_n), dtype=np.int64) if top_n else None
    ranks = None
    if pair_pos is not None and pair_labels is not None:
        ranks = np.zeros(pair_labels.shape, dtype=np.int64)
        if pair_labels.shape[1] == 0:
            pair_pos = pair_labels = None
    if use_numpy is None:
        use_numpy = device.type == "cpu"
    with single_torch_thread(use_numpy):
        return _label_pass(features, text, rows, top, ranks, top_n, pair_pos, pair_labels, use_numpy)


@contextmanager
def single_torch_thread(active: bool) -> Iterator[None]:
    """Run torch's CPU ops on one thread while ``active`` (the previous count is restored afterwards).

    The CPU metrics are dominated by numpy and scipy work (row sorts, KD-trees); idle OpenMP workers left over from
    torch's parallel ops spin through it and cost about a third more process CPU time than the work itself.
    """
    previous = torch.get_num_threads()
    if not active or previous == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _label_pass(
    features: Tensor,
    text: Tensor,
    rows: np.ndarray,
    top: np.ndarray | None,
    ranks: np.ndarray | None,
    top_n: int,
    pair_pos: np.ndarray | None,
    pair_labels: np.ndarray | None,
    use_numpy: bool,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    device = features.device
    sort_buffer = None
    for a, b, logits in _logit_chunks(features, text, rows, use_numpy):
        if top is not None:
            top[a:b] = stable_topk(logits, top_n).cpu().numpy()
        if pair_pos is not None and pair_labels is not None and ranks is not None:
            p0, p1 = np.searchsorted(pair_pos, [a, b])
            if p1 > p0:
                if sort_buffer is None and use_numpy:
                    sort_buffer = np.empty((b - a, logits.shape[1]), dtype=logits.numpy().dtype)
                local = torch.from_numpy(pair_pos[p0:p1] - a).to(device)
                labels = torch.from_numpy(pair_labels[p0:p1]).to(device)
                ranks[p0:p1] = _ranks(logits, local, labels, sort_buffer).cpu().numpy()
    return top, ranks


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def _resolve_clip_weights(open_clip: Any, model_name: str, pretrained: str, weights_path: Any) -> str:
    """The ``pretrained=`` argument for open_clip: a local file, or the tag when open_clip may download it."""
    if weights_path is not None:
        p = Path(weights_path).expanduser()
        if p.is_file():
            return str(p)
        candidates = [p / name for name in _CLIP_FILES] if p.is_dir() else [p]
        for c in candidates:
            if c.is_file():
                return str(c)
        raise hub.WeightsNotFoundError(
            f"Could not find the OpenCLIP weights for {model_name}/{pretrained}: weights_path "
            f"{'is a folder without ' if p.is_dir() else 'does not exist; expected a checkpoint file such as '}"
            f"{' or '.join(_CLIP_FILES)}. Searched: {', '.join(map(str, candidates))}.",
            filename=_CLIP_FILES[0],
            searched=candidates,
        )
    if Path(pretrained).expanduser().is_file():
        return pretrained
    get_cfg = getattr(open_clip, "get_pretrained_cfg", None)
    cfg = get_cfg(model_name, pretrained) if get_cfg is not None else {}
    repo = str((cfg or {}).get("hf_hub", "")).strip("/")
    if hub.is_offline() or _env_true("HF_HUB_OFFLINE"):
        searched: list[str] = []
        if repo:
            from huggingface_hub import try_to_load_from_cache

            for name in _CLIP_FILES:
                found = try_to_load_from_cache(repo, name)
                searched.append(f"hf://{repo}/{name} (Hugging Face cache)")
                if isinstance(found, str):
                    return found
        url = f"https://huggingface.co/{repo}/resolve/main/{_CLIP_FILES[0]}" if repo else None
        raise hub.WeightsNotFoundError(
            f"Could not find the OpenCLIP weights {model_name}/{pretrained} "
            f"(file {_CLIP_FILES[0]!r}{f' of {repo}' if repo else ''}, about 3.9 GB for ViT-H-14): offline mode "
            f"(SCENEMETRICS_OFFLINE / HF_HUB_OFFLINE) and not in the Hugging Face cache. Searched: "
            f"{', '.join(searched) or 'nothing'}. Download it{f' from {url}' if url else ''} and pass "
            "weights_path= (the file or its folder).",
            filename=_CLIP_FILES[0],
            searched=searched,
            url=url,
        )
    return pretrained


def encode_prompts(
    prompts: Sequence[str],
    *,
    model_name: str = "ViT-H-14",
    pretrained: str = "laion2b_s32b_b79k",
    weights_path: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    batch_size: int = 64,
) -> Tensor:
    """Embed raw prompt strings with an OpenCLIP text encoder (the paper's OpenCLIP ViT-H-14 by default).

    Needs the ``[clip]`` extra. The default weights (``laion2b_s32b_b79k``) are about 3.9 GB and come from the
    Hugging Face cache (downloaded on first use); ``weights_path`` may name the checkpoint file or its folder.
    The raw prompts are tokenised (no template such as "a photo of").

    Args:
        prompts: the texts, e.g. :func:`~scenemetrics.openlex3d.load_prompt_list` output.
        model_name: OpenCLIP architecture.
        pretrained: OpenCLIP pretrained tag (or a checkpoint path).
        weights_path: checkpoint file or folder; overrides ``pretrained``.
        device: where the encoder runs (default: cuda when available, else cpu).
        batch_size: prompts per forward pass.

    Returns:
        ``(M, D)`` float32 CPU tensor with L2-normalised rows.

    Raises:
        ImportError: ``open_clip_torch`` is missing (``pip install "scenemetrics[clip]"``).
        scenemetrics.hub.WeightsNotFoundError: offline (``SCENEMETRICS_OFFLINE=1`` or ``HF_HUB_OFFLINE=1``) and
            the weights are not cached, ``weights_path`` holds no checkpoint, or the download failed.

    Example:
        >>> from scenemetrics.openlex3d import encode_prompts
        >>> features = encode_prompts(["sofa", "arm chair"])  # doctest: +SKIP
    """
    try:
        import open_clip
    except ImportError as err:
        raise ImportError(
            'encode_prompts needs open_clip_torch: pip install open_clip_torch (or pip install "scenemetrics[clip]")'
        ) from err
    texts = list(prompts)
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("`prompts` must be a sequence of strings")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"`batch_size` must be an int >= 1; received {batch_size!r}")
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    source = _resolve_clip_weights(open_clip, model_name, pretrained, weights_path)
    try:
        model = open_clip.create_model_and_transforms(model_name, pretrained=source)[0]
    except (OSError, RuntimeError) as err:
        if Path(source).is_file():
            raise
        raise hub.WeightsNotFoundError(
            f"Could not obtain the OpenCLIP weights {model_name}/{pretrained}: {type(err).__name__}: {err}. "
            "Download the checkpoint and pass weights_path= (the file or its folder).",
            filename=_CLIP_FILES[0],
        ) from err
    model = model.to(dev).eval()
    tokenizer = open_clip.get_tokenizer(model_name)
    out = []
    with torch.inference_mode():
        for a in range(0, len(texts), batch_size):
            tokens = tokenizer(texts[a : a + batch_size]).to(dev)
            out.append(model.encode_text(tokens).float().cpu())
    if not out:
        return torch.empty(0, 0)
    return _unit_rows(torch.cat(out))
