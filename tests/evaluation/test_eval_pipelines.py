"""Other pipelines' outputs, read exactly as they write them (issue 30): the output folder of ``nerfbaselines train``,
the original 3DGS model folder (``train/`` and ``test/`` at two iterations, ``cfg_args``, its own ``cameras.json``),
RGBA Blender predictions with a recorded background, and training views that must not leak the test views.

Every expected value is computed here, independently of the evaluation: PSNR in float64 NumPy, NerfBaselines'
compositing with its own formula (float32 composite, truncated to 8 bits), PuzzleSim with the references named
explicitly.
"""

from __future__ import annotations

import io
import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from scenemetrics import viz
from scenemetrics.cli import main
from scenemetrics.evaluation.layout import discover_units
from scenemetrics.evaluation.predictions import read_predictions
from scenemetrics.puzzlesim import puzzle_similarity, random_checkpoint
from scenemetrics.synthetic import make_scene

from .conftest import read_csv, read_json, read_jsonl, read_png

SIZE = (40, 56)


def _psnr(render: np.ndarray, gt: np.ndarray) -> float:
    mse = float(((render.astype(np.float64) - gt.astype(np.float64)) ** 2).mean())
    return math.inf if mse == 0 else 10 * math.log10(1.0 / mse)


def _png_bytes(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="png")
    return buf.getvalue()


