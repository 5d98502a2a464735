"""Hugging Face models: found in (or downloaded into) the Hugging Face cache, read only from it offline, and every
failure reported as a :class:`~scenemetrics.hub.WeightsNotFoundError` that names the repository and its URL.

Hugging Face models are not copied into ``$SCENEMETRICS_HOME``: ``huggingface_hub`` keeps them in its own cache
(``HF_HOME`` / ``HF_HUB_CACHE``), where other tools find them too. ``HF_HUB_OFFLINE=1`` (or ``TRANSFORMERS_OFFLINE=1``,
``SCENEMETRICS_OFFLINE=1``, ``local_files_only=True``) forbids the network: only that cache is read. Only the files a
``transformers`` model needs are fetched (the JSON configs and the weights, safetensors where the repository has
them, never TensorFlow or Flax files). A local folder is used as it is.

Example:
    >>> import os, tempfile
    >>> from scenemetrics import hub
    >>> os.environ["HF_HUB_OFFLINE"] = "1"
    >>> try:  # doctest: +SKIP
    ...     hub.resolve_hf_model("someone/not-cached", what="a CLIP model")
    ... except hub.WeightsNotFoundError as err:
    ...     print(err.filename, err.url)
    someone/not-cached https://huggingface.co/someone/not-cached
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from scenemetrics.hub.cache import is_offline
from scenemetrics.hub.catalogue import HF_MODELS, HFModel
from scenemetrics.hub.fetch import WeightsNotFoundError

__all__ = ["hf_offline", "hf_weight_files", "resolve_hf_model"]

_TRUE = {"1", "true", "yes", "on"}
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHARD = re.compile(r"-\d{5}-of-\d{5}(?=\.(safetensors|bin)$)")


def hf_offline() -> bool:
    """Whether the Hugging Face hub must not be contacted: ``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
    ``SCENEMETRICS_OFFLINE`` is set (or ``huggingface_hub`` was imported with ``HF_HUB_OFFLINE`` set)."""
    if any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    if is_offline():
        return True
    try:
        import huggingface_hub.constants as constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def hf_weight_files(files: Sequence[str]) -> list[str]:
    """The files of a ``transformers`` model repository to download: every top-level JSON file (configs, the image
    processor's mean and std) and the PyTorch weights, the safetensors ones (shards and index included) when the
    repository has them, else the pickled ``.bin`` ones (which ``transformers`` reads with ``weights_only=True``).

    Example:
        >>> hf_weight_files(["config.json", "pytorch_model.bin", "model.safetensors", "tf_model.h5", "a/config.json"])
        ['config.json', 'model.safetensors']
    """
    top = [f for f in files if "/" not in f]
    keep = {f for f in top if f.endswith(".json") and not f.endswith(".index.json")}
    for stem, ext in (("model", "safetensors"), ("pytorch_model", "bin")):
        weights = [f for f in top if _SHARD.sub("", f.removesuffix(".index.json")) == f"{stem}.{ext}"]
        if weights:
            keep.update(weights)
            break
    return [f for f in files if f in keep]


def _not_found(
    repo_id: str, what: str, reason: str, searched: Sequence[str | os.PathLike] = ()
) -> WeightsNotFoundError:
    url = f"https://huggingface.co/{repo_id}"
    msg = (
        f"Could not load {what} {repo_id!r} from the Hugging Face hub ({reason}). It is downloaded from {url} into the "
        "Hugging Face cache (HF_HOME); HF_HUB_OFFLINE=1 (or SCENEMETRICS_OFFLINE=1) only reads that cache. Download it "
        "once with network access (e.g. `huggingface-cli download " + repo_id + "`), or pass the path of a local "
        "folder saved with save_pretrained."
    )
    return WeightsNotFoundError(msg, filename=repo_id, searched=searched, url=url)


def resolve_hf_model(
    model: str | os.PathLike | HFModel | None = None,
    *,
    default: str | None = None,
    revision: str | None = None,
    local_files_only: bool | None = None,
    what: str = "the model",
) -> tuple[Path, str]:
    """The local folder of a ``transformers`` model: a folder as given, or a hub repository from the Hugging Face
    cache, downloaded there when needed and allowed.

    Args:
        model: a local folder (as written by ``save_pretrained``), a hub repo id (``owner/name``), an
            :class:`~scenemetrics.hub.HFModel`, or ``None`` for the catalogue entry ``default``.
        default: key of :data:`~scenemetrics.hub.HF_MODELS` used when ``model`` is ``None``.
        revision: hub revision (branch, tag or commit); ``None``: the catalogue entry's, else ``main``.
        local_files_only: only read the Hugging Face cache. ``None``: only when :func:`hf_offline` (an explicit
            ``False`` does not override the environment).
        what: what the model is, for messages (``"the CLIP model"``).

    Returns:
        ``(folder, source)``: the local folder and the path or repo id it came from.

    Raises:
        WeightsNotFoundError: a path that does not exist (or is a file), a repository that is not cached offline or
            could not be downloaded. The message names the repository, its URL and ``HF_HUB_OFFLINE``.
        ImportError: a repository id without ``huggingface_hub`` installed (naming the extra to install).
    """
    entry = model if isinstance(model, HFModel) else None
    if model is None:
        if default is None:
            raise ValueError("resolve_hf_model: pass `model` or a catalogue key as `default`")
        entry = HF_MODELS[default]
    if entry is not None:
        source = entry.repo_id
        revision = revision if revision is not None else entry.revision
    else:
        source = os.fspath(model)  # type: ignore[arg-type]
    local = Path(source).expanduser()
    if local.is_dir():
        return local, source
    if local.exists():
        raise WeightsNotFoundError(
            f"{source!r} is a file; {what} must be a folder written by save_pretrained (config.json and weights) or a "
            "Hugging Face repo id",
            filename=source,
            searched=[local],
        )
    if not _REPO_ID.match(source) or ".." in source:
        raise WeightsNotFoundError(
            f"{what} {source!r} is neither an existing folder nor a Hugging Face repo id (owner/name)",
            filename=source,
            searched=[local],
        )
    try:
        import huggingface_hub as hf
    except ImportError:
        raise ImportError(
            f'loading {what} from the Hugging Face hub needs huggingface_hub: pip install "scenemetrics[baselines]"'
        ) from None
    offline = bool(local_files_only) or hf_offline()
    try:
        if offline:
            folder = hf.snapshot_download(source, revision=revision, local_files_only=True)
        else:
            files = hf.list_repo_files(source, revision=revision)
            folder = hf.snapshot_download(source, revision=revision, allow_patterns=hf_weight_files(files))
    except Exception as err:
        reason = "offline and not in the Hugging Face cache" if offline else f"{type(err).__name__}: {err}"
        raise _not_found(source, what, reason) from err
    return Path(folder), source
