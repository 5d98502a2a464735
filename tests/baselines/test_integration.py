"""The baselines through the registry: their adapters (options, inputs, update kinds), the one dispatch, the
callbacks' runner with source views and no pose, and ``scenemetrics eval`` on a generated results tree."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

from scenemetrics.registry import MetricConfig, UnusableViewError, ViewItem, get_metric, option_flags

pytestmark = pytest.mark.extra("baselines")

NAMES = ("fid", "kid", "jfid", "cmmd", "jcmmd", "clip_s", "clip_s_src", "fd_dinov2", "jfd_dinov2", "dino_sim",
         "dino_sim_src")  # fmt: skip


def test_adapters_declare_kinds_inputs_and_orientation():
    kinds = {name: get_metric(name).update for name in NAMES}
    assert kinds == {
        "fid": "paired", "kid": "paired", "jfid": "joint", "cmmd": "paired", "jcmmd": "joint", "clip_s": "paired",
        "clip_s_src": "vs_source", "fd_dinov2": "paired", "jfd_dinov2": "joint", "dino_sim": "paired",
        "dino_sim_src": "vs_source",
    }  # fmt: skip
    for name in NAMES:
        adapter = get_metric(name)
        similarity = name.startswith(("clip_s", "dino_sim"))
        assert adapter.higher_is_better is similarity and adapter.per_view is similarity
        assert ("cameras" in adapter.inputs) == (adapter.update in ("joint", "vs_source"))
        assert ("gt" in adapter.inputs) == (adapter.update != "vs_source")
    flags = {f.name: f.metrics for f in option_flags(NAMES)}
    assert flags["clip_model"] == ("cmmd", "jcmmd", "clip_s", "clip_s_src")
    assert flags["dino_model"] == ("fd_dinov2", "jfd_dinov2", "dino_sim", "dino_sim_src")
    assert flags["inception_weights"] == ("fid", "kid", "jfid") and flags["inception_subsets"] == ("kid",)
    assert flags["clip_biased"] == ("cmmd", "jcmmd")


def _build(name: str, options: dict, tmp_path: Path):
    return get_metric(name).build(MetricConfig(name, options, "cpu", work_dir=tmp_path))


def test_options_reach_the_constructors(clip_folder, dinov2_folder, inception_path, tmp_path):
    kid = _build("kid", {"weights": str(inception_path), "subsets": 7, "subset_size": 5, "seed": 2}, tmp_path)
    assert (kid.subsets, kid.subset_size, kid.seed, kid.spec.antialias) == (7, 5, 2, True)
    fid = _build("jfid", {"weights": str(inception_path), "tf_resize": True}, tmp_path)
    assert type(fid).__name__ == "JointFrechetDistance" and fid.spec.antialias is False
    cmmd = _build("jcmmd", {"model": str(clip_folder), "biased": True}, tmp_path)
    assert type(cmmd).__name__ == "JointCMMD" and cmmd.unbiased is False and cmmd.spec.weights == str(clip_folder)
    dino = _build("dino_sim_src", {"model": str(dinov2_folder), "image_size": 28}, tmp_path)
    assert dino.spec == dino.spec.__class__("dinov2", str(dinov2_folder), None, True, 28)
    with pytest.raises(ValueError, match="has no option 'model'"):
        _build("fid", {"model": "x"}, tmp_path)


def test_random_weights_build_every_baseline(tmp_path):
    for name in ("clip_s", "jfd_dinov2", "kid"):
        metric = get_metric(name).build(MetricConfig(name, {}, "cpu", random_weights=True, work_dir=tmp_path))
        assert Path(metric.spec.weights).exists() and str(tmp_path) in metric.spec.weights


def test_the_dispatch_feeds_source_views_without_a_pose(clip_folder, tmp_path):
    r, t, s = torch.rand(1, 3, 8, 8), torch.rand(1, 3, 8, 8), torch.rand(1, 3, 8, 8)
    joint, vs_source = (
        _build("jcmmd", {"model": str(clip_folder)}, tmp_path),
        _build("clip_s_src", {"model": str(clip_folder)}, tmp_path),
    )
    item = ViewItem("v", "m/s", r, t, source=s)  # no pose, no cameras: the baselines need none
    assert get_metric("jcmmd").update_args(joint, item) == (s, r, t)
    assert get_metric("clip_s_src").update_args(vs_source, item) == (r, s)
    for name, metric in (("jcmmd", joint), ("clip_s_src", vs_source)):
        with pytest.raises(UnusableViewError, match=r"has no source view \(cameras\)") as err:
            get_metric(name).update_args(metric, ViewItem("v", "m/s", r, t))
        assert err.value.reason == "cameras"
    with pytest.raises(UnusableViewError, match="no ground truth"):
        get_metric("jcmmd").update_args(joint, ViewItem("v", "m/s", r, None, source=s))
    assert get_metric("clip_s_src").update_args(vs_source, ViewItem("v", "m/s", r, None, source=s)) == (r, s)


def test_the_callbacks_runner_feeds_the_source_view_from_extras(clip_folder, tmp_path):
    from scenemetrics.baselines import EmbeddingSimilarity, JointCMMD, cmmd, load_clip
    from scenemetrics.callbacks import MetricRunner, RenderedView

    g = torch.Generator().manual_seed(0)
    views = [(torch.rand(1, 3, 16, 16, generator=g), torch.rand(1, 3, 16, 16, generator=g)) for _ in range(3)]
    source = torch.rand(1, 3, 16, 16, generator=g)
    runner = MetricRunner(
        {
            "jcmmd": JointCMMD("clip", weights=clip_folder),
            "clip_s_src": EmbeddingSimilarity("clip", weights=clip_folder),
        }
    )
    runner.begin(collect_images=False)
    for i, (render, target) in enumerate(views):
        runner.update(i, RenderedView(render, target, {"source": source}))  # no pose needed
    scalars = runner.finish().scalars
    net = load_clip(clip_folder)
    e_s, e_r, e_t = (net(torch.cat(x)) for x in ([source] * 3, [v[0] for v in views], [v[1] for v in views]))
    expected = cmmd(torch.cat([e_s, e_r], 1), torch.cat([e_s, e_t], 1))
    assert scalars["scenemetrics/jcmmd"] == pytest.approx(float(expected), rel=1e-4, abs=1e-6)
    assert scalars["scenemetrics/clip_s_src"] == pytest.approx(float((e_r * e_s).sum(1).mean()), rel=1e-5)
    runner.begin(collect_images=False)
    with pytest.raises(KeyError, match=r"needs extras\['source'\]"):
        runner.update(0, RenderedView(*views[0]))


def test_eval_scores_a_results_tree_with_the_baselines(clip_folder, dinov2_folder, tmp_path):
    from scenemetrics.baselines import cosine_similarity, frechet_distance, load_clip, load_dinov2
    from scenemetrics.cli import main
    from scenemetrics.image import read_image
    from tests.evaluation.conftest import METHODS, SCENES, VIEWS, read_csv, write_tree

    root = write_tree(tmp_path / "root")
    for method in METHODS:
        for scene in SCENES:
            views = {v: {"source": "train/t0.png", "pose": [0.0, 30.0, 0.0]} for v in VIEWS}
            (root / method / scene / "cameras.json").write_text(json.dumps({"views": views}))
    out = tmp_path / "out"
    args = [
        "eval", "--root", str(root), "--out", str(out), "--metrics", "clip_s,dino_sim_src,fd_dinov2,jfd_dinov2",
        "--quiet", "--device", "cpu", "--clip-model", str(clip_folder), "--dino-model", str(dinov2_folder),
        "--dino-image-size", "28",
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(args) == 0
    clip, dino = load_clip(clip_folder), load_dinov2(dinov2_folder, image_size=28)
    rows = {(r["method"], r["scene"]): r for r in read_csv(out / "results.csv")}
    for method in METHODS:
        for scene in SCENES:
            d = root / method / scene
            renders = torch.stack([read_image(d / "renders" / f"{v}.png") for v in VIEWS])
            gt = torch.stack([read_image(d / "gt" / f"{v}.png") for v in VIEWS])
            src = read_image(d / "train" / "t0.png")[None].expand(len(VIEWS), -1, -1, -1)
            row = rows[(method, scene)]
            assert float(row["clip_s"]) == pytest.approx(
                float(cosine_similarity(clip(renders), clip(gt)).mean()), rel=1e-5
            )
            expected = float(cosine_similarity(dino(renders), dino(src)).mean())
            assert float(row["dino_sim_src"]) == pytest.approx(expected, rel=1e-5)
            assert float(row["fd_dinov2"]) == pytest.approx(
                float(frechet_distance(dino(renders), dino(gt))), rel=1e-3, abs=1e-5
            )
            s = dino(src)
            joint = frechet_distance(torch.cat([s, dino(renders)], 1), torch.cat([s, dino(gt)], 1))
            assert float(row["jfd_dinov2"]) == pytest.approx(float(joint), rel=1e-3, abs=1e-5)
    # the clean method's renders are its ground truth: similarity 1, distances 0
    assert all(float(rows[("m_clean", s)]["clip_s"]) == pytest.approx(1.0, abs=1e-5) for s in SCENES)
    assert all(abs(float(rows[("m_clean", s)]["fd_dinov2"])) < 1e-3 for s in SCENES)
