"""Every public torchmetrics ``Metric`` class of scenemetrics honours the metric contract (tests/helpers)."""

from __future__ import annotations

import multiprocessing
import socket

import pytest
import torch
import torch.multiprocessing as mp

from tests.helpers.metric_contract import (
    CHECKS,
    as_floats,
    assert_same,
    build_resources,
    cases,
    ddp_worker,
    public_metric_classes,
    quiet_compute,
    quiet_update,
)
from tests.utils import extras

CASES = {case.name: case for case in cases()}


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return build_resources(tmp_path_factory.mktemp("contract_weights"))


def test_every_public_metric_class_has_a_case():
    unreachable: list[str] = []
    public = public_metric_classes(unreachable)
    covered = {f"{c.cls.__module__}.{c.cls.__qualname__}" for c in CASES.values()}
    missing = sorted(set(public) - covered)
    assert not missing, f"public Metric classes without a contract case (add them to tests/helpers): {missing}"
    assert covered <= set(public), f"cases for classes that are not public: {sorted(covered - set(public))}"
    assert len(public) >= 8  # the walk reached the rooms' lazy exports
    # names whose extra is missing here (nerfstudio's callback module in the README's environment) are not walked;
    # public_metric_classes raises for any other import error, and CI's full set (nerfstudio installed) walks them


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[*([pytest.mark.slow] if c.slow else []), pytest.mark.extra(*c.extras)])
        for n, c in CASES.items()
    ],
)
def test_contract(name: str, check: str, resources: dict[str, str]) -> None:
    CHECKS[check](CASES[name], resources)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ddp_two_processes_uneven_shards_equal_one_process(resources: dict[str, str], tmp_path) -> None:
    """One spawn of 2 gloo processes checks every class: rank 0 sees 2 batches, rank 1 one."""
    # forkserver: both ranks fork from a fresh server that imported torch once (no OpenMP state from pytest)
    multiprocessing.get_context("forkserver").set_forkserver_preload(["torch", "torchmetrics", "scenemetrics"])
    mp.start_processes(
        ddp_worker, args=(2, _free_port(), resources, str(tmp_path)), nprocs=2, join=True, start_method="forkserver"
    )
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1)]
    for name, case in CASES.items():
        if extras.missing(*case.extras):
            continue
        single = as_floats(quiet_compute(quiet_update(case.make(resources), case.batches(resources))))
        for rank, got in enumerate(ranks):
            assert_same(got[name], single, case.atol, f"{name}, rank {rank}")


# ---------------------------------------------------------------------------------------------- options at construction


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"threshold": -1.0}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"threshold": float("inf")}, "threshold"),
        ({"threshold": 0.5, "radius": -1.0}, "radius"),
        ({"threshold": 0.5, "radius": 0.0}, "radius"),
        ({"threshold": 0.5, "metric_options": {"edge_f1": {"matching": "nearest"}}}, "matching"),
        ({"threshold": 0.5, "metric_options": {"edge_f1": {"hausdorff_samples": 1}}}, "hausdorff_samples"),
    ],
)
def test_wireframe_metrics_rejects_bad_options_at_construction(kwargs, named):
    import scenemetrics as sm

    # radius is checked even though none of the default metrics uses it
    with pytest.raises(ValueError, match=named):
        sm.WireframeMetrics(**kwargs)


@pytest.mark.parametrize(
    ("name", "options", "named"),
    [
        ("iou", {"radius": 0.1, "resolution": 0}, "resolution"),
        ("chamfer", {"direction": "both"}, "direction"),
        ("hausdorff", {"spacing": -0.1}, "spacing"),
        ("spectral_l1", {"padding": "ones"}, "padding"),
        ("wed", {"cv_ins": float("nan")}, "cv_ins"),
        ("hss", {"vert_thresh": -1.0}, "vert_thresh"),
        ("corner_offset", {"threshold": float("inf")}, "threshold"),
    ],
)
def test_make_metric_checks_option_values_when_built(name, options, named):
    from scenemetrics.wireframe import make_metric

    with pytest.raises(ValueError, match=named):
        make_metric(name, **options)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        # one rule (osim.boxes.check_thresholds): an IoU in [0, 1], a confidence >= 0 (inf keeps no detection)
        ({"nms_threshold": -1.0}, "nms_threshold"),
        ({"nms_threshold": 1.5}, "nms_threshold"),
        ({"nms_threshold": float("nan")}, "nms_threshold"),
        ({"conf_threshold": -0.1}, "conf_threshold"),
        ({"conf_threshold": float("nan")}, "conf_threshold"),
    ],
)
def test_osim_rejects_bad_thresholds_before_loading_weights(kwargs, named, tmp_path):
    import scenemetrics as sm

    # the weights file does not exist: reaching the loader would raise WeightsNotFoundError, not ValueError
    with pytest.raises(ValueError, match=named):
        sm.OSIM(detector="yolox_nano", weights_path=tmp_path / "missing.pth", **kwargs)
    with pytest.raises(ValueError, match=named):
        sm.osim.osim(
            torch.rand(1, 3, 32, 32), torch.rand(1, 3, 32, 32), weights_path=tmp_path / "missing.pth", **kwargs
        )


def test_prism_mmd_add_embeddings_names_the_dtype():
    import scenemetrics as sm

    metric = sm.PRISMMMD()
    with pytest.raises(ValueError, match=r"dtype torch\.int64") as info:
        metric.add_embeddings(torch.ones(4, 8, dtype=torch.int64))
    assert "shape" not in str(info.value)
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        metric.add_embeddings(torch.ones(8))
