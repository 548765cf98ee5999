"""Part 1 of the demo: a shipped model, untouched, on new GP tasks beside the exact GP.

The pretrained model (``tnpx.pretrained(name)``) is scored on the held-out test tasks of the
experiment it was trained on (its checkpoint records it), and the GP oracle is scored on the
same tasks with the kernel and hyper-parameters that generated each one: the best any model
can do. Nothing is trained, so this part takes seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..checkpoint import experiment_from_record, model_from_record, read_checkpoint
from ..data import batch_at, build_sampler
from ..data.synthetic.gp_composite import single_kernel_options
from ..evaluation.protocol import Metrics, build_test_sampler, evaluate
from ..gp.kernels import KERNELS
from ..models import build_model
from ..plot import plot_1d_tasks
from ..zoo import model_card, pretrained_path

# The zoo's best model (results/pretrained/zoo.md: the smallest gap on the single-kernel prior
# among the models calibrated beyond the context; tests/experiments/test_zoo_readme.py holds it
# to the report), scored on its prior's single-kernel half, whose tasks the printed lines
# describe by one kernel and lengthscale.
ZERO_SHOT_MODEL = "gp1d-v2-te-tnp-rope"
FIGURE = "zero_shot.png"


@dataclass
class TaskScore:
    """One plotted task: what generated it and both LLs per target point."""

    kernel: str
    lengthscale: float
    noise: float
    n_ctx: int
    model_ll: float
    oracle_ll: float

    def line(self, name: str) -> str:
        return (
            f"{self.kernel:>9s}, lengthscale {self.lengthscale:.2f}, noise {self.noise:.2f}, "
            f"{self.n_ctx} context points: {name} LL {self.model_ll:6.3f}, "
            f"exact GP LL {self.oracle_ll:6.3f}"
        )


@dataclass
class ZeroShot:
    """What part 1 found: the model, its metrics over the test tasks (with the oracle's), the
    plotted tasks one by one, the figure and the wall time."""

    name: str
    card: dict
    metrics: Metrics
    tasks: list[TaskScore]
    figure: Path
    seconds: float

    def summary(self) -> str:
        m = self.metrics
        return (
            f"over {m.n_tasks} test tasks: {self.name} LL {m.ll:.3f} ± {m.ll_se:.3f}, "
            f"exact GP LL {m.oracle_ll:.3f} ± {m.oracle_ll_se:.3f} "
            f"(gap {m.gap:.3f} ± {m.gap_se:.3f} nats per target)"
        )

    def as_dict(self) -> dict:
        return {
            "model": self.name,
            "seconds": self.seconds,
            "metrics": self.metrics.as_dict(),
            "plotted_tasks": [vars(t) for t in self.tasks],
        }


@torch.no_grad()
def _plotted_task_scores(model, sampler, n_tasks: int) -> list[TaskScore]:
    """The LLs of the tasks :func:`plot_1d_tasks` draws (batch 0 of the test split)."""
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    model_ll = model.log_likelihood(batch)
    oracle_ll = build_model("gp-oracle").log_likelihood(batch)
    info = batch.info
    return [
        TaskScore(
            kernel=KERNELS[int(info["kernel"][i])],
            lengthscale=float(info["lengthscale"][i]),
            noise=float(info["noise_ctx"][i]),
            n_ctx=batch.xc.shape[1],
            model_ll=float(model_ll[i]),
            oracle_ll=float(oracle_ll[i]),
        )
        for i in range(n_tasks)
    ]


def zero_shot(
    out_dir: Path, name: str = ZERO_SHOT_MODEL, n_batches: int = 8, n_tasks: int = 4
) -> ZeroShot:
    """Score and plot pretrained model ``name`` against the exact GP on its own prior.

    Args:
        out_dir: the figure goes to ``out_dir / "zero_shot.png"``.
        n_batches: test batches scored (of the batch size its experiment's ``eval`` names).
        n_tasks: tasks plotted (the first of test batch 0).
    """
    start = time.perf_counter()
    record = read_checkpoint(pretrained_path(name))
    model = model_from_record(record, name).eval()
    cfg = experiment_from_record(record)
    if cfg is None or cfg.data["name"] not in ("gp", "gp-composite") or model.dim_x != 1:
        raise ValueError(f"{name}: the zero-shot demo needs a shipped 1D GP model")
    sampler = build_test_sampler(cfg)
    if cfg.data["name"] == "gp-composite":  # its single-kernel half: tasks of one kernel each,
        # which the printed lines name (the first zoo's test tasks themselves)
        options = single_kernel_options(cfg.data_options(test=True))
        sampler = build_sampler("gp", cfg.eval.batch_size, cfg.eval.seed, **options)
    metrics = evaluate(model, sampler, n_batches)
    tasks = _plotted_task_scores(model, sampler, n_tasks)
    titles = [f"{t.kernel}, ℓ = {t.lengthscale:.2f}, {t.n_ctx} context points" for t in tasks]
    figure = plot_1d_tasks({name: model}, sampler, out_dir / FIGURE, n_tasks, titles=titles)
    return ZeroShot(name, model_card(name), metrics, tasks, figure, time.perf_counter() - start)
