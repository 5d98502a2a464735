"""The metric contract: one harness that every public ``torchmetrics.Metric`` class of scenemetrics must pass.

In the spirit of torchmetrics' ``MetricTester``: each class is described once by a :class:`Case` (how to build it
cheaply from random-weight checkpoints in the official layouts, and three update batches), and the ``check_*``
functions below state the guarantees. ``tests/test_metric_contract.py`` runs every check on every case and fails
when a public Metric class has no case; ``ddp_worker`` runs all cases in one 2-process gloo group.

Image inputs are multiples of 1/256, exactly representable in float16, bfloat16, float32 and float64, so a metric
that computes in float32 (as every image metric here does) must give the *same* result for every input dtype.
"""

from __future__ import annotations

import copy
import datetime
import functools
import inspect
import io
import math
import os
import pickle
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torchmetrics import Metric

from tests.utils import extras

Batch = tuple[Any, ...]
Resources = Mapping[str, str]

PUBLIC_PACKAGE = "scenemetrics"


# ---------------------------------------------------------------------------------------------- discovery


def public_metric_classes(unreachable: list[str] | None = None) -> dict[str, type[Metric]]:
    """Every ``torchmetrics.Metric`` subclass reachable through a public name of ``scenemetrics``.

    Walks the package's ``__all__`` (lazy names included), and the ``__all__`` of every public scenemetrics module
    reached that way, recursively. Returns ``qualified class name -> class``. A name whose import fails because an
    optional extra is not installed (scenemetrics' ``ImportError`` naming ``pip install "scenemetrics[X]"``, for an X
    that is indeed missing) is left out and listed in ``unreachable``; any other import error is raised.
    """
    import importlib
    import types

    found: dict[str, type[Metric]] = {}
    seen: set[str] = set()
    todo = [importlib.import_module(PUBLIC_PACKAGE)]
    while todo:
        module = todo.pop()
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        for name in getattr(module, "__all__", ()):
            if name.startswith("_"):
                continue
            try:
                value = getattr(module, name)
            except ImportError as err:
                extra = extras.missing_extra_of(err)
                if extra is None:
                    raise
                if unreachable is not None:
                    unreachable.append(f"{module.__name__}.{name} (needs [{extra}])")
                continue
            if isinstance(value, types.ModuleType):
                if value.__name__.startswith(PUBLIC_PACKAGE + ".") or value.__name__ == PUBLIC_PACKAGE:
                    todo.append(value)
            elif isinstance(value, type) and issubclass(value, Metric) and value.__module__.startswith(PUBLIC_PACKAGE):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


# ---------------------------------------------------------------------------------------------- resources


def build_resources(root: str | os.PathLike) -> dict[str, str]:
    """Random-weight checkpoints in the official layouts, written once under ``root`` (paths as strings)."""
    from scenemetrics.osim.random import random_checkpoint as yolox_checkpoint
    from scenemetrics.puzzlesim import random_checkpoint as squeezenet_checkpoint

    root = Path(root)
    resources = {
        "squeezenet": str(squeezenet_checkpoint("squeezenet1_1", root / "squeezenet1_1.pth")),
        "alexnet": str(squeezenet_checkpoint("alexnet", root / "alexnet.pth", include_classifier=False)),
        "vgg16": str(squeezenet_checkpoint("vgg16", root / "vgg16.pth", include_classifier=False)),
        "yolox_nano": str(yolox_checkpoint("yolox_nano", root / "yolox_nano.pth", seed=0)),
    }
    if not extras.missing("prism"):  # a diffusers-format folder
        from scenemetrics.prism.random import random_checkpoint as zero123_checkpoint

        resources["zero123"] = str(zero123_checkpoint(root / "zero123"))
    if not extras.missing("baselines"):
        from scenemetrics.baselines import random_clip_folder, random_dinov2_folder

        resources["clip"] = str(random_clip_folder(root / "clip"))
        resources["dinov2"] = str(random_dinov2_folder(root / "dinov2"))
    return resources


