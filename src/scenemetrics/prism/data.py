"""On-disk formats of the PRISM head trainer: image datasets of triplets and the feature cache built from them.

* ``scenemetrics.prism.dataset/1``: one folder per object with ``cameras.json`` (views and spherical cameras or
  ``c2w`` matrices), the views, and optionally ``pairs.json`` (anchors with positive / negative inpaintings and
  misaligned views) and a top-level ``dataset.json`` with splits.
* ``scenemetrics.prism.feature-cache/1``: ``features.npy`` (``(N, D)`` float16/float32) + ``index.json`` (rows and
  anchors referencing rows). The frozen U-Net runs once per distinct triplet; training reads only the cache.

Example:
    >>> from scenemetrics.prism import mask_weight
    >>> [round(mask_weight(a), 3) for a in (0.0, 0.02, 0.11, 0.2, 0.5)]
    [0.0, 0.0, 0.5, 1.0, 1.0]
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from scenemetrics.checks import check_int, check_positive_int

__all__ = [
    "CACHE_FORMAT",
    "DATASET_FORMAT",
    "SPLITS",
    "anchor_embeddings_from_cache",
    "build_feature_cache",
    "enumerate_triplets",
    "mask_weight",
    "read_dataset",
    "read_feature_cache",
]

DATASET_FORMAT = "scenemetrics.prism.dataset/1"
CACHE_FORMAT = "scenemetrics.prism.feature-cache/1"
SPLITS = ("train", "val", "test")


def _check_thresholds(min_area: float, full_area: float) -> None:
    if not (0.0 <= float(min_area) < float(full_area)):
        raise ValueError(
            f"mask-area thresholds need 0 <= min_area < full_area; received min_area={min_area}, full_area={full_area}"
        )


def mask_weight(area: float | Tensor, min_area: float = 0.02, full_area: float = 0.2) -> float | Tensor:
    """Weight of an inpainted negative from its mask area (mask pixels / target-silhouette pixels).

    ``clip((area - min_area) / (full_area - min_area), 0, 1)``: masks under ``min_area`` (2 % of the silhouette) get
    weight 0 and are dropped (the paper's "effectively skipped"), the weight ramps linearly to 1 at ``full_area``
    (20 %). The paper gives the intent, not the function; this ramp is our choice.

    Args:
        area: mask area ratio (float or tensor; may exceed 1).
        min_area: area with weight 0.
        full_area: area from which the weight is 1.

    Returns:
        The weight, a float or a tensor like ``area``.

    Raises:
        ValueError: unless ``0 <= min_area < full_area``.
    """
    _check_thresholds(min_area, full_area)
    if isinstance(area, Tensor):
        return ((area - min_area) / (full_area - min_area)).clamp(0.0, 1.0)
    return min(1.0, max(0.0, (float(area) - min_area) / (full_area - min_area)))


# ---------------------------------------------------------------------------------------------------------------
# feature cache


def _is_row(value: Any, num_rows: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < num_rows


def read_feature_cache(cache_dir: str | os.PathLike) -> tuple[dict[str, Any], np.ndarray]:
    """Read and validate a feature cache.

    Args:
        cache_dir: folder with ``features.npy`` and ``index.json``.

    Returns:
        ``(index, features)``: the index with every anchor completed (``split`` defaults to ``"train"``, missing
        lists are empty), and the memory-mapped ``(num_rows, feature_dim)`` array.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: a wrong ``format``, a ``features.npy`` whose shape or dtype disagrees with the index, a row
            index out of range, a negative without ``mask_area``, or an unknown split name.
    """
    cache_dir = Path(cache_dir)
    index_path, feat_path = cache_dir / "index.json", cache_dir / "features.npy"
    for p in (index_path, feat_path):
        if not p.is_file():
            raise FileNotFoundError(f"feature cache {os.fspath(cache_dir)!r} lacks {p.name}")
    try:
        index = json.loads(index_path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{index_path} is not valid JSON: {err}") from err
    if not isinstance(index, dict) or index.get("format") != CACHE_FORMAT:
        got = index.get("format") if isinstance(index, dict) else type(index).__name__
        raise ValueError(f"{index_path}: format is {got!r}, expected {CACHE_FORMAT!r}")
    dim, num_rows = index.get("feature_dim"), index.get("num_rows")
    if not _is_row(dim, 1 << 40) or dim == 0 or not _is_row(num_rows, 1 << 40):
        raise ValueError(f"{index_path}: feature_dim and num_rows must be non-negative ints (feature_dim > 0)")
    features = np.load(feat_path, mmap_mode="r")
    if features.shape != (num_rows, dim):
        raise ValueError(
            f"{feat_path} has shape {features.shape}, but index.json says num_rows={num_rows}, feature_dim={dim}"
        )
    if features.dtype not in (np.float16, np.float32):
        raise ValueError(f"{feat_path} must hold float16 or float32 values; received {features.dtype}")
    rows = index.get("rows")
    if rows is not None and len(rows) != num_rows:
        raise ValueError(f"{index_path}: 'rows' has {len(rows)} entries but num_rows is {num_rows}")

    anchors = []
    for i, raw in enumerate(index.get("anchors", [])):
        where = f"{index_path}: anchors[{i}]"
        a = dict(raw)
        a["split"] = a.get("split", "train")
        if a["split"] not in SPLITS:
            raise ValueError(f"{where} has unknown split {a['split']!r} (expected one of {SPLITS})")
        a["positives"] = list(a.get("positives", []))
        a["misaligned"] = list(a.get("misaligned", []))
        negatives = []
        for j, n in enumerate(a.get("negatives", [])):
            if not isinstance(n, dict) or "mask_area" not in n:
                raise ValueError(f"{where}.negatives[{j}] needs a mask_area (it sets the negative's weight)")
            area = n["mask_area"]
            if isinstance(area, bool) or not isinstance(area, (int, float)) or not math.isfinite(area) or area < 0:
                raise ValueError(f"{where}.negatives[{j}].mask_area must be a non-negative number; received {area!r}")
            negatives.append({**n, "mask_area": float(area)})
        a["negatives"] = negatives
        refs = [("gt", a.get("gt"))]
        refs += [(f"positives[{j}]", r) for j, r in enumerate(a["positives"])]
        refs += [(f"negatives[{j}].row", n.get("row")) for j, n in enumerate(negatives)]
        refs += [(f"misaligned[{j}]", r) for j, r in enumerate(a["misaligned"])]
        for name, r in refs:
            if not _is_row(r, num_rows):
                raise ValueError(f"{where}.{name} = {r!r} is not a row index in [0, {num_rows})")
        anchors.append(a)
    index = {**index, "anchors": anchors}
    return index, features


def _triplets(
    anchors: Iterable[dict[str, Any]], min_mask_area: float, full_mask_area: float, max_misaligned: int | None
) -> list[tuple[int, int, int, float]]:
    out = []
    for a in anchors:
        negatives = [(n["row"], mask_weight(n["mask_area"], min_mask_area, full_mask_area)) for n in a["negatives"]]
        negatives = [(r, w) for r, w in negatives if w > 0]
        misaligned = a["misaligned"] if max_misaligned is None else a["misaligned"][:max_misaligned]
        negatives += [(r, 1.0) for r in misaligned]
        out.extend((a["gt"], p, n, w) for p in a["positives"] for n, w in negatives)
    return out


def enumerate_triplets(
    index: dict[str, Any],
    split: str | None,
    *,
    min_mask_area: float = 0.02,
    full_mask_area: float = 0.2,
    max_misaligned: int | None = None,
) -> list[tuple[int, int, int, float]]:
    """Training triplets ``(anchor_row, positive_row, negative_row, weight)`` of one split, in file order.

    For each anchor, every positive is paired with every kept negative: inpainted negatives weighted by
    :func:`mask_weight` (weight-0 ones dropped) and misaligned-view negatives (weight 1; the first
    ``max_misaligned`` of them, all when ``None``). Anchors without positives or negatives contribute nothing.

    Args:
        index: the index of :func:`read_feature_cache`.
        split: ``"train"``, ``"val"``, ``"test"`` or ``None`` (all anchors).
        min_mask_area / full_mask_area: the :func:`mask_weight` ramp.
        max_misaligned: cap on misaligned negatives per anchor.

    Raises:
        ValueError: an unknown split, bad thresholds, or a negative ``max_misaligned``.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"`split` must be one of {SPLITS} or None; received {split!r}")
    _check_thresholds(min_mask_area, full_mask_area)
    if max_misaligned is not None:
        check_int(max_misaligned, "max_misaligned", low=0)
    anchors = [a for a in index["anchors"] if split is None or a.get("split", "train") == split]
    return _triplets(anchors, min_mask_area, full_mask_area, max_misaligned)


