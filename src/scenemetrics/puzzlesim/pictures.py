"""Pictures of PuzzleSim maps: the exact map for programs, coloured maps and overlays for people.

Example:
    >>> import tempfile, torch
    >>> from scenemetrics.puzzlesim.pictures import save_map_pngs
    >>> files = save_map_pngs(torch.rand(3, 32, 48), torch.rand(32, 48), tempfile.mkdtemp(), "view0")
    >>> sorted(files.items())
    [('map', 'maps/view0.png'), ('map_raw', 'maps/view0_raw.npy'), ('overlay', 'overlays/view0.png')]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from torch import Tensor

from scenemetrics import viz

__all__ = ["save_map_pngs"]


def save_map_pngs(
    image: Tensor,
    sim_map: Tensor,
    out: str | os.PathLike,
    name: str,
    colormap: str = "jet_r",
    *,
    panel: bool = False,
    extra_tiles: Sequence[tuple[str, Tensor]] = (),
) -> dict[str, str]:
    """Write the map of one image: exact values for programs and pictures for people.

    Files (paths returned relative to ``out``):

    * ``maps/<name>_raw.npy``: the map as float32 (``numpy.load``), exact;
    * ``maps/<name>.png``: the map, coloured on its 2nd-98th percentile, with a title and a colour bar of real values;
    * ``overlays/<name>.png``: the image, coloured where the map is low (likely artifacts), same colour bar;
    * ``panels/<name>.png`` when ``panel``: image | map | overlay (| ``extra_tiles``) in one picture.
    """
    out = Path(out)
    rng = viz.robust_range(sim_map)
    score = float(sim_map.mean())
    head = f"PuzzleSim map of {name} (score {score:.4f}, higher = more plausible)"
    paths = {
        "map_raw": viz.save_raw_map(sim_map, out / "maps" / f"{name}_raw.npy"),
        "map": viz.map_picture(sim_map, title=head, display_range=rng, colormap=colormap).save(
            out / "maps" / f"{name}.png"
        ),
        "overlay": viz.map_picture(
            sim_map,
            image=image,
            show=("overlay",),
            title=f"Likely artifacts in {name} (score {score:.4f})",
            display_range=rng,
            colormap=colormap,
        ).save(out / "overlays" / f"{name}.png"),
    }
    if panel:
        paths["panel"] = viz.map_picture(
            sim_map,
            image=image,
            show=("image", "map", "overlay"),
            title=head,
            display_range=rng,
            colormap=colormap,
            extra_tiles=extra_tiles,
        ).save(out / "panels" / f"{name}.png")
    return {k: v.relative_to(out).as_posix() for k, v in paths.items()}
