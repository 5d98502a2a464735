"""Ground-truth clouds of the OpenLex3D benchmark scenes, read from the datasets as they are distributed.

:func:`load_gt_scene` returns ``(points (N, 3) float64, ids (N,) int64)``, the form :func:`load_gt_cloud` returns and
:func:`evaluate_segmentation` / :func:`retrieval_ap` take, built exactly as the OpenLex3D toolkit builds it:

- **Replica** (``<root>/<room_0>/habitat/mesh_semantic.ply`` + ``info_semantic.json``; the scene ``office0`` lives
  in the folder ``office_0``): the mesh vertices expanded per face (every face contributes its 3 or 4 vertices, in
  face order, duplicates kept), each tagged with the face's ``object_id``; an id that ``info_semantic.json``'s
  ``objects`` does not list becomes 0. No face is dropped.
- **ScanNet++** (``<root>/prepared_semantics/<scene>.pth``, written by the ScanNet++ toolbox's
  ``prepare_training_data``): ``sampled_coords`` and ``sampled_instance_anno_id``; ``-100`` (ignore) is kept as
  stored and the evaluation never scores it. The file is a torch pickle of numpy arrays: it is read with
  ``weights_only=True`` and an allow-list of numpy's array-reconstruction functions only, never with the unsafe
  unpickler, so a file that holds anything else is refused.
- **HM3D** (the authors' pre-compiled HM3DSem-Walks layout ``<root>/<scene>/scene_info.json`` +
  ``objects/<id>.ply``): the object clouds concatenated in the order of ``scene_info.json``'s ``objects``, each
  point tagged with its object's id. A scene folder named ``<scene>-<hash>`` (as HM3D names them, e.g.
  ``00824-Dd4bFSTQ8gi``) is found from the short id ``00824``.

Example:
    >>> from scenemetrics.openlex3d import BENCHMARK_SCENES
    >>> BENCHMARK_SCENES["replica"][:3]
    ('room0', 'room1', 'room2')
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .io import read_point_cloud

__all__ = ["BENCHMARK_SCENES", "DATASETS", "load_gt_scene"]

DATASETS = ("replica", "scannetpp", "hm3d")
"""Datasets :func:`load_gt_scene` reads."""

BENCHMARK_SCENES: dict[str, tuple[str, ...]] = {
    "replica": ("room0", "room1", "room2", "office0", "office1", "office2", "office3", "office4"),
    "scannetpp": (
        "0a76e06478", "0a7cc12c0e", "1f7cbbdde1", "49a82360aa", "4c5c60fa76", "8a35ef3cfe", "c0f5742640", "fd361ab85f",
    ),
    "hm3d": ("00824", "00829", "00843", "00847", "00873", "00877", "00890"),
}  # fmt: skip
"""The scenes of the OpenLex3D benchmark, per dataset (what ``--scenes all`` evaluates)."""


def load_gt_scene(dataset: str, root: str | os.PathLike, scene: str) -> tuple[np.ndarray, np.ndarray]:
    """The ground-truth cloud of one benchmark scene: ``(points (N, 3) float64, ids (N,) int64)``.

    Args:
        dataset: ``"replica"``, ``"scannetpp"`` or ``"hm3d"``.
        root: the dataset's root folder as distributed (see the module docstring for each layout).
        scene: the scene id as the benchmark names it (``office0``, ``0a76e06478``, ``00824``).

    Raises:
        ValueError: unknown ``dataset``; a malformed file (the message names the file, what was expected and what
            was found).
        FileNotFoundError: a file of the layout is missing (named in the message).
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; received {dataset!r}")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"dataset root {root} is not a folder")
    scene = str(scene)
    loader = {"replica": _load_replica, "scannetpp": _load_scannetpp, "hm3d": _load_hm3d}[dataset]
    points, ids = loader(root, scene)
    return np.ascontiguousarray(points, dtype=np.float64), np.ascontiguousarray(ids, dtype=np.int64)


