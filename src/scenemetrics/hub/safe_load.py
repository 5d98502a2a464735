"""Reading checkpoints safely: ``torch.load(..., weights_only=True)`` only, with the allow-list numpy files need and
errors that name the file (and, for a file that needs the full unpickler, the command that re-saves it as tensors).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

__all__ = ["load_torch_checkpoint", "numpy_safe_globals"]


def _re_save_hint(path: str | os.PathLike) -> str:
    p = Path(path)
    out = p.with_name(f"{p.stem}.safe{p.suffix or '.pth'}")
    return (
        f"If you trust where this file comes from, re-save it as plain tensors with "
        f"`scenemetrics weights convert {shlex.quote(os.fspath(p))} {shlex.quote(os.fspath(out))} "
        f"--i-trust-this-file` and pass the new file as weights_path= (CLI: --weights)."
    )


def numpy_safe_globals(*, scalars: bool = False) -> list[Any]:
    """numpy's reconstruction functions for ``torch.serialization.safe_globals`` (``weights_only=True`` loads).

    Files written by ``torch.save`` of numpy arrays (``scalars=True``: also numpy scalars, as in nerfstudio's
    training checkpoints) name these functions; they rebuild arrays, dtypes and scalars from bytes and call nothing
    else. Both the numpy 1 (``numpy.core``) and numpy 2 (``numpy._core``) names are listed, whichever numpy wrote the
    file.

    Example:
        >>> import io, numpy as np, torch
        >>> buf = io.BytesIO(); torch.save({"a": np.arange(3)}, buf); _ = buf.seek(0)
        >>> with torch.serialization.safe_globals(numpy_safe_globals()):
        ...     torch.load(buf, weights_only=True)["a"].tolist()
        [0, 1, 2]
    """
    import numpy as np

    core = getattr(np, "_core", None)
    multiarray = core.multiarray if core is not None and hasattr(core, "multiarray") else np.core.multiarray
    out: list[Any] = []
    names = ["_reconstruct", *(["scalar"] if scalars else [])]
    for name in names:
        fn = getattr(multiarray, name)
        out += [(fn, f"numpy.core.multiarray.{name}"), (fn, f"numpy._core.multiarray.{name}")]
    out += [np.ndarray, np.dtype, *{type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDG"}]
    return out


def load_torch_checkpoint(path: str | os.PathLike, *, mmap: bool = False) -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)``, with errors that name the file.

    ``mmap=True`` maps a file in torch's zip format instead of reading it (``torch.load(mmap=True)``; a legacy-format
    file is read whole): only the tensors used are read, e.g. the 9 MB of AlexNet's ``features`` out of torchvision's
    233 MB file. The tensors then share the file's pages (copy-on-write): copy those you keep.

    scenemetrics never uses the full unpickler to read a checkpoint: it can run code hidden in the file. A file that
    holds pickled Python objects besides tensors and plain containers (old training checkpoints sometimes store
    ``argparse.Namespace`` or numpy objects) is refused with a :class:`ValueError` that gives the command to re-save
    it safely (``scenemetrics weights convert IN OUT --i-trust-this-file``).

    Raises:
        ValueError: the file cannot be read as a torch checkpoint with ``weights_only=True``.

    Example:
        >>> import os, tempfile, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "w.pth")
        >>> torch.save({"model": {"w": torch.ones(2)}}, path)
        >>> load_torch_checkpoint(path)["model"]["w"]
        tensor([1., 1.])
    """
    import pickle
    import zipfile

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap and zipfile.is_zipfile(path))
    except pickle.UnpicklingError as err:
        text = str(err)
        # refused Python objects (as opposed to bytes that are no pickle at all) are named as "GLOBAL module.name"
        refused = re.search(r"GLOBAL (\S+)|unrecognized function|Unsupported class", text)
        if refused:
            what = f" ({refused.group(1)})" if refused.group(1) else ""
            raise ValueError(
                f"refusing to load {os.fspath(path)!r}: it holds pickled Python objects{what} that the safe loader "
                "(torch.load with weights_only=True) does not accept. scenemetrics never unpickles arbitrary objects, "
                "because that can run code hidden in the file. " + _re_save_hint(path)
            ) from None
        raise ValueError(f"could not read checkpoint {os.fspath(path)!r}: {type(err).__name__}: {err}") from err
    except Exception as err:
        raise ValueError(f"could not read checkpoint {os.fspath(path)!r}: {type(err).__name__}: {err}") from err
