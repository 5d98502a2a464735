"""PuzzleSim-guided progressive artifact inpainting (PuzzleSim paper, Hermann et al., ICCV 2025, Sec. 5, Eq. 6-7).

The PuzzleSim map ``Q`` of an image against its training views marks implausible pixels (low values). The loop
inpaints the pixels below candidate thresholds of ``Q``, recomputes PuzzleSim on every candidate, keeps the one
whose in-mask quality gain (minus a mask-size penalty) is largest, and repeats with thresholds near the accepted
one until no candidate helps. The returned image never scores below the input.

The paper leaves the gain ``delta``, its regulariser and the refinement interval to a supplement we could not
obtain; the choices below are ours (docs/inpainting.md lists them and why):

* ``delta_k = mean_{p in M_k}(Q_k(p) - Q(p)) / sigma_0 - size_penalty * |M_k| / (H W)``, with ``sigma_0`` the
  population std of the input's map and ``size_penalty = 1.0`` by default: the gain is measured in units of the
  map's spread over the image, so the acceptance rule does not depend on the backbone's or the scene's dynamic range
  (scale-free);
* a candidate is eligible only if its map mean does not drop (``mean Q_k >= mean Q``);
* refinement thresholds: ``refine_candidates`` values evenly spaced in
  ``[max(tau* - w, min Q), tau* + w]`` with ``w = alpha * std(Q)`` (population std of the current map), falling
  back to Eq. 7 when ``tau* + w < min Q``;
* the result of the inpainter is always composited: only masked pixels change.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scenemetrics.checks import check_int, check_positive
from scenemetrics.image import check_images
from scenemetrics.inpainting.inpainters import Inpainter, check_max_batch
from scenemetrics.puzzlesim.memory import PuzzleSimMemory
from scenemetrics.puzzlesim.options import DEFAULT_LAYER_WEIGHTS, DEFAULT_LAYERS, PuzzleSimOptions

__all__ = [
    "FLAT_TOLERANCE",
    "InpaintResult",
    "candidate_masks",
    "candidate_thresholds",
    "dilate_masks",
    "eq7_thresholds",
    "puzzle_inpaint",
]

FLAT_TOLERANCE = 1e-5
"""A map with ``mean - min <= FLAT_TOLERANCE`` is flat: nothing to select (float32 noise on an image identical to a
reference gives ``mean - min`` of about 2-4e-7)."""

Scorer = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class InpaintResult:
    """What :func:`puzzle_inpaint` returns.

    Attributes:
        image: the inpainted image, same shape as the input (``(3, H, W)`` or ``(1, 3, H, W)``), float32 in [0, 1],
            on the input's device. Bit-identical to the (float32) input outside ``mask``.
        mask: ``(H, W)`` bool, the union of all accepted masks: every pixel that may differ from the input.
        history: one dict per evaluated round (JSON-serialisable; keys ``iteration``, ``sampling``, ``thresholds``,
            ``deltas``, ``eligible``, ``mask_fractions``, ``best_index``, ``threshold``, ``delta``, ``accepted``,
            ``mean_quality``).
        quality_before: mean of the PuzzleSim map of the input.
        quality_after: mean of the PuzzleSim map of the returned image (``>= quality_before``).
        map_before: ``(H, W)`` PuzzleSim map of the input.
        map_after: ``(H, W)`` PuzzleSim map of the returned image.
    """

    image: Tensor
    mask: Tensor
    history: list[dict]
    quality_before: float
    quality_after: float
    map_before: Tensor
    map_after: Tensor

    @property
    def spread(self) -> float:
        """``sigma_0``, the population std of :attr:`map_before`: the unit of the gains in ``history``'s deltas."""
        return _map_spread(self.map_before)

    @property
    def mask_fraction(self) -> float:
        """Fraction of the pixels that were inpainted (area of :attr:`mask`)."""
        return float(self.mask.float().mean()) if self.mask.numel() else 0.0

    @property
    def accepted_rounds(self) -> int:
        """Number of rounds that changed the image."""
        return sum(1 for entry in self.history if entry["accepted"])


# ------------------------------------------------------------------------------------------------ candidates
def _map_mean(q: Tensor) -> float:
    # float64 accumulation of the float32 map: one rule for every mean the loop compares
    return float(q.double().mean())


def _map_spread(q: Tensor) -> float:
    # population std in float64: the unit of the in-mask gain (and of the refinement half-width)
    return float(q.detach().double().std(correction=0)) if q.numel() else 0.0


