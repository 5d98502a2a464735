"""Tiny files that lie: every reader checks declared counts against the file's size before looping or allocating,
and fails naming the file and the count (PLY, PCD, NPY/NPZ), and odd text (deep JSON, huge CSV fields, huge OBJ
indices, a spreadsheet's byte-order mark) is a ValueError naming the file, never a hang or a crash."""

from __future__ import annotations

import io
import json
import time
import zipfile

import numpy as np
import pytest

from scenemetrics.fileio import check_count, load_npy, load_npz
from scenemetrics.openlex3d.io import load_gt_cloud, load_prediction_folder, read_point_cloud


def _fast(fn, *args):
    """Run ``fn(*args)``, which must raise ValueError within a second of CPU; returns the message.

    CPU time, not wall time: a loaded machine stretches the second, a loop over a declared 1e9+ count does not fit.
    """
    start = time.process_time()
    with pytest.raises(ValueError) as info:
        fn(*args)
    assert time.process_time() - start < 1.0, "the reader looped over the declared count"
    return str(info.value)


PLY_HEAD = "ply\nformat {fmt} 1.0\n"


def test_ascii_ply_declaring_1e11_faces_before_its_vertices(tmp_path):
    """The issue's probe: a readline loop over 1e11 declared faces hung `openlex3d eval`."""
    path = tmp_path / "point_cloud.ply"
    faces = "element face 100000000000\nproperty list uchar int vertex_indices\n"
    path.write_text(PLY_HEAD.format(fmt="ascii") + faces + "element vertex 1\nproperty float x\nproperty float y\n"
                    "property float z\nend_header\n0 0 0\n")  # fmt: skip
    message = _fast(read_point_cloud, path)
    assert str(path) in message and "100000000000 'face' elements" in message


def test_ascii_ply_declaring_1e11_vertices(tmp_path):
    """The list of 1e11 empty lines grew memory without bound; now the count is refused at once."""
    path = tmp_path / "p.ply"
    path.write_text(PLY_HEAD.format(fmt="ascii") + "element vertex 100000000000\nproperty float x\nproperty float y\n"
                    "property float z\nend_header\n0 0 0\n1 1 1\n")  # fmt: skip
    message = _fast(read_point_cloud, path)
    assert "100000000000 'vertex' elements" in message and "only 12 bytes follow the header" in message


def test_binary_ply_and_negative_counts(tmp_path):
    path = tmp_path / "p.ply"
    head = PLY_HEAD.format(fmt="binary_little_endian") + "element vertex {n}\nproperty float x\nproperty float y\n"
    head += "property float z\nend_header\n"
    path.write_bytes(head.format(n=10**12).encode() + np.zeros((2, 3), "<f4").tobytes())
    assert "1000000000000 'vertex' elements, which need at least 12000000000000 bytes" in _fast(read_point_cloud, path)
    path.write_bytes(head.format(n=-5).encode())
    assert "negative count" in _fast(read_point_cloud, path)
    path.write_bytes(head.format(n=2).encode() + np.arange(6, dtype="<f4").tobytes())  # an honest file still reads
    assert read_point_cloud(path).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_a_lying_ply_in_a_prediction_folder(tmp_path):
    (tmp_path / "point_cloud.ply").write_text(
        PLY_HEAD.format(fmt="ascii") + "element vertex 99999999999\nproperty float x\nproperty float y\n"
        "property float z\nend_header\n0 0 0\n"
    )
    np.save(tmp_path / "embeddings.npy", np.zeros((1, 4), np.float32))
    np.save(tmp_path / "index.npy", np.zeros(1, np.int64))
    assert "99999999999 'vertex' elements" in _fast(load_prediction_folder, tmp_path)


@pytest.mark.parametrize("mode", ["ascii", "binary"])
def test_pcd_declaring_more_points_than_the_file_holds(tmp_path, mode):
    path = tmp_path / "c.pcd"
    head = (f"# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 50000000000\n"
            f"HEIGHT 1\nPOINTS 50000000000\nDATA {mode}\n")  # fmt: skip
    body = b"0 0 0\n" if mode == "ascii" else np.zeros(3, "<f4").tobytes()
    path.write_bytes(head.encode() + body)
    message = _fast(read_point_cloud, path)
    assert str(path) in message and "50000000000 points" in message


