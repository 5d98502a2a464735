"""YOLOX: official key layout, strict loading through the hub, blocks, letterbox, decode and NMS."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from scenemetrics import hub
from scenemetrics.osim.boxes import decode_outputs, letterbox, postprocess
from scenemetrics.osim.checkpoints import YOLOX_VARIANTS, infer_variant
from scenemetrics.osim.random import random_checkpoint
from scenemetrics.osim.yolox import COCO_CLASSES, FEATURE_LAYERS, YOLOX

from .conftest import images

# (keys, parameters, dark3/4/5 channels, input size) from the spec's table (section 3.1)
TABLE = {
    "yolox_nano": (642, 912_159, (64, 128, 256), 416),
    "yolox_tiny": (462, 5_055_855, (96, 192, 384), 416),
    "yolox_s": (462, 8_968_255, (128, 256, 512), 640),
    "yolox_m": (606, 25_326_495, (192, 384, 768), 640),
    "yolox_l": (750, 54_208_895, (256, 512, 1024), 640),
    "yolox_x": (894, 99_071_455, (320, 640, 1280), 640),
}


def meta_model(variant: str) -> YOLOX:
    with torch.device("meta"):
        return YOLOX(variant).eval()


@pytest.mark.parametrize("variant", YOLOX_VARIANTS)
def test_key_layout_parameter_count_and_bn_constants(variant: str) -> None:
    keys, params, _, size = TABLE[variant]
    m = meta_model(variant)
    assert len(m.state_dict()) == keys
    assert sum(p.numel() for p in m.parameters()) == params
    assert m.input_size == size and m.strides == (8, 16, 32)
    bns = [mod for mod in m.modules() if isinstance(mod, nn.BatchNorm2d)]
    assert bns and all(bn.eps == 1e-3 and bn.momentum == 0.03 for bn in bns)
    assert not any(isinstance(mod, nn.Conv2d) and mod.bias is not None for mod in m.backbone.modules())


def test_spot_checked_names_and_shapes() -> None:
    sd = meta_model("yolox_x").state_dict()
    assert tuple(sd["backbone.backbone.stem.conv.conv.weight"].shape) == (80, 12, 3, 3)
    assert tuple(sd["backbone.backbone.dark5.1.conv2.conv.weight"].shape) == (1280, 2560, 1, 1)
    assert tuple(sd["head.obj_preds.2.bias"].shape) == (1,)
    assert tuple(sd["head.cls_preds.0.weight"].shape) == (80, 320, 1, 1)
    assert "backbone.backbone.dark5.2.m.3.conv2.conv.weight" in sd  # 4 bottlenecks (d = 4) in the last CSP
    assert "backbone.C3_n4.m.3.conv1.bn.num_batches_tracked" in sd
    nano = meta_model("yolox-nano").state_dict()
    assert "backbone.backbone.dark2.0.dconv.conv.weight" in nano
    assert "head.cls_convs.0.0.pconv.bn.running_var" in nano
    assert tuple(nano["backbone.backbone.dark2.0.dconv.conv.weight"].shape) == (16, 1, 3, 3)
    assert not any("dconv" in k for k in meta_model("yolox_s").state_dict())


@pytest.mark.parametrize("variant", YOLOX_VARIANTS)
@pytest.mark.parametrize("size", [640, 416])
def test_feature_shapes(variant: str, size: int) -> None:
    _, _, chans, _ = TABLE[variant]
    m = meta_model(variant)
    canvas = torch.zeros(2, 3, size, size, device="meta")
    feats = m.extract(canvas, FEATURE_LAYERS)
    for k, stride in enumerate((8, 16, 32)):
        for prefix in ("dark", "p"):
            assert tuple(feats[f"{prefix}{k + 3}"].shape) == (2, chans[k], size // stride, size // stride)
    n = sum((size // s) ** 2 for s in (8, 16, 32))
    assert n == (8400 if size == 640 else 3549)
    assert tuple(m(canvas).shape) == (2, n, 85)


def test_variant_names() -> None:
    assert YOLOX("YOLOX-Nano").variant == "yolox_nano"
    with pytest.raises(ValueError, match="yolox_nano, yolox_tiny, yolox_s, yolox_m, yolox_l, yolox_x"):
        YOLOX("yolox_xl")
    assert len(COCO_CLASSES) == 80 and COCO_CLASSES[0] == "person" and COCO_CLASSES[79] == "toothbrush"
    assert COCO_CLASSES[62] == "tv" and COCO_CLASSES[60] == "dining table"


# ---------------------------------------------------------------------------------------------- loading


def test_strict_load_from_release_layout_and_bare_state_dict(tmp_path, nano_ckpt) -> None:
    ckpt = torch.load(nano_ckpt, weights_only=True)
    assert sorted(ckpt) == ["model", "start_epoch"]
    # the release files also hold optimizer state and amp; they must not disturb loading
    full = {"start_epoch": 300, "model": ckpt["model"], "optimizer": {"state": {}, "param_groups": []}, "amp": None}
    torch.save(full, tmp_path / "full.pth")
    torch.save(ckpt["model"], tmp_path / "bare.pth")
    for name in ("full.pth", "bare.pth"):
        m = YOLOX.from_official("yolox_nano", weights_path=tmp_path / name)
        assert not m.training
        assert not any(p.requires_grad for p in m.parameters())
        sd = m.state_dict()
        assert all(torch.equal(sd[k], v) for k, v in ckpt["model"].items())


def test_mismatched_checkpoints_raise_value_error(tmp_path, nano_ckpt) -> None:
    sd = dict(torch.load(nano_ckpt, weights_only=True)["model"])
    missing = {k: v for k, v in sd.items() if k != "head.obj_preds.2.bias"}
    torch.save({"model": missing}, tmp_path / "missing.pth")
    with pytest.raises(ValueError, match=r"yolox_nano.*missing key.*head\.obj_preds\.2\.bias.*legacy 0\.0\.1"):
        YOLOX.from_official("yolox_nano", weights_path=tmp_path / "missing.pth")
    torch.save({"model": {**sd, "head.extra.weight": torch.zeros(1)}}, tmp_path / "extra.pth")
    with pytest.raises(ValueError, match=r"unexpected key.*head\.extra\.weight"):
        YOLOX.from_official("yolox_nano", weights_path=tmp_path / "extra.pth")
    # nano weights are not tiny weights: the error says which variant the file is
    with pytest.raises(ValueError, match=r'is a yolox_nano checkpoint, not yolox_tiny.*detector="yolox_nano"'):
        YOLOX.from_official("yolox_tiny", weights_path=nano_ckpt)
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"could not read checkpoint.*junk\.pth"):
        YOLOX.from_official("yolox_nano", weights_path=tmp_path / "junk.pth")
    torch.save({"model": [1, 2, 3]}, tmp_path / "list.pth")
    with pytest.raises(ValueError, match="not a YOLOX checkpoint"):
        YOLOX.from_official("yolox_nano", weights_path=tmp_path / "list.pth")


def test_cache_folder_offline_error_and_no_unsafe_fallback(tmp_path, monkeypatch, nano_ckpt) -> None:
    cached = hub.cache_dir("osim") / "yolox_nano.pth"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(nano_ckpt.read_bytes())
    m = YOLOX.from_official("yolox_nano")  # weights_path=None: the cache
    assert torch.equal(m.state_dict()["head.obj_preds.0.bias"], torch.load(nano_ckpt)["model"]["head.obj_preds.0.bias"])
    YOLOX.from_official("yolox_nano", weights_path=cached.parent)  # a folder holding <variant>.pth
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError) as err:
        YOLOX.from_official("yolox_s")
    assert err.value.filename == "yolox_s.pth"
    assert "0.1.1rc0/yolox_s.pth" in str(err.value) and str(hub.cache_dir("osim")) in str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(hub.WeightsNotFoundError):
        YOLOX.from_official("yolox_nano", weights_path=tmp_path / "nowhere.pth")
    # training checkpoints that pickle Python objects are refused (never unpickled) with the command that re-saves
    # them; the re-saved file keeps the official layout and loads
    sd = torch.load(nano_ckpt, weights_only=True)["model"]
    pickled = tmp_path / "pickled.pth"
    torch.save({"model": sd, "start_epoch": 3, "args": argparse.Namespace(lr=0.01)}, pickled)
    with pytest.raises(ValueError, match=r"argparse\.Namespace.*scenemetrics weights convert") as info:
        YOLOX.from_official("yolox_nano", weights_path=pickled)
    assert str(pickled) in str(info.value)
    from scenemetrics.cli import main

    assert main(["weights", "convert", str(pickled), str(tmp_path / "pickled.safe.pth"), "--i-trust-this-file"]) == 0
    safe = torch.load(tmp_path / "pickled.safe.pth", weights_only=True)
    assert sorted(safe) == ["args", "model", "start_epoch"] and safe["args"] == {"lr": 0.01}
    m = YOLOX.from_official("yolox_nano", weights_path=tmp_path / "pickled.safe.pth")
    assert torch.equal(m.state_dict()["head.obj_preds.0.bias"], sd["head.obj_preds.0.bias"])


@pytest.mark.parametrize("variant", ["yolox_tiny", "yolox_s", "yolox_m"])
def test_random_checkpoints_load_strictly(tmp_path, variant) -> None:
    path = random_checkpoint(variant, tmp_path / f"{variant}.pth", seed=1, calibrate=False)
    m = YOLOX.from_official(variant, weights_path=path)
    assert m.variant == variant and len(m.state_dict()) == TABLE[variant][0]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["yolox_l", "yolox_x"])
def test_large_random_checkpoints_load_strictly(tmp_path, variant) -> None:
    path = random_checkpoint(variant, tmp_path / f"{variant}.pth", seed=1, calibrate=False)
    m = YOLOX.from_official(variant, weights_path=path)
    assert sum(p.numel() for p in m.parameters()) == TABLE[variant][1]
    ref = torch.load(path, weights_only=True)["model"]
    assert torch.equal(
        m.state_dict()["backbone.backbone.dark5.1.conv2.conv.weight"],
        ref["backbone.backbone.dark5.1.conv2.conv.weight"],
    )


def test_random_checkpoint_is_deterministic_and_detects(tmp_path, nano) -> None:
    a = random_checkpoint("yolox_nano", tmp_path / "a.pth", seed=0)
    b = random_checkpoint("yolox_nano", tmp_path / "b.pth", seed=0)
    c = random_checkpoint("yolox_nano", tmp_path / "c.pth", seed=1, calibrate=False)
    sa, sb, sc = (torch.load(p, weights_only=True)["model"] for p in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["backbone.backbone.stem.conv.conv.weight"], sc["backbone.backbone.stem.conv.conv.weight"])
    dets = nano.detect(images(3)).detections
    counts = [len(d) for d in dets]
    assert all(n > 0 for n in counts), counts  # calibrated random weights give a handful of detections
    assert len(torch.cat([d.classes for d in dets]).unique()) > 1


# ---------------------------------------------------------------------------------------------- blocks


def test_bn_eps_is_load_bearing(nano) -> None:
    m = YOLOX("yolox_nano")
    m.load_state_dict(nano.state_dict())
    m.eval()
    # nearly dead channels (running_var ~ 1e-4) in the BN that produces dark5, as trained checkpoints have
    bn = m.backbone.backbone.dark5[2].conv3.bn
    with torch.no_grad():
        bn.running_var[::3] = 1e-4
    canvas = letterbox(images(1), 128).canvas
    with torch.no_grad():
        ref = m.extract(canvas)["dark5"]
        for bn in (mod for mod in m.modules() if isinstance(mod, nn.BatchNorm2d)):
            bn.eps = 1e-5
        other = m.extract(canvas)["dark5"]
    assert ((other - ref).norm() / ref.norm()) > 0.1


def test_focus_order_is_tl_bl_tr_br() -> None:
    m = YOLOX("yolox_nano").eval()
    stem = m.backbone.backbone.stem
    with torch.no_grad():
        w = torch.zeros_like(stem.conv.conv.weight)  # (16, 12, 3, 3)
        for o in range(12):
            w[o, o, 1, 1] = 1.0
        stem.conv.conv.weight.copy_(w)
        stem.conv.bn.weight.fill_(1.0)
        stem.conv.bn.bias.zero_()
        stem.conv.bn.running_mean.zero_()
        stem.conv.bn.running_var.fill_(1.0 - stem.conv.bn.eps)  # BN is the identity
    x = torch.zeros(1, 3, 8, 8)
    phase = {"tl": (0, 0, 1.0), "bl": (1, 0, 2.0), "tr": (0, 1, 3.0), "br": (1, 1, 4.0)}
    for dy, dx, v in phase.values():
        for c in range(3):
            x[0, c, dy::2, dx::2] = v + 10 * c
    with torch.no_grad():
        y = stem(x)
    for block, (_, _, v) in enumerate(phase.values()):
        for c in range(3):
            expected = F.silu(torch.tensor(v + 10 * c))
            assert torch.allclose(y[0, 3 * block + c], expected.expand(4, 4)), (block, c)


# ---------------------------------------------------------------------------------------------- decode / NMS


def test_decode_outputs_by_hand() -> None:
    levels = [torch.zeros(2, 7, 80 // s, 80 // s) for s in (8, 16, 32)]  # 5 + 2 classes on an 80 px canvas
    levels[1][1, :4, 2, 3] = torch.tensor([0.5, 0.25, 0.0, math.log(2.0)])
    levels[1][1, 4:, 2, 3] = torch.tensor([0.7, 0.1, 0.9])
    out = decode_outputs(levels, (8, 16, 32))
    assert tuple(out.shape) == (2, 100 + 25 + 4, 7)
    row = 100 + 2 * 5 + 3  # stride-8 rows first, then row-major within stride 16
    assert torch.allclose(out[1, row], torch.tensor([3.5 * 16, 2.25 * 16, 16.0, 32.0, 0.7, 0.1, 0.9]))
    # an all-zero cell decodes to its grid position, size = stride
    assert torch.allclose(out[0, 100 + 25 + 3, :4], torch.tensor([32.0, 32, 32, 32]))
    with pytest.raises(ValueError, match="same length"):
        decode_outputs(levels, (8, 16))


def _rows(*rows):
    return torch.tensor([rows], dtype=torch.float32)


def test_postprocess_threshold_nms_order_and_no_clipping() -> None:
    # cx, cy, w, h, obj, cls0, cls1
    raw = _rows(
        [50, 50, 20, 20, 1.0, 0.35, 0.0],  # score exactly at the threshold: kept
        [51, 50, 20, 20, 0.9, 0.0, 0.9],  # overlaps the box above, other class, higher score
        [200, 10, 40, 40, 0.8, 0.5, 0.0],  # reaches outside the canvas: not clipped
        [300, 300, 10, 10, 0.5, 0.69, 0.0],  # 0.345 < 0.35: dropped
    )
    d = postprocess(raw, conf_threshold=0.35, nms_threshold=0.45, ratio=2.0)[0]
    assert d.classes.tolist() == [1, 0]  # class-agnostic NMS kept only the higher of the overlapping pair
    assert torch.allclose(d.scores, torch.tensor([0.81, 0.4]))
    assert torch.allclose(d.boxes_letterbox, torch.tensor([[41.0, 40, 61, 60], [180, -10, 220, 30]]))
    assert torch.allclose(d.boxes, d.boxes_letterbox / 2.0)
    assert torch.allclose(d.objectness, torch.tensor([0.9, 0.8])) and torch.allclose(
        d.class_conf, torch.tensor([0.9, 0.5])
    )
    kept = postprocess(raw[:, :1], conf_threshold=0.35)[0]
    assert len(kept) == 1  # inclusive threshold
    empty = postprocess(raw, conf_threshold=0.99)[0]
    assert len(empty) == 0 and tuple(empty.boxes.shape) == (0, 4) and empty.classes.dtype == torch.int64
    # far-apart boxes of the same class both survive, in score order
    d2 = postprocess(_rows([10, 10, 8, 8, 0.6, 1.0, 0], [90, 90, 8, 8, 0.9, 1.0, 0]), conf_threshold=0.1)[0]
    assert d2.scores.tolist() == pytest.approx([0.9, 0.6])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"conf_threshold": float("nan")}, "conf_threshold"),  # NaN would silently keep nothing
        ({"conf_threshold": -0.1}, "conf_threshold"),
        ({"conf_threshold": True}, "conf_threshold"),
        ({"conf_threshold": "0.3"}, "conf_threshold"),
        ({"nms_threshold": 1.5}, "nms_threshold"),
        ({"nms_threshold": -0.01}, "nms_threshold"),
        ({"nms_threshold": float("nan")}, "nms_threshold"),
        ({"ratio": 0.0}, "ratio"),
        ({"ratio": float("inf")}, "ratio"),
    ],
)
def test_postprocess_and_detect_reject_bad_thresholds(kwargs, name, nano) -> None:
    raw = _rows([50, 50, 20, 20, 1.0, 0.9, 0.0])
    with pytest.raises(ValueError, match=f"`{name}`"):
        postprocess(raw, **kwargs)
    if name != "ratio":
        calls: list[int] = []
        handle = nano.register_forward_pre_hook(lambda *a: calls.append(1))  # the shared detector: removed below
        try:
            with pytest.raises(ValueError, match=f"`{name}`"):
                nano.detect(images(1, 64, 64), **kwargs)
        finally:
            handle.remove()
        assert calls == []  # refused before the network pass


def test_postprocess_infinite_threshold_keeps_no_detection() -> None:
    raw = _rows([50, 50, 20, 20, 1.0, 1.0, 0.0])  # score exactly 1
    assert len(postprocess(raw, conf_threshold=float("inf"))[0]) == 0
    assert len(postprocess(raw, conf_threshold=1.0)[0]) == 1


# ---------------------------------------------------------------------------------------------- letterbox


@pytest.mark.parametrize(
    ("h", "w", "ratio", "content"),
    [
        (480, 640, 1.0, (480, 640)),
        (375, 500, 1.28, (480, 640)),
        (77, 77, 640 / 77, (639, 639)),
        (1000, 800, 0.64, (640, 512)),
    ],
)
def test_letterbox_sizes(h, w, ratio, content) -> None:
    lb = letterbox(torch.zeros(1, 3, h, w, dtype=torch.uint8))
    assert lb.ratio == pytest.approx(ratio, rel=1e-12) and lb.content_size == content
    assert tuple(lb.canvas.shape) == (1, 3, 640, 640)


def test_letterbox_padding_bgr_dtype_and_gradients() -> None:
    img = torch.zeros(3, 100, 200)
    img[0] = 1.0  # pure red
    lb = letterbox(img, 320)
    h_c, w_c = lb.content_size
    assert (h_c, w_c) == (160, 320)
    assert torch.all(lb.canvas[:, 2, :h_c, :w_c] == 255) and torch.all(lb.canvas[:, :2, :h_c, :w_c] == 0)
    assert torch.all(lb.canvas[:, :, h_c:, :] == 114)  # padding only at the bottom / right
    x = images(1, 90, 70)
    u8 = (x * 255).round().to(torch.uint8)
    a, b = letterbox(x, 128).canvas, letterbox(u8, 128).canvas
    assert torch.equal(a, b) and torch.equal(a, a.round())
    assert letterbox(u8, 128).canvas[:, :, :, 99:].eq(114).all()  # 90x70 -> 128x99
    # no resize: the canvas equals the flipped 0..255 image exactly
    same = letterbox(u8[:, :, :64, :64], 64).canvas
    assert torch.equal(same, u8[:, :, :64, :64].flip(1).float())
    xg = x.clone().requires_grad_(True)
    soft = letterbox(xg, 128, quantize=False)
    soft.canvas.sum().backward()
    assert xg.grad is not None and xg.grad.abs().sum() > 0
    assert not torch.equal(soft.canvas, soft.canvas.round())
    with pytest.raises(ValueError, match="multiple of 32"):
        letterbox(x, 100)
    with pytest.raises(ValueError, match="aspect ratio"):
        letterbox(torch.zeros(3, 1, 1000), 416)
    with pytest.raises(ValueError, match="images"):
        letterbox(x * 2, 128)


def test_detect_matches_forward_and_extract(nano) -> None:
    x = images(2, 100, 140)
    out = nano.detect(x, layers=("dark4", "p5"), conf_threshold=0.3)
    canvas = letterbox(x, 416).canvas
    with torch.no_grad():
        raw = nano(canvas)
        feats = nano.extract(canvas, ("dark4", "p5"))
    assert torch.allclose(out.raw, raw, atol=1e-5)
    assert torch.allclose(out.features["dark4"], feats["dark4"]) and torch.allclose(out.features["p5"], feats["p5"])
    assert out.input_size == 416 and out.content_size == (297, 416)
    expected = postprocess(raw, conf_threshold=0.3, ratio=out.ratio)
    for got, exp in zip(out.detections, expected, strict=True):
        assert torch.allclose(got.boxes, exp.boxes, atol=1e-3) and torch.equal(got.classes, exp.classes)
    small = nano.detect(x, input_size=128)
    assert tuple(small.raw.shape) == (2, 336, 85) and small.input_size == 128
    with pytest.raises(ValueError, match="unknown feature layer"):
        nano.extract(canvas, ("dark6",))
    with pytest.raises(ValueError, match="multiples of 32"):
        nano.extract(torch.zeros(1, 3, 100, 100))


# ---------------------------------------------------------------------------------------------- your own YOLOX


@pytest.fixture(scope="module")
def three_class_ckpt(tmp_path_factory) -> Path:
    """A yolox_nano fine-tuned on 3 classes, saved as Megvii's trainer saves: {"model", "start_epoch", ...}."""
    path = tmp_path_factory.mktemp("own") / "best_ckpt.pth"
    random_checkpoint("yolox_nano", path, seed=2, num_classes=3)
    ckpt = torch.load(path, weights_only=True)
    ckpt.update(optimizer={"state": {}, "param_groups": [{"lr": 0.01, "params": [0, 1]}]}, best_ap=12.5)
    torch.save(ckpt, path)
    return path


