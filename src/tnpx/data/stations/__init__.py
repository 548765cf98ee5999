"""Scattered observations as a task source: a table of station readings, one row per station
and time, with coordinate columns, a time column and output columns.

    data: {name: stations, path: readings.csv, time: time, coords: [lat, lon], y: [temp]}

A task is one time step (``window: null``: the rows that share a time value) or one time
window (``window: 6`` in the time column's units, or ``window: 1D`` / ``6h`` / ``W`` for
dates); its context is some of the stations reporting then and its targets are others, drawn
afresh for every batch. The inputs are the coordinates, plus, with ``time_as_input``, each
reading's time since the start of its window (a column ``<time>_offset``: hours for dates, the
time column's units for numbers), so one task spans time inside its window. Windows of a
fixed width are aligned to 0 (numbers) or to 1970-01-01 00:00 (dates); calendar periods
(``W``, ``M``, ``Y``) to their own starts.

The honest split for a sensor network is by period: ``split_by: time`` (the default) trains
on the earliest tasks, validates on the next and tests on the latest, so a model is scored on
a future it never saw; ``split_by: task`` hashes each time step instead.

Built on the ``table`` source (:mod:`tnpx.data.table`): this module checks the stations'
own columns, turns times into task keys (:mod:`tnpx.data.stations.windows`: a number, or a
date as text such as ``2024-01-31 12:00:00``; a window's key is its start), then hands the
long table of keys, inputs and outputs to :class:`~tnpx.data.table.TableSampler`, which reads,
checks, splits, normalises (on the training tasks) and pads batches. Bad data is a one-line
:class:`~tnpx.user_files.DataError` naming the file, row and column.

A gridded field joins as extra context, DeepSensor-style (``grid: {path: era5.nc, y: [t2m]}``,
:mod:`tnpx.data.stations.grid`): a task's context then holds the grid's cells at the grid step
at or before its time (or window start) beside its stations, one set of points whose outputs
are the stations' then the grid's, each point missing the other set's (``mask_yc``; the model
needs ``missing_outputs: true``); targets are stations, scored on the stations' outputs only.

    >>> import numpy as np, pandas as pd
    >>> from tnpx.data import batch_at
    >>> hours = np.repeat(np.arange(48.0), 12)
    >>> lat = np.tile(np.linspace(50, 55, 12), 48)
    >>> frame = pd.DataFrame({"hour": hours, "lat": lat, "temp": np.sin(hours / 5 + lat)})
    >>> sampler = StationsSampler.from_frame(frame, time="hour", coords=["lat"], y=["temp"])
    >>> float(min(sampler.task_keys("test"))) > float(max(sampler.task_keys("train")))
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch

from ...batch import Batch
from ...user_files import DataError, Table, as_list
from ..table import TableSampler
from ..table.config import TableConfig, TaskDraws
from ..table.reading import read_source, require_options
from ..table.times import parse_times
from .grid import GridContext
from .grid_match import StationSide
from .windows import check_window, window_keys

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd

SPLIT_BY = ("time", "task")


@dataclass
class StationsConfig(TaskDraws):
    """Which columns are what, how readings group into tasks, and how tasks are split.

    ``path``: a CSV or Parquet file. ``time``: the time column (numbers or dates);
    ``coords``: the coordinate columns (the inputs); ``y``: the output columns; ``station``:
    an optional column naming each station (its repeated readings are named by it);
    ``exposure``: a count model's exposure column (``poisson`` / ``negative-binomial``: each
    reading's factor on its rate, > 0; :mod:`tnpx.models.exposure`). ``window``:
    None (a task per time value), a number (a width in the time column's units) or a pandas
    offset (``"1D"``, ``"6h"``, ``"W"``) for dates; ``time_as_input`` adds each reading's
    offset within its window as an input. ``split_by``: ``time`` (the latest tasks are test)
    or ``task`` (hashed). ``grid``: a gridded field as extra context (path, y, dims, ...:
    :class:`~tnpx.data.stations.grid_match.GridOptions`). The other options are the ``table``
    source's (:class:`~tnpx.data.table.TableConfig`).
    """

    path: str | None = None
    time: str | None = None
    coords: str | list[str] = field(default_factory=list)
    y: str | list[str] = field(default_factory=list)
    station: str | None = None
    window: float | str | None = None
    time_as_input: bool = False
    split_by: str = "time"
    grid: dict | None = None
    # A count model's exposure column (the table source's option): each reading's factor on
    # its count's rate (hours observed, people at risk), > 0; never an input, never scaled.
    exposure: str | None = None


@dataclass
class _Columns:
    """The columns a stations table uses, checked against each other."""

    time: str
    coords: list
    y: list
    station: str | None

    @property
    def offset(self) -> str:
        """The name of the input column of times within a window."""
        return f"{self.time}_offset"


class StationsSampler(TableSampler):
    """Batches of time steps (or windows) of a station network; see :class:`StationsConfig`
    and the module docstring. Everything after the tasks are formed is the ``table``
    source's: ``dim_x``/``dim_y``, ``normalisation``, :meth:`task_keys` (each task's time or
    window start), ``sample``."""

    source: ClassVar[str] = "stations"

    def __init__(
        self,
        config: StationsConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        frame: pd.DataFrame | None = None,
    ):
        config = config or StationsConfig()
        cols = _check_options(config, frame is not None)
        table = read_source(frame if frame is not None else config.path, "stations")
        tasks = _task_table(table, cols, config)
        x = [*cols.coords, *([cols.offset] if config.time_as_input else [])]
        super().__init__(_table_config(config, cols, x), batch_size, seed, frame=tasks)
        self.config = config
        self.grid = None  # read after the stations' tasks, which it joins by time
        if config.grid is not None:
            self.grid = GridContext(config.grid, station_side(self, tasks.frame))
            self.dim_y += self.grid.dim_y

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, batch_size: int = 16, seed: int = 0, **options
    ) -> StationsSampler:
        """A sampler of the readings in a pandas DataFrame; ``options`` as
        :class:`StationsConfig`'s (``time``, ``coords``, ``y``, ...; not ``path``)."""
        if "path" in options:
            raise ValueError("from_frame reads the DataFrame given; path is not an option here")
        return cls(StationsConfig(**options), batch_size, seed, frame=frame)

    @property
    def normalisation(self) -> dict:
        """The ``table`` source's maps, with a grid's variables after the stations' outputs."""
        stored = super().normalisation
        return stored if self.grid is None else self.grid.joined(stored)

    @property
    def missing_outputs(self) -> bool:
        return self.grid is not None or super().missing_outputs

    def sample(
        self, generator: torch.Generator, batch_size: int | None = None, split: str = "train"
    ) -> Batch:
        """The ``table`` source's batch, with a grid's cells as extra context."""
        batch = super().sample(generator, batch_size, split)
        return batch if self.grid is None else self.grid.extend(batch, split, generator)


