"""Backbones and their checkpoints (spec sec. 2, 10.9): resolution order, accepted layouts, key mismatches, offline
errors, the verified download path (with a fake downloader), and the frozen backbone module itself."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
import torch

from scenemetrics import hub
from scenemetrics.puzzlesim import BACKBONES, PuzzleSim, load_backbone, puzzle_similarity_map, random_checkpoint
from tests.utils.weights import publish_hash

from .naive import TORCHVISION_FILES, NaivePuzzleSim, he_normal_state_dict, smooth_images

REFS = smooth_images(2, 40, 48, seed=90)
IMAGE = smooth_images(1, 48, 40, seed=91)
URLS = {name: f"https://download.pytorch.org/models/{file}" for name, file in TORCHVISION_FILES.items()}


def maps_with(weights_path=None) -> torch.Tensor:
    return puzzle_similarity_map(IMAGE, REFS, weights_path=weights_path)


@pytest.fixture(scope="module")
def seed_maps(checkpoint):
    """Maps computed with the seed-0 and seed-1 checkpoints (to tell which file a lookup used)."""
    return {seed: maps_with(checkpoint("squeezenet1_1", seed=seed)) for seed in (0, 1)}


def test_backbones_table():
    assert set(BACKBONES) == {"squeezenet1_1", "alexnet", "vgg16"}
    sq, alex, vgg = BACKBONES["squeezenet1_1"], BACKBONES["alexnet"], BACKBONES["vgg16"]
    assert sq.slices == ((0, 2), (2, 5), (5, 8), (8, 10), (10, 11), (11, 12), (12, 13))
    assert sq.channels == (64, 128, 256, 384, 384, 512, 512) and sq.strides == (2, 4, 8, 16, 16, 16, 16)
    assert alex.slices == ((0, 2), (2, 5), (5, 8), (8, 10), (10, 12))
    assert alex.channels == (64, 192, 384, 256, 256) and alex.strides == (4, 8, 16, 16, 16)
    assert vgg.slices == ((0, 4), (4, 9), (9, 16), (16, 23), (23, 30))
    assert vgg.channels == (64, 128, 256, 512, 512) and vgg.strides == (1, 2, 4, 8, 16)
    for name, spec in BACKBONES.items():
        assert spec.filename == TORCHVISION_FILES[name]
        assert spec.url == URLS[name]
    with pytest.raises(TypeError):
        BACKBONES["resnet"] = sq  # read-only mapping


@pytest.mark.parametrize("name", ["squeezenet1_1", "alexnet", "vgg16"])
def test_backbone_module_is_frozen_and_matches_torchvision(name, checkpoint):
    ckpt = checkpoint(name)
    net = load_backbone(name, weights_path=ckpt)
    assert not net.training and all(not p.requires_grad for p in net.parameters())
    net.train()
    assert not net.training  # frozen forever
    spec = BACKBONES[name]
    layers = tuple(range(spec.num_layers))
    x = smooth_images(1, 40, 44, seed=92)
    with torch.no_grad():
        got = net(x, layers)
    expected = NaivePuzzleSim(name, ckpt).layer_features(x, layers)  # (x - mean) / std, torchvision in float64
    assert set(got) == set(layers)
    for layer in layers:
        assert got[layer].shape[1] == spec.channels[layer]
        assert bool((got[layer] >= 0).all())  # post-ReLU taps
        torch.testing.assert_close(got[layer].double(), expected[layer], atol=1e-4, rtol=1e-4)
    # loaded modules are cached per (backbone, file, device)
    assert load_backbone(name, weights_path=ckpt) is net


def test_only_the_needed_slices_run(squeeze_ckpt):
    net = load_backbone("squeezenet1_1", weights_path=squeeze_ckpt)
    ran: list[int] = []
    # the pass runs each slice's modules one by one (so no slice input is held while the slice runs): hook those
    handles = [m.register_forward_hook(lambda m, i, o, k=k: ran.append(k)) for k, s in enumerate(net.slices) for m in s]
    try:
        with torch.no_grad():
            out = net(torch.rand(1, 3, 64, 64), (2, 4))
    finally:
        for h in handles:
            h.remove()
    assert sorted(out) == [2, 4] and sorted(set(ran)) == [0, 1, 2, 3, 4]
    assert ran == sorted(ran) and len(ran) == sum(len(s) for s in list(net.slices)[:5])


def test_feature_sizes_of_the_spec_example(squeeze_ckpt):
    with torch.no_grad():
        feats = load_backbone("squeezenet1_1", weights_path=squeeze_ckpt)(torch.rand(1, 3, 416, 628), (2, 3, 4))
    assert feats[2].shape == (1, 256, 51, 78)
    assert feats[3].shape == feats[4].shape == (1, 384, 25, 39)


@pytest.mark.parametrize(
    ("name", "classifier"), [("squeezenet1_1", True), ("squeezenet1_1", False), ("alexnet", False)]
)
def test_random_checkpoint_follows_its_documented_recipe(name, classifier, tmp_path):
    path = random_checkpoint(name, tmp_path / "w.pth", seed=5, include_classifier=classifier)
    state = torch.load(path, weights_only=True)
    expected = he_normal_state_dict(name, seed=5, include_classifier=classifier)
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert torch.equal(state[key], value), key


@pytest.mark.slow
def test_random_checkpoint_follows_its_documented_recipe_vgg16(tmp_path):
    state = torch.load(random_checkpoint("vgg16", tmp_path / "v.pth", include_classifier=False), weights_only=True)
    expected = he_normal_state_dict("vgg16", include_classifier=False)
    assert list(state) == list(expected)
    assert all(torch.equal(state[k], v) for k, v in expected.items())


# layouts ----------------------------------------------------------------------------------------------------------
def test_accepted_checkpoint_layouts_give_the_same_maps(tmp_path, squeeze_ckpt, seed_maps):
    full = he_normal_state_dict("squeezenet1_1", seed=0, include_classifier=True)
    g = torch.Generator().manual_seed(0)
    full = {k: (torch.randn(v.shape, generator=g) if k.startswith("classifier.") else v) for k, v in full.items()}
    features = {k: v for k, v in full.items() if k.startswith("features.")}
    bare = {k[len("features.") :]: v for k, v in features.items()}
    for label, state in {"full-random-classifier": full, "features": features, "bare": bare}.items():
        path = tmp_path / f"{label}.pth"
        torch.save(state, path)
        torch.testing.assert_close(maps_with(path), seed_maps[0], atol=0, rtol=0)


class _Unsafe:
    """A pickled Python object in a checkpoint."""


def test_key_mismatches_are_value_errors(tmp_path):
    state = he_normal_state_dict("squeezenet1_1", seed=0, include_classifier=False)
    missing = dict(state)
    del missing["features.12.expand3x3.weight"]
    extra = dict(state)
    extra["features.13.weight"] = torch.zeros(3)
    outer = dict(state)
    outer["head.weight"] = torch.zeros(3)
    alexnet = he_normal_state_dict("alexnet", seed=0, include_classifier=False)
    cases = {
        "missing": (missing, r"missing keys \['12\.expand3x3\.weight'\]"),
        "unexpected": (extra, r"unexpected keys \['13\.weight'\]"),
        "outer": (outer, r"unexpected keys \[.*head\.weight"),
        "other-architecture": (alexnet, r"squeezenet1_1\.features.*missing keys"),
        "not-a-state-dict": ([torch.zeros(3)], r"state_dict"),
    }
    for label, (state_, pattern) in cases.items():
        path = tmp_path / f"{label}.pth"
        torch.save(state_, path)
        with pytest.raises(ValueError, match=pattern) as info:
            load_backbone("squeezenet1_1", weights_path=path)
        assert path.name in str(info.value)
    pickled = tmp_path / "pickled.pth"
    torch.save({"features.0.weight": _Unsafe()}, pickled)  # weights_only=True refuses arbitrary objects
    with pytest.raises(ValueError, match=r"pickled\.pth.*weights_only=True"):
        load_backbone("squeezenet1_1", weights_path=pickled)
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match=r"garbage\.pth"):
        load_backbone("squeezenet1_1", weights_path=garbage)


# resolution order -------------------------------------------------------------------------------------------------
def _place(path: Path, source: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def test_weights_path_file_and_folder(tmp_path, checkpoint, seed_maps):
    folder = tmp_path / "weights"
    _place(folder / TORCHVISION_FILES["squeezenet1_1"], checkpoint("squeezenet1_1", seed=1))
    torch.testing.assert_close(maps_with(folder), seed_maps[1], atol=0, rtol=0)
    torch.testing.assert_close(maps_with(str(folder)), seed_maps[1], atol=0, rtol=0)
    # a file is used as given, whatever its name, without a hash check
    torch.testing.assert_close(maps_with(checkpoint("squeezenet1_1", seed=0)), seed_maps[0], atol=0, rtol=0)
    # weights_path wins over every cache
    _place(hub.cache_dir("puzzlesim") / TORCHVISION_FILES["squeezenet1_1"], checkpoint("squeezenet1_1", seed=0))
    torch.testing.assert_close(maps_with(folder), seed_maps[1], atol=0, rtol=0)
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "empty"))):
        maps_with(_mkdir(tmp_path / "empty"))


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_scenemetrics_home_cache_then_torch_hub_cache(checkpoint, seed_maps, torchvision_cache, monkeypatch):
    home_file = hub.scenemetrics_home() / "puzzlesim" / TORCHVISION_FILES["squeezenet1_1"]
    assert Path(os.environ["SCENEMETRICS_HOME"]) == hub.scenemetrics_home()
    # torch's own checkpoint cache is used when $SCENEMETRICS_HOME has nothing (cached files are verified on every
    # load, so each phase publishes the hash of the random file it places)
    publish_hash(monkeypatch, "puzzlesim/squeezenet1_1", checkpoint("squeezenet1_1", seed=1))
    torchvision_cache("squeezenet1_1", checkpoint("squeezenet1_1", seed=1))
    torch.testing.assert_close(maps_with(), seed_maps[1], atol=0, rtol=0)
    # $SCENEMETRICS_HOME/puzzlesim/ comes first
    publish_hash(monkeypatch, "puzzlesim/squeezenet1_1", checkpoint("squeezenet1_1", seed=0))
    _place(home_file, checkpoint("squeezenet1_1", seed=0))
    torch.testing.assert_close(maps_with(), seed_maps[0], atol=0, rtol=0)
    metric = PuzzleSim(REFS)
    metric.update(IMAGE)
    torch.testing.assert_close(metric.last_maps, seed_maps[0], atol=0, rtol=0)


def test_offline_with_nothing_cached(monkeypatch):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    calls = []
    monkeypatch.setattr(hub.fetch, "_download", lambda *a, **k: calls.append(a))
    for name in ("squeezenet1_1", "alexnet", "vgg16"):
        with pytest.raises(hub.WeightsNotFoundError) as info:
            load_backbone(name)
        err = info.value
        assert isinstance(err, FileNotFoundError)
        message = str(err)
        home = hub.scenemetrics_home() / "puzzlesim" / TORCHVISION_FILES[name]
        torch_cache = Path(torch.hub.get_dir()) / "checkpoints" / TORCHVISION_FILES[name]
        for needle in (TORCHVISION_FILES[name], str(home), str(torch_cache), URLS[name], "SCENEMETRICS_OFFLINE"):
            assert needle in message
        assert err.filename == TORCHVISION_FILES[name] and err.url == URLS[name]
        assert err.searched == [str(home), str(torch_cache)]
    with pytest.raises(FileNotFoundError, match=r"squeezenet1_1-b8a52dc0\.pth"):
        puzzle_similarity_map(IMAGE, REFS)
    with pytest.raises(FileNotFoundError, match=r"squeezenet1_1-b8a52dc0\.pth"):
        PuzzleSim(REFS)
    assert calls == []  # nothing was downloaded


def test_download_with_a_wrong_file_is_rejected(monkeypatch, squeeze_ckpt):
    """The real entry: the downloaded file's sha256 does not start with b8a52dc0, so it is not cached."""
    urls = []

    def fake_download(url, dst, progress=True):
        urls.append(url)
        shutil.copyfile(squeeze_ckpt, dst)

    monkeypatch.setattr(hub.fetch, "_download", fake_download)
    with pytest.raises(hub.WeightsNotFoundError, match=r"download failed.*sha256.*b8a52dc0") as info:
        load_backbone("squeezenet1_1")
    assert urls == [URLS["squeezenet1_1"]]
    assert URLS["squeezenet1_1"] in str(info.value)
    cache = hub.scenemetrics_home() / "puzzlesim"
    assert not (cache / TORCHVISION_FILES["squeezenet1_1"]).exists()
    assert list(cache.iterdir()) == []  # no partial download left behind


