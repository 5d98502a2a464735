"""The OSIM torchmetrics class: per-class sum states, equivalence with the functional, DDP (2 gloo processes)."""

from __future__ import annotations

import datetime
import math
import os
import socket
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import scenemetrics as sm
from scenemetrics.osim.functional import osim
from scenemetrics.osim.metric import OSIM
from scenemetrics.osim.yolox import YOLOX

from .conftest import images
from .test_functional import degrade


def test_updates_equal_the_functional_over_all_views(nano) -> None:
    ref = images(4, seed=11)
    test = degrade(ref)
    metric = OSIM(model=nano)
    shapes = []
    for chunk in ((0, 1), (1, 4)):
        metric.update(test[slice(*chunk)], ref[slice(*chunk)])
        shapes.append([tuple(getattr(metric, n).shape) for n in ("r_sum", "s_sum", "count")])
    full = osim(test, ref, model=nano)
    assert float(metric.compute()) == pytest.approx(float(full.score), abs=1e-6)
    for name in ("r_sum", "s_sum", "count"):
        assert torch.allclose(getattr(metric, name), getattr(full, name), atol=1e-9)
        assert getattr(metric, name).dtype == torch.float64
    assert shapes == [[(81,), (81,), (81,)]] * 2  # 80 COCO classes + the unlabelled pool of given boxes
    assert metric.class_scores() == pytest.approx({sm.osim.COCO_CLASSES[c]: v for c, v in full.per_class.items()})
    assert metric.last_result is not None and metric.last_result.image_index.max() == 2  # the 3-view update


def test_views_of_different_sizes_and_any_order(nano) -> None:
    a_ref, b_ref = images(2, 120, 160, seed=12), images(1, 90, 200, seed=13)
    a_test, b_test = degrade(a_ref), degrade(b_ref)
    m1, m2 = OSIM(model=nano), OSIM(model=nano)
    m1.update(a_test, a_ref)
    m1.update(b_test, b_ref)
    m2.update(b_test, b_ref)
    m2.update(a_test[1:], a_ref[1:])
    m2.update(a_test[:1], a_ref[:1])
    ra, rb = osim(a_test, a_ref, model=nano), osim(b_test, b_ref, model=nano)
    expected = sm.osim.scene_score(ra.r_sum + rb.r_sum, ra.s_sum + rb.s_sum, ra.count + rb.count)
    assert float(m1.compute()) == pytest.approx(float(expected), abs=1e-6)
    assert float(m2.compute()) == pytest.approx(float(expected), abs=1e-6)


def test_scene_pooling_differs_from_mean_of_view_scores(fixed_detector) -> None:
    ref = images(2, 96, 128, seed=5)
    test = ref.clone()
    test[1] = degrade(ref[1:2])[0]
    boxes = [[(10, 10, 100, 100, 0), (150, 20, 300, 120, 0), (200, 150, 400, 300, 0)], [(50, 50, 300, 250, 0)]]
    metric = OSIM(model=fixed_detector(boxes[:1]), saliency="uniform")
    metric.update(test[:1], ref[:1])
    v0 = float(metric.compute())
    metric.model.boxes = boxes[1:]
    metric.update(test[1:], ref[1:])
    v1 = float(metric.last_result.score)
    scene = float(metric.compute())
    assert v0 == pytest.approx(1.0, abs=1e-5) and v1 < 0.999
    assert scene == pytest.approx((3 * v0 + v1) / 4, abs=1e-5)
    assert abs(scene - (v0 + v1) / 2) > 1e-3


