"""``scenemetrics.hub``: resolution order, offline errors, verified downloads (fake downloader), checkpoint loading."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import pytest
import torch

from scenemetrics import hub

SQUEEZE = "puzzlesim/squeezenet1_1"
SQUEEZE_FILE = "squeezenet1_1-b8a52dc0.pth"
SQUEEZE_URL = "https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth"
CONTENT = b"fake checkpoint bytes\n"


def entry(**kwargs) -> hub.Checkpoint:
    base = {
        "room": "testroom",
        "filename": "model.bin",
        "urls": ("https://example.invalid/a/model.bin", "https://example.invalid/b/model.bin"),
        "description": "a test checkpoint",
    }
    return hub.Checkpoint(**{**base, **kwargs})


class FakeDownloader:
    """Writes ``content`` (or raises ``error``) for every URL, and records the calls."""

    def __init__(self, content: bytes = CONTENT, fail: tuple[str, ...] = ()) -> None:
        self.content = content
        self.fail = fail
        self.calls: list[tuple[str, Path]] = []

    def __call__(self, url: str, dst: Path, progress: bool = True) -> None:
        self.calls.append((url, Path(dst)))
        if any(url.startswith(f) for f in self.fail):
            Path(dst).write_bytes(b"partial")
            raise OSError(f"connection refused for {url}")
        Path(dst).write_bytes(self.content)


@pytest.fixture
def downloader(monkeypatch) -> FakeDownloader:
    fake = FakeDownloader()
    monkeypatch.setattr(hub, "_download", fake)
    return fake


# paths and flags ---------------------------------------------------------------------------------------------------
def test_home_and_cache_dirs(monkeypatch, tmp_path):
    assert hub.scenemetrics_home() == Path(os.environ["SCENEMETRICS_HOME"])
    assert hub.cache_dir("puzzlesim") == hub.scenemetrics_home() / "puzzlesim"
    monkeypatch.delenv("SCENEMETRICS_HOME")
    assert hub.scenemetrics_home() == Path(torch.hub.get_dir()) / "scenemetrics"
    monkeypatch.setenv("SCENEMETRICS_HOME", "~/sm-cache")
    assert hub.scenemetrics_home() == Path("~/sm-cache").expanduser()


@pytest.mark.parametrize(
    ("value", "offline"),
    [("1", True), ("true", True), ("YES", True), (" on ", True), ("0", False), ("", False), ("no", False)],
)
def test_is_offline(monkeypatch, value, offline):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", value)
    assert hub.is_offline() is offline


def test_file_hash(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(CONTENT * 100_000)  # several read blocks
    assert hub.file_hash(path) == hashlib.sha256(CONTENT * 100_000).hexdigest()
    assert hub.file_hash(path, "md5") == hashlib.md5(CONTENT * 100_000).hexdigest()


def test_registry():
    ck = hub.CHECKPOINTS[SQUEEZE]
    assert ck.filename == SQUEEZE_FILE and ck.url == SQUEEZE_URL and ck.sha256_prefix == "b8a52dc0"
    assert ck.room == "puzzlesim"
    assert hub.CHECKPOINTS["puzzlesim/alexnet"].sha256_prefix == "7be5be79"
    assert hub.CHECKPOINTS["puzzlesim/vgg16"].sha256_prefix == "397923af"
    with pytest.raises(TypeError):
        hub.CHECKPOINTS["x"] = ck  # read-only
    with pytest.raises(KeyError, match=r"unknown checkpoint 'nope/nothing'.*puzzlesim/squeezenet1_1"):
        hub.resolve_weights("nope/nothing")


def test_register(monkeypatch):
    monkeypatch.setattr(hub, "_REGISTRY", dict(hub._REGISTRY))
    new = entry()
    hub.register("testroom/model", new)
    assert hub._REGISTRY["testroom/model"] is new
    hub.register("testroom/model", entry())  # an equal entry again is fine
    with pytest.raises(ValueError, match=r"testroom/model.*already registered"):
        hub.register("testroom/model", entry(filename="other.bin"))


# weights_path ------------------------------------------------------------------------------------------------------
def test_weights_path_file_folder_missing(tmp_path, downloader):
    any_file = tmp_path / "my-weights.pt"
    any_file.write_bytes(b"whatever")
    assert hub.resolve_weights(SQUEEZE, any_file) == any_file  # used as given, no hash check
    assert hub.resolve_weights(SQUEEZE, str(any_file)) == any_file
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / SQUEEZE_FILE).write_bytes(b"x")
    assert hub.resolve_weights(SQUEEZE, folder) == folder / SQUEEZE_FILE
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(hub.WeightsNotFoundError) as info:
        hub.resolve_weights(SQUEEZE, empty)
    assert info.value.searched == [str(empty / SQUEEZE_FILE)] and "not in the folder" in str(info.value)
    with pytest.raises(hub.WeightsNotFoundError) as info:
        hub.resolve_weights(SQUEEZE, tmp_path / "missing.pth")
    assert str(tmp_path / "missing.pth") in str(info.value) and "does not exist" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert downloader.calls == []  # an explicit weights_path never downloads


# caches ------------------------------------------------------------------------------------------------------------
def test_cache_hit(downloader):
    target = hub.cache_dir("puzzlesim") / SQUEEZE_FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(b"cached")  # the cache is trusted as is
    assert hub.resolve_weights(SQUEEZE) == target
    assert downloader.calls == []


def test_torch_hub_cache_hit_and_precedence(downloader, monkeypatch):
    torch_file = Path(torch.hub.get_dir()) / "checkpoints" / SQUEEZE_FILE
    torch_file.parent.mkdir(parents=True)
    torch_file.write_bytes(b"torchvision's download")
    assert hub.resolve_weights(SQUEEZE) == torch_file
    ours = hub.cache_dir("puzzlesim") / SQUEEZE_FILE
    ours.parent.mkdir(parents=True)
    ours.write_bytes(b"ours")
    assert hub.resolve_weights(SQUEEZE) == ours  # $SCENEMETRICS_HOME comes first
    assert downloader.calls == []
    # the YOLOX entries have no extra folder: torch's cache is not searched for them
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    (Path(torch.hub.get_dir()) / "checkpoints" / "yolox_s.pth").write_bytes(b"x")
    with pytest.raises(hub.WeightsNotFoundError):
        hub.resolve_weights("osim/yolox_s")


# offline -----------------------------------------------------------------------------------------------------------
def test_offline_error_names_file_searched_paths_and_url(monkeypatch, downloader):
    monkeypatch.setenv("SCENEMETRICS_OFFLINE", "1")
    with pytest.raises(hub.WeightsNotFoundError) as info:
        hub.resolve_weights(SQUEEZE)
    err = info.value
    home = hub.cache_dir("puzzlesim") / SQUEEZE_FILE
    torch_file = Path(torch.hub.get_dir()) / "checkpoints" / SQUEEZE_FILE
    assert isinstance(err, FileNotFoundError)
    assert err.filename == SQUEEZE_FILE and err.url == SQUEEZE_URL
    assert err.searched == [str(home), str(torch_file)]
    message = str(err)
    for needle in (SQUEEZE_FILE, str(home), str(torch_file), SQUEEZE_URL, "SCENEMETRICS_OFFLINE=1", "weights_path"):
        assert needle in message
    assert downloader.calls == []
    assert not home.parent.exists() or list(home.parent.iterdir()) == []


# downloads -----------------------------------------------------------------------------------------------------------
def test_sha256_prefix_rejects_a_wrong_file(downloader):
    """The real torchvision entry: the fake file's sha256 does not start with b8a52dc0."""
    with pytest.raises(hub.WeightsNotFoundError, match=r"download failed.*sha256.*expected a prefix b8a52dc0") as info:
        hub.resolve_weights(SQUEEZE)
    assert [url for url, _ in downloader.calls] == [SQUEEZE_URL]
    assert SQUEEZE_URL in str(info.value)
    cache = hub.cache_dir("puzzlesim")
    assert list(cache.iterdir()) == []  # neither the file nor a partial download stays