def _table_config(c: StationsConfig, cols: _Columns, x: list) -> TableConfig:
    """The ``table`` source's options for the long table of tasks: task key column ``time``."""
    by_time = c.split_by == "time"
    return TableConfig(
        task=cols.time,
        x=x,
        y=cols.y,
        exposure=c.exposure,
        **{f.name: getattr(c, f.name) for f in fields(TaskDraws)},
        split_by="time" if by_time else "task",
        split_column=cols.time if by_time else None,
    )


# -- options -----------------------------------------------------------------------------------
def _check_options(c: StationsConfig, has_frame: bool) -> _Columns:
    """The columns; a ``ValueError`` for an option out of range (the table source checks the
    options it shares)."""
    if c.path is None and not has_frame:
        raise ValueError(
            "data sampler 'stations' needs path: a CSV or Parquet file, one row a reading"
        )
    if not isinstance(c.time, str) or not c.time:
        raise ValueError("stations: name the time column (time: COLUMN)")
    coords, y = as_list(c.coords), as_list(c.y)
    for option, named in (("coords", coords), ("y", y)):
        if not named:
            raise ValueError(f"stations: name the {option} column(s) ({option}: [COLUMN, ...])")
    cols = _Columns(c.time, coords, y, c.station)
    named = [c.time, *coords, *y, *as_list(c.station), *as_list(c.exposure)]
    twice = sorted({str(col) for col in named if named.count(col) > 1})
    if twice:
        raise ValueError(
            f"stations: column(s) {twice} named more than once among time, coords, y, station "
            "and exposure"
        )
    if c.time_as_input and cols.offset in named:
        raise ValueError(
            f"stations: time_as_input adds an input {cols.offset!r}, which is already a column "
            "named here; rename that column"
        )
    if c.split_by not in SPLIT_BY:
        raise ValueError(
            f"stations: split_by must be time or task, got {c.split_by!r} (every time step "
            "holds stations of every region, so regions cannot be held out whole)"
        )
    check_window(c.window)
    if c.time_as_input and c.window is None:
        raise ValueError(
            "stations: time_as_input needs a window (without one, every reading of a task "
            "has the same time)"
        )
    return cols


