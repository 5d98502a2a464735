"""File formats (spec §2) and visualisation (spec §8)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.openlex3d import (
    CATEGORY_COLORS,
    category_picture,
    colorize_categories,
    load_gt_cloud,
    load_prediction_folder,
    load_prompt_list,
    read_point_cloud,
    render_topdown,
    save_category_ply,
    save_category_png,
    transfer_labels,
)

from .ol3_helpers import write_pcd, write_ply

PTS = np.array([[0.5, -1.25, 2.0], [3.0, 4.5, -0.125], [1e-3, 0.0, 7.0]])


@pytest.mark.parametrize("mode", ["ascii", "binary"])
def test_pcd(tmp_path, mode):
    path = tmp_path / "cloud.pcd"
    write_pcd(path, PTS, mode=mode)
    pts = read_point_cloud(path)
    assert pts.dtype == np.float32 and pts.shape == (3, 3)
    np.testing.assert_array_equal(pts, PTS.astype(np.float32))
    write_pcd(path, PTS, mode=mode, extra_rgb=False, dtype="f8")
    pts = read_point_cloud(path)
    assert pts.dtype == np.float64
    np.testing.assert_array_equal(pts, PTS)


def test_pcd_errors(tmp_path):
    path = tmp_path / "cloud.pcd"
    write_pcd(path, PTS, mode="binary")
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="truncated"):
        read_point_cloud(path)
    with pytest.raises(ValueError, match="unknown point cloud extension"):
        read_point_cloud(tmp_path / "cloud.xyz")


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_ply(tmp_path, fmt):
    path = tmp_path / "cloud.ply"
    write_ply(path, PTS, fmt)
    pts = read_point_cloud(path)
    assert pts.dtype == np.float64
    np.testing.assert_array_equal(pts, PTS)


def test_ply_list_property_on_vertices_is_an_error(tmp_path):
    path = tmp_path / "cloud.ply"
    path.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
                     b"property list uchar int idx\nend_header\n0 0 0 1 5\n")  # fmt: skip
    with pytest.raises(ValueError, match="list properties on the vertex element"):
        read_point_cloud(path)


def test_prompt_list(tmp_path):
    path = tmp_path / "prompt_list.txt"
    path.write_text("arm chair\n  sofa \ncounter top\n")
    assert load_prompt_list(path) == ["arm chair", "sofa", "counter top"]
    path.write_text("a\n\nb")
    with pytest.warns(UserWarning, match="1 empty prompt line"):
        assert load_prompt_list(path) == ["a", "", "b"]
    path.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_prompt_list(path)


def test_prediction_folder(tmp_path):
    folder = tmp_path / "scene"
    folder.mkdir()
    np.save(folder / "embeddings.npy", np.ones((2, 4), np.float32))
    np.save(folder / "index.npy", np.array([0, 1, 1]))
    write_ply(folder / "input.ply", PTS, "ascii")
    pts, feats, index = load_prediction_folder(folder)
    np.testing.assert_array_equal(pts, PTS)
    assert feats.shape == (2, 4) and index.tolist() == [0, 1, 1]
    write_pcd(folder / "point_cloud.pcd", PTS * 2, mode="binary", dtype="f8")  # preferred over input.ply
    np.testing.assert_array_equal(load_prediction_folder(folder)[0], PTS * 2)
    (folder / "point_cloud.pcd").unlink()
    (folder / "input.ply").rename(folder / "a.ply")
    np.testing.assert_array_equal(load_prediction_folder(folder)[0], PTS)  # the only cloud
    write_ply(folder / "b.ply", PTS, "ascii")
    with pytest.raises(ValueError, match=r"several point clouds \(a.ply, b.ply\)"):
        load_prediction_folder(folder)
    (folder / "b.ply").unlink()
    np.save(folder / "index.npy", np.array([0, 1]))
    with pytest.raises(ValueError, match="one index per point"):
        load_prediction_folder(folder)
    (folder / "embeddings.npy").unlink()
    with pytest.raises(FileNotFoundError, match=r"embeddings\.npy"):
        load_prediction_folder(folder)


def test_gt_cloud(tmp_path):
    path = tmp_path / "gt_cloud.npz"
    np.savez(path, points=PTS, object_ids=np.array([1, 2, -100]))
    pts, ids = load_gt_cloud(path)
    np.testing.assert_array_equal(pts, PTS)
    assert ids.tolist() == [1, 2, -100]
    np.savez(path, points=PTS, object_ids=np.array([1, 2]))
    with pytest.raises(ValueError, match=r"gt_cloud\.npz: `object_ids` must have length 3"):
        load_gt_cloud(path)
    np.savez(path, points=PTS)
    with pytest.raises(ValueError, match="missing array"):
        load_gt_cloud(path)


def test_transfer_labels_threshold():
    vis = np.array([[0, 0, 0.0499], [0, 0, 0.05], [0, 0, 0.0501], [1, 0, 0]])
    ids = transfer_labels(vis, np.array([[0.0, 0, 0], [1.0, 0, 0.01]]), np.array([7, 8]))
    assert ids.tolist() == [7, -1, -1, 8]
    assert transfer_labels(vis, np.zeros((1, 3)), np.array([3]), max_distance=0.06).tolist() == [3, 3, 3, -1]
    assert transfer_labels(vis, np.zeros((0, 3)), np.zeros(0, int)).tolist() == [-1] * 4
    with pytest.raises(ValueError, match="`max_distance`"):
        transfer_labels(vis, vis, np.arange(4), max_distance=0)


# ---------------------------------------------------------------------------------------------- viz


def test_colours():
    assert CATEGORY_COLORS == {
        "synonyms": (2, 158, 115),
        "depictions": (1, 115, 178),
        "vis_sim": (236, 225, 51),
        "clutter": (204, 120, 188),
        "missing": (148, 148, 148),
        "incorrect": (213, 94, 0),
        "none": (255, 255, 255),
    }
    rgb = colorize_categories(torch.tensor([-1, 0, 1, 2, 3, 4, 5], dtype=torch.int8))
    assert rgb.dtype == np.uint8
    names = ["none", "synonyms", "depictions", "vis_sim", "clutter", "missing", "incorrect"]
    assert [tuple(c) for c in rgb.tolist()] == [CATEGORY_COLORS[n] for n in names]
    with pytest.raises(ValueError, match=r"codes in \[-1, 5\]"):
        colorize_categories(np.array([0, 6]))


def test_category_ply_round_trip(tmp_path):
    path = tmp_path / "out" / "scene_top5.ply"
    codes = np.array([0, 5, -1], dtype=np.int8)
    save_category_ply(path, PTS, codes)
    np.testing.assert_array_equal(read_point_cloud(path), PTS.astype(np.float32))
    header, body = path.read_bytes().split(b"end_header\n")
    assert b"property char category" in header and b"property uchar red" in header
    rec = np.frombuffer(body, dtype=[("xyz", "<f4", 3), ("rgb", "u1", 3), ("category", "i1")])
    assert rec["category"].tolist() == [0, 5, -1]
    assert rec["rgb"].tolist() == [[2, 158, 115], [213, 94, 0], [255, 255, 255]]


def test_render_topdown():
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 5.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.5]])
    codes = np.array([0, 3, 5, 1, 2])
    img = render_topdown(pts, codes, resolution=100, point_size=1, background=(10, 20, 30))
    assert img.shape == (100, 100, 3) and img.dtype == np.uint8
    # x -> right, y -> up, 2 % margin: (0, 0) near the bottom-left corner, (1, 1) near the top-right
    assert tuple(img[98, 1]) == CATEGORY_COLORS["synonyms"]
    assert tuple(img[1, 98]) == CATEGORY_COLORS["incorrect"]  # z = 5 drawn over z = 0
    assert tuple(img[1, 1]) == CATEGORY_COLORS["depictions"]  # z = 1 over z = 0.5
    assert tuple(img[50, 50]) == (10, 20, 30)
    big = render_topdown(pts, codes, resolution=100, point_size=3)
    assert tuple(big[97, 2]) == CATEGORY_COLORS["synonyms"] and tuple(big[99, 0]) == CATEGORY_COLORS["synonyms"]
    assert render_topdown(np.zeros((0, 3)), np.zeros(0, int), resolution=8).max() == 0
    with pytest.raises(ValueError, match="`resolution`"):
        render_topdown(pts, codes, resolution=0)
    with pytest.raises(ValueError, match="`point_categories` must have length 5"):
        render_topdown(pts, codes[:2])


def test_save_png(tmp_path):
    path = tmp_path / "scene_top5.png"
    save_category_png(path, torch.tensor(PTS), torch.tensor([0, 1, 2]), resolution=64, legend=False)
    img = np.asarray(Image.open(path))
    assert img.shape == (64, 64, 3)
    assert {tuple(c) for c in img.reshape(-1, 3).tolist()} == {(0, 0, 0), (2, 158, 115), (1, 115, 178), (236, 225, 51)}


def test_category_picture_has_title_and_legend(tmp_path):
    codes = np.array([0, 0, 5, -1])
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    pic = category_picture(pts, codes, resolution=64, title="scene0 top-5")
    assert pic.title == "scene0 top-5" and pic.info["counts"]["synonyms"] == 2
    assert pic.info["counts"]["incorrect"] == 1 and pic.info["counts"]["none"] == 1
    # one legend entry per category, in the paper's colours, with the share of points
    assert [rgb for _, rgb in pic.legend] == [CATEGORY_COLORS[k] for k in (*list(CATEGORY_COLORS)[:-1], "none")]
    assert pic.legend[0][0] == "synonym (50.0 %)" and pic.legend[5][0] == "incorrect (25.0 %)"
    assert pic.legend[2][0] == "visually similar (0.0 %)" and pic.legend[6][0] == "not evaluated (25.0 %)"
    x0, y0, x1, y1 = pic.tiles[0]["box"]
    assert np.array_equal(
        pic.image[:, y0:y1, x0:x1].permute(1, 2, 0).numpy(), render_topdown(pts, codes, resolution=64)
    )
    path = tmp_path / "with_legend.png"
    save_category_png(path, pts, codes, resolution=64, title="scene0 top-5")
    assert np.array_equal(np.asarray(Image.open(path)), pic.image.permute(1, 2, 0).numpy())
