"""Controlled degradations (PRISM's four kinds at three levels, OSIM's object blur, misaligned cameras) and the
sweep statistics (Spearman of score vs level, fraction of monotone scenes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

from scenemetrics.agreement import (
    DEGRADATION_PARAMS,
    DEGRADATIONS,
    MISALIGNMENT_ANGLES,
    blur_objects,
    degrade,
    gaussian_blur,
    gaussian_noise,
    hue_shift,
    misaligned_cameras,
    salt_and_pepper,
    sweep_statistics,
)


def _views(b=3, h=48, w=64, seed=0) -> torch.Tensor:
    # values in [0.2, 0.8]: noise of the first levels rarely clips
    return 0.2 + 0.6 * torch.rand(b, 3, h, w, generator=torch.Generator().manual_seed(seed))


def _psnr(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """PSNR per image from its definition (peak 1)."""
    return 10 * torch.log10(1.0 / ((x.double() - ref.double()) ** 2).mean(dim=(1, 2, 3)))


def _ranks(v: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) by counting: rank = #smaller + (#equal + 1) / 2."""
    return np.array([(v < x).sum() + ((v == x).sum() + 1) / 2 for x in v])


def _spearman_by_hand(levels: np.ndarray, scores: np.ndarray) -> float:
    x, y = _ranks(np.tile(levels, len(scores)).astype(float)), _ranks(scores.reshape(-1))
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt((dx**2).sum() * (dy**2).sum()))


# ---------------------------------------------------------------------------------------------- the four kinds


def test_levels_are_documented_constants():
    assert DEGRADATIONS == ("blur", "hue", "noise", "saltpepper")
    for kind in DEGRADATIONS:
        values = DEGRADATION_PARAMS[kind]
        assert len(values) == 3 and list(values) == sorted(values) and values[0] > 0
    with pytest.raises(TypeError):
        DEGRADATION_PARAMS["blur"] = (1.0,)  # read-only


def test_psnr_under_noise_is_monotone_by_construction():
    views = _views()
    psnr = torch.stack([_psnr(degrade(views, "noise", level, seed=7), views) for level in (1, 2, 3)], dim=1)
    assert (psnr[:, 1:] < psnr[:, :-1]).all()
    stats = sweep_statistics(psnr.numpy(), [1, 2, 3], higher_is_better=True)
    assert stats.monotone_fraction == 1.0 and stats.monotone.all() and stats.n_scenes == 3
    assert stats.spearman < 0
    assert stats.spearman == pytest.approx(_spearman_by_hand(np.array([1, 2, 3]), psnr.numpy()), abs=1e-12)
    # the noise is one standard normal field scaled per level: where nothing clips, (x_k - x) / sigma_k agree
    n1, n3 = degrade(views, "noise", 1, seed=7), degrade(views, "noise", 3, seed=7)
    inside = (n3 > 0) & (n3 < 1)
    s1, s3 = DEGRADATION_PARAMS["noise"][0], DEGRADATION_PARAMS["noise"][2]
    torch.testing.assert_close(((n1 - views) / s1)[inside], ((n3 - views) / s3)[inside], atol=1e-4, rtol=0)


def test_noise_is_seeded_and_clipped():
    views = _views()
    a = gaussian_noise(views, 0.1, seed=3)
    assert torch.equal(a, gaussian_noise(views, 0.1, seed=3))
    assert not torch.equal(a, gaussian_noise(views, 0.1, seed=4))
    assert a.min() >= 0 and a.max() <= 1
    strong = gaussian_noise(views, 5.0, seed=3)
    assert ((strong == 0) | (strong == 1)).float().mean() > 0.8  # clipped, never outside [0, 1]
    assert torch.equal(gaussian_noise(views, 0.0), views)
    # the empirical standard deviation where nothing clips is the level's sigma
    mid = torch.full((1, 3, 128, 128), 0.5)
    assert float((gaussian_noise(mid, 0.05, seed=0) - mid).std()) == pytest.approx(0.05, rel=0.02)


def test_hue_shift_of_a_grey_image_is_a_no_op_and_red_turns_green():
    grey = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(1)).expand(2, 3, 16, 16)
    for level in (1, 2, 3):
        torch.testing.assert_close(degrade(grey, "hue", level), grey, atol=1e-6, rtol=0)
    red = torch.zeros(1, 3, 4, 4)
    red[:, 0] = 1.0
    green = torch.zeros(1, 3, 4, 4)
    green[:, 1] = 1.0
    torch.testing.assert_close(hue_shift(red, 1 / 3), green, atol=1e-6, rtol=0)
    # a saturated colour changes, by more at a larger level
    colour = _views(1)
    diffs = [float((degrade(colour, "hue", level) - colour).abs().mean()) for level in (1, 2, 3)]
    assert 0 < diffs[0] < diffs[1] < diffs[2]


