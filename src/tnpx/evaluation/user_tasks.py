"""Scores on a user's held-out tasks, in the user's units, beside two per-task baselines.

A model trained on a user's data (a ``table`` source, say) computes in the units its data
source normalised to (``value_model = (value - loc) / scale``, fitted on the training tasks).
:func:`evaluate_tasks` scores it on the source's test tasks in the data's own units: the LL per
target point shifts by ``-sum(log scale_y)``, the RMSE scales by ``scale_y`` per output, the
95 % coverage does not move. Beside it, on the same tasks: a GP fitted to each task's context
alone (the ``gp`` model, the ``gp`` extra) and the context's mean and std (``context-moments``),
with the model's LL less each baseline's paired over tasks (positive: the model is better).

Missing target outputs (``Batch.mask_yt``) count nowhere: the LL sums each target's observed
outputs (its shift too), an output's RMSE is over the targets where it is observed (tasks with
none of it left out of that output's mean), coverage over observed values. Both baselines read
only the observed context values, per output.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..batch import observed_mean, output_means
from ..data import TaskSampler, batch_at
from ..models import NeuralProcess, build_model
from .protocol import Z95, mean_se

BASELINES = ("gp", "context-moments")


@dataclass
class TaskMetrics:
    """One model's scores over ``n_tasks`` test tasks in the data's units: LL per target
    point and per-output RMSE (means ± s.e. over tasks), 95 % coverage, and the LL less each
    baseline's paired over the same tasks (``vs``: name -> (mean, s.e.))."""

    model: str
    n_tasks: int
    ll: float
    ll_se: float
    rmse: list[float]
    rmse_se: list[float]
    coverage95: float
    vs: dict[str, tuple[float, float]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def output_scale(sampler: TaskSampler, dim_y: int) -> np.ndarray:
    """``[dim_y]``: the data source's output scale (``normalisation["y"]["scale"]``), ones for
    a source that does not normalise (a prior's tasks are in their own units already)."""
    normalisation = getattr(sampler, "normalisation", None)
    if not normalisation:
        return np.ones(dim_y)
    return np.asarray(normalisation["y"]["scale"], dtype=np.float64)


@torch.no_grad()
def per_task(model: NeuralProcess, sampler: TaskSampler, n_batches: int) -> dict[str, np.ndarray]:
    """Per task of test batches ``0..n_batches-1``, in the source's model units: ``ll
    [tasks]`` (per real target point), ``mse [tasks, dim_y]`` (NaN for an output a task never
    observes at a target), ``covered [tasks]`` and ``outputs [tasks, dim_y]``: the observed
    outputs per scored target (ones without missing outputs), what the LL's shift to the data's
    units counts."""
    model = model.eval()
    out: dict[str, list] = {"ll": [], "mse": [], "covered": [], "outputs": []}
    for i in range(n_batches):
        batch = batch_at(sampler, i, split="test")
        pred = model.predict_batch(batch)
        out["ll"].append(model.log_likelihood(batch, pred))
        err = pred.mean - batch.yt  # [tasks, n_tgt, dim_y]
        mask, mask_y = batch.mask_t, batch.mask_yt
        out["mse"].append(output_means(err**2, mask, mask_y))
        inside = (err.abs() <= Z95 * pred.stddev).float()
        out["covered"].append(observed_mean(inside, mask, mask_y))
        out["outputs"].append(_outputs_per_target(mask, mask_y, err))
    return {k: torch.cat(v).double().numpy() for k, v in out.items()}


def _outputs_per_target(mask_t, mask_yt, err: torch.Tensor) -> torch.Tensor:
    """``[tasks, dim_y]``: per task, the share of its scored targets (real, some output
    observed) at which each output is observed; ones where nothing is missing."""
    if mask_yt is None:
        return torch.ones(err.shape[0], err.shape[-1], dtype=err.dtype)
    scored = mask_yt.any(-1) if mask_t is None else mask_t & mask_yt.any(-1)
    seen = (mask_yt & scored[..., None]).sum(1).to(err.dtype)
    return seen / scored.sum(1, keepdim=True).to(err.dtype)


def summarise(name: str, scores: dict[str, np.ndarray], scale_y: np.ndarray) -> TaskMetrics:
    """``scores`` (:func:`per_task`) in the data's units."""
    ll = scores["ll"] - (scores["outputs"] * np.log(scale_y)).sum(-1)
    rmse = np.sqrt(scores["mse"]) * scale_y  # [tasks, dim_y]; NaN: no target observes it
    ll_mean, ll_se = mean_se(torch.as_tensor(ll))
    pairs = [mean_se(torch.as_tensor(r[~np.isnan(r)])) for r in rmse.T]
    return TaskMetrics(
        model=name,
        n_tasks=len(ll),
        ll=ll_mean,
        ll_se=ll_se,
        rmse=[m for m, _ in pairs],
        rmse_se=[s for _, s in pairs],
        coverage95=float(scores["covered"].mean()),
    )


def evaluate_tasks(
    model: NeuralProcess,
    sampler: TaskSampler,
    n_batches: int,
    baselines: tuple[str, ...] = BASELINES,
) -> list[TaskMetrics]:
    """``model`` and each baseline on the same test tasks, in the data's units (module
    docstring); the model's row first, its ``vs`` holding the paired LL differences."""
    scale_y = output_scale(sampler, model.dim_y)
    ours = per_task(model, sampler, n_batches)
    rows = [summarise(model.name, ours, scale_y)]
    for name in baselines:
        base = per_task(build_model(name, model.dim_x, model.dim_y), sampler, n_batches)
        rows.append(summarise(name, base, scale_y))
        rows[0].vs[name] = mean_se(torch.as_tensor(ours["ll"] - base["ll"]))
    return rows


def format_task_table(rows: list[TaskMetrics]) -> str:
    """A markdown table of :func:`evaluate_tasks`' rows."""
    lines = [
        "| model | tasks | LL (data units) | RMSE | 95% coverage | model LL − this |",
        "| --- | ---: | --- | --- | ---: | --- |",
    ]
    first = rows[0]
    for r in rows:
        # an output no target observes (a grid variable beside stations) has no RMSE: "—"
        rmse = ", ".join(
            "—" if math.isnan(m) else f"{m:.4g} ± {s:.2g}" for m, s in zip(r.rmse, r.rmse_se)
        )
        diff = first.vs.get(r.model)
        vs = "—" if diff is None else f"{diff[0]:+.3f} ± {diff[1]:.3f}"
        se = "nan" if math.isnan(r.ll_se) else f"{r.ll_se:.3f}"
        lines.append(
            f"| {r.model} | {r.n_tasks} | {r.ll:.3f} ± {se} | {rmse} | {r.coverage95:.3f} | {vs} |"
        )
    return "\n".join(lines)