def eq7_thresholds(qmin: float, qmean: float, n: int) -> list[float]:
    """Paper Eq. 7: ``tau_i = qmin + i / (n - 1) * (qmean - qmin)``, ``i = 0..n-1`` (python floats, ascending).

    Example:
        >>> eq7_thresholds(0.5, 0.9, 3)
        [0.5, 0.7, 0.9]
    """
    if n < 2:
        raise ValueError(f"`n` must be >= 2; received {n!r}")
    return [qmin + i / (n - 1) * (qmean - qmin) for i in range(n)]


def candidate_thresholds(
    quality_map: Tensor,
    previous_threshold: float | None,
    *,
    n_candidates: int = 50,
    refine_candidates: int = 10,
    alpha: float = 0.25,
) -> tuple[list[float], str]:
    """Thresholds of one round and how they were sampled (loop step "thresholds").

    * first round (``previous_threshold`` is ``None``): Eq. 7 with ``n_candidates`` -> ``"initial"``;
    * ``previous_threshold + w < min Q`` with ``w = alpha * std(Q)`` (population std): Eq. 7 -> ``"fallback"``;
    * otherwise ``refine_candidates`` evenly spaced values in ``[max(tau - w, min Q), tau + w]`` -> ``"refine"``.

    Args:
        quality_map: ``(H, W)`` current PuzzleSim map ``Q``.
        previous_threshold: the last accepted threshold ``tau*``, or ``None``.
        n_candidates: thresholds of Eq. 7.
        refine_candidates: thresholds of a refinement round.
        alpha: refinement half-width in units of the map's std.

    Returns:
        ``(thresholds ascending, sampling)``.

    Example:
        >>> q = torch.tensor([[0.0, 1.0], [1.0, 1.0]])  # min 0, mean 0.75, std 0.433
        >>> candidate_thresholds(q, None, n_candidates=4)[0]
        [0.0, 0.25, 0.5, 0.75]
        >>> [round(t, 4) for t in candidate_thresholds(q, 0.5, refine_candidates=3, alpha=1.0)[0]]
        [0.067, 0.5, 0.933]
    """
    q64 = quality_map.detach().double()
    qmin, qmean = float(q64.min()), float(q64.mean())
    if previous_threshold is None:
        return eq7_thresholds(qmin, qmean, n_candidates), "initial"
    w = alpha * float(q64.std(correction=0))
    tau = float(previous_threshold)
    if tau + w < qmin:
        return eq7_thresholds(qmin, qmean, n_candidates), "fallback"
    lo, hi = max(tau - w, qmin), tau + w
    k = refine_candidates
    return [lo + i / (k - 1) * (hi - lo) for i in range(k)], "refine"


def dilate_masks(masks: Tensor, radius: int) -> Tensor:
    """Square dilation of ``(K, H, W)`` bool masks: max-pool with a ``(2r+1) x (2r+1)`` window (``r = 0``: as is)."""
    if radius == 0:
        return masks
    pooled = F.max_pool2d(masks[:, None].float(), kernel_size=2 * radius + 1, stride=1, padding=radius)
    return pooled[:, 0] > 0.5


def candidate_masks(quality_map: Tensor, thresholds: Sequence[float], dilation: int = 0) -> tuple[Tensor, list[float]]:
    """Masks ``dilate(Q <= tau)`` for ascending thresholds; empty, full and duplicate masks dropped.

    The comparison is done in float64 (``Q`` converted exactly). All masks of one map are nested (a higher threshold
    selects a superset, dilation keeps inclusion), so two of them are equal exactly when their areas are: the first
    (lowest threshold) of each area is kept.

    Args:
        quality_map: ``(H, W)`` map ``Q``.
        thresholds: ascending thresholds.
        dilation: square dilation radius in pixels.

    Returns:
        ``(masks (K, H, W) bool, their thresholds)``; ``K`` may be 0.

    Example:
        >>> q = torch.tensor([[0.125, 0.25], [0.375, 0.875]])
        >>> masks, taus = candidate_masks(q, [0.0, 0.125, 0.1875, 0.25, 0.875])
        >>> taus, masks.sum(dim=(1, 2)).tolist()
        ([0.125, 0.25], [1, 2])
    """
    h, w = quality_map.shape
    q64 = quality_map.detach().double()
    if not thresholds:
        return torch.zeros(0, h, w, dtype=torch.bool, device=q64.device), []
    taus = torch.tensor(list(thresholds), dtype=torch.float64, device=q64.device)
    masks = dilate_masks(q64[None] <= taus[:, None, None], dilation)
    areas = masks.sum(dim=(1, 2)).tolist()
    keep, seen = [], set()
    for i, area in enumerate(areas):
        if 0 < area < h * w and area not in seen:
            seen.add(area)
            keep.append(i)
    return masks[keep], [float(thresholds[i]) for i in keep]


