"""A checkpoint whose pickle runs code never runs it, whichever way it reaches a loader; cache tampering is caught.

The payload is a pickled object whose ``__reduce__`` creates a marker file when unpickled. A control load with the
full unpickler proves the payload is live; every public weight path must then refuse the file without the marker
appearing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from scenemetrics import hub
from scenemetrics.osim.random import random_checkpoint
from scenemetrics.osim.yolox import YOLOX


class Payload:
    """Unpickling this calls ``open(marker, "w")``: a stand-in for ``os.system`` that leaves evidence."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def trojan(path: Path, state: dict, marker: Path, *, wrap: bool = True) -> Path:
    """Valid weights in the official layout plus the payload (as old training checkpoints carry ``args``)."""
    content = {"model": state, "start_epoch": 1, "args": Payload(marker)} if wrap else {**state, "x": Payload(marker)}
    torch.save(content, path)
    return path


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "PWNED"


@pytest.fixture
def nano_trojan(tmp_path, marker) -> Path:
    (tmp_path / "src").mkdir()
    path = trojan(tmp_path / "src" / "yolox_nano.pth", YOLOX("yolox_nano").state_dict(), marker)
    # control: the full unpickler does run the payload, so the assertions below can fail
    control = tmp_path / "control"
    control.mkdir()
    probe = trojan(control / "probe.pth", {"w": torch.zeros(1)}, control / "ran")
    torch.load(probe, weights_only=False)
    assert (control / "ran").exists()
    assert not marker.exists()
    return path


def assert_refused(err: BaseException, path: Path) -> None:
    message = str(err)
    assert str(path) in message
    assert "scenemetrics weights convert" in message and "--i-trust-this-file" in message


def test_yolox_weights_path_refuses_the_payload(nano_trojan, marker):
    with pytest.raises(ValueError) as info:
        YOLOX.from_official("yolox_nano", weights_path=nano_trojan)
    assert_refused(info.value, nano_trojan)
    with pytest.raises(ValueError):  # a folder holding <variant>.pth
        YOLOX.from_official("yolox_nano", weights_path=nano_trojan.parent)
    assert not marker.exists()


def test_osim_metric_loss_and_functional_refuse_the_payload(nano_trojan, marker):
    import scenemetrics as sm
    from scenemetrics.osim import osim
    from scenemetrics.osim.detector import clear_detector_cache

    clear_detector_cache()
    x = torch.rand(1, 3, 32, 32)
    for build in (
        lambda: sm.OSIM(detector="yolox_nano", weights_path=nano_trojan),
        lambda: sm.losses.OSIMLoss(detector="yolox_nano", weights_path=nano_trojan),
        lambda: osim(x, x, detector="yolox_nano", weights_path=nano_trojan),
    ):
        with pytest.raises(ValueError, match="weights convert"):
            build()
    assert not marker.exists()


def test_cached_file_refuses_the_payload_on_every_load(nano_trojan, marker, monkeypatch, caplog):
    cached = hub.cache_dir("osim") / "yolox_nano.pth"
    cached.parent.mkdir(parents=True)
    shutil.copyfile(nano_trojan, cached)
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    for _ in range(2):  # the bad file stays in the cache and is refused again, offline too
        with pytest.raises(ValueError) as info:
            YOLOX.from_official("yolox_nano")
        assert_refused(info.value, cached)
    assert not marker.exists()


def test_simulated_download_refuses_the_payload(nano_trojan, marker, monkeypatch):
    calls = []

    def fake_download(url, dst, progress=True):
        calls.append(url)
        shutil.copyfile(nano_trojan, dst)

    monkeypatch.setattr(hub.fetch, "_download", fake_download)
    with pytest.raises(ValueError) as info:
        YOLOX.from_official("yolox_nano")
    cached = hub.cache_dir("osim") / "yolox_nano.pth"
    assert_refused(info.value, cached)
    assert calls == [hub.CHECKPOINTS["osim/yolox_nano"].url]
    # no published hash: the download's sha256 was recorded, so a later swap of the file would be caught
    assert hub.read_sidecar(cached) == hub.file_hash(nano_trojan)
    assert not marker.exists()


