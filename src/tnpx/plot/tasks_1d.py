"""Plots of 1D tasks: context points, the targets, each model's mean ± 2σ (or joint samples)
and the GP oracle's band where the data come from a GP."""

from __future__ import annotations

from pathlib import Path

import torch

from ..apply.sample import sample
from ..batch import Batch
from ..data import TaskSampler, batch_at
from ..extras import pyplot
from ..models import NeuralProcess, build_model
from ..models.exposure import KEYS as EXPOSURE_KEYS
from ..models.exposure import rates_batch
from .data_units import DataUnits, _real
from .figures import save_figure


@torch.no_grad()
def plot_1d_tasks(
    models: dict[str, NeuralProcess],
    sampler: TaskSampler,
    path: str | Path,
    n_tasks: int = 4,
    n_grid: int = 400,
    oracle: bool = True,
    n_samples: int = 0,
    n_sample_grid: int = 80,
    seed: int = 0,
    titles: list[str] | None = None,
) -> Path:
    """Save a PNG with ``n_tasks`` test tasks: context points, the target values (the true
    function where the targets are noiseless), each model's mean ± 2σ on a dense grid, and the
    GP oracle's mean ± 2σ where the data come from a GP.

    Padded tasks (a ``table`` source's) are drawn with their real points only (``mask_c`` /
    ``mask_t``), the models conditioned on the real context; a source that normalises (its
    ``normalisation``) is drawn in the data's units, axes named by its columns.

    Args:
        models: label -> model; each gets its own colour.
        sampler: a 1D sampler (dim_x = dim_y = 1); tasks come from its ``test`` split.
        path: output file (``.png``).
        n_samples: joint function samples per model and task (:func:`tnpx.sample`, an
            autoregressive rollout over ``n_sample_grid`` grid points), drawn as thin lines.
        seed: seeds the samples.
        titles: one title per task (default: its number and context size).
    """
    plt = pyplot("plotting")
    if sampler.dim_x != 1 or sampler.dim_y != 1:
        raise ValueError(
            f"plot_1d_tasks needs dim_x = dim_y = 1, got {sampler.dim_x}, {sampler.dim_y}"
        )
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    real_c, real_t = _real(batch.mask_c, batch.xc), _real(batch.mask_t, batch.xt)
    lo = min(batch.xc[real_c].min().item(), batch.xt[real_t].min().item())
    hi = max(batch.xc[real_c].max().item(), batch.xt[real_t].max().item())
    pad = 0.05 * (hi - lo)
    grid = torch.linspace(lo - pad, hi + pad, n_grid).view(1, -1, 1).expand(n_tasks, -1, -1)
    # counts of unequal exposure are drawn per unit exposure, beside the model's rate (the
    # grid's points have none); the context the models see is then the rates they read
    per_unit = any(k in batch.info for k in EXPOSURE_KEYS)
    batch = rates_batch(batch)
    dense = Batch(batch.xc, batch.yc, grid.contiguous(), mask_c=batch.mask_c, info=batch.info)
    curves = {label: m.eval().cpu().predict_batch(dense) for label, m in models.items()}
    if oracle and "kernel" in batch.info:
        curves["GP oracle"] = build_model("gp-oracle").predict_batch(dense)
    sample_grid = torch.linspace(lo - pad, hi + pad, n_sample_grid).view(1, -1, 1)
    sample_grid = sample_grid.expand(n_tasks, -1, -1).contiguous()
    paths = {
        label: sample(m, batch.xc, batch.yc, sample_grid, n_samples, mask_c=batch.mask_c, seed=seed)
        for label, m in models.items()
        if n_samples > 0
    }

    fig, axes = plt.subplots(1, n_tasks, figsize=(4.2 * n_tasks, 3.4), squeeze=False)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:red"]
    units = DataUnits(getattr(sampler, "normalisation", None))
    x = units.x(grid[0, :, 0])
    for i, ax in enumerate(axes[0]):
        xt, yt = batch.xt[i, real_t[i], 0], batch.yt[i, real_t[i], 0]
        order = xt.argsort()
        ax.plot(units.x(xt[order]), units.y(yt[order]), ".", color="0.55", ms=3, label="targets")
        for (label, pred), colour in zip(curves.items(), colours):
            colour = "black" if label == "GP oracle" else colour
            style = "--" if label == "GP oracle" else "-"
            mu, sd = units.y(pred.mean[i, :, 0]), units.scale_y[0] * pred.stddev[i, :, 0].numpy()
            ax.plot(x, mu, style, color=colour, lw=1.3, label=f"{label} mean ± 2σ")
            if label != "GP oracle":
                ax.fill_between(x, mu - 2 * sd, mu + 2 * sd, color=colour, alpha=0.18, lw=0)
            if label in paths:
                xs = units.x(sample_grid[0, :, 0])
                ax.plot(xs, units.y(paths[label][:, i, :, 0].T), color=colour, lw=0.6, alpha=0.6)
            else:
                ax.plot(x, mu - 2 * sd, ":", color=colour, lw=0.9)
                ax.plot(x, mu + 2 * sd, ":", color=colour, lw=0.9)
        xc, yc = units.x(batch.xc[i, real_c[i], 0]), units.y(batch.yc[i, real_c[i], 0])
        ax.plot(xc, yc, "o", color="crimson", ms=4, label="context")
        title = titles[i] if titles else f"task {i}: {int(real_c[i].sum())} context points"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(units.x_name)
    axes[0, 0].set_ylabel(f"{units.y_name} per unit exposure" if per_unit else units.y_name)
    axes[0, 0].legend(fontsize=7, loc="best")
    return save_figure(fig, path)
