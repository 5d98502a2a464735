"""The option schema of the metric adapters: checking, parsing, derived keyword arguments and fingerprints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
import torchmetrics

from scenemetrics.evaluation import EvalConfig, run_evaluation
from scenemetrics.registry import (
    MetricConfig,
    Option,
    get_metric,
    metric_names,
    option_flags,
    parse_metric_option,
    register_metric,
    unregister_metric,
)


def test_option_types_choices_and_bounds() -> None:
    conf = Option("conf", float, 0.35, "threshold", low=0, high=1)
    assert conf.check(1) == 1.0 and isinstance(conf.check(1), float)  # an int given for a float is a float
    for bad, match in ((True, "must be a number"), ("0.5", "must be a number"), (1.5, r"in \[0, 1\]")):
        with pytest.raises(ValueError, match=match):
            conf.check(bad)
    layers = Option("layers", list[int], [2, 3, 4], low=0)
    assert layers.check((2, 3)) == [2, 3] and layers.parse("[2,3]") == [2, 3] and layers.parse("2, 3") == [2, 3]
    with pytest.raises(ValueError, match="`layers` must be a list of ints; received 'two'"):
        layers.parse("two")
    with pytest.raises(ValueError, match=r"`layers` must be an int >= 0; received -1"):
        layers.check([1, -1])
    resize = Option("resize", int | list[int], low=1)
    assert (
        resize.parse("64") == 64
        and resize.parse("[32,64]") == [32, 64]
        and resize.type_text == ("an int or a list of ints")
    )
    path = Option("weights", Path)
    assert path.check(Path("/w/a.pth")) == "/w/a.pth" and path.parse("[1]") == "[1]"  # a path is its text
    flag = Option("center_crop", bool, False)
    assert flag.parse("true") is True and flag.is_flag
    with pytest.raises(ValueError, match="true or false"):
        flag.parse("yes")
    net = Option("net", str, "alex", choices=("alex", "vgg"))
    with pytest.raises(ValueError, match="`net` must be one of 'alex', 'vgg'; received 'resnet'"):
        net.check("resnet")
    lazy = Option("layer", str, choices="scenemetrics.osim.yolox:FEATURE_LAYERS")
    assert "dark5" in lazy.allowed()
    for kwargs in ({"key": "Bad"}, {"key": "x", "type": dict}, {"key": "x", "type": list[list[int]]}):
        with pytest.raises(ValueError):
            Option(**kwargs)
    with pytest.raises(ValueError, match=r"`conf` must be a finite number in \[0, 1\]; received 3.0"):
        Option("conf", float, 3, low=0, high=1)  # a default is checked too


def test_unknown_key_wrong_type_and_range_name_the_metric_the_key_and_the_valid_keys() -> None:
    ps = get_metric("puzzlesim")
    with pytest.raises(ValueError) as err:
        ps.check_options({"screening": "on"})
    assert str(err.value) == (
        "metric 'puzzlesim' has no option 'screening'; its options: backbone, weights, layers, layer_weights, resize, "
        "chunk_size"
    )
    with pytest.raises(ValueError, match=r"`puzzlesim.backbone` must be one of 'squeezenet1_1', 'alexnet', 'vgg16'"):
        ps.check_options({"backbone": "resnet"})
    with pytest.raises(ValueError, match=r"`osim.nms`.*\(metric 'osim'; its options: detector, weights, conf, nms"):
        get_metric("osim").check_options({"nms": -0.1})
    with pytest.raises(ValueError, match="metric 'psnr' has no option 'x'; it takes no options"):
        get_metric("psnr").check_options({"x": 1})
    # the same through building in Python and through a whole evaluation
    with pytest.raises(ValueError, match="has no option 'layer';"):
        ps.build(MetricConfig("puzzlesim", {"layer": [2]}, "cpu"))
    with pytest.raises(ValueError, match="has no option 'screning'"):
        run_evaluation(EvalConfig(root="nowhere", out="o", metrics=("puzzlesim",),
                                  options={"puzzlesim": {"screning": "on"}}))  # fmt: skip
    assert parse_metric_option("osim.conf=0.3") == ("osim", "conf", 0.3)
    with pytest.raises(ValueError, match=r"METRIC\.KEY=VALUE"):
        parse_metric_option("osim.conf")


def test_kwargs_are_derived_and_a_metric_class_is_a_factory(tmp_path) -> None:
    opts = [Option("squared", bool, True, "MSE or RMSE"), Option("outputs", int, 1, argument="num_outputs", low=1)]
    entry = register_metric("mse_t", torchmetrics.MeanSquaredError, options=opts, update="paired")
    try:
        config = entry.configure(MetricConfig("mse_t", {"squared": False, "outputs": 1}, None))
        assert config.kwargs == {"squared": False, "num_outputs": 1}
        assert config.flags == {"squared": "--mse-t-squared", "outputs": "--mse-t-outputs"}
        metric = entry.build(MetricConfig("mse_t", {"squared": False}, "cpu"))
        metric.update(torch.zeros(4), torch.full((4,), 2.0))
        assert float(metric.compute()) == pytest.approx(2.0)  # RMSE of a constant error of 2
        assert "mse_t" in metric_names()
        with pytest.raises(ValueError, match="repeat a key"):
            register_metric("x_t", None, options=[Option("a"), Option("a")])
        with pytest.raises(ValueError, match="declare a bool option 'center_crop'"):
            register_metric("x_t", None, square=True)
        with pytest.raises(ValueError, match="Option objects"):
            register_metric("x_t", None, options=[{"key": "a"}])
    finally:
        unregister_metric("mse_t")


def test_fingerprint_keeps_its_formula_and_counts_only_score_options() -> None:
    def by_hand(name: str, options: dict, random: bool) -> str:
        text = json.dumps({"metric": name, "options": options, "random": random}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    ps = get_metric("puzzlesim")
    opts = ps.check_options({"layers": [2, 3], "layer_weights": [0.5, 0.5], "chunk_size": 4096})
    assert ps.fingerprint(opts, True) == by_hand("puzzlesim", {"layers": [2, 3], "layer_weights": [0.5, 0.5]}, True)
    assert ps.fingerprint(opts, True) == ps.fingerprint({k: v for k, v in opts.items() if k != "chunk_size"}, True)
    assert get_metric("psnr").fingerprint({}, False) == by_hand("psnr", {}, False)
    prism = get_metric("prism")
    assert prism.fingerprint({"model": "m", "center_crop": True}, False) == by_hand(
        "prism", {"model": "m", "center_crop": True}, False
    )


def test_flags_follow_the_families() -> None:
    flags = {f.name: f for f in option_flags()}
    assert flags["prism_model"].metrics == ("prism", "prism_mmd") and flags["prism_anchors"].metrics == ("prism_mmd",)
    assert get_metric("prism_mmd").flag("center_crop") == "--prism-center-crop"
    # the keys every built-in metric declares, in one list per metric
    declared = {name: get_metric(name).option_keys for name in ("psnr", "ssim", "lpips", "osim")}
    assert declared == {
        "psnr": (),
        "ssim": (),
        "lpips": ("net", "weights", "linear_weights"),
        "osim": ("detector", "weights", "conf", "nms", "layer", "saliency", "boxes"),
    }
    # the score and the map of LPIPS share one schema: --lpips-linear-weights sets both
    assert get_metric("lpips_map").options == get_metric("lpips").options
    assert flags["lpips_linear_weights"].metrics == ("lpips", "lpips_map")


@pytest.mark.extra("prism")  # without diffusers the reason is the missing extra (checked first)
def test_prism_mmd_without_anchors_names_the_flag() -> None:
    assert get_metric("prism_mmd").unavailable_reason({}) == (
        "needs --prism-anchors (anchor embeddings of ground-truth triplets, from `scenemetrics prism embed ... "
        "--anchors-out FILE`)"
    )