def test_puzzlesim_paths_refuse_the_payload(tmp_path, marker, monkeypatch):
    from scenemetrics.puzzlesim import load_backbone
    from scenemetrics.puzzlesim import random_checkpoint as tv_random

    good = torch.load(tv_random("squeezenet1_1", tmp_path / "sq.pth", include_classifier=False), weights_only=True)
    bad = trojan(tmp_path / "squeezenet1_1-b8a52dc0.pth", good, marker, wrap=False)
    with pytest.raises(ValueError) as info:
        load_backbone("squeezenet1_1", weights_path=bad)
    assert_refused(info.value, bad)
    # a download of it fails the published hash and is never loaded nor cached
    monkeypatch.setattr(hub.fetch, "_download", lambda url, dst, progress=True: shutil.copyfile(bad, dst))
    with pytest.raises(hub.WeightsNotFoundError, match="sha256"):
        load_backbone("squeezenet1_1")
    assert not (hub.cache_dir("puzzlesim") / "squeezenet1_1-b8a52dc0.pth").exists()
    assert not marker.exists()


def test_other_loaders_refuse_the_payload(tmp_path, marker):
    """LPIPS backbones (evaluation), the PRISM pickled projection and the LaMa TorchScript path."""
    from scenemetrics.fullref import load_lpips
    from scenemetrics.inpainting.inpainters import LaMaInpainter

    bad = trojan(tmp_path / "alexnet.pth", {"features.0.weight": torch.zeros(1)}, marker, wrap=False)
    with pytest.raises(ValueError, match="alexnet"):
        load_lpips("alex", bad)
    lama = trojan(tmp_path / "big-lama.pt", {"w": torch.zeros(1)}, marker)
    with pytest.raises(ValueError, match="big-lama"):
        LaMaInpainter(weights_path=lama).load()
    try:
        from scenemetrics.prism.zero123 import load_projection
    except ImportError:  # pragma: no cover - the [prism] extra is part of the test install
        pytest.skip("prism extra missing")
    proj = tmp_path / "z123" / "cc_projection"
    proj.mkdir(parents=True)
    trojan(proj / "diffusion_pytorch_model.bin", {"projection.weight": torch.zeros(2, 2)}, marker, wrap=False)
    with pytest.raises(ValueError, match="weights convert"):
        load_projection(tmp_path / "z123", "cc_projection")
    assert not marker.exists()


def test_cache_tampering_is_detected(tmp_path, monkeypatch):
    """A download without published hash is recorded; replacing the cached file afterwards is an error."""
    src = random_checkpoint("yolox_nano", tmp_path / "yolox_nano.pth", calibrate=False)
    monkeypatch.setattr(hub.fetch, "_download", lambda url, dst, progress=True: shutil.copyfile(src, dst))
    YOLOX.from_official("yolox_nano")
    cached = hub.cache_dir("osim") / "yolox_nano.pth"
    recorded = hub.read_sidecar(cached)
    assert recorded == hub.file_hash(src)
    YOLOX.from_official("yolox_nano")  # unchanged: loads
    other = random_checkpoint("yolox_nano", tmp_path / "other.pth", seed=5, calibrate=False)
    shutil.copyfile(other, cached)  # a valid checkpoint, but not the one that was downloaded
    with pytest.raises(hub.ChecksumError) as info:
        YOLOX.from_official("yolox_nano")
    message = str(info.value)
    assert recorded in message and hub.file_hash(other) in message and str(cached) in message


# ---- TorchScript: code runs at load, so only the published file is loaded ------------------------------------------


