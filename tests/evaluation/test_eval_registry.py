"""Metric registry: built-ins, registration rules, plugins, dispatch, and LPIPS weights through the hub."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torchmetrics

from scenemetrics import builtin_metrics, hub
from scenemetrics.puzzlesim import random_checkpoint
from scenemetrics.registry import (
    MetricConfig,
    Option,
    UnusableViewError,
    ViewItem,
    adapter_for,
    get_metric,
    load_plugins,
    metric_kind,
    metric_names,
    register_metric,
    resolve_metrics,
    unregister_metric,
)
from tests.utils.weights import publish_hash

from .conftest import PLUGIN

BUILTINS = ("psnr", "ssim", "lpips", "puzzlesim", "osim", "prism", "prism_mmd", "ssim_map", "lpips_map", "abs_error")


def test_builtins_are_registered_in_order():
    assert metric_names()[: len(BUILTINS)] == list(BUILTINS)
    assert get_metric("psnr").higher_is_better is True and get_metric("lpips").higher_is_better is False
    assert get_metric("puzzlesim").inputs == frozenset({"train"})
    assert get_metric("prism").inputs == frozenset({"gt", "cameras"})
    assert get_metric("osim").per_view is False


def test_register_rules():
    def factory(cfg):
        return torchmetrics.MeanAbsoluteError()

    try:
        entry = register_metric("mae_t", factory, higher_is_better=False)
        assert register_metric("mae_t", factory) is entry  # same factory again: no-op
        with pytest.raises(ValueError, match="already registered"):
            register_metric("mae_t", lambda cfg: torchmetrics.MeanAbsoluteError())
        replaced = register_metric("mae_t", lambda cfg: None, replace=True, inputs=("gt", "train"))
        assert get_metric("mae_t") is replaced and replaced.inputs == frozenset({"gt", "train"})
    finally:
        unregister_metric("mae_t")
    assert "mae_t" not in metric_names()
    for bad in ("MAE", "1x", "a-b", ""):
        with pytest.raises(ValueError, match="must match"):
            register_metric(bad, factory)
    with pytest.raises(ValueError, match="subset of"):
        register_metric("x_t", factory, inputs=("depth",))
    with pytest.raises(ValueError, match="callable"):
        register_metric("x_t", "not callable")


def test_resolve_metrics_errors_and_all():
    with pytest.raises(ValueError, match=r"unknown metric 'no_such'; known metrics: psnr, ssim, lpips"):
        resolve_metrics(["psnr", "no_such"])
    with pytest.raises(ValueError, match="more than once"):
        resolve_metrics(["psnr", "psnr"])
    with pytest.raises(ValueError, match="empty"):
        resolve_metrics([" ", ""])
    entries, unavailable = resolve_metrics(["all"])
    assert {"psnr", "ssim", "lpips", "puzzlesim"} <= {e.name for e in entries}
    assert sorted([e.name for e in entries] + list(unavailable)) == sorted(metric_names())
    assert "prism_mmd" in unavailable  # no anchor file given (or no PRISM room)


def test_unavailable_metric_names_the_reason():
    register_metric("needs_x_t", lambda cfg: None, requires=lambda cfg: 'needs foo: pip install "scenemetrics[foo]"')
    register_metric(
        "needs_opt_t",
        lambda cfg: None,
        options=[Option("k", int)],
        requires=lambda cfg: None if cfg.options.get("k") else "needs k",
    )
    try:
        entries, unavailable = resolve_metrics(["psnr", "needs_x_t", "needs_opt_t"])
        assert [e.name for e in entries] == ["psnr"]
        assert unavailable == {"needs_x_t": 'needs foo: pip install "scenemetrics[foo]"', "needs_opt_t": "needs k"}
        entries, unavailable = resolve_metrics(["needs_opt_t"], {"needs_opt_t": {"k": 1}})
        assert [e.name for e in entries] == ["needs_opt_t"] and unavailable == {}
    finally:
        unregister_metric("needs_x_t")
        unregister_metric("needs_opt_t")


def _hide_module(monkeypatch, module: str) -> None:
    """Make ``import module`` raise ImportError, as in an installation without that room."""
    monkeypatch.setitem(sys.modules, module, None)


def test_osim_unavailable_without_its_room(monkeypatch):
    assert get_metric("osim").unavailable_reason() is None  # the room is part of this installation
    _hide_module(monkeypatch, "scenemetrics.osim")
    reason = get_metric("osim").unavailable_reason()
    assert reason is not None and "OSIM metrics are not part of" in reason and "scenemetrics.osim.OSIM" in reason


def test_prism_unavailable_without_its_room(monkeypatch):
    _hide_module(monkeypatch, "scenemetrics.prism")
    for name in ("prism", "prism_mmd"):
        reason = get_metric(name).unavailable_reason()
        assert reason is not None and "PRISM metrics are not part of" in reason


def test_plugins_from_file_are_imported_once():
    load_plugins([str(PLUGIN)], entry_points=False)
    entry = get_metric("standin")
    load_plugins([str(PLUGIN)], entry_points=False)  # idempotent
    assert get_metric("standin") is entry and entry.option_keys == ("log", "delay")
    assert not any(o.scores for o in entry.options)  # test instrumentation: results made with any value are kept
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_plugins(["/nonexistent/plugin.py"], entry_points=False)
    with pytest.raises(ImportError):
        load_plugins(["no_such_module_for_scenemetrics"], entry_points=False)


class _References(torchmetrics.Metric):
    def set_references(self, refs):
        pass

    def update(self, x):
        pass

    def compute(self):
        return torch.tensor(0.0)


class PRISMMMD(torchmetrics.Metric):  # declared to the registry below, as a plugin would
    def update(self, *args):
        pass

    def compute(self):
        return torch.tensor(0.0)


class PRISMDistance(torchmetrics.Metric):
    def update(self, *args):
        pass

    def compute(self):
        return torch.tensor(0.0)


class _SubDistance(PRISMDistance):
    pass


@pytest.fixture
def declared():
    register_metric("t_mmd", None, metric_class=PRISMMMD, inputs=("cameras",), update="prism_mmd")
    register_metric("t_distance", None, metric_class=PRISMDistance, inputs=("gt", "cameras"), update="prism_distance")
    yield
    unregister_metric("t_mmd")
    unregister_metric("t_distance")


def test_dispatch_without_a_declaration_is_duck_typed():
    # a class named like a PRISM metric but not declared to the registry is fed as a paired metric: no name checks
    assert metric_kind(PRISMMMD()) == "paired" and metric_kind(_References()) == "references"


def _args(metric, item, config=None):
    return adapter_for(metric).update_args(metric, item, config)


def test_dispatch_follows_the_callbacks_rules(declared):
    r, t, s, p = torch.zeros(1, 3, 4, 4), torch.ones(1, 3, 4, 4), torch.full((1, 3, 4, 4), 0.5), torch.zeros(1, 3)
    item = ViewItem("v", "m/s", r, t, s, p)
    assert metric_kind(_References()) == "references"
    assert _args(_References(), item) == (r,)
    assert metric_kind(PRISMMMD()) == "prism_mmd"
    assert _args(PRISMMMD(), item) == (s, r, p)
    assert metric_kind(_SubDistance()) == "prism_distance"  # subclasses dispatch like their parents
    assert _args(_SubDistance(), item) == (s, r, t, p)
    m = torchmetrics.MeanSquaredError()
    assert metric_kind(m) == "paired" and _args(m, item) == (r, t)
    with pytest.raises(UnusableViewError, match="no ground truth") as err:
        _args(m, ViewItem("v", "m/s", r))
    assert err.value.reason == "target"
    with pytest.raises(UnusableViewError, match="no ground truth"):
        _args(_SubDistance(), ViewItem("v", "m/s", r, None, s, p))
    with pytest.raises(UnusableViewError, match="no source view and pose"):
        _args(PRISMMMD(), ViewItem("v", "m/s", r, t))


def test_prism_dispatch_crops_and_computes_the_pose_from_cameras():
    prism = pytest.importorskip("scenemetrics.prism")
    adapter = get_metric("prism")
    r = torch.arange(2 * 3 * 4 * 6, dtype=torch.float32).reshape(2, 3, 4, 6)
    pose = torch.zeros(2, 3)
    item = ViewItem("v", "m/s", r, r + 1, r + 2, pose)
    crop = adapter.configure(MetricConfig("prism", {"center_crop": True}, None))
    args = adapter.update_args(None, item, crop)
    assert [tuple(a.shape) for a in args] == [(2, 3, 4, 4)] * 3 + [(2, 3)]
    assert torch.equal(args[0], (r + 2)[..., 1:5]) and torch.equal(args[1], r[..., 1:5]) and args[3] is pose
    with pytest.raises(UnusableViewError, match=r"prism needs square views; view 'v' is 6x4 \(--prism-center-crop"):
        adapter.update_args(None, item, adapter.configure(MetricConfig("prism", {}, None)))
    square = ViewItem("v", "m/s", r[..., :4], r[..., :4] + 1, r[..., :4] + 2, pose)
    assert adapter.update_args(None, square)[1] is square.render  # square views go through as they are
    # cameras instead of a pose: the adapter's pose function (the prism package's camera_pose)
    cams = ({"polar_deg": 60.0, "azimuth_deg": 10.0, "radius": 2.0}, {"polar_deg": 50.0, "azimuth_deg": 40.0,
            "radius": 2.5})  # fmt: skip
    by_cameras = dataclasses.replace(square, pose=None, cameras=cams)
    got = adapter.update_args(None, by_cameras)[3]
    assert torch.allclose(got, torch.tensor([[-10.0, 30.0, 0.5]])) and torch.equal(got, prism.camera_pose(*cams))


# ---- LPIPS through the hub -----------------------------------------------------------------------------------------


@pytest.fixture()
def no_torch_download(monkeypatch):
    def refuse(*args, **kwargs):  # pragma: no cover - reached only by a bug
        raise AssertionError("torch.hub tried to download")

    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)


def _config(tmp_path: Path, **options) -> MetricConfig:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return MetricConfig(name="lpips", options=options, device=torch.device("cpu"), work_dir=work)


def _backbone_params(metric) -> dict[str, torch.Tensor]:
    """The LPIPS network's backbone parameters keyed like torchvision's ``features.<i>.<param>``.

    The network cuts ``features`` into the slices of the ``lpips`` package (``NETS[net].slices``: ``(start, stop)``
    per slice), so its module ``slices.<k>.<j>`` is torchvision's ``features.<start_k + j>``.
    """
    from scenemetrics.fullref import NETS, load_lpips

    network = load_lpips(metric.net, metric.weights_path, metric.linear_weights_path)
    starts = [a for a, _ in NETS[metric.net].slices]
    out = {}
    for key, value in network.slices.state_dict().items():
        k, j, param = key.split(".", 2)
        out[f"features.{starts[int(k)] + int(j)}.{param}"] = value
    return out


def test_lpips_loads_exactly_the_given_whole_checkpoint(tmp_path, no_torch_download):
    path = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth", seed=3)
    metric = get_metric("lpips").build(_config(tmp_path, net="squeeze", weights=str(path)))
    state = torch.load(path, weights_only=True)
    got = _backbone_params(metric)
    assert set(got) == {k for k in state if k.startswith("features.")}
    assert all(torch.equal(got[k], state[k]) for k in got)
    x = torch.rand(2, 3, 40, 48)
    metric.update(x, x)
    assert float(metric.compute()) == 0.0
    assert metric.last_maps is None  # a score: no map is computed (lpips_map gives it)


def test_lpips_reads_a_features_only_checkpoint_with_bare_keys(tmp_path, no_torch_download):
    full = random_checkpoint("alexnet", tmp_path / "a_full.pth", seed=1, include_classifier=False)
    bare = {k.removeprefix("features."): v for k, v in torch.load(full, weights_only=True).items()}
    torch.save(bare, tmp_path / "bare.pth")
    metric = get_metric("lpips").build(_config(tmp_path, net="alex", weights=str(tmp_path / "bare.pth")))
    got = _backbone_params(metric)
    assert set(got) == {f"features.{k}" for k in bare}
    assert all(torch.equal(got[f"features.{k}"], v) for k, v in bare.items())
    assert not list((tmp_path / "work").iterdir())  # nothing written: the file is read as it is


def _torchmetrics_lpips(net: str, checkpoint: Path):
    """torchmetrics' LPIPS class on ``checkpoint``: torchvision reads its pretrained file from torch's hub cache (the
    whole model, so the classifier is completed with zeros, stored as broadcast views)."""
    import torchvision
    from torchmetrics.image import LearnedPerceptualImagePatchSimilarity

    arch = {"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"}[net]
    with torch.device("meta"):
        reference = getattr(torchvision.models, arch)(weights=None).state_dict()
    state = dict(torch.load(checkpoint, weights_only=True))
    state.update({k: torch.zeros(()).expand(v.shape) for k, v in reference.items() if k.startswith("classifier.")})
    folder = Path(torch.hub.get_dir()) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(state, folder / hub.CHECKPOINTS[f"puzzlesim/{arch}"].filename)
    return LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True)


@pytest.mark.parametrize("net", ["squeeze", pytest.param("alex", marks=pytest.mark.slow)])
def test_lpips_equals_torchmetrics_lpips_on_the_same_weights(net, tmp_path, no_torch_download):
    """The registered ``lpips`` (the lpips package's network, built from the features only) and torchmetrics'
    ``LearnedPerceptualImagePatchSimilarity(normalize=True)`` on the same backbone: per view and over the views."""
    arch = {"alex": "alexnet", "squeeze": "squeezenet1_1"}[net]
    path = random_checkpoint(arch, tmp_path / f"{arch}.pth", seed=4, include_classifier=False)
    ours = get_metric("lpips").build(_config(tmp_path, net=net, weights=str(path)))
    theirs = _torchmetrics_lpips(net, path)
    g = torch.Generator().manual_seed(0)
    per_view = []
    for h, w in ((40, 56), (64, 48), (33, 70)):  # odd sizes: layers that do not divide the image
        target = torch.rand(1, 3, h, w, generator=g)
        preds = (0.8 * target + 0.2 * torch.rand(1, 3, h, w, generator=g)).clamp(0, 1)
        per_view.append((float(ours(preds, target)), float(theirs(preds, target))))
    assert min(b for _, b in per_view) > 1e-3  # a real difference is measured
    for a, b in per_view:
        assert a == pytest.approx(b, rel=1e-5, abs=1e-8)
    assert float(ours.compute()) == pytest.approx(float(theirs.compute()), rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("name", ["ssim", "lpips"])
def test_built_metrics_survive_copies_and_pickling(name, tmp_path, no_torch_download):
    """Copies (deepcopy, pickle: what the callbacks and DDP do) keep their own states and the size check: no
    per-instance patch of ``update`` (which torchmetrics drops on a copy, or which would update the original)."""
    import copy
    import pickle

    cfg = MetricConfig(name=name, options={}, device=torch.device("cpu"), random_weights=True, work_dir=tmp_path)
    metric = get_metric(name).build(cfg)
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(1, 3, 40, 44, generator=g), torch.rand(1, 3, 40, 44, generator=g)
    metric.update(x, y)
    expected = float(metric.compute())
    for clone in (copy.deepcopy(metric), pickle.loads(pickle.dumps(metric))):
        clone.reset()
        clone.update(x, y)
        assert float(clone.compute()) == expected
        small = torch.rand(1, 3, 5, 5)
        with pytest.raises(ValueError, match=r"at least \d+x\d+ pixels"):
            clone.update(small, small)
    assert float(metric.compute()) == expected  # the original was not fed by its copies


def test_lpips_uses_the_hub_cache_and_fails_clearly_offline(tmp_path, monkeypatch, no_torch_download):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError, match=r"squeezenet1_1-b8a52dc0\.pth"):
        get_metric("lpips").build(_config(tmp_path, net="squeeze"))
    cached = hub.cache_dir("puzzlesim") / "squeezenet1_1-b8a52dc0.pth"
    random_checkpoint("squeezenet1_1", cached, seed=5)
    publish_hash(monkeypatch, "puzzlesim/squeezenet1_1", cached)  # cached files are verified on every load
    metric = get_metric("lpips").build(_config(tmp_path, net="squeeze"))
    state = torch.load(cached, weights_only=True)
    assert torch.equal(_backbone_params(metric)["features.0.weight"], state["features.0.weight"])


def test_lpips_rejects_a_checkpoint_of_another_network(tmp_path, no_torch_download):
    path = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth", include_classifier=False)
    with pytest.raises(ValueError, match="does not match torchvision alexnet"):
        get_metric("lpips").build(_config(tmp_path, net="alex", weights=str(path)))
    with pytest.raises(ValueError, match=r"`lpips.net` must be one of 'alex', 'vgg', 'squeeze'; received 'resnet'"):
        get_metric("lpips").build(_config(tmp_path, net="resnet"))


def test_random_weights_lpips_and_puzzlesim_need_no_file(tmp_path, no_torch_download):
    cfg = MetricConfig(
        name="lpips", options={"net": "squeeze"}, device=torch.device("cpu"), random_weights=True, work_dir=tmp_path
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no download, no warning
        lpips = get_metric("lpips").build(cfg)
        ps = builtin_metrics.build_puzzlesim(MetricConfig("puzzlesim", {}, torch.device("cpu"), True, tmp_path))
    assert isinstance(lpips, torchmetrics.Metric) and ps.weights_path.endswith("-random.pth")
    assert lpips.net == "squeeze" and str(lpips.weights_path).endswith("lpips-squeezenet1_1-random.pth")


# ---- the shared adapter registry -----------------------------------------------------------------------------------


def test_adapter_lookup_prefers_the_most_specific_class(declared):
    from scenemetrics.registry import adapter_for

    register_metric("t_sub", None, metric_class=_SubDistance, inputs=("gt",), update="paired")
    try:
        assert adapter_for(_SubDistance()).name == "t_sub"  # the subclass's own entry wins over its parent's
        assert adapter_for(PRISMDistance()).name == "t_distance"
        assert adapter_for(_SubDistance(), "t_distance").name == "t_distance"  # a name that describes it is kept
        assert adapter_for(torchmetrics.MeanSquaredError(), "psnr").name == ""  # psnr's entry is for another class
        assert "t_sub" not in metric_names()  # no factory: describes instances, cannot be built by name
        with pytest.raises(ValueError, match="cannot be built by name"):
            get_metric("t_sub").build(MetricConfig("t_sub", {}, "cpu"))
    finally:
        unregister_metric("t_sub")


def test_class_strings_never_import_their_module():
    from scenemetrics.registry import adapter_for

    register_metric("t_lazy", None, metric_class="tests_nonexistent_room.metric:Lazy", update="paired")
    try:
        assert adapter_for(torchmetrics.MeanSquaredError()).name == ""
        assert "tests_nonexistent_room" not in sys.modules
    finally:
        unregister_metric("t_lazy")


def test_builtin_adapters_declare_update_and_pictures():
    expected = {
        "psnr": ("paired", None),
        "puzzlesim": ("references", frozenset({"map"})),
        "osim": ("paired", frozenset({"objects"})),
        "prism": ("prism_distance", None),
        "prism_mmd": ("prism_mmd", None),
    }
    for name, (update, pictures) in expected.items():
        entry = get_metric(name)
        assert (entry.update, entry.pictures) == (update, pictures), name
    assert get_metric("osim").object_class_names()[0] == "person"  # COCO's first class


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"update": "sideways"}, "`update`"),
        ({"pictures": ("movie",)}, "`pictures`"),
        ({"pictures": "map"}, "`pictures`"),
        ({"metric_class": "no_colon"}, "`metric_class`"),
        ({"requires": 3}, "`requires`"),
    ],
)
def test_register_metric_rejects_bad_adapter_fields(kwargs, match):
    with pytest.raises(ValueError, match=match):
        register_metric("t_bad", lambda cfg: None, **kwargs)
    assert "t_bad" not in metric_names()


def test_an_undeclared_update_follows_the_metric_class(declared):
    # a plugin entry wrapping a declared class without saying how to feed it is fed like that class
    register_metric("t_wrap", lambda cfg: PRISMMMD())
    try:
        assert get_metric("t_wrap").update_kind(PRISMMMD()) == "prism_mmd"
        assert get_metric("t_wrap").update_kind(_References()) == "references"  # undeclared class: duck-typed
    finally:
        unregister_metric("t_wrap")
