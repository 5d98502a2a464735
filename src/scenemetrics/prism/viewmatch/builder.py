"""Build a ViewMatch-style PRISM training dataset from posed views with depth (``scenemetrics prism build-dataset``).

For every object and ordered pair ``(source, target)`` of its views: the masks of
:func:`~scenemetrics.prism.viewmatch.pair_masks`, ``num_positives`` plausible completions inpainted on
``invisibility | epipolar`` and ``num_negatives`` implausible ones on ``visibility | epipolar`` (seeds
``seed + k``), and the misaligned-view negatives (the object's other views). The output is a
``scenemetrics.prism.dataset/1`` folder that ``scenemetrics prism embed`` then ``train-head`` read as is.

The build is resumable per pair: a finished pair is a line of ``<object>/pairs.partial.jsonl`` written after all
its images; a rerun skips finished pairs and objects. Skips (and warnings) go to ``build_log.jsonl`` with a reason:
``no_depth`` / ``too_few_views`` (whole object), ``empty_silhouette`` (pairs using that view), ``no_overlap`` /
``small_mask`` (no negatives), ``empty_mask`` (no positives), ``warning``.

Example:
    >>> from scenemetrics.prism.viewmatch import BuildConfig, OpenCVBackend, build_viewmatch_dataset
    >>> report = build_viewmatch_dataset("renders/", "vm/", inpainter=OpenCVBackend())  # doctest: +SKIP
    >>> report.pairs_done, report.skipped  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scenemetrics.fileio import safe_name
from scenemetrics.prism.viewmatch.backends import inpaint_composite
from scenemetrics.prism.viewmatch.config import BuildConfig
from scenemetrics.prism.viewmatch.masks import pair_masks
from scenemetrics.prism.viewmatch.views import MissingDepthError, ViewSet, find_objects, import_cv2, read_transforms

__all__ = ["BUILDER_VERSION", "BuildReport", "build_viewmatch_dataset"]

BUILDER_VERSION = 1
DATASET_FORMAT = "scenemetrics.prism.dataset/1"


@dataclass
class BuildReport:
    """What :func:`build_viewmatch_dataset` returns.

    Attributes:
        out_dir: the dataset folder.
        objects: ids of the objects written.
        pairs_done: pairs in the dataset (including those finished by an earlier run).
        pairs_skipped: pairs left out (``empty_silhouette``).
        positives / negatives: inpainted candidates in the dataset.
        skipped: number of logged entries per reason (the whole ``build_log.jsonl``).
        seconds: wall time of this call.
    """

    out_dir: Path
    objects: list[str] = field(default_factory=list)
    pairs_done: int = 0
    pairs_skipped: int = 0
    positives: int = 0
    negatives: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The CLI's JSON summary."""
        return {
            "out": str(self.out_dir),
            "objects": len(self.objects),
            "pairs_done": self.pairs_done,
            "pairs_skipped": self.pairs_skipped,
            "positives": self.positives,
            "negatives": self.negatives,
            "skipped_by_reason": dict(self.skipped),
        }


# ---------------------------------------------------------------------------------------------------------------
# small file helpers


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _png_bytes(array: np.ndarray) -> bytes:
    cv2 = import_cv2()
    if array.ndim == 2:
        img = array
    elif array.shape[2] == 4:
        img = cv2.cvtColor(array, cv2.COLOR_RGBA2BGRA)
    else:
        img = cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".png", img)
    if not ok:  # pragma: no cover - OpenCV always encodes uint8 PNGs
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()


def _write_json(path: Path, obj: Any) -> None:
    _write_atomic(path, (json.dumps(obj, indent=1) + "\n").encode())