def _u8(x: torch.Tensor) -> np.ndarray:
    """``(3, H, W)`` float in [0, 1] -> ``(H, W, 3)`` uint8, rounded as viz.save_png writes it."""
    return (x.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()


def _eval(*args: str) -> int:
    return main(["eval", *args, "--quiet", "--device", "cpu"])


# ---- 1. nerfbaselines train output -----------------------------------------------------------------------------------


def _nb_info(scene: str) -> dict:
    meta = {"name": "mipnerf360", "scene": scene, "color_space": "srgb", "evaluation_protocol": "default"}
    return {"method": "zipnerf", "nb_version": "1.2.12", "evaluation_protocol": "default",
            "dataset_metadata": meta, "render_dataset_metadata": meta}  # fmt: skip


def _nb_archive(path: Path, members: dict[str, bytes]) -> None:
    """A ``.tar.gz`` written as NerfBaselines' _save_predictions_iterate does: file members at the root, no folders."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(data))


def _nb_train_output(folder: Path) -> dict[int, list[tuple[np.ndarray, np.ndarray]]]:
    """``nerfbaselines train --output folder`` after evaluating steps 5000 and 30000; returns the (render, gt) pairs
    (uint8) of each step."""
    sc = make_scene(num_train=2, num_novel=3, size=SIZE, seed=11)
    folder.mkdir(parents=True)
    pairs: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for step, amount in ((5000, 0.25), (30000, 0.04)):
        members = {"info.json": json.dumps(_nb_info("garden")).encode()}
        pairs[step] = []
        for i, gt in enumerate(sc.novel_targets):
            noise = amount * torch.randn(gt.shape, generator=torch.Generator().manual_seed(step + i))
            render, target = _u8(gt + noise), _u8(gt)
            name = f"DSC{i:05d}"
            members[f"gt-color/{name}.png"] = _png_bytes(target)
            members[f"color/{name}.png"] = _png_bytes(render)
            members[f"cameras/{name}.npz"] = b"\x00" * 16
            pairs[step].append((render, target))
        _nb_archive(folder / f"predictions-{step}.tar.gz", members)
        psnr = float(np.mean([_psnr(r / 255.0, g / 255.0) for r, g in pairs[step]]))
        (folder / f"results-{step}.json").write_text(json.dumps({"metrics": {"psnr": round(psnr, 5)}}))
        (folder / f"checkpoint-{step}").mkdir()
        (folder / f"checkpoint-{step}" / "nb-info.json").write_text("{}")
    # predictions of another split are not test views: a broken archive here would fail the run if it were read
    (folder / "predictions-30000-train.tar.gz").write_bytes(b"not an archive")
    (folder / "tensorboard").mkdir()
    return pairs


def test_nerfbaselines_train_output_is_read_where_it_lies(tmp_path, capsys):
    root = tmp_path / "runs"
    pairs = _nb_train_output(root / "zipnerf" / "garden")
    expected = {step: float(np.mean([_psnr(r / 255.0, g / 255.0) for r, g in p])) for step, p in pairs.items()}
    assert expected[30000] - expected[5000] > 5  # the steps are told apart by their scores
    out = tmp_path / "out"
    assert _eval("--root", str(root), "--out", str(out), "--metrics", "psnr") == 0  # the latest step
    (row,) = read_csv(out / "results.csv")
    assert (row["method"], row["scene"]) == ("zipnerf", "garden")
    assert float(row["psnr"]) == pytest.approx(expected[30000], rel=1e-5)
    (record,) = read_jsonl(out / "results.jsonl")
    assert "predictions-30000.tar.gz (step 30000 of 5000, 30000)" in record["sources"]["renders"]
    assert record["layout"] == "nerfbaselines" and record["num_views"] == 3
    assert len([d for d in (out / "inputs").iterdir() if d.is_dir()]) == 1  # unpacked once, under --out

    assert _eval("--root", str(root), "--out", str(out), "--metrics", "psnr", "--step", "5000") == 0
    (row,) = read_csv(out / "results.csv")
    assert float(row["psnr"]) == pytest.approx(expected[5000], rel=1e-5)

    capsys.readouterr()
    assert _eval("--root", str(root), "--out", str(out), "--metrics", "psnr", "--step", "7000") == 1
    err = capsys.readouterr().err
    assert "has no predictions at step 7000 (steps found: 5000, 30000)" in err


def test_nerfbaselines_archives_need_an_unpacker_from_python(tmp_path):
    _nb_train_output(tmp_path / "runs" / "m" / "s")
    with pytest.raises(ValueError, match=r"predictions-30000\.tar\.gz is an archive: pass `unpack`"):
        discover_units(tmp_path / "runs")


# ---- 2. the 3DGS model folder ----------------------------------------------------------------------------------------

CFG_ARGS = (
    "Namespace(data_device='cuda', depths='', eval={eval}, images='images', model_path='./output/4f2a', "
    "resolution=-1, sh_degree=3, source_path='/data/garden', train_test_exp=False, white_background=False)"
)


def _3dgs(tmp_path: Path, *, eval_: bool = True) -> tuple[Path, Path, dict]:
    """A source dataset (16 images; with ``--eval`` 3DGS holds out DSC0000 and DSC0008) and the model folder
    ``train.py`` + ``render.py`` leave: ``cfg_args``, its ``cameras.json``, ``point_cloud/``, and ``{train,test}/
    ours_{7000,30000}/{renders,gt}/`` with render.py's file names."""
    sc = make_scene(num_train=14, num_novel=2, size=SIZE, seed=4)
    names = [f"DSC{i:04d}" for i in range(16)]
    held = {0: sc.novel_targets[0], 8: sc.novel_targets[1]}
    train_imgs = iter(sc.train_views)
    source = {name: held[i] if i in held else next(train_imgs) for i, name in enumerate(names)}
    dataset = tmp_path / "dataset"
    for name, img in source.items():
        viz.save_png(img, dataset / "garden" / "images" / f"{name}.png")
    (dataset / "garden" / "sparse" / "0").mkdir(parents=True)
    model = tmp_path / "root" / "3dgs" / "garden"
    model.mkdir(parents=True)
    (model / "cfg_args").write_text(CFG_ARGS.format(eval=eval_))
    eye = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    cams = [{"id": i, "img_name": n, "width": SIZE[1], "height": SIZE[0], "position": [0, 0, 0],
             "rotation": eye, "fy": 50.0, "fx": 50.0} for i, n in enumerate(names)]  # fmt: skip
    (model / "cameras.json").write_text(json.dumps(cams))
    (model / "point_cloud" / "iteration_30000").mkdir(parents=True)
    (model / "point_cloud" / "iteration_30000" / "point_cloud.ply").write_bytes(b"ply\n")
    train_names = [n for i, n in enumerate(names) if i % 8 != 0]
    for it in (7000, 30000):
        for idx, name in enumerate(train_names):
            viz.save_png(source[name], model / "train" / f"ours_{it}" / "gt" / f"{idx:05d}.png")
            # renders of the training cameras carry the model's artifacts (here: those of the test renders), which
            # references must never hold: PuzzleSim would find the artifacts plausible
            render = sc.novel_views[idx % 2] if it == 30000 else 1 - source[name]
            viz.save_png(render, model / "train" / f"ours_{it}" / "renders" / f"{idx:05d}.png")
        for idx, (art, gt) in enumerate(zip(sc.novel_views, sc.novel_targets, strict=True)):
            viz.save_png(art if it == 30000 else gt, model / "test" / f"ours_{it}" / "renders" / f"{idx:05d}.png")
            viz.save_png(gt, model / "test" / f"ours_{it}" / "gt" / f"{idx:05d}.png")
    return tmp_path / "root", dataset, {"names": names, "train_names": train_names, "scene": sc}


def test_3dgs_training_views_are_the_training_cameras_ground_truth(tmp_path):
    root, _, info = _3dgs(tmp_path)
    (unit,) = discover_units(root)
    assert unit.layout == "gaussian-splatting" and unit.folder.name == "ours_30000"
    # train/ holds renders of two iterations and the ground truth twice (56 images): only one gt/ folder is read
    assert [p.parent.as_posix().split("/")[-3:] for p in unit.train[:1]] == [["train", "ours_30000", "gt"]]
    assert len(unit.train) == len(info["train_names"]) == 14
    assert "3DGS render.py" in unit.train_origin and "train/ours_30000/gt" in unit.train_origin
    assert unit.cameras is None  # 3DGS's own cameras.json (a camera list) is not PRISM's file
    assert unit.background == (0, 0, 0) and "white_background=False" in unit.background_origin
    (at7000,) = discover_units(root, step=7000)
    assert at7000.folder.name == "ours_7000" and at7000.train[0].parts[-3] == "ours_7000"


def test_3dgs_explicit_train_views_win_and_drop_the_eval_test_views(tmp_path):
    root, dataset, info = _3dgs(tmp_path)
    (unit,) = discover_units(root, train_views=dataset)
    assert [p.stem for p in unit.train] == info["train_names"]  # DSC0000 and DSC0008 (the test views) dropped
    assert unit.held_out == 2
    assert "--train-views" in unit.train_origin and "14 of 16 images, 2 held out (3DGS --eval" in unit.train_origin
    assert not unit.warnings


def test_3dgs_puzzlesim_references_and_score(tmp_path, capsys):
    """The PuzzleSim score with the training cameras' ground truth, and with the source dataset minus its test
    views, equals PuzzleSim computed here with exactly those 14 references (before: 56 images of train/)."""
    root, dataset, info = _3dgs(tmp_path)
    weights = random_checkpoint("squeezenet1_1", tmp_path / "sq.pth")  # what --random-weights builds (seed 0)
    refs = [torch.from_numpy(read_png(dataset / "garden" / "images" / f"{n}.png")).permute(2, 0, 1).float()
            for n in info["train_names"]]  # fmt: skip
    test = root / "3dgs" / "garden" / "test" / "ours_30000" / "renders"
    renders = [torch.from_numpy(read_png(p)).permute(2, 0, 1)[None].float() for p in sorted(test.iterdir())]
    expected = float(np.mean([float(puzzle_similarity(r, refs, weights_path=weights)[0]) for r in renders]))
    # what reading train/ recursively gave (renders and ground truth of both iterations): another score
    everything = [torch.from_numpy(read_png(p)).permute(2, 0, 1).float()
                  for p in sorted((root / "3dgs" / "garden" / "train").rglob("*.png"))]  # fmt: skip
    assert len(everything) == 56
    old = float(np.mean([float(puzzle_similarity(r, everything, weights_path=weights)[0]) for r in renders]))
    assert old - expected > 0.005  # the test views themselves were references: PuzzleSim 1.0
    for extra in ((), ("--train-views", str(dataset))):
        out = tmp_path / f"out{len(extra)}"
        capsys.readouterr()
        assert main(["eval", "--root", str(root), "--out", str(out), "--metrics", "puzzlesim", "--random-weights",
                     "--device", "cpu", *extra]) == 0  # fmt: skip
        err = capsys.readouterr().err
        assert "3dgs/garden: training views: " in err  # printed per unit
        (row,) = read_csv(out / "results.csv")
        assert float(row["puzzlesim"]) == pytest.approx(expected, abs=1e-5)
        (scene,) = read_json(out / "results.json")["scenes"]
        assert scene["sources"]["held_out"] == (2 if extra else 0)
        assert ("--train-views" in scene["sources"]["train_views"]) == bool(extra)
        (record,) = read_jsonl(out / "results.jsonl")
        assert record["sources"] == scene["sources"]
        assert not [w for w in record["warnings"] if "pixel-identical" in w]


def test_a_reference_identical_to_a_test_target_is_reported(tmp_path):
    """No known split (no cfg_args): nothing is dropped, and the leak of the two test views is named."""
    root, dataset, _ = _3dgs(tmp_path)
    (root / "3dgs" / "garden" / "cfg_args").unlink()
    (unit,) = discover_units(root, train_views=dataset)
    assert len(unit.train) == 16 and unit.held_out == 0 and "split is not known" in unit.train_origin
    out = tmp_path / "out"
    assert _eval("--root", str(root), "--train-views", str(dataset), "--out", str(out), "--metrics", "puzzlesim",
                 "--random-weights") == 0  # fmt: skip
    (record,) = read_jsonl(out / "results.jsonl")
    (leak,) = [w for w in record["warnings"] if "pixel-identical" in w]
    assert leak.startswith("2 training view(s) are pixel-identical to test ground truth")
    assert "DSC0000.png = test view 00000" in leak and "DSC0008.png = test view 00001" in leak


def test_3dgs_rule_warns_when_the_counts_disagree(tmp_path):
    root, dataset, _ = _3dgs(tmp_path)
    extra = read_png(dataset / "garden" / "images" / "DSC0001.png")
    Image.fromarray((extra * 255).round().astype(np.uint8)).save(dataset / "garden" / "images" / "DSC0016.png")
    (unit,) = discover_units(root, train_views=dataset)  # 17 images: the rule holds out 3, render.py wrote 2 views
    assert unit.held_out == 3
    (warning,) = unit.warnings
    assert "holds out 3 of its 17 images, but render.py wrote 2 test views" in warning and "/data/garden" in warning


# ---- 3. RGBA predictions and the recorded background -----------------------------------------------------------------


def _nb_composite(rgba: np.ndarray, background: tuple[int, int, int]) -> np.ndarray:
    """NerfBaselines' image_to_srgb: float32 composite onto the uint8 background, truncated to uint8, / 255."""
    t = rgba.astype(np.float32) / np.float32(255.0)
    alpha = t[..., 3:]
    color = t[..., :3] * alpha
    color += (1 - alpha) * (np.array(background, np.uint8).astype(np.float32) / np.float32(255.0))
    return (color * np.float32(255.0)).clip(0, 255).astype(np.uint8).astype(np.float32) / np.float32(255.0)


def _rgba_predictions(folder: Path, background: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Blender-like RGBA predictions: an object on a transparent background, soft (partly transparent) edges."""
    rng = np.random.default_rng(7)
    pairs = []
    h, w = SIZE
    for i in range(2):
        alpha = np.zeros((h, w), np.uint8)
        alpha[8:32, 10:46] = 255
        alpha[7, 10:46] = alpha[32, 10:46] = 77  # a soft edge
        gt_rgb = (rng.random((h, w, 3)) * 255).astype(np.uint8)
        render_rgb = np.clip(gt_rgb.astype(int) + rng.integers(-20, 21, gt_rgb.shape), 0, 255).astype(np.uint8)
        # the render's opacity differs from the ground truth's (a floater, a thin part): the background shows
        render_alpha = alpha.copy()
        render_alpha[2:6, 2:20] = 60
        render_alpha[20:24, 10:46] = 200
        # colour under zero alpha is arbitrary in RGBA files (black in Blender's, anything in a render's): dropping
        # alpha scores it
        gt_rgb[alpha == 0] = 0
        render_rgb[render_alpha == 0] = (rng.random(((render_alpha == 0).sum(), 3)) * 255).astype(np.uint8)
        render_rgb[2:6, 2:20] = 30  # a dark floater: closer to a black background than to a white one
        gt = np.dstack([gt_rgb, alpha])
        render = np.dstack([render_rgb, render_alpha])
        for sub, img in (("color", render), ("gt-color", gt)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            Image.fromarray(img, "RGBA").save(folder / sub / f"r_{i}.png")
        pairs.append((render, gt))
    meta = {"name": "blender", "scene": "lego", "color_space": "srgb", "evaluation_protocol": "nerf",
            "background_color": background}  # fmt: skip
    info = {"method": "instant-ngp", "evaluation_protocol": "nerf", "dataset_metadata": dict(meta),
            "render_dataset_metadata": meta}  # fmt: skip
    (folder / "info.json").write_text(json.dumps(info))
    return pairs


def test_rgba_predictions_use_the_recorded_background(tmp_path, capsys):
    preds = tmp_path / "preds"
    pairs = _rgba_predictions(preds, [255, 255, 255])
    white = np.mean([_psnr(_nb_composite(r, (255,) * 3), _nb_composite(g, (255,) * 3)) for r, g in pairs])
    black = np.mean([_psnr(_nb_composite(r, (0,) * 3), _nb_composite(g, (0,) * 3)) for r, g in pairs])
    dropped = np.mean([_psnr(r[..., :3] / 255.0, g[..., :3] / 255.0) for r, g in pairs])
    assert white - dropped > 3 and abs(white - black) > 0.1  # the background matters, and so does the rounding
    float_white = np.mean(
        [_psnr(*(x[..., :3] / 255 * (x[..., 3:] / 255) + (1 - x[..., 3:] / 255) for x in (r, g))) for r, g in pairs]
    )
    assert abs(float_white - white) > 1e-4  # NerfBaselines' 8-bit rounding is measurable
    (unit,) = read_predictions([preds], tmp_path / "cache")
    assert unit.background == (255, 255, 255) and unit.round_composites
    out = tmp_path / "out"
    assert _eval("--predictions", str(preds), "--out", str(out), "--metrics", "psnr") == 0
    (row,) = read_csv(out / "results.csv")
    assert float(row["psnr"]) == pytest.approx(white, abs=1e-4)
    (record,) = read_jsonl(out / "results.jsonl")
    assert record["sources"]["background"]["rgb"] == [255, 255, 255]
    assert record["sources"]["background"]["from"].endswith("info.json background_color")
    assert not record["warnings"]  # no "alpha dropped" warning any more
    out2 = tmp_path / "out2"
    assert _eval("--predictions", str(preds), "--out", str(out2), "--metrics", "psnr", "--background", "black") == 0
    (row,) = read_csv(out2 / "results.csv")
    assert float(row["psnr"]) == pytest.approx(black, abs=1e-4)  # the flag overrides the recorded colour
    (record,) = read_jsonl(out2 / "results.jsonl")
    assert record["sources"]["background"] == {
        "rgb": [0, 0, 0],
        "from": "--background black",
        "rounded_to_8_bits": True,
    }


def test_a_malformed_background_color_is_named(tmp_path):
    preds = tmp_path / "preds"
    _rgba_predictions(preds, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"info\.json: `background_color` must be three integers in \[0, 255\]"):
        read_predictions([preds], tmp_path / "cache")
