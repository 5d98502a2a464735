"""The FID Inception through the scenemetrics hub: torch-fidelity's key layout, the published file name's sha256
prefix, offline errors, safe loading; and FID equal to torchmetrics' FID with the same weights on the same images."""

from __future__ import annotations

import pickle

import pytest
import torch

from scenemetrics import hub
from scenemetrics.baselines import FrechetDistance, inception_layout, load_inception, resolve_inception
from scenemetrics.baselines.inception import INCEPTION_KEY

FILE = "weights-inception-2015-12-05-6726825d.pth"


def test_the_catalogue_entry_is_torch_fidelitys_release_checked_by_its_sha256_prefix():
    entry = hub.CHECKPOINTS[INCEPTION_KEY]
    assert entry.filename == FILE and entry.sha256_prefix == "6726825d"
    assert entry.url == f"https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/{FILE}"


def test_offline_without_the_file_names_it_the_paths_searched_and_the_url(monkeypatch):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError) as err:
        resolve_inception()
    assert err.value.filename == FILE and err.value.url.endswith(FILE)
    assert any(p.endswith(f"baselines/{FILE}") for p in err.value.searched)  # the scenemetrics cache
    assert any(p.endswith(f"checkpoints/{FILE}") for p in err.value.searched)  # torch's, where torchmetrics leaves it
    with pytest.raises(hub.WeightsNotFoundError, match=FILE):
        FrechetDistance("inception")  # resolved when the metric is built


def test_a_copy_in_torchs_checkpoint_cache_is_verified_against_the_name(inception_path, tmp_path):
    import shutil
    from pathlib import Path

    folder = Path(torch.hub.get_dir()) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(inception_path, folder / FILE)
    # random weights cannot carry the published sha256 prefix: the cached copy is refused, naming both hashes
    with pytest.raises(hub.ChecksumError, match="a prefix 6726825d"):
        resolve_inception()
    # a file (or a folder holding the file name) passed explicitly is the user's to vouch for: used as given
    assert resolve_inception(inception_path) == inception_path
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copyfile(inception_path, mine / FILE)
    assert resolve_inception(mine) == mine / FILE


def test_files_in_another_layout_or_needing_the_unpickler_are_refused(tmp_path, inception_path):
    state = torch.load(inception_path, weights_only=True)
    bad_shape = dict(state)
    bad_shape["fc.weight"] = torch.zeros(1000, 2048)  # torchvision's ImageNet classifier, not the FID graph's 1008
    torch.save(bad_shape, tmp_path / "torchvision.pth")
    with pytest.raises(ValueError, match=r"torchvision\.pth' is not torch-fidelity's InceptionV3 layout.*fc\.weight"):
        load_inception(tmp_path / "torchvision.pth")
    missing = {k: v for k, v in state.items() if not k.startswith("Mixed_7c")}
    torch.save(missing, tmp_path / "missing.pth")
    with pytest.raises(ValueError, match="missing keys"):
        load_inception(tmp_path / "missing.pth")
    with open(tmp_path / "evil.pth", "wb") as f:  # a pickle naming a global: the safe loader never runs it
        pickle.dump({"fc.weight": pickle.loads}, f, protocol=2)
    with pytest.raises(ValueError, match=r"refusing to load .*evil\.pth"):
        load_inception(tmp_path / "evil.pth")


def test_the_layout_is_torchvisions_inception3_with_the_fid_graphs_classifier():
    layout = inception_layout()
    assert len(layout) == 566 and "AuxLogits.fc.weight" not in layout
    assert tuple(layout["Conv2d_1a_3x3.conv.weight"]) == (32, 3, 3, 3)
    assert tuple(layout["Mixed_7c.branch_pool.conv.weight"]) == (192, 2048, 1, 1)
    assert tuple(layout["fc.bias"]) == (1008,)


@pytest.mark.slow
@pytest.mark.extra("baselines")
def test_fid_equals_torchmetrics_fid_with_the_same_weights_on_the_same_images(inception_path):
    from torchmetrics.image.fid import FrechetInceptionDistance, NoTrainInceptionV3

    g = torch.Generator().manual_seed(0)
    real = torch.randint(0, 256, (3, 3, 32, 40), generator=g, dtype=torch.uint8)
    fake = torch.randint(0, 256, (3, 3, 32, 40), generator=g, dtype=torch.uint8)
    ours = FrechetDistance("inception", weights=inception_path)
    # float input k/255: the rounding quantisation gives back the uint8 image exactly
    ours.update(fake.float() / 255, real.float() / 255)
    # torchmetrics reads the weights file itself (torch-fidelity unpickles it with weights_only=False): acceptable
    # here only because the file is this test run's own; scenemetrics never lets it read a file
    theirs = FrechetInceptionDistance(feature=2048, feature_extractor_weights_path=str(inception_path))
    theirs.update(real, real=True)
    theirs.update(fake, real=False)
    assert float(ours.compute()) == pytest.approx(float(theirs.compute()), rel=1e-4)
    # the network is torch-fidelity's, holding exactly the file's tensors
    net = load_inception(inception_path).network
    file_state = torch.load(inception_path, weights_only=True)
    assert {k: tuple(v.shape) for k, v in net.state_dict().items()} == {
        k: tuple(v) for k, v in inception_layout().items()
    }
    key = "Mixed_6b.branch7x7_2.conv.weight"
    assert torch.equal(net.state_dict()[key], file_state[key])
    # torch-fidelity's own resize (the original FID's) with tf_resize / antialias=False
    tf = NoTrainInceptionV3("inception-v3-compat", ["2048"], str(inception_path), antialias=False)
    torch.testing.assert_close(load_inception(inception_path, antialias=False)(fake[:1].float() / 255), tf(fake[:1]))