def test_sha256_prefix_accepts_the_right_file(downloader):
    prefix = hashlib.sha256(CONTENT).hexdigest()[:8]
    ck = entry(filename=f"model-{prefix}.bin", sha256_prefix=prefix)
    path = hub.resolve_weights(ck, progress=False)
    assert path == hub.cache_dir("testroom") / f"model-{prefix}.bin"
    assert path.read_bytes() == CONTENT
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # moved, no temporary left
    assert len(downloader.calls) == 1 and downloader.calls[0][1].parent == path.parent
    assert hub.resolve_weights(ck) == path and len(downloader.calls) == 1  # then a cache hit


def test_full_sha256(downloader):
    good = entry(sha256=hashlib.sha256(CONTENT).hexdigest())
    assert hub.resolve_weights(good).read_bytes() == CONTENT
    bad = entry(room="otherroom", sha256="0" * 64)
    with pytest.raises(hub.WeightsNotFoundError, match=r"sha256.*expected 0{64}"):
        hub.resolve_weights(bad)


def test_md5_entry_verification(downloader):
    bad = hub.CHECKPOINTS["inpainting/big-lama"]
    with pytest.raises(hub.WeightsNotFoundError) as info:
        hub.resolve_weights("inpainting/big-lama")
    message = str(info.value)
    assert message.count(f"expected {bad.md5}") == 2  # both URLs tried, both rejected
    assert [url for url, _ in downloader.calls] == list(bad.urls)
    assert list(hub.cache_dir("inpainting").iterdir()) == []
    good = entry(md5=hashlib.md5(CONTENT).hexdigest())
    assert hub.resolve_weights(good).read_bytes() == CONTENT