class _Log:
    """``build_log.jsonl``: appended and flushed line by line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, entries: Iterable[dict[str, Any]]) -> None:
        lines = [json.dumps(e, sort_keys=True) for e in entries]
        if lines:
            with self.path.open("a") as f:
                f.write("\n".join(lines) + "\n")
                f.flush()

    def counts(self) -> dict[str, int]:
        if not self.path.is_file():
            return {}
        seen = set()
        for line in self.path.read_text().splitlines():
            if line.strip():
                seen.add(line.strip())
        return dict(sorted(Counter(json.loads(s)["reason"] for s in seen).items()))


_PAIR_KEYS = ("source", "target", "positives", "negatives", "misaligned", "visible_fraction", "prompt")
_CANDIDATE_KEYS = ("file", "mask_area", "seed")


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """A pair entry with its keys in the documented order (a resumed pair was re-read from JSON)."""
    out = {k: entry[k] for k in _PAIR_KEYS if k in entry}
    for kind in ("positives", "negatives"):
        out[kind] = [{k: c[k] for k in _CANDIDATE_KEYS} for c in out[kind]]
    return out


def _entry(obj: str, reason: str, detail: str, source: str | None = None, target: str | None = None) -> dict[str, Any]:
    return {"object": obj, "source": source, "target": target, "reason": reason, "detail": detail}


# ---------------------------------------------------------------------------------------------------------------
# inputs


@dataclass
class _ObjectSource:
    object_id: str
    folder: Path | None = None
    viewset: ViewSet | None = None
    num_views: int = 0


def _sources(views: str | os.PathLike | Iterable[ViewSet]) -> list[_ObjectSource]:
    if isinstance(views, (str, os.PathLike)):
        out = []
        for folder in find_objects(views):
            try:
                frames = json.loads((folder / "transforms.json").read_text()).get("frames", [])
            except json.JSONDecodeError as err:
                raise ValueError(f"{folder / 'transforms.json'} is not valid JSON: {err}") from err
            out.append(
                _ObjectSource(folder.name, folder=folder, num_views=len(frames) if isinstance(frames, list) else 0)
            )
    else:
        out = []
        for vs in views:
            if not isinstance(vs, ViewSet):
                raise TypeError(f"`views` must be a folder or ViewSets; received an item of type {type(vs).__name__}")
            out.append(_ObjectSource(vs.object_id, viewset=vs, num_views=len(vs)))
    ids = [s.object_id for s in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"object ids must be unique; received {ids}")
    for i in ids:
        if safe_name(i) != i:  # the one rule for names that become folders (backslashes, "..", NUL, CON, ...)
            raise ValueError(f"object id {i!r} cannot be a folder name; use e.g. {safe_name(i)!r}")
    return sorted(out, key=lambda s: s.object_id)


def _splits(ids: list[str], config: BuildConfig) -> dict[str, str]:
    import torch

    if config.splits is not None:
        out = {o: "train" for o in ids}
        for split, objs in config.splits.items():
            for o in objs:
                out[str(o)] = split
        return out
    k = len(ids)
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(config.split_seed)).tolist()
    n_test = round(config.test_fraction * k)
    n_val = round(config.val_fraction * k)
    out = {}
    for rank, i in enumerate(perm):
        out[ids[i]] = "test" if rank < n_test else ("val" if rank < n_test + n_val else "train")
    return out


def _pairs(num_views: int, config: BuildConfig) -> list[tuple[int, int]]:
    import torch

    every = [(s, t) for s in range(num_views) for t in range(num_views) if s != t]
    if config.pairs == "all" or config.pairs >= len(every):
        return every
    perm = torch.randperm(len(every), generator=torch.Generator().manual_seed(config.seed)).tolist()
    return sorted(every[i] for i in perm[: config.pairs])


# ---------------------------------------------------------------------------------------------------------------
# the build


def _fingerprint(config: BuildConfig, inpainter: str, captioner: str) -> str:
    blob = json.dumps(
        {"config": config.fingerprint_dict(), "inpainter": inpainter, "captioner": captioner}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _captioner(config: BuildConfig, inpainter: Any, captioner: Callable[[np.ndarray], str] | None) -> Any:
    if captioner is not None:
        return captioner
    from scenemetrics.prism.viewmatch.backends import BlipCaptioner, OpenCVBackend

    choice = config.captioner
    if choice == "auto":
        choice = "none" if isinstance(inpainter, OpenCVBackend) else "blip"
    return BlipCaptioner(config.blip_model, device=config.device) if choice == "blip" else None


class _Builder:
    def __init__(self, out: Path, inpainter: Any, captioner: Any, config: BuildConfig, bar: Any, log: _Log) -> None:
        self.out, self.inpainter, self.captioner, self.config, self.bar, self.log = (
            out,
            inpainter,
            captioner,
            config,
            bar,
            log,
        )
        self.pairs_skipped = 0

    def _postfix(self, obj: str) -> None:
        self.bar.set_postfix(object=obj, skips=self.pairs_skipped, refresh=False)

    def load(self, src: _ObjectSource) -> ViewSet | None:
        if src.viewset is not None:
            return src.viewset
        c = self.config
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                vs = read_transforms(
                    src.folder,
                    world_up=c.world_up,
                    depth_kind=c.depth_kind,
                    depth_scale=c.depth_scale,
                    far=c.far,
                    view_names=c.view_names,
                )
            except MissingDepthError as err:
                self.log.write([_entry(src.object_id, "no_depth", str(err))])
                return None
        self._relay(src.object_id, caught)
        return vs

    def _relay(self, obj: str, caught: list, source: str | None = None, target: str | None = None) -> None:
        entries = []
        for w in caught:
            entries.append(_entry(obj, "warning", str(w.message), source, target))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.log.write(entries)

    def build_object(self, src: _ObjectSource, vs: ViewSet) -> tuple[int, int, int]:
        """Build (or finish) one object; returns ``(pairs, positives, negatives)`` written in its ``pairs.json``."""
        c = self.config
        obj_dir = self.out / vs.object_id
        (obj_dir / "views").mkdir(parents=True, exist_ok=True)
        (obj_dir / "inpainted").mkdir(exist_ok=True)
        if c.save_masks:
            (obj_dir / "masks").mkdir(exist_ok=True)
        for sub in ("inpainted", "masks", "views", "."):
            for stray in (obj_dir / sub).glob("*.tmp") if (obj_dir / sub).is_dir() else ():
                stray.unlink()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            silhouettes = vs.silhouettes
        self._relay(vs.object_id, caught)
        files = {}
        for i, name in enumerate(vs.names):
            rel = f"views/{name}.png"
            if not (obj_dir / rel).is_file():
                _write_atomic(obj_dir / rel, _png_bytes(vs.images[i]))
            files[name] = rel

        pairs = _pairs(len(vs), c)
        partial = obj_dir / "pairs.partial.jsonl"
        done: dict[tuple[str, str], dict[str, Any]] = {}
        if partial.is_file():
            text = partial.read_text()
            for line in text.splitlines():
                if line.strip():
                    try:
                        e = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by a crash: the pair is redone
                    done[(e["source"], e["target"])] = e
            if (text and not text.endswith("\n")) or len(done) != sum(1 for x in text.splitlines() if x.strip()):
                lines = "".join(json.dumps(e, sort_keys=True) + "\n" for e in done.values())
                _write_atomic(partial, lines.encode())  # drop the cut line before appending
        captions = self._captions(obj_dir, vs, sorted({s for s, _ in pairs}))
        with partial.open("a") as out:
            for s, t in pairs:
                key = (vs.names[s], vs.names[t])
                if key in done:
                    continue
                self._postfix(vs.object_id)
                entry, logs = self._pair(obj_dir, vs, s, t, silhouettes, captions)
                self.log.write(logs)
                self.pairs_skipped += "skipped" in entry
                out.write(json.dumps(entry, sort_keys=True) + "\n")
                out.flush()
                os.fsync(out.fileno())
                done[key] = entry
                self.bar.update(1)
        entries = [_ordered(done[k]) for k in sorted(done) if "skipped" not in done[k]]
        _write_json(obj_dir / "pairs.json", {"pairs": entries})
        cams = {
            "views": {name: {"file": files[name], "c2w": vs.cameras[i].c2w.tolist()} for i, name in enumerate(vs.names)}
        }
        _write_json(obj_dir / "cameras.json", cams)  # last: read_dataset only sees finished objects
        partial.unlink()
        return len(entries), sum(len(e["positives"]) for e in entries), sum(len(e["negatives"]) for e in entries)

    def _captions(self, obj_dir: Path, vs: ViewSet, sources: list[int]) -> dict[str, str]:
        if self.captioner is None:
            return {}
        path = obj_dir / "captions.json"
        captions = json.loads(path.read_text()) if path.is_file() else {}
        missing = [i for i in sources if vs.names[i] not in captions]
        for i in missing:
            captions[vs.names[i]] = str(self.captioner(vs.over_white(i)))
        if missing or not path.is_file():
            _write_json(path, captions)
        return captions

    def _pair(
        self, obj_dir: Path, vs: ViewSet, s: int, t: int, silhouettes: list[np.ndarray], captions: dict[str, str]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        c = self.config
        obj, sn, tn = vs.object_id, vs.names[s], vs.names[t]
        empty = [vs.names[i] for i in (s, t) if not silhouettes[i].any()]
        if empty:
            detail = f"view(s) {', '.join(empty)} have an empty silhouette"
            return {"source": sn, "target": tn, "skipped": "empty_silhouette"}, [
                _entry(obj, "empty_silhouette", detail, sn, tn)
            ]
        logs: list[dict[str, Any]] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            masks = pair_masks(vs, s, t, c)
        for w in caught:
            logs.append(_entry(obj, "warning", str(w.message), sn, tn))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        stem = f"{sn}_{tn}"
        if c.save_masks:
            for kind, m in (
                ("vis", masks.V),
                ("invis", masks.I),
                ("epi", masks.E),
                ("pos", masks.pos),
                ("neg", masks.neg),
            ):
                _write_atomic(
                    obj_dir / "masks" / f"{stem}_{kind}.png", _png_bytes(np.where(m, 255, 0).astype(np.uint8))
                )
        prompt = c.prompt_template.format(caption=captions[sn]) if sn in captions else c.prompt
        target = vs.over_white(t)
        positives, negatives = [], []
        if not masks.pos.any():
            logs.append(_entry(obj, "empty_mask", "the positive mask (invisibility | epipolar) is empty", sn, tn))
        else:
            for k in range(c.num_positives):
                positives.append(self._candidate(obj_dir, f"{stem}_pos{k}", target, masks.pos, prompt, c.seed + k))
                positives[-1]["mask_area"] = masks.pos_area
        if c.num_negatives:
            if masks.visible_fraction < c.min_visible_fraction:
                logs.append(
                    _entry(
                        obj,
                        "no_overlap",
                        f"the source sees {masks.visible_fraction:.4f} of the target silhouette "
                        f"(< min_visible_fraction {c.min_visible_fraction})",
                        sn,
                        tn,
                    )
                )
            elif masks.neg_area < c.min_negative_area:
                logs.append(
                    _entry(
                        obj,
                        "small_mask",
                        f"the negative mask covers {masks.neg_area:.4f} of the target silhouette "
                        f"(< min_negative_area {c.min_negative_area})",
                        sn,
                        tn,
                    )
                )
            else:
                for k in range(c.num_negatives):
                    negatives.append(self._candidate(obj_dir, f"{stem}_neg{k}", target, masks.neg, prompt, c.seed + k))
                    negatives[-1]["mask_area"] = masks.neg_area
        entry: dict[str, Any] = {
            "source": sn,
            "target": tn,
            "positives": positives,
            "negatives": negatives,
            "visible_fraction": masks.visible_fraction,
            "prompt": prompt,
        }
        if c.misaligned == "all":
            entry["misaligned"] = "all"
        return entry, logs

    def _candidate(
        self, obj_dir: Path, stem: str, target: np.ndarray, mask: np.ndarray, prompt: str, seed: int
    ) -> dict:
        image = inpaint_composite(
            self.inpainter, target, mask, prompt=prompt, negative_prompt=self.config.negative_prompt, seed=seed
        )
        rel = f"inpainted/{stem}.png"
        _write_atomic(obj_dir / rel, _png_bytes(image))
        return {"file": rel, "seed": seed}


def build_viewmatch_dataset(
    views: str | os.PathLike | Iterable[ViewSet],
    out_dir: str | os.PathLike,
    *,
    inpainter: Any = None,
    config: BuildConfig | None = None,
    progress: bool = True,
    captioner: Callable[[np.ndarray], str] | None = None,
) -> BuildReport:
    """Build (or resume) a ViewMatch-style dataset in ``out_dir``.

    Args:
        views: a folder with ``transforms.json`` (one object) or whose sub-folders hold one each (object id = folder
            name), or :class:`~scenemetrics.prism.viewmatch.ViewSet` objects.
        out_dir: the dataset folder (created).
        inpainter: a backend (default :class:`~scenemetrics.prism.viewmatch.DiffusersBackend` with Stable Diffusion
            1.5 inpainting).
        config: the :class:`BuildConfig`.
        progress: show a tqdm bar over pairs (stderr).
        captioner: a callable ``image -> caption`` overriding ``config.captioner``.

    Returns:
        A :class:`BuildReport` over the whole dataset.

    Raises:
        FileNotFoundError: ``views`` is missing or holds no ``transforms.json``.
        ValueError: malformed inputs (named file and frame), or an ``out_dir`` built with other settings (pass
            ``overwrite=True`` or a new folder).
        RuntimeError: every object was skipped ("nothing built; see build_log.jsonl").
    """
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    config = config or BuildConfig()
    if inpainter is None:
        from scenemetrics.prism.viewmatch.backends import DiffusersBackend

        inpainter = DiffusersBackend(device=config.device)
    if not callable(inpainter) or not isinstance(getattr(inpainter, "name", None), str):
        raise TypeError("`inpainter` must be callable with a `name` string (see ViewMatchInpainter)")
    sources = _sources(views)
    cap = _captioner(config, inpainter, captioner)
    cap_name = "none" if cap is None else str(getattr(cap, "name", type(cap).__name__))
    fingerprint = _fingerprint(config, inpainter.name, cap_name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "dataset.json"
    log = _Log(out / "build_log.jsonl")
    if meta_path.is_file() and not config.overwrite:
        old = json.loads(meta_path.read_text()).get("builder", {}).get("fingerprint")
        if old != fingerprint:
            raise ValueError(
                f"{os.fspath(out)!r} was built with other settings (fingerprint {str(old)[:12]}... vs "
                f"{fingerprint[:12]}...): pass overwrite=True (--overwrite) to rebuild its objects, or use a new "
                "out_dir"
            )
    if config.overwrite:
        for src in sources:
            if (out / src.object_id).is_dir():
                shutil.rmtree(out / src.object_id)
        log.path.unlink(missing_ok=True)
    split_of = _splits([s.object_id for s in sources], config)
    builder_meta = {
        "version": BUILDER_VERSION,
        "config": config.to_dict(),
        "inpainter": inpainter.name,
        "captioner": cap_name,
        "fingerprint": fingerprint,
    }

    def write_meta(objects: list[str]) -> None:
        splits: dict[str, list[str]] = {"train": [], "val": [], "test": []}
        for o in objects:
            splits[split_of[o]].append(o)
        _write_json(meta_path, {"format": DATASET_FORMAT, "splits": splits, "builder": builder_meta})

    finished = [s.object_id for s in sources if (out / s.object_id / "cameras.json").is_file()]
    write_meta(finished)
    report = BuildReport(out_dir=out)

    def pair_count(src: _ObjectSource) -> int:
        return len(_pairs(src.num_views, config)) if src.num_views >= 2 else 0

    def partial_count(src: _ObjectSource) -> int:
        p = out / src.object_id / "pairs.partial.jsonl"
        return sum(1 for line in p.read_text().splitlines() if line.strip()) if p.is_file() else 0

    total = sum(pair_count(s) for s in sources)
    initial = sum(pair_count(s) if s.object_id in finished else partial_count(s) for s in sources)
    with tqdm(total=total, initial=initial, unit="pair", desc="build-dataset", disable=not progress) as bar:
        b = _Builder(out, inpainter, cap, config, bar, log)
        built: list[str] = []
        for src in sources:
            obj_dir = out / src.object_id
            if (obj_dir / "cameras.json").is_file():
                entries = json.loads((obj_dir / "pairs.json").read_text()).get("pairs", [])
                report.pairs_done += len(entries)
                report.positives += sum(len(e.get("positives", [])) for e in entries)
                report.negatives += sum(len(e.get("negatives", [])) for e in entries)
                built.append(src.object_id)
                continue
            vs = b.load(src)
            if vs is None:
                continue
            if len(vs) < 2:
                log.write([_entry(src.object_id, "too_few_views", f"{len(vs)} view(s); a pair needs 2")])
                continue
            n_pairs, n_pos, n_neg = b.build_object(src, vs)
            report.pairs_done += n_pairs
            report.positives += n_pos
            report.negatives += n_neg
            built.append(src.object_id)
            write_meta(sorted(built))
    report.objects = sorted(built)
    report.skipped = log.counts()
    report.pairs_skipped = report.skipped.get("empty_silhouette", 0)
    if not built:
        raise RuntimeError(f"nothing built; see {os.fspath(log.path)}")
    write_meta(report.objects)
    report.seconds = time.perf_counter() - t0
    return report