def test_blur_of_a_constant_image_is_a_no_op():
    const = torch.full((2, 3, 20, 30), 0.37)
    for level in (1, 2, 3):
        torch.testing.assert_close(degrade(const, "blur", level), const, atol=1e-6, rtol=0)
    # blur smooths: the variance of a random image falls level by level
    views = _views()
    var = [float(degrade(views, "blur", level).var()) for level in range(4)]
    assert var[0] > var[1] > var[2] > var[3]
    # the sigma is the table's value at a 256-pixel shorter side, scaled with the shorter side
    wide = torch.rand(1, 3, 128, 200, generator=torch.Generator().manual_seed(2))
    assert torch.equal(degrade(wide, "blur", 2), gaussian_blur(wide, DEGRADATION_PARAMS["blur"][1] * 128 / 256))


def test_gaussian_blur_kernel_sums_to_one_and_rejects_too_wide_kernels():
    impulse = torch.zeros(1, 3, 31, 31)
    impulse[..., 15, 15] = 1.0
    out = gaussian_blur(impulse, 2.0)
    assert float(out.sum(dim=(2, 3)).min()) == pytest.approx(1.0, abs=1e-5)
    assert out[0, 0, 15, 15] == out.max()
    with pytest.raises(ValueError, match="sigma"):
        gaussian_blur(torch.rand(1, 3, 5, 5), 2.0)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_blur(torch.rand(1, 3, 5, 5), 0.0)


def test_salt_and_pepper_fraction_matches_the_level_and_levels_are_nested():
    mid = torch.full((2, 3, 120, 150), 0.5)
    hits = []
    for level, amount in enumerate(DEGRADATION_PARAMS["saltpepper"], start=1):
        out = degrade(mid, "saltpepper", level, seed=11)
        hit = (out != 0.5).any(dim=1)
        assert torch.equal(hit, (out != 0.5).all(dim=1))  # the three channels of a pixel together
        n = hit.numel()
        assert abs(float(hit.float().mean()) - amount) <= 5 * math.sqrt(amount * (1 - amount) / n)
        values = out.permute(0, 2, 3, 1)[hit]
        assert ((values == 0) | (values == 1)).all()
        salt = float((values[:, 0] == 1).float().mean())
        assert abs(salt - 0.5) <= 5 * math.sqrt(0.25 / len(values))
        hits.append(hit)
    assert (hits[0] <= hits[1]).all() and (hits[1] <= hits[2]).all()  # nested
    assert torch.equal(salt_and_pepper(mid, 0.05, seed=1), salt_and_pepper(mid, 0.05, seed=1))
    assert not torch.equal(salt_and_pepper(mid, 0.05, seed=1), salt_and_pepper(mid, 0.05, seed=2))
    assert torch.equal(salt_and_pepper(mid, 0.0), mid)
    assert bool((salt_and_pepper(mid, 1.0) != 0.5).all())


def test_level_zero_uint8_empty_batch_and_bad_inputs():
    views = _views(2)
    u8 = (views * 255).round().to(torch.uint8)
    for kind in DEGRADATIONS:
        assert torch.equal(degrade(views, kind, 0), views)
        out = degrade(u8, kind, 2, seed=0)
        assert out.dtype == torch.float32 and out.shape == views.shape
        assert degrade(torch.zeros(0, 3, 8, 8), kind, 1).shape == (0, 3, 8, 8)
        single = degrade(views[0], kind, 1, seed=5)
        assert single.shape == (1, 3, 48, 64)
    with pytest.raises(ValueError, match="kind"):
        degrade(views, "jpeg", 1)
    with pytest.raises(ValueError, match="level"):
        degrade(views, "blur", 4)
    with pytest.raises(ValueError, match="images"):
        degrade(views * 2, "noise", 1)
    with pytest.raises(ValueError, match="images"):
        degrade(views[:, :2], "hue", 1)
    with pytest.raises(ValueError, match="seed"):
        degrade(views, "noise", 1, seed=-1)
    with pytest.raises(ValueError, match="amount"):
        salt_and_pepper(views, 1.5)
    with pytest.raises(ValueError, match="shift"):
        hue_shift(views, 0.7)
    with pytest.raises(ValueError, match="std"):
        gaussian_noise(views, -0.1)