def test_first_url_fails_second_succeeds(monkeypatch):
    fake = FakeDownloader(fail=("https://example.invalid/a/",))
    monkeypatch.setattr(hub, "_download", fake)
    path = hub.resolve_weights(entry(md5=hashlib.md5(CONTENT).hexdigest()))
    assert path.read_bytes() == CONTENT
    assert [url for url, _ in fake.calls] == list(entry().urls)
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.bin"]


def test_all_downloads_fail(monkeypatch):
    fake = FakeDownloader(fail=("https://",))
    monkeypatch.setattr(hub, "_download", fake)
    with pytest.raises(hub.WeightsNotFoundError, match=r"download failed.*connection refused.*connection refused"):
        hub.resolve_weights(entry())
    assert list(hub.cache_dir("testroom").iterdir()) == []


def test_no_published_hash_logs_the_sha256(downloader, caplog):
    with caplog.at_level(logging.WARNING, logger="scenemetrics.hub"):
        path = hub.resolve_weights(entry())
    assert path.read_bytes() == CONTENT
    assert hashlib.sha256(CONTENT).hexdigest() in caplog.text


# loading -----------------------------------------------------------------------------------------------------------
class _Custom:
    """A pickled Python object that ``weights_only=True`` refuses."""

    def __init__(self) -> None:
        self.value = 3


def test_load_torch_checkpoint(tmp_path):
    state = {"a": torch.arange(3.0), "b": {"c": torch.ones(2)}}
    torch.save(state, tmp_path / "ok.pth")
    loaded = hub.load_torch_checkpoint(tmp_path / "ok.pth")
    assert torch.equal(loaded["a"], state["a"]) and loaded["a"].device.type == "cpu"
    (tmp_path / "garbage.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"could not read checkpoint .*garbage\.pth"):
        hub.load_torch_checkpoint(tmp_path / "garbage.pth")
    with pytest.raises(ValueError, match=r"missing\.pth"):
        hub.load_torch_checkpoint(tmp_path / "missing.pth")
    torch.save({"obj": _Custom()}, tmp_path / "pickled.pth")
    with pytest.raises(ValueError, match=r"pickled\.pth.*weights_only=True"):
        hub.load_torch_checkpoint(tmp_path / "pickled.pth")
    with pytest.warns(UserWarning, match=r"weights_only=False"):
        unsafe = hub.load_torch_checkpoint(tmp_path / "pickled.pth", unsafe_fallback=True)
    assert unsafe["obj"].value == 3


def test_weights_not_found_error_attributes():
    err = hub.WeightsNotFoundError("msg", filename="f.pth", searched=[Path("/a"), "/b"], url="https://x")
    assert isinstance(err, FileNotFoundError) and str(err) == "msg"
    assert err.filename == "f.pth" and err.searched == ["/a", "/b"] and err.url == "https://x"
