"""Synthetic house wireframes for tests, examples, benchmarks and the property suite.

A house is a box (footprint ``W ~ U(8, 14)`` by ``D ~ U(6, min(10, W - 1))``, walls ``U(2.5, 6)``) with a gable or
hip roof (ridge of 2 vertices at mid-depth, ``U(1.5, 4)`` above the eaves, each joined to the two nearest eave
corners): 10 vertices, 17 edges. ``annex=True`` adds a detached flat-roofed box (garage) ``U(3, 6) x U(3, 5) x
U(2.2, 0.8 H + 0.5)`` placed ``U(0.5, 1.5)`` in front of the main block: 18 vertices, 29 edges. The house is then
rotated about z by a uniform angle and translated by ``U(-20, 20)`` in x/y and ``U(0, 2)`` in z. Units are metres at
``scale=1`` (``scale=100`` gives S23DR-2024-like centimetres). Houses never have duplicate vertices or
zero-length edges.

Example:
    >>> h = synthetic_house(0)
    >>> h.vertices.shape, h.edges.shape
    ((18, 3), (29, 2))
"""

from __future__ import annotations

import numpy as np

from scenemetrics.checks import check_choice, check_int, check_positive
from scenemetrics.wireframe.types import Wireframe

__all__ = ["synthetic_house", "synthetic_houses"]

_BOX_EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (0, 4), (1, 5), (2, 6), (3, 7)]


def _box(x0: float, y0: float, w: float, d: float, h: float) -> np.ndarray:
    """8 corners: bottom ring counter-clockwise from (x0, y0), then the top ring above it."""
    ring = np.array([[x0, y0], [x0 + w, y0], [x0 + w, y0 + d], [x0, y0 + d]])
    bottom = np.column_stack((ring, np.zeros(4)))
    top = np.column_stack((ring, np.full(4, h)))
    return np.vstack((bottom, top))


def synthetic_house(
    seed: int | np.random.Generator | None = None, *, roof: str = "random", annex: bool = True, scale: float = 1.0
) -> Wireframe:
    """One random house wireframe (see the module docstring for the distributions).

    Args:
        seed: an int, a ``numpy.random.Generator`` (drawn from), or ``None`` (fresh entropy).
        roof: ``"gable"``, ``"hip"`` or ``"random"`` (each with probability 1/2).
        annex: add the detached garage (18 vertices, 29 edges instead of 10, 17).
        scale: multiply every coordinate (metres at 1).

    Returns:
        A valid :class:`Wireframe`.

    Raises:
        ValueError: unknown ``roof`` or a non-positive ``scale``.

    Example:
        >>> synthetic_house(1, roof="hip", annex=False).edges.shape
        (17, 2)
    """
    check_choice(roof, "roof", ("random", "gable", "hip"))
    check_positive(scale, "scale")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    W = rng.uniform(8.0, 14.0)
    D = rng.uniform(6.0, min(10.0, W - 1.0))
    H = rng.uniform(2.5, 6.0)
    R = rng.uniform(1.5, 4.0)
    kind = roof if roof != "random" else ("gable" if rng.random() < 0.5 else "hip")
    inset = 0.0 if kind == "gable" else rng.uniform(0.35, 0.5) * D
    verts = [_box(0.0, 0.0, W, D, H)]
    # ridge above the gable walls (x = 0 and x = W), or inset along x for a hip roof
    verts.append(np.array([[inset, D / 2, H + R], [W - inset, D / 2, H + R]]))
    edges = [*_BOX_EDGES, (8, 9), (8, 4), (8, 7), (9, 5), (9, 6)]
    if annex:
        aw, ad = rng.uniform(3.0, 6.0), rng.uniform(3.0, 5.0)
        ah = rng.uniform(2.2, 0.8 * H + 0.5)
        gap = rng.uniform(0.5, 1.5)
        ax = rng.uniform(0.0, W - aw)
        verts.append(_box(ax, -gap - ad, aw, ad, ah))
        edges += [(a + 10, b + 10) for a, b in _BOX_EDGES]
    v = np.vstack(verts)
    v[:, :2] -= (W / 2, D / 2)  # rotate about the main block's centre
    angle = rng.uniform(0.0, 2 * np.pi)
    c, s = np.cos(angle), np.sin(angle)
    v[:, :2] = v[:, :2] @ np.array([[c, s], [-s, c]])
    v += np.array([rng.uniform(-20.0, 20.0), rng.uniform(-20.0, 20.0), rng.uniform(0.0, 2.0)])
    return Wireframe(v * scale, np.array(edges, dtype=np.int64))


def synthetic_houses(n: int, seed: int = 0, **kwargs: object) -> list[Wireframe]:
    """``n`` houses; house ``i`` uses ``numpy.random.default_rng([seed, i])``.

    Args:
        n: number of houses (``>= 0``).
        seed: base seed.
        **kwargs: options of :func:`synthetic_house` (``roof``, ``annex``, ``scale``).

    Returns:
        A list of :class:`Wireframe`.

    Example:
        >>> len(synthetic_houses(3))
        3
    """
    check_int(n, "n", low=0)
    return [synthetic_house(np.random.default_rng([seed, i]), **kwargs) for i in range(n)]  # type: ignore[arg-type]
