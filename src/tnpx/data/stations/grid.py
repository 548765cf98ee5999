"""A gridded field as extra context for the ``stations`` source, DeepSensor-style.

    data: {name: stations, path: readings.csv, time: time, coords: [lat, lon], y: [temp],
           grid: {path: era5.nc, y: [t2m], dims: [latitude, longitude], points: 200}}

The two context sets are one set of points with per-output masks (``Batch.mask_yc``): the
outputs are the stations' then the grid's (``dim_y = len(y) + len(grid.y)``); a station reading
misses the grid's outputs and a grid cell the stations'. A task's context is the grid's cells at
the task's time (first, the same number in every task) followed by its context stations; its
targets are the other stations, their grid outputs masked in ``mask_yt``, so only station
outputs are scored. The model must read missing outputs (``missing_outputs: true`` for the
transformer NPs; training says so otherwise).

- Time: a task's time (a window's start) takes the grid's time step at or before it
  (``match: nearest``: the nearest one), which must lie less than the grid's largest spacing
  of time steps away; a task the grid does not cover is an error naming it (never dropped).
  With ``time_as_input`` a cell's time input is its grid time less the window's start (zero or
  negative under ``before``). Dates are compared as hours since 1970, numbers in their units.
- Space: ``dims`` names the grid's dims that are the stations' ``coords``, in the same order
  (default: the coords' names); a cell's inputs are its coordinates mapped with the stations'
  normalisation. ``select`` cuts the grid to a region (and period); ``points: N`` draws N of
  its cells at random for each task, afresh every batch, and reads only those
  (:mod:`tnpx.data.grid.cells`; default: every cell). Any other dim must hold one point
  (``select`` one level).
- Normalisation: each grid variable by the mean and std of its values (NaN left out) at the
  grid time steps the training tasks use, each cell once per step; stored with the stations'
  in one map (y columns: the stations' outputs, then the grid's variables).
- Splits are the stations' (by time by default): a test task reads the grid at its own time,
  so no field of the held-out periods is trained or normalised on.
- A missing grid value (NaN) is a masked output of its cell.

Reading is the ``grid`` source's (:func:`~tnpx.data.grid.files.open_grid`): NetCDF files, a
Zarr store, or from Python an ``xarray.Dataset`` as ``path``; ``load: auto | memory | lazy``.
The ``grid:`` options, the dims and time checks and the time match are
:mod:`tnpx.data.stations.grid_match`'s, shared with predicting
(:func:`tnpx.apply.grid_context.grid_context_rows`).
"""

from __future__ import annotations

import numpy as np
import torch

from ...batch import Batch
from ...user_files import DataError, as_list
from ..grid.cells import cell_coords, read_cells
from ..grid.files import open_grid
from .grid_match import GridOptions, StationSide, match_steps, space_dims, task_times


