"""The built-in metrics: each one's adapter (options, inputs, dispatch, pictures) and its factory, in one place.

:mod:`scenemetrics.registry` imports this module the first time a metric is looked up. A new option of a built-in
metric goes into its ``options=[Option(...)]`` list below, and nowhere else: the factory reads it from
``config.options`` / ``config.kwargs``, and the ``scenemetrics eval`` flags, the nerfstudio config fields, the result
fingerprint and the table of options in ``docs/eval.md`` all follow from that list. Each factory imports its metric
family's package, and that package's extras, only when called.

======================  ============================================================  ============================  ====
name                    metric                                                        inputs / update               best
======================  ============================================================  ============================  ====
``psnr``                torchmetrics ``PeakSignalNoiseRatio(data_range=1, dim=CHW)``  gt / paired                   high
``ssim``                torchmetrics' SSIM by ``fullref.SSIMMap`` (separable)         gt / paired                   high
``lpips``               LPIPS v0.1 by ``fullref.LPIPSMap`` (torchmetrics' value)       gt / paired                   low
``puzzlesim``           ``scenemetrics.PuzzleSim`` (training views as references)     train / references, map       high
``osim``                ``scenemetrics.OSIM``                                         gt / paired, objects          high
``prism``               ``scenemetrics.PRISMDistance``                                gt, cameras / prism_distance  low
``prism_mmd``           ``scenemetrics.PRISMMMD`` (anchors from ``anchors=``)         cameras / prism_mmd           low
``ssim_3dgs``           ``fullref.SSIM3DGS`` (3DGS ``metrics.py``)                    gt / paired                   high
``ssim_nerfbaselines``  ``fullref.SSIMNerfBaselines`` (dm_pix)                        gt / paired                   high
``lpips_vgg``           ``fullref.LPIPSMap("vgg")`` (``lpips`` package)               gt / paired                   low
``lpips_3dgs``          ``fullref.LPIPS3DGS`` (3DGS ``metrics.py``)                   gt / paired                   low
``ssim_map``            ``scenemetrics.fullref.SSIMMap``                              gt / paired, map              high
``lpips_map``           ``scenemetrics.fullref.LPIPSMap``                             gt / paired, map              low
``abs_error``           ``scenemetrics.fullref.AbsErrorMap``                          gt / paired, map              low
======================  ============================================================  ============================  ====

The published protocols (``scenemetrics``, ``3dgs``, ``nerfbaselines``: which of these stands for ``ssim`` and
``lpips`` in whose tables) are declared after their metrics.

The baselines of :mod:`scenemetrics.baselines` (``fid``, ``kid``, ``jfid``, ``cmmd``, ``jcmmd``, ``clip_s``,
``clip_s_src``, ``fd_dinov2``, ``jfd_dinov2``, ``dino_sim``, ``dino_sim_src``) are declared in one table at the end
(``_BASELINES``), with one option set per embedding family (``inception``, ``clip``, ``dino``).

OSIM's Bbox-patch baselines (family ``osim``: the ``--osim-*`` flags set them with OSIM): ``osim_patch_psnr``,
``osim_patch_ssim``, ``osim_patch_lpips`` (lower is better) and ``osim_patch_clip``, each a
:class:`scenemetrics.osim.OSIMPatches` whose per-patch score is PSNR (torchmetrics), :func:`scenemetrics.fullref.ssim`,
:func:`scenemetrics.fullref.lpips` or the cosine of CLIP image embeddings (:func:`scenemetrics.baselines.load_clip`).

Example:
    >>> from scenemetrics.registry import MetricConfig, get_metric
    >>> type(get_metric("psnr").build(MetricConfig("psnr", {}, "cpu"))).__name__
    'PeakSignalNoiseRatio'
    >>> [o.key for o in get_metric("osim").options]
    ['detector', 'weights', 'conf', 'nms', 'layer', 'saliency', 'boxes']
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from scenemetrics.registry import MetricAdapter, MetricConfig, Option, ViewItem, register_metric, register_protocol

__all__ = [
    "baseline_requirement",
    "build_baseline",
    "build_lpips",
    "build_lpips_3dgs",
    "build_lpips_map",
    "build_lpips_vgg",
    "build_osim",
    "build_osim_patches",
    "build_prism",
    "build_prism_mmd",
    "build_psnr",
    "build_puzzlesim",
    "build_ssim",
    "build_ssim_3dgs",
    "build_ssim_nerfbaselines",
    "feed_objects",
    "osim_boxes_file",
    "osim_requirement",
    "prism_requirement",
]

_LPIPS_BACKBONES = MappingProxyType({"alex": "alexnet", "vgg": "vgg16", "squeeze": "squeezenet1_1"})
"""LPIPS ``net`` -> torchvision architecture of its backbone (= hub key ``puzzlesim/<arch>``)."""


def _package_requirement(module: str, attr: str, family: str, extras: Sequence[tuple[str, str]] = ()) -> Callable:
    def check(config: MetricConfig) -> str | None:
        try:
            mod = importlib.import_module(module)
            getattr(mod, attr)
        except (ImportError, AttributeError) as err:
            return f"the {family} metrics are not part of this installation ({module}.{attr}: {err})"
        missing = [pkg for pkg, _ in extras if importlib.util.find_spec(pkg) is None]
        if missing:
            extra = extras[0][1]
            return f'needs {", ".join(missing)}: pip install "scenemetrics[{extra}]"'
        return None

    return check


def _random_torchvision(arch: str, config: MetricConfig) -> str:
    from scenemetrics.puzzlesim import random_checkpoint

    return str(random_checkpoint(arch, config.work_dir / f"{config.name}-{arch}-random.pth"))


# ---- psnr, ssim (torchmetrics) ---------------------------------------------------------------------------------------


def build_psnr(config: MetricConfig) -> Any:
    """torchmetrics PSNR over each image (data range 1), averaged over images."""
    from torchmetrics.image import PeakSignalNoiseRatio

    return PeakSignalNoiseRatio(data_range=1.0, dim=(1, 2, 3), reduction="elementwise_mean")


def build_ssim(config: MetricConfig) -> Any:
    """torchmetrics' SSIM (Gaussian 11x11, sigma 1.5, reflect padding, data range 1), computed by
    :class:`scenemetrics.fullref.SSIMMap` with a separable filter: the same definition, about 4 times faster than
    torchmetrics' 11x11 grouped convolution, equal to it to float32 rounding."""
    from scenemetrics.fullref import SSIMMap

    # SSIMMap names the minimum size (6 px: reflection padding by the window's radius) in its own error
    return SSIMMap(data_range=1.0, keep_maps=False)