def test_empty_scene_zero_batch_and_reset(nano) -> None:
    metric = OSIM(model=nano, conf_threshold=1.01)
    x = images(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an update without detections does not warn: other views may have some
        metric.update(x, x)
        metric.update(x[:0], x[:0])
    with pytest.warns(UserWarning, match="no object was detected"):
        assert math.isnan(float(metric.compute()))
    assert metric.class_scores() == {}
    metric = OSIM(model=nano)
    metric.update(x, x)
    assert float(metric.compute()) == pytest.approx(1.0, abs=1e-5)
    metric.reset()
    assert float(metric.count.sum()) == 0.0
    with pytest.warns(UserWarning, match="no object"):
        assert math.isnan(float(metric.compute()))


def test_metric_contract(nano) -> None:
    metric = sm.OSIM(model=nano)
    assert isinstance(metric, OSIM)
    assert metric.higher_is_better is True and metric.is_differentiable is False and metric.full_state_update is False
    assert (metric.plot_lower_bound, metric.plot_upper_bound) == (0.0, 1.0)
    assert not any(k.startswith(("backbone", "head", "_detector")) for k in metric.state_dict())
    assert list(metric.parameters()) == [] and list(metric.children()) == []
    assert metric.model is nano and not nano.training
    x = images(1)
    with pytest.raises(ValueError, match="same shape"):
        metric.update(x, images(1, 120, 150))
    with pytest.raises(ValueError, match="layer"):
        OSIM(model=nano, layer="dark9")
    with pytest.raises(ValueError, match="model"):
        OSIM(model=torch.nn.Linear(2, 2))
    # forward() gives the batch score and accumulates
    y = degrade(x)
    batch = metric(y, x)
    assert float(batch) == pytest.approx(float(osim(y, x, model=nano).score), abs=1e-6)
    assert float(metric.count.sum()) > 0
    metric.to("cpu")
    assert metric.model.device.type == "cpu"


def test_detector_loaded_by_name(nano_ckpt) -> None:
    metric = OSIM(detector="yolox_nano", weights_path=nano_ckpt)
    x = images(1)
    metric.update(x, x)
    assert float(metric.compute()) == pytest.approx(1.0, abs=1e-5)
    assert metric.detector == "yolox_nano"


def test_plot(nano) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    metric = OSIM(model=nano)
    x = images(1)
    metric.update(degrade(x), x)
    fig, ax = metric.plot()
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure) and isinstance(ax, Axes) and ax.figure is fig
    assert ax.lines or ax.collections or ax.patches or ax.texts  # something was drawn


