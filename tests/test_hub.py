"""``scenemetrics.hub``: resolution order, offline errors, verified downloads (fake downloader), checkpoint loading."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import urllib.error
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from scenemetrics import hub

REAL_DOWNLOAD = hub.fetch._download  # the root conftest replaces it with one that refuses to download

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
    monkeypatch.setattr(hub.fetch, "_download", fake)
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
    monkeypatch.setattr(hub.catalogue, "_REGISTRY", dict(hub.catalogue._REGISTRY))
    new = entry()
    hub.register("testroom/model", new)
    assert hub.catalogue._REGISTRY["testroom/model"] is new
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
def test_cache_hit_is_verified_on_every_load(downloader):
    good = entry(sha256=hashlib.sha256(CONTENT).hexdigest())
    target = hub.cache_dir("testroom") / "model.bin"
    target.parent.mkdir(parents=True)
    target.write_bytes(CONTENT)
    assert hub.resolve_weights(good) == target
    assert downloader.calls == []
    # a file with a published hash that does not carry it is refused, even though it is in the cache
    cached = hub.cache_dir("puzzlesim") / SQUEEZE_FILE
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"cached")
    with pytest.raises(hub.ChecksumError) as info:
        hub.resolve_weights(SQUEEZE)
    message = str(info.value)
    assert str(cached) in message and hashlib.sha256(b"cached").hexdigest() in message and "b8a52dc0" in message
    assert isinstance(info.value, ValueError) and downloader.calls == []


def test_torch_hub_cache_hit_precedence_and_verification(downloader, monkeypatch):
    theirs, ours_bytes = b"torchvision's download", b"ours"
    ck = entry(
        room="puzzlesim",
        filename="net-x.pth",
        sha256_prefix=hashlib.sha256(theirs).hexdigest()[:8],
        extra_dirs=(hub.catalogue._torch_hub_checkpoints,),
    )
    torch_file = Path(torch.hub.get_dir()) / "checkpoints" / "net-x.pth"
    torch_file.parent.mkdir(parents=True)
    torch_file.write_bytes(theirs)
    assert hub.resolve_weights(ck) == torch_file
    ours = hub.cache_dir("puzzlesim") / "net-x.pth"
    ours.parent.mkdir(parents=True)
    ours.write_bytes(theirs)
    assert hub.resolve_weights(ck) == ours  # $SCENEMETRICS_HOME comes first
    ours.unlink()
    torch_file.write_bytes(ours_bytes)  # torch's cache is verified too
    with pytest.raises(hub.ChecksumError, match="expected a prefix"):
        hub.resolve_weights(ck)
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
    # moved, no temporary left; the stamp remembers the check
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".verified"]
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
    monkeypatch.setattr(hub.fetch, "_download", fake)
    path = hub.resolve_weights(entry(md5=hashlib.md5(CONTENT).hexdigest()))
    assert path.read_bytes() == CONTENT
    assert [url for url, _ in fake.calls] == list(entry().urls)
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.bin", "model.bin.verified"]


def test_all_downloads_fail(monkeypatch):
    fake = FakeDownloader(fail=("https://",))
    monkeypatch.setattr(hub.fetch, "_download", fake)
    with pytest.raises(hub.WeightsNotFoundError, match=r"download failed.*connection refused.*connection refused"):
        hub.resolve_weights(entry())
    # a network failure keeps the partial file, so that the next try resumes it
    assert [p.name for p in hub.cache_dir("testroom").iterdir()] == ["model.bin.part"]


def test_no_published_hash_records_the_sha256_in_a_sidecar(downloader, caplog):
    with caplog.at_level(logging.WARNING, logger="scenemetrics.hub"):
        path = hub.resolve_weights(entry())
    digest = hashlib.sha256(CONTENT).hexdigest()
    assert path.read_bytes() == CONTENT
    assert digest in caplog.text
    side = hub.sidecar_path(path)
    assert side.name == "model.bin.sha256" and side.read_text() == f"{digest}  model.bin\n"  # sha256sum format
    assert hub.read_sidecar(path) == digest
    assert hub.resolve_weights(entry()) == path and len(downloader.calls) == 1
    path.write_bytes(b"tampered")
    with pytest.raises(hub.ChecksumError) as info:
        hub.resolve_weights(entry())
    assert digest in str(info.value) and hashlib.sha256(b"tampered").hexdigest() in str(info.value)
    side.write_text("not a hash\n")
    with pytest.raises(ValueError, match=r"model\.bin\.sha256 does not hold a sha256"):
        hub.resolve_weights(entry())


def test_file_placed_in_the_cache_by_hand_is_recorded_on_first_load(downloader, caplog):
    target = hub.cache_dir("testroom") / "model.bin"
    target.parent.mkdir(parents=True)
    target.write_bytes(CONTENT)
    with caplog.at_level(logging.WARNING, logger="scenemetrics.hub"):
        assert hub.resolve_weights(entry()) == target
    assert "no recorded sha256" in caplog.text
    assert hub.read_sidecar(target) == hashlib.sha256(CONTENT).hexdigest()
    other = target.with_name("other.bin")
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match="no recorded sha256"):
        hub.verify_file(other, entry(filename="other.bin"), record=False)
    assert downloader.calls == []


def test_stamp_skips_rehashing_an_unchanged_file(downloader, monkeypatch):
    ck = entry(sha256=hashlib.sha256(CONTENT).hexdigest())
    path = hub.resolve_weights(ck)
    reads = []
    real = hub.hashes.file_hashes
    monkeypatch.setattr(hub.hashes, "file_hashes", lambda p, algos: reads.append(Path(p)) or real(p, algos))
    monkeypatch.setattr(hub.hashes, "_VERIFIED", {})  # a new process: only the stamp file remains
    assert hub.resolve_weights(ck) == path and reads == []
    assert hub.verify_file(path, ck, use_stamp=False) == ck.sha256 and reads == [path]
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # same bytes, new mtime: rehashed
    assert hub.resolve_weights(ck) == path and reads == [path, path]
    path.write_bytes(b"same size!!" + b"x" * (len(CONTENT) - 11))  # same size, new content and mtime
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    with pytest.raises(hub.ChecksumError):
        hub.resolve_weights(ck)


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
    with pytest.raises(ValueError) as info:
        hub.load_torch_checkpoint(tmp_path / "pickled.pth")
    message = str(info.value)
    assert "pickled.pth" in message and "weights_only=True" in message and "_Custom" in message
    safe = tmp_path / "pickled.safe.pth"
    assert f"scenemetrics weights convert {tmp_path / 'pickled.pth'} {safe} --i-trust-this-file" in message
    with pytest.raises(TypeError):
        hub.load_torch_checkpoint(tmp_path / "ok.pth", unsafe_fallback=True)  # no such option any more


def test_weights_not_found_error_attributes():
    err = hub.WeightsNotFoundError("msg", filename="f.pth", searched=[Path("/a"), "/b"], url="https://x")
    assert isinstance(err, FileNotFoundError) and str(err) == "msg"
    assert err.filename == "f.pth" and err.searched == ["/a", "/b"] and err.url == "https://x"


# resumable downloads (the network call itself is replaced) --------------------------------------------------------
class FakeServer:
    """Serves ``content`` like an HTTP server honouring Range requests, in 5-byte reads; ``cut`` bytes into a
    response it drops the connection (once)."""

    def __init__(self, content: bytes, *, honour_range: bool = True, cut: int | None = None) -> None:
        self.content, self.honour_range, self.cut = content, honour_range, cut
        self.starts: list[int] = []

    def __call__(self, url: str, start: int):
        self.starts.append(start)
        if start >= len(self.content) and self.honour_range:
            raise urllib.error.HTTPError(url, 416, "Range Not Satisfiable", {}, None)
        body = self.content[start:] if self.honour_range else self.content
        server = self

        class Response(io.BytesIO):
            status = 206 if server.honour_range and start else 200
            headers: ClassVar[dict[str, str]] = {"Content-Length": str(len(body))}

            def read(self, n=-1):
                if server.cut is not None and self.tell() >= server.cut:
                    server.cut = None
                    raise ConnectionResetError("connection reset by peer")
                return super().read(min(5, n) if n and n > 0 else 5)

        return Response(body)


def test_interrupted_download_resumes_with_a_range_request(monkeypatch):
    content = bytes(range(256)) * 3
    server = FakeServer(content, cut=100)
    monkeypatch.setattr(hub.fetch, "_download", REAL_DOWNLOAD)
    monkeypatch.setattr(hub.fetch, "_urlopen", server)
    ck = entry(urls=("https://example.invalid/model.bin",), sha256=hashlib.sha256(content).hexdigest())
    with pytest.raises(hub.WeightsNotFoundError, match="connection reset"):
        hub.resolve_weights(ck, progress=False)
    part = hub.cache_dir("testroom") / "model.bin.part"
    assert part.read_bytes() == content[:100]
    path = hub.resolve_weights(ck, progress=False)
    assert server.starts == [0, 100]  # the second request asked for the rest only
    assert path.read_bytes() == content and not part.exists()


def test_server_without_range_support_and_complete_part(monkeypatch):
    content = b"0123456789" * 7
    monkeypatch.setattr(hub.fetch, "_download", REAL_DOWNLOAD)
    part = hub.cache_dir("testroom") / "model.bin.part"
    part.parent.mkdir(parents=True)
    ck = entry(urls=("https://example.invalid/model.bin",), md5=hashlib.md5(content).hexdigest())
    part.write_bytes(content[:20])
    server = FakeServer(content, honour_range=False)
    monkeypatch.setattr(hub.fetch, "_urlopen", server)
    assert hub.download(ck, progress=False).read_bytes() == content  # status 200: the part was replaced
    assert server.starts == [20]
    (hub.cache_dir("testroom") / "model.bin").unlink()
    part.write_bytes(content)  # a complete part: the server answers 416, the part is verified and kept
    server = FakeServer(content)
    monkeypatch.setattr(hub.fetch, "_urlopen", server)
    assert hub.download(ck, progress=False).read_bytes() == content and server.starts == [len(content)]


def test_stale_part_is_discarded_and_downloaded_again(monkeypatch):
    content = b"the real file " * 5
    monkeypatch.setattr(hub.fetch, "_download", REAL_DOWNLOAD)
    part = hub.cache_dir("testroom") / "model.bin.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes from another file")
    server = FakeServer(content)
    monkeypatch.setattr(hub.fetch, "_urlopen", server)
    ck = entry(urls=("https://example.invalid/model.bin",), sha256=hashlib.sha256(content).hexdigest())
    assert hub.download(ck, progress=False).read_bytes() == content
    assert server.starts == [len(b"stale bytes from another file"), 0]