register_metric(
    "psnr",
    build_psnr,
    inputs=("gt",),
    higher_is_better=True,
    description="PSNR (dB) of each render vs its ground truth, averaged over views (torchmetrics, data range 1)",
    update="paired",
    metric_class="torchmetrics.image.psnr:PeakSignalNoiseRatio",
)
register_metric(
    "ssim",
    build_ssim,
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM (Gaussian 11x11, sigma 1.5, reflect padding) of each render vs its ground truth, averaged "
    "(torchmetrics' definition)",
    update="paired",
    metric_class="torchmetrics.image.ssim:StructuralSimilarityIndexMeasure",
    pictures=(),  # built as fullref.SSIMMap without its maps: a score, no picture (ssim_map gives the map)
)


# ---- lpips (scenemetrics.fullref's LPIPS network, backbone and linear layers through the scenemetrics hub) ----------


def _lpips_kwargs(config: MetricConfig) -> dict[str, Any]:
    """The :class:`scenemetrics.fullref.LPIPSMap` arguments of ``config``; with random weights, a random backbone
    (seed 0, one file shared by ``lpips`` and ``lpips_map``) and the published linear layers."""
    kwargs = dict(config.kwargs)
    if config.random_weights:
        from scenemetrics.puzzlesim import random_checkpoint

        arch = _LPIPS_BACKBONES[kwargs.get("net", "alex")]
        path = config.work_dir / f"lpips-{arch}-random.pth"
        kwargs["weights_path"] = str(random_checkpoint(arch, path, include_classifier=False))
    return kwargs


def build_lpips(config: MetricConfig) -> Any:
    """LPIPS v0.1 of each view on inputs scaled to [-1, 1]: :class:`scenemetrics.fullref.LPIPSMap` without its maps.

    This is the value of the ``lpips`` package (``lpips.LPIPS(net)(2 x - 1, 2 y - 1)``), of NerfBaselines' ``lpips``
    and of torchmetrics' ``LearnedPerceptualImagePatchSimilarity(net_type=net, normalize=True)`` (which normalises
    the features with ``sqrt(||f||^2 + 1e-8)`` instead of ``||f|| + 1e-10``: equal to float32 rounding). It is
    built from the network's ``features`` only and needs no ``import`` of torchmetrics' LPIPS, whose construction
    builds and initialises the whole torchvision classifier and reads the whole checkpoint.
    """
    from scenemetrics.fullref import LPIPSMap

    return LPIPSMap(**_lpips_kwargs(config), keep_maps=False)


_LPIPS_OPTIONS = (
    Option("net", str, "alex", "LPIPS backbone", choices=tuple(_LPIPS_BACKBONES)),
    Option("weights", Path, None, "torchvision checkpoint of the backbone (file or folder)", argument="weights_path"),
    Option(
        "linear_weights",
        Path,
        None,
        "LPIPS v0.1 linear layers (<net>.pth, file or folder; default: torchmetrics' bundled copy, verified)",
        argument="linear_weights_path",
    ),
)
"""The options of ``lpips`` and ``lpips_map`` (one family: ``--lpips-net``, ``--lpips-weights`` and
``--lpips-linear-weights`` set both, so that the score and the map use one network)."""

register_metric(
    "lpips",
    build_lpips,
    options=_LPIPS_OPTIONS,
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS v0.1 (inputs scaled to [-1, 1]; torchmetrics' and the lpips package's value), averaged over "
    "views",
    update="paired",
    # describes a user's torchmetrics LPIPS too (callbacks); built as fullref.LPIPSMap without maps: a score, no
    # picture (lpips_map gives the map)
    metric_class="torchmetrics.image.lpip:LearnedPerceptualImagePatchSimilarity",
    pictures=(),
)