# ---------------------------------------------------------------------------------------------- OSIM's object blur


def test_blur_objects_cumulative_and_single():
    views = _views(2, 40, 60)
    boxes = [[[0, 0, 10, 10], [20.5, 5.2, 40, 30]], []]
    steps = blur_objects(views, boxes, sigma=2.0)
    assert steps[0].shape == (2, 3, 40, 60) and steps[1].shape == (0, 3, 40, 60)
    blurred = gaussian_blur(views, 2.0)
    inside = [torch.zeros(40, 60, dtype=torch.bool) for _ in range(2)]
    inside[0][0:10, 0:10] = True
    inside[1][5:30, 20:40] = True  # floor(y0) .. ceil(y1) - 1, floor(x0) .. ceil(x1) - 1
    union = inside[0] | inside[1]
    for k, mask in enumerate((inside[0], union)):
        step = steps[0][k]
        assert torch.equal(step[:, mask], blurred[0][:, mask])
        assert torch.equal(step[:, ~mask], views[0][:, ~mask])
    single = blur_objects(views, boxes, sigma=2.0, mode="single")[0]
    assert torch.equal(single[0], steps[0][0])
    assert torch.equal(single[1][:, inside[1]], blurred[0][:, inside[1]])
    assert torch.equal(single[1][:, ~inside[1]], views[0][:, ~inside[1]])
    # PSNR against the original falls as objects are added: a sweep over the number of blurred objects
    psnr = _psnr(steps[0], views[0].expand(2, 3, 40, 60))
    assert psnr[1] < psnr[0]
    default = blur_objects(views[:1], [boxes[0]])[0]
    assert torch.equal(default[0][:, inside[0]], gaussian_blur(views[:1], 4.0 * 40 / 256)[0][:, inside[0]])


def test_blur_objects_bad_boxes():
    views = _views(1, 20, 30)
    with pytest.raises(ValueError, match=r"boxes\[0\]\[1\]"):
        blur_objects(views, [[[0, 0, 5, 5], [25, 0, 31, 5]]])  # x1 beyond the width: nothing is clipped
    with pytest.raises(ValueError, match=r"boxes\[0\]\[0\]"):
        blur_objects(views, [[[5, 5, 5, 8]]])  # empty box
    with pytest.raises(ValueError, match=r"boxes\[0\]"):
        blur_objects(views, [[[0, 0, 5]]])
    with pytest.raises(ValueError, match="boxes"):
        blur_objects(views, [[[0, 0, 5, 5]], [[0, 0, 5, 5]]])  # two box lists for one view
    with pytest.raises(ValueError, match="mode"):
        blur_objects(views, [[]], mode="all")


# ---------------------------------------------------------------------------------------------- misaligned cameras


def _look_at(centre, target=(0.0, 0.0, 0.0), up=(0.0, 0.0, 1.0)) -> torch.Tensor:
    """An OpenCV camera (x right, y down, z forward) at ``centre`` looking at ``target``."""
    c, t, u = (np.asarray(v, dtype=np.float64) for v in (centre, target, up))
    z = (t - c) / np.linalg.norm(t - c)
    x = np.cross(z, u)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    m = np.eye(4)
    m[:3, :3] = np.stack([x, y, z], axis=1)
    m[:3, 3] = c
    return torch.from_numpy(m)