# ------------------------------------------------------------------------------------------------ quality maps
def _quality_scorer(
    x: Tensor,
    references: Any,
    backbone: str | nn.Module,
    layers: Sequence,
    layer_weights: Sequence[float] | None,
    weights_path: str | os.PathLike | None,
    progress: bool,
) -> Scorer:
    """PuzzleSim maps of candidate batches against the references, embedded once into a memory (a given memory is
    checked and reused)."""
    if isinstance(references, PuzzleSimMemory):
        # resize and precision are no options of the loop: the memory's own values apply
        resize, precision = references.resize, references.precision
    else:
        resize, precision = None, "float32"
    options = PuzzleSimOptions(
        backbone=backbone,
        layers=layers,
        layer_weights=layer_weights,
        weights_path=weights_path,
        resize=resize,
        precision=precision,
        # a custom extractor's maps use the exhaustive search, as they always have (the result is exact either way)
        screening="off" if isinstance(backbone, nn.Module) else "auto",
    )
    memory = PuzzleSimMemory.adopt_or_build(references, options, device=x.device, progress=progress)
    memory.check_test_images(x, layers=options.layers, name="image")

    def score(batch: Tensor) -> Tensor:
        return memory.similarity_map_for(batch, options)

    return score


# ------------------------------------------------------------------------------------------------ inpainting
def _inpaint_batch(inpainter: Inpainter, cur: Tensor, masks: Tensor, max_batch: int | None) -> Tensor:
    """Inpaint ``cur`` with each of ``masks`` (``(n, H, W)`` bool), in chunks of ``max_batch``; checked output."""
    n = masks.shape[0]
    step = n if max_batch is None else max_batch
    parts = []
    for s in range(0, n, step):
        m = masks[s : s + step, None].to(cur.dtype)
        k = m.shape[0]
        out = inpainter(cur.repeat(k, 1, 1, 1), m)  # a fresh copy per call: a backend may write into its input
        expected = (k, 3, *cur.shape[-2:])
        if not isinstance(out, Tensor):
            raise ValueError(
                f"the inpainter must return a tensor of shape (B, 3, H, W) = {expected}; it returned "
                f"{type(out).__name__}"
            )
        if tuple(out.shape) != expected:
            raise ValueError(
                f"the inpainter returned shape {tuple(out.shape)} for {k} image(s) of {cur.shape[-2]}x{cur.shape[-1]} "
                f"pixels; expected {expected} (same batch, 3 channels, same size)"
            )
        parts.append(check_images(out, "inpainter output").to(cur.device).clamp_(0, 1))
    return torch.cat(parts)


