"""The benchmark's ground truth read from the datasets as distributed (Replica, ScanNet++, HM3D) and compressed PCD.

Fixtures are built here in each dataset's official layout (Replica's habitat mesh written with plyfile, the ScanNet++
toolbox's ``torch.save`` of numpy arrays, HM3DSem-Walks' ``scene_info.json`` + object PLYs); expected clouds are
computed by plain per-face / per-object loops, independently of the vectorised loaders.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

from scenemetrics.openlex3d import BENCHMARK_SCENES, load_gt_scene, read_point_cloud

from .ol3_helpers import write_pcd, write_ply

plyfile = pytest.importorskip("plyfile", reason="the [openlex3d] extra (plyfile) reads Replica meshes")

RNG = np.random.default_rng(0)


def write_replica(root, folder, vertices, faces, object_ids, listed, *, text=False):
    habitat = root / folder / "habitat"
    habitat.mkdir(parents=True)
    vert = np.zeros(len(vertices), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("nx", "f4"), ("ny", "f4"),
                                          ("nz", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])  # fmt: skip
    for i, c in enumerate("xyz"):
        vert[c] = vertices[:, i]
    face = np.empty(len(faces), dtype=[("vertex_indices", "O"), ("object_id", "i4")])
    face["vertex_indices"] = [np.asarray(f, dtype=np.int32) for f in faces]
    face["object_id"] = object_ids
    el_face = plyfile.PlyElement.describe(
        face, "face", val_types={"vertex_indices": "i4"}, len_types={"vertex_indices": "u1"}
    )
    plyfile.PlyData([plyfile.PlyElement.describe(vert, "vertex"), el_face], text=text).write(
        str(habitat / "mesh_semantic.ply")
    )
    objects = [{"id": int(i), "class_id": 100 + int(i)} for i in listed]
    (habitat / "info_semantic.json").write_text(json.dumps({"classes": [], "objects": objects}))


def expected_replica(vertices, faces, object_ids, listed):
    points, ids = [], []
    for face, oid in zip(faces, object_ids, strict=True):
        for v in face:
            points.append(vertices[v].astype(np.float32).astype(np.float64))
            ids.append(oid if oid in listed else 0)
    return np.array(points), np.array(ids)


@pytest.mark.parametrize(("face_sizes", "text"), [((4,), False), ((3,), False), ((3, 4), False), ((4,), True)])
def test_replica_vertices_expanded_per_face(tmp_path, face_sizes, text):
    vertices = RNG.normal(size=(30, 3))
    faces = [RNG.choice(30, size=face_sizes[i % len(face_sizes)], replace=False) for i in range(40)]
    object_ids = RNG.integers(0, 6, size=40)
    listed = [1, 2, 3]  # 4 and 5 are not listed -> 0
    write_replica(tmp_path, "office_0", vertices, faces, object_ids, listed, text=text)
    points, ids = load_gt_scene("replica", tmp_path, "office0")
    exp_points, exp_ids = expected_replica(vertices, faces, object_ids, listed)
    assert points.dtype == np.float64 and ids.dtype == np.int64
    assert points.shape == (sum(len(f) for f in faces), 3)
    np.testing.assert_array_equal(points, exp_points)
    np.testing.assert_array_equal(ids, exp_ids)
    assert set(np.unique(ids)) <= {0, 1, 2, 3} and (ids == 0).any()


def test_replica_room_folder_and_errors(tmp_path):
    vertices = RNG.normal(size=(4, 3))
    write_replica(tmp_path, "room_1", vertices, [[0, 1, 2, 3]], [7], [7])
    points, ids = load_gt_scene("replica", tmp_path, "room1")
    assert points.shape == (4, 3)
    assert ids.tolist() == [7, 7, 7, 7]
    with pytest.raises(FileNotFoundError, match="office_2"):
        load_gt_scene("replica", tmp_path, "office2")
    (tmp_path / "room_1" / "habitat" / "info_semantic.json").write_text('{"objects": [{"name": 3}]}')
    with pytest.raises(ValueError, match=r"info_semantic\.json: expected JSON with a list `objects`"):
        load_gt_scene("replica", tmp_path, "room1")
    (tmp_path / "room_1" / "habitat" / "mesh_semantic.ply").unlink()
    with pytest.raises(FileNotFoundError, match=r"mesh_semantic\.ply: missing file"):
        load_gt_scene("replica", tmp_path, "room1")


def test_replica_face_without_object_id_is_named(tmp_path):
    habitat = tmp_path / "room_0" / "habitat"
    habitat.mkdir(parents=True)
    vert = np.zeros(3, dtype=[("x", "f4"), ("y", "f4"), ("z", "f4")])
    face = np.array([([0, 1, 2],)], dtype=[("vertex_indices", "i4", (3,))])
    plyfile.PlyData([plyfile.PlyElement.describe(vert, "vertex"), plyfile.PlyElement.describe(face, "face")]).write(
        str(habitat / "mesh_semantic.ply")
    )
    (habitat / "info_semantic.json").write_text('{"objects": []}')
    with pytest.raises(ValueError, match=r"mesh_semantic\.ply: not a Replica semantic mesh.*object_id"):
        load_gt_scene("replica", tmp_path, "room0")


def write_scannetpp(root, scene, coords, ids):
    folder = root / "prepared_semantics"
    folder.mkdir(parents=True, exist_ok=True)
    # what the ScanNet++ toolbox's prepare_training_data writes: torch.save of a dict of numpy arrays
    data = {
        "scene_id": scene,
        "sampled_coords": coords,
        "sampled_colors": RNG.random(coords.shape).astype(np.float32),
        "sampled_labels": np.zeros(len(coords), dtype=np.int64),
        "sampled_instance_anno_id": ids,
    }
    torch.save(data, folder / f"{scene}.pth")


def test_scannetpp_prepared_semantics_keeps_ignore_label(tmp_path):
    coords = RNG.normal(size=(50, 3)).astype(np.float32)
    ids = RNG.integers(0, 5, size=50)
    ids[::7] = -100
    write_scannetpp(tmp_path, "0a76e06478", coords, ids)
    points, got = load_gt_scene("scannetpp", tmp_path, "0a76e06478")
    np.testing.assert_array_equal(points, coords.astype(np.float64))
    np.testing.assert_array_equal(got, ids)
    assert (got == -100).sum() == len(ids[::7])


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_scannetpp_never_unpickles_other_objects(tmp_path):
    folder = tmp_path / "prepared_semantics"
    folder.mkdir()
    marker = tmp_path / "payload_ran"
    data = {"sampled_coords": np.zeros((2, 3)), "sampled_instance_anno_id": np.zeros(2, dtype=np.int64),
            "extra": _Payload(marker)}  # fmt: skip
    with open(folder / "evil.pth", "wb") as f:
        pickle.dump(data, f)  # a legacy (non-zip) torch file
    torch.save(data, folder / "evil2.pth")
    for scene in ("evil", "evil2"):
        with pytest.raises(ValueError, match=f"{scene}.pth: refused to load"):
            load_gt_scene("scannetpp", tmp_path, scene)
    assert not marker.exists()


def test_scannetpp_malformed(tmp_path):
    write_scannetpp(tmp_path, "s1", np.zeros((4, 2)), np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match=r"s1\.pth: sampled_coords must be a numeric \(N, 3\) array"):
        load_gt_scene("scannetpp", tmp_path, "s1")
    write_scannetpp(tmp_path, "s2", np.zeros((4, 3)), np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"s2\.pth: sampled_instance_anno_id must be an integer \(4,\) array"):
        load_gt_scene("scannetpp", tmp_path, "s2")
    torch.save({"coords": np.zeros((1, 3))}, tmp_path / "prepared_semantics" / "s3.pth")
    with pytest.raises(ValueError, match=r"s3\.pth: missing sampled_coords, sampled_instance_anno_id"):
        load_gt_scene("scannetpp", tmp_path, "s3")
    with pytest.raises(FileNotFoundError, match=r"prepared_semantics/s4\.pth: missing file"):
        load_gt_scene("scannetpp", tmp_path, "s4")


def test_hm3d_concatenates_object_clouds_in_scene_info_order(tmp_path):
    folder = tmp_path / "00824-Dd4bFSTQ8gi"
    (folder / "objects").mkdir(parents=True)
    clouds = {12: RNG.normal(size=(5, 3)), 3: RNG.normal(size=(2, 3)), 40: RNG.normal(size=(4, 3))}
    for i, (oid, pts) in enumerate(clouds.items()):
        write_ply(folder / "objects" / f"{oid}.ply", pts, ["ascii", "binary_little_endian", "binary_big_endian"][i])
    info = {"levels": [], "regions": [], "objects": [{"id": oid, "category": "x", "region_id": 0} for oid in clouds]}
    (folder / "scene_info.json").write_text(json.dumps(info))
    points, ids = load_gt_scene("hm3d", tmp_path, "00824")
    np.testing.assert_array_equal(points, np.concatenate(list(clouds.values())))
    assert ids.tolist() == [12] * 5 + [3] * 2 + [40] * 4
    (folder / "objects" / "3.ply").unlink()
    with pytest.raises(FileNotFoundError, match=r"objects/3\.ply: missing file"):
        load_gt_scene("hm3d", tmp_path, "00824")
    with pytest.raises(FileNotFoundError, match="no HM3D scene folder"):
        load_gt_scene("hm3d", tmp_path, "00829")


def test_bad_dataset_and_root(tmp_path):
    with pytest.raises(ValueError, match="dataset must be one of replica, scannetpp, hm3d; received 'scannet'"):
        load_gt_scene("scannet", tmp_path, "x")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load_gt_scene("hm3d", tmp_path / "nope", "00824")


def test_benchmark_scene_lists():
    assert len(BENCHMARK_SCENES["replica"]) == 8 and len(BENCHMARK_SCENES["scannetpp"]) == 8
    assert BENCHMARK_SCENES["hm3d"] == ("00824", "00829", "00843", "00847", "00873", "00877", "00890")


# ------------------------------------------------------------------------------------ binary_compressed PCD


def lzf_literals(raw: bytes) -> bytes:
    """A valid LZF stream made only of literal runs (control byte ``n-1`` then ``n <= 32`` bytes): the format's
    simplest form, written here without the codec so the reader is checked against the format, not itself."""
    return b"".join(bytes([len(raw[i : i + 32]) - 1]) + raw[i : i + 32] for i in range(0, len(raw), 32))


def write_compressed_pcd(path, points, *, codec):
    header = (
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F U\n"
        f"COUNT 1 1 1 1\nWIDTH {len(points)}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {len(points)}\n"
        "DATA binary_compressed\n"
    )
    columns = [points[:, i].astype("<f4").tobytes() for i in range(3)] + [np.full(len(points), 7, "<u4").tobytes()]
    raw = b"".join(columns)  # PCL stores the fields one after the other (all x, then all y, ...)
    payload = codec(raw)
    path.write_bytes(header.encode() + np.array([len(payload), len(raw)], "<u4").tobytes() + payload)


@pytest.mark.parametrize("codec", ["literal", "lzf"])
def test_binary_compressed_pcd(tmp_path, codec):
    lzf = pytest.importorskip("lzf", reason="the [openlex3d] extra (python-lzf) reads binary_compressed PCD")
    points = RNG.normal(size=(100, 3))
    path = tmp_path / "point_cloud.pcd"
    write_compressed_pcd(path, points, codec=lzf_literals if codec == "literal" else lzf.compress)
    got = read_point_cloud(path)
    np.testing.assert_array_equal(got, points.astype(np.float32))


def test_binary_compressed_pcd_errors(tmp_path):
    pytest.importorskip("lzf", reason="the [openlex3d] extra (python-lzf) reads binary_compressed PCD")
    path = tmp_path / "cloud.pcd"
    write_compressed_pcd(path, RNG.normal(size=(10, 3)), codec=lzf_literals)
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with pytest.raises(ValueError, match=r"cloud\.pcd: truncated binary_compressed PCD"):
        read_point_cloud(path)
    write_pcd(path, RNG.normal(size=(10, 3)), mode="binary_compressed")  # uncompressed records after the header
    with pytest.raises(ValueError, match=r"binary_compressed PCD declares \d+ bytes of data; 10 points need"):
        read_point_cloud(path)
