"""Contrastive training of the PRISM projection head on a feature cache (Lightning).

The paper trains a two-layer MLP with a margin triplet loss (anchor = ground-truth triplet, positive = a plausible
inpainting, negatives = implausible inpaintings down-weighted by mask size and misaligned ground-truth views), AdamW,
batch size 32, 100 epochs, early stopping on the validation loss. Its learning rate is lost in the public text:
``lr=1e-4`` and ``weight_decay=1e-2`` here are our defaults, ``margin=1.0`` comes from a secondary summary.

Importing this module needs the ``[lightning]`` extra.

Example:
    >>> from scenemetrics.prism import train_head
    >>> result = train_head("cache/", "runs/head", epochs=100)  # doctest: +SKIP
    >>> result.head_path  # doctest: +SKIP
    PosixPath('runs/head/head.safetensors')
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

try:
    import lightning as L
    from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'the PRISM head trainer needs the [lightning] extra: pip install "scenemetrics[lightning]" (lightning is '
        "missing)"
    ) from _err

from scenemetrics.checks import check_int, check_number, check_positive, check_positive_int
from scenemetrics.prism.data import _check_thresholds, _triplets, read_feature_cache
from scenemetrics.prism.head import ProjectionHead

__all__ = [
    "EpochPermutationSampler",
    "PRISMFeatureDataModule",
    "PRISMHeadModule",
    "TrainHeadResult",
    "TripletFeatureDataset",
    "evaluate_head",
    "train_head",
    "triplet_loss",
]


def triplet_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, weight: Tensor, margin: float = 1.0
) -> tuple[Tensor, Tensor, Tensor]:
    """Weighted margin triplet loss on embeddings.

    ``l_i = max(||a_i - p_i|| - ||a_i - n_i|| + margin, 0)`` (``F.triplet_margin_loss``, p=2, eps=1e-6) and
    ``L = sum(w_i l_i) / sum(w_i)``.

    Returns:
        ``(L, l, correct)``: the weighted mean, the per-triplet losses, and the boolean per-triplet accuracy
        ``||a - p|| < ||a - n||``.
    """
    losses = F.triplet_margin_loss(anchor, positive, negative, margin=margin, p=2, eps=1e-6, reduction="none")
    weight = weight.to(losses.dtype)
    loss = (weight * losses).sum() / weight.sum().clamp_min(torch.finfo(losses.dtype).tiny)
    correct = torch.linalg.vector_norm(anchor - positive, dim=-1) < torch.linalg.vector_norm(anchor - negative, dim=-1)
    return loss, losses, correct


class TripletFeatureDataset(Dataset):
    """``(anchor, positive, negative, weight)`` items read from a memory-mapped feature cache.

    The memory map is opened lazily in each process, so the dataset pickles cheaply into DataLoader workers.
    """

    def __init__(self, features_path: str | os.PathLike, triplets: Sequence[tuple[int, int, int, float]]) -> None:
        self.features_path = Path(features_path)
        self.rows = np.asarray([t[:3] for t in triplets], dtype=np.int64).reshape(-1, 3)
        self.weights = np.asarray([t[3] for t in triplets], dtype=np.float32)
        self._features: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.weights)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_features": None}

    def _gather(self, rows: np.ndarray) -> Tensor:
        if self._features is None:
            self._features = np.load(self.features_path, mmap_mode="r")
        return torch.from_numpy(np.asarray(self._features[rows], dtype=np.float32))

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        a, p, n = self._gather(self.rows[i])
        return a, p, n, torch.tensor(self.weights[i])

    def __getitems__(self, indices: Sequence[int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """A whole batch in one memory-map read (DataLoader calls this with ``collate_fn=_batched``)."""
        idx = np.asarray(indices, dtype=np.int64)
        feats = self._gather(self.rows[idx].reshape(-1)).view(len(idx), 3, -1)
        return feats[:, 0], feats[:, 1], feats[:, 2], torch.from_numpy(self.weights[idx])


def _batched(batch: Any) -> Any:
    return batch


class EpochPermutationSampler(Sampler[int]):
    """Shuffles with ``torch.randperm(n, generator=Generator().manual_seed(seed + epoch))``.

    Lightning calls :meth:`set_epoch` every epoch, so a resumed run sees exactly the order of an uninterrupted one.
    """

    def __init__(self, num_items: int, seed: int = 0) -> None:
        self.num_items = num_items
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.num_items, generator=gen).tolist())

    def __len__(self) -> int:
        return self.num_items


class PRISMFeatureDataModule(L.LightningDataModule):
    """Train / val / test triplet loaders over a feature cache (``scenemetrics.prism.feature-cache/1``).

    Splits come from the anchors' ``split``. Without any ``"val"`` anchor, ``ceil(val_fraction * K)`` of the K train
    objects (at least 1 when ``val_fraction > 0``) are held out for validation: the first of
    ``torch.randperm(K, generator=Generator().manual_seed(seed))`` over the sorted object ids.

    Args:
        cache_dir: the feature cache.
        batch_size: triplets per batch.
        num_workers: DataLoader workers.
        val_fraction: fraction of train objects held out when the cache has no ``"val"`` anchors.
        seed: seed of the held-out choice and of the per-epoch shuffling (``seed + epoch``).
        min_mask_area / full_mask_area / max_misaligned: see :func:`~scenemetrics.prism.enumerate_triplets`.

    Attributes:
        feature_dim: the cache's feature size (available right after construction).
        val_objects: object ids used for validation.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike,
        *,
        batch_size: int = 32,
        num_workers: int = 0,
        val_fraction: float = 0.1,
        seed: int = 0,
        min_mask_area: float = 0.02,
        full_mask_area: float = 0.2,
        max_misaligned: int | None = None,
    ) -> None:
        super().__init__()
        check_positive_int(batch_size, "batch_size")
        check_number(val_fraction, "val_fraction", low=0.0, high=1.0, high_open=True)
        _check_thresholds(min_mask_area, full_mask_area)
        if max_misaligned is not None:
            check_int(max_misaligned, "max_misaligned", low=0)
        self.cache_dir = Path(cache_dir)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed
        index, _ = read_feature_cache(self.cache_dir)
        self.index = index
        self.feature_dim = int(index["feature_dim"])
        anchors = index["anchors"]
        train = [a for a in anchors if a["split"] == "train"]
        val = [a for a in anchors if a["split"] == "val"]
        test = [a for a in anchors if a["split"] == "test"]
        if not val and val_fraction > 0:
            objects = sorted({str(a.get("object", "")) for a in train})
            k = len(objects)
            n_val = min(k, max(1, math.ceil(val_fraction * k))) if k else 0
            perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed)).tolist()
            held = {objects[i] for i in perm[:n_val]}
            val = [a for a in train if str(a.get("object", "")) in held]
            train = [a for a in train if str(a.get("object", "")) not in held]
        self.val_objects = sorted({str(a.get("object", "")) for a in val})
        opts = (min_mask_area, full_mask_area, max_misaligned)
        self.train_triplets = _triplets(train, *opts)
        self.val_triplets = _triplets(val, *opts)
        self.test_triplets = _triplets(test, *opts)

    def setup(self, stage: str | None = None) -> None:
        if stage in (None, "fit"):
            if not self.train_triplets:
                raise ValueError(f"the feature cache {os.fspath(self.cache_dir)!r} has no training triplets")
            if not self.val_triplets:
                raise ValueError(
                    f"the feature cache {os.fspath(self.cache_dir)!r} yields no validation triplets (early stopping "
                    "needs them): add anchors with split 'val' or use val_fraction > 0 with several train objects"
                )

    def _loader(self, triplets: list, sampler: Sampler | None) -> DataLoader:
        return DataLoader(
            TripletFeatureDataset(self.cache_dir / "features.npy", triplets),
            batch_size=self.batch_size,
            sampler=sampler,
            shuffle=False,
            num_workers=self.num_workers,
            collate_fn=_batched,
            drop_last=False,
            persistent_workers=self.num_workers > 0,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_triplets, EpochPermutationSampler(len(self.train_triplets), self.seed))

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_triplets, None)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_triplets, None)


