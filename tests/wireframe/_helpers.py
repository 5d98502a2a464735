"""Helpers of the wireframe tests: the unit cube x100 of spec 5.4 and collinear edge splitting."""

from __future__ import annotations

import numpy as np


def cube_wireframe() -> tuple[np.ndarray, np.ndarray]:
    """Unit cube x100: vertex i = 4x + 2y + z at 100 (x, y, z); edges = pairs i < j differing in one coordinate."""
    v = np.array([[100.0 * x, 100.0 * y, 100.0 * z] for x in (0, 1) for y in (0, 1) for z in (0, 1)])
    e = np.array([(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1])
    return v, e


def split_every_edge(v: np.ndarray, e: np.ndarray, ts: list[list[float]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Split edge k at the parameters ts[k] (collinear pieces); returns vertices, edges, number of added vertices."""
    verts = list(v)
    edges = []
    for (a, b), cuts in zip(e, ts, strict=True):
        prev = a
        for t in cuts:
            verts.append((1.0 - t) * v[a] + t * v[b])
            edges.append((prev, len(verts) - 1))
            prev = len(verts) - 1
        edges.append((prev, b))
    return np.array(verts), np.array(edges), len(verts) - len(v)
