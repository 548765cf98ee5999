"""Worked example 3: a climate model's air temperature over North America, tasks cut from the
NetCDF file as windows by the ``grid`` source; and the trained model on another scenario.

iris-sample-data ships two runs of the Met Office Unified Model (annual-mean 1.5 m air
temperature in K on 37 x 49 points of 1.25° x 1.875°, 1860-2099 on a 360-day calendar) under
the E1 and A1B emission scenarios. A task is a window of 8 x 8 grid points over 5 years (320
points, inputs latitude, longitude and time); the model trains on E1's windows of 1860-2039
and is scored on windows of the held-out test period 2070-2099, beside a GP fitted to each
window's context and the context's moments, then, unchanged, on the same windows of A1B, which
warms more (out of distribution: its values mapped with the normalisation fitted on E1):

    python examples/iris_air_temperature.py        # OMP_NUM_THREADS=1 for one core

Trains from ``configs/examples/grid-iris-e1.yaml``; results in ``results/examples/iris-e1/``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

if not __package__:  # run as a file: the repository root, for `examples.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.runner import Example, OtherData, main
from tnpx.batch import Batch
from tnpx.config import ExperimentConfig
from tnpx.data import GridSampler, batch_at
from tnpx.extras import pyplot, require
from tnpx.models import NeuralProcess, build_model
from tnpx.plot import save_figure, window_maps

FIGURE_CONTEXT = 0.1  # the figure's windows: a tenth of their points as context (32 of 320)
HOURS_PER_YEAR = 360 * 24  # the grid source's times: hours since 1970 of the 360-day calendar


def iris_file(name: str) -> Path:
    """The path of ``name`` in the installed iris-sample-data."""
    data = require("iris_sample_data", "real-data", "the iris worked example's data")
    return Path(data.path) / name


def window_context(cfg: ExperimentConfig, k: int) -> dict:
    """The grid options giving every window exactly ``k`` context points (both fractions
    ``k / N``; :func:`tnpx.data.grid.context_range` rounds them back to ``k``)."""
    n_points = math.prod(cfg.data["window"].values())
    return {"min_ctx_frac": k / n_points, "max_ctx_frac": k / n_points}


@torch.no_grad()
def draw_windows(model: NeuralProcess, sampler: GridSampler, path: Path, n_tasks: int) -> Path:
    """``n_tasks`` test windows, each with a tenth of its points as context, one year of each
    (its middle one) as maps in the data's units: the truth with the context points (that
    year's filled, other years' hollow), the model's and a per-task GP's mean and std."""
    plt = pyplot("the iris example's figure")
    shown = _fixed_sampler(sampler)
    batch = batch_at(shown, 0, split="test", batch_size=n_tasks)
    models = {model.name: model, "gp": build_model("gp", model.dim_x, model.dim_y)}
    panels = ["truth", *(f"{m} mean" for m in models), *(f"{m} std" for m in models)]
    fig, axes = plt.subplots(n_tasks, len(panels), figsize=(2.6 * len(panels), 2.5 * n_tasks))
    axes = np.atleast_2d(axes)
    n_ctx, n_points = batch.xc.shape[1], batch.xc.shape[1] + batch.xt.shape[1]
    for i in range(n_tasks):
        maps, context, extent, year = _window_maps(models, shown, batch, i)
        means = [maps[p] for p in panels if not p.endswith("std")]
        lo, hi = min(float(m.min()) for m in means), max(float(m.max()) for m in means)
        top = max(float(maps[p].max()) for p in panels if p.endswith("std"))
        for ax, panel in zip(axes[i], panels):
            std = panel.endswith("std")
            image = ax.imshow(
                maps[panel], origin="lower", extent=extent, aspect="auto",
                vmin=0 if std else lo, vmax=top if std else hi,
                cmap="viridis" if std else "coolwarm",
            )  # fmt: skip
            if panel in (panels[len(models)], panels[-1]):  # the means' and stds' scales
                fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label="K")
            ax.set_title(maps.get(f"{panel} title", panel), fontsize=8)
            ax.tick_params(labelsize=7)
        _mark_context(axes[i, 0], context)
        here = sum(this_year for *_, this_year in context)
        axes[i, 0].set_title(f"truth; context: ● {year} ({here}), ○ other years", fontsize=8)
        axes[i, 0].set_ylabel(f"{year}: {n_ctx} of {n_points} context\nlatitude (°N)", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("longitude (°E)", fontsize=8)
    return save_figure(fig, path)


def _fixed_sampler(sampler: GridSampler) -> GridSampler:
    """``sampler`` with every window's context a :data:`FIGURE_CONTEXT` share of its points."""
    k = max(1, round(sampler.n_points * FIGURE_CONTEXT))  # 32 of 320 points, 6 of 64
    share = k / sampler.n_points  # exactly k (context_range rounds k / N back to k)
    config = replace(sampler.config, min_ctx_frac=share, max_ctx_frac=share)
    return GridSampler(config, sampler.batch_size, sampler.seed, None, sampler.normalisation)


