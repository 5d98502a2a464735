"""ViewMatch masks on analytic scenes: closed-form visibility, epipolar masks, OpenCV morphology, input readers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from scenemetrics.prism.viewmatch import (  # noqa: E402
    BuildConfig,
    Camera,
    MissingDepthError,
    ViewSet,
    ellipse,
    epipolar_mask,
    load_depth,
    pair_masks,
    read_transforms,
    refine_masks,
    visibility_mask,
)

from . import viewmatch_scenes as sc  # noqa: E402

SOURCE_AZ = 10.0  # off the cube's symmetry
OFFSETS = (22.5, 45.0, 90.0, 135.0, 180.0)


@pytest.fixture(scope="module")
def scenes_512():
    """Both shapes at 512 px: the source view and one target per offset, with exact renders."""
    return {shape: sc.viewset(shape, [SOURCE_AZ] + [SOURCE_AZ + o for o in OFFSETS], 512) for shape in sc_shapes()}


def sc_shapes():
    return ("cube", "sphere")


def _labels(shape, vs, renders, t):
    sil = vs.silhouettes[t]
    assert np.array_equal(sil, renders[t]["hit"])  # silhouette = alpha = exact hit mask
    v_star = sc.closed_form_visible(shape, renders[t], vs.cameras[0].center)
    return sil, v_star, sil & ~v_star


@pytest.mark.parametrize("k", range(len(OFFSETS)))
def test_cube_visibility_matches_the_closed_form(scenes_512, k):
    vs, renders = scenes_512["cube"]
    t = k + 1
    sil, v_star, i_star = _labels("cube", vs, renders, t)
    v0 = visibility_mask(vs, 0, t)
    i0 = sil & ~v0
    assert sc.iou(i0, i_star) >= 0.98
    coverage = v_star.sum() / sil.sum()
    assert sc.iou(v0, v_star) >= (0.98 if coverage >= 0.3 else 0.95)
    assert 1 - (v0 ^ v_star).sum() / sil.sum() >= 0.99
    assert not (v0 & ~sil).any()


@pytest.mark.parametrize("k", range(len(OFFSETS)))
def test_sphere_visibility_matches_the_closed_form(scenes_512, k):
    vs, renders = scenes_512["sphere"]
    t = k + 1
    sil, v_star, _i_star = _labels("sphere", vs, renders, t)
    v0 = visibility_mask(vs, 0, t)
    assert 1 - (v0 ^ v_star).sum() / sil.sum() >= 0.95
    if v_star.sum() >= 0.9 * sil.sum():  # 22.5 degrees: the visible part covers >= 90 % of the silhouette
        assert OFFSETS[k] == 22.5
        assert sc.iou(v0, v_star) >= 0.98


def test_a_looser_tolerance_widens_the_false_visible_band(scenes_512):
    vs, renders = scenes_512["cube"]
    _sil, v_star, _ = _labels("cube", vs, renders, 3)  # 90 degrees
    strict = visibility_mask(vs, 0, 3, rel_tol=0.002)
    loose = visibility_mask(vs, 0, 3, rel_tol=0.05)
    assert (loose & ~v_star).sum() > (strict & ~v_star).sum()
    assert not (strict & ~loose).any()  # a larger tolerance only adds visible pixels


@pytest.mark.parametrize("shape", sc_shapes())
def test_png_and_ray_depth_give_the_npy_masks(tmp_path, shape):
    az = [SOURCE_AZ, SOURCE_AZ + 45.0, SOURCE_AZ + 135.0]
    sets = {
        kind: read_transforms(
            sc.write_transforms(tmp_path / kind, shape, az, 512, depth=kind), depth_kind="ray" if kind == "ray" else "z"
        )
        for kind in ("npy", "png", "ray")
    }
    assert sets["png"].depth_quantum == pytest.approx(0.001) and sets["npy"].depth_quantum == 0.0
    for t in (1, 2):
        base = visibility_mask(sets["npy"], 0, t)
        area = sets["npy"].silhouettes[t].sum()
        for kind in ("png", "ray"):
            assert np.array_equal(sets[kind].silhouettes[t], sets["npy"].silhouettes[t])
            assert (visibility_mask(sets[kind], 0, t) ^ base).sum() <= 0.005 * area, kind


# ---- epipolar ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scenes_128():
    return {
        shape: sc.viewset(shape, [SOURCE_AZ, SOURCE_AZ + 90.0, SOURCE_AZ + 180.0, SOURCE_AZ + 270.0], 128)
        for shape in sc_shapes()
    }


@pytest.mark.parametrize("shape", sc_shapes())
def test_epipolar_mask_stays_near_the_object_and_outside_it(scenes_128, shape):
    vs, _ = scenes_128[shape]
    e0, kept = epipolar_mask(vs, 0, 1, return_samples=True)  # 90 degrees
    masks = pair_masks(vs, 0, 1)
    sil = vs.silhouettes[1]
    near = cv2.dilate(np.where(sil, 255, 0).astype(np.uint8), ellipse(20)) > 0
    assert masks.E.any() and not (masks.E & ~near).any()
    assert np.array_equal(masks.E0, e0)
    assert len(kept) > 0
    # kept samples lie in free space: outside the object, up to one target pixel's footprint (the depth test looks
    # at the depth of the pixel centre, not of the sample's exact position)
    dist = np.linalg.norm(kept - vs.cameras[1].center, axis=1)
    footprint = dist / vs.cameras[1].fx
    outside = np.linalg.norm(kept, axis=1) - 1.0 if shape == "sphere" else np.abs(kept).max(axis=1) - sc.CUBE_HALF
    assert (outside > -footprint).all()
    assert (outside > 0).mean() > 0.99
    # every kept sample lies behind its surface point as seen from the source, so the source sees none of them
    uv, d = vs.cameras[0].project(kept)
    pu, pv = np.floor(uv).astype(int).T
    inside = (pu >= 0) & (pu < 128) & (pv >= 0) & (pv < 128)
    seen_by_source = inside.copy()
    seen_by_source[inside] = ~vs.silhouettes[0][pv[inside], pu[inside]] | (
        d[inside] < vs.depths[0][pv[inside], pu[inside]] - 0.01
    )
    assert seen_by_source.mean() < 0.01


def test_morphology_gives_disjoint_masks_inside_the_silhouette(scenes_128):
    for shape in sc_shapes():
        vs, _ = scenes_128[shape]
        for t in (1, 2):
            m = pair_masks(vs, 0, t)
            sil = vs.silhouettes[t]
            assert not (m.V & m.I).any()
            assert not ((m.V | m.I) & ~sil).any()
            assert np.array_equal(m.pos, m.I | m.E) and np.array_equal(m.neg, m.V | m.E)
            assert m.pos_area == m.pos.sum() / sil.sum() and m.neg_area == m.neg.sum() / sil.sum()
            assert m.visible_fraction == m.V0.sum() / sil.sum()
            assert np.array_equal(m.I0, sil & ~m.V0)


def test_ray_cap_warns_once_with_the_count(scenes_128):
    vs, _ = scenes_128["cube"]
    with pytest.warns(UserWarning, match=r"\d+ epipolar rays were cut at max_ray_samples=5"):
        capped = epipolar_mask(vs, 0, 1, max_ray_samples=5)
    assert capped.sum() < epipolar_mask(vs, 0, 1).sum()


def test_refine_masks_is_the_opencv_ellipse_sequence():
    rng = np.random.default_rng(0)
    blobs = cv2.GaussianBlur(rng.random((96, 96)), (0, 0), 4)
    sil = blobs > np.quantile(blobs, 0.4)
    v0 = sil & (rng.random((96, 96)) < 0.6) & (np.arange(96)[None, :] < 50)
    i0 = sil & ~v0
    e0 = rng.random((96, 96)) < 0.05

    def k(r):  # written out: OpenCV's elliptical structuring element of size 2r+1
        return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))

    u8 = lambda m: m.astype(np.uint8) * 255  # noqa: E731
    v1 = cv2.morphologyEx(u8(v0), cv2.MORPH_CLOSE, k(4)) > 0
    i1 = cv2.morphologyEx(u8(i0), cv2.MORPH_CLOSE, k(4)) > 0
    v2 = v1 & sil
    i2 = i1 & sil & ~v2
    v = cv2.morphologyEx(u8(v2), cv2.MORPH_OPEN, k(10)) > 0
    i = cv2.morphologyEx(u8(i2), cv2.MORPH_OPEN, k(10)) > 0
    e = (cv2.morphologyEx(u8(e0), cv2.MORPH_CLOSE, k(3)) > 0) & (cv2.dilate(u8(sil), k(20)) > 0)
    got = refine_masks(v0, i0, e0, sil)
    for a, b in zip(got, (v, i, e, i | e, v | e), strict=True):
        assert np.array_equal(a, b)
    assert v.any() and i.any() and e.any()
    assert BuildConfig(radius_scale=0.5).radii() == (2, 5, 2, 10)


# ---- readers and bad inputs --------------------------------------------------------------------------------------


def test_read_transforms_conventions(tmp_path):
    folder = sc.write_transforms(tmp_path / "obj", "cube", [10.0, 100.0], 64)
    vs = read_transforms(folder)
    assert vs.object_id == "obj" and vs.names == ["000", "001"] and vs.size == 64
    cam = vs.cameras[0]
    assert cam.fx == pytest.approx(32 / math.tan(0.5 * sc.ANGLE_X)) and cam.cx == 32.0
    assert read_transforms(folder, view_names="stem").names == ["frame_000", "frame_001"]
    # y-up worlds are rotated +90 degrees about x: a camera on +y ends up on +z
    meta = json.loads((folder / "transforms.json").read_text())
    c2w = np.eye(4)
    c2w[:3, 3] = [0, 3, 0]
    c2w[:3, :3] = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]  # looks along -y
    meta["frames"][0]["transform_matrix"] = c2w.tolist()
    (folder / "transforms.json").write_text(json.dumps(meta))
    up = read_transforms(folder, world_up="y")
    assert np.allclose(up.cameras[0].center, [0, 0, 3])
    c2w[:3, 3] = [1, 3, 0]  # still looking along -y: misses the origin by atan(1/3) = 18 degrees
    meta["frames"][0]["transform_matrix"] = c2w.tolist()
    (folder / "transforms.json").write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="optical axes of 1 camera"):
        read_transforms(folder, world_up="y")


def test_non_square_views_are_padded_white_with_shifted_principal_point():
    cam = Camera(np.eye(4), 50.0, 50.0, 20.0, 10.0)
    img = np.zeros((20, 40, 4), np.uint8)
    img[..., 3] = 255
    vs = ViewSet("o", [img, img], [np.ones((20, 40))] * 2, [cam, cam])
    assert vs.size == 40 and vs.cameras[0].cy == 20.0 and vs.cameras[0].cx == 20.0
    assert (vs.images[0][:10, :, 3] == 0).all() and (vs.images[0][:10, :, :3] == 255).all()
    assert vs.silhouettes[0].sum() == 20 * 40 and (vs.depths[0][:10] == 0).all()


def test_silhouette_pixels_without_depth_are_dropped_with_a_warning():
    cam = Camera(np.eye(4), 10.0, 10.0, 4.0, 4.0)
    img = np.full((8, 8, 4), 255, np.uint8)
    depth = np.ones((8, 8))
    depth[0, :3] = np.nan
    vs = ViewSet("o", [img], [depth], [cam])
    with pytest.warns(UserWarning, match="3 silhouette pixels have no valid depth"):
        assert vs.silhouettes[0].sum() == 61


def test_bad_inputs_name_the_file_and_frame(tmp_path):
    folder = sc.write_transforms(tmp_path / "obj", "sphere", [10.0, 100.0], 32)
    meta = json.loads((folder / "transforms.json").read_text())

    def with_meta(**changes):
        (folder / "transforms.json").write_text(json.dumps({**meta, **changes}))

    with_meta(camera_model="OPENCV_FISHEYE")
    with pytest.raises(ValueError, match=r"frame 0.*camera_model"):
        read_transforms(folder)
    with_meta(k1=0.1)
    with pytest.raises(ValueError, match="distortion k1"):
        read_transforms(folder)
    with_meta()
    cv2.imwrite(str(folder / "images/frame_001_depth.png"), np.zeros((32, 32), np.uint8))
    (folder / "images/frame_001_depth.npy").unlink()
    with pytest.raises(ValueError, match=r"frame 1.*8-bit depth"):
        read_transforms(folder)
    np.save(folder / "images/frame_001_depth.npy", np.ones((16, 16), np.float32))
    (folder / "images/frame_001_depth.png").unlink()
    with pytest.raises(ValueError, match=r"frame 1.*does not match|frame 1.*image is"):
        read_transforms(folder)
    (folder / "images/frame_001_depth.npy").unlink()
    with pytest.raises(MissingDepthError, match=r"frame 1: no depth map"):
        read_transforms(folder)
    (folder / "transforms.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_transforms(folder)


def test_load_depth_formats(tmp_path):
    np.save(tmp_path / "d.npy", np.full((4, 4), 2.5, np.float32))
    depth, quantum = load_depth(tmp_path / "d.npy")
    assert np.allclose(depth, 2.5) and depth.dtype == np.float64 and quantum == 0.0
    cv2.imwrite(str(tmp_path / "d.png"), np.full((4, 4), 2500, np.uint16))
    depth, quantum = load_depth(tmp_path / "d.png")
    assert np.allclose(depth, 2.5) and quantum == 0.001
    depth, quantum = load_depth(tmp_path / "d.png", scale=0.0001)
    assert np.allclose(depth, 0.25) and quantum == 0.0001
    with pytest.raises(ValueError, match="unsupported extension"):
        load_depth(tmp_path / "d.tiff")


_NO_OPENCV = r"""
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"cv2", "diffusers", "transformers"}:
            raise ImportError(f"{name} is blocked for this test")
        return None

sys.meta_path.insert(0, Block())
import scenemetrics.prism as prism
config = prism.BuildConfig(num_positives=1)
assert prism.viewmatch.BuildConfig is prism.BuildConfig and callable(prism.build_viewmatch_dataset)
try:
    prism.viewmatch.ellipse(1)
except ImportError as err:
    assert "pip install 'scenemetrics[inpaint]'" in str(err), err
else:
    raise AssertionError("no ImportError")
assert "cv2" not in sys.modules
print("ok")
"""


@pytest.mark.slow  # a fresh interpreter importing torch: ~15 s on a loaded 2-core machine
def test_viewmatch_imports_without_opencv_and_names_the_extra(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _NO_OPENCV], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
