"""The callbacks' pictures: render | target | error panels, display ranges fixed at the first step, the panel over
time, and their state across a resume (MetricRunner, no training framework)."""

from __future__ import annotations

import io

import pytest
import torch
import torchmetrics
from torchmetrics.functional.image import structural_similarity_index_measure as tm_ssim

import scenemetrics as sm
from scenemetrics.callbacks import RenderedView
from scenemetrics.callbacks.evaluation import MetricRunner
from scenemetrics.callbacks.pictures import (
    PANEL_MAPS,
    PanelMap,
    PictureState,
    check_map_range,
    draw_panel,
    parse_map_range,
)
from scenemetrics.callbacks.views import prepare_view
from scenemetrics.viz import DisplayRange, apply_colormap, colormap_for, to_uint8
from tests.utils.display_range import first_range

H, W = 24, 32  # not square: a swapped height and width cannot go unnoticed


def _target(seed: int = 0) -> torch.Tensor:
    return torch.rand(1, 3, H, W, generator=torch.Generator().manual_seed(seed))


def _render(target: torch.Tensor, noise: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (target + noise * (torch.rand(target.shape, generator=g) - 0.5)).clamp(0, 1)


def _evaluate(runner: MetricRunner, step: int, views: list[RenderedView]):
    runner.begin(collect_images=True, step=step)
    for i, view in enumerate(views):
        runner.update(i, prepare_view(view, "test", i))
    return runner.finish()


def _crop(image: torch.Tensor, box: tuple[int, int, int, int]) -> torch.Tensor:
    x0, y0, x1, y1 = box
    return image[:, y0:y1, x0:x1]


def _colorbar_block(image: torch.Tensor, picture) -> torch.Tensor:
    """The colour bar and its tick labels (everything right of the third tile, over the tiles' rows)."""
    x0, y0, _, y1 = picture.colorbar.box
    return image[:, y0 - 2 : y1 + 2, x0:]


def test_abs_panel_is_the_default_and_its_tiles_are_the_views_pixels() -> None:
    target = _target()
    render = _render(target, 0.4, seed=1)
    runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, max_logged_images=1)
    result = _evaluate(runner, 5, [RenderedView(render, target), RenderedView(render, target)])

    assert sorted(result.images) == ["scenemetrics/panel/0", "scenemetrics/panel_over_time/0"]  # view 1 not logged
    error = (render[0].double() - target[0].double()).abs().mean(dim=0)  # |render - target|, mean over RGB
    expected = first_range(error, higher_is_better=False)
    assert expected[0] == 0.0  # an error map's range reaches down to a perfect render's 0
    assert result.display_ranges["scenemetrics/panel/0"] == pytest.approx(expected, abs=1e-6)
    rng = DisplayRange(*result.display_ranges["scenemetrics/panel/0"])
    picture = draw_panel(
        render[0], target[0], error.float(), index=0, step=5, panel_map="abs", display_range=rng, colormap="jet",
        higher_is_better=False,
    )  # fmt: skip
    image = result.images["scenemetrics/panel/0"]
    assert [t["label"] for t in picture.tiles] == ["render", "target", "abs error"]
    # every tile at the view's resolution, unscaled, and holding the view's own pixels
    assert [(x1 - x0, y1 - y0) for x0, y0, x1, y1 in (t["box"] for t in picture.tiles)] == [(W, H)] * 3
    assert torch.equal(_crop(image, picture.tiles[0]["box"]), to_uint8(render[0]))
    assert torch.equal(_crop(image, picture.tiles[1]["box"]), to_uint8(target[0]))
    # the error map in jet (high error = warm: the reversal of the default jet_r, which is for similarities)
    assert torch.equal(_crop(image, picture.tiles[2]["box"]), apply_colormap(error.float(), "jet", rng.vmin, rng.vmax))
    assert "step 5" in picture.title and "abs error" in picture.title