def _window_maps(models: dict, sampler: GridSampler, batch: Batch, i: int):
    """Window ``i`` of ``batch``, its middle year as ``[n_lat, n_lon]`` maps in the data's
    units (:func:`tnpx.plot.grid.window_maps`): ``truth``, each model's ``mean`` and ``std``
    (and a ``title`` with its RMSE over the year's targets); its context points ``[(lat, lon,
    in this year)]``; the maps' imshow extent (cell edges, ``[west, east, south, north]``) and
    the year."""
    window = window_maps(models, sampler, batch, i)
    maps = {"truth": window.truth}
    for name in models:
        mean = window.means[name]
        maps[f"{name} mean"], maps[f"{name} std"] = mean, window.stds[name]
        rmse = np.sqrt(np.mean((mean - window.truth)[~window.is_context] ** 2))
        maps[f"{name} mean title"] = f"{name} mean (RMSE {rmse:.2f} K)"
    context = [
        (float(p[0]), float(p[1]), bool(here))
        for p, here in zip(window.context_points, window.in_slice)
    ]
    return maps, context, window.extent, window_year(sampler, batch, i)


def window_year(sampler: GridSampler, batch: Batch, i: int) -> int:
    """The year of window ``i``'s middle time step, read from the data's own time coordinate
    at the window's grid indices (``info["origin_index"]``), so it holds whether or not time is
    an input."""
    dims = sampler.data.dims
    step = int(batch.info["origin_index"][i, dims.index("time")])
    step += sampler.window[dims.index("time")] // 2
    return math.floor(1970 + float(sampler.data.coords["time"][step]) / HOURS_PER_YEAR)


def _mark_context(ax, context: list[tuple[float, float, bool]]) -> None:
    for lat, lon, this_year in context:
        face = "black" if this_year else "none"
        ax.plot(lon, lat, "o", ms=4, mfc=face, mec="black", mew=0.8)


EXAMPLE = Example(
    name="iris-e1",
    config_name="grid-iris-e1",
    script="iris_air_temperature",
    title="North American air temperature under the E1 scenario (iris-sample-data), a task "
    "per window of 8 × 8 grid points × 5 years",
    source=(
        "Annual-mean 1.5 m air temperature in K over North America (15-60°N, 225-315°E; 37 × 49 "
        "points of 1.25° × 1.875°), 1860-2099 on a 360-day calendar, from the Met Office "
        "Unified Model under the E1 scenario, as iris-sample-data ships it "
        "(`E1_north_america.nc`, read offline from the package as it comes, by the `grid` "
        "source)."
    ),
    task="a window of 8 × 8 grid points (10° × 15°) over 5 consecutive years, 320 points, "
    "inputs latitude, longitude and time (hours since 1970 of the 360-day calendar)",
    unit="K",
    context_sizes=(4, 8, 16, 32, 64),
    data_file=lambda: iris_file("E1_north_america.nc"),
    fixed_context=window_context,
    held_out="windows: the training ones lie in 1860-2039, validation's in 2040-2069, the "
    "test's in 2070-2099, so no window shares a cell with another split's; a split's windows "
    "overlap each other",
    other_data=OtherData(
        name="A1B",
        path=lambda: iris_file("A1B_north_america.nc"),
        about=(
            "The A1B scenario's run of the same model (`A1B_north_america.nc`, the same grid "
            "and years), whose 2070-2099 are 2.2 K warmer than E1's on average over the map "
            "(289.9 K against 287.6 K): out of distribution for a model trained on E1 to 2039."
        ),
    ),
    draw=draw_windows,
    caption=(
        "`{figure}`: three held-out windows of the test period, each with a tenth of its 320 "
        "points as context (32), one year of each (the middle of its five) as maps in {unit}: "
        "the truth with the context points of that year (filled) and of its other years "
        "(hollow), the trained model's and the per-task GP's predictive mean (RMSE over the "
        "year's targets) and standard deviation. `metrics.json`: every number above, per-split "
        "window counts, the scored windows' first grid points (latitude, longitude, time in "
        "hours since 1970 of the 360-day calendar), the validation curve and the config."
    ),
    about=(
        "A window's field is smooth: most of its variance is the north-south gradient and "
        "the land-sea pattern, which change little from one year to the next. A GP fitted to "
        "a window's own context, with its own length-scales, interpolates such a field better "
        "and better as the context grows, but its hyper-parameters fitted to a handful of "
        "points are often far too confident, which is where knowing typical windows pays. "
        "The model centres each window's outputs on its context's mean (`centre_outputs`, "
        "the grid source's default; the earlier run, committed in 4426829, did not "
        "centre and covered 0.84 of the targets at 4 context points and 0.76-0.84 on A1B), so a "
        "warmer period's level is no output level it never saw. Two handicaps remain: its "
        "inputs are normalised over the whole record (one standard deviation is 52 years of "
        "time and 13° of latitude), so the five years of a window differ by 0.02 in its time "
        "input, where the GP fits a time length-scale to each window; and the test years lie "
        "beyond the training ones (time inputs 0.6 to 1.2 standard deviations past the last "
        "training year), so it extrapolates in time, which the stationary GP does not notice "
        "(worked example 5 takes time out of the inputs). The standard errors are over "
        "windows drawn from one 30-year period of one model run, windows that overlap: they "
        "say how well the 256 windows estimate the mean over that period's windows, not how "
        "another period or run would score."
    ),
)


if __name__ == "__main__":
    main(EXAMPLE)