# -- the long table of tasks -------------------------------------------------------------------
def _task_table(table: Table, cols: _Columns, c: StationsConfig) -> Table:
    """``table`` as the ``table`` source reads it: column ``time`` the task key (the time, or
    the window's start), the coordinates, ``<time>_offset`` with ``time_as_input``, the
    outputs, a count model's exposure column; rows in the user's order and index, so messages
    name the user's rows."""
    import pandas as pd

    station = [cols.station] if cols.station is not None else []
    exposure = as_list(c.exposure)  # checked by the table source, row by row
    named = {"time": [cols.time], "coords": cols.coords, "y": cols.y, "station": station}
    require_options(table, {**named, "exposure": exposure})
    if len(table.frame) == 0:
        raise DataError(f"{table.name}: the table has no rows")
    times = parse_times(table, cols.time)
    key, offset = window_keys(table, times, cols.time, c.window)
    frame = table.frame
    columns = {cols.time: key, **{col: frame[col] for col in cols.coords}}
    if c.time_as_input:
        columns[cols.offset] = offset
    columns.update({col: frame[col] for col in [*cols.y, *exposure]})
    tasks = pd.DataFrame(columns, index=frame.index)
    tasks.columns = list(columns)  # as given, whatever their type
    _check_repeats(table, tasks, frame, cols, c)
    return Table(tasks, table.name, table.from_file, table.offset)


def _check_repeats(
    table: Table, tasks: pd.DataFrame, frame: pd.DataFrame, cols: _Columns, c: StationsConfig
) -> None:
    """Two readings of one station, or of two stations at one place, in one task at the same
    inputs: an error (a context and a target point would share their inputs)."""
    key = [cols.time, *([cols.offset] if c.time_as_input else [])]
    if cols.station is not None:
        missing = frame[cols.station].isna().to_numpy()
        if missing.any():
            pos = int(missing.argmax())
            raise DataError(
                f"{table.name}, {table.where(pos)}, column {cols.station!r}: missing station"
            )
        ids = tasks[key].assign(**{"\0station": frame[cols.station].to_numpy()})
        _raise_repeat(table, ids, tasks, cols, c, "station")
    _raise_repeat(table, tasks[[*key, *cols.coords]], tasks, cols, c, "place")


def _raise_repeat(
    table: Table, ids: pd.DataFrame, tasks: pd.DataFrame, cols: _Columns, c: StationsConfig, by: str
) -> None:
    """An error naming the first row that repeats the ``ids`` of an earlier row, if any."""
    import pandas as pd

    repeat = ids.duplicated(keep="first").to_numpy()
    if not repeat.any():
        return
    pos = int(repeat.argmax())
    row_hash = pd.util.hash_pandas_object(ids, index=False).to_numpy()  # NaN hashes alike
    first = int(np.flatnonzero(row_hash[:pos] == row_hash[pos])[0])
    when = tasks[cols.time].iloc[pos]
    at = f"in the window starting {when}" if c.window is not None else f"at {cols.time}={when}"
    if c.time_as_input:
        at += f", {cols.offset}={tasks[cols.offset].iloc[pos]:g}"
    where = ", ".join(f"{col}={tasks[col].iloc[pos]}" for col in cols.coords)
    who = (
        f"station {table.frame[cols.station].iloc[pos]!r} has a second reading"
        if by == "station"
        else f"two readings share the place {where}"
    )
    fix = (
        "set time_as_input: true to tell a window's readings apart, or average them"
        if c.window is not None and not c.time_as_input
        else "average repeated readings or drop one"
    )
    raise DataError(
        f"{table.name}, {table.where(pos)}: {who} {at} (the first at {table.where(first)}; "
        f"{int(repeat.sum())} repeated reading(s) in all); {fix}"
    )


def station_side(sampler: StationsSampler, frame) -> StationSide:
    """``sampler``'s stations as the grid sees them; ``frame``: its long table of readings."""
    import pandas as pd

    c = sampler.config
    coords = as_list(c.coords)
    extent = {}
    for col in coords:
        values = pd.to_numeric(frame[col], errors="coerce").to_numpy(np.float64)
        extent[col] = (float(np.nanmin(values)), float(np.nanmax(values)))
    keys = {split: sampler.task_keys(split) for split in ("train", "val", "test")}
    x_map = sampler.normalisation["x"]
    return StationSide(coords, list(sampler.y_cols), c.time, keys, x_map, c.time_as_input,
                       c.normalise, extent)  # fmt: skip


__all__ = [
    "StationsConfig",
    "StationsSampler",
]