def _require(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing file")
    return path


# ---------------------------------------------------------------------------------------------------- Replica


def _replica_folder(root: Path, scene: str) -> Path:
    """``office0`` -> ``office_0`` (the toolkit's rule: an underscore before the last character)."""
    candidates = [root / f"{scene[:-1]}_{scene[-1]}"] if len(scene) > 1 else []
    candidates.append(root / scene)
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"no Replica scene folder for {scene!r}: looked for {', '.join(map(str, candidates))}")


def _load_replica(root: Path, scene: str) -> tuple[np.ndarray, np.ndarray]:
    habitat = _replica_folder(root, scene) / "habitat"
    info_path = _require(habitat / "info_semantic.json")
    mesh_path = _require(habitat / "mesh_semantic.ply")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        listed = {int(obj["id"]) for obj in info["objects"]}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{info_path}: expected JSON with a list `objects` of entries with an integer `id` ({type(err).__name__}: "
            f"{err})"
        ) from None
    vertices, faces, object_ids = _read_face_mesh(mesh_path)
    if isinstance(faces, np.ndarray):  # every face has the same number of vertices
        points = vertices[faces.reshape(-1)]
        ids = np.repeat(object_ids, faces.shape[1])
    else:
        lengths = np.fromiter((len(f) for f in faces), dtype=np.int64, count=len(faces))
        flat = np.concatenate(faces) if len(faces) else np.zeros(0, dtype=np.int64)
        points = vertices[flat]
        ids = np.repeat(object_ids, lengths)
    ids = np.where(np.isin(ids, np.fromiter(listed, dtype=np.int64, count=len(listed))), ids, 0)
    return points, ids


def _read_face_mesh(path: Path) -> tuple[np.ndarray, np.ndarray | list[np.ndarray], np.ndarray]:
    """``(vertices (V, 3), faces, face object ids)`` of a PLY mesh with per-face ``object_id`` (plyfile).

    ``faces`` is a ``(F, k)`` array when every face has ``k`` vertices (read on plyfile's fast fixed-length path and
    checked against the file's own per-face counts), else a list of index arrays.
    """
    try:
        import plyfile
    except ImportError as err:
        raise ImportError(
            f'reading Replica meshes needs plyfile: pip install "scenemetrics[openlex3d]" ({err})'
        ) from err
    try:
        ply = _read_fixed_faces(plyfile, path) or plyfile.PlyData.read(str(path))
        vertex, face = ply["vertex"], ply["face"]
        vertices = np.stack([np.asarray(vertex[c], dtype=np.float64) for c in "xyz"], axis=1)
        names = face.data.dtype.names or ()
        if "vertex_indices" not in names or "object_id" not in names:
            raise ValueError(f"the face element needs `vertex_indices` and `object_id`; it has {', '.join(names)}")
        indices = face["vertex_indices"]
        object_ids = np.asarray(face["object_id"], dtype=np.int64)
    except (plyfile.PlyParseError, KeyError, ValueError) as err:
        raise ValueError(f"{path}: not a Replica semantic mesh ({type(err).__name__}: {err})") from None
    faces = indices if indices.dtype != object else [np.asarray(f, dtype=np.int64) for f in indices]
    flat = faces.reshape(-1) if isinstance(faces, np.ndarray) else (np.concatenate(faces) if faces else [])
    if len(flat) and (int(np.min(flat)) < 0 or int(np.max(flat)) >= len(vertices)):
        raise ValueError(f"{path}: a face names a vertex outside 0..{len(vertices) - 1}")
    return vertices, faces, object_ids


def _read_fixed_faces(plyfile, path: Path):  # type: ignore[no-untyped-def]
    """The mesh read with every face assumed to have 4 (then 3) vertices, or ``None`` if that does not hold.

    plyfile reads list properties in a Python loop (minutes for a Replica mesh) unless their length is known; the
    assumption is checked against the length byte stored before every face, so a mixed mesh is never misread.
    """
    for k in (4, 3):
        try:
            ply = plyfile.PlyData.read(str(path), known_list_len={"face": {"vertex_indices": k}})
        except Exception:  # any parse failure just means the assumption does not hold
            continue
        if _face_lengths_are(ply, path, k):
            return ply
    return None


