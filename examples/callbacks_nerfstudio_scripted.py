"""Train nerfacto (or splatfacto) from a Python script with scenemetrics logging: ``add_scenemetrics`` + ``main``.

``add_scenemetrics`` returns a copy of a nerfstudio ``TrainerConfig`` whose pipeline renders held-out views every
``every_n_steps`` iterations and logs PuzzleSim (and OSIM / PRISM when asked) to the writers nerfstudio was given
(``--vis``). The same options are CLI flags of the ``nerfacto-scenemetrics`` / ``splatfacto-scenemetrics`` methods
(see ``callbacks_nerfstudio_commands.sh``).

CPU example on a Blender-format scene (``transforms_train.json`` / ``transforms_val.json``)::

    python examples/callbacks_nerfstudio_scripted.py --data path/to/scene --blender --cpu --iterations 300 \\
        --every-n-steps 100 --puzzlesim-weights path/to/squeezenet1_1-b8a52dc0.pth
    tensorboard --logdir outputs

On the CPU nerfacto builds LPIPS(alexnet), whose torchvision weights must be in ``$TORCH_HOME/hub/checkpoints``
(downloaded once when online).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def build_config(args: argparse.Namespace):
    """The nerfstudio ``TrainerConfig`` this script trains."""
    from nerfstudio.configs.method_configs import method_configs
    from nerfstudio.data.dataparsers.blender_dataparser import BlenderDataParserConfig

    from scenemetrics.callbacks.nerfstudio import add_scenemetrics

    cfg = add_scenemetrics(
        method_configs[args.method],
        metrics=tuple(args.metrics),
        every_n_steps=args.every_n_steps,
        num_eval_views=args.eval_views,
        puzzlesim_weights=args.puzzlesim_weights,
    )
    cfg.method_name = f"{args.method}-scenemetrics"
    cfg.pipeline.datamanager.data = args.data
    if args.blender:
        cfg.pipeline.datamanager.dataparser = BlenderDataParserConfig()
    cfg.max_num_iterations = args.iterations
    cfg.vis = "tensorboard"
    cfg.output_dir = args.out
    cfg.viewer.quit_on_train_completion = True
    if args.cpu:
        if args.method != "nerfacto":
            raise SystemExit("only nerfacto trains on the CPU (splatfacto's gsplat rasterizer needs CUDA)")
        cfg.machine.device_type = "cpu"
        cfg.mixed_precision = False
        cfg.pipeline.model.implementation = "torch"
    return cfg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="scene folder")
    parser.add_argument("--method", choices=("nerfacto", "splatfacto"), default="nerfacto")
    parser.add_argument("--blender", action="store_true", help="Blender-format scene (default: nerfstudio format)")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (nerfacto only)")
    parser.add_argument("--iterations", type=int, default=30000)
    parser.add_argument("--metrics", nargs="+", choices=("puzzlesim", "osim", "prism"), default=["puzzlesim"])
    parser.add_argument("--every-n-steps", type=int, default=500)
    parser.add_argument("--eval-views", type=int, default=2)
    parser.add_argument("--puzzlesim-weights", type=Path, default=None, help="SqueezeNet 1.1 file (default: cache)")
    parser.add_argument("--out", type=Path, default=Path("outputs"))
    args = parser.parse_args(argv)

    from nerfstudio.scripts.train import main as ns_main

    ns_main(build_config(args))


if __name__ == "__main__":
    main()
