"""Maps of held-out windows of a ``grid`` source: per task, the context cells (the others
blank), the predictive mean, the predictive standard deviation and the truth, in the data's
units (the stored normalisation undone), axes named by the grid's dims.

A window spans every dim of the grid; a map shows two of them. The map's rows and columns are
the first two input dims (in the source's ``x`` order) whose window is longer than one point,
and every other input dim is fixed at the window's middle value (the example's middle year of
five). :func:`window_maps` gives one window's maps as arrays (for tests and for figures of
one's own, as ``examples/iris_air_temperature.py`` draws); :func:`grid_figure` lays out a row
per task, :func:`plot_grid_tasks` writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..batch import Batch
from ..data import batch_at
from ..data.grid import GridSampler
from ..extras import pyplot
from ..models import NeuralProcess
from .figures import save_figure
from .grid_select import date_axis, date_text, label_text, on_grid, time_dims

PANELS = ("context", "mean", "std", "truth")  # a task's row of :func:`grid_figure`


@dataclass
class WindowMaps:
    """One window's slice as ``[rows, cols]`` maps of one output, in the data's units.

    ``truth``: every cell's value; ``context``: the truth at the slice's context cells, NaN
    elsewhere; ``means`` / ``stds``: model label -> predictive mean / std at every cell;
    ``is_context``: the context cells. ``dims``: the (row, column) dim names (row None for a
    window spanning one dim); ``extent``: imshow's ``[left, right, bottom, top]``, the outer
    cell edges; ``fixed``: the other input dims' values at the slice. ``context_points``
    ``[n_ctx, dim_x]``: every context point of the window (data units, inputs in ``x`` order),
    ``in_slice [n_ctx]``: those drawn on the map. ``cells``: each map dim's coordinate values,
    cell by cell (data units, increasing)."""

    truth: np.ndarray
    context: np.ndarray
    means: dict[str, np.ndarray]
    stds: dict[str, np.ndarray]
    is_context: np.ndarray
    dims: tuple[str | None, str]
    extent: list[float]
    fixed: dict[str, float]
    context_points: np.ndarray
    in_slice: np.ndarray
    cells: dict[str, np.ndarray] | None = None


def map_dims(sampler: GridSampler) -> tuple[str | None, str]:
    """The (row, column) dims of the maps: the first two input dims whose window is longer than
    one point (row None where only one is).

    Raises:
        ValueError: no dim longer than one point, or a dim longer than one point that is not
            an input (its cells could not be told apart on a map).
    """
    lengths = dict(zip(sampler.data.dims, sampler.window))
    hidden = [d for d, n in lengths.items() if n > 1 and d not in sampler.x]
    if hidden:
        raise ValueError(f"grid plot: dim(s) {hidden} span the window but are not inputs (x)")
    spanning = [d for d in sampler.x if lengths[d] > 1]
    if not spanning:
        raise ValueError("grid plot: the window is a single point; nothing to map")
    return (None, spanning[0]) if len(spanning) == 1 else (spanning[0], spanning[1])


@torch.no_grad()
def window_maps(
    models: dict[str, NeuralProcess], sampler: GridSampler, batch: Batch, i: int, output: int = 0
) -> WindowMaps:
    """Task ``i`` of ``batch`` (a batch of ``sampler``'s windows, model units) as maps of output
    ``output``: its points at the middle value of every input dim not on the map, each model
    conditioned on the task's whole context and predicting there."""
    row_dim, col_dim = map_dims(sampler)
    x = torch.cat([batch.xc[i], batch.xt[i]])  # [N, dim_x] model units
    y = torch.cat([batch.yc[i], batch.yt[i]])  # [N, dim_y]
    n_ctx = batch.xc.shape[1]
    column = {d: k for k, d in enumerate(sampler.x)}
    on_map = [d for d in (row_dim, col_dim) if d is not None]
    keep = torch.ones(len(x), dtype=torch.bool)
    for dim in sampler.x:
        if dim not in on_map:  # model-unit values are exact copies, so == finds the slice
            values = x[:, column[dim]].unique()
            keep &= x[:, column[dim]] == values[len(values) // 2]
    xs = x[keep]
    rows = _positions(xs, column.get(row_dim))
    cols = _positions(xs, column[col_dim])
    shape = (int(rows.max()) + 1, int(cols.max()) + 1)
    if len(xs) != shape[0] * shape[1]:  # cells that share a place would hide each other
        raise ValueError(f"grid plot: the slice's {len(xs)} points do not fill a {shape} map")

    def as_map(values: torch.Tensor | np.ndarray) -> np.ndarray:
        out = np.full(shape, np.nan)
        out[rows, cols] = np.asarray(values, dtype=np.float64)
        return out

    scale = float(sampler.normalisation["y"]["scale"][output])
    real = torch.ones(len(x), dtype=torch.bool)  # False: a missing cell (land), padded
    if batch.mask_c is not None:
        real = torch.cat([batch.mask_c[i], batch.mask_t[i]])
    _, truth = sampler.to_physical(y=y[keep])
    truth = as_map(truth[:, output].masked_fill(~real[keep], torch.nan))
    means, stds = {}, {}
    for label, model in models.items():
        model = model.eval().cpu()
        mask_c = None if batch.mask_c is None else batch.mask_c[i : i + 1]
        pred = model.predict_batch(Batch(batch.xc[i : i + 1], batch.yc[i : i + 1], xs[None],
                                         mask_c=mask_c))  # fmt: skip
        _, mean = sampler.to_physical(y=pred.mean[0])
        means[label] = as_map(mean[:, output])
        stds[label] = as_map(pred.stddev[0, :, output].double() * scale)
    is_context = as_map(((torch.arange(len(x)) < n_ctx) & real)[keep].double()) == 1
    physical = sampler.to_physical(x=x)[0].numpy()
    here = physical[keep.numpy()]
    rows_edges = _edges(here[:, column[row_dim]]) if row_dim else [-0.5, 0.5]
    return WindowMaps(
        truth=truth,
        context=np.where(is_context, truth, np.nan),
        means=means,
        stds=stds,
        is_context=is_context,
        dims=(row_dim, col_dim),
        extent=[*_edges(here[:, column[col_dim]]), *rows_edges],
        fixed={d: float(here[0, column[d]]) for d in sampler.x if d not in on_map},
        context_points=physical[:n_ctx][real[:n_ctx].numpy()],  # the real context points
        in_slice=keep[:n_ctx][real[:n_ctx]].numpy(),
        cells={d: np.unique(here[:, column[d]]) for d in on_map},
    )


def _positions(xs: torch.Tensor, k: int | None) -> np.ndarray:
    """Each point's index among the distinct values of input column ``k`` (0 where None)."""
    if k is None:
        return np.zeros(len(xs), dtype=np.int64)
    values = xs[:, k].unique()
    return torch.searchsorted(values, xs[:, k].contiguous()).numpy()


def _edges(centres: np.ndarray) -> list[float]:
    """The outer cell edges of evenly spaced coordinates (half a step beyond each end)."""
    values = np.unique(centres)
    half = float(values[1] - values[0]) / 2 if len(values) > 1 else 0.5
    return [float(values[0]) - half, float(values[-1]) + half]


def grid_figure(
    model: NeuralProcess,
    sampler: GridSampler,
    n_tasks: int = 4,
    output: int = 0,
    split: str = "test",
):
    """A matplotlib figure of ``n_tasks`` windows of ``split``, one row each: the context cells
    (the others blank), the predictive mean, the predictive std and the truth of output
    ``output`` (:func:`window_maps`), mean and truth on one colour scale per row. ``4 *
    n_tasks`` map axes, then two colour bars per row. A time axis is labelled with dates, and
    each row names its window's place on the dims not mapped (the time a window of one step
    is at, as a date, whether or not time is an input). A chosen period or region:
    :func:`tnpx.plot.grid_select.restricted`."""
    plt = pyplot("plotting")
    if not isinstance(sampler, GridSampler):
        raise ValueError(f"grid plots need a grid sampler, got {type(sampler).__name__}")
    if not 0 <= output < sampler.dim_y:
        raise ValueError(f"output must be in [0, {sampler.dim_y}), got {output}")
    batch = batch_at(sampler, 0, split=split, batch_size=n_tasks)
    times = time_dims(sampler)
    label, name = model.name, sampler.y[output]
    fig, axes = plt.subplots(n_tasks, len(PANELS), figsize=(3.0 * len(PANELS), 2.6 * n_tasks),
                             squeeze=False)  # fmt: skip
    for i in range(n_tasks):
        maps = window_maps({label: model}, sampler, batch, i, output)
        panels = (maps.context, maps.means[label], maps.stds[label], maps.truth)
        lo = float(min(np.nanmin(maps.truth), np.nanmin(maps.means[label])))
        hi = float(max(np.nanmax(maps.truth), np.nanmax(maps.means[label])))
        for ax, panel, values in zip(axes[i], PANELS, panels):
            std = panel == "std"
            image = ax.imshow(
                values, origin="lower", extent=maps.extent, aspect="auto",
                cmap="viridis" if std else "coolwarm",
                vmin=0 if std else lo, vmax=float(np.nanmax(values)) if std else hi,
            )  # fmt: skip
            if panel in ("std", "truth"):
                bar = name if panel == "truth" else f"{name} std"
                fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label=bar)
            ax.set_title(panel if panel != "context" else _context_title(maps), fontsize=8)
            ax.set_xlabel(maps.dims[1], fontsize=8)
            ax.tick_params(labelsize=7)
            for dim, axis, ends in zip(
                maps.dims, (ax.yaxis, ax.xaxis), (maps.extent[2:], maps.extent[:2])
            ):
                if dim in times:  # hours since 1970 written as dates, a tick on a cell's centre
                    cells = on_grid(maps.cells[dim], sampler.data.coords[dim])
                    date_axis(axis, ends, cells, times[dim])
        where = _window_place(sampler, batch, i, maps, times)
        axes[i, 0].set_ylabel(f"task {i}{f' ({where})' if where else ''}\n{maps.dims[0] or ''}",
                              fontsize=8)  # fmt: skip
    return fig


def _context_title(maps: WindowMaps) -> str:
    shown, total = int(maps.in_slice.sum()), len(maps.in_slice)
    return f"context ({shown} here of {total})"


def _window_place(sampler: GridSampler, batch: Batch, i: int, maps: WindowMaps, times) -> str:
    """Where task ``i``'s window lies on the dims not mapped: each fixed input (dates as
    dates), then each dim that is no input (a one-step window's time), from its grid index."""
    coords = sampler.data.coords
    parts = [f"{d} {date_text(on_grid(v, coords[d])[0], times[d]) if d in times else f'{v:.6g}'}"
             for d, v in maps.fixed.items()]  # fmt: skip
    index = batch.info.get("origin_index") if batch.info else None
    if index is not None:
        for k, dim in enumerate(sampler.data.dims):
            if dim not in sampler.x:
                parts.append(f"{dim} {label_text(sampler.data.labels[dim][int(index[i, k])])}")
    return ", ".join(parts)


def plot_grid_tasks(
    model: NeuralProcess,
    sampler: GridSampler,
    path: str | Path,
    n_tasks: int = 4,
    output: int = 0,
    split: str = "test",
) -> Path:
    """Save :func:`grid_figure` as a PNG at ``path``; returns the path written."""
    return save_figure(grid_figure(model, sampler, n_tasks, output, split), path)