def test_own_yolox_head_size_is_read_from_the_checkpoint(three_class_ckpt) -> None:
    m = YOLOX.from_official("yolox_nano", weights_path=three_class_ckpt)
    assert m.num_classes == 3
    assert tuple(m.state_dict()["head.cls_preds.2.weight"].shape) == (3, 64, 1, 1)
    canvas = letterbox(images(1), 128).canvas
    assert m(canvas).shape[-1] == 5 + 3
    assert YOLOX.from_official("yolox_nano", weights_path=three_class_ckpt, num_classes=3).num_classes == 3
    with pytest.raises(ValueError, match=r"num_classes=80.*has 3 classes") as info:
        YOLOX.from_official("yolox_nano", weights_path=three_class_ckpt, num_classes=80)
    assert str(three_class_ckpt) in str(info.value)
    with pytest.raises(ValueError, match="num_classes"):
        YOLOX.from_official("yolox_nano", weights_path=three_class_ckpt, num_classes=0)


def test_official_head_is_80_classes(nano_ckpt) -> None:
    assert YOLOX.from_official("yolox_nano", weights_path=nano_ckpt).num_classes == 80
    with pytest.raises(ValueError, match=r"num_classes=3.*has 80 classes"):
        YOLOX.from_official("yolox_nano", weights_path=nano_ckpt, num_classes=3)


