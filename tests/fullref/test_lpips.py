"""LPIPS maps and scores against the ``lpips`` package (Zhang et al.'s code) and torchmetrics, with identical weights.

The backbones are random checkpoints in torchvision's layout (no download); the linear layers are the published v0.1
files: the ``lpips`` package loads its own copy, scenemetrics finds torchmetrics' (verified by its sha256).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import pytest
import torch

import scenemetrics as sm
from scenemetrics import hub
from scenemetrics.fullref import NETS, load_lpips, lpips, lpips_3dgs, lpips_map

lpips_package = pytest.importorskip("lpips", reason="needs the `lpips` package (the [dev] extra)")

ARCH = {"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"}


def images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 257, (n, 3, h, w), generator=g).float() / 256


def pair(n: int, h: int, w: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    target = images(n, h, w, seed)
    return ((0.7 * target + 0.3 * images(n, h, w, seed + 1)) * 256).round() / 256, target


@pytest.fixture(scope="module")
def backbones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Random torchvision ``features`` checkpoints (``features.*`` keys), one per LPIPS network."""
    root = tmp_path_factory.mktemp("lpips_backbones")
    return {
        net: sm.puzzlesim.random_checkpoint(arch, root / f"{arch}.pth", seed=1, include_classifier=False)
        for net, arch in ARCH.items()
    }


def package_model(net: str, checkpoint: Path, *, spatial: bool):
    """The ``lpips`` package's model with the backbone weights of ``checkpoint`` and its own v0.1 linear layers.

    Each of the package's keys ``net.slice<s>.<i>.<param>`` takes torchvision's ``features.<i>.<param>``: the mapping
    comes from the package's own module names, not from scenemetrics' slice table.
    """
    model = _package_model(net, str(checkpoint))
    model.spatial = spatial  # read by the package's forward
    return model


@functools.cache
def _package_model(net: str, checkpoint: str):
    # building the package's VGG initialises a whole random VGG16 (seconds): once per network
    model = lpips_package.LPIPS(net=net, pnet_rand=True, verbose=False)
    tv = torch.load(checkpoint, weights_only=True)
    new = {}
    for key in model.state_dict():
        if key.startswith("net."):
            _, _, index, param = key.split(".", 3)
            new[key] = tv[f"features.{index}.{param}"]
    missing, unexpected = model.load_state_dict(new, strict=False)
    assert not unexpected and not [k for k in missing if k.startswith("net.")]
    return model.eval()


@pytest.mark.parametrize("net", ["alex", "vgg", "squeeze"])
def test_lpips_map_equals_the_lpips_package_spatial_output(net, backbones):
    preds, target = pair(2, 67, 83, seed=1)
    got = lpips_map(preds, target, net=net, weights_path=backbones[net])
    with torch.no_grad():
        expected = package_model(net, backbones[net], spatial=True)(preds, target, normalize=True)
    assert expected.shape == (2, 1, 67, 83) and got.shape == (2, 67, 83)
    assert float(expected.abs().max()) > 1e-3  # a real difference is measured
    torch.testing.assert_close(got, expected[:, 0], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("net", ["alex", "vgg", "squeeze"])
def test_lpips_equals_the_lpips_package(net, backbones):
    preds, target = pair(3, 64, 72, seed=2)
    got = lpips(preds, target, net=net, weights_path=backbones[net])
    with torch.no_grad():
        expected = package_model(net, backbones[net], spatial=False)(preds, target, normalize=True)
    torch.testing.assert_close(got, expected.flatten(), atol=1e-7, rtol=1e-5)


def test_lpips_3dgs_feeds_the_01_images_unscaled(backbones):
    # 3DGS's lpipsPyTorch applies the scaling layer to its [0, 1] input: the lpips package with normalize=False on
    # [0, 1] images computes exactly that
    preds, target = pair(2, 48, 40, seed=3)
    got = lpips_3dgs(preds, target, weights_path=backbones["vgg"])
    with torch.no_grad():
        expected = package_model("vgg", backbones["vgg"], spatial=False)(preds, target, normalize=False)
    torch.testing.assert_close(got, expected.flatten(), atol=1e-7, rtol=1e-5)
    standard = lpips(preds, target, net="vgg", weights_path=backbones["vgg"])
    assert float((got - standard).abs().min()) > 1e-4  # a different protocol, a different number


def _torchmetrics_lpips(net: str, checkpoint: Path, tmp_path: Path):
    """torchmetrics' LPIPS class on ``checkpoint``: torchvision reads its pretrained file from torch's hub cache."""
    import torchvision
    from torchmetrics.image import LearnedPerceptualImagePatchSimilarity

    with torch.device("meta"):
        reference = getattr(torchvision.models, ARCH[net])(weights=None).state_dict()
    state = dict(torch.load(checkpoint, weights_only=True))
    # torchvision loads the whole classifier strictly: zeros stored as broadcast views (a few bytes)
    state.update({k: torch.zeros(()).expand(v.shape) for k, v in reference.items() if k.startswith("classifier.")})
    folder = Path(torch.hub.get_dir()) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(state, folder / hub.CHECKPOINTS[NETS[net].backbone_key].filename)
    return LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True)


