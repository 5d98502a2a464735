"""What the callbacks evaluate: rendered views (render, optional target, extras) and the renderable protocol.

Example:
    >>> import torch
    >>> from scenemetrics.callbacks import RenderedView
    >>> from scenemetrics.callbacks.views import as_rendered_view, prepare_view
    >>> view = prepare_view(as_rendered_view((torch.rand(3, 8, 8) * 1.2, None), "demo"), "demo", 0)
    >>> tuple(view.render.shape), float(view.render.max()) <= 1.0
    ((1, 3, 8, 8), True)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch
from torch import Tensor

from scenemetrics.image import check_images

__all__ = [
    "RenderedView",
    "SceneRenderable",
    "as_rendered_view",
    "check_view",
    "is_one_shot",
    "normalize_view",
    "prepare_view",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class RenderedView(NamedTuple):
    """One evaluation view.

    Attributes:
        render: ``(3, H, W)`` or ``(B, 3, H, W)`` float RGB, nominally in [0, 1] (clamped before the metrics).
        target: ground truth of the same shape, or ``None`` for a view without one (metrics that need a target
            skip it).
        extras: optional per-view data, e.g. ``{"source": Tensor, "pose": Tensor}`` for PRISM metrics.

    Example:
        >>> import torch
        >>> RenderedView(torch.zeros(3, 4, 4)).target is None
        True
    """

    render: Tensor
    target: Tensor | None = None
    extras: Mapping[str, Any] = _EMPTY


@runtime_checkable
class SceneRenderable(Protocol):
    """A model the Lightning callback can evaluate by itself.

    ``render_view(view)`` is required. Optional, used when present: ``reference_views() -> Tensor`` ``(N, 3, H, W)``
    in [0, 1] (training images for cross-reference metrics such as PuzzleSim) and ``eval_views() -> Iterable`` (the
    default view list). ``view`` is whatever the evaluation list holds (an index, a camera, a dict); the callback
    never looks inside it.

    Example:
        >>> import torch
        >>> class Model:
        ...     def render_view(self, view):
        ...         return torch.zeros(3, 4, 4), None
        >>> isinstance(Model(), SceneRenderable)
        True
    """

    def render_view(self, view: Any) -> RenderedView | tuple: ...


def as_rendered_view(item: Any, producer: str) -> RenderedView:
    """Normalise what a producer returned (a :class:`RenderedView`, a 2-tuple or a 3-tuple) to a ``RenderedView``.

    Raises:
        TypeError: anything else, naming ``producer`` and the received type.
    """
    if isinstance(item, RenderedView):
        return item
    if isinstance(item, tuple) and len(item) in (2, 3):
        extras = item[2] if len(item) == 3 else _EMPTY
        if extras is None:
            extras = _EMPTY
        if not isinstance(extras, Mapping):
            raise TypeError(f"{producer} returned extras of type {type(extras).__name__}; expected a Mapping")
        return RenderedView(item[0], item[1], extras)
    kind = f"tuple of length {len(item)}" if isinstance(item, tuple) else type(item).__name__
    raise TypeError(
        f"{producer} must return a RenderedView, a (render, target) tuple or a (render, target, extras) tuple; "
        f"received {kind}"
    )


def prepare_view(view: RenderedView, producer: str, index: int, *, clamp: bool = True) -> RenderedView:
    """Validate a rendered view and bring it to batch form (render clamped, target checked, never clamped).

    The two stages of :func:`normalize_view` (structure) and :func:`check_view` (values) in one call.

    Args:
        view: the view to check.
        producer: who produced it (for error messages), e.g. ``"pl_module.render_view"``.
        index: the view's position in the evaluation list (for error messages).
        clamp: clamp the render to [0, 1] (renders of a model under training routinely overshoot).

    Returns:
        A ``RenderedView`` whose render, target and ``extras["source"]`` are ``(B, 3, H, W)``.

    Raises:
        ValueError: render not ``(3, H, W)``/``(B, 3, H, W)``, not floating point, or not finite; target invalid
            (``scenemetrics.image`` rules, range included) or of another shape than the render.
    """
    return check_view(normalize_view(view, producer, index), producer, index, clamp=clamp)


def normalize_view(view: RenderedView, producer: str, index: int) -> RenderedView:
    """The checks of a view that need no look at its values: the render's type, shape and dtype; batch form.

    Nothing here waits for a GPU (no value is read), so a training thread can run it right after rendering and hand
    the view to a background worker, which runs :func:`check_view`.

    Raises:
        ValueError: render not a tensor, not ``(3, H, W)``/``(B, 3, H, W)``, or not floating point.
    """
    where = f"{producer} (view {index})"
    render = view.render
    if not isinstance(render, Tensor):
        raise ValueError(f"{where} returned a render of type {type(render).__name__}; expected a float tensor")
    if render.ndim == 3:
        render = render.unsqueeze(0)
    if render.ndim != 4 or render.shape[1] != 3:
        raise ValueError(
            f"{where} returned a render of shape {tuple(view.render.shape)}; expected (3, H, W) or (B, 3, H, W)"
        )
    if not render.is_floating_point():
        raise ValueError(f"{where} returned a render of dtype {render.dtype}; expected a floating-point tensor")
    target = view.target.detach() if isinstance(view.target, Tensor) else view.target
    extras = view.extras if view.extras is not None else _EMPTY
    source = extras.get("source")
    if isinstance(source, Tensor) and source.ndim == 3:
        extras = {**extras, "source": source.unsqueeze(0)}
    return RenderedView(render.detach(), target, extras)


def check_view(view: RenderedView, producer: str, index: int, *, clamp: bool = True) -> RenderedView:
    """The checks of a :func:`normalize_view`-ed view that read its values; the render clamped.

    Raises:
        ValueError: a render with NaN or infinite values; a target invalid (``scenemetrics.image`` rules, range
            included) or of another shape than the render.
    """
    where = f"{producer} (view {index})"
    render = view.render
    if render.numel() and not bool(torch.isfinite(render).all()):
        raise ValueError(f"{where} returned a render with NaN or infinite values")
    if clamp:
        render = render.clamp(0.0, 1.0)
    target = view.target
    if target is not None:
        target = check_images(target, f"target of {where}")
        if target.shape != render.shape:
            raise ValueError(
                f"target of {where} has shape {tuple(target.shape)} but the render has shape {tuple(render.shape)}"
            )
    return RenderedView(render, target, view.extras)


def is_one_shot(views: Any) -> bool:
    """True for iterators (generators, ``iter(list)``): they would be exhausted after the first evaluation."""
    return isinstance(views, Iterator)