@pytest.mark.parametrize("variant", YOLOX_VARIANTS)
def test_infer_variant_from_shapes(variant) -> None:
    assert infer_variant(meta_model(variant).state_dict()) == variant
    with torch.device("meta"):
        assert infer_variant(YOLOX(variant, num_classes=7).state_dict()) == variant
    assert infer_variant({"x": torch.zeros(1)}) is None


def test_checkpoint_of_another_variant_names_it(tmp_path) -> None:
    path = random_checkpoint("yolox_tiny", tmp_path / "mine.pth", calibrate=False, num_classes=5)
    for asked in ("yolox_nano", "yolox_s"):
        with pytest.raises(ValueError, match=r'is a yolox_tiny checkpoint, not .*detector="yolox_tiny".*--detector'):
            YOLOX.from_official(asked, weights_path=path)


def test_own_yolox_through_osim_metric_loss_and_class_names(three_class_ckpt) -> None:
    import scenemetrics as sm
    from scenemetrics.osim import osim

    refs = images(3, seed=4)
    names = ["chair", "lamp", "plant"]
    res = osim((refs * 0.8).clamp(0, 1), refs, detector="yolox_nano", weights_path=three_class_ckpt,
               conf_threshold=0.2, class_names=names)  # fmt: skip
    assert res.r_sum.shape == (4,)  # 3 classes + the pool of given boxes without a class
    assert res.classes.numel() > 0 and int(res.classes.max()) < 3
    table = res.class_table()
    assert table and {row["name"] for row in table} <= set(names)
    assert all(row["name"] == names[row["class_id"]] for row in table)
    metric = sm.OSIM(detector="yolox_nano", weights_path=three_class_ckpt, conf_threshold=0.2, class_names=names)
    metric.update((refs * 0.8).clamp(0, 1), refs)
    torch.testing.assert_close(metric.compute(), res.score)
    assert set(metric.class_scores()) == {row["name"] for row in table}
    assert metric.r_sum.shape == (4,)
    unnamed = sm.OSIM(detector="yolox_nano", weights_path=three_class_ckpt, conf_threshold=0.2)
    unnamed.update(refs, refs)
    assert set(unnamed.class_scores()) <= {"0", "1", "2"}  # no COCO names on a 3-class head
    loss = sm.losses.OSIMLoss(refs, detector="yolox_nano", weights_path=three_class_ckpt, conf_threshold=0.2)
    assert float(loss(refs)) < 1e-5 and loss.model.num_classes == 3
    with pytest.raises(ValueError, match=r"`class_names` has 2 name\(s\).*num_classes=3"):
        sm.OSIM(detector="yolox_nano", weights_path=three_class_ckpt, class_names=["a", "b"])
    with pytest.raises(ValueError, match="repeated"):
        sm.OSIM(detector="yolox_nano", weights_path=three_class_ckpt, class_names=["a", "b", "a"])
    for build in (
        lambda: sm.OSIM(detector="yolox_nano", weights_path=three_class_ckpt, num_classes=80),
        lambda: sm.losses.OSIMLoss(detector="yolox_nano", weights_path=three_class_ckpt, num_classes=80),
        lambda: osim(refs, refs, detector="yolox_nano", weights_path=three_class_ckpt, num_classes=80),
        lambda: sm.OSIM(model=metric.model, num_classes=80),
    ):
        with pytest.raises(ValueError, match=r"num_classes=80"):
            build()