def test_first_range_is_kept_at_later_steps_per_map_and_fixed_ranges_are_not_first() -> None:
    target = _target()
    early, late = _render(target, 0.6, seed=1), _render(target, 0.1, seed=2)
    errors = [(r[0] - target[0]).abs().mean(dim=0) for r in (early, late)]
    ranges = {}
    for rule in ("first", "per-map", (0.0, 0.25)):
        runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, map_range=rule)
        ranges[str(rule)] = [
            _evaluate(runner, step, [RenderedView(r, target)]).display_ranges["scenemetrics/panel/0"]
            for step, r in ((10, early), (20, late))
        ]
    first = first_range(errors[0], higher_is_better=False)
    assert ranges["first"] == [pytest.approx(first, abs=1e-6)] * 2  # step 20 reuses step 10's range
    per_map = [pytest.approx(first_range(e, higher_is_better=False), abs=1e-6) for e in errors]
    assert ranges["per-map"] == per_map and ranges["per-map"][0] != ranges["per-map"][1]
    assert ranges["(0.0, 0.25)"] == [(0.0, 0.25)] * 2


def test_same_range_means_the_same_colour_bar_and_the_map_shrinks_in_colour() -> None:
    target = _target()
    runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, strip_steps=0)
    results = [
        _evaluate(runner, step, [RenderedView(_render(target, noise, step), target)])
        for step, noise in ((10, 0.6), (20, 0.1))
    ]
    rng = DisplayRange(*results[0].display_ranges["scenemetrics/panel/0"])
    picture = draw_panel(target[0], target[0], torch.zeros(H, W), index=0, step=10, panel_map="abs",
                         display_range=rng, colormap="jet", higher_is_better=False)  # fmt: skip
    bars = [_colorbar_block(r.images["scenemetrics/panel/0"], picture) for r in results]
    assert torch.equal(bars[0], bars[1])  # ticks and colours identical: the same range
    maps = [_crop(r.images["scenemetrics/panel/0"], picture.tiles[2]["box"]).float() for r in results]
    # on one range the smaller error is bluer: less red and more blue than at the first step
    assert float(maps[1][0].mean()) < float(maps[0][0].mean()) and float(maps[1][2].mean()) > float(maps[0][2].mean())


def test_ssim_panel_is_torchmetrics_ssim_image_on_a_similarity_range() -> None:
    target = _target()
    render = _render(target, 0.5, seed=3)
    runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, panel_map="ssim", strip_steps=0)
    result = _evaluate(runner, 3, [RenderedView(render, target)])
    _, full = tm_ssim(render.double(), target.double(), data_range=1.0, return_full_image=True, reduction="none")
    ssim = full[0].mean(dim=0)  # torchmetrics' SSIM image, mean over channels
    rng = DisplayRange(*first_range(ssim, higher_is_better=True))
    assert rng.vmax == 1.0 and result.display_ranges["scenemetrics/panel/0"] == pytest.approx((rng.vmin, 1.0), 1e-5)
    picture = draw_panel(render[0], target[0], ssim.float(), index=0, step=3, panel_map="ssim", display_range=rng,
                         colormap="jet_r", higher_is_better=True)  # fmt: skip
    got = _crop(result.images["scenemetrics/panel/0"], picture.tiles[2]["box"]).float()
    expected = apply_colormap(ssim.float(), "jet_r", rng.vmin, rng.vmax).float()
    assert float((got - expected).abs().max()) <= 2  # float32 vs float64 SSIM: at most a colour level or two