def _images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    """``(n, 3, h, w)`` images whose values are k/256: exact in every float dtype."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 257, (n, 3, h, w), generator=g).float() / 256


@functools.cache
def _extractor(folder: str) -> Any:
    from scenemetrics.prism import Zero123Features

    return Zero123Features.from_pretrained(folder, image_size=64)


def _head() -> Any:
    from scenemetrics.prism import ProjectionHead

    torch.manual_seed(0)
    return ProjectionHead(in_dim=208, out_dim=16, hidden_dim=32)


# ---------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """How the harness builds and feeds one Metric class.

    Attributes:
        cls: the class.
        make: ``make(resources) -> metric``, cheap and deterministic (every DDP rank builds the same metric).
        batches: ``batches(resources) -> [batch, ...]`` (at least 3), each the positional ``update`` arguments.
        image_args: positions of image arguments (the dtype check converts them).
        error_names: per update argument, the name an error about it must mention (default: the parameter name).
        atol: tolerance of every comparison between two runs on the same data.
        slow: the checks of this case take more than a few seconds (a network forward per image).
        extras: the optional extras the case needs (skipped, naming them, without them).
    """

    cls: type[Metric]
    make: Callable[[Resources], Metric]
    batches: Callable[[Resources], list[Batch]]
    image_args: tuple[int, ...] = ()
    error_names: tuple[str, ...] | None = None
    atol: float = 1e-6
    slow: bool = False
    extras: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.cls.__name__

    def arg_names(self) -> tuple[str, ...]:
        if self.error_names is not None:
            return self.error_names
        params = list(inspect.signature(self.cls.update).parameters)[1:]
        return tuple(params)


def _puzzlesim(res: Resources) -> Metric:
    import scenemetrics as sm

    # screening="off": "auto" times a one-off bf16 GEMM probe on the CPU, slow on a loaded machine
    return sm.PuzzleSim(_images(3, 48, 48, seed=100), weights_path=res["squeezenet"], screening="off")


def _puzzlesim_batches(res: Resources) -> list[Batch]:
    return [(_images(n, 48, 40, seed=i),) for i, n in enumerate((2, 1, 3))]


@functools.cache
def _yolox(path: str) -> Any:
    from scenemetrics.osim import YOLOX

    model = YOLOX.from_official("yolox_nano", weights_path=path)
    model.input_size = 128  # a smaller letterbox than the official 416: same code path, a tenth of the pixels
    return model


def _osim(res: Resources) -> Metric:
    import scenemetrics as sm

    return sm.OSIM(model=_yolox(res["yolox_nano"]), conf_threshold=0.3, saliency="uniform")


def _osim_patches(res: Resources) -> Metric:
    from scenemetrics.osim import OSIMPatches, psnr_score

    return OSIMPatches(psnr_score(), model=_yolox(res["yolox_nano"]), conf_threshold=0.3, saliency="uniform")


def _osim_batches(res: Resources) -> list[Batch]:
    from scenemetrics.osim.random import synthetic_images

    refs = (synthetic_images(4, (96, 128), seed=3) * 256).round() / 256
    noise = _images(4, 96, 128, seed=7)
    preds = ((0.75 * refs + 0.25 * noise) * 256).round() / 256
    return [(preds[:2], refs[:2]), (preds[2:3], refs[2:3]), (preds[3:], refs[3:])]


def _prism_distance(res: Resources) -> Metric:
    import scenemetrics as sm

    return sm.PRISMDistance(_extractor(res["zero123"]), _head())


def _poses(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    polar, azimuth = torch.rand(n, generator=g) * 60 - 30, torch.rand(n, generator=g) * 360 - 180
    return torch.stack([polar, azimuth, torch.zeros(n)], 1)


def _prism_distance_batches(res: Resources) -> list[Batch]:
    out = []
    for i, n in enumerate((2, 1, 2)):
        out.append((_images(n, 64, 64, 10 * i), _images(n, 64, 64, 10 * i + 1), _images(n, 64, 64, 10 * i + 2),
                    _poses(n, i)))  # fmt: skip
    return out


def _prism_mmd(res: Resources) -> Metric:
    import scenemetrics as sm

    anchors = torch.randn(6, 16, generator=torch.Generator().manual_seed(5))
    return sm.PRISMMMD(_extractor(res["zero123"]), _head(), anchors=anchors)


def _prism_mmd_batches(res: Resources) -> list[Batch]:
    # 2 triplets per batch: forward() computes MMD on one batch, which needs >= 2 embeddings
    return [(_images(2, 64, 64, 20 + i), _images(2, 64, 64, 30 + i), _poses(2, 40 + i)) for i in range(3)]


def _wireframe(res: Resources) -> Metric:
    import scenemetrics as sm

    names = ("corner_f1", "edge_precision", "edge_f1", "wed", "spectral_l2", "chamfer", "corner_offset")
    return sm.WireframeMetrics(names, threshold=0.4, average="macro")


def _wireframe_batches(res: Resources) -> list[Batch]:
    from scenemetrics.wireframe import synthetic_houses

    gts = synthetic_houses(5, seed=1)
    rng = np.random.default_rng(2)
    preds = [(np.asarray(h.vertices) + rng.normal(0, 0.2, np.shape(h.vertices)), np.asarray(h.edges)[:-1]) for h in gts]
    pairs = [(torch.as_tensor(v), torch.as_tensor(e)) for v, e in preds]
    gt_pairs = [(torch.as_tensor(np.asarray(h.vertices)), torch.as_tensor(np.asarray(h.edges))) for h in gts]
    return [(pairs[:2], gt_pairs[:2]), (pairs[2:3], gt_pairs[2:3]), (pairs[3:], gt_pairs[3:])]


def _fullref_batches(res: Resources) -> list[Batch]:
    # LPIPS-alex needs 31 pixels per side; the SSIM classes take any size >= 11
    out = []
    for i, n in enumerate((2, 1, 3)):
        target = _images(n, 36, 40, seed=50 + i)
        preds = ((0.75 * target + 0.25 * _images(n, 36, 40, seed=60 + i)) * 256).round() / 256
        out.append((preds, target))
    return out


def _fullref(name: str) -> Callable[[Resources], Metric]:
    def make(res: Resources) -> Metric:
        import scenemetrics.fullref as fr

        if name == "LPIPSMap":
            return fr.LPIPSMap(weights_path=res["alexnet"])
        if name == "LPIPS3DGS":
            return fr.LPIPS3DGS(weights_path=res["vgg16"])
        return getattr(fr, name)()

    return make


def _ol3_scene(seed: int) -> dict:
    from tests.openlex3d.ol3_helpers import random_scene

    scene = random_scene(seed, dense=False, voxel=None)
    scene["pred_features"] = torch.from_numpy(scene["pred_features"])
    scene["text_features"] = torch.from_numpy(scene["text_features"])
    return scene


_SEG = ("pred_points", "pred_features", "pred_index", "gt_points", "gt_ids", "categories")


def _ol3_topn(res: Resources) -> Metric:
    import scenemetrics as sm

    s = _ol3_scene(0)
    return sm.OpenLex3DTopN(s["text_features"], s["prompts"], top_n=2, voxel_size=None)


def _ol3_ranking(res: Resources) -> Metric:
    import scenemetrics as sm

    s = _ol3_scene(0)
    return sm.OpenLex3DSetRanking(s["text_features"], s["prompts"], voxel_size=None)


def _ol3_seg_batches(res: Resources) -> list[Batch]:
    # every scene uses the text features and prompts of scene 0 (the metric's); their geometry and labels differ
    text = _ol3_scene(0)["text_features"]
    out = []
    for seed in (0, 1, 2):
        s = _ol3_scene(seed)
        assert torch.equal(s["text_features"], text) or seed != 0
        out.append(tuple(s[k] for k in _SEG))
    return out


def _ol3_retrieval(res: Resources) -> Metric:
    import scenemetrics as sm

    return sm.OpenLex3DRetrieval(top_k=3)


def _ol3_retrieval_batches(res: Resources) -> list[Batch]:
    from scenemetrics.openlex3d import RetrievalQuery

    out = []
    for seed in (0, 1, 2):
        s = _ol3_scene(seed)
        g = torch.Generator().manual_seed(seed)
        ids = [int(i) for i in np.unique(s["gt_ids"]) if i > 0]
        queries = [RetrievalQuery(f"level0_q{i}", f"q{i}", (i,)) for i in ids[:3]]
        query_features = torch.randn(len(queries), s["pred_features"].shape[1], generator=g)
        out.append((s["pred_points"], s["pred_features"], s["pred_index"], query_features, queries, s["gt_points"],
                    s["gt_ids"]))  # fmt: skip
    return out


def _baseline(cls_name: str, features: str, **kwargs: Any) -> Callable[[Resources], Metric]:
    def make(res: Resources) -> Metric:
        import scenemetrics.baselines as baselines

        extra = {"image_size": 28} if features == "dinov2" else {}  # 2 x 2 patches of the tiny model
        return getattr(baselines, cls_name)(features, weights=res[features], **extra, **kwargs)

    return make


def _baseline_batches(joint: bool = False, paired: bool = False) -> Callable[[Resources], list[Batch]]:
    """Renders and references of different sizes (and counts, unless ``paired``); with ``joint`` a source per pair."""

    def batches(res: Resources) -> list[Batch]:
        out: list[Batch] = []
        for i, n in enumerate((2, 3, 2)):
            m = n if paired or joint else n + 1 - i % 2
            preds, target = _images(n, 30, 36, 70 + i), _images(m, 28, 28, 80 + i)
            out.append((_images(n, 32, 32, 90 + i), preds, target) if joint else (preds, target))
        return out

    return batches


def cases() -> list[Case]:
    """One :class:`Case` per public Metric class."""
    import scenemetrics as sm

    return [
        Case(sm.PuzzleSim, _puzzlesim, _puzzlesim_batches, image_args=(0,)),
        Case(sm.OSIM, _osim, _osim_batches, image_args=(0, 1), slow=True),
        Case(
            sm.osim.OSIMPatches,
            _osim_patches,
            _osim_batches,
            image_args=(0, 1),
            error_names=("preds", "target"),
            atol=1e-5,
            slow=True,
        ),
        Case(sm.PRISMDistance, _prism_distance, _prism_distance_batches, image_args=(0, 1, 2), atol=1e-5, slow=True,
             extras=("prism",)),
        Case(sm.PRISMMMD, _prism_mmd, _prism_mmd_batches, image_args=(0, 1), atol=1e-5, slow=True, extras=("prism",)),
        Case(sm.WireframeMetrics, _wireframe, _wireframe_batches, error_names=("pred", "gt"), atol=1e-12),
        Case(sm.OpenLex3DTopN, _ol3_topn, _ol3_seg_batches, atol=1e-12),
        Case(sm.OpenLex3DSetRanking, _ol3_ranking, _ol3_seg_batches, atol=1e-12),
        Case(sm.OpenLex3DRetrieval, _ol3_retrieval, _ol3_retrieval_batches, atol=1e-12),
        *(
            Case(getattr(sm.fullref, name), _fullref(name), _fullref_batches, image_args=(0, 1))
            for name in ("SSIMMap", "AbsErrorMap", "LPIPSMap", "SSIM3DGS", "SSIMNerfBaselines", "LPIPS3DGS")
        ),
        # the baselines on tiny random transformers models (the FID Inception is checked in tests/baselines)
        *(
            Case(getattr(sm.baselines, cls), _baseline(cls, features), _baseline_batches(joint, paired),
                 image_args=(0, 1, 2) if joint else (0, 1), atol=1e-5, extras=("baselines",))
            for cls, features, joint, paired in (
                ("FrechetDistance", "dinov2", False, False),
                ("JointFrechetDistance", "dinov2", True, False),
                # equal set sizes: every subset is a whole set, so the value does not depend on the rows' order
                # (which differs between one process and a DDP gather)
                ("KernelDistance", "dinov2", False, True),
                ("CMMD", "clip", False, False),
                ("JointCMMD", "clip", True, False),
                ("EmbeddingSimilarity", "clip", False, True),
            )
        ),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------- comparisons


def as_floats(value: Any) -> dict[str, float]:
    """A ``compute()`` result (tensor or mapping of tensors) as ``key -> float``."""
    if isinstance(value, Mapping):
        return {str(k): float(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return {"": float(value)}
    raise AssertionError(f"compute() must return a scalar tensor or a mapping of them; received {type(value)}")


def assert_same(got: Any, expected: Any, atol: float, what: str = "") -> None:
    """Equal keys, equal values within ``atol`` (NaN equals NaN)."""
    a, b = (x if isinstance(x, dict) and all(isinstance(v, float) for v in x.values()) else as_floats(x)
            for x in (got, expected))  # fmt: skip
    assert a.keys() == b.keys(), f"{what}: keys differ: {sorted(a)} vs {sorted(b)}"
    for k in b:
        assert a[k] == pytest.approx(b[k], abs=atol, rel=0, nan_ok=True), f"{what}: {k!r}: {a[k]} != {b[k]}"


def quiet_compute(metric: Metric) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return metric.compute()


def quiet_update(metric: Metric, batches: Sequence[Batch]) -> Metric:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for batch in batches:
            metric.update(*batch)
    return metric


def map_tensors(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every tensor / numpy array inside tuples, lists and dicts (other leaves unchanged)."""
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a NamedTuple (e.g. RetrievalQuery): a leaf
        return obj
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def non_contiguous(x: Any) -> Any:
    """The same values as a strided (non-contiguous) view; 0-d and empty arrays are returned unchanged."""
    size = x.size if isinstance(x, np.ndarray) else x.numel()
    if x.ndim == 0 or size == 0:
        return x
    if isinstance(x, np.ndarray):
        out = np.stack([x, x], axis=-1)[..., 0]
        assert not out.flags["C_CONTIGUOUS"] or x.shape[-1] == 1
        return out
    out = torch.stack([x, x], dim=-1)[..., 0]
    assert not out.is_contiguous() or x.shape[-1] == 1
    return out