def _face_lengths_are(ply, path: Path, k: int) -> bool:  # type: ignore[no-untyped-def]
    if ply.text or ply.elements[-1].name != "face":
        return False
    face = ply["face"]
    props = face.properties
    endian = "<" if ply.byte_order in ("<", "=") else ">"
    fields = []
    for prop in props:
        if getattr(prop, "len_dtype", None) is not None:  # the list: its length, then k values
            fields.append(("_len_" + prop.name, endian + prop.len_dtype))
            fields.append((prop.name, endian + prop.val_dtype, (k,)))
        else:
            fields.append((prop.name, endian + prop.val_dtype))
    record = np.dtype(fields)
    size = path.stat().st_size
    offset = size - face.count * record.itemsize
    if offset < 0:
        return False
    block = np.memmap(path, dtype=record, mode="r", offset=offset, shape=(face.count,))
    return all(bool(np.all(block["_len_" + p.name] == k)) for p in props if getattr(p, "len_dtype", None) is not None)


# ---------------------------------------------------------------------------------------------------- ScanNet++


def _load_scannetpp(root: Path, scene: str) -> tuple[np.ndarray, np.ndarray]:
    import pickle

    import torch

    from scenemetrics.hub import numpy_safe_globals

    path = _require(root / "prepared_semantics" / f"{scene}.pth")
    try:
        with torch.serialization.safe_globals(numpy_safe_globals()):
            data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise ValueError(
            f"{path}: refused to load: it holds objects other than numpy arrays and plain containers, which are "
            f"never unpickled ({str(err).splitlines()[0]})"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a dict of arrays; found {type(data).__name__}")
    missing = [k for k in ("sampled_coords", "sampled_instance_anno_id") if k not in data]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)} (found keys {', '.join(map(str, data))})")
    points = np.asarray(data["sampled_coords"])
    ids = np.asarray(data["sampled_instance_anno_id"])
    if points.ndim != 2 or points.shape[1] != 3 or points.dtype.kind not in "fiu":
        raise ValueError(f"{path}: sampled_coords must be a numeric (N, 3) array; found {points.dtype} {points.shape}")
    if ids.shape != (len(points),) or ids.dtype.kind not in "iu":
        raise ValueError(
            f"{path}: sampled_instance_anno_id must be an integer ({len(points)},) array; found {ids.dtype} {ids.shape}"
        )
    return points, ids


# ---------------------------------------------------------------------------------------------------- HM3D


def _hm3d_folder(root: Path, scene: str) -> Path:
    if (root / scene).is_dir():
        return root / scene
    matches = sorted(p for p in root.glob(f"{scene}-*") if p.is_dir())
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ValueError(f"several HM3D folders match scene {scene!r}: {', '.join(p.name for p in matches)}")
    raise FileNotFoundError(f"no HM3D scene folder {root / scene} (nor {root}/{scene}-*)")


def _load_hm3d(root: Path, scene: str) -> tuple[np.ndarray, np.ndarray]:
    folder = _hm3d_folder(root, scene)
    info_path = _require(folder / "scene_info.json")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        object_ids = [int(obj["id"]) for obj in info["objects"]]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{info_path}: expected JSON with a list `objects` of entries with an integer `id` ({type(err).__name__}: "
            f"{err})"
        ) from None
    if not object_ids:
        raise ValueError(f"{info_path}: `objects` is empty")
    points, ids = [], []
    for oid in object_ids:
        cloud = read_point_cloud(_require(folder / "objects" / f"{oid}.ply"))
        points.append(cloud)
        ids.append(np.full(len(cloud), oid, dtype=np.int64))
    return np.concatenate(points), np.concatenate(ids)