def puzzle_inpaint(
    image: Tensor,
    references: Any,
    inpainter: Inpainter,
    *,
    n_candidates: int = 50,
    alpha: float = 0.25,
    refine_candidates: int = 10,
    max_iters: int = 10,
    mask_dilation: int = 0,
    size_penalty: float = 1.0,
    batch_size: int = 8,
    backbone: str | nn.Module = "squeezenet1_1",
    layers: Sequence[int] = DEFAULT_LAYERS,
    layer_weights: Sequence[float] | None = DEFAULT_LAYER_WEIGHTS,
    weights_path: str | os.PathLike | None = None,
    progress: bool = True,
) -> InpaintResult:
    """Inpaint the artifacts PuzzleSim finds, progressively, keeping only changes that raise the quality map.

    Per round: thresholds ``tau`` of the current map ``Q`` (Eq. 7 between ``min Q`` and ``mean Q`` first, then
    ``refine_candidates`` values within ``alpha * std(Q)`` of the last accepted threshold, or Eq. 7 again when that
    window lies below ``min Q``), masks ``M = dilate(Q <= tau)`` (empty, full and duplicate masks dropped), every
    candidate inpainted (batched) and composited ``J = M * inpainter(I, M) + (1 - M) * I``, its map recomputed
    against the references embedded once, and scored
    ``delta = mean_{M}(Q_J - Q) / sigma_0 - size_penalty * |M| / (H W)``, where ``sigma_0`` is the population std of
    the input's map (:attr:`InpaintResult.spread`): gains count in units of the map's spread over the image, so
    the same ``size_penalty`` means the same thing for every backbone, layer set and scene (multiplying or shifting
    every map by a constant changes no decision). The best candidate whose map mean does not drop is
    accepted if ``delta > 0``; otherwise the loop stops (paper: stop when ``max delta <= 0``). It also stops on a flat
    map (``mean Q - min Q <= 1e-5``), when no candidate mask is left, and after ``max_iters`` rounds.

    Guarantees: ``quality_after >= quality_before``; the image changes only inside ``mask``; if nothing is accepted
    the input is returned unchanged (a copy) with an all-False mask; deterministic for deterministic inpainters.

    Args:
        image: ``(3, H, W)`` or ``(1, 3, H, W)``, float in [0, 1] or uint8.
        references: the training views: ``(N, 3, h, w)``, a sequence of ``(3, h, w)`` / ``(n, 3, h, w)`` tensors of
            any sizes, or a :class:`scenemetrics.puzzlesim.PuzzleSimMemory` built once and reused for many images
            (``backbone``, ``layers`` and ``weights_path`` must then match it; ``layers`` may be a subset; its
            ``resize`` and ``precision`` apply).
        inpainter: any callable ``(image (B,3,H,W), mask (B,1,H,W)) -> (B,3,H,W)`` in [0, 1], e.g.
            :class:`OpenCVInpainter`, :class:`LaMaInpainter`, :class:`DiffusersInpainter`. Its ``max_batch``
            attribute, if any, caps the images per call.
        n_candidates: thresholds of Eq. 7 (paper: 50).
        alpha: refinement half-width in units of the current map's population std.
        refine_candidates: thresholds per refinement round.
        max_iters: rounds at most, the first included.
        mask_dilation: square dilation radius of each candidate mask in pixels (0: the paper's masks as is).
        size_penalty: ``lambda`` of the mask-area regulariser, in units of ``sigma_0`` per unit area fraction:
            a candidate covering the whole image must raise its in-mask quality by ``size_penalty * sigma_0``.
        batch_size: candidates per inpainter / PuzzleSim call.
        backbone: PuzzleSim backbone name, or an ``nn.Module`` feature extractor ``forward(images01, layers) ->
            {layer: (B, C, h, w)}`` (its own normalisation; ``weights_path`` ignored; run in ``eval()`` without
            gradients, its training flag restored afterwards).
        layers: backbone layers (LPIPS slice indices for the named backbones; the module's keys otherwise).
        layer_weights: one weight per layer (default ``(0.67, 0.2, 0.13)``); ``None``: equal weights.
        weights_path: PuzzleSim backbone checkpoint file or folder (default: the hub cache).
        progress: tqdm bar, one tick per round (plus a candidate bar for more than 8 batches per round).

    Returns:
        :class:`InpaintResult`.

    Raises:
        ValueError: bad image (batch > 1, range, dtype, size), empty or bad references, bad options, options that
            conflict with a given memory, or an inpainter output of the wrong shape / range.
        TypeError: ``inpainter`` is not callable.

    Example:
        >>> import os, tempfile, torch
        >>> from scenemetrics.inpainting import OpenCVInpainter, puzzle_inpaint
        >>> from scenemetrics.puzzlesim import random_checkpoint
        >>> w = random_checkpoint("squeezenet1_1", os.path.join(tempfile.mkdtemp(), "sq.pth"))
        >>> refs = torch.linspace(0, 1, 64).view(1, 1, 1, 64).expand(2, 3, 64, 64)
        >>> image = refs[0].clone()
        >>> image[:, 20:32, 20:32] = torch.rand(3, 12, 12)  # a noise square
        >>> result = puzzle_inpaint(image, refs, OpenCVInpainter(), weights_path=w, max_iters=2, progress=False)
        >>> result.quality_after >= result.quality_before, result.image.shape
        (True, torch.Size([3, 64, 64]))
    """
    x = check_images(image, "image")
    if x.shape[0] != 1:
        raise ValueError(
            f"puzzle_inpaint processes one image; loop over the batch (`image` has shape {tuple(image.shape)}, "
            f"batch size {x.shape[0]})"
        )
    if not callable(inpainter):
        raise TypeError(
            f"`inpainter` must be callable as inpainter(image, mask) -> image; received {type(inpainter).__name__}"
        )
    n_candidates = check_int(n_candidates, "n_candidates", low=2)
    refine_candidates = check_int(refine_candidates, "refine_candidates", low=2)
    max_iters = check_int(max_iters, "max_iters", low=1)
    mask_dilation = check_int(mask_dilation, "mask_dilation", low=0)
    batch_size = check_int(batch_size, "batch_size", low=1)
    alpha = check_positive(alpha, "alpha")
    size_penalty = check_positive(size_penalty, "size_penalty", allow_zero=True)
    max_batch = check_max_batch(getattr(inpainter, "max_batch", None), "inpainter.max_batch")

    was_training = backbone.training if isinstance(backbone, nn.Module) else None
    if isinstance(backbone, nn.Module):
        backbone.eval()
    try:
        with torch.no_grad():
            scorer = _quality_scorer(x, references, backbone, layers, layer_weights, weights_path, progress)
            result = _run(
                x,
                scorer,
                inpainter,
                max_batch=max_batch,
                n_candidates=n_candidates,
                alpha=alpha,
                refine_candidates=refine_candidates,
                max_iters=max_iters,
                mask_dilation=mask_dilation,
                size_penalty=size_penalty,
                batch_size=batch_size,
                progress=progress,
            )
    finally:
        if isinstance(backbone, nn.Module) and was_training:
            backbone.train(True)
    if image.ndim == 3:
        result = InpaintResult(
            result.image[0],
            result.mask,
            result.history,
            result.quality_before,
            result.quality_after,
            result.map_before,
            result.map_after,
        )
    return result


