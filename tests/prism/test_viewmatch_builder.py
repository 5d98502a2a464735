"""The ViewMatch-style dataset builder: layout, resume, fingerprints, skips, and the build -> embed -> train chain."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

cv2 = pytest.importorskip("cv2")

from scenemetrics.prism.data import read_dataset  # noqa: E402
from scenemetrics.prism.viewmatch import (  # noqa: E402
    BuildConfig,
    OpenCVBackend,
    ViewSet,
    build_viewmatch_dataset,
)

from . import viewmatch_scenes as sc  # noqa: E402

AZIMUTHS = [10.0, 100.0, 190.0, 280.0]
FAST = BuildConfig(num_positives=2, num_negatives=2, pairs=3, test_fraction=0.5)


@pytest.fixture(scope="module")
def views(tmp_path_factory) -> Path:
    """Two objects (cube, sphere), 4 views each at 128 px, as nerfstudio folders with .npy depth."""
    root = tmp_path_factory.mktemp("views")
    sc.write_transforms(root / "cube", "cube", AZIMUTHS, 128)
    sc.write_transforms(root / "sphere", "sphere", AZIMUTHS, 128)
    return root


@pytest.fixture(scope="module")
def built(views, tmp_path_factory):
    out = tmp_path_factory.mktemp("vm") / "vm"
    report = build_viewmatch_dataset(views, out, inpainter=OpenCVBackend(), config=FAST, progress=False)
    return out, report


def _u8(path: Path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_UNCHANGED)


def test_layout_and_contents(built, views):
    out, report = built
    meta = json.loads((out / "dataset.json").read_text())
    assert meta["format"] == "scenemetrics.prism.dataset/1"
    assert meta["builder"]["inpainter"] == "opencv:telea:r3" and meta["builder"]["captioner"] == "none"
    assert meta["builder"]["config"]["num_positives"] == 2 and len(meta["builder"]["fingerprint"]) == 64
    # splits: round(0.5 * 2) = 1 test object, the first of randperm(2, seed 0) over the sorted ids
    first = ["cube", "sphere"][int(torch.randperm(2, generator=torch.Generator().manual_seed(0))[0])]
    assert meta["splits"]["test"] == [first] and len(meta["splits"]["train"]) == 1 and meta["splits"]["val"] == []
    assert report.objects == ["cube", "sphere"] and report.pairs_done == 6
    total_pos = total_neg = 0
    for obj in ("cube", "sphere"):
        d = out / obj
        assert not (d / "pairs.partial.jsonl").exists() and not (d / "captions.json").exists()
        assert not list(d.rglob("*.tmp"))
        cams = json.loads((d / "cameras.json").read_text())["views"]
        assert sorted(cams) == ["000", "001", "002", "003"]
        src_img = _u8(views / obj / "images" / "frame_001.png")
        assert np.array_equal(_u8(d / cams["001"]["file"]), src_img)  # RGBA kept, same pixels
        assert np.allclose(np.array(cams["001"]["c2w"]), sc.orbit_camera(AZIMUTHS[1], 128).c2w)
        pairs = json.loads((d / "pairs.json").read_text())["pairs"]
        keys = [(p["source"], p["target"]) for p in pairs]
        assert keys == sorted(keys) and len(keys) == 3
        for p in pairs:
            assert p["misaligned"] == "all" and p["prompt"] == ""
            stem = f"{p['source']}_{p['target']}"
            rgba = _u8(d / cams[p["target"]]["file"])
            sil = rgba[..., 3] > 127
            target = cv2.cvtColor(rgba, cv2.COLOR_BGRA2RGB)
            target[~sil] = 255
            for kind in ("pos", "neg"):
                cands = p["positives" if kind == "pos" else "negatives"]
                mask = _u8(d / "masks" / f"{stem}_{kind}.png") > 0
                for k, c in enumerate(cands):
                    assert c["seed"] == 45 + k and c["file"] == f"inpainted/{stem}_{kind}{k}.png"
                    assert c["mask_area"] == pytest.approx(mask.sum() / sil.sum(), rel=1e-12)
                    img = cv2.cvtColor(_u8(d / c["file"]), cv2.COLOR_BGR2RGB)
                    assert img.shape == (128, 128, 3)
                    assert np.array_equal(img[~mask], target[~mask])  # only the mask changed
            for kind in ("vis", "invis", "epi"):
                assert (d / "masks" / f"{stem}_{kind}.png").is_file()
            vis, invis = _u8(d / "masks" / f"{stem}_vis.png") > 0, _u8(d / "masks" / f"{stem}_invis.png") > 0
            epi = _u8(d / "masks" / f"{stem}_epi.png") > 0
            assert np.array_equal(_u8(d / "masks" / f"{stem}_neg.png") > 0, vis | epi)
            assert np.array_equal(_u8(d / "masks" / f"{stem}_pos.png") > 0, invis | epi)
            assert all("mask_area" in n for n in p["negatives"])
            total_pos += len(p["positives"])
            total_neg += len(p["negatives"])
    assert (report.positives, report.negatives) == (total_pos, total_neg) and total_pos > 0 and total_neg > 0
    anchors = read_dataset(out)
    assert len(anchors) == 6 and all(len(a["misaligned"]) == 3 for a in anchors)
    assert {a["split"] for a in anchors if a["object"] == first} == {"test"}
    a = anchors[0]
    assert a["pose"] == pytest.approx([0.0, (AZIMUTHS[int(a["target"])] - AZIMUTHS[int(a["source"])]) % 360, 0.0])


class _Crash(OpenCVBackend):
    """The OpenCV backend that raises after ``limit`` calls (a build killed midway)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit, self.calls = limit, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls > self.limit:
            raise KeyboardInterrupt("stopped")
        return super().__call__(*args, **kwargs)


