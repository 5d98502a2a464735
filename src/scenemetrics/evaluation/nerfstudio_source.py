"""A trained nerfstudio model as an ``eval`` unit: ``scenemetrics eval --nerfstudio-config .../config.yml``.

The model is loaded with nerfstudio's own ``eval_setup`` (as ``ns-eval`` does), the evaluation split's cameras are
rendered with ``model.get_outputs_for_camera``, and the renders, the split's ground-truth images and the training
images are written once into ``<out>/inputs/nerfstudio-<method>-<experiment>-<step>/{renders,gt,train}/`` (named
after the dataset's image files, each name through :func:`scenemetrics.fileio.safe_name`). From there the unit is
scored like any other: PuzzleSim against the training images, PSNR/SSIM/LPIPS/OSIM against the held-out images, PRISM
where its extra is installed; the same results files and report are written, and a rerun reuses the renders of the
same checkpoint step.

Paths in ``config.yml`` are relative to the folder ``ns-train`` ran in; when they do not resolve from the current
folder they are resolved from the folder above the config's ``outputs/`` tree.

nerfstudio reads ``config.yml`` with PyYAML's full loader, which calls any Python callable a tag names (``!!python/
object/apply:os.system [...]`` runs a command). So before nerfstudio sees the file, :func:`check_nerfstudio_config`
reads its tags without constructing anything and refuses the file unless every Python tag is one that ``ns-train``
writes: a config dataclass (``!!python/object:``) of nerfstudio or of an installed method / dataparser plugin, a
reference to a class or function of those packages or of torch (``!!python/name:``), a ``pathlib`` path or an enum
member (``!!python/object/apply:``), or a tuple.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from scenemetrics.evaluation.layout import Unit, _read_unit
from scenemetrics.fileio import safe_name

__all__ = ["SPLITS", "check_nerfstudio_config", "render_nerfstudio"]

SPLITS = ("test", "val")

_PY = "tag:yaml.org,2002:python/"
_PLAIN_PY_TAGS = {f"{_PY}{t}" for t in ("tuple", "none", "bool", "int", "float", "str", "unicode", "list", "dict")}
_BASE_PACKAGES = ("nerfstudio", "torch", "scenemetrics", "pathlib")


def _allowed_packages() -> set[str]:
    """nerfstudio, torch, pathlib and the top-level packages of installed nerfstudio method / dataparser plugins."""
    from importlib.metadata import entry_points

    names = set(_BASE_PACKAGES)
    for group in ("nerfstudio.method_configs", "nerfstudio.dataparser_configs"):
        names.update(e.value.split(":", 1)[0].split(".", 1)[0] for e in entry_points(group=group))
    return names


def _resolve(dotted: str) -> Any:
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def check_nerfstudio_config(path: str | os.PathLike) -> None:
    """Refuse a ``config.yml`` whose YAML tags would make nerfstudio's loader run code (see the module docstring).

    The file is composed into YAML nodes (no Python object is built) and every node's tag is checked; classes and
    functions named by allowed tags are imported from their (installed) packages to check what they are.

    Raises:
        ValueError: a tag that is not one ``ns-train`` writes; the message names the file, the line and the tag.
        ImportError: a tag names a module of an allowed package that is not installed.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "config.yml")
        >>> _ = open(path, "w").write("!!python/object/apply:os.system ['echo hi']\\n")
        >>> check_nerfstudio_config(path)
        Traceback (most recent call last):
        ...
        ValueError: ...config.yml, line 1: refusing the tag !!python/object/apply:os.system ...
    """
    import dataclasses
    import enum
    import pathlib

    import yaml

    p = Path(path)
    try:
        root = yaml.compose(p.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise ValueError(f"{p}: not a YAML file ({err})") from None
    packages = _allowed_packages()
    stack, seen = [root] if root is not None else [], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:  # aliases share nodes: each is checked once
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(x for pair in node.value for x in pair)
        tag = node.tag or ""
        if not tag.startswith(_PY) or tag in _PLAIN_PY_TAGS:
            continue
        kind, _, dotted = tag[len(_PY) :].partition(":")
        where = f"{p}, line {node.start_mark.line + 1}: refusing the tag !!python/{kind}:{dotted}"
        if kind not in ("object", "name", "object/apply") or dotted.split(".", 1)[0] not in packages:
            raise ValueError(
                f"{where} (nerfstudio's loader would {'call' if 'apply' in kind or 'new' in kind else 'import'} it). "
                "A config.yml written by ns-train holds only nerfstudio (or installed plugin) config classes, paths "
                "and enums; if you trust this file, render its views with ns-render and pass them with --root"
            )
        try:
            target = _resolve(dotted)
        except (ImportError, AttributeError, ValueError) as err:
            raise ValueError(f"{where}: it names nothing importable ({type(err).__name__}: {err})") from None
        if kind == "object" and not (
            isinstance(target, type)
            and dataclasses.is_dataclass(target)
            and getattr(target, "__setstate__", None) is None
        ):
            raise ValueError(f"{where}: not a config dataclass (nerfstudio's loader would build and set it up)")
        if kind == "object/apply" and not (
            isinstance(target, type) and issubclass(target, (pathlib.PurePath, enum.Enum))
        ):
            raise ValueError(f"{where}: only paths and enum members are built by a call")


def _check_torch_reads_checkpoints_safely() -> None:
    """nerfstudio's ``eval_setup`` calls ``torch.load(ckpt)`` without ``weights_only``: only from torch 2.6 on does that
    default to the restricted unpickler (before, a run's ``step-*.ckpt`` could run code when loaded)."""
    import torch

    version = tuple(int(p) if p.isdigit() else 0 for p in torch.__version__.split("+")[0].split(".")[:2])
    if version < (2, 6):
        raise ImportError(
            f"--nerfstudio-config needs torch >= 2.6 (this is {torch.__version__}): nerfstudio reads the run's "
            "checkpoint with torch.load's default, which before torch 2.6 unpickles it and so can run code stored "
            "in it. Upgrade torch, or render the views with ns-render and pass them with --root"
        )


def _training_cwd(config_path: Path, output_dir: Path) -> Path:
    """The folder ``ns-train`` ran in: ``config.yml`` lives at ``<output_dir>/<exp>/<method>/<timestamp>/``."""
    base = config_path.resolve().parent
    if output_dir.is_absolute():
        return base.parents[2]
    return base.parents[2 + len(output_dir.parts)]


def _fix_paths(config: Any, config_path: Path) -> Any:
    output_dir = Path(config.output_dir)
    cwd = _training_cwd(config_path, output_dir)
    config.output_dir = config_path.resolve().parents[3]
    datamanager = config.pipeline.datamanager
    for holder in (datamanager, getattr(datamanager, "dataparser", None)):
        data = getattr(holder, "data", None)
        if data is not None and not Path(data).is_absolute() and not Path(data).exists():
            holder.data = cwd / data
    return config


def render_nerfstudio(
    config_path: str | os.PathLike, cache: str | os.PathLike, *, split: str = "test", quiet: bool = False
) -> Unit:
    """Render a trained nerfstudio model's ``split`` cameras and return them as a unit.

    Args:
        config_path: the run's ``config.yml`` (``outputs/<experiment>/<method>/<timestamp>/config.yml``).
        cache: where renders are written (``<out>/inputs`` for ``scenemetrics eval``).
        split: ``"test"`` or ``"val"`` (nerfstudio's ``test_mode``).
        quiet: no progress bar.

    Raises:
        ImportError: nerfstudio is not installed (``pip install "scenemetrics[nerfstudio]"``), or torch is older
            than 2.6 (nerfstudio reads the run's checkpoint with ``torch.load``'s default, which unpickles it before
            torch 2.6).
        FileNotFoundError: no ``config.yml`` at ``config_path``.
        ValueError: an unknown ``split``, or a ``config.yml`` with a tag that would run code
            (:func:`check_nerfstudio_config`).
    """
    if split not in SPLITS:
        raise ValueError(f"`split` for a nerfstudio model must be one of {', '.join(SPLITS)}; received {split!r}")
    path = Path(config_path)
    if not path.is_file():
        raise FileNotFoundError(f"--nerfstudio-config {path}: no such file (expected outputs/.../config.yml)")
    _check_torch_reads_checkpoints_safely()
    try:
        import nerfstudio.configs.base_config  # noqa: F401  (nerfstudio's import cycle: configs before utils)
        from nerfstudio.utils.eval_utils import eval_setup
    except ImportError as err:
        raise ImportError(
            f'--nerfstudio-config needs nerfstudio: pip install "scenemetrics[nerfstudio]" ({err})'
        ) from err
    check_nerfstudio_config(path)  # nerfstudio's own loader runs whatever the file's tags name
    import torch
    from tqdm.auto import tqdm

    from scenemetrics import viz
    from scenemetrics.hub import numpy_safe_globals

    # nerfstudio's checkpoints hold numpy scalars (e.g. the step): its own torch.load runs with weights_only=True
    # (torch >= 2.6) and needs them allow-listed; nothing else is accepted.
    with torch.serialization.safe_globals(numpy_safe_globals(scalars=True)):
        config, pipeline, _, step = eval_setup(
            path, test_mode=split, update_config_callback=lambda c: _fix_paths(c, path)
        )
    method, scene = str(config.method_name), str(config.experiment_name)
    folder = Path(cache) / safe_name(f"nerfstudio-{method}-{scene}-{split}-{step}")
    if not (folder / ".complete").is_file():
        datamanager = pipeline.datamanager
        eval_data, train_data = datamanager.eval_dataset, datamanager.train_dataset
        pipeline.eval()
        cameras = eval_data.cameras
        names = [safe_name(Path(f).stem) for f in eval_data.image_filenames]
        bar = tqdm(range(len(cameras)), desc=f"rendering {method}/{scene}", disable=quiet, file=sys.stderr)
        with torch.no_grad():
            for i in bar:
                camera = cameras[i : i + 1].to(pipeline.device)
                rgb = pipeline.model.get_outputs_for_camera(camera)["rgb"]
                viz.save_png(rgb.clamp(0, 1).permute(2, 0, 1).cpu(), folder / "renders" / f"{names[i]}.png")
                gt = eval_data.get_image_float32(i)[..., :3]
                viz.save_png(gt.permute(2, 0, 1).cpu(), folder / "gt" / f"{names[i]}.png")
        for i, f in enumerate(train_data.image_filenames):
            image = train_data.get_image_float32(i)[..., :3]
            viz.save_png(image.permute(2, 0, 1).cpu(), folder / "train" / f"{safe_name(Path(f).stem)}.png")
        (folder / ".complete").write_text(f"{path.resolve()}\nstep {step}\n")
    return _read_unit(method, scene, folder, "scenemetrics", None, None)