# ---- puzzlesim ------------------------------------------------------------------------------------------------------


def build_puzzlesim(config: MetricConfig) -> Any:
    """:class:`scenemetrics.PuzzleSim` keeping its maps (``last_maps``) for the pictures."""
    from scenemetrics.puzzlesim import DEFAULT_LAYERS, PuzzleSim

    kwargs = dict(config.kwargs)
    if "layers" in kwargs and "layer_weights" not in kwargs and list(kwargs["layers"]) != list(DEFAULT_LAYERS):
        # as `scenemetrics puzzlesim --layers`: the paper's weights belong to its layers (2, 3, 4); others get 1/m each
        kwargs["layer_weights"] = None
    if config.random_weights:
        kwargs["weights_path"] = _random_torchvision(kwargs.get("backbone", "squeezenet1_1"), config)
    return PuzzleSim(keep_maps=True, **kwargs)


register_metric(
    "puzzlesim",
    build_puzzlesim,
    options=[
        Option(
            "backbone", str, "squeezenet1_1", "feature backbone", choices="scenemetrics.puzzlesim.backbone:BACKBONES"
        ),
        Option("weights", Path, None, "backbone checkpoint (file or folder)", argument="weights_path"),
        Option("layers", list[int], [2, 3, 4], "backbone slices compared (0-based LPIPS slices)", low=0),
        Option(
            "layer_weights",
            list[float],
            None,
            "weight of each layer's map, one per layer (default: the paper's 0.67, 0.2, 0.13 for layers 2, 3, 4; "
            "1/m each for other layers)",
            low=0,
        ),
        Option("resize", int | list[int], None, "resize every image to this side, or [h, w], first", low=1),
        Option("chunk_size", int, None, "similarities computed at once (bounds the memory)", low=1, scores=False),
    ],
    inputs=("train",),
    higher_is_better=True,
    description="PuzzleSim mean map value of each render against the scene's training views (no ground truth)",
    update="references",
    metric_class="scenemetrics.puzzlesim.metric:PuzzleSim",
    pictures=("map",),
)


# ---- osim -----------------------------------------------------------------------------------------------------------

_OSIM_RANDOM_DETECTOR = "yolox_nano"


_BOXES_FILES: dict[tuple[str, int, int], Any] = {}


def osim_boxes_file(path: str | os.PathLike) -> Any:
    """The :class:`scenemetrics.osim.BoxesFile` at ``path``, read once per (file, modification time, size).

    Raises:
        ValueError: the file cannot be read or is not a valid boxes file (the message names it).
    """
    regions = importlib.import_module("scenemetrics.osim.regions")
    p = Path(path)
    try:
        st = p.stat()
    except OSError as err:
        raise ValueError(f"could not read boxes file {os.fspath(p)!r}: {err}") from None
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _BOXES_FILES:
        _BOXES_FILES[key] = regions.read_boxes_file(p)
    return _BOXES_FILES[key]


def _osim_kwargs(config: MetricConfig, own: Sequence[str] = ()) -> dict[str, Any]:
    """The detector keyword arguments of OSIM and its patch baselines (``own``: the metric's other options, left
    out); with random weights a random ``yolox_nano`` unless ``detector`` names another. A ``boxes`` file is read
    (and so checked) here, before any view is scored."""
    osim = importlib.import_module("scenemetrics.osim")
    kwargs = {k: v for k, v in config.kwargs.items() if k not in ("boxes", *own)}
    if config.options.get("boxes") is not None:
        osim_boxes_file(config.options["boxes"])
    kwargs.setdefault("detector", _OSIM_RANDOM_DETECTOR if config.random_weights else "yolox_x")
    if config.random_weights:
        detector = kwargs["detector"]
        kwargs["weights_path"] = str(osim.random_checkpoint(detector, config.work_dir / f"osim-{detector}-random.pth"))
    return kwargs


def build_osim(config: MetricConfig) -> Any:
    """:class:`scenemetrics.OSIM`; with random weights a random ``yolox_nano`` unless ``detector`` names another."""
    osim = importlib.import_module("scenemetrics.osim")
    return osim.OSIM(**_osim_kwargs(config))


_PAIRED = MetricAdapter(name="", factory=None, update="paired")
"""The plain ``update(render, target)`` dispatch, which :func:`feed_objects` extends."""


def feed_objects(metric: Any, item: ViewItem, config: MetricConfig) -> tuple:
    """``update(render, target[, boxes])`` of OSIM and its patch baselines: with a ``boxes`` option, the view's
    regions from that file (the view's scene section first; views the file does not list get none)."""
    args = _PAIRED.update_args(metric, item, config)
    path = config.options.get("boxes")
    if path is None:
        return args
    scene = item.unit.split("/", 1)[1] if "/" in item.unit else None
    regions = osim_boxes_file(path).for_view(item.name, scene)
    return (*args, [regions] * int(item.render.shape[0]))