# ---------------------------------------------------------------------------------------------------------------
# image dataset


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from err


def _camera(view_id: str, spec: dict[str, Any], where: Path) -> tuple[float, float, float]:
    from scenemetrics.prism.zero123 import spherical_from_c2w

    if "c2w" in spec:
        c2w = torch.tensor(spec["c2w"], dtype=torch.float64)
        if c2w.shape != (4, 4):
            raise ValueError(f"{where}: view {view_id!r} has a c2w of shape {tuple(c2w.shape)}, expected 4x4")
        polar, az, radius = spherical_from_c2w(c2w).tolist()
        return polar, az, radius
    try:
        return float(spec["polar_deg"]), float(spec["azimuth_deg"]), float(spec["radius"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{where}: view {view_id!r} needs polar_deg, azimuth_deg and radius (or a 4x4 c2w): {err}"
        ) from err


def read_dataset(dataset_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Enumerate the anchors of an image dataset (``scenemetrics.prism.dataset/1``).

    Returns:
        One dict per anchor, in object order then file order: ``object``, ``split``, ``source``, ``target``,
        ``pose`` (``relative_pose`` of the two cameras), ``source_file``, ``gt_file`` and ``positives`` /
        ``negatives`` (lists of ``(file, mask_area)``) / ``misaligned`` (view files), all files as paths relative
        to the object folder. Without ``pairs.json`` every ordered pair of distinct views is an anchor with only
        its ground truth.

    Raises:
        FileNotFoundError: the folder does not exist or holds no object.
        ValueError: malformed JSON files, unknown views or splits, a negative without ``mask_area``, or a
            referenced image that does not exist.
    """
    from scenemetrics.prism.zero123 import relative_pose

    root = Path(dataset_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset folder {os.fspath(dataset_dir)!r} does not exist")
    splits: dict[str, str] = {}
    meta_path = root / "dataset.json"
    if meta_path.is_file():
        meta = _load_json(meta_path)
        if meta.get("format", DATASET_FORMAT) != DATASET_FORMAT:
            raise ValueError(f"{meta_path}: format is {meta.get('format')!r}, expected {DATASET_FORMAT!r}")
        for split, objects in (meta.get("splits") or {}).items():
            if split not in SPLITS:
                raise ValueError(f"{meta_path}: unknown split {split!r} (expected one of {SPLITS})")
            splits.update({str(o): split for o in objects})
    objects = sorted(p for p in root.iterdir() if p.is_dir() and (p / "cameras.json").is_file())
    if not objects:
        raise FileNotFoundError(f"dataset folder {os.fspath(dataset_dir)!r} holds no object folder with cameras.json")

    anchors: list[dict[str, Any]] = []
    for obj in objects:
        cams_path = obj / "cameras.json"
        views = _load_json(cams_path).get("views")
        if not isinstance(views, dict) or not views:
            raise ValueError(f"{cams_path} needs a non-empty 'views' mapping")
        cams, files = {}, {}
        for vid, spec in views.items():
            if not isinstance(spec, dict) or "file" not in spec:
                raise ValueError(f"{cams_path}: view {vid!r} needs a 'file'")
            cams[vid] = _camera(vid, spec, cams_path)
            files[vid] = str(spec["file"])

        def image(rel: str, where: Path, obj: Path = obj) -> str:
            if not (obj / rel).is_file():
                raise ValueError(f"{where} references {rel!r}, which does not exist in {obj}")
            return rel

        for f in files.values():
            image(f, cams_path)
        split = splits.get(obj.name, "train")
        pairs_path = obj / "pairs.json"
        if pairs_path.is_file():
            entries = _load_json(pairs_path).get("pairs", [])
        else:
            entries = [{"source": s, "target": t} for s in views for t in views if s != t]
        for k, e in enumerate(entries):
            where = f"{pairs_path}: pairs[{k}]"
            s, t = e.get("source"), e.get("target")
            if s not in views or t not in views:
                raise ValueError(f"{where} references views {s!r} -> {t!r}; known views: {sorted(views)}")
            positives = [(image(p["file"], pairs_path), p.get("mask_area")) for p in e.get("positives", [])]
            negatives = []
            for j, n in enumerate(e.get("negatives", [])):
                if n.get("mask_area") is None:
                    raise ValueError(f"{where}.negatives[{j}] needs a mask_area (it sets the negative's weight)")
                negatives.append((image(n["file"], pairs_path), float(n["mask_area"])))
            mis = e.get("misaligned")
            if mis == "all":
                mis_ids = [v for v in views if v != t]
            elif mis is None:
                mis_ids = []
            elif isinstance(mis, list) and all(v in views for v in mis):
                mis_ids = list(mis)
            else:
                raise ValueError(f"{where}.misaligned must be 'all', a list of view ids or absent; received {mis!r}")
            pose = relative_pose(torch.tensor(cams[s], dtype=torch.float64), torch.tensor(cams[t], dtype=torch.float64))
            anchors.append(
                {
                    "object": obj.name,
                    "split": split,
                    "source": s,
                    "target": t,
                    "pose": [float(v) for v in pose.tolist()],
                    "source_file": files[s],
                    "gt_file": files[t],
                    "positives": positives,
                    "negatives": negatives,
                    "misaligned": [files[v] for v in mis_ids],
                }
            )
    return anchors


def build_feature_cache(
    dataset_dir: str | os.PathLike,
    cache_dir: str | os.PathLike,
    extractor: nn.Module,
    *,
    batch_size: int = 16,
    store_dtype: str = "float16",
    progress: bool = True,
) -> Path:
    """Run the frozen extractor once per distinct triplet of an image dataset and write a feature cache.

    Triplets ``(source view, candidate image, pose)`` are de-duplicated; views are read with
    :func:`~scenemetrics.prism.load_view` (RGBA composited onto white, resized to the extractor's ``image_size``).
    ``features.npy`` is written in ``store_dtype`` (float16 by default: features lie in [-1, 1]) and ``index.json``
    records the extractor's provenance. Files are written under temporary names and renamed at the end.

    Args:
        dataset_dir: a ``scenemetrics.prism.dataset/1`` folder.
        cache_dir: output folder (created).
        extractor: a :class:`~scenemetrics.prism.Zero123Features`.
        batch_size: triplets per extractor call.
        store_dtype: ``"float16"`` or ``"float32"``.
        progress: show a tqdm bar (stderr).

    Returns:
        ``cache_dir`` as a ``Path``.

    Example:
        >>> build_feature_cache("viewmatch_like/", "cache/", extractor)  # doctest: +SKIP
    """
    from tqdm.auto import tqdm

    from scenemetrics.prism.features import load_view

    if store_dtype not in ("float16", "float32"):
        raise ValueError(f"`store_dtype` must be 'float16' or 'float32'; received {store_dtype!r}")
    check_positive_int(batch_size, "batch_size")
    root = Path(dataset_dir)
    anchors = read_dataset(root)
    rows: list[dict[str, Any]] = []
    row_of: dict[tuple, int] = {}

    def row(obj: str, source: str, source_file: str, candidate: str, pose: Sequence[float]) -> int:
        key = (obj, source_file, candidate, tuple(pose))
        if key not in row_of:
            row_of[key] = len(rows)
            rows.append(
                {
                    "object": obj,
                    "source": source,
                    "source_file": source_file,
                    "candidate": candidate,
                    "pose": list(pose),
                }
            )
        return row_of[key]

    entries = []
    for a in anchors:
        args = (a["object"], a["source"], a["source_file"])
        entries.append(
            {
                "object": a["object"],
                "split": a["split"],
                "source": a["source"],
                "target": a["target"],
                "gt": row(*args, a["gt_file"], a["pose"]),
                "positives": [row(*args, f, a["pose"]) for f, _ in a["positives"]],
                "negatives": [{"row": row(*args, f, a["pose"]), "mask_area": m} for f, m in a["negatives"]],
                "misaligned": [row(*args, f, a["pose"]) for f in a["misaligned"]],
            }
        )

    size = int(getattr(extractor, "image_size", 256))

    @lru_cache(maxsize=512)
    def view(obj: str, rel: str) -> Tensor:
        return load_view(root / obj / rel, size)

    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    feat_tmp = cache_dir / "features.npy.tmp"
    index_tmp = cache_dir / "index.json.tmp"
    dim = int(extractor.feature_dim)
    out = np.lib.format.open_memmap(feat_tmp, mode="w+", dtype=np.dtype(store_dtype), shape=(len(rows), dim))
    try:
        with torch.no_grad(), tqdm(total=len(rows), desc="prism embed", unit="triplet", disable=not progress) as bar:
            for start in range(0, len(rows), batch_size):
                chunk = rows[start : start + batch_size]
                src = torch.stack([view(r["object"], r["source_file"]) for r in chunk])
                cand = torch.stack([view(r["object"], r["candidate"]) for r in chunk])
                pose = torch.tensor([r["pose"] for r in chunk], dtype=torch.float64)
                feats = extractor(src, cand, pose)
                out[start : start + len(chunk)] = feats.cpu().numpy().astype(store_dtype)
                bar.update(len(chunk))
        out.flush()
        del out
        provenance = extractor.provenance() if hasattr(extractor, "provenance") else {}
        dtype = getattr(extractor, "dtype", torch.float32)
        provenance["torch_dtype"] = str(dtype).removeprefix("torch.")
        index = {
            "format": CACHE_FORMAT,
            "feature_dim": dim,
            "num_rows": len(rows),
            "extractor": provenance,
            "rows": [{k: r[k] for k in ("object", "source", "candidate", "pose")} for r in rows],
            "anchors": entries,
        }
        index_tmp.write_text(json.dumps(index, indent=1) + "\n")
        os.replace(feat_tmp, cache_dir / "features.npy")
        os.replace(index_tmp, cache_dir / "index.json")
    finally:
        feat_tmp.unlink(missing_ok=True)
        index_tmp.unlink(missing_ok=True)
    return cache_dir


def anchor_embeddings_from_cache(
    cache_dir: str | os.PathLike, head: nn.Module | None = None, *, split: str | None = None
) -> Tensor:
    """Embeddings of the ground-truth rows of a cache's anchors: an MMD anchor set without re-running the U-Net.

    Args:
        cache_dir: a feature cache.
        head: trained :class:`~scenemetrics.prism.ProjectionHead` or ``None`` (normalised raw features).
        split: ``"train"``, ``"val"``, ``"test"`` or ``None`` (all anchors).

    Returns:
        ``(A, E)`` float32 embeddings on the CPU, one per anchor of the split, in file order (a ``UserWarning`` and
        an empty tensor when the split has none).

    Example:
        >>> head = ProjectionHead.load("head.safetensors")  # doctest: +SKIP
        >>> anchors = anchor_embeddings_from_cache("cache/", head, split="test")  # doctest: +SKIP
    """
    from scenemetrics.prism.features import embed_features

    if split is not None and split not in SPLITS:
        raise ValueError(f"`split` must be one of {SPLITS} or None; received {split!r}")
    index, features = read_feature_cache(cache_dir)
    rows = [a["gt"] for a in index["anchors"] if split is None or a["split"] == split]
    out_dim = index["feature_dim"] if head is None else int(getattr(head, "out_dim", index["feature_dim"]))
    if not rows:
        warnings.warn(f"the feature cache has no anchors in split {split!r}", UserWarning, stacklevel=2)
        return torch.zeros(0, out_dim)
    param = next(head.parameters(), None) if head is not None else None
    device = param.device if param is not None else torch.device("cpu")
    parts = []
    with torch.no_grad():
        for start in range(0, len(rows), 4096):
            feats = torch.from_numpy(np.asarray(features[rows[start : start + 4096]], dtype=np.float32))
            parts.append(embed_features(feats.to(device), head).float().cpu())
    return torch.cat(parts)
