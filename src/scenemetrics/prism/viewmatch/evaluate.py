"""How well a PRISM head tells plausible from implausible views on a ViewMatch-style feature cache.

The PRISM paper's discriminability quantities (its Tables 1 and 2), computed from a feature cache without running
the U-Net again:

* the reference-based distance ``D = 0.5 ||h(gt) - h(candidate)||`` of every positive, inpainted negative and
  misaligned view to its anchor's ground truth, with the AUC of telling positives (low D) from negatives;
* the no-reference MMD² of the positives' embeddings and of the negatives' embeddings against an anchor set of
  ground-truth embeddings (a good head gives the positives the smaller MMD²).

Example:
    >>> from scenemetrics.prism import ProjectionHead
    >>> from scenemetrics.prism.viewmatch import head_discriminability
    >>> result = head_discriminability("vm_cache/", ProjectionHead.load("runs/head/head.safetensors"))  # doctest: +SKIP
    >>> result["auc"]  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["head_discriminability", "json_ready", "plot_distance_histogram"]


def json_ready(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _embed(features: np.ndarray, rows: list[int], head: nn.Module | None) -> Tensor:
    from scenemetrics.prism.features import embed_features

    if not rows:
        dim = features.shape[1] if head is None else int(head.out_dim)
        return torch.zeros(0, dim)
    parts = []
    with torch.no_grad():
        for start in range(0, len(rows), 4096):
            chunk = torch.from_numpy(np.asarray(features[rows[start : start + 4096]], dtype=np.float32))
            parts.append(embed_features(chunk, head).float().cpu())
    return torch.cat(parts)


def _mmd(x: Tensor, anchors: Tensor, bandwidth: str | float) -> float:
    from scenemetrics.stats import mmd_rbf

    if x.shape[0] < 2 or anchors.shape[0] < 2:
        return math.nan
    return float(mmd_rbf(x.double(), anchors.double(), bandwidth))


def head_discriminability(
    cache_dir: str | os.PathLike,
    head: nn.Module | None,
    *,
    split: str | None = "test",
    anchors: Tensor | str | os.PathLike | None = None,
    anchor_split: str | None = None,
    min_mask_area: float = 0.02,
    bandwidth: str | float = "median",
) -> dict[str, Any]:
    """Distances, AUC and MMD² of positives vs negatives of one split of a feature cache.

    Args:
        cache_dir: a feature cache (``scenemetrics prism embed``).
        head: a :class:`~scenemetrics.prism.ProjectionHead`, or ``None`` for raw (normalised) features.
        split: ``"train"``, ``"val"``, ``"test"`` or ``None`` (all anchors).
        anchors: MMD anchor embeddings (tensor or anchor file); default: the ground-truth embeddings of the anchors
            of ``anchor_split``.
        anchor_split: split of the default anchor set (default: ``split``).
        min_mask_area: inpainted negatives with a smaller mask area are left out (their images barely differ from
            the ground truth; training gives them weight 0).
        bandwidth: MMD bandwidth (``"median"`` heuristic or a float sigma).

    Returns:
        A JSON-ready dict: ``split``, ``num_anchors``, ``distance`` (mean and count per group: ``positives``,
        ``negatives`` (inpainted), ``misaligned``), ``auc`` (positives vs inpainted negatives, 1 = every positive
        closer to its ground truth than every negative), ``auc_misaligned``, ``auc_all_negatives``, ``mmd``
        (``positives``, ``negatives``, ``misaligned`` MMD² against the anchors, ``num_anchors``), and under
        ``"distances"`` the per-candidate distances (lists) for plots. AUC and MMD² values are NaN (with a
        ``UserWarning``) when a group is empty or too small.

    Raises:
        ValueError: an unknown split or an anchor set of another embedding size.
    """
    from scenemetrics.prism.anchors import load_anchors
    from scenemetrics.prism.data import SPLITS, anchor_embeddings_from_cache, read_feature_cache
    from scenemetrics.stats import separation

    for name, value in (("split", split), ("anchor_split", anchor_split)):
        if value is not None and value not in SPLITS:
            raise ValueError(f"`{name}` must be one of {SPLITS} or None; received {value!r}")
    index, features = read_feature_cache(cache_dir)
    chosen = [a for a in index["anchors"] if split is None or a["split"] == split]
    if not chosen:
        raise ValueError(
            f"the feature cache {os.fspath(cache_dir)!r} has no anchors in split {split!r}; choose another split "
            "(--split train|val|test|all)"
        )
    groups: dict[str, list[tuple[int, int]]] = {"positives": [], "negatives": [], "misaligned": []}
    for a in chosen:
        groups["positives"] += [(a["gt"], r) for r in a["positives"]]
        groups["negatives"] += [(a["gt"], n["row"]) for n in a["negatives"] if n["mask_area"] >= min_mask_area]
        groups["misaligned"] += [(a["gt"], r) for r in a["misaligned"]]
    gt_rows = sorted({a["gt"] for a in chosen})
    gt_emb = dict(zip(gt_rows, _embed(features, gt_rows, head), strict=True))
    distances: dict[str, np.ndarray] = {}
    embeddings: dict[str, Tensor] = {}
    for name, pairs in groups.items():
        emb = _embed(features, [r for _, r in pairs], head)
        embeddings[name] = emb
        if pairs:
            ref = torch.stack([gt_emb[g] for g, _ in pairs])
            distances[name] = (0.5 * torch.linalg.vector_norm(emb - ref, dim=-1)).clamp(0, 1).numpy()
        else:
            distances[name] = np.zeros(0)

    def sep(neg: np.ndarray) -> dict[str, Any]:
        pos = distances["positives"]
        if len(pos) == 0 or len(neg) == 0:
            warnings.warn("an AUC needs positives and negatives; it is NaN here", UserWarning, stacklevel=3)
            return {"auc": math.nan, "mean_pos": math.nan, "mean_neg": math.nan, "n_pos": len(pos), "n_neg": len(neg)}
        s = separation(pos, neg, higher_is_positive=False)
        return {"auc": s.auc, "mean_pos": s.mean_pos, "mean_neg": s.mean_neg, "n_pos": s.n_pos, "n_neg": s.n_neg}

    inpainted = sep(distances["negatives"])
    misaligned = sep(distances["misaligned"])
    both = sep(np.concatenate([distances["negatives"], distances["misaligned"]]))

    if anchors is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            anchor_emb = anchor_embeddings_from_cache(cache_dir, head, split=anchor_split or split)
    elif isinstance(anchors, Tensor):
        anchor_emb = anchors.float().cpu()
    else:
        anchor_emb = load_anchors(anchors)
    width = embeddings["positives"].shape[1]
    if anchor_emb.ndim != 2 or anchor_emb.shape[1] != width:
        raise ValueError(
            f"the anchors have shape {tuple(anchor_emb.shape)}; the head's embeddings have {width} numbers"
        )
    mmd = {name: _mmd(emb, anchor_emb, bandwidth) for name, emb in embeddings.items()}
    if any(math.isnan(v) for v in mmd.values()):
        warnings.warn(
            "an MMD² needs at least 2 embeddings and 2 anchors; NaN where a set is smaller", UserWarning, stacklevel=2
        )
    return {
        "split": split,
        "num_anchors": len(chosen),
        "head": "raw" if head is None else {k: int(getattr(head, k)) for k in ("in_dim", "hidden_dim", "out_dim")},
        "distance": {
            name: {"mean": float(d.mean()) if len(d) else math.nan, "n": len(d)} for name, d in distances.items()
        },
        "auc": inpainted["auc"],
        "auc_misaligned": misaligned["auc"],
        "auc_all_negatives": both["auc"],
        "mmd": {**mmd, "num_anchors": int(anchor_emb.shape[0])},
        "distances": {name: d.tolist() for name, d in distances.items()},
    }


def plot_distance_histogram(result: dict[str, Any], path: str | os.PathLike, *, title: str | None = None) -> Path:
    """Histogram of the distances of :func:`head_discriminability` (positives, inpainted and misaligned negatives).

    Needs matplotlib (the ``[viz]`` extra).

    Returns:
        ``path`` as a ``Path``.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is in the [viz] extra
        raise ImportError("the histogram needs matplotlib: pip install 'scenemetrics[viz]'") from err
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    every = np.concatenate([np.asarray(v, dtype=float) for v in result["distances"].values()] + [np.zeros(1)])
    bins = np.linspace(0.0, min(1.0, max(float(every.max()) * 1.05, 1e-6)), 41)  # zoom on the data
    styles = {
        "positives": ("plausible (positives)", "tab:green"),
        "negatives": ("implausible inpaintings", "tab:red"),
        "misaligned": ("misaligned views", "tab:gray"),
    }
    for name, (label, colour) in styles.items():
        d = np.asarray(result["distances"].get(name, []))
        if len(d):
            ax.hist(d, bins=bins, alpha=0.55, color=colour, label=f"{label} (n={len(d)})", density=True)
    ax.set_xlabel("PRISM distance to the ground-truth triplet (0.5 ||e - e_gt||)")
    ax.set_ylabel("density")
    auc = result.get("auc", math.nan)
    mmd = result.get("mmd", {})
    ax.set_title(
        title
        or f"AUC {auc:.3f} (pos vs inpainted neg) | MMD² pos {mmd.get('positives', math.nan):.3f}, "
        f"neg {mmd.get('negatives', math.nan):.3f}",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
