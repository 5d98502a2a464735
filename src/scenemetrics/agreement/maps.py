"""Agreement of metric maps with human artifact maps (PuzzleSim's protocol, Hermann et al.).

Human map = per-pixel mean of the participants' binary artifact masks (high = artifact). Per image the metric map is
bilinearly resized to the human map's size, oriented to "high = artifact", then PLCC (after a 5-parameter logistic
fit) and SRCC over pixels; tables report the mean per group (scene) and the mean and standard deviation over images.

Example:
    >>> import numpy as np
    >>> from scenemetrics.agreement import map_agreement
    >>> human = np.linspace(0, 1, 64).reshape(1, 8, 8)
    >>> res = map_agreement([1 - human[0]], human, fit="none")   # a quality map: high = plausible
    >>> round(res.plcc, 6), round(res.srcc, 6)
    (1.0, 1.0)
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from scenemetrics.agreement._checks import NAN_POLICIES, check_finite, to_numpy
from scenemetrics.agreement.stats import FITS
from scenemetrics.checks import check_choice

__all__ = ["MapAgreement", "human_map_from_masks", "map_agreement"]

RESIZES = ("bilinear", "none")
KRCC_MAX_PIXELS = 100_000


class MapAgreement(NamedTuple):
    """Result of :func:`map_agreement`.

    Attributes:
        per_image: per image ``{"plcc", "srcc", "krcc" (when computed), "n_pixels", "converged"}``.
        per_group: ``{group: {"plcc", "srcc", "n_images"}}``, means over the images of each group.
        plcc: mean PLCC over images (NaN images skipped).
        plcc_std: standard deviation (ddof 0) of the per-image PLCC.
        srcc: mean SRCC over images.
        srcc_std: standard deviation (ddof 0) of the per-image SRCC.
        plcc_group_std: standard deviation (ddof 0) over the group means.
        srcc_group_std: idem for SRCC.
        n_valid: images with a finite PLCC and SRCC (the means use these).
    """

    per_image: list[dict[str, float]]
    per_group: dict[str, dict[str, float]]
    plcc: float
    plcc_std: float
    srcc: float
    srcc_std: float
    plcc_group_std: float
    srcc_group_std: float
    n_valid: int


def human_map_from_masks(masks: Any) -> np.ndarray:
    """Per-pixel artifact probability: the mean over raters of binary masks.

    Args:
        masks: ``(N, R, H, W)`` (or ``(R, H, W)`` for one image) booleans or values in {0, 1}.

    Returns:
        ``(N, H, W)`` float64 in [0, 1].

    Example:
        >>> human_map_from_masks([[[[1, 0]], [[1, 1]]]]).tolist()
        [[[1.0, 0.5]]]
    """
    m = to_numpy(masks, "masks")
    if m.ndim == 3:
        m = m[None]
    if m.ndim != 4 or m.shape[1] == 0:
        raise ValueError(f"masks must have shape (N, R, H, W) with R >= 1, got {tuple(m.shape)}.")
    bad = ~np.isin(m, (0.0, 1.0))
    if bad.any():
        k = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"masks{list(k)} = {m[k]}: masks must be binary (bool or 0/1).")
    return m.mean(axis=1)


def _resize(pred: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    import torch

    t = torch.from_numpy(np.ascontiguousarray(pred))[None, None]
    return torch.nn.functional.interpolate(t, size=shape, mode="bilinear", align_corners=False)[0, 0].numpy()


def map_agreement(
    pred_maps: Any,
    human_maps: Any,
    *,
    pred_is_quality: bool = True,
    fit: str = "logistic5",
    groups: Any = None,
    resize: str = "bilinear",
    max_points: int = 200_000,
    seed: int = 0,
    nan_policy: str = "raise",
    krcc: bool | None = None,
) -> MapAgreement:
    """PLCC and SRCC over pixels between metric maps and human artifact maps, per image, per group and overall.

    Args:
        pred_maps: sequence of 2-D maps (sizes may differ), or an ``(N, h, w)`` array/tensor.
        human_maps: ``(N, H, W)`` artifact probabilities in [0, 1] (high = artifact).
        pred_is_quality: ``True`` when the metric map is high = plausible (PuzzleSim); it is negated before the
            statistics. ``False`` for maps that are high = artifact (error maps).
        fit: PLCC fit: ``"logistic5"`` (default), ``"logistic5-maxcorr"``, ``"linear"`` or ``"none"``.
        groups: optional ``(N,)`` labels (scene names) for the per-group table.
        resize: ``"bilinear"`` (torch ``interpolate``, ``align_corners=False``) or ``"none"`` (sizes must match).
        max_points: largest number of pixels used by the logistic fit (a random subset; all pixels are scored).
        seed: seed of that subset.
        nan_policy: ``"raise"`` or ``"omit"`` (pixels with a non-finite value are dropped, with a warning).
        krcc: compute Kendall's tau too; default only for images up to 100 000 pixels (it is slow).

    Returns:
        :class:`MapAgreement`.

    Example:
        >>> import numpy as np
        >>> human = np.linspace(0, 1, 64).reshape(1, 8, 8)
        >>> round(map_agreement(2 * human + 1, human, pred_is_quality=False, fit="none").srcc, 9)
        1.0
    """
    from scipy.stats import kendalltau, spearmanr

    from scenemetrics.agreement.stats import _fitted, _pearson

    check_choice(fit, "fit", FITS)
    check_choice(resize, "resize", RESIZES)
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    human = to_numpy(human_maps, "human_maps")
    if human.ndim == 2:
        human = human[None]
    if human.ndim != 3:
        raise ValueError(f"human_maps must have shape (N, H, W), got {tuple(human.shape)}.")
    finite = np.isfinite(human)
    if (finite & ((human < 0) | (human > 1))).any():
        k = tuple(int(v) for v in np.argwhere(finite & ((human < 0) | (human > 1)))[0])
        raise ValueError(f"human_maps{list(k)} = {human[k]}: human maps must be artifact probabilities in [0, 1].")
    if hasattr(pred_maps, "detach") or isinstance(pred_maps, np.ndarray):
        preds = list(to_numpy(pred_maps, "pred_maps"))
    else:
        preds = [to_numpy(p, f"pred_maps[{k}]") for k, p in enumerate(pred_maps)]
    if len(preds) != len(human):
        raise ValueError(
            f"pred_maps and human_maps must hold the same number of maps, got {len(preds)} and {len(human)}."
        )
    labels = None
    if groups is not None:
        labels = [str(g) for g in np.asarray(groups, dtype=object).reshape(-1)]
        if len(labels) != len(human):
            raise ValueError(f"groups must have one label per map ({len(human)}), got {len(labels)}.")

    per_image: list[dict[str, float]] = []
    constant: list[int] = []
    for k, (p, h) in enumerate(zip(preds, human, strict=False)):
        if p.ndim != 2:
            raise ValueError(f"pred_maps[{k}] must be a 2-D map, got shape {tuple(p.shape)}.")
        if p.shape != h.shape:
            if resize == "none":
                raise ValueError(
                    f"pred_maps[{k}] has size {p.shape}, human_maps[{k}] {h.shape}; use resize='bilinear' or resize "
                    "the maps yourself."
                )
            if not np.isfinite(p).all():
                check_finite(p, f"pred_maps[{k}]")
            p = _resize(p, h.shape)
        x, y = p.reshape(-1), h.reshape(-1)
        if pred_is_quality:
            x = -x
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.all():
            if nan_policy == "raise":
                check_finite(x.reshape(h.shape), f"pred_maps[{k}]")
                check_finite(y.reshape(h.shape), f"human_maps[{k}]")
            warnings.warn(f"map_agreement: image {k}: dropped {int((~ok).sum())} non-finite pixels.", stacklevel=2)
            x, y = x[ok], y[ok]
        row: dict[str, float] = {"plcc": math.nan, "srcc": math.nan, "n_pixels": len(x), "converged": True}
        do_krcc = krcc if krcc is not None else len(x) <= KRCC_MAX_PIXELS
        if do_krcc:
            row["krcc"] = math.nan
        if len(x) < (6 if fit.startswith("logistic5") else 3) or np.ptp(x) == 0 or np.ptp(y) == 0:
            constant.append(k)
            per_image.append(row)
            continue
        q = _fitted(x, y, fit, max_points=max_points, seed=seed)
        row["plcc"] = _pearson(q(x), y)
        row["converged"] = bool(q.converged)
        row["srcc"] = float(spearmanr(x, y).statistic)
        if do_krcc:
            row["krcc"] = float(kendalltau(x, y).statistic)
        per_image.append(row)
    if constant:
        warnings.warn(
            f"map_agreement: images {constant} have a constant human or metric map (or too few pixels); their "
            "statistics are nan and left out of the means.",
            stacklevel=2,
        )

    def stats(values: list[float]) -> tuple[float, float]:
        a = np.asarray(values, dtype=np.float64)
        a = a[np.isfinite(a)]
        return (float(a.mean()), float(a.std())) if len(a) else (math.nan, math.nan)

    plcc_mean, plcc_std = stats([r["plcc"] for r in per_image])
    srcc_mean, srcc_std = stats([r["srcc"] for r in per_image])
    per_group: dict[str, dict[str, float]] = {}
    if labels is not None:
        for g in dict.fromkeys(labels):
            rows = [r for r, lab in zip(per_image, labels, strict=False) if lab == g]
            per_group[g] = {
                "plcc": stats([r["plcc"] for r in rows])[0],
                "srcc": stats([r["srcc"] for r in rows])[0],
                "n_images": len(rows),
            }
    gp = stats([v["plcc"] for v in per_group.values()])[1] if per_group else math.nan
    gs = stats([v["srcc"] for v in per_group.values()])[1] if per_group else math.nan
    n_valid = sum(1 for r in per_image if math.isfinite(r["plcc"]) and math.isfinite(r["srcc"]))
    return MapAgreement(per_image, per_group, plcc_mean, plcc_std, srcc_mean, srcc_std, gp, gs, n_valid)