class GridContext:
    """The cells of a grid as context points of the stations' tasks (module docstring).
    ``dim_y``: the grid's variables; ``steps[split]`` ``[n_tasks]``: the grid time step (an
    index) of each task; ``loc`` / ``scale`` ``[dim_y]``: the variables' map."""

    def __init__(self, spec: dict, stations: StationSide):
        self.options = o = GridOptions.read(spec)
        self.stations, self.y = stations, as_list(o.y)
        self.dim_y = len(self.y)
        self.data = data = open_grid(o.path, self.y, [], o.select)
        self.dims = space_dims(data, o, stations)
        clash = [v for v in self.y if v in stations.y]
        if clash:
            raise ValueError(
                f"stations: grid variable(s) {clash} have the name of a station output; rename "
                "the table's column(s) (each output is named once)"
            )
        self.times = data.coords[o.time]  # [n_steps] float64: hours since 1970, or numbers
        self.task_times = task_times(data, o.time, stations)  # split -> [n_tasks]
        self.steps = {
            split: match_steps(data, o, self.times, when, stations, split)
            for split, when in self.task_times.items()
        }
        if o.load == "memory" or (o.load == "auto" and data.nbytes <= o.memory_limit_mb * 2**20):
            data.load()
        self.loc, self.scale = self._fit(self.steps["train"], stations.normalise)
        cells = cell_coords(data, self.dims)  # [n_cells, n_coords], the coords' order
        n = len(stations.coords)
        loc, scale = (np.asarray(stations.x_map[k], np.float64) for k in ("loc", "scale"))
        self._x_loc, self._x_scale = loc, scale
        self.cell_x = (cells - loc[:n]) / scale[:n]  # [n_cells, n_coords], model units
        self._cells = cells

    def joined(self, stored: dict) -> dict:
        """The stations' normalisation ``stored`` with the grid's variables after their outputs
        (its other entries, a count model's ``exposure``, as they are)."""
        y, x = stored["y"], stored["x"]
        if x.get("range"):  # the cells were context too: their inputs lie in the range trained on
            x = {**x, "range": self._widened(x["range"])}
        return {
            **stored,
            "x": x,
            "y": {
                "columns": [*y["columns"], *self.y],
                "loc": [*y["loc"], *self.loc.tolist()],
                "scale": [*y["scale"], *self.scale.tolist()],
            },
        }

    def _widened(self, spans: list) -> list:
        """The stations' training ``spans`` (``[dim_x][2]``) widened by the cells' coordinates
        and (``time_as_input``) the training tasks' time offsets of their grid steps."""
        spans = np.asarray(spans, dtype=np.float64)
        n = self._cells.shape[1]  # the coords come first among the inputs
        spans[:n, 0] = np.minimum(spans[:n, 0], self._cells.min(0))
        spans[:n, 1] = np.maximum(spans[:n, 1], self._cells.max(0))
        if self.stations.time_as_input and len(self.steps["train"]):
            offsets = self.times[self.steps["train"]] - self.task_times["train"]
            spans[-1] = [min(spans[-1, 0], offsets.min()), max(spans[-1, 1], offsets.max())]
        return spans.tolist()

    def fields(self, steps: np.ndarray) -> np.ndarray:
        """``[len(steps), n_cells, dim_y]`` float64, the data's units: the grid at ``steps``
        (time indices), cells in the order of :attr:`cell_x`; NaN where a value is missing."""
        unique, inverse = np.unique(steps, return_inverse=True)
        return np.stack([self._field(int(t)) for t in unique])[inverse.reshape(-1)]

    def extend(self, batch: Batch, split: str, g: torch.Generator) -> Batch:
        """``batch`` of stations with the grid's cells at each task's time put first in its
        context, ``dim_y`` grown by the grid's variables (module docstring). ``info["grid_time"]``
        ``[batch]``: the grid time each task read (float64, as :attr:`times`)."""
        tasks = batch.info["task"].numpy()
        steps = self.steps[split][tasks]
        x = torch.from_numpy(self.cell_x).expand(len(tasks), -1, -1)
        n_cells = x.shape[1]
        if self.stations.time_as_input:  # the cell's time since the task's (window's) start
            offset = self.times[steps] - self.task_times[split][tasks]
            offset = (offset - self._x_loc[-1]) / self._x_scale[-1]
            column = torch.from_numpy(offset)[:, None, None].expand(-1, n_cells, 1)
            x = torch.cat([x, column], -1)
        points = self.options.points
        if points is not None and points < n_cells:  # only the drawn cells are read
            pick = torch.rand(len(tasks), n_cells, generator=g).argsort(1)[:, :points]
            x = x.gather(1, pick[..., None].expand(-1, -1, x.shape[-1]))
            dim = self.options.time
            cells = [read_cells(self.data, dim, self.dims, int(t), c)
                     for t, c in zip(steps, pick.numpy())]  # fmt: skip
            values = torch.from_numpy(np.stack(cells))  # [b, points, dim_y]
        else:
            values = torch.from_numpy(self.fields(steps))  # [b, n_cells, dim_y]
        observed = values.isfinite()
        loc, scale = torch.from_numpy(self.loc), torch.from_numpy(self.scale)
        values = torch.where(observed, (values - loc) / scale, 0.0)
        time = torch.from_numpy(self.times[steps])
        return _join(batch, x.float(), values.float(), observed, time)

    def _field(self, t: int) -> np.ndarray:
        """``[n_cells, dim_y]`` float64: every variable at time step ``t``."""
        return read_cells(self.data, self.options.time, self.dims, t)

    def _fit(self, steps: np.ndarray, normalise: bool) -> tuple[np.ndarray, np.ndarray]:
        """``loc`` and ``scale`` ``[dim_y]``: the mean and std of the present values at the time
        ``steps`` (each step once; merged exactly from per-step moments); 0 and 1 otherwise."""
        if not normalise:
            return np.zeros(self.dim_y), np.ones(self.dim_y)
        moments = []
        for t in np.unique(steps):
            v = self._field(int(t))
            seen = np.isfinite(v)
            n = seen.sum(0)
            mean = np.where(seen, v, 0).sum(0) / np.maximum(n, 1)
            m2 = np.square(np.where(seen, v - mean, 0)).sum(0)
            moments.append((n, mean, m2))
        n, mean, m2 = (np.stack(m) for m in zip(*moments))  # [steps, dim_y] each
        total = n.sum(0)
        if (total == 0).any():
            var = self.y[int(np.argmin(total))]
            raise DataError(
                f"{self.data.name}: variable {var!r} is all missing at the grid time steps of "
                "the stations' training tasks"
            )
        loc = (n * mean).sum(0) / total
        scale = np.sqrt((m2 + n * (mean - loc) ** 2).sum(0) / total)
        return loc, np.where(scale > 0, scale, 1.0)


