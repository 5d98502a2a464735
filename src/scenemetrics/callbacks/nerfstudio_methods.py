"""nerfstudio method plugins ``nerfacto-scenemetrics`` and ``splatfacto-scenemetrics`` (entry-point targets).

Registered in ``pyproject.toml`` under ``[project.entry-points."nerfstudio.method_configs"]``. nerfstudio loads
these attributes while ``nerfstudio.configs.method_configs`` is still being imported (its ``method_configs`` dict
already holds the built-in methods then) and does not catch errors raised here, so this module imports nothing
optional beyond nerfstudio (metric backbones load at the first evaluation) and builds the specifications lazily, on
attribute access: importing this module first and ``method_configs`` afterwards works too. The methods are
nerfstudio's own ``nerfacto`` / ``splatfacto`` configs passed through
:func:`scenemetrics.callbacks.nerfstudio.add_scenemetrics`, under new names (never a built-in name, which would
silently replace the built-in method).

``splatfacto-scenemetrics`` is always registered but trains only on CUDA (gsplat has no CPU rasterizer).

Example:
    >>> from scenemetrics.callbacks import nerfstudio_methods
    >>> nerfstudio_methods.nerfacto_scenemetrics.config.method_name
    'nerfacto-scenemetrics'
"""

from __future__ import annotations

from typing import Any

_WHAT = "+ scenemetrics (PuzzleSim / OSIM / PRISM scores and maps every --pipeline.scenemetrics.every-n-steps)"
# attribute -> (built-in method it extends, new method name, description)
_METHODS = {
    "nerfacto_scenemetrics": ("nerfacto", "nerfacto-scenemetrics", f"nerfacto {_WHAT}"),
    "splatfacto_scenemetrics": ("splatfacto", "splatfacto-scenemetrics", f"splatfacto {_WHAT} (CUDA only)"),
}
__all__ = sorted(_METHODS)  # the attributes are built by the module __getattr__


def __getattr__(name: str) -> Any:
    if name not in _METHODS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from nerfstudio.configs.method_configs import method_configs
    from nerfstudio.plugins.types import MethodSpecification

    from scenemetrics.callbacks.nerfstudio import add_scenemetrics

    if name in globals():  # built while importing method_configs above (its plugin discovery re-entered here)
        return globals()[name]
    base, method_name, description = _METHODS[name]
    config = add_scenemetrics(method_configs[base])
    config.method_name = method_name
    spec = MethodSpecification(config=config, description=description)
    globals()[name] = spec
    return spec


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
