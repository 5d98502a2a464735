"""SSIM maps and the published protocols' SSIM, against a brute-force loop of each definition and torchmetrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

from scenemetrics.fullref import abs_error_map, gaussian_window, ssim, ssim_3dgs, ssim_map, ssim_nerfbaselines


def images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    """Random ``k/256`` images: exact in float32, and so are their products (at most 17 significant bits)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 257, (n, 3, h, w), generator=g).float() / 256


def pair(n: int, h: int, w: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A target and a render that resembles it (so SSIM is neither ~0 nor 1)."""
    target = images(n, h, w, seed)
    noise = images(n, h, w, seed + 1000)
    return ((0.8 * target + 0.2 * noise) * 256).round() / 256, target


def smooth_pair(n: int, h: int, w: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Smooth images with a flat patch: where float32 rounding of ``E[x^2] - E[x]^2`` matters most."""
    g = torch.Generator().manual_seed(seed)
    base = torch.nn.functional.interpolate(torch.rand(n, 3, h // 8, w // 8, generator=g), size=(h, w), mode="bilinear")
    base[..., : h // 3, : w // 3] = 0.7
    render = (base + 0.01 * torch.randn(base.shape, generator=g)).clamp(0, 1)
    return render, base


# ------------------------------------------------------------------------------------------ brute-force definitions


def window_2d() -> np.ndarray:
    d = np.arange(-5, 6, dtype=np.float64)
    w = np.exp(-(d**2) / (2 * 1.5**2))
    w /= w.sum()
    return np.outer(w, w)


def reflect(i: int, n: int) -> int:
    """torch's / NumPy's "reflect" padding: the edge pixel is not repeated (-1 -> 1, n -> n - 2)."""
    if i < 0:
        return -i
    if i >= n:
        return 2 * (n - 1) - i
    return i


def brute_ssim(p: np.ndarray, t: np.ndarray, border: str, data_range: float = 1.0) -> np.ndarray:
    """SSIM of one image pair ``(3, H, W)`` by explicit windows, in float64: ``(3, H', W')``.

    ``border``: ``"reflect"`` (torchmetrics: variances clamped at 0), ``"zeros"`` (3DGS: no clamping) or ``"valid"``
    (dm_pix / NerfBaselines: only inner positions; variances clipped at float32 eps^2, covariance to +-sqrt(vp vt)).
    """
    w2 = window_2d()
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    _, h, w = p.shape
    rows = range(5, h - 5) if border == "valid" else range(h)
    cols = range(5, w - 5) if border == "valid" else range(w)
    out = np.zeros((3, len(rows), len(cols)))
    for c in range(3):
        for oi, i in enumerate(rows):
            for oj, j in enumerate(cols):
                bp = np.zeros((11, 11))
                bt = np.zeros((11, 11))
                for a in range(11):
                    for b in range(11):
                        y, x = i + a - 5, j + b - 5
                        if border == "reflect":
                            y, x = reflect(y, h), reflect(x, w)
                        elif not (0 <= y < h and 0 <= x < w):  # zero padding
                            continue
                        bp[a, b], bt[a, b] = p[c, y, x], t[c, y, x]
                mp, mt = (w2 * bp).sum(), (w2 * bt).sum()
                vp = (w2 * bp * bp).sum() - mp * mp
                vt = (w2 * bt * bt).sum() - mt * mt
                cov = (w2 * bp * bt).sum() - mp * mt
                if border == "reflect":
                    vp, vt = max(vp, 0.0), max(vt, 0.0)
                elif border == "valid":
                    eps = float(np.finfo(np.float32).eps) ** 2
                    vp, vt = max(vp, eps), max(vt, eps)
                    cov = math.copysign(min(math.sqrt(vp * vt), abs(cov)), cov) if cov != 0 else 0.0
                out[c, oi, oj] = ((2 * mp * mt + c1) * (2 * cov + c2)) / ((mp * mp + mt * mt + c1) * (vp + vt + c2))
    return out


@pytest.fixture(scope="module")
def small_pair() -> tuple[torch.Tensor, torch.Tensor]:
    return pair(2, 13, 14, seed=0)


def test_gaussian_window_is_the_published_one():
    w = gaussian_window()
    d = np.arange(-5, 6)
    expected = np.exp(-(d**2) / 4.5) / np.exp(-(d**2) / 4.5).sum()
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-15)
    # by hand: the taps exp(-k^2 / 4.5) for k = 0..5 are 1, 0.800737, 0.411112, 0.135335, 0.028566, 0.003866, whose
    # symmetric sum is 3.759232, so the centre tap is 1 / 3.759232 = 0.266012
    assert float(w[5]) == pytest.approx(0.266012, abs=1e-6)
    assert float(w[0]) == pytest.approx(0.003866 / 3.759232, abs=1e-6)


def test_ssim_map_equals_the_brute_force_reflect_definition(small_pair):
    preds, target = small_pair
    got = ssim_map(preds, target)
    for b in range(2):
        expected = brute_ssim(preds[b].double().numpy(), target[b].double().numpy(), "reflect").mean(axis=0)
        np.testing.assert_allclose(got[b].numpy(), expected, atol=2e-6, rtol=0)


def test_ssim_3dgs_equals_the_brute_force_zero_padding_definition(small_pair):
    preds, target = small_pair
    got = ssim_3dgs(preds, target)
    assert got.dtype == torch.float32 and got.shape == (2,)
    for b in range(2):
        expected = brute_ssim(preds[b].double().numpy(), target[b].double().numpy(), "zeros").mean()
        assert float(got[b]) == pytest.approx(expected, abs=1e-6)


def test_ssim_nerfbaselines_equals_the_brute_force_valid_definition(small_pair):
    preds, target = small_pair
    got = ssim_nerfbaselines(preds, target)
    assert got.dtype == torch.float64  # NerfBaselines' own precision
    for b in range(2):
        expected = brute_ssim(preds[b].double().numpy(), target[b].double().numpy(), "valid")
        assert expected.shape == (3, 3, 4)  # (13 - 10) x (14 - 10) positions
        assert float(got[b]) == pytest.approx(expected.mean(), abs=1e-12)


@pytest.mark.parametrize("fn", [ssim_map, ssim, ssim_3dgs, ssim_nerfbaselines])
def test_cpu_strips_change_no_value(fn, monkeypatch):
    """On the CPU the SSIMs are computed in strips of rows (for the cache): every value equals the whole-image
    computation to the bit, with strips of 8 rows that do not divide the image (and a batch of 3)."""
    from scenemetrics.fullref import functional

    preds, target = pair(3, 45, 37, seed=7)
    monkeypatch.setattr(functional, "_STRIP_BYTES", 1)  # the smallest strips: 8 rows
    strips = fn(preds, target)
    monkeypatch.setattr(functional, "_STRIP_BYTES", 2**40)  # one strip: the whole image
    whole = fn(preds, target)
    assert strips.dtype == whole.dtype and torch.equal(strips, whole)


def test_strips_meet_the_brute_force_definitions(monkeypatch):
    from scenemetrics.fullref import functional

    monkeypatch.setattr(functional, "_STRIP_BYTES", 1)  # 8-row strips: 3 strips over 21 rows (11 valid rows: 2)
    preds, target = pair(1, 21, 14, seed=8)
    p, t = preds[0].double().numpy(), target[0].double().numpy()
    np.testing.assert_allclose(ssim_map(preds, target)[0].numpy(), brute_ssim(p, t, "reflect").mean(axis=0), atol=2e-6)
    assert float(ssim_3dgs(preds, target)[0]) == pytest.approx(brute_ssim(p, t, "zeros").mean(), abs=1e-6)
    assert float(ssim_nerfbaselines(preds, target)[0]) == pytest.approx(brute_ssim(p, t, "valid").mean(), abs=1e-12)


def test_a_gradient_is_computed_on_the_whole_image(monkeypatch):
    """Strips would add up the gradients of their overlapping rows in another order: with a gradient to compute,
    the whole image is filtered at once, so gradients do not depend on the strip size."""
    from scenemetrics.fullref import functional

    preds, target = pair(1, 40, 30, seed=9)
    grads = []
    for size in (1, 2**40):
        monkeypatch.setattr(functional, "_STRIP_BYTES", size)
        x = preds.clone().requires_grad_(True)
        ssim_map(x, target).sum().backward()
        grads.append(x.grad)
    assert float(grads[0].abs().max()) > 0 and torch.equal(grads[0], grads[1])


def test_the_three_definitions_differ_at_small_sizes(small_pair):
    # the point of the variants: at 13 x 14 the border rule moves SSIM by far more than rounding
    preds, target = small_pair
    a, b, c = ssim(preds, target), ssim_3dgs(preds, target), ssim_nerfbaselines(preds, target).float()
    assert float((a - b).abs().min()) > 1e-3 and float((a - c).abs().min()) > 1e-3


def test_constant_images_by_hand():
    # constant p = 1/4, t = 3/4: zero variances, so SSIM = (2 p t + C1) / (p^2 + t^2 + C1) wherever the window sees
    # only the image (everywhere with reflect padding; every valid position)
    p = torch.full((1, 3, 12, 13), 0.25)
    t = torch.full((1, 3, 12, 13), 0.75)
    expected = (2 * 0.25 * 0.75 + 1e-4) / (0.25**2 + 0.75**2 + 1e-4)
    torch.testing.assert_close(ssim_map(p, t), torch.full((1, 12, 13), expected), atol=2e-7, rtol=0)
    # dm_pix clips each variance below at eps^2 = 2^-46 (float32's eps squared): the contrast term becomes
    # C2 / (2 eps^2 + C2) instead of 1, i.e. 1 - 3.2e-11
    eps2 = 2.0**-46
    assert float(ssim_nerfbaselines(p, t)) == pytest.approx(expected * 9e-4 / (2 * eps2 + 9e-4), abs=1e-13)
    # zero padding: at the centre of a 11 x 11 image every window tap but none outside... here (12 x 13) the centre
    # pixel (5 or 6 from each border) sees only the image too, so it has the same value; the mean is pulled lower
    # because border windows see black
    assert float(ssim_3dgs(p, t)) < expected - 1e-3


def test_data_range_scales_the_constants():
    # constant images: SSIM = (2 p t + C1) / (p^2 + t^2 + C1) with C1 = (0.01 L)^2
    p = torch.full((1, 3, 8, 8), 0.25)
    t = torch.full((1, 3, 8, 8), 0.5)
    for data_range in (1.0, 2.0, 255.0):
        c1 = (0.01 * data_range) ** 2
        expected = (2 * 0.125 + c1) / (0.0625 + 0.25 + c1)
        assert float(ssim(p, t, data_range=data_range)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("n", "h", "w", "data_range"), [(1, 6, 6, 1.0), (3, 37, 41, 1.0), (2, 64, 53, 2.0), (1, 23, 18, 255.0)]
)
def test_ssim_map_equals_torchmetrics_full_image(n, h, w, data_range):
    preds, target = pair(n, h, w, seed=h)
    got = ssim_map(preds, target, data_range=data_range)
    # reference: torchmetrics in float64 (its float32 result carries its own rounding, compared below)
    score64, full64 = tm_ssim(
        preds.double(), target.double(), data_range=data_range, return_full_image=True, reduction="none"
    )
    torch.testing.assert_close(got, full64.mean(dim=1).float(), atol=1e-5, rtol=0)
    torch.testing.assert_close(ssim(preds, target, data_range=data_range), score64.float(), atol=1e-6, rtol=0)
    torch.testing.assert_close(got.mean(dim=(1, 2)), score64.float(), atol=1e-6, rtol=0)
    score32, full32 = tm_ssim(preds, target, data_range=data_range, return_full_image=True, reduction="none")
    torch.testing.assert_close(got, full32.mean(dim=1), atol=2e-5, rtol=0)
    torch.testing.assert_close(ssim(preds, target, data_range=data_range), score32, atol=1e-6, rtol=0)


def test_ssim_map_on_smooth_images_is_within_float32_rounding_of_torchmetrics():
    # on flat regions E[x^2] - E[x]^2 cancels: torchmetrics' own float32 result is off by up to ~1e-3 per pixel there
    # (against float64); ours is at least as close to the float64 value, and the means agree to ~1e-5
    preds, target = smooth_pair(2, 96, 128, seed=3)
    got = ssim_map(preds, target)
    _, full64 = tm_ssim(preds.double(), target.double(), data_range=1.0, return_full_image=True, reduction="none")
    _, full32 = tm_ssim(preds, target, data_range=1.0, return_full_image=True, reduction="none")
    exact = full64.mean(dim=1)
    ours_err = float((got.double() - exact).abs().max())
    theirs_err = float((full32.mean(dim=1).double() - exact).abs().max())
    assert ours_err <= max(theirs_err, 1e-5), (ours_err, theirs_err)
    assert ours_err < 2e-3
    torch.testing.assert_close(got.mean(dim=(1, 2)).double(), exact.mean(dim=(1, 2)), atol=5e-5, rtol=0)


def test_ssim_map_gradient_matches_torchmetrics():
    preds, target = pair(1, 20, 24, seed=5)
    a = preds.clone().requires_grad_(True)
    ssim_map(a, target).mean().backward()
    b = preds.double().clone().requires_grad_(True)
    tm_ssim(b, target.double(), data_range=1.0).backward()
    assert a.grad is not None and b.grad is not None and float(b.grad.abs().max()) > 0
    torch.testing.assert_close(a.grad.double(), b.grad, atol=1e-6, rtol=1e-3)


def test_identical_images_score_one():
    x = images(2, 16, 17, seed=9)
    assert ssim(x, x).tolist() == pytest.approx([1.0, 1.0], abs=1e-6)
    assert ssim_3dgs(x, x).tolist() == pytest.approx([1.0, 1.0], abs=1e-6)
    assert ssim_nerfbaselines(x, x).tolist() == pytest.approx([1.0, 1.0], abs=1e-12)


def test_uint8_and_unbatched_inputs():
    preds, target = pair(1, 16, 16, seed=11)
    p8 = (preds * 255).round().to(torch.uint8)
    t8 = (target * 255).round().to(torch.uint8)
    torch.testing.assert_close(ssim_map(p8, t8), ssim_map(p8.float() / 255, t8.float() / 255))
    torch.testing.assert_close(ssim_map(preds[0], target[0]), ssim_map(preds, target))
    torch.testing.assert_close(ssim_3dgs(preds[0], target[0]), ssim_3dgs(preds, target))


def test_empty_batch():
    e = torch.zeros(0, 3, 20, 20)
    assert ssim_map(e, e).shape == (0, 20, 20)
    assert ssim(e, e).shape == ssim_3dgs(e, e).shape == ssim_nerfbaselines(e, e).shape == (0,)
    assert abs_error_map(e, e).shape == (0, 20, 20)


def test_images_smaller_than_the_window():
    # reflect padding by 5 needs 6 pixels: a clear error naming the argument, not torch's padding error
    small = torch.rand(1, 3, 5, 20)
    with pytest.raises(ValueError, match=r"`preds` must be at least 6x6.*reflect"):
        ssim_map(small, small)
    with pytest.raises(ValueError, match=r"`target` must be at least 6x6"):
        ssim(torch.rand(1, 3, 20, 20), torch.rand(1, 3, 20, 5))
    # the valid-mode SSIM needs one window position: 11 x 11
    with pytest.raises(ValueError, match=r"`preds` must be at least 11x11"):
        ssim_nerfbaselines(torch.rand(1, 3, 10, 30), torch.rand(1, 3, 10, 30))
    # zero padding works at any size (3DGS's code does too): 1 x 1 is the brute-force value
    p, t = pair(1, 1, 1, seed=12)
    expected = brute_ssim(p[0].double().numpy(), t[0].double().numpy(), "zeros").mean()
    assert float(ssim_3dgs(p, t)) == pytest.approx(expected, abs=1e-6)
    # 6 x 6 is accepted and equals torchmetrics
    p, t = pair(1, 6, 6, seed=13)
    _, full = tm_ssim(p.double(), t.double(), data_range=1.0, return_full_image=True)
    torch.testing.assert_close(ssim_map(p, t), full.mean(dim=1).float(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("fn", [ssim_map, ssim, ssim_3dgs, ssim_nerfbaselines, abs_error_map])
def test_bad_inputs_name_the_argument(fn):
    x = torch.rand(1, 3, 16, 16)
    with pytest.raises(ValueError, match="same shape"):
        fn(x, torch.rand(1, 3, 16, 15))
    with pytest.raises(ValueError, match=r"`target`.*channels"):
        fn(x, torch.rand(1, 4, 16, 16))
    with pytest.raises(ValueError, match=r"`preds`.*\[0, 1\]"):
        fn(x * 2, x)
    with pytest.raises(TypeError, match="`preds`"):
        fn(x.numpy(), x)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_bad_data_range(bad):
    x = torch.rand(1, 3, 8, 8)
    with pytest.raises(ValueError, match="data_range"):
        ssim_map(x, x, data_range=bad)


def test_abs_error_map_by_hand():
    p = torch.zeros(1, 3, 2, 2)
    t = torch.tensor([[[[0.0, 0.5], [1.0, 0.25]]]]).expand(1, 3, 2, 2).clone()
    t[0, 0, 0, 0] = 0.75  # one channel differs: the channel mean is 0.25 there
    torch.testing.assert_close(abs_error_map(p, t), torch.tensor([[[0.25, 0.5], [1.0, 0.25]]]))
    torch.testing.assert_close(abs_error_map(t, p), abs_error_map(p, t))


@pytest.mark.gpu
def test_cpu_and_cuda_agree():
    preds, target = pair(2, 45, 61, seed=21)
    for fn in (ssim_map, ssim, ssim_3dgs, ssim_nerfbaselines, abs_error_map):
        cpu = fn(preds, target)
        gpu = fn(preds.cuda(), target.cuda())
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=0)
