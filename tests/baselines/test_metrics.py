"""The baseline metric classes equal their definitions on the embeddings computed directly: accumulation over
updates, the joint pairing with the source view, the unpaired sets, and the degenerate cases."""

from __future__ import annotations

import pytest
import torch

from scenemetrics.baselines import (
    CMMD,
    EmbeddingSimilarity,
    FrechetDistance,
    JointCMMD,
    JointFrechetDistance,
    KernelDistance,
    cmmd,
    frechet_distance,
    kernel_distance,
    load_clip,
    load_dinov2,
)

pytestmark = pytest.mark.extra("baselines")

DINO = {"image_size": 28}  # 2 x 2 patches of the tiny model: fast


def _images(n: int, seed: int, h: int = 30, w: int = 36) -> torch.Tensor:
    return torch.rand(n, 3, h, w, generator=torch.Generator().manual_seed(seed))


def test_frechet_distance_accumulates_unpaired_sets_and_equals_the_distance_of_the_embeddings(dinov2_folder):
    net = load_dinov2(dinov2_folder, image_size=28)
    fake, real = _images(5, 0), _images(4, 1)
    metric = FrechetDistance("dinov2", weights=dinov2_folder, **DINO)
    metric.update(fake[:2], real)  # unpaired: batch sizes differ
    metric.update(fake[2:], real[:0])  # renders only
    expected = frechet_distance(net(fake), net(real))
    assert float(metric.compute()) == pytest.approx(float(expected), rel=1e-4, abs=1e-5)
    same = FrechetDistance("dinov2", weights=dinov2_folder, **DINO)
    same.update(real, real)
    assert abs(float(same.compute())) < 1e-4


def test_joint_frechet_distance_pairs_each_image_with_its_source_view(dinov2_folder):
    net = load_dinov2(dinov2_folder, image_size=28)
    source, renders, refs = _images(4, 2), _images(4, 3), _images(4, 4)
    metric = JointFrechetDistance("dinov2", weights=dinov2_folder, **DINO)
    metric.update(source[:3], renders[:3], refs[:3])
    metric.update(source[3:], renders[3:], refs[3:])
    s = net(source)
    expected = frechet_distance(torch.cat([s, net(renders)], 1), torch.cat([s, net(refs)], 1))
    assert metric.feature_dim == 2 * net.dim
    assert float(metric.compute()) == pytest.approx(float(expected), rel=1e-4, abs=1e-5)
    with pytest.raises(ValueError, match="same number of images"):
        metric.update(source[:2], renders[:3], refs[:3])


def test_kernel_distance_equals_kid_on_the_embeddings_and_keeps_the_std(dinov2_folder):
    net = load_dinov2(dinov2_folder, image_size=28)
    fake, real = _images(7, 5), _images(6, 6)
    metric = KernelDistance("dinov2", weights=dinov2_folder, subsets=9, subset_size=4, seed=3, **DINO)
    metric.update(fake[:3], real[:3])
    metric.update(fake[3:], real[3:])
    mean, std = kernel_distance(net(fake), net(real), subsets=9, subset_size=4, seed=3)
    assert float(metric.compute()) == pytest.approx(float(mean), rel=1e-5, abs=1e-9)
    assert float(metric.std_) == pytest.approx(float(std), rel=1e-5, abs=1e-9) and float(std) > 0


@pytest.mark.parametrize("unbiased", [True, False])
def test_cmmd_and_joint_cmmd_equal_the_scaled_mmd_of_the_clip_embeddings(clip_folder, unbiased):
    net = load_clip(clip_folder)
    source, renders, refs = _images(5, 7), _images(5, 8), _images(5, 9)
    metric = CMMD("clip", weights=clip_folder, unbiased=unbiased)
    joint = JointCMMD("clip", weights=clip_folder, unbiased=unbiased)
    for part in (slice(0, 2), slice(2, 5)):
        metric.update(renders[part], refs[part])
        joint.update(source[part], renders[part], refs[part])
    e_s, e_r, e_t = net(source), net(renders), net(refs)
    assert float(metric.compute()) == pytest.approx(float(cmmd(e_r, e_t, unbiased=unbiased)), rel=1e-4, abs=1e-6)
    expected = cmmd(torch.cat([e_s, e_r], 1), torch.cat([e_s, e_t], 1), unbiased=unbiased)
    assert float(joint.compute()) == pytest.approx(float(expected), rel=1e-4, abs=1e-6)


def test_too_few_images_give_nan_and_a_warning(clip_folder, dinov2_folder):
    one = _images(1, 10)
    for metric in (
        FrechetDistance("dinov2", weights=dinov2_folder, **DINO),
        KernelDistance("dinov2", weights=dinov2_folder, **DINO),
        CMMD("clip", weights=clip_folder),
        EmbeddingSimilarity("clip", weights=clip_folder),
    ):
        if not isinstance(metric, EmbeddingSimilarity):
            metric.update(one, _images(3, 11))
        with pytest.warns(UserWarning, match="returning NaN"):
            value = metric.compute()
        assert torch.isnan(value)


def test_options_and_inputs_are_checked_with_their_names(clip_folder, dinov2_folder):
    with pytest.raises(ValueError, match="`features` must be one of inception, clip, dinov2"):
        FrechetDistance("vgg")
    with pytest.raises(ValueError, match="image_size` applies to the dinov2"):
        CMMD("clip", weights=clip_folder, image_size=28)
    with pytest.raises(ValueError, match="revision"):
        FrechetDistance("inception", revision="main")
    with pytest.raises(ValueError, match="sigma"):
        CMMD("clip", weights=clip_folder, sigma=-1.0)
    with pytest.raises(ValueError, match="subset_size"):
        KernelDistance("dinov2", weights=dinov2_folder, subset_size=0)
    metric = EmbeddingSimilarity("clip", weights=clip_folder)
    with pytest.raises(ValueError, match="`target`"):
        metric.update(_images(2, 0), torch.rand(2, 3, 8, 8) * 2)  # out of [0, 1]
    with pytest.raises(ValueError, match="same number of images"):
        metric.update(_images(2, 0), _images(3, 1))


def test_the_networks_are_neither_states_nor_in_the_state_dict_and_the_metric_pickles(clip_folder):
    import pickle

    metric = CMMD("clip", weights=clip_folder)
    metric.update(_images(3, 0), _images(3, 1))
    metric.persistent(True)
    assert set(metric.state_dict()) == {"fake", "real"}
    clone = pickle.loads(pickle.dumps(metric))
    assert float(clone.compute()) == pytest.approx(float(metric.compute()), abs=1e-9)