osim_requirement = _package_requirement("scenemetrics.osim", "OSIM", "OSIM")
"""Why OSIM cannot run here (its package missing), or ``None``."""

# The objects OSIM scores and how they are weighted: declared once, shared with OSIM's Bbox-patch baselines below
# (family "osim": one --osim-<key> flag sets every metric of the family that declares the key).
_OSIM_OBJECT_OPTIONS = (
    Option(
        "detector",
        str,
        "yolox_x",
        "YOLOX variant (yolox_nano with random weights)",
        choices="scenemetrics.osim.checkpoints:YOLOX_VARIANTS",
    ),
    Option("weights", Path, None, "YOLOX checkpoint (file or folder)", argument="weights_path"),
    Option("conf", float, 0.35, "detection confidence threshold", argument="conf_threshold", low=0, high=1),
    Option("nms", float, 0.45, "NMS IoU threshold", argument="nms_threshold", low=0, high=1),
    Option(
        "saliency",
        str,
        "gbvs",
        "saliency weighting of the objects",
        choices="scenemetrics.osim.options:SALIENCY_MODES",
    ),
    Option("boxes", Path, None, "boxes file (JSON/CSV) of objects the detector misses, scored next to its own"),
)

register_metric(
    "osim",
    build_osim,
    options=[
        *_OSIM_OBJECT_OPTIONS[:4],
        Option("layer", str, "dark5", "feature map compared", choices="scenemetrics.osim.yolox:FEATURE_LAYERS"),
        *_OSIM_OBJECT_OPTIONS[4:],
    ],
    inputs=("gt",),
    higher_is_better=True,
    description="OSIM scene score (objects detected on the ground truth, pooled per class over the scene's views)",
    requires=osim_requirement,
    per_view=False,
    update="paired",
    feed=feed_objects,
    metric_class="scenemetrics.osim.metric:OSIM",
    pictures=("objects",),
    overlay="scenemetrics.osim:low_objects_picture",
    class_names="scenemetrics.osim:COCO_POOLS",
)


# ---- prism, prism_mmd -----------------------------------------------------------------------------------------------

_PRISM_EXTRACTOR_OPTIONS = ("timestep", "noise_seed", "image_size", "revision", "variant")
_PRISM_OPTIONS = (
    Option("model", Path, None, "Zero123 diffusers folder or hub id (default: scenemetrics.prism.DEFAULT_MODEL)"),
    Option("head", Path, None, "trained projection head (.safetensors); not given: raw mode (warned)"),
    Option("center_crop", bool, False, "crop source, render and ground truth to their centred square (non-square)"),
    Option("timestep", int, 0, "the one diffusion timestep of the features", low=0),
    Option("noise_seed", int, 0, "seed of the shared noise sample"),
    Option("image_size", int, 256, "side of the square images the model sees (a multiple of 64)", low=64),
    Option("revision", str, None, "hub revision of the model"),
    Option("variant", str, None, "hub weights variant of the model (e.g. fp16)"),
)


def _prism_parts(config: MetricConfig) -> tuple[Any, Any]:
    prism = importlib.import_module("scenemetrics.prism")
    kwargs = {k: config.options[k] for k in _PRISM_EXTRACTOR_OPTIONS if k in config.options}
    extractor = prism.Zero123Features.from_pretrained(
        config.options.get("model"), device=config.device, resize=True, **kwargs
    )
    head_path = config.options.get("head")
    if head_path is None:
        warnings.warn(
            f"{config.name}: no {config.flag('head')} given, so PRISM runs in raw mode (normalised Zero123 features): "
            "untrained diffusion-feature scores, not PRISM as published",
            UserWarning,
            stacklevel=2,
        )
        return extractor, None
    return extractor, prism.ProjectionHead.load(head_path)


def build_prism(config: MetricConfig) -> Any:
    """:class:`scenemetrics.PRISMDistance` on Zero123 features (``model``) and a trained ``head`` (or raw mode)."""
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMDistance(extractor, head)


def build_prism_mmd(config: MetricConfig) -> Any:
    """:class:`scenemetrics.PRISMMMD` against the ``anchors`` file."""
    prism = importlib.import_module("scenemetrics.prism")
    extractor, head = _prism_parts(config)
    return prism.PRISMMMD(extractor, head, anchors=config.options["anchors"])


_PRISM_PACKAGE = _package_requirement(
    "scenemetrics.prism", "PRISMDistance", "PRISM", (("diffusers", "prism"), ("transformers", "prism"))
)


def prism_requirement(config: MetricConfig) -> str | None:
    """Why PRISM cannot run here (package or extra missing; random weights without a local ``model``), or ``None``."""
    reason = _PRISM_PACKAGE(config)
    if reason is None and config.random_weights and config.options.get("model") is None:
        flag = config.flag("model")
        reason = f"PRISM has no random-weight helper; with --random-weights pass a local Zero123 folder ({flag})"
    return reason