# ---------------------------------------------------------------------------------------------- checks


def _run(case: Case, res: Resources, batches: Sequence[Batch]) -> Any:
    return quiet_compute(quiet_update(case.make(res), batches))


_REFERENCE: dict[tuple, dict[str, float]] = {}


def reference(case: Case, res: Resources, which: slice | int) -> dict[str, float]:
    """The value of a fresh metric updated with ``case.batches(res)[which]`` (memoised: the checks share it)."""
    key = (case.name, tuple(sorted(res.items())), str(which))
    if key not in _REFERENCE:
        batches = case.batches(res)
        chosen = batches[which] if isinstance(which, slice) else [batches[which]]
        _REFERENCE[key] = as_floats(_run(case, res, chosen))
    return _REFERENCE[key]


def check_pickle(case: Case, res: Resources) -> None:
    """A pickled copy computes the same value and keeps accumulating like the original."""
    batches = case.batches(res)
    metric = quiet_update(case.make(res), batches[:2])
    clone = pickle.loads(pickle.dumps(metric))
    assert type(clone) is case.cls
    assert_same(quiet_compute(clone), quiet_compute(metric), case.atol, "pickled copy")
    quiet_update(clone, batches[2:])
    assert_same(quiet_compute(clone), reference(case, res, slice(None)), case.atol, "pickled copy, then update")


