"""Every pretrained checkpoint scenemetrics can use: where it comes from, how it is verified, where it is cached.

Resolution order for a checkpoint (:func:`resolve_weights`):

1. ``weights_path=``: a file is used as given (no hash check, so locally built or fine-tuned weights work);
   a folder is searched for the checkpoint's file name.
2. The cache ``$SCENEMETRICS_HOME/<family>/<file>`` (default ``$SCENEMETRICS_HOME`` is
   ``torch.hub.get_dir()/scenemetrics``).
3. Extra places a user may already hold the file (for torchvision backbones: torch's own
   ``torch.hub.get_dir()/checkpoints``; for the LPIPS linear layers: the copies torchmetrics installs).
4. A download into the cache (resumed from ``<file>.part`` after an interruption).

Verification (:func:`verify_file`): a file found in steps 2-4 is checked on **every** load, not only after its
download. Files with a published hash (sha256, a sha256 prefix, or md5) are compared with it. For files whose
publisher gives none (the Megvii YOLOX releases), the sha256 is recorded at the first download in a sidecar
``<file>.sha256`` and every later load compares the file with it; a mismatch raises :class:`ChecksumError` naming
both hashes. So that a 750 MB file is not rehashed on every run, a successful check is remembered in
``<file>.verified`` (size, modification time, inode, digests); an unchanged file is not read again, any change to
it is rehashed.

Loading (:func:`load_torch_checkpoint`): ``torch.load(..., weights_only=True)`` only. A file that needs the full
unpickler is refused with a ``ValueError`` that gives the command to re-save it as plain tensors
(``scenemetrics weights convert IN OUT --i-trust-this-file``).

With ``SCENEMETRICS_OFFLINE=1`` step 4 is skipped; when nothing is found, or a download fails, a
:class:`WeightsNotFoundError` names the file, every path searched and the URL to fetch it from.

Hugging Face models (:data:`HF_MODELS`: CLIP and DINOv2 for the baselines) stay in the Hugging Face cache and follow
``HF_HUB_OFFLINE`` (:func:`resolve_hf_model`); a failure is the same :class:`WeightsNotFoundError`, naming the
repository and its URL.

The package, one module per job: :mod:`~scenemetrics.hub.catalogue` (the table of checkpoints),
:mod:`~scenemetrics.hub.cache` (the cache folders, offline mode, the download lock), :mod:`~scenemetrics.hub.hashes`
(hashing, sidecars, the verification stamps), :mod:`~scenemetrics.hub.fetch` (resolving and downloading),
:mod:`~scenemetrics.hub.huggingface` (Hugging Face models) and :mod:`~scenemetrics.hub.safe_load` (reading checkpoints
with ``weights_only=True``). Every public name is imported
from ``scenemetrics.hub`` (lazily: importing the package costs nothing).

Example:
    >>> from scenemetrics import hub
    >>> hub.CHECKPOINTS["puzzlesim/squeezenet1_1"].filename
    'squeezenet1_1-b8a52dc0.pth'
"""

from __future__ import annotations

from scenemetrics._lazy import lazy_exports

_EXPORTS = {
    "CHECKPOINTS": "catalogue",
    "HF_MODELS": "catalogue",
    "Checkpoint": "catalogue",
    "HFModel": "catalogue",
    "register": "catalogue",
    "cache_dir": "cache",
    "is_offline": "cache",
    "scenemetrics_home": "cache",
    "SIDECAR_SUFFIX": "hashes",
    "STAMP_SUFFIX": "hashes",
    "ChecksumError": "hashes",
    "file_hash": "hashes",
    "file_hashes": "hashes",
    "read_sidecar": "hashes",
    "sidecar_path": "hashes",
    "verify_file": "hashes",
    "PART_SUFFIX": "fetch",
    "WeightsNotFoundError": "fetch",
    "download": "fetch",
    "resolve_weights": "fetch",
    "hf_offline": "huggingface",
    "hf_weight_files": "huggingface",
    "resolve_hf_model": "huggingface",
    "load_torch_checkpoint": "safe_load",
    "numpy_safe_globals": "safe_load",
}

_all, __getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS, submodules=("cache", "catalogue", "fetch", "hashes", "huggingface", "safe_load")
)
__all__ = _all