def _run(
    x: Tensor,
    scorer: Scorer,
    inpainter: Inpainter,
    *,
    max_batch: int | None,
    n_candidates: int,
    alpha: float,
    refine_candidates: int,
    max_iters: int,
    mask_dilation: int,
    size_penalty: float,
    batch_size: int,
    progress: bool,
) -> InpaintResult:
    from tqdm.auto import tqdm

    h, w = x.shape[-2:]
    npix = h * w
    cur = x.clone()
    q = scorer(cur)[0]
    q0, mean0 = q, _map_mean(q)
    # gains in units of the input map's spread: > 0 whenever the flat-map test below lets a round run
    spread = _map_spread(q0)
    mean_q = mean0
    union = torch.zeros(h, w, dtype=torch.bool, device=x.device)
    tau_star: float | None = None
    history: list[dict] = []
    with tqdm(total=max_iters, desc="puzzle_inpaint", disable=not progress) as bar:
        for it in range(max_iters):
            qmin = float(q.min())
            if mean_q - qmin <= FLAT_TOLERANCE:
                break
            thresholds, sampling = candidate_thresholds(
                q, tau_star, n_candidates=n_candidates, refine_candidates=refine_candidates, alpha=alpha
            )
            masks, thresholds = candidate_masks(q, thresholds, mask_dilation)
            if not thresholds:
                break
            deltas: list[float] = []
            eligible: list[bool] = []
            fractions: list[float] = []
            best: int | None = None
            best_image = best_map = best_mask = None
            q64 = q.double()
            starts = range(0, len(thresholds), batch_size)
            for s in tqdm(starts, desc="candidates", leave=False, disable=not progress or len(starts) <= 8):
                mb = masks[s : s + batch_size]
                filled = _inpaint_batch(inpainter, cur, mb, max_batch)
                cand = torch.where(mb[:, None], filled, cur)  # composite: unmasked pixels stay bit-identical
                cand_maps = scorer(cand)
                for i in range(mb.shape[0]):
                    m = mb[i]
                    area = int(m.sum())
                    gain = float((cand_maps[i].double() - q64)[m].mean()) / spread
                    delta = gain - size_penalty * area / npix
                    ok = _map_mean(cand_maps[i]) >= mean_q
                    deltas.append(delta)
                    eligible.append(ok)
                    fractions.append(area / npix)
                    if ok and (best is None or delta > deltas[best]):
                        best = len(deltas) - 1
                        best_image, best_map, best_mask = cand[i : i + 1].clone(), cand_maps[i].clone(), m
            accepted = best is not None and deltas[best] > 0
            if accepted:
                assert best_image is not None and best_map is not None and best_mask is not None and best is not None
                cur, q = best_image, best_map
                union |= best_mask
                tau_star = thresholds[best]
                mean_q = _map_mean(q)
            history.append(
                {
                    "iteration": it,
                    "sampling": sampling,
                    "thresholds": thresholds,
                    "deltas": deltas,
                    "eligible": eligible,
                    "mask_fractions": fractions,
                    "best_index": best,
                    "threshold": None if best is None else thresholds[best],
                    "delta": None if best is None else deltas[best],
                    "accepted": accepted,
                    "mean_quality": mean_q,
                }
            )
            bar.update(1)
            bar.set_postfix(quality=f"{mean_q:.4f}", delta="-" if best is None else f"{deltas[best]:.3g}")
            if not accepted:
                break
    return InpaintResult(cur, union, history, mean0, mean_q, q0, q)