def test_resume_skips_finished_pairs_and_matches_an_uninterrupted_build(built, views, tmp_path):
    full_out, _ = built
    out = tmp_path / "vm"
    with pytest.raises(KeyboardInterrupt):  # 4 candidates per pair: the crash comes in the third pair
        build_viewmatch_dataset(views, out, inpainter=_Crash(10), config=FAST, progress=False)
    partial = (out / "cube" / "pairs.partial.jsonl").read_text().splitlines()
    assert len(partial) == 2 and not (out / "cube" / "cameras.json").exists()
    finished = [f for line in partial for kind in ("positives", "negatives") for f in json.loads(line)[kind]]
    stamps = {c["file"]: os.stat(out / "cube" / c["file"]).st_mtime_ns for c in finished}
    assert stamps
    (out / "cube" / "inpainted" / "junk.png.tmp").write_bytes(b"half a file")
    with (out / "cube" / "pairs.partial.jsonl").open("a") as f:
        f.write('{"source": "00')  # a line cut by the crash
    resumed = _Crash(10**6)
    report = build_viewmatch_dataset(views, out, inpainter=resumed, config=FAST, progress=False)
    every = [
        c
        for obj in ("cube", "sphere")
        for e in json.loads((full_out / obj / "pairs.json").read_text())["pairs"]
        for c in e["positives"] + e["negatives"]
    ]
    assert resumed.calls == len(every) - len(finished)  # only the unfinished pairs were inpainted
    assert {f: os.stat(out / "cube" / f).st_mtime_ns for f in stamps} == stamps
    assert not (out / "cube" / "inpainted" / "junk.png.tmp").exists()
    for obj in ("cube", "sphere"):
        assert (out / obj / "pairs.json").read_text() == (full_out / obj / "pairs.json").read_text()
        for f in (full_out / obj / "inpainted").iterdir():
            assert (out / obj / "inpainted" / f.name).read_bytes() == f.read_bytes()
    assert report.pairs_done == 6
    again = _Crash(0)  # everything finished: a rerun inpaints nothing
    assert build_viewmatch_dataset(views, out, inpainter=again, config=FAST, progress=False).pairs_done == 6


def test_other_settings_need_overwrite(built, views, tmp_path):
    out = tmp_path / "vm"
    build_viewmatch_dataset(views / "cube", out, inpainter=OpenCVBackend(), config=FAST, progress=False)
    other = BuildConfig(num_positives=2, num_negatives=2, pairs=3, test_fraction=0.5, seed=7)
    with pytest.raises(ValueError, match="overwrite"):
        build_viewmatch_dataset(views / "cube", out, inpainter=OpenCVBackend(), config=other, progress=False)
    with pytest.raises(ValueError, match="overwrite"):
        build_viewmatch_dataset(views / "cube", out, inpainter=OpenCVBackend(method="ns"), config=FAST, progress=False)
    redo = BuildConfig(num_positives=1, num_negatives=0, pairs=2, test_fraction=0.0, seed=7, overwrite=True)
    report = build_viewmatch_dataset(views / "cube", out, inpainter=OpenCVBackend(), config=redo, progress=False)
    assert report.objects == ["cube"] and report.negatives == 0
    assert not any("neg" in p.name for p in (out / "cube" / "inpainted").iterdir())  # old files were deleted