class PRISMHeadModule(L.LightningModule):
    """The projection head under a weighted margin triplet loss, optimised with AdamW (no scheduler).

    Args:
        in_dim / out_dim / hidden_dim: :class:`~scenemetrics.prism.ProjectionHead` sizes.
        lr: AdamW learning rate. The paper's value is lost; ``1e-4`` is our default for a ~21 M-parameter MLP with
            unit-norm outputs.
        weight_decay: AdamW weight decay (torch's default 1e-2; the paper gives none).
        margin: triplet margin (1.0, from a secondary summary of the paper).

    Attributes:
        head: the :class:`~scenemetrics.prism.ProjectionHead` (checkpoint keys ``head.fc1.weight``, ...).
        history: one dict per completed epoch: ``epoch`` (0-based), ``train_loss``, ``val_loss``,
            ``val_triplet_acc``; stored in checkpoints under ``"prism_history"``.
    """

    def __init__(
        self,
        in_dim: int = 8320,
        out_dim: int = 2048,
        hidden_dim: int = 2048,
        lr: float = 1e-4,
        weight_decay: float = 1e-2,
        margin: float = 1.0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.head = ProjectionHead(in_dim=in_dim, out_dim=out_dim, hidden_dim=hidden_dim)
        self.history: list[dict[str, Any]] = []
        self._sums = torch.zeros(5, dtype=torch.float64)  # train Σwℓ, Σw, val Σwℓ, Σw, correct
        self._val_count = 0

    def forward(self, features: Tensor) -> Tensor:
        return self.head(features)

    def _step(self, batch: Sequence[Tensor]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        a, p, n, w = batch
        emb = self.head(torch.cat([a, p, n]))
        ea, ep, en = emb.split(a.shape[0])
        loss, losses, correct = triplet_loss(ea, ep, en, w, self.hparams.margin)
        return loss, losses, correct, w

    def on_train_epoch_start(self) -> None:
        self._sums = torch.zeros(5, dtype=torch.float64)
        self._val_count = 0

    def training_step(self, batch: Sequence[Tensor], batch_idx: int) -> Tensor:
        loss, losses, _, w = self._step(batch)
        self._sums[0] += float((w * losses.detach()).sum())
        self._sums[1] += float(w.sum())
        return loss

    def validation_step(self, batch: Sequence[Tensor], batch_idx: int) -> None:
        _, losses, correct, w = self._step(batch)
        self._sums[2] += float((w * losses).sum())
        self._sums[3] += float(w.sum())
        self._sums[4] += float(correct.sum())
        self._val_count += int(correct.numel())

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        totals = torch.cat([self._sums, torch.tensor([float(self._val_count)], dtype=torch.float64)])
        totals = self.trainer.strategy.reduce(totals.to(self.device), reduce_op="sum").cpu()
        train_loss = float(totals[0] / totals[1]) if totals[1] > 0 else math.nan
        val_loss = float(totals[2] / totals[3]) if totals[3] > 0 else math.nan
        val_acc = float(totals[4] / totals[5]) if totals[5] > 0 else math.nan
        self.log("train/loss", train_loss, on_epoch=True, sync_dist=False)
        self.log("val/loss", val_loss, on_epoch=True, prog_bar=True, sync_dist=False)
        self.log("val/triplet_acc", val_acc, on_epoch=True, prog_bar=True, sync_dist=False)
        self.history.append(
            {
                "epoch": int(self.current_epoch),
                "train_loss": train_loss,
                "val_loss": val_loss,
                "val_triplet_acc": val_acc,
            }
        )

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay, betas=(0.9, 0.999)
        )

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["prism_history"] = [dict(h) for h in self.history]
        version = getattr(self.logger, "version", None) if self._trainer is not None else None
        if isinstance(version, int):
            checkpoint["prism_logger_version"] = version

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.history = [dict(h) for h in checkpoint.get("prism_history", [])]


class _HistoryWriter(Callback):
    """Copies ``module.history`` to ``history.json`` at every epoch end."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.is_global_zero:
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(pl_module.history, indent=1) + "\n")
            tmp.replace(self.path)


@dataclass
class TrainHeadResult:
    """What :func:`train_head` returns."""

    head: ProjectionHead
    head_path: Path
    best_checkpoint: Path
    last_checkpoint: Path
    epochs_completed: int
    best_val_loss: float
    history: list[dict[str, Any]] = field(default_factory=list)


def _head_from_checkpoint(path: Path) -> ProjectionHead:
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    hp = ckpt.get("hyper_parameters", {})
    state = {k.removeprefix("head."): v for k, v in ckpt["state_dict"].items() if k.startswith("head.")}
    head = ProjectionHead(
        in_dim=int(hp.get("in_dim", state["fc1.weight"].shape[1])),
        out_dim=int(hp.get("out_dim", state["fc2.weight"].shape[0])),
        hidden_dim=int(hp.get("hidden_dim", state["fc1.weight"].shape[0])),
    )
    head.load_state_dict(state)
    return head.eval()


def _make_logger(output_dir: Path, version: int | None = None) -> Any:
    """TensorBoard (CSV without tensorboard) logger under ``output_dir/logs``; ``version=None`` takes the next free."""
    if importlib.util.find_spec("tensorboard") is not None or importlib.util.find_spec("tensorboardX") is not None:
        from lightning.pytorch.loggers import TensorBoardLogger

        return TensorBoardLogger(output_dir, name="logs", version=version)
    from lightning.pytorch.loggers import CSVLogger

    return CSVLogger(output_dir, name="logs", version=version)


def _resume_logger_version(ckpt_path: Path, output_dir: Path) -> int | None:
    """The logger version a checkpoint was written under (fallback: the highest ``logs/version_N``)."""
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    version = ckpt.get("prism_logger_version")
    if isinstance(version, int):
        return version
    found = [
        int(p.name.removeprefix("version_"))
        for p in (output_dir / "logs").glob("version_*")
        if p.is_dir() and p.name.removeprefix("version_").isdigit()
    ]
    return max(found) if found else None


def _file_sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_PROVENANCE_KEYS = ("model", "timestep", "noise_seed", "image_size")


def _load_init_head(
    path: str | os.PathLike, feature_dim: int, hidden_dim: int | None, out_dim: int | None, extractor: dict
) -> ProjectionHead:
    head = ProjectionHead.load(path)
    if head.in_dim != feature_dim:
        raise ValueError(
            f"`init_head` {os.fspath(path)!r} takes {head.in_dim}-d features but the feature cache holds "
            f"{feature_dim}-d features (another extractor?)"
        )
    for name, want, have in (("hidden_dim", hidden_dim, head.hidden_dim), ("out_dim", out_dim, head.out_dim)):
        if want is not None and want != have:
            raise ValueError(f"`{name}`={want} does not match the `init_head` file's {name}={have}; omit {name}")
    try:
        theirs = json.loads(head.metadata.get("extractor", "{}"))
    except json.JSONDecodeError:
        theirs = {}
    if isinstance(theirs, dict) and theirs:
        diff = {
            k: (theirs.get(k), extractor.get(k))
            for k in _PROVENANCE_KEYS
            if k in theirs and k in extractor and theirs.get(k) != extractor.get(k)
        }
        if diff:
            warnings.warn(
                f"`init_head` was trained on features of another extractor setting (head vs cache: {diff}); "
                "fine-tuning starts from features it has not seen",
                UserWarning,
                stacklevel=3,
            )
    return head


def train_head(
    cache_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    epochs: int = 100,
    batch_size: int = 32,
    lr: float = 1e-4,
    weight_decay: float = 1e-2,
    margin: float = 1.0,
    hidden_dim: int | None = None,
    out_dim: int | None = None,
    patience: int = 10,
    val_fraction: float = 0.1,
    min_mask_area: float = 0.02,
    full_mask_area: float = 0.2,
    max_misaligned: int | None = None,
    seed: int = 0,
    resume: str | os.PathLike | None = None,
    init_head: str | os.PathLike | None = None,
    accelerator: str = "auto",
    devices: int | str = "auto",
    num_workers: int = 0,
    progress: bool = True,
) -> TrainHeadResult:
    """Train a PRISM projection head on a feature cache.

    Writes into ``output_dir``: ``checkpoints/best.ckpt`` (lowest ``val/loss``) and ``checkpoints/last.ckpt``
    (every epoch), ``history.json`` (every epoch), TensorBoard logs under ``logs/`` (CSV logs without tensorboard),
    and at the end ``head.safetensors`` (the best head, with the cache's extractor provenance and this config in
    its metadata) and ``config.json``.

    Args:
        cache_dir: a feature cache (:func:`~scenemetrics.prism.build_feature_cache`).
        output_dir: output folder (created).
        epochs: total number of epochs (Lightning's ``max_epochs``, counting epochs before a resume).
        batch_size / lr / weight_decay / margin: training settings.
        hidden_dim / out_dim: head sizes (``None``: 2048, or the ``init_head`` file's; a value that differs from
            the file's raises).
        patience: early-stopping patience on ``val/loss`` (our choice; the paper gives none).
        val_fraction / min_mask_area / full_mask_area / max_misaligned / seed / num_workers: see
            :class:`PRISMFeatureDataModule`.
        resume: ``None`` (fresh start; earlier checkpoints and history in ``output_dir`` are replaced), ``"last"``
            (``output_dir/checkpoints/last.ckpt``) or the path of a ``.ckpt``. Weights, optimiser state, epoch
            counters, early-stopping / checkpoint state and the history are restored; with the same seed on one
            device, training k epochs and resuming to N gives the weights of N uninterrupted epochs.
        init_head: a head file (:meth:`ProjectionHead.save`, e.g. an earlier ``head.safetensors``) to fine-tune:
            its weights are copied into the module before training, so the first optimisation step starts from
            exactly them (with a fresh AdamW state). Its ``in_dim`` must equal the cache's feature size. Its path and
            sha256 are recorded in ``config.json`` and the saved head's metadata. Not allowed with ``resume`` (the
            checkpoint already holds the weights).
        accelerator / devices: Lightning's. ``devices > 1`` uses DDP, whose distributed sampler replaces the
            per-epoch permutation (exact resume equality is then not promised).
        progress: show Lightning's progress bar.

    Returns:
        A :class:`TrainHeadResult` with the best head (eval mode, CPU).

    Raises:
        FileNotFoundError: the resume checkpoint or the ``init_head`` file does not exist.
        ValueError: bad settings, a cache without training or validation triplets, an ``init_head`` of the wrong
            size, or ``init_head`` together with ``resume``.

    TensorBoard: a fresh run writes to the next free ``logs/version_N``; its number is stored in the checkpoints, so
    a resumed run appends to the same folder (its steps continue from the restored global step).

    Example:
        >>> result = train_head("cache/", "runs/head", epochs=20, resume="last")  # doctest: +SKIP
    """
    for name, value in (("epochs", epochs), ("patience", patience)):
        check_positive_int(value, name)
    check_positive(margin, "margin", allow_zero=True)
    check_positive(lr, "lr")
    if init_head is not None and resume is not None:
        raise ValueError("`init_head` cannot be combined with `resume`: the checkpoint already holds the weights")
    if init_head is not None and not Path(init_head).is_file():
        raise FileNotFoundError(f"`init_head` file {os.fspath(init_head)!r} does not exist")
    output_dir = Path(output_dir)
    ckpt_dir = output_dir / "checkpoints"
    best_path, last_path = ckpt_dir / "best.ckpt", ckpt_dir / "last.ckpt"
    history_path = output_dir / "history.json"
    if resume is None:
        ckpt_path = None
    else:
        ckpt_path = last_path if str(resume) == "last" else Path(resume)
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"cannot resume: checkpoint {os.fspath(ckpt_path)!r} does not exist")
    output_dir.mkdir(parents=True, exist_ok=True)
    if ckpt_path is None:
        for stale in (best_path, last_path, history_path, output_dir / "head.safetensors", output_dir / "config.json"):
            stale.unlink(missing_ok=True)

    config = {
        "cache_dir": os.fspath(cache_dir),
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "weight_decay": weight_decay,
        "margin": margin,
        "hidden_dim": hidden_dim,
        "out_dim": out_dim,
        "patience": patience,
        "val_fraction": val_fraction,
        "min_mask_area": min_mask_area,
        "full_mask_area": full_mask_area,
        "max_misaligned": max_misaligned,
        "seed": seed,
        "resume": None if ckpt_path is None else os.fspath(ckpt_path),
        "init_head": None
        if init_head is None
        else {"path": os.fspath(init_head), "sha256": _file_sha256(Path(init_head))},
        "accelerator": accelerator,
        "devices": devices,
        "num_workers": num_workers,
    }
    L.seed_everything(seed, verbose=False)
    datamodule = PRISMFeatureDataModule(
        cache_dir,
        batch_size=batch_size,
        num_workers=num_workers,
        val_fraction=val_fraction,
        seed=seed,
        min_mask_area=min_mask_area,
        full_mask_area=full_mask_area,
        max_misaligned=max_misaligned,
    )
    datamodule.setup("fit")
    start_head = None
    if init_head is not None:
        start_head = _load_init_head(
            init_head, datamodule.feature_dim, hidden_dim, out_dim, datamodule.index.get("extractor", {}) or {}
        )
        hidden_dim, out_dim = start_head.hidden_dim, start_head.out_dim
    hidden_dim = 2048 if hidden_dim is None else hidden_dim
    out_dim = 2048 if out_dim is None else out_dim
    config["hidden_dim"], config["out_dim"] = hidden_dim, out_dim
    module = PRISMHeadModule(
        in_dim=datamodule.feature_dim,
        out_dim=out_dim,
        hidden_dim=hidden_dim,
        lr=lr,
        weight_decay=weight_decay,
        margin=margin,
    )
    if start_head is not None:
        module.head.load_state_dict(start_head.state_dict())
    checkpoint = ModelCheckpoint(
        dirpath=ckpt_dir,
        filename="best",
        monitor="val/loss",
        mode="min",
        save_last=True,
        enable_version_counter=False,
    )
    early = EarlyStopping(monitor="val/loss", mode="min", patience=patience)
    trainer = L.Trainer(
        max_epochs=epochs,
        accelerator=accelerator,
        devices=devices,
        logger=_make_logger(output_dir, None if ckpt_path is None else _resume_logger_version(ckpt_path, output_dir)),
        callbacks=[checkpoint, early, _HistoryWriter(history_path)],
        enable_progress_bar=progress,
        enable_model_summary=progress,
        num_sanity_val_steps=0,
        default_root_dir=output_dir,
        log_every_n_steps=1,
    )
    with warnings.catch_warnings():
        # a tiny cache has fewer batches than the logging interval and no DataLoader workers: both are fine here
        warnings.filterwarnings("ignore", message=r".*(does not have many workers|log_every_n_steps).*")
        if ckpt_path is not None:  # resuming writes into the existing checkpoint folder on purpose
            warnings.filterwarnings("ignore", message=r".*Checkpoint directory .* exists and is not empty.*")
        trainer.fit(module, datamodule=datamodule, ckpt_path=ckpt_path, weights_only=True)

    best = Path(checkpoint.best_model_path) if checkpoint.best_model_path else best_path
    head = _head_from_checkpoint(best)
    head_path = output_dir / "head.safetensors"
    if trainer.is_global_zero:
        head.save(
            head_path,
            metadata={
                "extractor": json.dumps(datamodule.index.get("extractor", {}), sort_keys=True),
                "trainer": json.dumps(config, sort_keys=True),
            },
        )
        (output_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    best_score = checkpoint.best_model_score
    return TrainHeadResult(
        head=head,
        head_path=head_path,
        best_checkpoint=best,
        last_checkpoint=last_path,
        epochs_completed=len(module.history),
        best_val_loss=float(best_score) if best_score is not None else math.nan,
        history=[dict(h) for h in module.history],
    )


def evaluate_head(
    cache_dir: str | os.PathLike,
    head: ProjectionHead | None,
    *,
    split: str = "test",
    margin: float = 1.0,
    min_mask_area: float = 0.02,
    full_mask_area: float = 0.2,
    max_misaligned: int | None = None,
    batch_size: int = 1024,
) -> dict[str, float]:
    """Weighted triplet loss and (unweighted) triplet accuracy of a head on one split of a feature cache.

    Args:
        cache_dir: the feature cache.
        head: the head, or ``None`` for normalised raw features.
        split: ``"train"``, ``"val"`` or ``"test"``.
        margin / min_mask_area / full_mask_area / max_misaligned: as in training.
        batch_size: triplets per forward pass.

    Returns:
        ``{"loss", "triplet_acc", "num_triplets"}`` (NaN loss and accuracy, with a ``UserWarning``, when the split
        has no triplet).
    """
    from scenemetrics.prism.data import enumerate_triplets
    from scenemetrics.prism.features import embed_features

    index, _ = read_feature_cache(cache_dir)
    triplets = enumerate_triplets(
        index, split, min_mask_area=min_mask_area, full_mask_area=full_mask_area, max_misaligned=max_misaligned
    )
    if not triplets:
        warnings.warn(f"the feature cache has no triplets in split {split!r}", UserWarning, stacklevel=2)
        return {"loss": math.nan, "triplet_acc": math.nan, "num_triplets": 0}
    data = TripletFeatureDataset(Path(cache_dir) / "features.npy", triplets)
    param = next(head.parameters(), None) if head is not None else None
    device = param.device if param is not None else torch.device("cpu")
    weighted = weights = correct = 0.0
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            a, p, n, w = data.__getitems__(range(start, min(start + batch_size, len(data))))
            emb = embed_features(torch.cat([a, p, n]).to(device), head)
            ea, ep, en = emb.split(a.shape[0])
            _, losses, ok = triplet_loss(ea, ep, en, w.to(device), margin)
            weighted += float((w.to(device) * losses).sum())
            weights += float(w.sum())
            correct += float(ok.sum())
    return {
        "loss": weighted / weights if weights > 0 else math.nan,
        "triplet_acc": correct / len(data),
        "num_triplets": len(data),
    }
