"""SceneMetricsCallback without a Trainer run: argument checks, schedule logic, checkpoint state."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("lightning")

from scenemetrics.callbacks import SceneMetricsCallback
from tests.utils.standin_metrics import MeanRender


def _callback(**kwargs) -> SceneMetricsCallback:
    kwargs.setdefault("eval_views", [0])
    return SceneMetricsCallback({"mean": MeanRender()}, **kwargs)


def _drive(cb: SceneMetricsCallback, steps: list[int], sanity: bool = False) -> list[int]:
    """Call on_train_batch_end once per batch with the given global_step sequence; return the evaluated steps."""
    evaluated: list[int] = []
    trainer = SimpleNamespace(sanity_checking=sanity, global_step=0, current_epoch=0)

    def fake_evaluate(tr, module):
        evaluated.append(tr.global_step)
        cb.last_eval_step = tr.global_step

    cb._evaluate = fake_evaluate
    for step in steps:
        trainer.global_step = step
        cb.on_train_batch_end(trainer, None, None, None, 0)
    return evaluated


def test_default_schedule_is_every_500_steps() -> None:
    cb = _callback()
    assert (cb.every_n_steps, cb.every_n_epochs) == (500, None)
    assert _drive(cb, list(range(1, 1201))) == [500, 1000]


def test_step_schedule_with_gradient_accumulation_and_resume() -> None:
    # accumulate_grad_batches=2: each global_step is seen by two batches; evaluate once per multiple of 5
    cb = _callback(every_n_steps=5)
    assert _drive(cb, [s for s in range(1, 21) for _ in range(2)]) == [5, 10, 15, 20]
    resumed = _callback(every_n_steps=5)
    resumed.load_state_dict({"last_eval_step": 10, "num_evaluations": 2})
    assert _drive(resumed, [10, 11, 12, 13, 14, 15, 16, 20]) == [15, 20]


def test_no_evaluation_while_sanity_checking() -> None:
    assert _drive(_callback(every_n_steps=5), [5, 10], sanity=True) == []
    cb = _callback(every_n_epochs=1, eval_at_start=True)
    called = []
    cb._evaluate = lambda tr, m: called.append(tr.global_step)
    sanity = SimpleNamespace(sanity_checking=True, global_step=0, current_epoch=0)
    cb.on_train_start(sanity, None)
    cb.on_train_epoch_end(sanity, None)
    assert called == []
    fresh = SimpleNamespace(sanity_checking=False, global_step=0, current_epoch=0)
    cb.on_train_start(fresh, None)
    assert called == [0]


def test_epoch_schedule() -> None:
    cb = _callback(every_n_epochs=2)
    called = []

    def fake(tr, m):
        called.append(tr.current_epoch)
        cb.last_eval_step = tr.global_step

    cb._evaluate = fake
    for epoch in range(5):
        cb.on_train_epoch_end(
            SimpleNamespace(sanity_checking=False, global_step=3 * (epoch + 1), current_epoch=epoch), None
        )
        cb.on_train_batch_end(
            SimpleNamespace(sanity_checking=False, global_step=500, current_epoch=epoch), None, 0, 0, 0
        )
    assert called == [1, 3]


def test_state_dict_and_state_key() -> None:
    cb = _callback(prefix="sm/")
    empty = {"ranges": {}, "strip": {}}
    assert cb.state_dict() == {"last_eval_step": -1, "num_evaluations": 0, "pictures": empty}
    cb.load_state_dict({"last_eval_step": 12, "num_evaluations": 3})  # a checkpoint from before the pictures' state
    assert cb.state_dict() == {"last_eval_step": 12, "num_evaluations": 3, "pictures": empty}
    ranges = {"sm/panel/0": [0.0, 0.25, 10, "abs_error", "rule"]}
    cb.load_state_dict({"last_eval_step": 12, "num_evaluations": 3, "pictures": {"ranges": ranges}})
    assert cb.state_dict()["pictures"]["ranges"] == ranges
    other = SceneMetricsCallback({"b": MeanRender(), "a": MeanRender()}, eval_views=[0])
    assert cb.state_key != other.state_key
    assert "sm/" in cb.state_key and "['a', 'b']" in other.state_key
    # the metrics belong to the callback, not to a model: nothing of them in the callback state either
    assert set(cb.state_dict()) == {"last_eval_step", "num_evaluations", "pictures"}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"every_n_steps": 5, "every_n_epochs": 1}, ValueError, "either"),
        ({"every_n_steps": 0}, ValueError, "every_n_steps"),
        ({"every_n_epochs": 1.5}, ValueError, "every_n_epochs"),
        ({"max_logged_images": -1}, ValueError, "max_logged_images"),
        ({"map_colormap": "nope"}, ValueError, "map_colormap"),
        ({"max_reference_views": 0}, ValueError, "max_reference_views"),
        ({"eval_views": (i for i in range(3))}, TypeError, "one-shot"),
        ({"eval_views": iter([0, 1])}, TypeError, "one-shot"),
        ({"eval_views": 3}, TypeError, "eval_views"),
        ({"references": "refs.png"}, TypeError, "references"),
        ({"render_fn": 1}, ValueError, "render_fn"),
    ],
)
def test_argument_errors(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        _callback(**kwargs)


def test_metric_argument_errors() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        SceneMetricsCallback({})
    with pytest.raises(ValueError, match=r"metrics\['x'\]"):
        SceneMetricsCallback({"x": torch.nn.Identity()})
    with pytest.raises(ValueError, match=r"'\.'"):
        SceneMetricsCallback({"psnr.db": MeanRender()})


def test_dataloader_and_callable_views_are_accepted() -> None:
    loader = torch.utils.data.DataLoader(list(range(4)), batch_size=2)
    assert _callback(eval_views=loader).eval_views is loader
    assert callable(_callback(eval_views=lambda trainer, module: []).eval_views)


def test_setup_warns_about_unsynced_metrics_under_ddp() -> None:
    cb = SceneMetricsCallback({"m": MeanRender(sync_on_compute=False)}, eval_views=[0])
    trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device("cpu")), world_size=2)
    module = SimpleNamespace(render_view=lambda view: (torch.zeros(3, 4, 4), None))
    with pytest.warns(UserWarning, match="sync_on_compute=False"):
        cb.setup(trainer, module, "fit")


@pytest.mark.parametrize(
    ("num_views", "world", "rank", "expected"),
    [
        (5, 2, 0, [0, 2, 4]),
        (5, 2, 1, [1, 3]),
        (4, 3, 2, [2]),
        (2, 3, 2, [0]),  # fewer views than ranks: rank 2 renders view 2 % 2 again
        (1, 4, 3, [0]),
        (0, 2, 1, []),
    ],
)
def test_views_are_sharded_by_index_and_padded(num_views, world, rank, expected) -> None:
    rendered = []

    def render_view(view):
        rendered.append(view)
        return torch.full((3, 4, 4), 0.5), None

    cb = _callback(eval_views=[f"view{i}" for i in range(num_views)])
    trainer = SimpleNamespace(world_size=world, global_rank=rank)
    module = SimpleNamespace(render_view=render_view)
    indices = [i for i, _, _ in cb._rendered_views(trainer, module)]
    assert indices == expected and rendered == [f"view{i}" for i in expected]
