"""Every pretrained checkpoint scenemetrics can use: where it comes from, how it is verified, where it is cached.

Resolution order for a checkpoint (:func:`resolve_weights`):

1. ``weights_path=``: a file is used as given (no hash check, so locally built or fine-tuned weights work);
   a folder is searched for the checkpoint's file name.
2. The cache ``$SCENEMETRICS_HOME/<room>/<file>`` (default ``$SCENEMETRICS_HOME`` is
   ``torch.hub.get_dir()/scenemetrics``).
3. Extra places a user may already hold the file (for torchvision backbones: torch's own
   ``torch.hub.get_dir()/checkpoints``).
4. A download into the cache, verified with the hash the publisher gives (sha256, a sha256 prefix, or md5).

With ``SCENEMETRICS_OFFLINE=1`` step 4 is skipped; when nothing is found, or a download fails, a
:class:`WeightsNotFoundError` names the file, every path searched and the URL to fetch it from.

Example:
    >>> from scenemetrics import hub
    >>> hub.CHECKPOINTS["puzzlesim/squeezenet1_1"].filename
    'squeezenet1_1-b8a52dc0.pth'
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "CHECKPOINTS",
    "Checkpoint",
    "WeightsNotFoundError",
    "cache_dir",
    "file_hash",
    "is_offline",
    "load_torch_checkpoint",
    "register",
    "resolve_weights",
    "scenemetrics_home",
]

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}


class WeightsNotFoundError(FileNotFoundError):
    """A checkpoint is neither where it was asked for, nor cached, nor downloadable (offline or failed download).

    Attributes:
        filename: the checkpoint's file name (or a Hugging Face repo id / component).
        searched: every path that was looked at, in order.
        url: where the file can be downloaded from (``None`` when there is no public URL).
    """

    def __init__(
        self, message: str, *, filename: str, searched: Sequence[str | os.PathLike] = (), url: str | None = None
    ) -> None:
        super().__init__(message)
        self.filename = filename
        self.searched = [str(p) for p in searched]
        self.url = url

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Checkpoint:
    """One published checkpoint.

    Attributes:
        room: the scenemetrics room that uses it; the cache folder is ``$SCENEMETRICS_HOME/<room>``.
        filename: file name in the cache (and the name searched for inside a ``weights_path`` folder).
        urls: download locations, tried in order.
        description: what the file is, for error messages.
        sha256: full sha256 hex digest published for the file, if any.
        sha256_prefix: leading hex digits of the sha256 (torchvision puts the first 8 in the file name).
        md5: md5 hex digest, where only that is published.
        extra_dirs: callables returning further folders to search before downloading.
    """

    room: str
    filename: str
    urls: tuple[str, ...]
    description: str
    sha256: str | None = None
    sha256_prefix: str | None = None
    md5: str | None = None
    extra_dirs: tuple[Callable[[], Path], ...] = field(default=(), compare=False)

    @property
    def url(self) -> str:
        return self.urls[0]


def _torch_hub_checkpoints() -> Path:
    import torch.hub

    return Path(torch.hub.get_dir()) / "checkpoints"


def _torchvision(room: str, arch: str, filename: str, description: str) -> Checkpoint:
    # torchvision names its files <arch>-<first 8 hex digits of sha256>.pth and verifies that prefix.
    return Checkpoint(
        room=room,
        filename=filename,
        urls=(f"https://download.pytorch.org/models/{filename}",),
        description=description,
        sha256_prefix=filename.rsplit("-", 1)[1].split(".")[0],
        extra_dirs=(_torch_hub_checkpoints,),
    )


def _yolox(variant: str) -> Checkpoint:
    # Megvii publishes no hash for the 0.1.1rc0 release; the computed sha256 is logged on first download.
    return Checkpoint(
        room="osim",
        filename=f"{variant}.pth",
        urls=(f"https://github.com/Megvii-BaseDetection/YOLOX/releases/download/0.1.1rc0/{variant}.pth",),
        description=f"Megvii YOLOX release 0.1.1rc0 checkpoint {variant} (OSIM detector)",
    )


_REGISTRY: dict[str, Checkpoint] = {
    "puzzlesim/squeezenet1_1": _torchvision(
        "puzzlesim", "squeezenet1_1", "squeezenet1_1-b8a52dc0.pth", "torchvision ImageNet SqueezeNet 1.1 weights"
    ),
    "puzzlesim/alexnet": _torchvision(
        "puzzlesim", "alexnet", "alexnet-owt-7be5be79.pth", "torchvision ImageNet AlexNet weights"
    ),
    "puzzlesim/vgg16": _torchvision("puzzlesim", "vgg16", "vgg16-397923af.pth", "torchvision ImageNet VGG16 weights"),
    **{f"osim/{v}": _yolox(v) for v in ("yolox_nano", "yolox_tiny", "yolox_s", "yolox_m", "yolox_l", "yolox_x")},
    "inpainting/big-lama": Checkpoint(
        room="inpainting",
        filename="big-lama.pt",
        urls=(
            "https://github.com/Sanster/models/releases/download/add_big_lama/big-lama.pt",
            "https://github.com/enesmsahin/simple-lama-inpainting/releases/download/v0.1.0/big-lama.pt",
        ),
        description="big-LaMa TorchScript export (lama-cleaner / IOPaint)",
        md5="e3aa4aaa15225a33ec84f9f4bc47e500",
    ),
}

CHECKPOINTS: Mapping[str, Checkpoint] = MappingProxyType(_REGISTRY)
"""Read-only mapping ``"<room>/<name>" -> Checkpoint`` of every known checkpoint."""


def register(key: str, checkpoint: Checkpoint) -> None:
    """Add a checkpoint to :data:`CHECKPOINTS` (for rooms that build entries at import time).

    Raises:
        ValueError: if ``key`` is already registered with a different checkpoint.
    """
    old = _REGISTRY.get(key)
    if old is not None and old != checkpoint:
        raise ValueError(f"checkpoint key {key!r} is already registered for {old.filename!r}")
    _REGISTRY[key] = checkpoint


def is_offline() -> bool:
    """True when ``SCENEMETRICS_OFFLINE`` is set to 1/true/yes/on: no download is attempted."""
    return os.environ.get("SCENEMETRICS_OFFLINE", "").strip().lower() in _TRUE


def scenemetrics_home() -> Path:
    """``$SCENEMETRICS_HOME``, default ``torch.hub.get_dir()/scenemetrics``."""
    env = os.environ.get("SCENEMETRICS_HOME")
    if env:
        return Path(env).expanduser()
    import torch.hub

    return Path(torch.hub.get_dir()) / "scenemetrics"


def cache_dir(room: str) -> Path:
    """The cache folder of one room: ``$SCENEMETRICS_HOME/<room>`` (not created)."""
    return scenemetrics_home() / room


def file_hash(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(path: Path, ckpt: Checkpoint) -> None:
    """Raise ``ValueError`` if the file does not carry the published hash."""
    if ckpt.md5 is not None:
        got = file_hash(path, "md5")
        if got != ckpt.md5:
            raise ValueError(f"md5 of {path} is {got}, expected {ckpt.md5}")
    if ckpt.sha256 is not None or ckpt.sha256_prefix is not None:
        got = file_hash(path, "sha256")
        want = ckpt.sha256 or ckpt.sha256_prefix or ""
        if not got.startswith(want):
            raise ValueError(f"sha256 of {path} is {got}, expected {'' if ckpt.sha256 else 'a prefix '}{want}")
    if ckpt.md5 is None and ckpt.sha256 is None and ckpt.sha256_prefix is None:
        logger.warning("%s has no published hash; sha256 of the download: %s", ckpt.filename, file_hash(path))


def _download(url: str, dst: Path, progress: bool = True) -> None:
    """Download ``url`` to ``dst``. Tests monkeypatch this function: nothing else here touches the network."""
    from tqdm.auto import tqdm

    req = urllib.request.Request(url, headers={"User-Agent": "scenemetrics"})
    with urllib.request.urlopen(req, timeout=60) as resp, open(dst, "wb") as out:
        total = resp.headers.get("Content-Length")
        with tqdm(
            total=int(total) if total else None,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc=f"downloading {dst.name}",
            disable=not progress,
        ) as bar:
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
                bar.update(len(block))


def _not_found(ckpt: Checkpoint, searched: Iterable[Path], reason: str) -> WeightsNotFoundError:
    searched = list(searched)
    where = ", ".join(str(p) for p in searched) or "nothing"
    msg = (
        f"Could not find {ckpt.description}: file {ckpt.filename!r} ({reason}). "
        f"Searched: {where}. "
        f"Download it from {ckpt.url} into {cache_dir(ckpt.room)}{os.sep} (or set $SCENEMETRICS_HOME), "
        f"or pass weights_path= pointing at the file or its folder."
    )
    return WeightsNotFoundError(msg, filename=ckpt.filename, searched=searched, url=ckpt.url)


def resolve_weights(
    key: str | Checkpoint, weights_path: str | os.PathLike | None = None, *, progress: bool = True
) -> Path:
    """Find (or download) a checkpoint file and return its path.

    Args:
        key: a key of :data:`CHECKPOINTS` (e.g. ``"puzzlesim/squeezenet1_1"``) or a :class:`Checkpoint`.
        weights_path: a checkpoint file (used as given, no hash check) or a folder holding ``filename``.
        progress: show a progress bar while downloading.

    Returns:
        The path of a local file.

    Raises:
        KeyError: unknown ``key``.
        WeightsNotFoundError: ``weights_path`` does not exist or lacks the file; or nothing was cached and
            ``SCENEMETRICS_OFFLINE=1`` is set or every download failed. The message names the file, the
            paths searched and the URL.

    Example:
        >>> import os, tempfile
        >>> from scenemetrics import hub
        >>> os.environ["SCENEMETRICS_HOME"] = tempfile.mkdtemp()
        >>> os.environ["SCENEMETRICS_OFFLINE"] = "1"
        >>> try:
        ...     hub.resolve_weights("osim/yolox_s")
        ... except hub.WeightsNotFoundError as err:
        ...     print(err.filename, err.url.endswith("yolox_s.pth"))
        yolox_s.pth True
        >>> del os.environ["SCENEMETRICS_OFFLINE"]
    """
    if isinstance(key, Checkpoint):
        ckpt = key
    else:
        if key not in _REGISTRY:
            raise KeyError(f"unknown checkpoint {key!r}; known: {', '.join(sorted(_REGISTRY))}")
        ckpt = _REGISTRY[key]

    if weights_path is not None:
        p = Path(weights_path).expanduser()
        if p.is_file():
            return p
        if p.is_dir():
            if (p / ckpt.filename).is_file():
                return p / ckpt.filename
            raise _not_found(ckpt, [p / ckpt.filename], "not in the folder given as weights_path")
        raise _not_found(ckpt, [p], "weights_path does not exist")

    target = cache_dir(ckpt.room) / ckpt.filename
    searched = [target]
    if target.is_file():
        return target
    for extra in ckpt.extra_dirs:
        candidate = extra() / ckpt.filename
        searched.append(candidate)
        if candidate.is_file():
            return candidate

    if is_offline():
        raise _not_found(ckpt, searched, "SCENEMETRICS_OFFLINE=1 is set, so nothing is downloaded")

    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in ckpt.urls:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{ckpt.filename}.", suffix=".part", dir=target.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            _download(url, tmp, progress=progress)
            _verify(tmp, ckpt)
            shutil.move(str(tmp), str(target))  # atomic on one file system: no half-written cache entry
            return target
        except Exception as err:
            errors.append(f"{url}: {type(err).__name__}: {err}")
        finally:
            tmp.unlink(missing_ok=True)
    raise _not_found(ckpt, searched, "download failed: " + "; ".join(errors))


def load_torch_checkpoint(path: str | os.PathLike, *, unsafe_fallback: bool = False) -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)`` with an error that names the file.

    Args:
        path: checkpoint file.
        unsafe_fallback: if the safe unpickler refuses the file (it holds pickled Python objects, as old training
            checkpoints do), load it once more with ``weights_only=False`` and warn. Only for files from a
            publisher the registry trusts.

    Raises:
        ValueError: the file cannot be read as a torch checkpoint.
    """
    import pickle
    import warnings

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if not unsafe_fallback:
            raise ValueError(f"could not read checkpoint {os.fspath(path)!r} with weights_only=True: {err}") from err
        warnings.warn(
            f"{os.fspath(path)!r} holds pickled objects that weights_only=True refuses; loading it with "
            "weights_only=False (only do this for files you trust)",
            UserWarning,
            stacklevel=2,
        )
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:
        raise ValueError(f"could not read checkpoint {os.fspath(path)!r}: {type(err).__name__}: {err}") from err