@pytest.mark.parametrize("net", [pytest.param("alex", marks=pytest.mark.slow), "vgg"])
def test_lpips_equals_torchmetrics_and_the_map_mean_where_layers_divide_the_image(net, backbones, tmp_path):
    metric = _torchmetrics_lpips(net, backbones[net], tmp_path)
    batches = [pair(2, 64, 64, seed=10), pair(1, 64, 64, seed=11)]
    scores, means = [], []
    for preds, target in batches:
        metric.update(preds, target)
        scores.append(lpips(preds, target, net=net, weights_path=backbones[net]))
        means.append(lpips_map(preds, target, net=net, weights_path=backbones[net]).mean(dim=(1, 2)))
    expected = metric.compute()
    assert float(expected) > 1e-3
    torch.testing.assert_close(torch.cat(scores).mean(), expected, atol=1e-7, rtol=1e-5)
    if net == "vgg":
        # VGG's layers at 64 x 64 are 64, 32, 16, 8 and 4 pixels: integer upsampling keeps each layer's mean
        torch.testing.assert_close(torch.cat(means).mean(), expected, atol=1e-7, rtol=1e-5)


def test_map_mean_differs_from_lpips_only_slightly_for_non_integer_ratios(backbones):
    # AlexNet at 64 x 64 has layers of 15, 7 and 3 pixels: bilinear upsampling by 64/15 weighs the border rows of the
    # layer a little differently than the interior, so the map mean is close to LPIPS but not equal
    preds, target = pair(2, 64, 64, seed=12)
    score = lpips(preds, target, weights_path=backbones["alex"])
    mean = lpips_map(preds, target, weights_path=backbones["alex"]).mean(dim=(1, 2))
    rel = ((mean - score).abs() / score).max()
    assert 0 < float(rel) < 1e-3


@pytest.mark.parametrize("net", ["alex", "vgg", "squeeze"])
def test_min_side_is_the_networks_true_minimum(net, backbones):
    side = NETS[net].min_side
    preds, target = pair(1, side, side + 3, seed=13)
    got = lpips_map(preds, target, net=net, weights_path=backbones[net])
    with torch.no_grad():
        expected = package_model(net, backbones[net], spatial=True)(preds, target, normalize=True)
    torch.testing.assert_close(got, expected[:, 0], atol=1e-6, rtol=1e-5)
    small = pair(1, side - 1, side + 3, seed=14)
    with pytest.raises(ValueError, match=rf"`preds` must be at least {side}x{side}.*LPIPS-{net}"):
        lpips(*small, net=net, weights_path=backbones[net])
    with pytest.raises(RuntimeError), torch.no_grad():  # the package itself cannot run one pixel smaller
        package_model(net, backbones[net], spatial=False)(*small, normalize=True)


def test_identical_images_uint8_unbatched_and_empty(backbones):
    w = backbones["alex"]
    preds, target = pair(2, 40, 48, seed=15)
    assert lpips(target, target, weights_path=w).tolist() == [0.0, 0.0]
    assert float(lpips_map(target, target, weights_path=w).abs().max()) == 0.0
    p8, t8 = (preds * 255).round().to(torch.uint8), (target * 255).round().to(torch.uint8)
    torch.testing.assert_close(lpips(p8, t8, weights_path=w), lpips(p8.float() / 255, t8.float() / 255, weights_path=w))
    torch.testing.assert_close(
        lpips_map(preds[0], target[0], weights_path=w), lpips_map(preds[:1], target[:1], weights_path=w)
    )
    e = torch.zeros(0, 3, 40, 48)
    assert lpips_map(e, e, weights_path=w).shape == (0, 40, 48) and lpips(e, e, weights_path=w).shape == (0,)


def test_lpips_map_is_differentiable(backbones):
    preds, target = pair(1, 40, 40, seed=16)
    x = preds.clone().requires_grad_(True)
    lpips_map(x, target, weights_path=backbones["alex"]).sum().backward()
    assert x.grad is not None and float(x.grad.abs().max()) > 0


# ------------------------------------------------------------------------------------------------ weights


def test_recorded_hashes_are_those_of_the_published_files():
    # the lpips wheel (Zhang et al.'s package) ships the same v0.1 files: its copies are an independent source
    folder = Path(lpips_package.__file__).parent / "weights" / "v0.1"
    for net in NETS:
        entry = hub.CHECKPOINTS[NETS[net].linear_key]
        assert entry.filename == f"{net}.pth" and entry.room == "fullref"
        assert hashlib.sha256((folder / entry.filename).read_bytes()).hexdigest() == entry.sha256
        assert "c33f89e9f46522a584cf41d8880eb0afa982708b" in entry.url and entry.url.endswith(f"/v0.1/{net}.pth")


def test_linear_layers_come_from_torchmetrics_bundled_copy_verified():
    import torchmetrics

    path = hub.resolve_weights("fullref/lpips_vgg")
    assert path.parent == Path(torchmetrics.__file__).parent / "functional" / "image" / "lpips_models"