_PRISM_ADAPTER = {
    "family": "prism",
    "higher_is_better": False,
    "requires": prism_requirement,
    "square": True,
    "pose": "scenemetrics.prism:camera_pose",
}
register_metric(
    "prism",
    build_prism,
    options=_PRISM_OPTIONS,
    inputs=("gt", "cameras"),
    description="PRISM distance D in [0, 1] between (source, pose, render) and (source, pose, ground truth)",
    update="prism_distance",
    metric_class="scenemetrics.prism.metric:PRISMDistance",
    **_PRISM_ADAPTER,
)
register_metric(
    "prism_mmd",
    build_prism_mmd,
    options=(
        *_PRISM_OPTIONS,
        Option(
            "anchors",
            Path,
            None,
            "anchor embeddings of ground-truth triplets, from `scenemetrics prism embed ... --anchors-out FILE`",
            required=True,
        ),
    ),
    inputs=("cameras",),
    description="PRISM MMD^2 between the (source, pose, render) embeddings and an anchor set of ground-truth triplets",
    per_view=False,
    update="prism_mmd",
    metric_class="scenemetrics.prism.metric:PRISMMMD",
    **_PRISM_ADAPTER,
)


# ---- ssim_map, lpips_map, abs_error (scenemetrics.fullref: per-pixel maps of full-reference scores) ------------------


def build_lpips_map(config: MetricConfig) -> Any:
    """:class:`scenemetrics.fullref.LPIPSMap` (spatial LPIPS); with random weights, a random backbone (seed 0, the
    same file the ``lpips`` metric uses) and the published linear layers (bundled with torchmetrics)."""
    from scenemetrics.fullref import LPIPSMap

    return LPIPSMap(**_lpips_kwargs(config))