class _TorchScriptPayload(torch.nn.Module):
    """A module whose ``__setstate__`` (run by ``torch.jit.load``, before any call) creates and writes a file."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker

    @torch.jit.export
    def __getstate__(self) -> tuple[str, bool]:
        return (self.marker, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[str, bool]) -> None:
        self.marker = state[0]
        written = torch.from_file(self.marker, True, 8, dtype=torch.uint8)  # maps (creates) the file ...
        written.fill_(88)  # ... and writes "XXXXXXXX" into it
        self.training = state[1] and int(written.sum()) > 0  # used, so TorchScript keeps the call

    def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return image


@pytest.fixture
def torchscript_payload(tmp_path, marker) -> Path:
    """``big-lama.pt``: a 2 kB TorchScript file that writes ``marker`` when loaded (checked by a control load)."""
    import warnings

    folder = tmp_path / "lama"
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.script / load are deprecated, still the format
        control = tmp_path / "control.pt"
        torch.jit.script(_TorchScriptPayload(str(tmp_path / "ran"))).save(str(control))
        assert not (tmp_path / "ran").exists()
        torch.jit.load(str(control))
        assert (tmp_path / "ran").read_bytes() == b"X" * 8  # the payload is live
        path = folder / "big-lama.pt"
        torch.jit.script(_TorchScriptPayload(str(marker))).save(str(path))
    assert path.stat().st_size < 4096 and not marker.exists()
    return path


def test_lama_refuses_torchscript_that_is_not_the_published_file(torchscript_payload, marker, tmp_path):
    from scenemetrics.inpainting.inpainters import LaMaInpainter

    digest = hub.file_hash(torchscript_payload)
    for weights_path in (torchscript_payload, torchscript_payload.parent):
        with pytest.raises(ValueError) as info:
            LaMaInpainter(weights_path=weights_path).load()
        message = str(info.value)
        assert "refusing to load" in message and str(torchscript_payload) in message
        assert digest in message and hub.CHECKPOINTS["inpainting/big-lama"].sha256 in message
        assert "trust_file=True" in message and "--i-trust-this-file" in message
        assert not marker.exists()


def test_inpaint_cli_refuses_the_torchscript_payload(torchscript_payload, marker, tmp_path, capsys):
    from scenemetrics import viz
    from scenemetrics.cli import main

    # large enough for the PuzzleSim backbone (17 px), so that the command reaches the LaMa file
    viz.save_png(torch.rand(3, 32, 32), tmp_path / "refs" / "a.png")
    viz.save_png(torch.rand(3, 32, 32), tmp_path / "render.png")
    from scenemetrics.puzzlesim import random_checkpoint as tv_random

    squeeze = tv_random("squeezenet1_1", tmp_path / "sq.pth", include_classifier=False)
    argv = ["inpaint", "--refs", str(tmp_path / "refs"), "--image", str(tmp_path / "render.png"), "--out",
            str(tmp_path / "out"), "--lama-weights", str(torchscript_payload), "--weights", str(squeeze),
            "--quiet"]  # fmt: skip
    assert main([*argv, "--inpainter", "lama"]) == 1
    err = capsys.readouterr().err
    assert "refusing to load" in err and "--i-trust-this-file" in err
    assert not marker.exists()


def test_the_published_lama_hash_is_the_one_checked(tmp_path, monkeypatch):
    """The check compares with the hub's published hashes: a file carrying them loads without the flag."""
    from scenemetrics.inpainting.inpainters import LaMaInpainter

    from .utils.weights import publish_hash

    class Grey(torch.nn.Module):
        def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return image * (1 - mask) + 0.5 * mask

    import warnings

    path = tmp_path / "big-lama.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.jit.script(Grey()).save(str(path))
    with pytest.raises(ValueError, match="refusing to load"):
        LaMaInpainter(weights_path=path).load()
    publish_hash(monkeypatch, "inpainting/big-lama", path)  # as if this were the published file
    assert isinstance(LaMaInpainter(weights_path=path).load(), torch.jit.ScriptModule)
    # the real entry pins both the md5 IOPaint publishes and the sha256 of that file
    monkeypatch.undo()
    entry = hub.CHECKPOINTS["inpainting/big-lama"]
    assert entry.md5 == "e3aa4aaa15225a33ec84f9f4bc47e500"
    assert entry.sha256 == "344c77bbcb158f17dd143070d1e789f38a66c04202311ae3a258ef66667a9ea9"


# ---- the libraries that read Hugging Face / OpenCLIP weights for scenemetrics --------------------------------------

# The first releases whose loaders pass weights_only=True to torch.load for pickled (.bin / .pt) weights; older ones
# call torch.load(path) and so run the full unpickler on torch < 2.6, which scenemetrics supports (torch >= 2.1).
# Read from each release's own loader (diffusers/models/model_loading_utils.py, transformers/modeling_utils.py,
# open_clip/factory.py): 0.27.0, 4.36.0 and 2.26.1 still call torch.load without it. Lightning 2.6 is the first whose
# Trainer.fit takes weights_only (the PRISM head trainer passes weights_only=True; 2.5.1's fit has no such argument).
SAFE_LOADER_RELEASES = {"diffusers": (0, 28), "transformers": (4, 37), "open_clip_torch": (2, 27), "lightning": (2, 6)}


def test_extras_require_libraries_that_never_unpickle_weights():
    import re

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    for package, safe in SAFE_LOADER_RELEASES.items():
        floors = re.findall(rf'"{package}>=(\d+)\.(\d+)', text)
        assert floors, f"pyproject.toml requires no minimum {package}"
        for floor in floors:
            assert tuple(map(int, floor)) >= safe, f"{package}>={'.'.join(floor)} allows a release that unpickles"
