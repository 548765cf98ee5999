"""Maps of held-out tasks of a ``stations`` source: per task (a time step or window), the
context stations and the target stations coloured by the predictive mean, the predictive
standard deviation and the truth, in the data's units (the stored normalisation undone), axes
named by the input columns.

A map's axes are the first two input columns (the ``coords``: lat and lon, say), a
longitude-like one across and a latitude-like one up, else the first across
(:func:`tnpx.plot.map.map_axes`, as ``tnpx predict --plot`` draws them); any other
input (``<time>_offset`` with ``time_as_input``) is not drawn, so readings of one station at
several times in a window share a place. A source with one input column is drawn along it:
the context readings, the targets' truth and their means with a ±2σ bar. With a grid as
extra context (:mod:`tnpx.data.stations.grid`) the model is conditioned on the grid's cells
too, but only stations are drawn. :func:`station_maps` gives one task's points as arrays;
:func:`stations_figure` lays out a row per task, :func:`plot_stations_tasks` writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..batch import Batch
from ..data import batch_at
from ..data.stations import StationsSampler
from ..extras import pyplot
from ..models import NeuralProcess
from .data_units import DataUnits, _real
from .figures import save_figure
from .grid import PANELS
from .map import map_axes


@dataclass
class StationMaps:
    """One task's stations in the data's units (float64), output ``output``.

    ``columns``: the input columns drawn (one or two); ``context_x [n_ctx, len(columns)]`` /
    ``context_y [n_ctx]``: the context stations (grid cells left out; NaN where this output is
    missing at a station); ``target_x [n_tgt, len(columns)]``, ``mean`` / ``std`` / ``truth``
    ``[n_tgt]``: the real targets (truth NaN where missing); ``task``: its time (or window
    start)."""

    columns: list[str]
    output: str
    context_x: np.ndarray
    context_y: np.ndarray
    target_x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    truth: np.ndarray
    task: object


@torch.no_grad()
def station_maps(
    model: NeuralProcess, sampler: StationsSampler, batch: Batch, i: int, split: str = "test",
    output: int = 0,
) -> StationMaps:  # fmt: skip
    """Task ``i`` of ``batch`` (a batch of ``sampler``'s ``split``, model units): ``model``
    conditioned on its whole context (grid cells included) and predicting at its real
    targets, mapped back to the data's units."""
    n_station_y = len(sampler.y_cols)  # a grid's variables come after: never drawn
    task = slice(i, i + 1)
    mask_c, mask_yc = (None if m is None else m[task] for m in (batch.mask_c, batch.mask_yc))
    real_t = _real(batch.mask_t, batch.xt)[i]
    context = _real(batch.mask_c, batch.xc)[i]
    if batch.mask_yc is not None:  # a grid cell misses every station output
        context = context & batch.mask_yc[i, :, :n_station_y].any(-1)  # not in place
    pred = model.eval().cpu().predict_batch(Batch(batch.xc[task], batch.yc[task],
                                                  batch.xt[task][:, real_t], mask_c=mask_c,
                                                  mask_yc=mask_yc))  # fmt: skip
    units = DataUnits(sampler.normalisation)
    drawn = min(2, sampler.dim_x)

    def outputs(values: torch.Tensor, seen: torch.Tensor | None) -> np.ndarray:
        y = units.y(values[:, output], output)
        return y if seen is None else np.where(seen[:, output].numpy(), y, np.nan)

    mask_yc = None if batch.mask_yc is None else batch.mask_yc[i, context]
    mask_yt = None if batch.mask_yt is None else batch.mask_yt[i, real_t]
    return StationMaps(
        columns=units.x_names[:drawn],
        output=units.y_names[output],
        context_x=units.x(batch.xc[i, context, :drawn], None),
        context_y=outputs(batch.yc[i, context], mask_yc),
        target_x=units.x(batch.xt[i, real_t, :drawn], None),
        mean=units.y(pred.mean[0], None)[:, output],
        std=pred.stddev[0, :, output].double().numpy() * units.scale_y[output],
        truth=outputs(batch.yt[i, real_t], mask_yt),
        task=sampler.task_keys(split)[int(batch.info["task"][i])],
    )


def stations_figure(
    model: NeuralProcess, sampler: StationsSampler, n_tasks: int = 4, output: int = 0
):
    """A matplotlib figure of ``n_tasks`` test tasks, one row each (:func:`station_maps`).
    Two input columns or more: four maps (the context stations, then the targets coloured by
    mean, std and truth, the context stations as black markers), mean, context and truth on
    one colour scale per row; ``4 * n_tasks`` map axes, then two colour bars per row. One
    input column: one axes per task along it."""
    plt = pyplot("plotting")
    if not isinstance(sampler, StationsSampler):
        raise ValueError(f"stations plots need a stations sampler, got {type(sampler).__name__}")
    n_outputs = len(sampler.y_cols)
    if not 0 <= output < n_outputs:
        raise ValueError(f"output must be a station output in [0, {n_outputs}), got {output}")
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    maps = [station_maps(model, sampler, batch, i, "test", output) for i in range(n_tasks)]
    if sampler.dim_x == 1:
        fig, axes = plt.subplots(1, n_tasks, figsize=(4.2 * n_tasks, 3.4), squeeze=False)
        for ax, task in zip(axes[0], maps):
            _draw_line(ax, task)
        return fig
    fig, axes = plt.subplots(n_tasks, len(PANELS), figsize=(3.2 * len(PANELS), 2.8 * n_tasks),
                             squeeze=False)  # fmt: skip
    for row, task in zip(axes, maps):
        _draw_maps(fig, row, task)
    return fig


def _draw_maps(fig, axes, task: StationMaps) -> None:
    """A row of :data:`PANELS` maps of one task."""
    lo = float(np.nanmin(np.concatenate([task.truth, task.mean, task.context_y])))
    hi = float(np.nanmax(np.concatenate([task.truth, task.mean, task.context_y])))
    # across and up as tnpx.plot.map.map_axes says (longitude-like across, else the first)
    across, up = (task.columns.index(c) for c in map_axes(task.columns))
    (cx, cy), (tx, ty) = task.context_x[:, [across, up]].T, task.target_x[:, [across, up]].T
    values = {"context": task.context_y, "mean": task.mean, "std": task.std, "truth": task.truth}
    for ax, panel in zip(axes, PANELS):
        std = panel == "std"
        x, y = (cx, cy) if panel == "context" else (tx, ty)
        dots = ax.scatter(x, y, c=values[panel], s=22, edgecolors="0.3", linewidths=0.4,
                          cmap="viridis" if std else "coolwarm", vmin=0 if std else lo,
                          vmax=float(np.nanmax(task.std)) if std else hi)  # fmt: skip
        if panel != "context":
            ax.scatter(cx, cy, marker="x", s=12, c="black", linewidths=0.8)
        if panel in ("std", "truth"):
            label = task.output if panel == "truth" else f"{task.output} std"
            fig.colorbar(dots, ax=ax, fraction=0.05, pad=0.02, label=label)
        title = f"context ({len(cx)} stations)" if panel == "context" else panel
        ax.set_title(title, fontsize=8)
        ax.set_xlabel(task.columns[across], fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel(f"{task.task}\n{task.columns[up]}", fontsize=8)


def _draw_line(ax, task: StationMaps) -> None:
    """One task along its one input column: context, truth and mean ± 2σ at the targets."""
    order = np.argsort(task.target_x[:, 0])
    x = task.target_x[order, 0]
    ax.errorbar(x, task.mean[order], yerr=2 * task.std[order], fmt="o", ms=3, lw=0.8,
                color="tab:blue", label="mean ± 2σ")  # fmt: skip
    ax.plot(x, task.truth[order], ".", color="0.4", ms=5, label="truth")
    ax.plot(task.context_x[:, 0], task.context_y, "o", color="crimson", ms=4, label="context")
    ax.set_title(f"{task.task}: {len(task.context_x)} context stations", fontsize=9)
    ax.set_xlabel(task.columns[0])
    ax.set_ylabel(task.output)
    ax.legend(fontsize=7, loc="best")


def plot_stations_tasks(
    model: NeuralProcess, sampler: StationsSampler, path: str | Path, n_tasks: int = 4,
    output: int = 0,
) -> Path:  # fmt: skip
    """Save :func:`stations_figure` as a PNG at ``path``; returns the path written."""
    return save_figure(stations_figure(model, sampler, n_tasks, output), path)
