"""The published protocols' SSIM and LPIPS as metrics ``scenemetrics eval`` runs, ``--protocol``, and which source
views are training views (issue 30).

Expected values come from brute-force loops of each definition written here (every window position, float64), from
hand-worked cases, and from the ``lpips`` package (Zhang et al.'s code) with the same backbone weights.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics.cli import main
from scenemetrics.evaluation.layout import discover_units, list_image_files
from scenemetrics.evaluation.splits import split_views
from scenemetrics.registry import apply_protocol, get_metric, protocol_names

from .conftest import read_csv, read_json

# ---- brute force of the SSIM definitions -----------------------------------------------------------------------------


def _window() -> np.ndarray:
    d = np.arange(-5, 6, dtype=np.float64)
    w = np.exp(-(d**2) / (2 * 1.5**2))
    w /= w.sum()
    return np.outer(w, w)


def ssim_loops(x: np.ndarray, y: np.ndarray, border: str) -> float:
    """SSIM of two ``(H, W, C)`` float64 images, one window position at a time.

    ``border="zeros"``: 3DGS's ``utils/loss_utils.py`` (an 11 x 11 "same" convolution with zero padding, no clipping,
    mean over every pixel); ``border="valid"``: dm_pix / NerfBaselines (positions where the window fits, variances
    clipped at float32 eps squared, covariance clipped to +-sqrt(var_x var_y)).
    """
    win, c1, c2 = _window(), 0.01**2, 0.03**2
    eps = float(np.finfo(np.float32).eps) ** 2
    if border == "zeros":
        x, y = (np.pad(a, ((5, 5), (5, 5), (0, 0))) for a in (x, y))
    rows, cols = x.shape[0] - 10, x.shape[1] - 10
    values = []
    for c in range(x.shape[2]):
        for i in range(rows):
            for j in range(cols):
                px, py = x[i : i + 11, j : j + 11, c], y[i : i + 11, j : j + 11, c]
                mx, my = (win * px).sum(), (win * py).sum()
                vx, vy = (win * px * px).sum() - mx * mx, (win * py * py).sum() - my * my
                cov = (win * px * py).sum() - mx * my
                if border == "valid":
                    vx, vy = max(vx, eps), max(vy, eps)
                    cov = math.copysign(min(math.sqrt(vx * vy), abs(cov)), cov)
                values.append(((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2)))
    return float(np.mean(values))


def test_the_brute_force_matches_a_hand_worked_case():
    """Flat images a and b: no variance, so SSIM = (2ab + C1) / (a^2 + b^2 + C1) at every valid position."""
    x, y = np.full((12, 13, 1), 0.2), np.full((12, 13, 1), 0.6)
    # (the clipping of the variances at float32 eps^2 moves it by 3e-11)
    assert ssim_loops(x, y, "valid") == pytest.approx((2 * 0.12 + 1e-4) / (0.04 + 0.36 + 1e-4), rel=1e-9)
    # with zero padding the border windows see black: the mean is lower than the flat value
    assert ssim_loops(x, y, "zeros") < ssim_loops(x, y, "valid")


def _tree(root: Path, sizes: tuple[tuple[int, int], ...], seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``root/m/s/{renders,gt}/v<i>.png`` (8-bit), one view per size; returns the (render, gt) pairs in [0, 1]."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i, (h, w) in enumerate(sizes):
        gt = (rng.random((h, w, 3)) * 255).round().astype(np.uint8)
        gt[..., 0] = (255 * np.arange(w) / w).astype(np.uint8)[None, :]  # some structure besides the noise
        render = np.clip(gt.astype(int) + rng.integers(-40, 41, gt.shape), 0, 255).astype(np.uint8)
        for sub, img in (("renders", render), ("gt", gt)):
            (root / "m" / "s" / sub).mkdir(parents=True, exist_ok=True)
            Image.fromarray(img).save(root / "m" / "s" / sub / f"v{i}.png")
        pairs.append((render / 255.0, gt / 255.0))
    return pairs


def _eval(*args: str) -> int:
    return main(["eval", *args, "--quiet", "--device", "cpu"])


def test_ssim_variants_equal_their_definitions(tmp_path):
    pairs = _tree(tmp_path / "root", ((13, 17), (24, 20)))
    out = tmp_path / "out"
    assert (
        _eval("--root", str(tmp_path / "root"), "--out", str(out), "--metrics", "ssim,ssim_3dgs,ssim_nerfbaselines")
        == 0
    )
    (row,) = read_csv(out / "results.csv")
    three = np.mean([ssim_loops(r, g, "zeros") for r, g in pairs])
    nerfbaselines = np.mean([ssim_loops(r, g, "valid") for r, g in pairs])
    assert float(row["ssim_3dgs"]) == pytest.approx(three, abs=2e-6)  # float32, as 3DGS computes it
    assert float(row["ssim_nerfbaselines"]) == pytest.approx(nerfbaselines, abs=1e-7)  # float64 filter
    assert abs(three - nerfbaselines) > 0.01 and abs(float(row["ssim"]) - three) > 1e-3  # three definitions
    doc = read_json(out / "results.json")
    assert doc["metrics"]["ssim_3dgs"]["higher_is_better"] is True


@pytest.mark.slow
def test_lpips_variants_equal_the_lpips_package(tmp_path):
    lpips_package = pytest.importorskip("lpips", reason="needs the `lpips` package (the [dev] extra)")
    from scenemetrics.puzzlesim import random_checkpoint

    pairs = _tree(tmp_path / "root", ((32, 40), (36, 36)))
    out = tmp_path / "out"
    assert _eval("--root", str(tmp_path / "root"), "--out", str(out), "--metrics", "lpips_vgg,lpips_3dgs",
                 "--random-weights") == 0  # fmt: skip
    (row,) = read_csv(out / "results.csv")
    # the same random VGG16 as --random-weights (seed 0), loaded into the package's own model; its own linear layers
    tv = torch.load(random_checkpoint("vgg16", tmp_path / "vgg.pth", include_classifier=False), weights_only=True)
    model = lpips_package.LPIPS(net="vgg", pnet_rand=True, verbose=False)
    state = {
        k: tv[f"features.{k.split('.', 3)[2]}.{k.split('.', 3)[3]}"] for k in model.state_dict() if k.startswith("net.")
    }
    assert not model.load_state_dict(state, strict=False).unexpected_keys
    model.eval()
    with torch.no_grad():
        as_tensor = [tuple(torch.from_numpy(x).permute(2, 0, 1)[None].float() for x in pair) for pair in pairs]
        standard = np.mean([float(model(r, g, normalize=True)) for r, g in as_tensor])
        unscaled = np.mean([float(model(r, g, normalize=False)) for r, g in as_tensor])  # 3DGS's [0, 1] inputs
    assert float(row["lpips_vgg"]) == pytest.approx(standard, rel=1e-5)
    assert float(row["lpips_3dgs"]) == pytest.approx(unscaled, rel=1e-5)
    assert abs(standard - unscaled) > 1e-3


def test_protocol_picks_one_tables_variants(tmp_path, capsys):
    pairs = _tree(tmp_path / "root", ((16, 20),))
    root = str(tmp_path / "root")
    expected = {"3dgs": ssim_loops(*pairs[0], "zeros"), "nerfbaselines": ssim_loops(*pairs[0], "valid")}
    for protocol, column in (("3dgs", "ssim_3dgs"), ("nerfbaselines", "ssim_nerfbaselines"), ("scenemetrics", "ssim")):
        out = tmp_path / protocol
        assert _eval("--root", root, "--out", str(out), "--metrics", "psnr,ssim", "--protocol", protocol) == 0
        (row,) = read_csv(out / "results.csv")
        assert list(row) == ["method", "scene", "psnr", column]
        if protocol in expected:
            assert float(row[column]) == pytest.approx(expected[protocol], abs=2e-6)
        assert read_json(out / "results.json")["protocol"] == protocol
    capsys.readouterr()
    argv = ["--root", root, "--out", str(tmp_path / "x"), "--protocol", "nerfbaselines", "--lpips-net", "vgg"]
    assert _eval(*argv) == 2
    assert "--protocol: protocol 'nerfbaselines' computes lpips with net='alex'; the options give lpips.net='vgg'" in (
        capsys.readouterr().err
    )


def test_protocol_table():
    assert protocol_names() == ["scenemetrics", "3dgs", "nerfbaselines"]
    assert apply_protocol("3dgs", ["psnr", "ssim", "lpips", "puzzlesim"]) == [
        "psnr",
        "ssim_3dgs",
        "lpips_3dgs",
        "puzzlesim",
    ]
    assert apply_protocol("nerfbaselines", ["psnr", "ssim", "lpips"]) == ["psnr", "ssim_nerfbaselines", "lpips"]
    assert apply_protocol("scenemetrics", ["psnr", "ssim", "lpips"]) == ["psnr", "ssim", "lpips"]
    everything = apply_protocol("3dgs", ["all"])
    assert everything.count("ssim_3dgs") == 1 and "ssim" not in everything and "lpips" not in everything
    assert apply_protocol("nerfbaselines", ["lpips"], {"lpips": {"net": "alex"}}) == ["lpips"]
    with pytest.raises(ValueError, match="unknown protocol 'mip'; known protocols: scenemetrics, 3dgs, nerfbaselines"):
        apply_protocol("mip", ["psnr"])
    for name in ("ssim_3dgs", "ssim_nerfbaselines", "lpips_vgg", "lpips_3dgs"):
        assert get_metric(name).inputs == frozenset({"gt"})
    assert get_metric("lpips_3dgs").higher_is_better is False and get_metric("lpips_3dgs").option_keys == (
        "weights",
        "linear_weights",
    )


# ---- which source views are training views --------------------------------------------------------------------------


def _images(folder: Path, names: list[str]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), (i, 0, 0)).save(folder / name)
    return list_image_files(folder)


def _blender(scene: Path) -> None:
    for split, n in (("train", 4), ("val", 2), ("test", 3)):
        _images(scene, [f"{split}/r_{i}.png" for i in range(n)])
        frames = [{"file_path": f"./{split}/r_{i}", "transform_matrix": np.eye(4).tolist()} for i in range(n)]
        (scene / f"transforms_{split}.json").write_text(json.dumps({"camera_angle_x": 0.69, "frames": frames}))


def test_blender_frames_of_transforms_train_are_the_training_views(tmp_path):
    dataset = tmp_path / "blender"
    _blender(dataset / "lego")
    preds = tmp_path / "root" / "instant-ngp" / "lego"
    for sub in ("color", "gt-color"):
        _images(preds / sub, ["r_0.png"])
    (unit,) = discover_units(tmp_path / "root", train_views=dataset)
    assert [p.relative_to(dataset / "lego").as_posix() for p in unit.train] == [f"train/r_{i}.png" for i in range(4)]
    assert unit.held_out == 5 and "Blender split: the frames of transforms_train.json" in unit.train_origin
    files = list_image_files(dataset / "lego")
    kept, dropped, rule = split_views(dataset / "lego", files, pipeline="gaussian-splatting", cfg_args={"eval": False})
    assert len(kept) == 7 and sorted(dropped) == ["val/r_0", "val/r_1"] and "trained without --eval" in rule


def test_nerfbaselines_split_files_and_colmap_default(tmp_path):
    names = [f"DSC{i:04d}.JPG" for i in range(10)]
    files = _images(tmp_path / "garden" / "images", names)
    (tmp_path / "garden" / "sparse" / "0").mkdir(parents=True)
    kept, dropped, rule = split_views(tmp_path / "garden" / "images", files, pipeline="nerfbaselines")
    assert sorted(dropped) == ["DSC0000", "DSC0008"] and "COLMAP default" in rule  # every 8th, index 0 first
    kept, dropped, rule = split_views(tmp_path / "garden" / "images", files, pipeline="scenemetrics")
    assert not dropped and rule == ""  # no pipeline named: nothing is assumed
    (tmp_path / "garden" / "train_list.txt").write_text("DSC0001.JPG\nDSC0004.JPG\n")
    kept, dropped, rule = split_views(tmp_path / "garden" / "images", files, pipeline="scenemetrics")
    assert sorted(kept) == ["DSC0001", "DSC0004"] and len(dropped) == 8 and rule.endswith("train_list.txt")


def test_nerfstudio_split(tmp_path):
    data = tmp_path / "poster"
    files = _images(data / "images", [f"frame_{i:05d}.png" for i in range(1, 11)])
    frames = [{"file_path": f"images/frame_{i:05d}.png"} for i in range(10, 0, -1)]  # any order: sorted by name
    (data / "transforms.json").write_text(json.dumps({"frames": frames}))
    # nerfstudio's default: ceil(0.9 * 10) = 9 training images at int(linspace(0, 9, 9)) = 0 1 2 3 4 5 6 7 9
    kept, dropped, rule = split_views(data / "images", files, pipeline="nerfstudio")
    assert dropped == ["frame_00009"] and "eval_mode=fraction" in rule
    kept, dropped, rule = split_views(data / "images", files, pipeline="scenemetrics")
    assert not dropped
    doc = {"frames": frames, "train_filenames": ["images/frame_00002.png", "images/frame_00003.png"]}
    (data / "transforms.json").write_text(json.dumps(doc))
    kept, dropped, rule = split_views(data / "images", files, pipeline="scenemetrics")
    assert sorted(kept) == ["frame_00002", "frame_00003"] and "train_filenames" in rule


def test_a_broken_split_file_is_named(tmp_path):
    files = _images(tmp_path / "lego", ["train/r_0.png"])
    (tmp_path / "lego" / "transforms_train.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"transforms_train\.json: not valid JSON"):
        split_views(tmp_path / "lego", files, pipeline="nerfbaselines")
