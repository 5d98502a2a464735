"""Benchmark: scenemetrics GBVS (batched torch, closed-form activation) against a naive NumPy GBVS, in one run.

The baseline, :func:`naive_gbvs`, computes the same maps the way the common Python port does: loops, SciPy
correlations, and a dense Markov matrix per feature map whose equilibrium is found by power iteration (MATLAB
``graphsalapply``, tolerance 1e-4). It is written independently of ``scenemetrics.osim.saliency``, from
Harel's MATLAB GBVS package with its default parameters, and also serves the tests as a float64 reference.

Prints one JSON object: median ms per 640x480 image at B = 1 and B = 8 on CPU (and CUDA when present), the speed-up
over the baseline, the absolute target (<= 50 ms per image at B = 1 on CPU) and max |difference| between the maps.
Wall-clock times on a shared machine include waiting for a core; the process CPU time is reported as well.

Usage:
    PYTHONPATH=src python benchmarks/osim_gbvs.py [--threads 2] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time

import numpy as np
from scipy import ndimage

_TAPS = np.array([1.0, 5.0, 10.0, 10.0, 5.0, 1.0])
_KNOTS = np.array([*range(0, 256, 16), 255], dtype=np.float64) / 255.0
_LUT = np.array(
    [
        [0.0249, 0.0262, 0.0293, 0.0363, 0.0566, 0.0916, 0.1387, 0.2064, 0.2940, 0.3926, 0.4929, 0.5767, 0.6536,
         0.7195, 0.7935, 0.8896, 1.0000],
        [0.0077, 0.0091, 0.0124, 0.0204, 0.0444, 0.0828, 0.1350, 0.2073, 0.2998, 0.4024, 0.5010, 0.5900, 0.6653,
         0.7323, 0.8024, 0.8918, 1.0000],
        [0.0423, 0.0435, 0.0469, 0.0567, 0.0835, 0.1222, 0.1782, 0.2529, 0.3452, 0.4403, 0.5286, 0.6064, 0.6769,
         0.7423, 0.8165, 0.9020, 1.0000],
    ]
)  # fmt: skip
_M = np.array([[18.32535, 44.60077, 7.46216], [4.09544, 28.20135, 6.66066], [0.02114, 0.10325, 1.05258]])
_LMS0 = np.array([34.9185389578, 19.3147966765, 0.5856108185])


def _mround(v: float) -> int:
    return math.floor(v + 0.5)


def _subsample_1d(x: np.ndarray) -> np.ndarray:
    """Along axis 0: output j = weighted mean of inputs 2j-2..2j+3 that exist."""
    n = x.shape[0]
    out = np.zeros((n // 2, *x.shape[1:]))
    for j in range(n // 2):
        acc, wsum = 0.0, 0.0
        for t in range(6):
            k = 2 * j - 2 + t
            if 0 <= k < n:
                acc = acc + _TAPS[t] * x[k]
                wsum += _TAPS[t]
        out[j] = acc / wsum
    return out


def naive_subsample(img: np.ndarray) -> np.ndarray:
    """MATLAB mySubsample of an (H, W) map: along x, then along y; identity when a side is <= 10."""
    if img.shape[0] <= 10 or img.shape[1] <= 10:
        return img
    return _subsample_1d(_subsample_1d(img.T).T)


def naive_gabor(theta_deg: float, phase: float) -> np.ndarray:
    t = math.radians(theta_deg)
    g = np.zeros((27, 27))
    for a, i in enumerate(range(-13, 14)):
        for b, j in enumerate(range(-13, 14)):
            major = i * math.cos(t) - j * math.sin(t)
            minor = -i * math.sin(t) - j * math.cos(t)
            g[a, b] = math.cos(2 * major + phase) * math.exp(-(major**2) / 8 - minor**2 / 32)
    g -= g.mean()
    return g / np.sqrt((g**2).sum())


def naive_attenuate(x: np.ndarray, border: int) -> np.ndarray:
    x = x.copy()
    h, w = x.shape
    b = min(border, h // 2, w // 2)
    for k in range(b):
        f = (k + 1) / (b + 1)
        x[k, :] *= f
        x[h - 1 - k, :] *= f
        x[:, k] *= f
        x[:, w - 1 - k] *= f
    return x


def _cubic(x: float, a: float = -0.5) -> float:
    x = abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _resize_matrix(n_in: int, n_out: int) -> np.ndarray:
    """PIL/torch antialiased bicubic (a = -0.5) resampling weights, (n_out, n_in)."""
    scale = n_in / n_out
    support = 2.0 * scale if scale >= 1 else 2.0
    inv = 1.0 / scale if scale >= 1 else 1.0
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        ws = np.array([_cubic((j - center + 0.5) * inv) for j in range(lo, hi)])
        w[i, lo:hi] = ws / ws.sum()
    return w


def naive_resize(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    return _resize_matrix(x.shape[0], size[0]) @ x @ _resize_matrix(x.shape[1], size[1]).T


def naive_dkl(r: np.ndarray, g: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    lin = [np.interp(c, _KNOTS, _LUT[i]) for i, c in enumerate((r, g, b))]
    lms = [sum(_M[i, j] * lin[j] for j in range(3)) - _LMS0[i] for i in range(3)]
    l0, l1, l2 = _LMS0
    f = 1 / (l0 + l1)
    n = math.sqrt(l0**2 + l1**2)
    mm = np.array([[math.sqrt(3) * f, math.sqrt(3) * f, 0], [n / l0 * f, -n / l1 * f, 0], [-f, -f, (l0 + l1) / l2 * f]])
    scale = (0.5774, 2.7525, 0.4526)
    return [scale[i] * sum(mm[i, j] * lms[j] for j in range(3)) for i in range(3)]


def naive_activation(m: np.ndarray, sigma: float, tol: float = 1e-4, max_iter: int = 100_000) -> np.ndarray:
    """Equilibrium of the GBVS Markov chain by power iteration (dense matrix), zeros for a constant map."""
    h, w = m.shape
    if m.max() - m.min() <= 1e-6 * max(1.0, np.abs(m).max()):
        return np.zeros_like(m)
    ys, xs = np.divmod(np.arange(h * w), w)
    d2 = (ys[:, None] - ys[None, :]) ** 2 + (xs[:, None] - xs[None, :]) ** 2
    v = m.reshape(-1)
    wts = np.abs(v[:, None] - v[None, :]) * np.exp(-d2 / (2 * sigma**2))
    markov = wts / wts.sum(axis=0, keepdims=True)
    p = np.full(h * w, 1.0 / (h * w))
    for _ in range(max_iter):
        q = markov @ p
        q /= q.sum()
        done = np.abs(q - p).sum() < tol
        p = q
        if done:
            break
    return p.reshape(h, w)


def _mat2gray(x: np.ndarray) -> np.ndarray:
    rng = x.max() - x.min()
    return (x - x.min()) / rng if rng > 1e-12 else np.zeros_like(x)


def naive_gbvs(img: np.ndarray, *, map_size: int = 32, tol: float = 1e-4) -> np.ndarray:
    """GBVS (DIO, levels 2-4, MATLAB defaults) of an (H, W, 3) RGB image in [0, 1], float64, one map at a time."""
    H, W = img.shape[:2]
    scale = map_size / max(H, W)
    hm, wm = max(1, _mround(H * scale)), max(1, _mround(W * scale))
    r, g, b = (img[..., c].astype(np.float64) for c in range(3))
    lum = np.maximum(np.maximum(r, g), b)
    planes = {"r": r, "g": g, "b": b, "l": lum}
    maps = []
    gabors = [(naive_gabor(a, 0.0), naive_gabor(a, math.pi / 2)) for a in (0.0, 45.0, 90.0, 135.0)]
    for level in range(1, 5):
        planes = {k: naive_subsample(v) for k, v in planes.items()}
        if level < 2:
            continue
        level_maps = [*naive_dkl(planes["r"], planes["g"], planes["b"]), planes["l"]]
        for g0, g90 in gabors:
            e = np.abs(ndimage.correlate(planes["l"], g0, mode="nearest"))
            e += np.abs(ndimage.correlate(planes["l"], g90, mode="nearest"))
            level_maps.append(naive_attenuate(e, 13))
        maps += [naive_resize(m, (hm, wm)) for m in level_maps]
    sigma = 0.15 * (hm + wm) / 2
    master = sum(naive_activation(m, sigma, tol) ** 1.5 for m in maps)
    master = _mat2gray(naive_attenuate(master, 4))
    sb = 0.02 * max(hm, wm)
    rad = _mround(2 * sb)
    if rad >= 1:
        k = np.exp(-(np.arange(-rad, rad + 1) ** 2) / (2 * sb**2))
        k /= k.sum()
        master = ndimage.correlate1d(master, k, axis=1, mode="nearest")
        master = ndimage.correlate1d(master, k, axis=0, mode="nearest")
    master = _mat2gray(master)
    return _mat2gray(naive_resize(master, (H, W)))


def _median_ms(fn, repeats: int, clock=time.perf_counter) -> float:
    fn()  # warm-up (constant caches, allocator)
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    import torch

    from scenemetrics.osim.random import synthetic_images
    from scenemetrics.osim.saliency import gbvs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    images = synthetic_images(8, (480, 640), seed=0)
    one = images[:1]
    np_img = one[0].permute(1, 2, 0).double().numpy()

    res: dict = {"benchmark": "osim_gbvs", "image": "640x480", "threads": args.threads, "repeats": args.repeats}
    res["machine"] = platform.processor() or platform.machine()
    res["cpu_b1_ms_per_image"] = _median_ms(lambda: gbvs(one), args.repeats)
    res["cpu_b8_ms_per_image"] = _median_ms(lambda: gbvs(images), max(3, args.repeats // 2)) / 8
    res["baseline_numpy_ms_per_image"] = _median_ms(lambda: naive_gbvs(np_img), max(3, args.repeats // 2))
    res["speedup_vs_baseline_b1"] = res["baseline_numpy_ms_per_image"] / res["cpu_b1_ms_per_image"]
    # CPU time used by this process: on a shared, overloaded machine it is closer to the unloaded wall time than
    # perf_counter (with --threads 1 the two coincide on an idle machine)
    res["cpu_b1_process_time_ms_per_image"] = _median_ms(lambda: gbvs(one), args.repeats, time.process_time)
    res["baseline_process_time_ms_per_image"] = _median_ms(lambda: naive_gbvs(np_img), 3, time.process_time)
    res["target_ms_per_image_b1_cpu"] = 50.0
    res["meets_target"] = res["cpu_b1_ms_per_image"] <= 50.0
    ref = naive_gbvs(np_img, tol=1e-12)
    ours = gbvs(one)[0].double().numpy()
    res["max_abs_diff_vs_baseline_tol1e-4"] = float(np.abs(naive_gbvs(np_img) - ours).max())
    res["max_abs_diff_vs_exact_equilibrium"] = float(np.abs(ref - ours).max())
    if torch.cuda.is_available():
        dev = torch.device("cuda")
        g1, g8 = one.to(dev), images.to(dev)

        def run(x: torch.Tensor) -> None:
            gbvs(x)
            torch.cuda.synchronize()

        res["cuda_device"] = torch.cuda.get_device_name()
        res["cuda_b1_ms_per_image"] = _median_ms(lambda: run(g1), args.repeats)
        res["cuda_b8_ms_per_image"] = _median_ms(lambda: run(g8), args.repeats) / 8
        res["cuda_max_abs_diff_vs_cpu"] = float((gbvs(g1).cpu() - gbvs(one)).abs().max())
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