register_metric(
    "ssim_map",
    "scenemetrics.fullref.metric:SSIMMap",
    options=[
        Option("data_range", float, 1.0, "the L of C1 = (0.01 L)^2, C2 = (0.03 L)^2 (1: images in [0, 1])", low=1e-6)
    ],
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM (torchmetrics' definition) of each render vs its ground truth, with its per-pixel SSIM map",
    update="paired",
    metric_class="scenemetrics.fullref.metric:SSIMMap",
    pictures=("map",),
)
register_metric(
    "lpips_map",
    build_lpips_map,
    # family "lpips": --lpips-net and --lpips-weights set both LPIPS metrics (one backbone file for score and map)
    family="lpips",
    options=_LPIPS_OPTIONS,
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS (lpips package's definition) of each render vs its ground truth, with its spatial LPIPS map",
    update="paired",
    metric_class="scenemetrics.fullref.metric:LPIPSMap",
    pictures=("map",),
)
register_metric(
    "abs_error",
    "scenemetrics.fullref.metric:AbsErrorMap",
    inputs=("gt",),
    higher_is_better=False,
    description="mean absolute error of each render vs its ground truth, with its map |render - gt| (RGB mean)",
    update="paired",
    metric_class="scenemetrics.fullref.metric:AbsErrorMap",
    pictures=("map",),
)


# ---- baselines (scenemetrics.baselines): distribution distances, PRISM's joint variants, embedding similarities ----
# One contiguous block: the options of each embedding family are declared once (`_INCEPTION_OPTIONS`, ...), shared by
# the metrics of that family, so `--inception-weights`, `--clip-model` and `--dino-model` set every metric using it.

_INCEPTION_OPTIONS = (
    Option("weights", Path, None, "FID InceptionV3 checkpoint, file or folder (default: hub cache, then download)"),
    Option(
        "tf_resize",
        bool,
        False,
        "resize to 299 px as torch-fidelity / the original TensorFlow FID (default: torchmetrics' antialiased resize)",
    ),
)
_KID_OPTIONS = (
    Option("subsets", int, 100, "random subsets KID averages over", low=1),
    Option("subset_size", int, 1000, "embeddings per subset (reduced to the smaller set, warned)", low=1),
    Option("seed", int, 0, "seed of the subset draws"),
)
_CLIP_OPTIONS = (
    Option(
        "model", Path, None, "CLIP model: save_pretrained folder or hub id (default: openai/clip-vit-large-patch14-336)"
    ),
    Option("revision", str, None, "Hugging Face revision of the model"),
)
_CMMD_OPTIONS = (
    Option("biased", bool, False, "the biased V-statistic of google-research/cmmd's code (default: the unbiased MMD)"),
)
_DINO_OPTIONS = (
    Option("model", Path, None, "DINOv2 model: save_pretrained folder or hub id (default: facebook/dinov2-large)"),
    Option("revision", str, None, "Hugging Face revision of the model"),
    Option("image_size", int, 224, "side the images are resized to (a multiple of the 14 px patches)", low=14),
)

# name: (class, features, family, options, inputs, update kind, per view, higher is better, description)
_BASELINES: dict[str, tuple[str, str, str, tuple[Option, ...], tuple[str, ...], str, bool, bool, str]] = {
    "fid": ("FrechetDistance", "inception", "inception", _INCEPTION_OPTIONS, ("gt",), "paired", False, False,
            "FID between the renders and the ground-truth views of a scene (torch-fidelity InceptionV3, pool3)"),
    "kid": ("KernelDistance", "inception", "inception", _INCEPTION_OPTIONS + _KID_OPTIONS, ("gt",), "paired", False,
            False, "KID (unbiased cubic-kernel MMD², mean over subsets) between the renders and the ground truth"),
    "jfid": ("JointFrechetDistance", "inception", "inception", _INCEPTION_OPTIONS, ("gt", "cameras"), "joint", False,
             False, "joint FID of (source view, render) vs (source view, ground truth) pairs (PRISM's JFID)"),
    "cmmd": ("CMMD", "clip", "clip", _CLIP_OPTIONS + _CMMD_OPTIONS, ("gt",), "paired", False, False,
             "CMMD: 1000 x RBF MMD² (sigma 10) of CLIP embeddings, renders vs ground truth"),
    "jcmmd": ("JointCMMD", "clip", "clip", _CLIP_OPTIONS + _CMMD_OPTIONS, ("gt", "cameras"), "joint", False, False,
              "joint CMMD of (source view, render) vs (source view, ground truth) pairs (PRISM's JCMMD)"),
    "clip_s": ("EmbeddingSimilarity", "clip", "clip", _CLIP_OPTIONS, ("gt",), "paired", True, True,
               "CLIP-S: cosine of the CLIP embeddings of each render and its ground truth, averaged"),
    "clip_s_src": ("EmbeddingSimilarity", "clip", "clip", _CLIP_OPTIONS, ("cameras",), "vs_source", True, True,
                   "CLIP-S with the source view: cosine of the CLIP embeddings of each render and its source view"),
    "fd_dinov2": ("FrechetDistance", "dinov2", "dino", _DINO_OPTIONS, ("gt",), "paired", False, False,
                  "FD-DINOv2: Fréchet distance of DINOv2 ViT-L/14 CLS embeddings, renders vs ground truth"),
    "jfd_dinov2": ("JointFrechetDistance", "dinov2", "dino", _DINO_OPTIONS, ("gt", "cameras"), "joint", False, False,
                   "joint FD-DINOv2 of (source view, render) vs (source view, ground truth) pairs (PRISM's JFDD)"),
    "dino_sim": ("EmbeddingSimilarity", "dinov2", "dino", _DINO_OPTIONS, ("gt",), "paired", True, True,
                 "DINO similarity: cosine of the DINOv2 CLS embeddings of each render and its ground truth"),
    "dino_sim_src": ("EmbeddingSimilarity", "dinov2", "dino", _DINO_OPTIONS, ("cameras",), "vs_source", True, True,
                     "DINO similarity with the source view of each render"),
}  # fmt: skip

_BASELINE_EXTRAS = {
    "inception": (("torch_fidelity", "baselines"),),
    "clip": (("transformers", "baselines"), ("huggingface_hub", "baselines"), ("safetensors", "baselines")),
    "dinov2": (("transformers", "baselines"), ("huggingface_hub", "baselines"), ("safetensors", "baselines")),
}
_BASELINE_REQUIREMENTS = {
    features: _package_requirement("scenemetrics.baselines", "FrechetDistance", "baseline", extras)
    for features, extras in _BASELINE_EXTRAS.items()
}


def baseline_requirement(config: MetricConfig) -> str | None:
    """Why a baseline cannot run here (a package of the ``[baselines]`` extra its network needs is missing)."""
    return _BASELINE_REQUIREMENTS[_BASELINES[config.name][1]](config)


def _random_baseline_weights(features: str, config: MetricConfig) -> str:
    baselines = importlib.import_module("scenemetrics.baselines")
    path = config.work_dir / f"{config.name}-{features}-random"
    if features == "inception":
        return str(baselines.random_inception_checkpoint(path.with_suffix(".pth")))
    make = baselines.random_clip_folder if features == "clip" else baselines.random_dinov2_folder
    return str(make(path))


def build_baseline(config: MetricConfig) -> Any:
    """The :mod:`scenemetrics.baselines` metric registered as ``config.name``, with its family's options; with
    random weights a random checkpoint (Inception) or a small random ``transformers`` model (CLIP, DINOv2)."""
    baselines = importlib.import_module("scenemetrics.baselines")
    cls, features = _BASELINES[config.name][:2]
    opts = dict(config.options)
    kwargs: dict[str, Any] = {"weights": opts.pop("weights", None)}
    if "model" in opts:  # the CLIP / DINOv2 folder or hub id
        kwargs["weights"] = opts.pop("model")
    if config.random_weights and kwargs["weights"] is None:
        kwargs["weights"] = _random_baseline_weights(features, config)
    if "tf_resize" in opts:
        kwargs["antialias"] = not opts.pop("tf_resize")
    if "biased" in opts:
        kwargs["unbiased"] = not opts.pop("biased")
    kwargs.update(opts)  # revision, image_size, subsets, subset_size, seed: the constructor's own names
    return getattr(baselines, cls)(features, **kwargs)


def _register_baselines() -> None:
    for name, (cls, _, family, options, inputs, update, per_view, higher, text) in _BASELINES.items():
        register_metric(
            name,
            build_baseline,
            options=options,
            family=family,
            inputs=inputs,
            higher_is_better=higher,
            description=text,
            requires=baseline_requirement,
            per_view=per_view,
            update=update,
            metric_class=f"scenemetrics.baselines.metric:{cls}",
        )


_register_baselines()


# ---- the published protocols' SSIM and LPIPS (scenemetrics.fullref), and the protocols -----------------------------


def build_ssim_3dgs(config: MetricConfig) -> Any:
    """:class:`scenemetrics.fullref.SSIM3DGS`: SSIM as 3DGS's ``metrics.py`` (zero padding, mean over every pixel)."""
    from scenemetrics.fullref import SSIM3DGS

    return SSIM3DGS()


def build_ssim_nerfbaselines(config: MetricConfig) -> Any:
    """:class:`scenemetrics.fullref.SSIMNerfBaselines`: dm_pix's SSIM over the valid window positions."""
    from scenemetrics.fullref import SSIMNerfBaselines

    return SSIMNerfBaselines()


def _vgg_files(config: MetricConfig) -> dict[str, Any]:
    """The VGG16 backbone and linear layers of the fullref LPIPS metrics (a random backbone with random weights)."""
    kwargs = dict(config.kwargs)
    if config.random_weights:
        from scenemetrics.puzzlesim import random_checkpoint

        path = config.work_dir / f"{config.name}-vgg16-random.pth"
        kwargs["weights_path"] = random_checkpoint("vgg16", path, include_classifier=False)
    return kwargs


def build_lpips_vgg(config: MetricConfig) -> Any:
    """LPIPS-VGG of the ``lpips`` package on inputs scaled to [-1, 1] (:class:`scenemetrics.fullref.LPIPSMap`)."""
    from scenemetrics.fullref import LPIPSMap

    return LPIPSMap("vgg", keep_maps=False, **_vgg_files(config))


def build_lpips_3dgs(config: MetricConfig) -> Any:
    """:class:`scenemetrics.fullref.LPIPS3DGS`: LPIPS-VGG as 3DGS's ``metrics.py`` (inputs not scaled to [-1, 1])."""
    from scenemetrics.fullref import LPIPS3DGS

    return LPIPS3DGS(**_vgg_files(config))


_VGG_OPTIONS = (
    Option("weights", Path, None, "torchvision VGG16 checkpoint (file or folder)", argument="weights_path"),
    Option(
        "linear_weights",
        Path,
        None,
        "LPIPS v0.1 vgg.pth linear layers (file or folder; default: the hub's verified copy)",
        argument="linear_weights_path",
    ),
)
register_metric(
    "ssim_3dgs",
    build_ssim_3dgs,
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM as 3DGS's metrics.py reports it: Gaussian 11x11, zero padding, mean over every pixel",
    update="paired",
    metric_class="scenemetrics.fullref.metric:SSIM3DGS",
    pictures=(),  # a score per view, no map
)
register_metric(
    "ssim_nerfbaselines",
    build_ssim_nerfbaselines,
    inputs=("gt",),
    higher_is_better=True,
    description="SSIM as NerfBaselines (dm_pix) computes it: valid window positions only, variances clipped",
    update="paired",
    metric_class="scenemetrics.fullref.metric:SSIMNerfBaselines",
    pictures=(),  # a score per view, no map
)
register_metric(
    "lpips_vgg",
    build_lpips_vgg,
    options=_VGG_OPTIONS,
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS-VGG (lpips package, inputs scaled to [-1, 1]): NerfBaselines' lpips_vgg of Blender scenes",
    update="paired",
    pictures=(),  # a score per view, no map
)
register_metric(
    "lpips_3dgs",
    build_lpips_3dgs,
    options=_VGG_OPTIONS,
    inputs=("gt",),
    higher_is_better=False,
    description="LPIPS-VGG as 3DGS's metrics.py reports it: [0, 1] images fed without scaling to [-1, 1]",
    update="paired",
    metric_class="scenemetrics.fullref.metric:LPIPS3DGS",
    pictures=(),  # a score per view, no map
)
register_protocol(
    "scenemetrics",
    description="scenemetrics' own: torchmetrics' SSIM (reflect padding), LPIPS AlexNet on inputs in [-1, 1]",
)
register_protocol(
    "3dgs",
    {"ssim": "ssim_3dgs", "lpips": "lpips_3dgs"},
    description="3DGS metrics.py (Kerbl et al. 2023): zero-padded SSIM, LPIPS-VGG on unscaled [0, 1] inputs",
)
register_protocol(
    "nerfbaselines",
    {"ssim": "ssim_nerfbaselines"},
    options={"lpips": {"net": "alex"}},
    description="NerfBaselines 1.2.x: dm_pix's SSIM (valid positions), LPIPS AlexNet on inputs in [-1, 1]",
)


# ---- osim_patch_psnr, osim_patch_ssim, osim_patch_lpips, osim_patch_clip (OSIM's "Bbox Patch" baselines) ------------
#
# PSNR / SSIM / LPIPS / CLIP similarity inside each of OSIM's objects (detected on the ground truth, plus the given
# boxes), pooled per class and weighted by saliency exactly as OSIM (scenemetrics.osim.patches). The OSIM room holds
# the objects and the pooling, the fullref room SSIM and LPIPS; they meet here. Family "osim": --osim-detector,
# --osim-conf, --osim-boxes, ... set OSIM and its baselines alike.

_PATCH_LPIPS_OPTIONS = (
    Option("lpips_net", str, "alex", "LPIPS backbone of osim_patch_lpips", choices=("alex", "vgg", "squeeze")),
    Option(
        "lpips_weights",
        Path,
        None,
        "torchvision checkpoint of the LPIPS backbone (file, or folder with the linear layers too)",
    ),
)
_PATCH_CLIP_OPTIONS = (
    Option(
        "clip_model",
        Path,
        None,
        "CLIP model of osim_patch_clip: save_pretrained folder or hub id (default: openai/clip-vit-large-patch14-336)",
    ),
)


def _patch_ssim(config: MetricConfig) -> Any:
    fullref = importlib.import_module("scenemetrics.fullref")
    patches = importlib.import_module("scenemetrics.osim.patches")
    # fullref.ssim is torchmetrics' SSIM (reflect padding by 5 needs 6 pixels per side)
    return patches.PatchScore(fullref.ssim, "ssim", higher_is_better=True, min_side=6)


def _patch_lpips(config: MetricConfig) -> Any:
    import functools

    fullref = importlib.import_module("scenemetrics.fullref")
    patches = importlib.import_module("scenemetrics.osim.patches")
    net = config.options.get("lpips_net", "alex")
    spec = fullref.NETS[net]
    weights = config.options.get("lpips_weights")
    if config.random_weights:
        weights = _random_torchvision_features(spec.arch, config)
    fullref.load_lpips(net, weights)  # resolve and load the files now: a missing file fails before any view
    fn = functools.partial(fullref.lpips, net=net, weights_path=weights)
    return patches.PatchScore(fn, "lpips", higher_is_better=False, min_side=spec.min_side)


def _random_torchvision_features(arch: str, config: MetricConfig) -> str:
    from scenemetrics.puzzlesim import random_checkpoint

    path = config.work_dir / f"{config.name}-{arch}-random.pth"
    return str(random_checkpoint(arch, path, include_classifier=False))


def _patch_clip(config: MetricConfig) -> Any:
    """The cosine of the CLIP image embeddings of each render patch and its reference patch: the CLIP embedder of
    :mod:`scenemetrics.baselines` (the one ``clip_s`` and CMMD use; it resizes and centre-crops each patch to the
    model's square input), loaded on the metric's device (the scorer is not a submodule: ``.to()`` cannot move it)."""
    baselines = importlib.import_module("scenemetrics.baselines")
    patches = importlib.import_module("scenemetrics.osim.patches")
    model = config.options.get("clip_model")
    if config.random_weights and model is None:
        model = baselines.random_clip_folder(config.work_dir / f"{config.name}-clip-random")
    return patches.embedding_score(baselines.load_clip(model, device=config.device), "clip")


def _patch_psnr(config: MetricConfig) -> Any:
    return importlib.import_module("scenemetrics.osim.patches").psnr_score()


_PATCH_SCORES: Mapping[str, tuple[Callable[[MetricConfig], Any], tuple[Option, ...]]] = MappingProxyType(
    {
        "osim_patch_psnr": (_patch_psnr, ()),
        "osim_patch_ssim": (_patch_ssim, ()),
        "osim_patch_lpips": (_patch_lpips, _PATCH_LPIPS_OPTIONS),
        "osim_patch_clip": (_patch_clip, _PATCH_CLIP_OPTIONS),
    }
)


def build_osim_patches(config: MetricConfig) -> Any:
    """:class:`scenemetrics.osim.OSIMPatches` with the patch score of ``config.name``."""
    osim = importlib.import_module("scenemetrics.osim")
    score, own = _PATCH_SCORES[config.name]
    kwargs = _osim_kwargs(config, [o.keyword for o in own])
    return osim.OSIMPatches(score(config), **kwargs)


def _clip_requirement(config: MetricConfig) -> str | None:
    return osim_requirement(config) or _BASELINE_REQUIREMENTS["clip"](config)


for _name, _what, _best in (
    ("osim_patch_psnr", "PSNR (dB)", True),
    ("osim_patch_ssim", "SSIM", True),
    ("osim_patch_lpips", "LPIPS", False),
    ("osim_patch_clip", "CLIP cosine similarity", True),
):
    register_metric(
        _name,
        build_osim_patches,
        options=(*_OSIM_OBJECT_OPTIONS, *_PATCH_SCORES[_name][1]),
        family="osim",
        inputs=("gt",),
        higher_is_better=_best,
        description=f"{_what} inside each OSIM object (detected on the ground truth or given), pooled per class and "
        "weighted by saliency as OSIM (the paper's Bbox Patch baseline)",
        requires=_clip_requirement if _name == "osim_patch_clip" else osim_requirement,
        per_view=False,
        update="paired",
        feed=feed_objects,
        metric_class="scenemetrics.osim.metric:OSIMPatches",
        pictures=("objects",),
        class_names="scenemetrics.osim:COCO_POOLS",
    )