def test_a_swapped_cached_linear_file_is_refused(backbones, tmp_path):
    cached = hub.cache_dir("fullref") / "alex.pth"
    cached.parent.mkdir(parents=True)
    torch.save({"lin0.model.1.weight": torch.ones(1, 64, 1, 1)}, cached)
    with pytest.raises(hub.ChecksumError, match=r"alex\.pth"):
        lpips(*pair(1, 40, 40, seed=17), weights_path=backbones["alex"])


def _scaled_linear(net: str, factor: float, path: Path) -> Path:
    state = torch.load(hub.resolve_weights(NETS[net].linear_key), map_location="cpu", weights_only=True)
    torch.save({k: v * factor for k, v in state.items()}, path)
    return path


def test_linear_layers_from_a_folder_or_a_file(backbones, tmp_path):
    # LPIPS is linear in the linear layers' weights: doubling them doubles every distance
    preds, target = pair(1, 40, 40, seed=18)
    base = lpips(preds, target, weights_path=backbones["alex"])
    folder = tmp_path / "weights"
    folder.mkdir()
    os.symlink(backbones["alex"], folder / hub.CHECKPOINTS["puzzlesim/alexnet"].filename)
    _scaled_linear("alex", 2.0, folder / "alex.pth")
    torch.testing.assert_close(lpips(preds, target, weights_path=folder), 2 * base)
    single = _scaled_linear("alex", 3.0, tmp_path / "mine.pth")
    torch.testing.assert_close(
        lpips(preds, target, weights_path=backbones["alex"], linear_weights_path=single), 3 * base
    )
    torch.testing.assert_close(
        lpips_map(preds, target, weights_path=folder, linear_weights_path=single),
        3 * lpips_map(preds, target, weights_path=backbones["alex"]),
    )


def test_whole_torchvision_checkpoint_is_accepted(backbones, tmp_path):
    import torchvision

    with torch.device("meta"):
        reference = torchvision.models.alexnet(weights=None).state_dict()
    state = dict(torch.load(backbones["alex"], weights_only=True))
    state.update({k: torch.zeros(()).expand(v.shape) for k, v in reference.items() if k.startswith("classifier.")})
    whole = tmp_path / "alexnet-owt-7be5be79.pth"
    torch.save(state, whole)
    preds, target = pair(1, 40, 40, seed=19)
    torch.testing.assert_close(
        lpips(preds, target, weights_path=whole), lpips(preds, target, weights_path=backbones["alex"])
    )


def test_the_network_owns_its_weights_after_a_mapped_read(tmp_path):
    """The backbone file is mapped, not read (only the features are touched): the network copies them out, so a file
    rewritten in place afterwards (same size, other values) leaves the loaded network as it was."""
    path = sm.puzzlesim.random_checkpoint("alexnet", tmp_path / "a.pth", seed=21, include_classifier=False)
    other = sm.puzzlesim.random_checkpoint("alexnet", tmp_path / "b.pth", seed=22, include_classifier=False)
    network = load_lpips("alex", weights_path=path)
    before = [p.clone() for p in network.parameters()]
    data = other.read_bytes()
    assert len(data) == path.stat().st_size  # same tensors, same layout: only the values differ
    with open(path, "r+b") as f:  # in place: the same inode and pages
        f.write(data)
    assert all(torch.equal(a, b) for a, b in zip(before, network.parameters(), strict=True))
    assert not torch.equal(torch.load(path, weights_only=True)["features.0.weight"], before[0])  # the file did change


def test_mismatched_checkpoints_are_refused(backbones, tmp_path):
    with pytest.raises(ValueError, match="does not match torchvision alexnet"):
        load_lpips("alex", weights_path=backbones["squeeze"])
    with pytest.raises(ValueError, match=r"LPIPS v0.1 linear layers of 'alex'"):
        load_lpips("alex", weights_path=backbones["alex"], linear_weights_path=hub.resolve_weights("fullref/lpips_vgg"))
    with pytest.raises(ValueError, match="`net` must be one of 'alex', 'vgg', 'squeeze'"):
        load_lpips("resnet", weights_path=backbones["alex"])
    with pytest.raises(ValueError, match="`net`"):
        lpips_map(*pair(1, 40, 40, seed=20), net="squeezenet1_1", weights_path=backbones["squeeze"])


def test_offline_without_a_backbone_names_the_file_and_url(monkeypatch):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError) as info:
        lpips_map(*pair(1, 40, 40, seed=21))
    assert info.value.filename == "alexnet-owt-7be5be79.pth"
    assert info.value.url == "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"


def test_one_network_per_files_and_device(backbones):
    a = load_lpips("alex", weights_path=backbones["alex"])
    assert load_lpips("alex", weights_path=backbones["alex"]) is a
    assert not a.training and not any(p.requires_grad for p in a.parameters())
    a.train()
    assert not a.training  # frozen in eval mode


@pytest.mark.gpu
def test_cpu_and_cuda_agree(backbones):
    preds, target = pair(2, 45, 61, seed=22)
    for net in NETS:
        cpu = lpips_map(preds, target, net=net, weights_path=backbones[net])
        gpu = lpips_map(preds.cuda(), target.cuda(), net=net, weights_path=backbones[net])
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=1e-4)