def check_torch_save(case: Case, res: Resources) -> None:
    """``torch.save`` of the whole module and load it back."""
    batches = case.batches(res)
    metric = quiet_update(case.make(res), batches[:2])
    buffer = io.BytesIO()
    torch.save(metric, buffer)
    buffer.seek(0)
    # weights_only=False is safe here only because this test reads back the bytes it has just written in the same
    # process; the library itself never unpickles (every loader uses weights_only=True)
    clone = torch.load(buffer, weights_only=False)
    assert type(clone) is case.cls
    assert_same(quiet_compute(clone), quiet_compute(metric), case.atol, "torch.save/torch.load")
    quiet_update(clone, batches[2:])
    assert_same(quiet_compute(clone), reference(case, res, slice(None)), case.atol, "torch.load, then update")


def check_deepcopy(case: Case, res: Resources) -> None:
    """A deep copy is independent: updating it leaves the original unchanged."""
    batches = case.batches(res)
    metric = quiet_update(case.make(res), batches[:2])
    before = quiet_compute(metric)
    clone = copy.deepcopy(metric)
    quiet_update(clone, batches[2:])
    assert_same(quiet_compute(metric), before, case.atol, "original after updating its deep copy")
    assert_same(quiet_compute(clone), reference(case, res, slice(None)), case.atol, "deep copy, then update")