def test_orbit_changes_the_azimuth_and_keeps_looking_at_the_pivot():
    cams = torch.stack([_look_at((2.7 * math.cos(a), 2.7 * math.sin(a), 1.35)) for a in (0.3, 2.0)])
    out = misaligned_cameras(cams, [22.5, 45.0, 90.0])
    assert out.c2w.shape == (3, 2, 4, 4) and out.intrinsics is None
    assert out.angles.tolist() == [22.5, 45.0, 90.0]
    for li, angle in enumerate((22.5, 45.0, 90.0)):
        for b in range(2):
            before, after = cams[b], out.c2w[li, b]
            c0, c1 = before[:3, 3], after[:3, 3]
            az0, az1 = math.degrees(math.atan2(c0[1], c0[0])), math.degrees(math.atan2(c1[1], c1[0]))
            assert (az1 - az0) % 360 == pytest.approx(angle, abs=1e-9)
            assert float(c1[2]) == pytest.approx(float(c0[2]), abs=1e-12)  # height
            assert float(c1.norm()) == pytest.approx(float(c0.norm()), abs=1e-12)  # distance to the pivot
            forward = after[:3, 2]
            torch.testing.assert_close(forward, -c1 / c1.norm(), atol=1e-12, rtol=0)  # still looks at the pivot
            r = after[:3, :3]
            torch.testing.assert_close(r.T @ r, torch.eye(3, dtype=torch.float64), atol=1e-12, rtol=0)
            assert float(torch.linalg.det(r)) == pytest.approx(1.0, abs=1e-12)
            assert after[3].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_in_place_rotation_pivot_axis_and_identity():
    cam = _look_at((1.0, -2.0, 0.5), target=(0.0, 0.0, 0.5))
    out = misaligned_cameras(cam, [0.0, 30.0], mode="in_place")
    assert out.c2w.shape == (2, 1, 4, 4)
    torch.testing.assert_close(out.c2w[0, 0], cam, atol=1e-15, rtol=0)  # angle 0: unchanged
    torch.testing.assert_close(out.c2w[1, 0, :3, 3], cam[:3, 3], atol=1e-15, rtol=0)  # the centre stays
    rz = torch.tensor([[math.cos(math.pi / 6), -math.sin(math.pi / 6), 0], [math.sin(math.pi / 6),
                       math.cos(math.pi / 6), 0], [0, 0, 1]], dtype=torch.float64)  # fmt: skip
    torch.testing.assert_close(out.c2w[1, 0, :3, :3], rz @ cam[:3, :3], atol=1e-12, rtol=0)
    # an orbit about the x axis through (0, 0, 1): a centre at (0, 1, 1) goes to (0, 0, 2) at 90 degrees
    cam2 = torch.eye(4, dtype=torch.float64)
    cam2[:3, 3] = torch.tensor([0.0, 1.0, 1.0])
    turned = misaligned_cameras(cam2, [90.0], pivot=(0, 0, 1), axis=(2.0, 0, 0)).c2w[0, 0, :3, 3]
    torch.testing.assert_close(turned, torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64), atol=1e-12, rtol=0)


def test_misaligned_cameras_dtype_intrinsics_and_errors():
    cam = _look_at((2.0, 0.0, 1.0)).float()
    k = torch.tensor([[100.0, 0, 32], [0, 100.0, 32], [0, 0, 1]])
    out = misaligned_cameras(cam, intrinsics=k)
    assert out.c2w.dtype == torch.float32 and out.c2w.shape == (len(MISALIGNMENT_ANGLES), 1, 4, 4)
    assert out.intrinsics.shape == (3, 1, 3, 3) and torch.equal(out.intrinsics[2, 0], k)
    assert MISALIGNMENT_ANGLES == (22.5, 45.0, 67.5)
    with pytest.raises(ValueError, match="c2w"):
        misaligned_cameras(torch.eye(3))
    bad = torch.eye(4)
    bad[0, 0] = 2.0
    with pytest.raises(ValueError, match="rigid"):
        misaligned_cameras(bad)
    with pytest.raises(ValueError, match="rigid"):
        misaligned_cameras(torch.diag(torch.tensor([1.0, 1.0, -1.0, 1.0])))  # a reflection
    with pytest.raises(ValueError, match="axis"):
        misaligned_cameras(torch.eye(4), axis=(0, 0, 0))
    with pytest.raises(ValueError, match="mode"):
        misaligned_cameras(torch.eye(4), mode="yaw")
    with pytest.raises(ValueError, match="intrinsics"):
        misaligned_cameras(torch.eye(4).repeat(2, 1, 1), intrinsics=torch.eye(3).repeat(3, 1, 1))
    with pytest.raises(ValueError, match="angles"):
        misaligned_cameras(torch.eye(4), [float("nan")])


# ---------------------------------------------------------------------------------------------- sweep statistics