@pytest.mark.extra("openlex3d")
def test_binary_compressed_pcd_bound_by_lzf(tmp_path):
    """A body declaring 1 GiB of points in 16 compressed bytes is refused before any decompression buffer exists."""
    n = (1 << 30) // 12
    head = (f"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\nPOINTS {n}\n"
            "DATA binary_compressed\n")  # fmt: skip
    path = tmp_path / "c.pcd"
    path.write_bytes(head.encode() + np.array([16, n * 12], "<u4").tobytes() + bytes(16))
    message = _fast(read_point_cloud, path)
    assert f"{n} points" in message and "more than LZF can expand" in message


def _npy(shape, data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def test_an_npz_ground_truth_cloud_with_lying_shapes(tmp_path):
    """A 300-byte ground-truth .npz whose members declare 10^9 points: refused from the headers, naming the member."""
    with zipfile.ZipFile(tmp_path / "g.npz", "w") as zf:
        zf.writestr("points.npy", _npy((10**9, 3), bytes(64)))
        zf.writestr("object_ids.npy", _npy((10**9,), bytes(64)))
    message = _fast(load_gt_cloud, tmp_path / "g.npz")
    assert "g.npz member 'points.npy'" in message and "shape (1000000000, 3)" in message


def test_npy_and_npz_with_lying_shapes(tmp_path):
    (tmp_path / "a.npy").write_bytes(_npy((10**9,), bytes(64)))
    assert "shape (1000000000,)" in _fast(load_npy, tmp_path / "a.npy")
    np.savez(tmp_path / "ok.npz", x=np.arange(3.0))
    assert load_npz(tmp_path / "ok.npz")["x"].tolist() == [0.0, 1.0, 2.0]
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert "Python objects" in _fast(load_npy, tmp_path / "obj.npy")
    (tmp_path / "junk.npz").write_bytes(b"PK not really")
    assert "not a NumPy .npz" in _fast(load_npz, tmp_path / "junk.npz")


def test_check_count():
    assert check_count(3, path="f", what="rows", min_bytes=4, available=12) == 3
    with pytest.raises(ValueError, match="f: the header declares 4 rows, which need at least 16 bytes"):
        check_count(4, path="f", what="rows", min_bytes=4, available=12)
    with pytest.raises(ValueError, match="'x' rows, not a count"):
        check_count("x", path="f", what="rows", min_bytes=1, available=1)


def test_an_obj_with_a_huge_index(tmp_path):
    from scenemetrics.wireframe import read_obj_wireframe

    obj = tmp_path / "w.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nl 1 " + "9" * 100 + "\n")
    assert "names a vertex outside 1..2" in _fast(read_obj_wireframe, obj)  # not an OverflowError


def test_json_lines_nested_too_deep(tmp_path):
    from scenemetrics.wireframe import read_s23dr

    deep = tmp_path / "s.jsonl"
    deep.write_text("[" * 200_000 + "]" * 200_000 + "\n")
    assert "RecursionError" in _fast(read_s23dr, deep) and str(deep) in _fast(read_s23dr, deep)


def test_a_csv_with_a_huge_field_and_deep_json_scores(tmp_path):
    from scenemetrics.agreement import read_scores

    huge = tmp_path / "scores.csv"
    huge.write_text('item,metric,score\na,psnr,"' + "9" * 200_000 + '"\n')
    assert "not a CSV table" in _fast(read_scores, huge)
    nested = tmp_path / "scores.json"
    nested.write_text('{"metrics": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert "not valid JSON" in _fast(read_scores, nested)


def test_a_csv_with_a_byte_order_mark(tmp_path):
    """Spreadsheets write UTF-8 CSV with a BOM: it used to end up in the first column's name ("missing ['item']")."""
    from scenemetrics.agreement import read_human, read_scores

    path = tmp_path / "scores.csv"
    path.write_bytes("\ufeffitem,metric,score\na,psnr,30\nb,psnr,25\n".encode())
    scores = read_scores(path)["psnr"]
    assert scores.items == ["a", "b"] and scores.scores.tolist() == [30.0, 25.0]
    human = tmp_path / "human.csv"
    human.write_bytes("\ufeffitem,human\na,4.5\nb,2\n".encode())
    assert read_human(human) == {"a": 4.5, "b": 2.0}
    assert json.loads(json.dumps(read_human(human))) == {"a": 4.5, "b": 2.0}