def test_a_metric_of_the_panels_kind_is_reused(tmp_path) -> None:
    backbone = sm.puzzlesim.random_checkpoint("alexnet", tmp_path / "alexnet.pth", include_classifier=False)
    lpips = sm.fullref.LPIPSMap(weights_path=backbone)
    runner = MetricRunner({"lpips_map": lpips}, panel_map="lpips", strip_steps=0)
    assert runner._panel_source == "lpips_map" and runner._panel_metric is None  # nothing built
    target = torch.rand(1, 3, 40, 48, generator=torch.Generator().manual_seed(0))
    render = _render(target, 0.5, seed=4)
    result = _evaluate(runner, 7, [RenderedView(render, target)])
    expected_map = sm.fullref.lpips_map(render, target, weights_path=backbone)[0]
    assert result.display_ranges["scenemetrics/panel/0"] == pytest.approx(
        first_range(expected_map, higher_is_better=False), abs=1e-6
    )
    # its own map picture too, in jet (an error map), on the same kind of range
    assert result.display_ranges["scenemetrics/lpips_map/map/0"] == result.display_ranges["scenemetrics/panel/0"]
    assert sorted(result.images) == ["scenemetrics/lpips_map/map/0", "scenemetrics/panel/0"]


def test_a_reused_metric_without_maps_falls_back_to_its_own() -> None:
    runner = MetricRunner({"abs_error": sm.fullref.AbsErrorMap(keep_maps=False)}, strip_steps=0)
    assert runner._panel_source == "abs_error" and runner._panel_metric is None
    target = _target()
    render = _render(target, 0.3, seed=5)
    result = _evaluate(runner, 2, [RenderedView(render, target)])
    error = (render[0] - target[0]).abs().mean(dim=0)
    assert result.display_ranges["scenemetrics/panel/0"] == pytest.approx(first_range(error, False), abs=1e-6)
    assert isinstance(runner._panel_metric, sm.fullref.AbsErrorMap)


def test_lpips_panel_without_weights_fails_at_construction_naming_the_way_out(monkeypatch, tmp_path) -> None:
    from scenemetrics.hub import WeightsNotFoundError

    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    monkeypatch.setenv("SCENEMETRICS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    with pytest.raises(WeightsNotFoundError, match="alexnet") as info:
        MetricRunner({"mse": torchmetrics.MeanSquaredError()}, panel_map="lpips")
    # a note on Python >= 3.11, part of the message on 3.10 (no add_note there)
    assert "panel_map='abs'" in " ".join([str(info.value), *getattr(info.value, "__notes__", ())])
    MetricRunner({"mse": torchmetrics.MeanSquaredError()}, panel_map="lpips", max_logged_images=0)  # no panels


def test_no_panel_without_target_or_when_off() -> None:
    target = _target()
    render = _render(target, 0.3, seed=6)
    runner = MetricRunner({"mean": sm.fullref.AbsErrorMap()}, max_logged_images=4)
    result = _evaluate(runner, 1, [RenderedView(render, None), RenderedView(render, target)])
    assert "scenemetrics/panel/0" not in result.images and "scenemetrics/panel/1" in result.images
    assert "scenemetrics/panel_over_time/1" in result.images  # the first view that has a panel
    off = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, panel_map=None)
    assert _evaluate(off, 1, [RenderedView(render, target)]).images == {}


def test_panel_over_time_keeps_the_first_and_the_latest_steps() -> None:
    target = _target()
    runner = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, strip_steps=3)
    images = []
    for k, step in enumerate((10, 20, 30, 40, 50)):
        result = _evaluate(runner, step, [RenderedView(_render(target, 0.5 / (k + 1), step), target)])
        images.append(result.images["scenemetrics/panel_over_time/0"])
        assert result.display_ranges["scenemetrics/panel_over_time/0"] == result.display_ranges["scenemetrics/panel/0"]
    assert runner.pictures.strip["steps"] == [10, 40, 50]
    assert [im.shape[2] for im in images[:3]] == sorted(im.shape[2] for im in images[:3])  # one more tile each time
    assert images[2].shape == images[4].shape  # then 3 tiles
    first_tile = runner.pictures.strip["tiles"][0]
    error = (_render(target, 0.5, 10)[0] - target[0]).abs().mean(dim=0)
    rng = first_range(error, higher_is_better=False)
    assert torch.equal(first_tile, apply_colormap(error, "jet", *rng))  # step 10's map on the shared range
    # per-map ranges share nothing: no panel over time
    per_map = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, map_range="per-map")
    assert "scenemetrics/panel_over_time/0" not in _evaluate(per_map, 1, [RenderedView(target, target)]).images