def test_own_yolox_through_the_cli(tmp_path, three_class_ckpt) -> None:
    import json

    from scenemetrics.cli import main
    from scenemetrics.viz import save_png

    refs = images(2, seed=4)
    for i in range(2):
        save_png((refs[i] * 255).round().to(torch.uint8), tmp_path / "gt" / f"v{i}.png")
        save_png(((refs[i] * 0.8) * 255).round().to(torch.uint8), tmp_path / "renders" / f"v{i}.png")
    (tmp_path / "names.txt").write_text("chair\nlamp\nplant\n\n")
    args = ["osim", "--refs", str(tmp_path / "gt"), "--renders", str(tmp_path / "renders"), "--quiet", "--conf", "0.2",
            "--detector", "yolox_nano", "--weights", str(three_class_ckpt), "--device", "cpu"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "out"), "--class-names", str(tmp_path / "names.txt")]) == 0
    report = json.loads((tmp_path / "out" / "osim.json").read_text())
    assert report["num_classes"] == 3 and report["classes"]
    assert {row["name"] for row in report["classes"]} <= {"chair", "lamp", "plant"}
    assert all(o["class"] == ["chair", "lamp", "plant"][o["class_id"]] for o in report["objects"])
    (tmp_path / "two.txt").write_text("chair\nlamp\n")
    assert main([*args, "--out", str(tmp_path / "o2"), "--class-names", str(tmp_path / "two.txt")]) == 1
    (tmp_path / "gap.txt").write_text("chair\n\nlamp\n")
    assert main([*args, "--out", str(tmp_path / "o3"), "--class-names", str(tmp_path / "gap.txt")]) == 1
    wrong = [a if a != "yolox_nano" else "yolox_s" for a in args]
    assert main([*wrong, "--out", str(tmp_path / "o4")]) == 1