# ---------------------------------------------------------------------------------------------- DDP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank: int, world: int, port: int, ckpt: str, data: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        views = torch.load(data, weights_only=True)
        metric = OSIM(model=YOLOX.from_official("yolox_nano", weights_path=ckpt))
        for i in range(rank, views["ref"].shape[0], world):  # an uneven split: 2 views on rank 0, 1 on rank 1
            metric.update(views["test"][i : i + 1], views["ref"][i : i + 1])
        score = metric.compute()
        torch.save({"score": score, "classes": metric.class_scores(), "local": metric.count.sum()}, f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_processes_equal_one(tmp_path, nano, nano_ckpt) -> None:
    ref = images(3, 100, 130, seed=21)
    test = degrade(ref)
    torch.save({"ref": ref, "test": test}, tmp_path / "views.pt")
    single = OSIM(model=nano)
    single.update(test, ref)
    expected = float(single.compute())
    mp.spawn(
        _ddp_worker,
        args=(2, _free_port(), str(nano_ckpt), str(tmp_path / "views.pt"), str(tmp_path / "out")),
        nprocs=2,
        join=True,
    )
    results = [torch.load(tmp_path / f"out.{r}", weights_only=True) for r in range(2)]
    for res in results:
        assert float(res["score"]) == pytest.approx(expected, abs=1e-6)
        assert res["classes"] == pytest.approx(single.class_scores())
    assert float(results[0]["local"] + results[1]["local"]) == float(single.count.sum())  # states unsynced after


def test_merge_state_equals_single_metric(nano) -> None:
    ref = images(3, seed=22)
    test = degrade(ref)
    a, b, single = OSIM(model=nano), OSIM(model=nano), OSIM(model=nano)
    a.update(test[:2], ref[:2])
    b.update(test[2:], ref[2:])
    single.update(test, ref)
    a.merge_state(b)
    assert float(a.compute()) == pytest.approx(float(single.compute()), abs=1e-6)


@pytest.mark.gpu
def test_to_cuda_moves_the_detector(nano_ckpt) -> None:
    metric = OSIM(detector="yolox_nano", weights_path=nano_ckpt).to("cuda")
    assert metric.model.device.type == "cuda" and metric.count.device.type == "cuda"
    x = images(1).cuda()
    metric.update(x, x)
    assert float(metric.compute()) == pytest.approx(1.0, abs=1e-4)


def test_moving_a_metric_does_not_move_the_shared_cached_detector(nano_ckpt) -> None:
    from scenemetrics.osim import detector as fn

    fn.clear_detector_cache()
    a = OSIM(detector="yolox_nano", weights_path=nano_ckpt)
    b = OSIM(detector="yolox_nano", weights_path=nano_ckpt)
    assert a.model is b.model  # one cached copy per (variant, file, device)
    a.to("meta")
    assert a.model.device.type == "meta" and a.count.device.type == "meta"
    assert b.model.device.type == "cpu" and fn.load_detector("yolox_nano", nano_ckpt) is b.model
    x = images(1)
    b.update(x, x)
    assert float(b.compute()) == pytest.approx(1.0, abs=1e-5)
    fn.clear_detector_cache()


def test_options_are_checked_once_under_one_rule(nano, monkeypatch) -> None:
    from scenemetrics.osim import boxes as boxes_module
    from scenemetrics.osim import options as options_module
    from scenemetrics.osim.options import OSIMOptions

    # one rule for the thresholds (osim.boxes.check_thresholds): conf >= 0 (inf keeps nothing), an IoU in [0, 1]
    assert OSIMOptions(conf_threshold=float("inf"), nms_threshold=0).nms_threshold == 0.0
    for kwargs, match in (({"conf_threshold": -0.1}, "conf_threshold"), ({"nms_threshold": 1.01}, "nms_threshold"),
                          ({"layer": "dark6"}, "layer"), ({"saliency": "itti"}, "saliency"),
                          ({"detector": "yolo"}, "YOLOX variant")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            OSIMOptions(**kwargs)
    metric = OSIM(model=nano, conf_threshold=0.3)
    assert metric.options == OSIMOptions(detector="yolox_x", conf_threshold=0.3)
    x = images(2, seed=11)
    expected = float(osim(degrade(x), x, model=nano, conf_threshold=0.3).score)

    def refuse(*args, **kwargs):
        raise AssertionError("options checked again")

    monkeypatch.setattr(options_module, "check_thresholds", refuse)
    monkeypatch.setattr(boxes_module, "check_thresholds", refuse)
    metric.update(degrade(x), x)  # neither the metric nor the scoring below it checks the options again
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-6)


def test_each_update_checks_the_images_once(nano, monkeypatch) -> None:
    """The renders and references are checked once per update (they were checked twice: by the metric and again by
    the scoring below it); the detector and the scoring take the checked tensors as they are."""
    import sys

    import scenemetrics.image as image_module

    real, calls = image_module.check_images, []

    def counting(x, name="images", *args, **kwargs):
        calls.append(name)
        return real(x, name, *args, **kwargs)

    for module in [m for n, m in sys.modules.items() if n.startswith("scenemetrics.osim")]:
        if getattr(module, "check_images", None) is real:
            monkeypatch.setattr(module, "check_images", counting)
    metric = OSIM(model=nano, conf_threshold=0.05)
    x = images(2, seed=12)
    metric.update(degrade(x), x)
    assert int(metric.count.sum()) > 0  # objects were scored, so every step below the metric ran
    # the user's two batches once each; GBVS checks the saliency input it is handed (the letterboxed reference)
    assert sorted(calls) == ["images", "preds", "target"]