def _viewset(shape: str, name: str, size: int = 64, azimuths=AZIMUTHS[:3]) -> ViewSet:
    vs, _ = sc.viewset(shape, azimuths, size, object_id=name)
    return vs


def test_bad_inputs_are_errors_or_logged_skips(tmp_path):
    views = tmp_path / "views"
    sc.write_transforms(views / "a_nodepth", "cube", AZIMUTHS[:2], 64, with_depth=False)
    sc.write_transforms(views / "b_ok", "sphere", AZIMUTHS[:2], 64)
    config = BuildConfig(num_positives=1, num_negatives=1, test_fraction=0.0, min_visible_fraction=0.9)
    report = build_viewmatch_dataset(views, tmp_path / "vm", inpainter=OpenCVBackend(), config=config, progress=False)
    log = [json.loads(line) for line in (tmp_path / "vm" / "build_log.jsonl").read_text().splitlines()]
    assert {"object": "a_nodepth", "reason": "no_depth"}.items() <= log[0].items()
    assert "no depth map" in log[0]["detail"]
    assert report.objects == ["b_ok"] and report.skipped == {"no_depth": 1, "no_overlap": 2}
    assert report.negatives == 0 and report.positives == 2  # no overlap -> no negatives, positives kept
    assert not (tmp_path / "vm" / "a_nodepth").exists()

    # an empty target silhouette: the pairs using that view are skipped and logged
    vs = _viewset("cube", "blank")
    vs.images[2][..., 3] = 0
    config = BuildConfig(num_positives=1, num_negatives=1, test_fraction=0.0, min_negative_area=50.0)
    single = ViewSet("single", vs.images[:1], vs.depths[:1], vs.cameras[:1])
    report = build_viewmatch_dataset(
        [vs, single], tmp_path / "vm2", inpainter=OpenCVBackend(), config=config, progress=False
    )
    assert report.skipped["empty_silhouette"] == 4 and report.pairs_skipped == 4
    assert report.skipped["too_few_views"] == 1 and report.skipped["small_mask"] == 2
    pairs = json.loads((tmp_path / "vm2" / "blank" / "pairs.json").read_text())["pairs"]
    assert [(p["source"], p["target"]) for p in pairs] == [("000", "001"), ("001", "000")]
    assert all(p["negatives"] == [] for p in pairs)

    with pytest.raises(RuntimeError, match=r"nothing built; see .*build_log\.jsonl"):
        build_viewmatch_dataset(views / "a_nodepth", tmp_path / "vm3", inpainter=OpenCVBackend(), progress=False)
    with pytest.raises(FileNotFoundError, match=r"transforms\.json"):
        build_viewmatch_dataset(tmp_path / "vm", tmp_path / "vm4", inpainter=OpenCVBackend(), progress=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_viewmatch_dataset(tmp_path / "missing", tmp_path / "vm5", inpainter=OpenCVBackend(), progress=False)
    with pytest.raises(ValueError, match="pairs"):
        BuildConfig(pairs=0)
    with pytest.raises(ValueError, match="splits"):
        BuildConfig(splits={"holdout": ["a"]})


def test_explicit_splits_and_captions(tmp_path):
    sets = [_viewset("cube", "c1", azimuths=AZIMUTHS[:2]), _viewset("sphere", "s1", azimuths=AZIMUTHS[:2])]
    calls = []

    def captioner(image: np.ndarray) -> str:
        calls.append(image.shape)
        return "a toy"

    config = BuildConfig(
        num_positives=1, num_negatives=1, splits={"val": ["s1"]}, prompt_template="a photo of {caption}"
    )
    build_viewmatch_dataset(
        sets, tmp_path / "vm", inpainter=OpenCVBackend(), config=config, progress=False, captioner=captioner
    )
    meta = json.loads((tmp_path / "vm" / "dataset.json").read_text())
    assert meta["splits"] == {"train": ["c1"], "val": ["s1"], "test": []}
    assert calls == [(64, 64, 3)] * 4  # each source view captioned once, over white
    assert json.loads((tmp_path / "vm" / "c1" / "captions.json").read_text()) == {"000": "a toy", "001": "a toy"}
    pairs = json.loads((tmp_path / "vm" / "c1" / "pairs.json").read_text())["pairs"]
    assert {p["prompt"] for p in pairs} == {"a photo of a toy"}