def _join(
    batch: Batch, x: torch.Tensor, y: torch.Tensor, observed: torch.Tensor, time: torch.Tensor
) -> Batch:
    """The cells ``x [b, n, dim_x]``, ``y [b, n, n_grid]`` (``observed`` alike) put before the
    stations' context of ``batch``; every point's outputs the stations' then the grid's, each
    point missing the other set's (padded points: observed, the masks' convention)."""
    b, n, n_grid = y.shape
    n_stations = batch.yc.shape[-1]

    def widen(values, mask_y, mask):
        real = torch.ones(values.shape[:2], dtype=torch.bool) if mask is None else mask
        seen = torch.ones_like(values, dtype=torch.bool) if mask_y is None else mask_y
        wide = torch.cat([values, values.new_zeros(*values.shape[:2], n_grid)], -1)
        return wide, torch.cat([seen, (~real)[..., None].expand(-1, -1, n_grid)], -1)

    yc, mask_yc = widen(batch.yc, batch.mask_yc, batch.mask_c)
    yt, mask_yt = widen(batch.yt, batch.mask_yt, batch.mask_t)
    cells_y = torch.cat([y.new_zeros(b, n, n_stations), y], -1)
    cells_seen = torch.cat([torch.zeros(b, n, n_stations, dtype=torch.bool), observed], -1)
    mask_c = batch.mask_c
    if mask_c is not None:
        mask_c = torch.cat([torch.ones(b, n, dtype=torch.bool), mask_c], 1)
    info = {**batch.info, "grid_time": time}
    if "exposure_c" in info:  # a count model's: the cells' outputs are no counts, so 1
        exposure = info["exposure_c"]
        info["exposure_c"] = torch.cat([exposure.new_ones(b, n, 1), exposure], 1)
    return Batch(
        xc=torch.cat([x, batch.xc], 1),
        yc=torch.cat([cells_y, yc], 1),
        xt=batch.xt,
        yt=yt,
        mask_c=mask_c,
        info=info,
        mask_t=batch.mask_t,
        mask_yc=torch.cat([cells_seen, mask_yc], 1),
        mask_yt=mask_yt,
    )
