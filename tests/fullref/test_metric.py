"""The fullref metric classes: scores equal to the reference classes' over several batches, last_maps, constants.

The generic guarantees (pickling, DDP, dtypes, reset, ...) are checked for every class by tests/helpers.
"""

from __future__ import annotations

import pytest
import torch
from torchmetrics.image import StructuralSimilarityIndexMeasure

import scenemetrics as sm
from scenemetrics.fullref import (
    LPIPS3DGS,
    SSIM3DGS,
    AbsErrorMap,
    LPIPSMap,
    SSIMMap,
    SSIMNerfBaselines,
    abs_error_map,
    lpips,
    lpips_3dgs,
    lpips_map,
    ssim_3dgs,
    ssim_map,
    ssim_nerfbaselines,
)


def images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 257, (n, 3, h, w), generator=g).float() / 256


def batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for i, n in enumerate((2, 1, 3)):
        target = images(n, 40, 44, seed=i)
        out.append((((0.75 * target + 0.25 * images(n, 40, 44, seed=10 + i)) * 256).round() / 256, target))
    return out


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fullref_metric_weights")
    return {
        arch: str(sm.puzzlesim.random_checkpoint(arch, root / f"{arch}.pth", include_classifier=False))
        for arch in ("alexnet", "vgg16")
    }


def test_top_level_exports():
    assert sm.SSIMMap is SSIMMap and sm.LPIPSMap is LPIPSMap and sm.AbsErrorMap is AbsErrorMap
    assert {"ssim_map", "lpips_map", "abs_error_map", "SSIM3DGS", "SSIMNerfBaselines", "LPIPS3DGS"} <= set(
        sm.fullref.__all__
    )


def test_class_constants():
    assert SSIMMap.higher_is_better and SSIM3DGS.higher_is_better and SSIMNerfBaselines.higher_is_better
    assert not LPIPSMap.higher_is_better and not LPIPS3DGS.higher_is_better and not AbsErrorMap.higher_is_better
    for cls in (SSIMMap, AbsErrorMap, LPIPSMap, SSIM3DGS, SSIMNerfBaselines, LPIPS3DGS):
        assert cls.full_state_update is False and cls.is_differentiable is False
        assert cls.plot_lower_bound == 0.0


def test_ssim_map_metric_equals_torchmetrics_class_over_batches():
    ours, theirs = SSIMMap(), StructuralSimilarityIndexMeasure(data_range=1.0)
    for preds, target in batches():
        ours.update(preds, target)
        theirs.update(preds, target)
        torch.testing.assert_close(ours.last_maps, ssim_map(preds, target))
    torch.testing.assert_close(ours.compute(), theirs.compute(), atol=1e-6, rtol=0)
    assert ours.last_maps.shape == (3, 40, 44)  # the last batch


def test_data_range_reaches_the_maps():
    preds, target = batches()[0]
    m = SSIMMap(data_range=2.0)
    m.update(preds, target)
    torch.testing.assert_close(m.last_maps, ssim_map(preds, target, data_range=2.0))
    with pytest.raises(ValueError, match="data_range"):
        SSIMMap(data_range=-1)


def test_abs_error_is_the_mean_absolute_error():
    m = AbsErrorMap()
    all_p, all_t = [], []
    for preds, target in batches():
        m.update(preds, target)
        all_p.append(preds)
        all_t.append(target)
    expected = (torch.cat(all_p) - torch.cat(all_t)).abs().mean()  # every image has the same size here
    torch.testing.assert_close(m.compute(), expected, atol=1e-7, rtol=0)
    torch.testing.assert_close(m.last_maps, abs_error_map(*batches()[-1]))


def test_protocol_classes_average_their_functions_over_images():
    for cls, fn in ((SSIM3DGS, ssim_3dgs), (SSIMNerfBaselines, ssim_nerfbaselines)):
        m = cls()
        scores = []
        for preds, target in batches():
            m.update(preds, target)
            scores.append(fn(preds, target).double())
            assert m.last_maps is None
        torch.testing.assert_close(m.compute(), torch.cat(scores).mean().float())


def test_lpips_classes(weights):
    m = LPIPSMap(weights_path=weights["alexnet"])
    m3 = LPIPS3DGS(weights_path=weights["vgg16"])
    scores, scores3 = [], []
    for preds, target in batches():
        m.update(preds, target)
        m3.update(preds, target)
        scores.append(lpips(preds, target, weights_path=weights["alexnet"]))
        scores3.append(lpips_3dgs(preds, target, weights_path=weights["vgg16"]))
    torch.testing.assert_close(m.compute(), torch.cat(scores).mean())
    torch.testing.assert_close(m3.compute(), torch.cat(scores3).mean())
    torch.testing.assert_close(m.last_maps, lpips_map(*batches()[-1], weights_path=weights["alexnet"]))
    assert m3.last_maps is None
    vgg = LPIPSMap("vgg", weights_path=weights["vgg16"], keep_maps=False)
    vgg.update(*batches()[0])
    assert vgg.last_maps is None
    torch.testing.assert_close(vgg.compute(), lpips(*batches()[0], net="vgg", weights_path=weights["vgg16"]).mean())


def test_lpips_metric_fails_at_construction_without_weights(monkeypatch):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match=r"alexnet-owt-7be5be79\.pth"):
        LPIPSMap()
    with pytest.raises(ValueError, match="`net`"):
        LPIPSMap("resnet")


def test_keep_maps_false_and_empty_batches():
    m = SSIMMap(keep_maps=False)
    m.update(*batches()[0])
    assert m.last_maps is None
    m = AbsErrorMap()
    m.update(*batches()[0])
    m.update(torch.zeros(0, 3, 8, 8), torch.zeros(0, 3, 8, 8))
    assert m.last_maps is None and int(m.num_images) == 2


def test_network_is_not_in_the_state_dict(weights):
    m = LPIPSMap(weights_path=weights["alexnet"])
    m.persistent(True)
    assert set(m.state_dict()) == {"score_sum", "num_images"}
    assert list(m.parameters()) == []
