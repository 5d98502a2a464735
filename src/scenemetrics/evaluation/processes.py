"""Where the evaluation runs: one plain process, or the processes of a Lightning Fabric (imported lazily).

Both offer the same small interface to the runner: ``rank``, ``world_size``, ``device``, ``broadcast(obj)``,
``all_gather(obj)`` and ``barrier()``.

Example:
    >>> from scenemetrics.evaluation.processes import LocalProcess
    >>> LocalProcess("cpu").all_gather(3)
    [3]
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scenemetrics.evaluation.config import EvalConfig

__all__ = ["FabricProcesses", "LocalProcess", "fabric_strategy", "make_fabric", "wants_processes"]


class LocalProcess:
    """One process without Lightning."""

    rank = 0
    world_size = 1

    def __init__(self, device: Any) -> None:
        self.device = device

    def broadcast(self, obj: Any) -> Any:
        return obj

    def all_gather(self, obj: Any) -> list:
        return [obj]

    def barrier(self) -> None:
        return None


class FabricProcesses:
    """Collectives over Fabric's process group."""

    def __init__(self, fabric: Any) -> None:
        self.fabric = fabric
        self.rank = fabric.global_rank
        self.world_size = fabric.world_size
        self.device = fabric.device

    def broadcast(self, obj: Any) -> Any:
        return self.fabric.broadcast(obj, src=0) if self.world_size > 1 else obj

    def all_gather(self, obj: Any) -> list:
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world_size > 1:
            self.fabric.barrier()


_LAUNCHER_SIZES = ("WORLD_SIZE", "SLURM_NTASKS")
"""Environment variables through which a launcher (torchrun, SLURM) says how many processes it started."""


def wants_processes(config: EvalConfig) -> bool:
    """Whether the run needs Lightning Fabric: several devices, nodes or a strategy asked for, or a launcher that
    started several processes. A single process runs without it (and never imports Lightning: its import, which
    imports all of torchmetrics' domains, costs seconds).

    Example:
        >>> from scenemetrics.evaluation.config import EvalConfig
        >>> wants_processes(EvalConfig(root="r", out="o")), wants_processes(EvalConfig(root="r", out="o", devices=2))
        (False, True)
    """
    devices = str(config.devices).strip().lower()
    single = devices in ("1", "auto") and config.num_nodes == 1 and config.strategy in ("auto", "single_device")
    return not single or _launched()


def _launched() -> bool:
    """Whether a launcher (torchrun, SLURM) started several processes."""
    return any(os.environ.get(k, "1").strip() not in ("", "0", "1") for k in _LAUNCHER_SIZES)


def fabric_strategy(config: EvalConfig, accelerator: str, devices: Any) -> str:
    """The strategy Fabric is given: ``config.strategy``, except that ``auto`` for several CPU processes on one Linux
    machine (no launcher) becomes ``ddp_fork``.

    Lightning's ``auto`` would start the other processes by re-running the command line (``ddp``): each then imports
    torch, torchvision, torchmetrics and Lightning again, about 6 CPU seconds here, and only after the first process
    has done so (the launch needs Lightning), so on the CPU two processes took longer than one on a folder of 24
    views. Forked processes start with every module already imported, and nothing has touched an accelerator yet.
    GPUs (CUDA cannot be forked once initialised), several nodes, launchers and other systems keep ``auto``.

    Example:
        >>> from scenemetrics.evaluation.config import EvalConfig
        >>> import sys
        >>> want = "ddp_fork" if sys.platform.startswith("linux") else "auto"
        >>> fabric_strategy(EvalConfig(root="r", out="o", devices=4), "cpu", 4) == want
        True
        >>> fabric_strategy(EvalConfig(root="r", out="o", devices=4, strategy="ddp"), "cpu", 4)
        'ddp'
    """
    strategy = str(config.strategy)
    several = isinstance(devices, int) and devices > 1
    if strategy != "auto" or not several or config.num_nodes != 1 or _launched():
        return strategy
    if not sys.platform.startswith("linux"):
        return strategy
    if accelerator == "auto":  # Fabric would choose a GPU when there is one
        import torch

        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    return "ddp_fork" if accelerator == "cpu" else strategy


def _accelerator(config: EvalConfig) -> tuple[str, Any]:
    devices: Any = str(config.devices).strip()
    if devices.isdigit():
        devices = int(devices)
    device = config.device
    if device is None:
        return "auto", devices
    dev = device.strip().lower()
    if dev in ("cpu", "cuda", "gpu", "mps"):
        return dev, devices
    if dev.startswith("cuda:") and dev[5:].isdigit():
        if devices not in (1, "1", "auto"):
            raise ValueError(f"--device {device!r} names one GPU; use --device cuda --devices {devices} for several")
        return "cuda", [int(dev[5:])]
    raise ValueError(f"--device must be cpu, cuda, cuda:N or mps; received {device!r}")


def make_fabric(config: EvalConfig) -> Any:
    """The Fabric ``config`` asks for; ``None`` for a single device when Lightning is not installed."""
    try:
        from lightning.fabric import Fabric
    except ImportError as err:
        if wants_processes(config):
            raise ImportError(
                "running on several devices or nodes (--devices/--num-nodes/--strategy) needs Lightning Fabric: "
                'pip install "scenemetrics[lightning]"'
            ) from err
        return None
    accelerator, devices = _accelerator(config)
    strategy = fabric_strategy(config, accelerator, devices)
    fabric = Fabric(
        accelerator=accelerator,
        devices=devices,
        num_nodes=config.num_nodes,
        strategy=strategy,
        precision="32-true",
    )
    starts_itself = any(k in strategy for k in ("spawn", "fork", "notebook"))  # no re-run of the command line
    relaunches = fabric.world_size > 1 and not starts_itself and "LOCAL_RANK" not in os.environ
    if relaunches and "eval" not in sys.argv[1:]:
        raise ValueError(
            f"--strategy {strategy!r} with {fabric.world_size} processes starts the others by re-running this "
            "program's command line, which is not `scenemetrics eval ...`; run the command from a shell, or use "
            "--strategy ddp_spawn (or ddp_fork on Linux) from Python"
        )
    return fabric