def test_state_survives_a_checkpoint_and_keeps_the_ranges(tmp_path) -> None:
    target = _target()
    first = MetricRunner({"mse": torchmetrics.MeanSquaredError()})
    before = _evaluate(first, 10, [RenderedView(_render(target, 0.6, 1), target)]).display_ranges
    torch.save(first.state_dict(), tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt", weights_only=True)  # plain data: the safe loader reads it
    resumed = MetricRunner({"mse": torchmetrics.MeanSquaredError()})
    resumed.load_state_dict(state)
    after = _evaluate(resumed, 20, [RenderedView(_render(target, 0.05, 2), target)])
    assert after.display_ranges == before
    assert resumed.pictures.strip["steps"] == [10, 20]
    # a state written for another panel map is not reused for this one
    other = MetricRunner({"mse": torchmetrics.MeanSquaredError()}, panel_map="ssim")
    other.load_state_dict(state)
    ssim_range = _evaluate(other, 30, [RenderedView(_render(target, 0.05, 2), target)]).display_ranges
    assert ssim_range["scenemetrics/panel/0"][1] == 1.0 and other.pictures.strip["steps"] == [30]


def test_state_is_plain_data_a_safe_load_reads() -> None:
    state = PictureState("first", strip_steps=2)
    state.display_range("t", torch.rand(4, 4), step=3, higher_is_better=True, what="m")
    state.add_strip_tile("t", "m", 3, torch.zeros(3, 4, 4, dtype=torch.uint8))
    buffer = io.BytesIO()
    torch.save(state.state_dict(), buffer)
    buffer.seek(0)
    again = PictureState("first", strip_steps=2)
    again.load_state_dict(torch.load(buffer, weights_only=True))
    assert again.ranges == state.ranges and again.strip["steps"] == [3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"panel_map": "l1"}, "panel_map"),
        ({"map_range": "last"}, "map_range"),
        ({"map_range": (1.0, 0.0)}, "map_range"),
        ({"map_range": (0.0, float("inf"))}, "map_range"),
        ({"map_range": (True, 2)}, "map_range"),
        ({"strip_steps": -1}, "strip_steps"),
    ],
)
def test_argument_errors_name_the_argument(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        MetricRunner({"mse": torchmetrics.MeanSquaredError()}, **kwargs)


def test_map_range_text_and_colormap_direction() -> None:
    assert parse_map_range("per-map") == "per-map" and parse_map_range(" 0.1, 0.5 ") == (0.1, 0.5)
    with pytest.raises(ValueError, match="map_range"):
        parse_map_range("0.5,0.1")
    assert check_map_range([0, 1]) == (0.0, 1.0)
    assert colormap_for("jet_r", True) == "jet_r" and colormap_for("jet_r", False) == "jet"
    assert colormap_for("gray", False) == "gray_r" and colormap_for("gray", None) == "gray"
    assert set(PANEL_MAPS) == set(PanelMap.__args__)  # the nerfstudio field's type lists the same maps


def test_puzzlesim_map_keeps_its_first_range(tmp_path) -> None:
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")
    refs = torch.rand(4, 3, H, W, generator=torch.Generator().manual_seed(1))
    metric = sm.PuzzleSim(refs, weights_path=weights)
    runner = MetricRunner({"puzzlesim": metric}, panel_map=None)
    target = _target()
    ranges = []
    for step, noise in ((5, 0.8), (10, 0.05)):
        render = _render(target, noise, step)
        ranges.append(_evaluate(runner, step, [RenderedView(render, None)]).display_ranges)
        if step == 5:
            single = sm.PuzzleSim(refs, weights_path=weights)
            single.update(render)
            expected = first_range(single.last_maps[0], higher_is_better=True)
    assert ranges[0] == ranges[1] == {"scenemetrics/puzzlesim/map/0": pytest.approx(expected, abs=1e-6)}