def check_state_dict(case: Case, res: Resources) -> None:
    """With ``persistent(True)`` the state dict holds exactly the states and restores them in a fresh metric."""
    batches = case.batches(res)
    metric = quiet_update(case.make(res), batches)
    metric.persistent(True)
    state = metric.state_dict()
    assert set(state) == set(metric._defaults), f"state_dict holds more than the states: {sorted(state)}"
    fresh = case.make(res)
    fresh.persistent(True)
    fresh.load_state_dict(state)
    assert_same(quiet_compute(fresh), quiet_compute(metric), case.atol, "load_state_dict")
    # not persistent by default (torchmetrics' convention): a checkpoint of a model holding the metric stays small
    assert case.make(res).state_dict() == {}


def check_forward(case: Case, res: Resources) -> None:
    """``forward(batch)`` returns the batch's own value and accumulates like ``update``."""
    batches = case.batches(res)
    metric = case.make(res)
    for i, batch in enumerate(batches):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            value = metric(*batch)
        assert_same(value, reference(case, res, i), case.atol, f"forward(batch {i})")
    assert_same(quiet_compute(metric), reference(case, res, slice(None)), case.atol, "compute() after forward()")


def check_reset(case: Case, res: Resources) -> None:
    """``reset()`` restores every state's default; the metric then accumulates as if new."""
    batches = case.batches(res)
    metric = quiet_update(case.make(res), batches)
    metric.reset()
    for name, default in metric._defaults.items():
        state = getattr(metric, name)
        if isinstance(default, list):
            assert state == [], name
        else:
            assert torch.equal(state, default), name
    quiet_update(metric, batches[1:])
    assert_same(quiet_compute(metric), reference(case, res, slice(1, None)), case.atol, "after reset")


