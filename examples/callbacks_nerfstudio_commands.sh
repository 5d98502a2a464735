#!/usr/bin/env bash
# nerfstudio with scenemetrics logging: the method plugins installed by `pip install "scenemetrics[nerfstudio]"`.
# Usage: bash examples/callbacks_nerfstudio_commands.sh path/to/blender_scene [gpu|cpu]
# Then: tensorboard --logdir outputs   (tags scenemetrics/puzzlesim, scenemetrics/puzzlesim/map/<i>, ...)
set -euo pipefail
scene="${1:?usage: $0 path/to/blender_scene [gpu|cpu]}"
mode="${2:-gpu}"

if [[ "$mode" == "gpu" ]]; then
  # splatfacto (gsplat, CUDA) with PuzzleSim and OSIM every 1000 iterations on 4 held-out views
  ns-train splatfacto-scenemetrics \
    --vis tensorboard \
    --pipeline.scenemetrics.metrics puzzlesim osim \
    --pipeline.scenemetrics.every-n-steps 1000 \
    --pipeline.scenemetrics.num-eval-views 4 \
    blender-data --data "$scene"
else
  # nerfacto on the CPU: torch implementation, no mixed precision; small model sizes keep it quick.
  # nerfacto builds LPIPS(alexnet): its torchvision weights must be cached in $TORCH_HOME/hub/checkpoints.
  ns-train nerfacto-scenemetrics \
    --machine.device-type cpu --pipeline.model.implementation torch --mixed-precision False \
    --max-num-iterations 300 --vis tensorboard --viewer.quit-on-train-completion True \
    --pipeline.datamanager.train-num-rays-per-batch 128 --pipeline.datamanager.eval-num-rays-per-batch 128 \
    --pipeline.model.log2-hashmap-size 14 --pipeline.model.num-levels 8 --pipeline.model.max-res 256 \
    --pipeline.model.num-nerf-samples-per-ray 24 --pipeline.model.num-proposal-samples-per-ray 64 32 \
    --pipeline.scenemetrics.metrics puzzlesim --pipeline.scenemetrics.every-n-steps 100 \
    --pipeline.scenemetrics.num-eval-views 1 \
    blender-data --data "$scene"
fi
# Offline weights: --pipeline.scenemetrics.puzzlesim-weights-path FILE, --pipeline.scenemetrics.osim-weights-path FILE,
# --pipeline.scenemetrics.prism-extractor-path DIR, --pipeline.scenemetrics.prism-head-path FILE.