def test_sweep_statistics_strict_non_strict_and_directions():
    scores = np.array([[30.0, 25.0, 20.0], [28.0, 28.0, 21.0], [10.0, 12.0, 9.0]])
    strict = sweep_statistics(scores, higher_is_better=True)
    assert strict.monotone.tolist() == [True, False, False] and strict.monotone_fraction == pytest.approx(1 / 3)
    loose = sweep_statistics(scores, higher_is_better=True, strict=False)
    assert loose.monotone.tolist() == [True, True, False]
    assert strict.spearman == pytest.approx(_spearman_by_hand(np.arange(3), scores), abs=1e-12)
    assert strict.spearman < 0
    # a lower-is-better metric (e.g. LPIPS) that degrades rises: positive rho, monotone in its own direction
    lower = sweep_statistics(-scores, higher_is_better=False)
    assert lower.monotone.tolist() == [True, False, False] and lower.spearman == pytest.approx(-strict.spearman)
    assert sweep_statistics(-scores, higher_is_better=True).monotone.tolist() == [False, False, False]
    # None: monotone in either direction
    either = sweep_statistics(np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [1.0, 3.0, 2.0]]), higher_is_better=None)
    assert either.monotone.tolist() == [True, True, False]
    # tol: steps of at most tol count as ties
    assert sweep_statistics([[1.0, 0.95, 0.5]], higher_is_better=True, tol=0.1).monotone.tolist() == [False]
    assert sweep_statistics([[1.0, 1.05, 0.5]], higher_is_better=True, strict=False, tol=0.1).monotone.tolist() == [
        True
    ]
    # levels only matter through their order
    assert sweep_statistics(scores, [0, 1, 10], higher_is_better=True).spearman == strict.spearman


def test_sweep_statistics_orders_infinite_scores():
    """PSNR of an undegraded view against itself is +inf: an ordered value, not a missing one."""
    inf = float("inf")
    scores = [[inf, 30.0, 20.0], [inf, inf, 10.0], [inf, 25.0, 25.0]]
    strict = sweep_statistics(scores, higher_is_better=True)
    assert strict.monotone.tolist() == [True, False, False]
    assert sweep_statistics(scores, higher_is_better=True, strict=False).monotone.tolist() == [True, True, True]
    # the same ranks as with +inf replaced by a finite value above every score
    finite = [[1e9 if v == inf else v for v in row] for row in scores]
    expected = scipy.stats.spearmanr([0, 1, 2] * 3, [v for row in finite for v in row]).statistic
    assert strict.spearman == pytest.approx(expected, abs=1e-12) and strict.spearman < 0
    with pytest.warns(UserWarning, match="constant"):
        assert math.isnan(sweep_statistics([[inf, inf]], higher_is_better=True).spearman)


def test_sweep_statistics_degenerate_and_errors():
    with pytest.warns(UserWarning, match="constant"):
        flat = sweep_statistics([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], higher_is_better=True)
    assert math.isnan(flat.spearman) and flat.monotone_fraction == 0.0
    with pytest.warns(UserWarning, match="constant"):
        assert sweep_statistics([[0.5, 0.5]], higher_is_better=True, strict=False).monotone_fraction == 1.0
    with pytest.raises(ValueError, match="NaN value in scene 1"):
        sweep_statistics([[1.0, 0.5], [1.0, float("nan")]], higher_is_better=True)
    with pytest.warns(UserWarning, match="dropped 1 of 2"):
        omitted = sweep_statistics([[1.0, 0.5], [1.0, float("nan")]], higher_is_better=True, nan_policy="omit")
    assert omitted.n_scenes == 1 and omitted.monotone_fraction == 1.0
    with pytest.warns(UserWarning, match="dropped 1 of 1"):
        none_left = sweep_statistics([[1.0, float("nan")]], higher_is_better=True, nan_policy="omit")
    assert none_left.n_scenes == 0 and math.isnan(none_left.monotone_fraction) and math.isnan(none_left.spearman)
    with pytest.raises(ValueError, match="n_levels >= 2"):
        sweep_statistics([[1.0], [2.0]], higher_is_better=True)
    with pytest.raises(ValueError, match="levels"):
        sweep_statistics([[1.0, 2.0]], [1, 1], higher_is_better=True)
    with pytest.raises(ValueError, match="higher_is_better"):
        sweep_statistics([[1.0, 2.0]], higher_is_better="yes")
    with pytest.raises(ValueError, match="tol"):
        sweep_statistics([[1.0, 2.0]], higher_is_better=True, tol=-1)
    with pytest.raises(TypeError):
        sweep_statistics([[1.0, 2.0]])  # the direction is required


@pytest.mark.gpu
@pytest.mark.parametrize("kind", DEGRADATIONS)
def test_cuda_equals_cpu(kind):
    # the random draws come from a CPU generator, so noise and salt-and-pepper hit the same pixels on every device
    views = _views(2, 40, 56)
    cpu = degrade(views, kind, 3, seed=4)
    gpu = degrade(views.cuda(), kind, 3, seed=4)
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=0)
    steps = blur_objects(views.cuda(), [[[0, 0, 10, 10]], []])
    assert steps[0].device.type == "cuda" and steps[1].shape == (0, 3, 40, 56)
