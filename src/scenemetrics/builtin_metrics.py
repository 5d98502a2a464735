"""The built-in metrics' factories, requirements and ``update`` arguments; their table is :mod:`scenemetrics.registry`.

The registry names these functions as ``"scenemetrics.builtin_metrics:<function>"`` strings, so nothing here (nor
any room) is imported until a metric is built or checked. Each factory imports its room, and the room's extras,
only when called.

Example:
    >>> from scenemetrics.builtin_metrics import build_psnr
    >>> from scenemetrics.registry import MetricConfig
    >>> type(build_psnr(MetricConfig("psnr", {}, "cpu"))).__name__
    'PeakSignalNoiseRatio'
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from scenemetrics.registry import MetricConfig, ViewItem, adapter_for, update_arguments

__all__ = [
    "build_lpips",
    "build_osim",
    "build_prism",
    "build_prism_mmd",
    "build_psnr",
    "build_puzzlesim",
    "build_ssim",
    "lpips_checkpoint",
    "osim_requirement",
    "prism_arguments",
    "prism_mmd_requirement",
    "prism_requirement",
]

_LPIPS_BACKBONES = MappingProxyType({"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"})
"""torchmetrics LPIPS ``net_type`` -> torchvision architecture (= hub key ``puzzlesim/<arch>``)."""


def _room_requirement(module: str, attr: str, room: str, extras: Sequence[tuple[str, str]] = ()) -> Callable:
    def check(config: MetricConfig) -> str | None:
        try:
            mod = importlib.import_module(module)
            getattr(mod, attr)
        except (ImportError, AttributeError) as err:
            return f"the {room} room is not part of this installation ({module}.{attr}: {err})"
        missing = [pkg for pkg, _ in extras if importlib.util.find_spec(pkg) is None]
        if missing:
            extra = extras[0][1]
            return f'needs {", ".join(missing)}: pip install "scenemetrics[{extra}]"'
        return None

    return check


def _random_torchvision(arch: str, config: MetricConfig) -> str:
    from scenemetrics.puzzlesim import random_checkpoint

    return str(random_checkpoint(arch, config.work_dir / f"{config.name}-{arch}-random.pth"))


def build_psnr(config: MetricConfig) -> Any:
    from torchmetrics.image import PeakSignalNoiseRatio

    return PeakSignalNoiseRatio(data_range=1.0, dim=(1, 2, 3), reduction="elementwise_mean")


def _with_min_size(metric: Any, minimum: int, why: str) -> Any:
    """``metric`` whose ``update`` first checks that images are at least ``minimum`` px on each side (a ValueError
    naming the size, instead of torch's padding error deep inside the network)."""
    update = metric.update

    def checked(preds: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        h, w = preds.shape[-2:]
        if h < minimum or w < minimum:
            raise ValueError(
                f"{type(metric).__name__} needs images of at least {minimum}x{minimum} pixels ({why}); received {h}x{w}"
            )
        return update(preds, target, *args, **kwargs)

    metric.update = checked
    return metric


# the smallest side each torchmetrics network accepts (found by trying every size: 31 for AlexNet's 11 px stride-4
# stem and its pooling, 16 for VGG16, 17 for SqueezeNet; SSIM's reflection padding of its 11 px window needs 6)
_LPIPS_MIN_SIZE = {"alex": 31, "vgg": 16, "squeeze": 17}
_SSIM_MIN_SIZE = 6


def build_ssim(config: MetricConfig) -> Any:
    from torchmetrics.image import StructuralSimilarityIndexMeasure

    metric = StructuralSimilarityIndexMeasure(data_range=1.0)
    return _with_min_size(metric, _SSIM_MIN_SIZE, "its 11 px Gaussian window is reflection-padded by 5 px")


def lpips_checkpoint(net: str, weights_path: str | os.PathLike | None, work_dir: str | os.PathLike) -> Path:
    """The torchvision checkpoint for LPIPS's backbone, found through :mod:`scenemetrics.hub`, as torchvision loads it.

    torchvision loads the whole classifier strictly, so a checkpoint holding only the ``features`` (``features.*``
    or bare ``<i>.<param>`` keys, as PuzzleSim accepts) is completed with zero classifier tensors (stored as
    broadcast views, a few bytes; LPIPS never uses the classifier) into a file in ``work_dir``.

    Args:
        net: torchmetrics' ``net_type`` (``alex``, ``vgg``, ``squeeze``).
        weights_path: a file or folder (``--lpips-weights``); ``None``: the hub cache, torchvision's cache, then a
            verified download (:func:`scenemetrics.hub.resolve_weights` with key ``puzzlesim/<arch>``).
        work_dir: where a completed checkpoint is written.

    Raises:
        ValueError: unknown ``net``, or a file whose ``features`` keys or shapes do not match torchvision's.
        scenemetrics.hub.WeightsNotFoundError: nothing found (offline or download failed).
    """
    import torch
    import torchvision

    from scenemetrics import hub

    if net not in _LPIPS_BACKBONES:
        raise ValueError(f"lpips `net` must be one of {', '.join(_LPIPS_BACKBONES)}; received {net!r}")
    arch = _LPIPS_BACKBONES[net]
    key = f"puzzlesim/{arch}"
    path = hub.resolve_weights(key, weights_path)
    try:
        # mmap needs torch's zip format; older (legacy-format) torchvision files are read whole, as PuzzleSim does
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    except Exception as err:
        raise ValueError(f"could not read LPIPS backbone checkpoint {os.fspath(path)!r}: {err}") from err
    with torch.device("meta"):
        reference = getattr(torchvision.models, arch)(weights=None).state_dict()
    if not isinstance(state, Mapping):
        raise ValueError(f"LPIPS backbone checkpoint {os.fspath(path)!r} must hold a state_dict")
    if not any(k.startswith("features.") for k in state):
        state = {f"features.{k}": v for k, v in state.items()}
    want = {k: v for k, v in reference.items() if k.startswith("features.")}
    got = {k: v for k, v in state.items() if k.startswith("features.")}
    bad = sorted(set(want) ^ set(got)) + sorted(k for k in want.keys() & got.keys() if want[k].shape != got[k].shape)
    extra = sorted(k for k in state if not k.startswith(("features.", "classifier.")))
    if bad or extra:
        raise ValueError(
            f"LPIPS backbone checkpoint {os.fspath(path)!r} does not match torchvision {arch}: mismatched keys "
            f"{(bad + extra)[:5]} (expected a torchvision {arch} state_dict, whole or features only)"
        )
    classifier = {k: v for k, v in reference.items() if k.startswith("classifier.")}
    if all(k in state and state[k].shape == v.shape for k, v in classifier.items()):
        return Path(path)
    completed = dict(got)
    completed.update({k: torch.zeros((), dtype=v.dtype).expand(v.shape) for k, v in classifier.items()})
    out = Path(tempfile.mkdtemp(prefix="lpips-", dir=work_dir)) / hub.CHECKPOINTS[key].filename
    torch.save(completed, out)
    return out


def build_lpips(config: MetricConfig) -> Any:
    import torch.hub
    from torchmetrics.image import LearnedPerceptualImagePatchSimilarity

    from scenemetrics import hub

    net = str(config.options.get("net", "alex"))
    if net not in _LPIPS_BACKBONES:
        raise ValueError(f"lpips `net` must be one of {', '.join(_LPIPS_BACKBONES)}; received {net!r}")
    arch = _LPIPS_BACKBONES[net]
    weights = config.options.get("weights")
    if config.random_weights:
        from scenemetrics.puzzlesim import random_checkpoint

        weights = random_checkpoint(arch, config.work_dir / f"lpips-{arch}-random.pth", include_classifier=False)
    path = lpips_checkpoint(net, weights, config.work_dir)
    # torchmetrics builds the backbone with torchvision's pretrained weights, which torchvision reads from
    # torch.hub.get_dir()/checkpoints/<file> and downloads only when that file is absent. Point the hub at a private
    # folder holding (a link to) the file the scenemetrics hub resolved: torchvision loads exactly it, never
    # downloading. The LPIPS linear layers are bundled with torchmetrics.
    hub_dir = Path(tempfile.mkdtemp(prefix="lpips-hub-", dir=config.work_dir))
    (hub_dir / "checkpoints").mkdir()
    link = hub_dir / "checkpoints" / hub.CHECKPOINTS[f"puzzlesim/{arch}"].filename
    try:
        link.symlink_to(Path(path).resolve())
    except OSError:
        import shutil

        shutil.copyfile(path, link)
    old_dir = torch.hub.get_dir()
    torch.hub.set_dir(str(hub_dir))
    try:
        metric = LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True)
    finally:
        torch.hub.set_dir(old_dir)
    return _with_min_size(metric, _LPIPS_MIN_SIZE[net], f"the smallest input of its {arch} backbone")


def build_puzzlesim(config: MetricConfig) -> Any:
    from scenemetrics.puzzlesim import PuzzleSim
    from scenemetrics.puzzlesim.backbone import canonical_backbone

    backbone = canonical_backbone(str(config.options.get("backbone", "squeezenet1_1")))
    weights = _random_torchvision(backbone, config) if config.random_weights else config.options.get("weights")
    kwargs: dict[str, Any] = {}
    for key in ("layers", "layer_weights", "resize", "chunk_size"):
        if config.options.get(key) is not None:
            kwargs[key] = config.options[key]
    if "layers" in kwargs and "layer_weights" not in kwargs:
        # as `scenemetrics puzzlesim --layers`: the paper's weights belong to its layers (2, 3, 4); others get 1/m each
        from scenemetrics.puzzlesim import DEFAULT_LAYERS

        layers = kwargs["layers"]
        if (tuple(layers) if isinstance(layers, (list, tuple)) else (layers,)) != tuple(DEFAULT_LAYERS):
            kwargs["layer_weights"] = None
    return PuzzleSim(backbone=backbone, weights_path=weights, keep_maps=True, **kwargs)


_OSIM_RANDOM_DETECTOR = "yolox_nano"
_OSIM_OPTIONS = (("conf", "conf_threshold"), ("nms", "nms_threshold"), ("layer", "layer"), ("saliency", "saliency"))


def build_osim(config: MetricConfig) -> Any:
    osim = importlib.import_module("scenemetrics.osim")
    opts = config.options
    detector = str(opts.get("detector") or (_OSIM_RANDOM_DETECTOR if config.random_weights else "yolox_x"))
    weights = opts.get("weights")
    if config.random_weights:
        weights = str(osim.random_checkpoint(detector, config.work_dir / f"osim-{detector}-random.pth"))
    kwargs: dict[str, Any] = {}
    for key, arg in _OSIM_OPTIONS:
        if opts.get(key) is not None:
            kwargs[arg] = opts[key]
    return osim.OSIM(detector=detector, weights_path=weights, **kwargs)


_PRISM_EXTRACTOR_OPTIONS = ("timestep", "noise_seed", "image_size", "revision", "variant")


def _prism_parts(config: MetricConfig) -> tuple[Any, Any]:
    prism = importlib.import_module("scenemetrics.prism")
    model = config.options.get("model")
    kwargs = {k: config.options[k] for k in _PRISM_EXTRACTOR_OPTIONS if config.options.get(k) is not None}
    extractor = prism.Zero123Features.from_pretrained(model, device=config.device, resize=True, **kwargs)
    head_path = config.options.get("head")
    if head_path is None:
        warnings.warn(
            f"{config.name}: no {config.flag('head', '--prism-head')} given, so PRISM runs in raw mode (normalised "
            "Zero123 features): "
            "untrained diffusion-feature scores, not PRISM as published",
            UserWarning,
            stacklevel=2,
        )
        return extractor, None
    return extractor, prism.ProjectionHead.load(head_path)


def build_prism(config: MetricConfig) -> Any:
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMDistance(extractor, head)


def build_prism_mmd(config: MetricConfig) -> Any:
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMMMD(extractor, head, anchors=config.options["anchors"])


def _center_square(x: Any) -> Any:
    h, w = x.shape[-2:]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return x[..., top : top + s, left : left + s]


def prism_arguments(metric: Any, item: ViewItem, options: Mapping[str, Any]) -> tuple:
    """PRISM's ``update`` arguments; with the ``center_crop`` option every image is cropped to a centred square."""
    args = update_arguments(adapter_for(metric).update_kind(metric), item)
    if options.get("center_crop"):
        args = tuple(_center_square(a) if i < len(args) - 1 else a for i, a in enumerate(args))
    return args


_PRISM_ROOM = _room_requirement(
    "scenemetrics.prism", "PRISMDistance", "PRISM", (("diffusers", "prism"), ("transformers", "prism"))
)


def prism_requirement(config: MetricConfig) -> str | None:
    reason = _PRISM_ROOM(config)
    if reason is None and config.random_weights and config.options.get("model") is None:
        reason = "PRISM has no random-weight helper; with --random-weights pass a local Zero123 folder (--prism-model)"
    return reason


def prism_mmd_requirement(config: MetricConfig) -> str | None:
    reason = prism_requirement(config)
    if reason is None and config.options.get("anchors") is None:
        reason = (
            "needs an anchor file of ground-truth triplet embeddings (--prism-anchors FILE, e.g. from "
            "`scenemetrics prism embed ... --anchors-out FILE`)"
        )
    return reason


osim_requirement = _room_requirement("scenemetrics.osim", "OSIM", "OSIM")
"""Why OSIM cannot run here (its room missing), or ``None``."""
