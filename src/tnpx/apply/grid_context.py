"""A gridded field as context rows, for predicting with a checkpoint trained on stations with a
grid as extra context (:mod:`tnpx.data.stations.grid`).

Such a model reads a task's context as one set of points whose outputs are the stations' then
the grid's, each point missing the other set's. :func:`tnpx.predict` takes that context as one
table: the station readings with the grid's columns NaN, and the grid's cells with the
stations' columns NaN (missing context outputs are masked for a model that reads them).
:func:`grid_context_rows` builds the cells' rows from an xarray Dataset or the grid's files,
the way training built them: the grid step at or before the task's time (or the nearest, as
the checkpoint's ``grid.match`` says), cut by its ``grid.select``, each cell's coordinates
in the stored input columns (with ``time_as_input``, ``<time>_offset``: the grid step's time
less the task's, in hours for dates), the grid's variables in the stored output columns::

    rows = grid_context_rows("era5.nc", "runs/st/model.pt", time="2024-03-30 06:00")
    pred = tnpx.predict("runs/st/model.pt", pd.concat([readings, rows]), targets)
    pred = pred.drop(columns=[c for c in pred if c.startswith("t2m_")])

The result also has columns for the grid's variables at the targets (``t2m_mean``, ...): the
model was never trained to predict them (a target's grid outputs are masked out of the loss),
so they mean nothing and are dropped as above.

A helper rather than a ``grid=`` argument of :func:`tnpx.predict`: predict stays one function
of two tables, the joint context is a plain table one can look at, thin or save as the CSV
``tnpx predict --context`` reads, and the rows are built in the stored units' column names,
so nothing in predict needs to know about grids.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from ..data.grid.cells import cell_coords, read_cells
from ..data.grid.files import open_grid
from ..data.stations.grid_match import (
    GridOptions,
    StationSide,
    match_steps,
    space_dims,
    task_times,
)
from ..user_files import as_list

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def grid_context_rows(
    grid, checkpoint, time, *, points: int | None = None, seed: int = 0
) -> pd.DataFrame:
    """The grid's cells at a task's ``time`` as context rows for :func:`tnpx.predict` with
    ``checkpoint`` (module docstring).

    Args:
        grid: an ``xarray.Dataset``, a NetCDF path, a list or glob of them or a Zarr store
            with the checkpoint's grid variables; None: the grid it was trained with.
        checkpoint: the path of a checkpoint trained on ``stations`` with ``grid:``.
        time: the task's time, as the stations' time column holds it (a number, or a date
            such as ``"2024-03-30 06:00"``); with ``window``, the window's start.
        points: draw this many cells at random (``seed``), as ``grid.points`` drew them in
            training; None: the checkpoint's ``grid.points`` (every cell where it has none).

    Returns:
        A DataFrame, one row per cell with a grid value (a cell missing every variable carries
        nothing and is left out): the stored input columns, then the stored output columns,
        the stations' NaN; for a count model trained with an exposure column, that column at
        1 (the cells' exposure in training). ``attrs["grid_time"]``: the grid time step read.

    Raises:
        ValueError: ``checkpoint`` is not a checkpoint path, or was not trained with a grid
            context.
        DataError: the grid lacks a variable or dim, or has no time step for ``time``.
    """
    import pandas as pd

    trained, x_names, y_names = _trained_with_grid(checkpoint)
    spec = dict(trained["grid"], **({} if grid is None else {"path": grid}))
    o = GridOptions.read(spec)
    grid_y, coords = as_list(o.y), as_list(trained["coords"])
    station_y = y_names[: len(y_names) - len(grid_y)]
    key = time if isinstance(time, (int, float, np.number)) else str(pd.Timestamp(time))
    side = StationSide(coords, station_y, trained["time"], {"predict": [key]}, {},
                       bool(trained.get("time_as_input")), True, {})  # fmt: skip
    data = open_grid(o.path, grid_y, [], o.select)
    dims = space_dims(data, o, side)
    when = task_times(data, o.time, side)["predict"]
    step = int(match_steps(data, o, data.coords[o.time], when, side, "predict")[0])
    cells = cell_coords(data, dims)  # [n_cells, n_coords]
    points = o.points if points is None else points
    pick = None
    if points is not None and points < len(cells):
        pick = np.sort(np.random.default_rng(seed).choice(len(cells), points, replace=False))
        cells = cells[pick]
    values = read_cells(data, o.time, dims, step, pick)  # [n, n_grid_y]
    columns = dict(zip(coords, cells.T))
    if side.time_as_input:  # the cell's time since the task's, as training gave it
        columns[x_names[-1]] = np.full(len(cells), data.coords[o.time][step] - when[0])
    columns.update({name: np.full(len(cells), np.nan) for name in station_y})
    columns.update(dict(zip(grid_y, values.T)))
    rows = pd.DataFrame(columns)[[*x_names, *y_names]]
    if trained.get("exposure") is not None:  # a count model's: a cell's is 1, as in training
        rows[trained["exposure"]] = 1.0
    rows = rows[np.isfinite(values).any(1)].reset_index(drop=True)
    rows.attrs["grid_time"] = str(data.labels[o.time][step])
    return rows


def _trained_with_grid(checkpoint) -> tuple[dict, list, list]:
    """The stations source's recorded options (with ``grid``) and the stored input and output
    columns of ``checkpoint``; a one-line ``ValueError`` for anything else."""
    from ..checkpoint import experiment_from_record, read_checkpoint, stored_units

    if not isinstance(checkpoint, (str, os.PathLike)):
        raise ValueError(
            f"grid_context_rows needs a checkpoint's path, got {type(checkpoint).__name__} (a "
            "model object carries no record of the grid it was trained with)"
        )
    record = read_checkpoint(checkpoint)
    experiment = experiment_from_record(record)
    data = {} if experiment is None else dict(experiment.data)
    stored = stored_units(record, checkpoint)
    if data.get("name") != "stations" or not data.get("grid") or stored is None:
        source = data.get("name", "no recorded experiment")
        raise ValueError(
            f"{checkpoint}: not trained with a grid context (data source {source!r}, no "
            "grid: section); grid_context_rows is for a stations checkpoint trained with "
            "grid: {path, y}"
        )
    _, x_names, y_names = stored
    return data, list(x_names), list(y_names)
