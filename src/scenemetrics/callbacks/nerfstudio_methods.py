"""nerfstudio method plugins ``nerfacto-scenemetrics`` and ``splatfacto-scenemetrics`` (entry-point targets).

Registered in ``pyproject.toml`` under ``[project.entry-points."nerfstudio.method_configs"]``. nerfstudio loads
this module while ``nerfstudio.configs.method_configs`` is still being imported (its ``method_configs`` dict already
holds the built-in methods then) and does not catch errors raised here, so this module imports nothing optional
beyond nerfstudio: metric backbones load at the first evaluation. The methods are nerfstudio's own ``nerfacto`` /
``splatfacto`` configs passed through :func:`scenemetrics.callbacks.nerfstudio.add_scenemetrics`, under new names
(never a built-in name, which would silently replace the built-in method).

``splatfacto-scenemetrics`` is always registered but trains only on CUDA (gsplat has no CPU rasterizer).
"""

from __future__ import annotations

from nerfstudio.configs.method_configs import method_configs
from nerfstudio.plugins.types import MethodSpecification

from scenemetrics.callbacks.nerfstudio import add_scenemetrics

__all__ = ["nerfacto_scenemetrics", "splatfacto_scenemetrics"]


def _method(base: str, name: str, description: str) -> MethodSpecification:
    config = add_scenemetrics(method_configs[base])
    config.method_name = name
    return MethodSpecification(config=config, description=description)


_WHAT = "+ scenemetrics (PuzzleSim / OSIM / PRISM scores and maps every --pipeline.scenemetrics.every-n-steps)"
nerfacto_scenemetrics = _method("nerfacto", "nerfacto-scenemetrics", f"nerfacto {_WHAT}")
splatfacto_scenemetrics = _method("splatfacto", "splatfacto-scenemetrics", f"splatfacto {_WHAT} (CUDA only)")
