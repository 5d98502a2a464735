"""A tiny synthetic Blender-format (NeRF-synthetic) scene: analytic spheres ray-cast to small RGBA PNGs.

Layout written (what nerfstudio's ``blender-data`` dataparser reads)::

    root/transforms_{train,val,test}.json   {"camera_angle_x": ..., "frames": [{"file_path": "./train/r_0",
                                              "transform_matrix": 4x4 camera-to-world}, ...]}
    root/{train,val,test}/r_<i>.png         RGBA, transparent background

Cameras are OpenGL cameras (x right, y up, looking along -z) on a sphere around the origin of a z-up world.

Example:
    >>> import tempfile
    >>> root = write_blender_scene(tempfile.mkdtemp(), size=8, num_train=2, num_val=1, num_test=1)
    >>> sorted(p.name for p in root.glob("*.json"))
    ['transforms_test.json', 'transforms_train.json', 'transforms_val.json']
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["SPHERES", "camera_to_world", "ray_cast", "write_blender_scene"]

# (centre xyz, radius, rgb)
SPHERES = (
    ((0.0, 0.0, 0.0), 0.6, (0.9, 0.2, 0.15)),
    ((0.7, 0.3, 0.2), 0.35, (0.1, 0.6, 0.9)),
    ((-0.5, -0.6, -0.1), 0.4, (0.2, 0.85, 0.3)),
    ((0.0, 0.0, -1.0), 0.3, (0.95, 0.85, 0.1)),
)


def camera_to_world(azimuth_deg: float, elevation_deg: float, radius: float = 4.0) -> Tensor:
    """``(4, 4)`` OpenGL camera-to-world matrix of a camera on a sphere, looking at the origin, z up."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    eye = torch.tensor(
        [radius * math.cos(el) * math.cos(az), radius * math.cos(el) * math.sin(az), radius * math.sin(el)]
    )
    back = eye / eye.norm()  # camera +z points away from the target
    right = torch.linalg.cross(torch.tensor([0.0, 0.0, 1.0]), back)
    right = right / right.norm()
    up = torch.linalg.cross(back, right)
    c2w = torch.eye(4)
    c2w[:3, 0], c2w[:3, 1], c2w[:3, 2], c2w[:3, 3] = right, up, back, eye
    return c2w


def ray_cast(c2w: Tensor, size: int, camera_angle_x: float) -> Tensor:
    """Render the spheres from an OpenGL camera: ``(size, size, 4)`` float RGBA, Lambert-shaded, alpha 0 or 1."""
    f = 0.5 * size / math.tan(0.5 * camera_angle_x)
    pix = torch.arange(size, dtype=torch.float32) + 0.5
    v, u = torch.meshgrid(pix, pix, indexing="ij")
    dirs_cam = torch.stack([(u - size / 2) / f, -(v - size / 2) / f, -torch.ones_like(u)], dim=-1)
    dirs = dirs_cam @ c2w[:3, :3].T
    dirs = dirs / dirs.norm(dim=-1, keepdim=True)
    origin = c2w[:3, 3]
    best_t = torch.full((size, size), float("inf"))
    rgba = torch.zeros(size, size, 4)
    light = torch.tensor([0.4, 0.3, 0.85])
    light = light / light.norm()
    for centre, radius, colour in SPHERES:
        c = torch.tensor(centre)
        oc = origin - c
        b = dirs @ oc
        disc = b * b - (oc @ oc - radius * radius)
        t = -b - torch.sqrt(disc.clamp(min=0))
        hit = (disc > 0) & (t > 0) & (t < best_t)
        normal = origin + t.unsqueeze(-1) * dirs - c
        normal = normal / normal.norm(dim=-1, keepdim=True)
        shade = 0.35 + 0.65 * (normal @ light).clamp(min=0)
        rgb = torch.tensor(colour) * shade.unsqueeze(-1)
        rgba[hit] = torch.cat([rgb[hit], torch.ones(int(hit.sum()), 1)], dim=-1)
        best_t = torch.where(hit, t, best_t)
    return rgba


def write_blender_scene(
    root: str | os.PathLike,
    size: int = 32,
    num_train: int = 8,
    num_val: int = 2,
    num_test: int = 1,
    camera_angle_x: float = 0.69,
) -> Path:
    """Write the scene to ``root`` (created) and return it as a ``Path``."""
    from PIL import Image

    root = Path(root)
    splits = {"train": (num_train, 0.0, 25.0), "val": (num_val, 20.0, 35.0), "test": (num_test, 40.0, 15.0)}
    for split, (n, phase, elevation) in splits.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        frames = []
        for i in range(n):
            c2w = camera_to_world(phase + 360.0 * i / max(n, 1), elevation)
            rgba = ray_cast(c2w, size, camera_angle_x)
            pixels = (rgba * 255).round().clamp(0, 255).to(torch.uint8).numpy()
            Image.fromarray(pixels, mode="RGBA").save(root / split / f"r_{i}.png")
            frames.append({"file_path": f"./{split}/r_{i}", "transform_matrix": c2w.tolist()})
        (root / f"transforms_{split}.json").write_text(json.dumps({"camera_angle_x": camera_angle_x, "frames": frames}))
    return root
