"""Zero123 / Zero123-XL loading (diffusers folders or Hugging Face hub ids) and the relative-pose helpers.

Two public diffusers layouts exist and both load here, component by component (no community pipeline code):

* ``kxic/zero123-xl`` style: the pose projection lives in ``cc_projection/`` with keys ``projection.weight`` /
  ``projection.bias`` (pickled ``.bin`` files on the ``main`` revision, safetensors in ``refs/pr/1``);
* ``ashawkey/zero123-xl-diffusers`` / ``bennyguo/zero123-xl-diffusers`` style: ``clip_camera_projection/`` with
  keys ``proj.weight`` / ``proj.bias`` (safetensors).

Poses follow Zero123's convention (``ldm/data/simple.py``): polar angle from the +z axis, azimuth
``atan2(y, x)`` in a z-up world, radius = distance to the origin, always *target minus source*.

Example:
    >>> import torch
    >>> from scenemetrics.prism import encode_pose, relative_pose
    >>> rel = relative_pose(torch.tensor([60.0, 350.0, 2.7]), torch.tensor([60.0, 10.0, 2.7]))
    >>> [round(v, 4) for v in rel.tolist()]
    [0.0, 20.0, 0.0]
    >>> [round(v, 4) + 0.0 for v in encode_pose(torch.tensor([0.0, 90.0, 0.0]))[0].tolist()]
    [0.0, 1.0, 0.0, 0.0]
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from scenemetrics.hub import WeightsNotFoundError, is_offline

__all__ = [
    "COMPONENTS",
    "DEFAULT_MODEL",
    "LAYOUTS",
    "LoadedZero123",
    "MissingProjectionError",
    "alphas_cumprod_from_config",
    "camera_pose",
    "check_pose",
    "detect_layout",
    "encode_pose",
    "load_projection",
    "load_zero123_components",
    "relative_pose",
    "require_extra",
    "resolve_model_folder",
    "select_repo_files",
    "spherical_from_c2w",
]

DEFAULT_MODEL = "ashawkey/zero123-xl-diffusers"
"""Hub id used when no model is given: the safetensors diffusers conversion of Zero123-XL."""

LAYOUTS = {"cc_projection": "projection.", "clip_camera_projection": "proj."}
"""Projection folder name -> key prefix of its ``nn.Linear`` weights."""

COMPONENTS = ("unet", "vae", "image_encoder", "scheduler")
"""Sub-folders every Zero123 diffusers folder must hold (besides one of :data:`LAYOUTS`)."""

_PRISM_EXTRA = "pip install 'scenemetrics[prism]'"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def require_extra(what: str, modules: Sequence[str] = ("diffusers", "transformers", "safetensors", "huggingface_hub")):
    """Import optional modules, or raise an ``ImportError`` naming the ``[prism]`` extra.

    Args:
        what: the feature that needs them (for the message).
        modules: module names to import.

    Returns:
        The imported modules, in order.
    """
    out = []
    for name in modules:
        try:
            out.append(importlib.import_module(name))
        except ImportError as err:
            raise ImportError(f"{what} needs the [prism] extra: {_PRISM_EXTRA} ({name} is missing)") from err
    return out


# ---------------------------------------------------------------------------------------------------------------
# poses


def _as_pose_tensor(pose: Any, name: str) -> Tensor:
    if isinstance(pose, Tensor):
        if pose.dtype == torch.bool or pose.is_complex():
            raise ValueError(f"`{name}` must be a real-valued tensor; received dtype {pose.dtype}")
        return pose
    try:
        return torch.as_tensor(pose, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"`{name}` must be a tensor of shape (B, 3) or (3,); received {type(pose).__name__}") from err


def encode_pose(pose: Tensor) -> Tensor:
    """Zero123's 4-d pose vector from ``(delta_polar_deg, delta_azimuth_deg, delta_radius)``.

    Args:
        pose: ``(B, 3)`` or ``(3,)`` relative pose, target minus source (see :func:`relative_pose`).

    Returns:
        ``(B, 4)`` float32 ``[rad(Δpolar), sin(rad(Δaz)), cos(rad(Δaz)), Δr]`` (computed in float64), on the
        input's device. A ``(3,)`` input gives ``(1, 4)``.

    Raises:
        ValueError: wrong shape or non-finite values.

    Example:
        >>> import torch
        >>> encode_pose(torch.zeros(2, 3)).tolist()
        [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    """
    p = _as_pose_tensor(pose, "pose")
    if p.ndim == 1:
        p = p.unsqueeze(0)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(
            "`pose` must have shape (B, 3) or (3,) = (delta_polar_deg, delta_azimuth_deg, delta_radius); "
            f"received shape {tuple(p.shape)}"
        )
    p = p.to(torch.float64)
    if p.numel() and not bool(torch.isfinite(p).all()):
        raise ValueError("`pose` contains NaN or infinite values")
    polar = torch.deg2rad(p[:, 0])
    az = torch.deg2rad(p[:, 1])
    return torch.stack([polar, torch.sin(az), torch.cos(az), p[:, 2]], dim=1).to(torch.float32)


def check_pose(pose: Tensor, batch_size: int) -> Tensor:
    """Validate a relative pose for a batch: ``(B, 3)``, or ``(3,)`` broadcast to the batch.

    Returns:
        ``(batch_size, 3)`` ``(delta_polar_deg, delta_azimuth_deg, delta_radius)`` on the pose's device, float32 or
        float64 (a float64 pose keeps its precision for :func:`encode_pose`).

    Raises:
        ValueError: another shape, or non-finite values. TypeError: not a tensor or number sequence.
    """
    p = _as_pose_tensor(pose, "pose")
    if p.device.type == "meta":
        raise ValueError("`pose` is on the meta device (it holds no data); pass a tensor on the CPU or a GPU")
    if p.ndim == 1 and p.shape[0] == 3:
        p = p.unsqueeze(0).expand(batch_size, 3)
    if p.ndim != 2 or tuple(p.shape) != (batch_size, 3):
        raise ValueError(
            f"`pose` must have shape ({batch_size}, 3) or (3,) = (delta_polar_deg, delta_azimuth_deg, delta_radius) "
            f"for a batch of {batch_size}; received shape {tuple(p.shape)}"
        )
    p = p.to(torch.float64 if p.dtype == torch.float64 else torch.float32)
    if p.numel() and not bool(torch.isfinite(p).all()):
        raise ValueError("`pose` contains NaN or infinite values")
    return p


def relative_pose(source_cam: Tensor, target_cam: Tensor) -> Tensor:
    """Relative pose of two spherical cameras, in the format :class:`~scenemetrics.prism.Zero123Features` takes.

    Args:
        source_cam: ``(..., 3)`` ``(polar_deg, azimuth_deg, radius)`` of the source view.
        target_cam: ``(..., 3)`` same for the target view (broadcast against ``source_cam``).

    Returns:
        ``(..., 3)`` ``(polar_t - polar_s, (az_t - az_s) mod 360, r_t - r_s)`` in the dtype of the inputs (float32 at
        least). The azimuth difference lies in ``[0, 360)``.

    Example:
        >>> import torch
        >>> relative_pose(torch.tensor([90.0, 0.0, 2.0]), torch.tensor([60.0, 270.0, 2.5])).tolist()
        [-30.0, 270.0, 0.5]
    """
    s = _as_pose_tensor(source_cam, "source_cam")
    t = _as_pose_tensor(target_cam, "target_cam")
    if s.shape[-1:] != (3,) or t.shape[-1:] != (3,):
        raise ValueError(
            "`source_cam` and `target_cam` must have shape (..., 3) = (polar_deg, azimuth_deg, radius); received "
            f"{tuple(s.shape)} and {tuple(t.shape)}"
        )
    dtype = torch.promote_types(torch.promote_types(s.dtype, t.dtype), torch.float32)
    s, t = s.to(dtype), t.to(dtype)
    d = t - s
    az = torch.remainder(d[..., 1], 360.0)
    az = torch.where(az >= 360.0, az - 360.0, az)  # remainder of a tiny negative number rounds up to 360
    return torch.stack([d[..., 0], az, d[..., 2]], dim=-1)


def spherical_from_c2w(c2w: Tensor) -> Tensor:
    """Spherical coordinates of camera centres, from camera-to-world matrices in a z-up world.

    Args:
        c2w: ``(..., 4, 4)`` (or ``(..., 3, 4)``) camera-to-world matrices; the camera centre is the translation
            column.

    Returns:
        ``(..., 3)`` ``(polar_deg, azimuth_deg, radius)`` with polar = ``atan2(sqrt(x^2 + y^2), z)`` measured from
        +z and azimuth = ``atan2(y, x)`` in ``(-180, 180]``.

    Example:
        >>> import torch
        >>> c2w = torch.eye(4)
        >>> c2w[:3, 3] = torch.tensor([0.0, 2.0, 0.0])
        >>> spherical_from_c2w(c2w).tolist()
        [90.0, 90.0, 2.0]
    """
    m = _as_pose_tensor(c2w, "c2w")
    if m.ndim < 2 or m.shape[-2] not in (3, 4) or m.shape[-1] != 4:
        raise ValueError(f"`c2w` must have shape (..., 4, 4) or (..., 3, 4); received {tuple(m.shape)}")
    m = m.to(torch.promote_types(m.dtype, torch.float32))
    x, y, z = m[..., 0, 3], m[..., 1, 3], m[..., 2, 3]
    xy = torch.sqrt(x * x + y * y)
    polar = torch.rad2deg(torch.atan2(xy, z))
    azimuth = torch.rad2deg(torch.atan2(y, x))
    radius = torch.sqrt(xy * xy + z * z)
    return torch.stack([polar, azimuth, radius], dim=-1)


_SPHERICAL_KEYS = ("polar_deg", "azimuth_deg", "radius")


def _spherical_camera(camera: Any, name: str) -> Tensor:
    if isinstance(camera, Mapping):
        if "c2w" in camera:
            return _spherical_camera(camera["c2w"], f"{name}['c2w']")
        if all(k in camera for k in _SPHERICAL_KEYS):
            return torch.tensor([float(camera[k]) for k in _SPHERICAL_KEYS], dtype=torch.float64)
        raise ValueError(
            f"`{name}` must hold 'c2w' (a camera-to-world matrix) or {', '.join(map(repr, _SPHERICAL_KEYS))}; "
            f"received the keys {sorted(camera)}"
        )
    matrix = camera if isinstance(camera, Tensor) else torch.tensor(camera, dtype=torch.float64)
    return spherical_from_c2w(matrix)


def camera_pose(source_camera: Any, target_camera: Any) -> Tensor:
    """The relative pose of two cameras, ``(1, 3)`` float32, as :class:`~scenemetrics.prism.PRISMDistance` and
    :class:`~scenemetrics.prism.PRISMMMD` take it (:func:`relative_pose` of their spherical coordinates).

    Each camera is a camera-to-world matrix ``(4, 4)`` or ``(3, 4)`` in a z-up world (a tensor is used at its own
    precision, float32 at least; a nested list is read as float64), a mapping ``{"c2w": matrix}``, or a mapping
    ``{"polar_deg", "azimuth_deg", "radius"}`` (the ``cameras.json`` entries of ``scenemetrics eval``).

    Raises:
        ValueError: a camera of another form or shape.

    Example:
        >>> camera_pose({"polar_deg": 60, "azimuth_deg": 10, "radius": 2}, {"polar_deg": 60, "azimuth_deg": 40,
        ...             "radius": 2}).tolist()
        [[0.0, 30.0, 0.0]]
    """
    source = _spherical_camera(source_camera, "source_camera")
    target = _spherical_camera(target_camera, "target_camera")
    return relative_pose(source, target).reshape(1, 3).float()


# ---------------------------------------------------------------------------------------------------------------
# resolving a folder or a hub id


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _hf_offline() -> bool:
    if _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE"):
        return True
    try:
        import huggingface_hub.constants as hf_constants
    except ImportError:
        return False
    return bool(getattr(hf_constants, "HF_HUB_OFFLINE", False))


def _weight_info(path: str) -> tuple[str, str | None] | None:
    """``(format, variant)`` of a weight file (``"safetensors"``/``"bin"``, shards and shard indexes included)."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".index.json"):
        name = name[: -len(".index.json")]
    name = re.sub(r"-\d{5}-of-\d{5}(?=\.(safetensors|bin)$)", "", name)
    for fmt in ("safetensors", "bin"):
        if name.endswith("." + fmt):
            stem = name[: -len(fmt) - 1]
            return fmt, (stem.split(".", 1)[1] if "." in stem else None)
    return None


def select_repo_files(files: Sequence[str], variant: str | None = None) -> list[str]:
    """Choose which files of a Zero123 hub repo to download.

    Only ``model_index.json`` and the folders ``unet``, ``vae``, ``image_encoder``, ``scheduler``, ``cc_projection``
    and ``clip_camera_projection`` are fetched (never ``safety_checker``). In a folder holding both safetensors and
    pickled ``.bin`` weights, only the safetensors files are taken. With ``variant`` (e.g. ``"fp16"``) a folder's
    ``*.<variant>.*`` weights are taken where they exist and the plain ones elsewhere.

    Args:
        files: every file of the repo (``huggingface_hub.list_repo_files``).
        variant: weight-file variant infix or ``None``.

    Returns:
        The exact file names to pass as ``allow_patterns``, in the repo's order.

    Example:
        >>> select_repo_files(["model_index.json", "unet/config.json", "unet/diffusion_pytorch_model.bin",
        ...                    "unet/diffusion_pytorch_model.safetensors", "safety_checker/model.safetensors"])
        ['model_index.json', 'unet/config.json', 'unet/diffusion_pytorch_model.safetensors']
    """
    keep = {f for f in files if f == "model_index.json"}
    for folder in (*COMPONENTS, *LAYOUTS):
        inside = [f for f in files if f.startswith(folder + "/")]
        weights = {f: info for f in inside if (info := _weight_info(f)) is not None}
        keep.update(f for f in inside if f not in weights)
        variants = {v for _, v in weights.values()}
        want = variant if variant in variants else None
        formats = {fmt for fmt, v in weights.values() if v == want}
        fmt = "safetensors" if "safetensors" in formats else "bin"
        keep.update(f for f, info in weights.items() if info == (fmt, want))
    return [f for f in files if f in keep]


def _looks_like_repo_id(text: str) -> bool:
    return bool(_REPO_ID.match(text)) and ".." not in text


def _hub_error(repo_id: str, reason: str, searched: Sequence[str] = ()) -> WeightsNotFoundError:
    url = f"https://huggingface.co/{repo_id}"
    hint = (
        ' kxic/* repos keep their safetensors weights in revision="refs/pr/1" (their main branch has pickled .bin '
        "files)."
        if repo_id.startswith("kxic/")
        else ""
    )
    msg = (
        f"Could not load the Zero123 model {repo_id!r} from the Hugging Face hub ({reason}). It is downloaded from "
        f"{url} into the Hugging Face cache; HF_HUB_OFFLINE=1 (or SCENEMETRICS_OFFLINE=1, local_files_only=True) "
        "only reads that cache. Download it once with network access, or pass the path of a local diffusers "
        f"folder.{hint}"
    )
    return WeightsNotFoundError(msg, filename=repo_id, searched=searched, url=url)


def resolve_model_folder(
    path_or_repo_id: str | os.PathLike | None = None,
    *,
    revision: str | None = None,
    variant: str | None = None,
    local_files_only: bool | None = None,
) -> tuple[Path, str]:
    """Find the local folder of a Zero123 diffusers model, downloading it from the hub if needed.

    Args:
        path_or_repo_id: a local diffusers folder, a hub repo id, or ``None`` for :data:`DEFAULT_MODEL`.
        revision: hub revision (branch, tag, commit or ``"refs/pr/1"``).
        variant: weight variant to prefer (e.g. ``"fp16"``).
        local_files_only: only read the Hugging Face cache. ``None`` means: only when ``HF_HUB_OFFLINE=1`` or
            ``SCENEMETRICS_OFFLINE=1`` is set (an explicit ``False`` cannot override those).

    Returns:
        ``(folder, source_id)`` where ``source_id`` is the path or repo id as given.

    Raises:
        WeightsNotFoundError: the path does not exist and is not a repo id, or the hub files are not cached
            offline / could not be downloaded. The message names the repo, its URL and ``HF_HUB_OFFLINE``.
    """
    source = DEFAULT_MODEL if path_or_repo_id is None else os.fspath(path_or_repo_id)
    local = Path(source).expanduser()
    if local.is_dir():
        return local, source
    if local.exists():
        raise WeightsNotFoundError(
            f"{source!r} is a file; Zero123Features.from_pretrained needs a diffusers folder (with unet/, vae/, "
            "image_encoder/, scheduler/ and cc_projection/ or clip_camera_projection/) or a Hugging Face repo id",
            filename=source,
            searched=[local],
        )
    if not _looks_like_repo_id(source):
        raise WeightsNotFoundError(
            f"the Zero123 folder {source!r} does not exist (and it is not a Hugging Face repo id such as "
            f"{DEFAULT_MODEL!r})",
            filename=source,
            searched=[local],
        )
    (hf,) = require_extra("Loading Zero123 from the Hugging Face hub", ("huggingface_hub",))
    offline = bool(local_files_only) or _hf_offline() or is_offline()
    try:
        if offline:
            folder = hf.snapshot_download(
                source,
                revision=revision,
                allow_patterns=["model_index.json", *(f"{c}/*" for c in (*COMPONENTS, *LAYOUTS))],
                local_files_only=True,
            )
        else:
            files = hf.list_repo_files(source, revision=revision)
            folder = hf.snapshot_download(source, revision=revision, allow_patterns=select_repo_files(files, variant))
    except Exception as err:
        reason = "offline and not in the Hugging Face cache" if offline else f"{type(err).__name__}: {err}"
        raise _hub_error(source, reason) from err
    return Path(folder), source


def detect_layout(folder: str | os.PathLike) -> str:
    """``"cc_projection"`` or ``"clip_camera_projection"``: which pose-projection layout a Zero123 folder uses.

    ``model_index.json`` decides when present; otherwise the folder name.

    Raises:
        ValueError: neither layout is found (the message lists what was found).
    """
    folder = Path(folder)
    index = folder / "model_index.json"
    found: list[str] = []
    if index.is_file():
        try:
            entries = json.loads(index.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{index} is not valid JSON: {err}") from err
        keys = [k for k in LAYOUTS if k in entries]
        if len(keys) > 1:
            keys = [k for k in keys if (folder / k).is_dir()] or keys
        if keys:
            return keys[0]
        found = sorted(k for k in entries if not k.startswith("_"))
        where = f"model_index.json lists {found}"
    else:
        keys = [k for k in LAYOUTS if (folder / k).is_dir()]
        if keys:
            return keys[0]
        found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        where = f"the folder holds {found}"
    raise ValueError(
        f"{folder} is not a Zero123 diffusers folder: it has no pose projection (expected a 'cc_projection' or "
        f"'clip_camera_projection' component); {where}"
    )


# ---------------------------------------------------------------------------------------------------------------
# components


class MissingProjectionError(WeightsNotFoundError, ValueError):
    """The pose projection (``cc_projection/`` or ``clip_camera_projection/``) folder or its weights are missing.

    Both a :class:`~scenemetrics.hub.WeightsNotFoundError` (a missing component of the folder) and a ``ValueError``
    (a Zero123 folder without its projection is not a usable layout).
    """


def _missing_component(folder: Path, source_id: str, component: str, detail: str = "") -> WeightsNotFoundError:
    url = f"https://huggingface.co/{source_id}" if _looks_like_repo_id(source_id) and source_id != str(folder) else None
    msg = f"the Zero123 model {source_id!r} ({folder}) lacks its {component!r} component{detail}"
    if url is not None:
        msg += f"; it is downloaded from {url} (HF_HUB_OFFLINE=1 only reads the Hugging Face cache)"
    cls = MissingProjectionError if component in LAYOUTS else WeightsNotFoundError
    return cls(msg, filename=f"{source_id}/{component}", searched=[folder / component], url=url)


def load_projection(
    folder: str | os.PathLike, layout: str, *, variant: str | None = None, source_id: str | None = None
) -> torch.nn.Linear:
    """Load the pose projection ``Linear(projection_dim + 4, cross_attention_dim)`` of either layout.

    Reads ``<layout>/diffusion_pytorch_model[.<variant>].safetensors`` or, failing that, the ``.bin`` file
    (``torch.load(weights_only=True)``). Sizes come from the weight tensor (kxic's config has none).

    Raises:
        ValueError: unknown layout, unknown or missing keys, or a malformed weight.
        MissingProjectionError: no weight file (a ``WeightsNotFoundError`` and a ``ValueError``).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"`layout` must be one of {sorted(LAYOUTS)}; received {layout!r}")
    folder = Path(folder)
    sub = folder / layout
    names = []
    if variant:
        names += [f"diffusion_pytorch_model.{variant}.safetensors", f"diffusion_pytorch_model.{variant}.bin"]
    names += ["diffusion_pytorch_model.safetensors", "diffusion_pytorch_model.bin"]
    path = next((sub / n for n in names if (sub / n).is_file()), None)
    if path is None:
        raise _missing_component(folder, source_id or str(folder), layout, f" weights (looked for {names})")
    if path.suffix == ".safetensors":
        (st,) = require_extra("Loading the Zero123 pose projection", ("safetensors.torch",))
        state = st.load_file(str(path))
    else:
        from scenemetrics.hub import load_torch_checkpoint

        state = load_torch_checkpoint(path)
        if not isinstance(state, dict):
            raise ValueError(f"{path} does not hold a state dict (received {type(state).__name__})")
    prefix = LAYOUTS[layout]
    expected = {prefix + "weight", prefix + "bias"}
    if set(state) != expected:
        raise ValueError(
            f"{path}: a {layout} projection must hold exactly the keys {sorted(expected)}; received {sorted(state)}"
        )
    weight, bias = state[prefix + "weight"], state[prefix + "bias"]
    if weight.ndim != 2 or bias.shape != (weight.shape[0],):
        raise ValueError(
            f"{path}: malformed projection, weight {tuple(weight.shape)} and bias {tuple(bias.shape)} (expected "
            "(out, in) and (out,))"
        )
    out_features, in_features = weight.shape
    linear = torch.nn.Linear(in_features, out_features)
    with torch.no_grad():
        linear.weight.copy_(weight.float())
        linear.bias.copy_(bias.float())
    return linear


def alphas_cumprod_from_config(config: dict[str, Any]) -> Tensor:
    """``ᾱ_t`` (float32, length ``num_train_timesteps``) of a diffusers scheduler config.

    Supports ``beta_schedule`` ``"scaled_linear"`` (LDM's "linear", used by Zero123) and ``"linear"``, and
    ``trained_betas``; the values equal diffusers' ``DDIMScheduler(...).alphas_cumprod``.

    Raises:
        ValueError: another schedule, or ``rescale_betas_zero_snr``.

    Example:
        >>> a = alphas_cumprod_from_config({"beta_start": 0.00085, "beta_end": 0.012,
        ...                                 "beta_schedule": "scaled_linear", "num_train_timesteps": 1000})
        >>> round(float(a[0]), 5), round(float(a[999]), 4)
        (0.99915, 0.0047)
    """
    steps = int(config.get("num_train_timesteps", 1000))
    if config.get("rescale_betas_zero_snr"):
        raise ValueError("schedulers with rescale_betas_zero_snr=True are not supported by Zero123Features")
    if config.get("trained_betas") is not None:
        betas = torch.tensor(config["trained_betas"], dtype=torch.float32)
    else:
        schedule = config.get("beta_schedule", "linear")
        start, end = float(config.get("beta_start", 0.0001)), float(config.get("beta_end", 0.02))
        if schedule == "scaled_linear":
            betas = torch.linspace(start**0.5, end**0.5, steps, dtype=torch.float32) ** 2
        elif schedule == "linear":
            betas = torch.linspace(start, end, steps, dtype=torch.float32)
        else:
            raise ValueError(
                f"unsupported beta_schedule {schedule!r} in the scheduler config (supported: 'scaled_linear', "
                "'linear', or trained_betas)"
            )
    return torch.cumprod(1.0 - betas, dim=0)


@dataclass
class LoadedZero123:
    """The components of a Zero123 folder, as :func:`load_zero123_components` returns them."""

    vae: torch.nn.Module
    unet: torch.nn.Module
    image_encoder: torch.nn.Module
    camera_projection: torch.nn.Linear
    alphas_cumprod: Tensor
    layout: str
    folder: Path


def load_zero123_components(
    folder: str | os.PathLike, *, variant: str | None = None, source_id: str | None = None
) -> LoadedZero123:
    """Load VAE, U-Net, CLIP image encoder, pose projection and noise schedule from a local diffusers folder.

    Components load in float32 on the CPU; the caller casts and places them.

    Raises:
        WeightsNotFoundError: a component folder or its weights are missing (for the projection, a
            :class:`MissingProjectionError`, which is also a ``ValueError``).
        ValueError: no projection layout, a projection whose size does not fit the CLIP encoder and U-Net, or an
            unsupported noise schedule.
    """
    diffusers, transformers = require_extra("Zero123Features.from_pretrained", ("diffusers", "transformers"))
    require_extra("Zero123Features.from_pretrained", ("safetensors",))
    folder = Path(folder)
    source_id = source_id or str(folder)
    layout = detect_layout(folder)
    for component in (*COMPONENTS, layout):
        if not (folder / component).is_dir():
            raise _missing_component(folder, source_id, component)

    def load(component: str, loader: Any, **kwargs: Any) -> Any:
        # say which format exists, so diffusers does not log a failed safetensors lookup for pickled folders
        safetensors_present = any((folder / component).glob("*.safetensors"))
        try:
            return loader.from_pretrained(
                str(folder),
                subfolder=component,
                local_files_only=True,
                use_safetensors=safetensors_present,
                **kwargs,
            )
        except OSError as err:  # diffusers/transformers report a missing weight/config file as OSError
            raise _missing_component(folder, source_id, component, f": {err}") from err

    vae = load("vae", diffusers.AutoencoderKL, variant=variant)
    unet = load("unet", diffusers.UNet2DConditionModel, variant=variant)
    image_encoder = load("image_encoder", transformers.CLIPVisionModelWithProjection, variant=variant)
    projection = load_projection(folder, layout, variant=variant, source_id=source_id)

    clip_dim = int(image_encoder.config.projection_dim)
    cross_dim = int(unet.config.cross_attention_dim)
    if projection.in_features != clip_dim + 4 or projection.out_features != cross_dim:
        raise ValueError(
            f"the {layout} projection of {source_id!r} maps {projection.in_features} -> {projection.out_features} "
            f"features, but the CLIP image embedding + pose needs {clip_dim} + 4 = {clip_dim + 4} inputs and the "
            f"U-Net's cross_attention_dim is {cross_dim}"
        )

    sched_cfg = folder / "scheduler" / "scheduler_config.json"
    if not sched_cfg.is_file():
        raise _missing_component(folder, source_id, "scheduler", " (scheduler/scheduler_config.json)")
    alphas = alphas_cumprod_from_config(json.loads(sched_cfg.read_text()))
    return LoadedZero123(vae, unet, image_encoder, projection, alphas, layout, folder)
