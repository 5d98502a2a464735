"""Visibility, invisibility and epipolar masks of a source -> target view pair (numpy + OpenCV, float64 geometry).

For a target view ``t`` and a source view ``s`` of the same object:

* **visibility** ``V0``: target silhouette pixels whose surface point the source also sees. Each target pixel is
  unprojected with the target depth, projected into the source, and compared with the largest source depth of the
  2x2 source pixels around it (bilinear neighbours inside the source silhouette): visible iff
  ``d_s(P) <= max(D_s) + tau``, ``tau = max(abs_tol, rel_tol * d_s(P))``. Testing on the dense target grid leaves no
  splatting holes. **Invisibility** ``I0`` is the rest of the target silhouette.
* **epipolar** ``E0``: every source silhouette pixel's ray continues behind its surface point (space the source
  cannot see) until it leaves the object's bounding sphere; samples are about one target pixel apart. A sample is
  kept where the target sees it unoccluded (outside the target silhouette, or in front of the target's surface by
  more than ``tau``); such a sample is in known free space, so segments through the object are discarded.
* morphology with elliptical kernels (the PRISM paper's radii 4 / 10 / 3 / 20 px): closing, overlap removal (the
  overlap goes to visibility), opening; the epipolar mask is closed and cut to the dilated target silhouette.

Positive (plausible) inpainting mask = ``I | E``; negative (implausible) = ``V | E``.

Example:
    >>> import numpy as np
    >>> from scenemetrics.prism.viewmatch import ellipse
    >>> ellipse(1).tolist()
    [[0, 1, 0], [1, 1, 1], [0, 1, 0]]
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from scenemetrics.prism.viewmatch.config import BuildConfig
from scenemetrics.prism.viewmatch.views import ViewSet, import_cv2

__all__ = ["PairMasks", "ellipse", "epipolar_mask", "pair_masks", "refine_masks", "visibility_mask"]

_CHUNK = 4_000_000  # samples per chunk of the epipolar march


def ellipse(radius: int) -> np.ndarray:
    """``cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2r+1, 2r+1))``."""
    cv2 = import_cv2()
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


def _u8(mask: np.ndarray) -> np.ndarray:
    return np.where(mask, 255, 0).astype(np.uint8)


def _close(m: np.ndarray, r: int) -> np.ndarray:
    cv2 = import_cv2()
    return cv2.morphologyEx(_u8(m), cv2.MORPH_CLOSE, ellipse(r)) > 0


def _open(m: np.ndarray, r: int) -> np.ndarray:
    cv2 = import_cv2()
    return cv2.morphologyEx(_u8(m), cv2.MORPH_OPEN, ellipse(r)) > 0


def _dilate(m: np.ndarray, r: int) -> np.ndarray:
    cv2 = import_cv2()
    return cv2.dilate(_u8(m), ellipse(r)) > 0


@dataclass
class PairMasks:
    """The masks of one source -> target pair (boolean ``(H, W)`` arrays in the target view).

    Attributes:
        V0, I0, E0: raw visibility, invisibility and epipolar masks.
        V, I, E: after morphology.
        pos, neg: inpainting masks of plausible (``I | E``) and implausible (``V | E``) candidates.
        pos_area, neg_area: mask pixels / target-silhouette pixels (may exceed 1: ``E`` leaves the silhouette).
        visible_fraction: ``|V0| / |S_t|``.
    """

    V0: np.ndarray
    I0: np.ndarray
    E0: np.ndarray
    V: np.ndarray
    I: np.ndarray  # noqa: E741 (the paper's name)
    E: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    pos_area: float
    neg_area: float
    visible_fraction: float


def _tolerance(viewset: ViewSet, abs_tol: float | None) -> float:
    return 2.0 * viewset.depth_quantum if abs_tol is None else float(abs_tol)


def visibility_mask(
    viewset: ViewSet, source: int, target: int, *, rel_tol: float = 0.002, abs_tol: float | None = None
) -> np.ndarray:
    """Raw visibility ``V0`` of the target silhouette from the source (depth test on the target grid).

    Args:
        viewset: the object's views.
        source, target: view indices.
        rel_tol: relative depth tolerance (0.002).
        abs_tol: absolute tolerance in world units (``None``: twice the depth quantisation step).

    Returns:
        Boolean ``(H, W)`` mask, inside the target silhouette.
    """
    sil_s, sil_t = viewset.silhouettes[source], viewset.silhouettes[target]
    cam_s, cam_t = viewset.cameras[source], viewset.cameras[target]
    depth_s = viewset.depths[source]
    h, w = sil_t.shape
    rows, cols = np.nonzero(sil_t)
    points = cam_t.unproject(rows.astype(np.float64), cols.astype(np.float64), viewset.depths[target][rows, cols])
    uv, d = cam_s.project(points)
    u, v = uv[:, 0], uv[:, 1]
    with np.errstate(invalid="ignore"):
        inside = (d > 0) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
    u, v = np.where(inside, u, 0.0), np.where(inside, v, 0.0)
    i0, j0 = np.floor(u - 0.5).astype(np.int64), np.floor(v - 0.5).astype(np.int64)
    footprint_max = np.full(len(rows), -np.inf)
    for di in (0, 1):
        for dj in (0, 1):
            ii, jj = i0 + di, j0 + dj
            ok = inside & (ii >= 0) & (ii < w) & (jj >= 0) & (jj < h)
            iic, jjc = np.clip(ii, 0, w - 1), np.clip(jj, 0, h - 1)
            ok &= sil_s[jjc, iic]
            footprint_max = np.maximum(footprint_max, np.where(ok, depth_s[jjc, iic], -np.inf))
    tau = np.maximum(_tolerance(viewset, abs_tol), rel_tol * d)
    with np.errstate(invalid="ignore"):
        visible = inside & np.isfinite(footprint_max) & (d <= footprint_max + tau)
    out = np.zeros((h, w), bool)
    out[rows[visible], cols[visible]] = True
    return out


def epipolar_mask(
    viewset: ViewSet,
    source: int,
    target: int,
    *,
    rel_tol: float = 0.002,
    abs_tol: float | None = None,
    max_ray_samples: int = 2048,
    return_samples: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Raw epipolar mask ``E0``: target pixels seeing the source-occluded continuation of source rays.

    Step ``Delta = (||C_t - c|| - R) / max(fx_t, fy_t)`` (``0.01 R`` when the target camera is inside the bounding
    sphere ``(c, R)``): no point of the sphere is closer to the target camera than ``||C_t - c|| - R``, so
    consecutive samples move at most one target pixel. Rays stop at the sphere, at most ``max_ray_samples`` samples
    each (one ``UserWarning`` counts the capped rays).

    Args:
        viewset: the object's views.
        source, target: view indices.
        rel_tol / abs_tol: depth tolerance, as in :func:`visibility_mask`.
        max_ray_samples: cap per ray.
        return_samples: also return the kept samples' world points ``(K, 3)``.

    Returns:
        Boolean ``(H, W)`` mask (and the kept samples when asked).
    """
    sil_s, sil_t = viewset.silhouettes[source], viewset.silhouettes[target]
    cam_s, cam_t = viewset.cameras[source], viewset.cameras[target]
    depth_t = viewset.depths[target]
    h, w = sil_t.shape
    out = np.zeros((h, w), bool)
    kept_points: list[np.ndarray] = []
    centre, radius = viewset.bound()
    rows, cols = np.nonzero(sil_s)
    if len(rows) == 0 or radius <= 0:
        return (out, np.zeros((0, 3))) if return_samples else out
    gap = float(np.linalg.norm(cam_t.center - centre)) - radius
    step = gap / max(cam_t.fx, cam_t.fy) if gap > 0 else 0.01 * radius
    surface = cam_s.unproject(rows.astype(np.float64), cols.astype(np.float64), viewset.depths[source][rows, cols])
    dirs = surface - cam_s.center
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    # distance along the ray from the surface point to the sphere exit: |P + s r - c| = R, s > 0
    rel = surface - centre
    b = np.einsum("ij,ij->i", dirs, rel)
    disc = b * b - (np.einsum("ij,ij->i", rel, rel) - radius * radius)
    exit_s = np.where(disc > 0, -b + np.sqrt(np.maximum(disc, 0.0)), 0.0)
    counts = np.floor(np.maximum(exit_s, 0.0) / step).astype(np.int64)
    capped = int((counts > max_ray_samples).sum())
    if capped:
        warnings.warn(
            f"object {viewset.object_id!r}, pair {viewset.names[source]}->{viewset.names[target]}: {capped} epipolar "
            f"rays were cut at max_ray_samples={max_ray_samples}",
            UserWarning,
            stacklevel=2,
        )
    counts = np.minimum(counts, max_ray_samples)
    tol = _tolerance(viewset, abs_tol)
    # target-camera coordinates are linear along a ray: X_cam(k) = a + k * step * b
    w2c = cam_t.w2c
    a = surface @ w2c[:3, :3].T + w2c[:3, 3]
    b = dirs @ w2c[:3, :3].T
    rows_per_chunk = max(1, _CHUNK // max(int(counts.max()), 1))
    for start in range(0, len(counts), rows_per_chunk):
        idx = np.arange(start, min(start + rows_per_chunk, len(counts)))
        kmax = int(counts[idx].max()) if len(idx) else 0
        if kmax == 0:
            continue
        s = step * np.arange(1, kmax + 1, dtype=np.float64)
        valid = np.arange(1, kmax + 1)[None, :] <= counts[idx, None]
        x = a[idx, 0:1] + s * b[idx, 0:1]
        y = a[idx, 1:2] + s * b[idx, 1:2]
        d = -(a[idx, 2:3] + s * b[idx, 2:3])
        with np.errstate(divide="ignore", invalid="ignore"):
            u = cam_t.cx + cam_t.fx * x / d
            v = cam_t.cy - cam_t.fy * y / d
            inside = valid & (d > 0) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
        pu = np.floor(np.where(inside, u, 0.0)).astype(np.int64)
        pv = np.floor(np.where(inside, v, 0.0)).astype(np.int64)
        tau = np.maximum(tol, rel_tol * d)
        # seen by the target: off its silhouette, or in front of its surface. The target is one of the object's
        # views, so such a sample is also "known free" (some view sees through it): the carving test over all views
        # can only agree, and segments inside the object (occluded for every view) are never kept.
        with np.errstate(invalid="ignore"):
            seen = inside & (~sil_t[pv, pu] | (d < depth_t[pv, pu] - tau))
        out[pv[seen], pu[seen]] = True
        if return_samples:
            rr, kk = np.nonzero(seen)
            kept_points.append(surface[idx[rr]] + (s[kk])[:, None] * dirs[idx[rr]])
    if return_samples:
        return out, (np.concatenate(kept_points) if kept_points else np.zeros((0, 3)))
    return out


def refine_masks(
    V0: np.ndarray,
    I0: np.ndarray,
    E0: np.ndarray,
    silhouette: np.ndarray,
    *,
    close_radius: int = 4,
    open_radius: int = 10,
    epipolar_close_radius: int = 3,
    silhouette_dilate_radius: int = 20,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Morphology of the raw masks (OpenCV elliptical kernels ``(2r+1, 2r+1)``, one iteration, default borders).

    1. ``V1 = close(V0, 4)``, ``I1 = close(I0, 4)``;
    2. overlap removal: ``V2 = V1 & S``, ``I2 = I1 & S & ~V2`` (the overlap goes to visibility);
    3. ``V = open(V2, 10)``, ``I = open(I2, 10)``;
    4. ``E = close(E0, 3) & dilate(S, 20)``.

    Returns:
        ``(V, I, E, pos, neg)`` boolean masks with ``pos = I | E`` and ``neg = V | E``.

    Example:
        >>> import numpy as np
        >>> s = np.zeros((32, 32), bool); s[4:28, 4:28] = True
        >>> v = np.zeros_like(s); v[4:28, 4:16] = True
        >>> V, I, E, pos, neg = refine_masks(v, s & ~v, np.zeros_like(s), s, open_radius=3)
        >>> bool((V & I).any()), bool(((V | I) <= s).all())  # disjoint; opening only removes pixels
        (False, True)
    """
    V1, I1 = _close(V0, close_radius), _close(I0, close_radius)
    V2 = V1 & silhouette
    I2 = I1 & silhouette & ~V2
    V, I = _open(V2, open_radius), _open(I2, open_radius)  # noqa: E741
    E = _close(E0, epipolar_close_radius) & _dilate(silhouette, silhouette_dilate_radius)
    return V, I, E, I | E, V | E


def pair_masks(viewset: ViewSet, source: int, target: int, config: BuildConfig | None = None) -> PairMasks:
    """All masks of the pair ``source -> target`` with the settings of ``config`` (default :class:`BuildConfig`).

    Raises:
        ValueError: the source or target silhouette is empty, or ``source == target``.

    Example:
        >>> masks = pair_masks(read_transforms("renders/mug"), 0, 4)  # doctest: +SKIP
        >>> masks.neg_area, masks.visible_fraction  # doctest: +SKIP
    """
    config = config or BuildConfig()
    if source == target:
        raise ValueError(f"`source` and `target` must differ; received {source} twice")
    sil_t = viewset.silhouettes[target]
    for which, i in (("source", source), ("target", target)):
        if not viewset.silhouettes[i].any():
            raise ValueError(
                f"object {viewset.object_id!r}: the {which} view {viewset.names[i]!r} has an empty silhouette"
            )
    tol = {"rel_tol": config.rel_tol, "abs_tol": config.abs_tol}
    V0 = visibility_mask(viewset, source, target, **tol)
    I0 = sil_t & ~V0
    E0 = epipolar_mask(viewset, source, target, max_ray_samples=config.max_ray_samples, **tol)
    close, open_, epi, dil = config.radii()
    V, I, E, pos, neg = refine_masks(  # noqa: E741
        V0,
        I0,
        E0,
        sil_t,
        close_radius=close,
        open_radius=open_,
        epipolar_close_radius=epi,
        silhouette_dilate_radius=dil,
    )
    area = float(sil_t.sum())
    return PairMasks(
        V0=V0,
        I0=I0,
        E0=E0,
        V=V,
        I=I,
        E=E,
        pos=pos,
        neg=neg,
        pos_area=float(pos.sum()) / area,
        neg_area=float(neg.sum()) / area,
        visible_fraction=float(V0.sum()) / area,
    )