def test_verified_download_is_moved_into_the_cache(monkeypatch, squeeze_ckpt, seed_maps):
    """A registry entry whose sha256 prefix matches the (fake) download: fetched once, verified, cached, loaded."""
    prefix = hashlib.sha256(squeeze_ckpt.read_bytes()).hexdigest()[:8]
    real = hub.CHECKPOINTS["puzzlesim/squeezenet1_1"]
    entry = hub.Checkpoint(
        room="puzzlesim",
        filename=real.filename,
        urls=real.urls,
        description=real.description,
        sha256_prefix=prefix,
        extra_dirs=real.extra_dirs,
    )
    monkeypatch.setitem(hub.catalogue._REGISTRY, "puzzlesim/squeezenet1_1", entry)
    downloads = []

    def fake_download(url, dst, progress=True):
        downloads.append((url, Path(dst).parent))
        shutil.copyfile(squeeze_ckpt, dst)

    monkeypatch.setattr(hub.fetch, "_download", fake_download)
    torch.testing.assert_close(maps_with(), seed_maps[0], atol=0, rtol=0)
    cached = hub.scenemetrics_home() / "puzzlesim" / real.filename
    assert cached.is_file() and cached.read_bytes() == squeeze_ckpt.read_bytes()
    assert downloads == [(real.url, cached.parent)]
    assert sorted(p.name for p in cached.parent.iterdir()) == [real.filename, real.filename + ".verified"]
    maps_with()
    assert len(downloads) == 1  # the second call finds the cache
