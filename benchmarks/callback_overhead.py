"""Training time with and without ``SceneMetricsCallback`` on the reference workload; prints one JSON object.

R-CPU (the CPU workload of the library's overhead budget: evaluations every 500 steps cost at most 5 % of training
time): the tiny pure-PyTorch Gaussian-splat renderer (:mod:`scenemetrics.tiny_splat`), 1024 Gaussians, 16 training views
of 64×64, one view per Adam step, in a Lightning loop on 2 CPU threads; the callback runs PuzzleSim (SqueezeNet 1.1,
random weights: speed does not depend on the values) on 4 held-out views with the 16 training views as references, logs
the scalar, the colormapped maps and the render | target | error panels (the default ``panel_map="abs"``; their own
cost is measured by ``benchmarks/panel_overhead.py``) to TensorBoard.

Each repeat fits the same model twice from the same initialisation, without and with the callback
(``--every-n-steps`` during the benchmark, so that a short run contains evaluations), and times:

* ``train_step_s``: training time per step without the callback (``on_train_start`` to ``on_train_end``);
* ``eval_s``: one evaluation (render the eval views, update, compute, colormap, log), the first evaluation's
  one-time reference embedding excluded;
* ``reference_embed_s``: that one-time embedding;
* ``measured_overhead``: (training time with the callback − without − embedding) / training time without, at the
  benchmark's ``--every-n-steps``;
* ``overhead_at``: the amortised cost ``eval_s / (n · train_step_s)`` at ``n`` = 500 (the default schedule) and 50.

Medians over ``--repeats`` runs. ``--backend gsplat --device cuda`` runs the same loop with ``gsplat.rasterization``
(R-GPU-style; use ``--size``, ``--gaussians``, ``--train-views`` and ``--eval-views`` to scale it up).

Example:
    python benchmarks/callback_overhead.py --steps 30 --every-n-steps 10 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "examples")]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30, help="optimizer steps per fit")
    p.add_argument("--every-n-steps", type=int, default=10, help="evaluation period during the benchmark")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--gaussians", type=int, default=1024)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--train-views", type=int, default=16)
    p.add_argument("--eval-views", type=int, default=4)
    p.add_argument("--backend", choices=("tiny", "gsplat"), default="tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--log-maps", type=int, choices=(0, 1), default=1)
    return p


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    import lightning.pytorch as pl
    from callbacks_lightning_gsplat import gsplat_rasterize
    from callbacks_lightning_tiny_splat import TinySplatModule
    from lightning.pytorch.utilities import disable_possible_user_warnings

    import scenemetrics as sm
    from scenemetrics.callbacks import SceneMetricsCallback
    from scenemetrics.tiny_splat import make_splat_scene, render_gaussians

    disable_possible_user_warnings()
    tmp = Path(tempfile.mkdtemp(prefix="callback_overhead_"))
    weights = sm.puzzlesim.random_checkpoint("squeezenet1_1", tmp / "squeezenet1_1.pth")
    rasterize = gsplat_rasterize if args.backend == "gsplat" else render_gaussians
    scene = make_splat_scene(
        num_gaussians=512,
        num_train=args.train_views,
        num_eval=args.eval_views,
        size=args.size,
        seed=0,
        render_fn=rasterize,
        device=args.device,
    )
    accelerator = "gpu" if args.device.startswith("cuda") else "cpu"

    class Timer(pl.Callback):
        def on_train_start(self, trainer, module):
            self._sync()
            self.start = time.perf_counter()

        def on_train_end(self, trainer, module):
            self._sync()
            self.seconds = time.perf_counter() - self.start

        @staticmethod
        def _sync():
            if torch.cuda.is_available():
                torch.cuda.synchronize()

    def fit(with_callback: bool, repeat: int) -> tuple[float, list[float], float]:
        torch.manual_seed(repeat)
        model = TinySplatModule(scene, num_gaussians=args.gaussians, lr=0.01, seed=repeat, rasterize=rasterize)
        timer = Timer()
        callbacks: list = [timer]
        evals: list[float] = []
        embed = [0.0]
        if with_callback:
            metric = sm.PuzzleSim(weights_path=weights)
            original = metric.set_references

            def timed_set_references(refs):
                t0 = time.perf_counter()
                original(refs)
                embed[0] += time.perf_counter() - t0

            metric.set_references = timed_set_references
            cb = SceneMetricsCallback(
                {"puzzlesim": metric}, every_n_steps=args.every_n_steps, log_maps=bool(args.log_maps)
            )
            evaluate = cb._evaluate

            def timed_evaluate(trainer, module):
                Timer._sync()
                t0 = time.perf_counter()
                before = embed[0]
                out = evaluate(trainer, module)
                Timer._sync()
                evals.append(time.perf_counter() - t0 - (embed[0] - before))
                return out

            cb._evaluate = timed_evaluate
            callbacks.append(cb)
        trainer = pl.Trainer(
            max_steps=args.steps,
            accelerator=accelerator,
            devices=1,
            logger=pl.loggers.TensorBoardLogger(tmp / "tb", name=f"r{repeat}_{int(with_callback)}"),
            callbacks=callbacks,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model)
        return timer.seconds, evals, embed[0]

    fit(False, -1)  # warm-up: imports, allocator, first backbone load
    base, with_cb, evals, embeds = [], [], [], []
    for r in range(args.repeats):
        base.append(fit(False, r)[0])
        seconds, ev, emb = fit(True, r)
        with_cb.append(seconds)
        evals.extend(ev)
        embeds.append(emb)
    train_step_s = statistics.median(base) / args.steps
    eval_s = statistics.median(evals)
    embed_s = statistics.median(embeds)
    measured = [(w - b - e) / b for w, b, e in zip(with_cb, base, embeds, strict=True)]

    def sig(x: float) -> float:  # 4 significant digits
        return float(f"{x:.4g}")

    result = {
        "workload": "R-CPU" if args.backend == "tiny" and accelerator == "cpu" else f"{args.backend}-{args.device}",
        "gaussians": args.gaussians,
        "size": args.size,
        "train_views": args.train_views,
        "eval_views": args.eval_views,
        "threads": args.threads,
        "steps": args.steps,
        "repeats": args.repeats,
        "train_step_s": sig(train_step_s),
        "eval_s": sig(eval_s),
        "reference_embed_s": sig(embed_s),
        "measured_overhead": {
            "every_n_steps": args.every_n_steps,
            "ratio": sig(statistics.median(measured)),
            "train_s_without": sig(statistics.median(base)),
            "train_s_with": sig(statistics.median(with_cb)),
        },
        "overhead_at": {str(n): sig(eval_s / (n * train_step_s)) for n in (500, 50)},
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
