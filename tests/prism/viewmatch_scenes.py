"""Analytic test scenes for the ViewMatch builder: a cube and a sphere rendered exactly by ray intersection.

Cameras orbit the origin at elevation 30 degrees and distance 2.7 (the PRISM paper's ViewMatch grid) in a z-up
world, with ``camera_angle_x = 0.8575`` (49.1 degrees). Each render gives RGBA (alpha = hit, colour from the normal),
exact z-depth, the world hit points and the outward normals, so visibility has a closed form:

* cube (convex): a target hit point ``X`` on the face with outward normal ``n`` is visible from a camera centre
  ``C`` iff ``n . (C - X) > 0``;
* sphere (radius 1 at the origin): iff ``X . (C - X) > 0``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from scenemetrics.prism.viewmatch import Camera, ViewSet

ANGLE_X = 0.8575
ELEVATION = 30.0
DISTANCE = 2.7
CUBE_HALF = 0.6


def orbit_camera(azimuth_deg: float, size: int, *, elevation_deg: float = ELEVATION, distance: float = DISTANCE):
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    centre = distance * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    forward = -centre / np.linalg.norm(centre)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    c2w = np.eye(4)
    c2w[:3, 0], c2w[:3, 1], c2w[:3, 2], c2w[:3, 3] = right, up, -forward, centre
    f = 0.5 * size / math.tan(0.5 * ANGLE_X)
    return Camera(c2w, f, f, size / 2.0, size / 2.0)


def render(shape: str, cam: Camera, size: int) -> dict[str, np.ndarray]:
    """Exact render: ``hit`` (bool), ``depth`` (z-depth, 0 off the object), ``points``, ``normals``, ``rgba``."""
    dirs_cam = cam.pixel_directions(size, size)  # z-depth 1 per unit of t
    dirs = dirs_cam @ cam.c2w[:3, :3].T
    origin = cam.center
    if shape == "sphere":
        b = dirs @ origin
        a = np.einsum("ijk,ijk->ij", dirs, dirs)
        c = origin @ origin - 1.0
        disc = b * b - a * c
        hit = disc > 0
        t = np.where(hit, (-b - np.sqrt(np.maximum(disc, 0))) / a, 0.0)
        points = origin + t[..., None] * dirs
        normals = points / np.linalg.norm(points, axis=-1, keepdims=True).clip(1e-12)
    elif shape == "cube":
        with np.errstate(divide="ignore", invalid="ignore"):
            t1 = (-CUBE_HALF - origin) / dirs
            t2 = (CUBE_HALF - origin) / dirs
        tmin = np.minimum(t1, t2)
        tmax = np.maximum(t1, t2)
        t_enter = tmin.max(axis=-1)
        t_exit = tmax.min(axis=-1)
        hit = (t_enter < t_exit) & (t_exit > 0)
        t = np.where(hit, t_enter, 0.0)
        points = origin + t[..., None] * dirs
        axis = tmin.argmax(axis=-1)
        normals = np.zeros_like(points)
        sign = np.sign(np.take_along_axis(points, axis[..., None], -1))[..., 0]
        np.put_along_axis(normals, axis[..., None], sign[..., None], -1)
    else:
        raise ValueError(shape)
    rgba = np.zeros((size, size, 4), np.uint8)
    rgba[..., :3] = np.where(hit[..., None], np.rint((normals * 0.5 + 0.5) * 255), 255).astype(np.uint8)
    rgba[..., 3] = np.where(hit, 255, 0)
    return {"hit": hit, "depth": t, "points": points, "normals": normals, "rgba": rgba, "dirs": dirs_cam}


def closed_form_visible(shape: str, rend: dict[str, np.ndarray], source_centre: np.ndarray) -> np.ndarray:
    """``V*``: target pixels whose hit point is visible from ``source_centre``."""
    to_c = source_centre - rend["points"]
    if shape == "cube":
        vis = np.einsum("ijk,ijk->ij", rend["normals"], to_c) > 0
    else:
        vis = np.einsum("ijk,ijk->ij", rend["points"], to_c) > 0
    return vis & rend["hit"]


def viewset(shape: str, azimuths, size: int, object_id: str | None = None) -> tuple[ViewSet, list[dict]]:
    cams = [orbit_camera(a, size) for a in azimuths]
    renders = [render(shape, c, size) for c in cams]
    vs = ViewSet(object_id or shape, [r["rgba"] for r in renders], [r["depth"] for r in renders], cams)
    return vs, renders


def write_transforms(
    folder: Path, shape: str, azimuths, size: int, *, depth: str = "npy", with_depth: bool = True
) -> Path:
    """A nerfstudio-style object folder: ``transforms.json``, RGBA PNGs and depth maps.

    ``depth``: ``"npy"`` (float32 z-depth), ``"png"`` (16-bit millimetres, ``depth_unit_scale_factor`` 0.001) or
    ``"ray"`` (float32 distance along the pixel ray in ``.npy``, with ``depth_file_path``).
    """
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    frames = []
    for k, az in enumerate(azimuths):
        cam = orbit_camera(az, size)
        rend = render(shape, cam, size)
        name = f"images/frame_{k:03d}.png"
        cv2.imwrite(str(folder / name), cv2.cvtColor(rend["rgba"], cv2.COLOR_RGBA2BGRA))
        frame = {"file_path": name, "transform_matrix": cam.c2w.tolist()}
        if with_depth:
            if depth == "npy":
                np.save(folder / f"images/frame_{k:03d}_depth.npy", rend["depth"].astype(np.float32))
            elif depth == "png":
                mm = np.rint(rend["depth"] * 1000.0).astype(np.uint16)
                cv2.imwrite(str(folder / f"images/frame_{k:03d}_depth.png"), mm)
            elif depth == "ray":
                ray = rend["depth"] * np.linalg.norm(rend["dirs"], axis=-1)
                np.save(folder / f"depth_{k:03d}.npy", ray.astype(np.float32))
                frame["depth_file_path"] = f"depth_{k:03d}.npy"
        frames.append(frame)
    meta = {"camera_angle_x": ANGLE_X, "frames": frames}
    if depth == "png":
        meta["depth_unit_scale_factor"] = 0.001
    (folder / "transforms.json").write_text(json.dumps(meta))
    return folder


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0
