"""Posed views with depth: :class:`Camera`, :class:`ViewSet` and the ``transforms.json`` reader.

Conventions (nerfstudio / Blender NeRF): a camera-to-world matrix in OpenGL axes (x right, y up, the camera looks
along -z), a z-up world with the object at the origin, pinhole intrinsics in pixels. Pixel ``(u, v)`` (column, row;
row 0 at the top) covers ``[u, u+1) x [v, v+1)``; a camera-space point ``(X, Y, Z)`` with z-depth ``d = -Z > 0``
lands at ``(cx + fx X / d, cy - fy Y / d)``. Depth maps hold z-depth in world units; a pixel without surface has a
depth that is ``<= 0``, not finite, or ``>= far``.

Example:
    >>> import numpy as np
    >>> from scenemetrics.prism.viewmatch import Camera
    >>> cam = Camera(np.eye(4), fx=100.0, fy=100.0, cx=32.0, cy=32.0)
    >>> uv, d = cam.project(np.array([[0.0, 0.0, -2.0]]))
    >>> uv.tolist(), d.tolist()
    ([[32.0, 32.0]], [2.0])
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scenemetrics.fileio import load_npy

__all__ = [
    "Camera",
    "MissingDepthError",
    "ViewSet",
    "find_objects",
    "import_cv2",
    "load_depth",
    "read_transforms",
]

_DISTORTION = ("k1", "k2", "k3", "k4", "p1", "p2")
_DEPTH_EXTS = (".npy", ".exr", ".png")


def import_cv2() -> Any:
    """Import OpenCV (with OpenEXR reading enabled), or raise an ``ImportError`` naming the extra."""
    os.environ.setdefault("OPENCV_IO_ENABLE_OPENEXR", "1")
    try:
        import cv2
    except ImportError as err:  # pragma: no cover - the extra is installed in the test environment
        raise ImportError(
            "ViewMatch masks and view files need OpenCV: pip install 'scenemetrics[inpaint]' "
            "(opencv-python-headless is missing)"
        ) from err
    return cv2


class MissingDepthError(FileNotFoundError):
    """A view has no depth map (neither ``depth_file_path`` nor ``<image stem>_depth.{npy,exr,png}``)."""


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: ``c2w`` (4x4 camera-to-world, OpenGL axes, world units) and intrinsics in pixels.

    Args:
        c2w: camera-to-world matrix (the camera centre is its translation column).
        fx, fy: focal lengths in pixels.
        cx, cy: principal point in pixels (``W/2, H/2`` for a centred camera).
    """

    c2w: np.ndarray
    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        c2w = np.asarray(self.c2w, dtype=np.float64)
        if c2w.shape != (4, 4) or not np.isfinite(c2w).all():
            raise ValueError(f"Camera `c2w` must be a finite 4x4 matrix; received shape {c2w.shape}")
        object.__setattr__(self, "c2w", c2w)
        for name in ("fx", "fy", "cx", "cy"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or (name in ("fx", "fy") and value <= 0):
                raise ValueError(f"Camera `{name}` must be finite (and positive for focal lengths); received {value}")
            object.__setattr__(self, name, value)

    @property
    def center(self) -> np.ndarray:
        """The camera centre in world coordinates, ``(3,)``."""
        return self.c2w[:3, 3]

    @property
    def w2c(self) -> np.ndarray:
        """World-to-camera matrix."""
        return np.linalg.inv(self.c2w)

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Continuous pixel positions ``(N, 2)`` (u, v) and z-depths ``(N,)`` of world points ``(N, 3)``.

        Points behind the camera get a depth ``<= 0`` (their positions are meaningless).
        """
        w2c = self.w2c
        cam = points @ w2c[:3, :3].T + w2c[:3, 3]
        d = -cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.cx + self.fx * cam[:, 0] / d
            v = self.cy - self.fy * cam[:, 1] / d
        return np.stack([u, v], axis=1), d

    def pixel_directions(self, height: int, width: int) -> np.ndarray:
        """Camera-space directions ``(H, W, 3)`` through the pixel centres, scaled to z-depth 1 (``z = -1``)."""
        u = (np.arange(width) + 0.5 - self.cx) / self.fx
        v = -(np.arange(height) + 0.5 - self.cy) / self.fy
        uu, vv = np.meshgrid(u, v)
        return np.stack([uu, vv, -np.ones_like(uu)], axis=-1)

    def unproject(self, rows: np.ndarray, cols: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """World points ``(N, 3)`` of the pixel centres ``(rows, cols)`` at z-depths ``depth``."""
        x = (cols + 0.5 - self.cx) / self.fx * depth
        y = -(rows + 0.5 - self.cy) / self.fy * depth
        cam = np.stack([x, y, -depth], axis=1)
        return cam @ self.c2w[:3, :3].T + self.c2w[:3, 3]


def _valid_depth(depth: np.ndarray, far: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(depth) & (depth > 0) & (depth < far)


@dataclass
class ViewSet:
    """The posed views of one object: RGB(A) images, z-depth maps and cameras (the input of the dataset builder).

    Non-square views are padded symmetrically to a square (white, alpha 0, no depth; ``cx``/``cy`` shifted), since
    Zero123 inputs are square. Silhouettes are ``alpha > 0.5`` when the images have alpha, else valid depth; pixels
    inside the silhouette without valid depth are dropped from it with a ``UserWarning``.

    Args:
        object_id: the object's name (its output folder).
        images: ``(H, W, 3|4)`` arrays, uint8 or uint16 (or float in [0, 1]); one size for all views.
        depths: ``(H, W)`` z-depth maps in world units (the units of the camera translations).
        cameras: one :class:`Camera` per view.
        names: view ids (default: the index zero-padded to 3 digits).
        depth_quantum: quantisation step of the depth maps (16-bit PNG: ``depth_unit_scale_factor``; float
            formats: 0); the default depth-test tolerance is twice this.
        far: depths ``>= far`` mean "no surface".

    Raises:
        ValueError: inconsistent lengths, sizes or dtypes, or duplicate names.

    Example:
        >>> import numpy as np
        >>> from scenemetrics.prism.viewmatch import Camera, ViewSet
        >>> cam = Camera(np.eye(4), 10.0, 10.0, 4.0, 3.0)
        >>> vs = ViewSet("obj", [np.zeros((6, 8, 3), np.uint8)] * 2, [np.ones((6, 8))] * 2, [cam, cam])
        >>> vs.size, vs.names, vs.cameras[0].cy
        (8, ['000', '001'], 4.0)
    """

    object_id: str
    images: list[np.ndarray]
    depths: list[np.ndarray]
    cameras: list[Camera]
    names: list[str] | None = None
    depth_quantum: float = 0.0
    far: float = 1e4
    _silhouettes: list[np.ndarray] | None = field(default=None, init=False, repr=False)
    _bound: tuple[np.ndarray, float] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.images)
        if not (len(self.depths) == len(self.cameras) == n):
            raise ValueError(
                f"ViewSet {self.object_id!r}: images, depths and cameras must have one entry per view; received "
                f"{n}, {len(self.depths)} and {len(self.cameras)}"
            )
        if self.names is None:
            self.names = [f"{i:03d}" for i in range(n)]
        if len(self.names) != n or len(set(self.names)) != n:
            raise ValueError(f"ViewSet {self.object_id!r}: `names` must be {n} distinct ids; received {self.names}")
        if not (self.far > 0):
            raise ValueError(f"`far` must be positive; received {self.far}")
        images, depths = [], []
        for i, (img, dep) in enumerate(zip(self.images, self.depths, strict=True)):
            img, dep = np.asarray(img), np.asarray(dep, dtype=np.float64)
            where = f"ViewSet {self.object_id!r}, view {self.names[i]!r}"
            if img.ndim != 3 or img.shape[2] not in (3, 4):
                raise ValueError(f"{where}: images must be (H, W, 3|4); received {img.shape}")
            if dep.shape != img.shape[:2]:
                raise ValueError(f"{where}: depth of shape {dep.shape} does not match the image size {img.shape[:2]}")
            images.append(_to_uint8(img, where))
            depths.append(dep)
        if len({im.shape for im in images}) > 1:
            raise ValueError(f"ViewSet {self.object_id!r}: all views must have one size and channel count")
        if n and images[0].shape[0] != images[0].shape[1]:
            images, depths, cams = _pad_square(images, depths, self.cameras)
            self.cameras = cams
        self.images, self.depths = images, depths

    @property
    def size(self) -> int:
        """The (square) side of the views in pixels."""
        return int(self.images[0].shape[0]) if self.images else 0

    def __len__(self) -> int:
        return len(self.images)

    @property
    def has_alpha(self) -> bool:
        return bool(self.images) and self.images[0].shape[2] == 4

    def valid_depth(self, i: int) -> np.ndarray:
        """Boolean map of pixels with a surface in view ``i``."""
        return _valid_depth(self.depths[i], self.far)

    @property
    def silhouettes(self) -> list[np.ndarray]:
        """Boolean silhouette per view (computed once; warns about silhouette pixels without depth)."""
        if self._silhouettes is None:
            out = []
            for i in range(len(self)):
                valid = self.valid_depth(i)
                if self.has_alpha:
                    sil = self.images[i][..., 3] > 127  # alpha > 0.5 of 255
                    missing = int((sil & ~valid).sum())
                    if missing:
                        warnings.warn(
                            f"object {self.object_id!r}, view {self.names[i]!r}: {missing} silhouette pixels have no "
                            "valid depth and are dropped from the silhouette",
                            UserWarning,
                            stacklevel=2,
                        )
                    sil = sil & valid
                else:
                    sil = valid
                out.append(sil)
            self._silhouettes = out
        return self._silhouettes

    def over_white(self, i: int) -> np.ndarray:
        """View ``i`` as ``(H, W, 3)`` uint8 RGB composited over white."""
        img = self.images[i]
        if img.shape[2] == 3:
            return img.copy()
        a = img[..., 3:4].astype(np.float64) / 255.0
        rgb = img[..., :3].astype(np.float64) * a + 255.0 * (1.0 - a)
        return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)

    def surface_points(self, i: int) -> np.ndarray:
        """World points ``(N, 3)`` of the silhouette pixels of view ``i``."""
        rows, cols = np.nonzero(self.silhouettes[i])
        return self.cameras[i].unproject(rows.astype(np.float64), cols.astype(np.float64), self.depths[i][rows, cols])

    def bound(self) -> tuple[np.ndarray, float]:
        """Bounding sphere ``(centre, R)``: the centre of the surface points' box and 1.5 x their largest distance."""
        if self._bound is None:
            pts = [self.surface_points(i) for i in range(len(self))]
            allp = np.concatenate(pts) if pts else np.zeros((0, 3))
            if len(allp) == 0:
                self._bound = (np.zeros(3), 0.0)
            else:
                c = 0.5 * (allp.min(axis=0) + allp.max(axis=0))
                self._bound = (c, 1.5 * float(np.linalg.norm(allp - c, axis=1).max()))
        return self._bound


def _to_uint8(img: np.ndarray, where: str) -> np.ndarray:
    if img.dtype == np.uint8:
        return img
    if img.dtype == np.uint16:
        return np.rint(img.astype(np.float64) / 257.0).astype(np.uint8)
    if np.issubdtype(img.dtype, np.floating):
        if not np.isfinite(img).all() or img.min() < 0 or img.max() > 1:
            raise ValueError(f"{where}: float images must be finite and in [0, 1]")
        return np.rint(img * 255.0).astype(np.uint8)
    raise ValueError(f"{where}: images must be uint8, uint16 or float in [0, 1]; received {img.dtype}")


def _pad_square(
    images: list[np.ndarray], depths: list[np.ndarray], cameras: Sequence[Camera]
) -> tuple[list[np.ndarray], list[np.ndarray], list[Camera]]:
    h, w = images[0].shape[:2]
    side = max(h, w)
    top, left = (side - h) // 2, (side - w) // 2
    out_i, out_d, out_c = [], [], []
    for img, dep, cam in zip(images, depths, cameras, strict=True):
        canvas = np.full((side, side, img.shape[2]), 255, np.uint8)
        if img.shape[2] == 4:
            canvas[..., 3] = 0
        canvas[top : top + h, left : left + w] = img
        dcanvas = np.zeros((side, side), np.float64)
        dcanvas[top : top + h, left : left + w] = dep
        out_i.append(canvas)
        out_d.append(dcanvas)
        out_c.append(Camera(cam.c2w, cam.fx, cam.fy, cam.cx + left, cam.cy + top))
    return out_i, out_d, out_c


# ---------------------------------------------------------------------------------------------------------------
# files


def find_objects(views: str | os.PathLike) -> list[Path]:
    """Object folders under ``views``: itself when it holds ``transforms.json``, else its sorted sub-folders that do.

    Raises:
        FileNotFoundError: ``views`` does not exist or no ``transforms.json`` is found.
    """
    root = Path(views)
    if not root.is_dir():
        raise FileNotFoundError(f"--views folder {os.fspath(views)!r} does not exist")
    if (root / "transforms.json").is_file():
        return [root]
    found = sorted(p for p in root.iterdir() if p.is_dir() and (p / "transforms.json").is_file())
    if not found:
        raise FileNotFoundError(
            f"--views folder {os.fspath(views)!r} holds no transforms.json (neither itself nor its sub-folders)"
        )
    return found


def load_depth(
    path: str | os.PathLike, *, scale: float | None = None, png_scale: float = 0.001
) -> tuple[np.ndarray, float]:
    """Read a depth map: ``.npy`` (float, scale 1), 16-bit ``.png`` (raw x ``png_scale``) or ``.exr`` (channel 0).

    Args:
        path: the file.
        scale: overrides the format's scale (the result must be in the units of the camera translations).
        png_scale: scale of 16-bit PNGs (nerfstudio's ``depth_unit_scale_factor``, default 0.001: millimetres).

    Returns:
        ``(depth, quantum)``: float64 ``(H, W)`` values and the quantisation step (16-bit PNG: its scale; else 0).

    Raises:
        ValueError: an 8-bit PNG (normalised visualisation depth, not metric), a non-2-D array, or an unknown
            extension.
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".npy":
        depth = load_npy(path)
        if depth.ndim == 3 and depth.shape[2] == 1:
            depth = depth[..., 0]
        if depth.ndim != 2 or not np.issubdtype(depth.dtype, np.floating):
            raise ValueError(f"depth file {path}: expected a float (H, W) array; received {depth.dtype} {depth.shape}")
        s, quantum = 1.0 if scale is None else scale, 0.0
    elif ext == ".png":
        cv2 = import_cv2()
        depth = cv2.imread(os.fspath(path), cv2.IMREAD_UNCHANGED)
        if depth is None:
            raise ValueError(f"depth file {path} cannot be read")
        if depth.dtype != np.uint16:
            raise ValueError(
                f"depth file {path} is a {depth.dtype} PNG: 8-bit depth PNGs are normalised visualisations, not "
                "metric depth; export 16-bit PNG, .npy or .exr depth"
            )
        if depth.ndim == 3:
            depth = depth[..., 0]
        s = png_scale if scale is None else scale
        quantum = s
    elif ext == ".exr":
        cv2 = import_cv2()
        depth = cv2.imread(os.fspath(path), cv2.IMREAD_UNCHANGED)
        if depth is None:
            raise ValueError(f"depth file {path} cannot be read (OpenCV built without OpenEXR?)")
        if depth.ndim == 3:
            depth = depth[..., 0]
        s, quantum = 1.0 if scale is None else scale, 0.0
    else:
        raise ValueError(f"depth file {path}: unsupported extension {ext!r} (use .npy, 16-bit .png or .exr)")
    return depth.astype(np.float64) * s, quantum


def _read_image(path: Path, where: str) -> np.ndarray:
    cv2 = import_cv2()
    if not path.is_file():
        raise ValueError(f"{where}: image {os.fspath(path)!r} does not exist")
    img = cv2.imread(os.fspath(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ValueError(f"{where}: image {os.fspath(path)!r} cannot be read")
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    code = cv2.COLOR_BGRA2RGBA if img.shape[2] == 4 else cv2.COLOR_BGR2RGB
    img = cv2.cvtColor(img if img.shape[2] == 4 else img[..., :3], code)
    if img.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"{where}: image {os.fspath(path)!r} must be 8 or 16 bit; received {img.dtype}")
    return img


def _intrinsics(meta: dict[str, Any], frame: dict[str, Any], w: int, h: int, where: str) -> tuple[float, ...]:
    spec = {**meta, **frame}
    model = spec.get("camera_model", "PINHOLE")
    if model not in ("PINHOLE", "OPENCV"):
        raise ValueError(f"{where}: camera_model {model!r} is not supported (PINHOLE or OPENCV; undistort first)")
    for k in _DISTORTION:
        if float(spec.get(k, 0.0) or 0.0) != 0.0:
            raise ValueError(f"{where}: non-zero distortion {k}={spec[k]}; undistort the images first")
    if "fl_x" in frame or ("fl_x" in meta and "camera_angle_x" not in frame):
        try:
            fx, fy = float(spec["fl_x"]), float(spec.get("fl_y", spec["fl_x"]))
            cx, cy = float(spec["cx"]), float(spec["cy"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{where}: fl_x needs fl_y, cx and cy ({err})") from err
        for key, size in (("w", w), ("h", h)):
            if key in spec and int(spec[key]) != size:
                raise ValueError(f"{where}: {key}={spec[key]} does not match the image size {w}x{h}")
        return fx, fy, cx, cy
    if "camera_angle_x" in spec:
        f = 0.5 * w / math.tan(0.5 * float(spec["camera_angle_x"]))
        return f, f, w / 2.0, h / 2.0
    raise ValueError(f"{where}: no intrinsics (camera_angle_x, or fl_x/fl_y/cx/cy)")


_Y_TO_Z_UP = np.array([[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)


def _depth_path(folder: Path, frame: dict[str, Any], image_path: Path) -> Path | None:
    if frame.get("depth_file_path"):
        return folder / str(frame["depth_file_path"])
    for ext in _DEPTH_EXTS:
        cand = image_path.with_name(image_path.stem + "_depth" + ext)
        if cand.is_file():
            return cand
    return None


def read_transforms(
    folder: str | os.PathLike,
    *,
    world_up: str = "z",
    depth_kind: str = "z",
    depth_scale: float | None = None,
    far: float = 1e4,
    view_names: str = "index",
    object_id: str | None = None,
) -> ViewSet:
    """Read one object folder holding a nerfstudio / Blender-NeRF ``transforms.json`` with depth maps.

    Intrinsics come from ``camera_angle_x`` or ``fl_x, fl_y, cx, cy`` (top level or per frame; per frame wins);
    ``transform_matrix`` is camera-to-world in OpenGL axes with z up (``world_up="y"`` first rotates the world +90
    degrees about x). Depth comes from ``depth_file_path`` or ``<image stem>_depth.{npy,exr,png}`` next to the image.

    Args:
        folder: the object folder.
        world_up: ``"z"`` or ``"y"``.
        depth_kind: ``"z"`` (z-depth along the optical axis, nerfstudio's convention) or ``"ray"`` (distance along
            the pixel ray, converted to z-depth).
        depth_scale: overrides every depth format's scale.
        far: depths ``>= far`` mean "no surface".
        view_names: ``"index"`` (frame index zero-padded to 3 digits) or ``"stem"`` (the image file's stem).
        object_id: the object's name (default: the folder's name).

    Raises:
        FileNotFoundError: no ``transforms.json``.
        MissingDepthError: a frame has no depth map.
        ValueError: malformed JSON, unsupported camera model or distortion, 8-bit depth, or a size mismatch (the
            message names the file and the frame).

    Example:
        >>> from scenemetrics.prism.viewmatch import read_transforms
        >>> views = read_transforms("renders/mug")  # doctest: +SKIP
    """
    if world_up not in ("z", "y"):
        raise ValueError(f"`world_up` must be 'z' or 'y'; received {world_up!r}")
    if depth_kind not in ("z", "ray"):
        raise ValueError(f"`depth_kind` must be 'z' or 'ray'; received {depth_kind!r}")
    if view_names not in ("index", "stem"):
        raise ValueError(f"`view_names` must be 'index' or 'stem'; received {view_names!r}")
    folder = Path(folder)
    tpath = folder / "transforms.json"
    if not tpath.is_file():
        raise FileNotFoundError(f"{os.fspath(folder)!r} holds no transforms.json")
    try:
        meta = json.loads(tpath.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{tpath} is not valid JSON: {err}") from err
    frames = meta.get("frames") if isinstance(meta, dict) else None
    if not isinstance(frames, list):
        raise ValueError(f"{tpath} needs a 'frames' list")
    png_scale = float(meta.get("depth_unit_scale_factor", 0.001))
    images, depths, cameras, names = [], [], [], []
    quantum = 0.0
    for k, frame in enumerate(frames):
        where = f"{tpath}, frame {k}"
        if not isinstance(frame, dict) or "file_path" not in frame or "transform_matrix" not in frame:
            raise ValueError(f"{where}: a frame needs file_path and transform_matrix")
        rel = Path(str(frame["file_path"]))
        if rel.suffix == "":
            rel = rel.with_suffix(".png")
        image_path = folder / rel
        img = _read_image(image_path, where)
        h, w = img.shape[:2]
        dpath = _depth_path(folder, frame, image_path)
        if dpath is None or not dpath.is_file():
            raise MissingDepthError(
                f"{where}: no depth map (depth_file_path, or {image_path.stem}_depth.npy/.exr/.png next to the image)"
            )
        try:
            depth, q = load_depth(dpath, scale=depth_scale, png_scale=png_scale)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from err
        if depth.shape != (h, w):
            raise ValueError(f"{where}: depth {dpath.name} is {depth.shape[::-1]} but the image is {(w, h)}")
        quantum = max(quantum, q)
        fx, fy, cx, cy = _intrinsics(meta, frame, w, h, where)
        try:
            c2w = np.asarray(frame["transform_matrix"], dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: transform_matrix is not numeric ({err})") from err
        if c2w.shape == (3, 4):
            c2w = np.vstack([c2w, [0, 0, 0, 1]])
        if c2w.shape != (4, 4):
            raise ValueError(f"{where}: transform_matrix must be 4x4; received {c2w.shape}")
        if world_up == "y":
            c2w = _Y_TO_Z_UP @ c2w
        cam = Camera(c2w, fx, fy, cx, cy)
        if depth_kind == "ray":
            dirs = cam.pixel_directions(h, w)
            depth = depth / np.linalg.norm(dirs, axis=-1)  # z = ray * (-dir_z) with dir the unit ray
        images.append(img)
        depths.append(depth)
        cameras.append(cam)
        names.append(f"{k:03d}" if view_names == "index" else rel.stem)
    if len({im.shape for im in images}) > 1:
        raise ValueError(f"{tpath}: all views of one object must have the same size and channels")
    _check_orbit(cameras, tpath)
    return ViewSet(object_id or folder.name, images, depths, cameras, names, depth_quantum=quantum, far=far)


def _check_orbit(cameras: Sequence[Camera], where: Path) -> None:
    missing = 0
    for cam in cameras:
        axis = -cam.c2w[:3, 2]
        to_origin = -cam.center
        norm = np.linalg.norm(axis) * np.linalg.norm(to_origin)
        if norm == 0:
            continue
        angle = math.degrees(math.acos(float(np.clip(axis @ to_origin / norm, -1, 1))))
        missing += angle > 5.0
    if missing:
        warnings.warn(
            f"{where}: the optical axes of {missing} camera(s) miss the origin by more than 5 degrees; Zero123 poses "
            "assume cameras orbiting an object at the origin (check world_up and the scene centring)",
            UserWarning,
            stacklevel=3,
        )