def check_compute_before_update(case: Case, res: Resources) -> None:
    """``compute()`` before any ``update`` returns NaN (counts 0) and warns with a ``UserWarning`` saying so."""
    metric = case.make(res)
    with pytest.warns(UserWarning) as record:
        value = metric.compute()
    assert any("nan" in str(w.message).lower() for w in record), [str(w.message) for w in record]
    for key, v in as_floats(value).items():
        assert math.isnan(v) or (key.startswith("n_") and v == 0), (key, v)


def check_input_dtypes(case: Case, res: Resources) -> None:
    """float16, bfloat16 and float64 images give the float32 result (the values are exact in every dtype).

    One batch only: the dtype matters where the input is read; the rest is the same float32 pipeline.
    """
    if not case.image_args:
        return
    batches = case.batches(res)[:1]
    expected = reference(case, res, 0)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        converted = [
            tuple(x.to(dtype) if i in case.image_args else x for i, x in enumerate(batch)) for batch in batches
        ]
        assert_same(_run(case, res, converted), expected, case.atol, f"{dtype} images")


def check_non_contiguous(case: Case, res: Resources) -> None:
    """Strided (non-contiguous) tensors and arrays give the same result as contiguous ones."""
    batches = case.batches(res)
    strided = [map_tensors(batch, non_contiguous) for batch in batches]
    assert_same(_run(case, res, strided), reference(case, res, slice(None)), case.atol, "non-contiguous inputs")


def _first_tensor_to_meta(obj: Any) -> tuple[Any, bool]:
    if isinstance(obj, torch.Tensor):
        return obj.to("meta"), True
    if isinstance(obj, (tuple, list)) and not hasattr(obj, "_fields"):
        items, done = [], False
        for x in obj:
            if not done:
                x, done = _first_tensor_to_meta(x)
            items.append(x)
        return type(obj)(items), done
    return obj, False


def check_meta_device(case: Case, res: Resources) -> None:
    """An input on the meta device (no data; on a CPU-only machine, the wrong device) is a ``ValueError`` naming it.

    Every update argument that holds a tensor is tried in turn, with the metric on the CPU.
    """
    batch = case.batches(res)[0]
    names = case.arg_names()
    tried = 0
    for i, name in enumerate(names[: len(batch)]):  # optional arguments the batch leaves out keep their defaults
        bad, changed = _first_tensor_to_meta(batch[i])
        if not changed:
            continue
        tried += 1
        metric = case.make(res)
        args = (*batch[:i], bad, *batch[i + 1 :])
        with pytest.raises(ValueError, match="meta") as info:
            metric.update(*args)
        assert name in str(info.value), f"the error does not name {name!r}: {info.value}"
    assert tried, f"{case.name}: no update argument holds a tensor; give the case tensor inputs"


CHECKS: dict[str, Callable[[Case, Resources], None]] = {
    "pickle": check_pickle,
    "torch_save": check_torch_save,
    "deepcopy": check_deepcopy,
    "state_dict": check_state_dict,
    "forward": check_forward,
    "reset": check_reset,
    "compute_before_update": check_compute_before_update,
    "input_dtypes": check_input_dtypes,
    "non_contiguous": check_non_contiguous,
    "meta_device": check_meta_device,
}


# ---------------------------------------------------------------------------------------------- DDP


def ddp_worker(rank: int, world: int, port: int, res: dict[str, str], out_dir: str) -> None:
    """One rank of the 2-process gloo check: every case in one process group, uneven shards.

    Rank 0 updates with batches 0 and 2, rank 1 with batch 1 only; ``compute()`` syncs the states, so every rank
    must return the value of one process that saw all batches. Results go to ``out_dir/rank<r>.pt``.
    """
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        results = {}
        for case in cases():
            if extras.missing(*case.extras):
                continue
            batches = case.batches(res)
            metric = quiet_update(case.make(res), batches[rank::world])
            results[case.name] = as_floats(quiet_compute(metric))
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()
