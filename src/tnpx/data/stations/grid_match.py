"""How a grid lines up with a station network: the ``grid:`` options, which of the grid's dims
are the stations' coordinates, the stations' task times on the grid's clock, and the grid time
step each task reads.

One job, shared by training (:class:`~tnpx.data.stations.grid.GridContext`) and predicting
(:func:`tnpx.apply.grid_context.grid_context_rows`), so both join a grid to the stations the
same way and name a grid that does not fit in the same one-line
:class:`~tnpx.user_files.DataError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ...input_checks import check_option
from ...user_files import DataError, as_list
from ..field_arrays import time_values
from ..grid.files import GridData

MATCH = ("before", "nearest")


@dataclass
class GridOptions:
    """The ``grid:`` section of a ``stations`` config (:mod:`tnpx.data.stations.grid`)."""

    path: Any = None
    y: str | list[str] = field(default_factory=list)
    dims: list[str] | None = None
    time: str = "time"
    select: dict | None = None
    match: str = "before"
    points: int | None = None
    load: str = "auto"  # auto | memory | lazy, as the grid source's
    memory_limit_mb: float = 1024.0

    @classmethod
    def read(cls, spec: dict) -> GridOptions:
        """``spec`` checked; a ``ValueError`` of one line for a bad option."""
        if not isinstance(spec, dict):
            raise ValueError(f"stations: grid must be a mapping (path, y, ...), got {spec!r}")
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(spec) - set(valid))
        if unknown:
            raise ValueError(f"stations: unknown grid option(s) {unknown}; valid: {valid}")
        o = cls(**spec)
        if o.path is None:
            raise ValueError("stations: grid needs path: a NetCDF file, files or Zarr store")
        if not as_list(o.y):
            raise ValueError("stations: name the grid's variable(s) (grid: {y: [VARIABLE]})")
        check_option("stations: grid.match", o.match, MATCH)
        check_option("stations: grid.load", o.load, ("auto", "memory", "lazy"))
        if o.points is not None and not (type(o.points) is int and o.points >= 1):
            raise ValueError(f"stations: grid.points must be a positive integer, got {o.points!r}")
        return o


@dataclass
class StationSide:
    """What the grid joins: the stations' ``coords``, outputs ``y`` and time column ``time``;
    each split's task keys (``keys[split]``, in ``info["task"]`` order); the inputs' map
    ``x_map`` (``normalisation["x"]``); each coordinate's ``extent`` ``(low, high)`` (none at
    predict time)."""

    coords: list
    y: list
    time: str
    keys: dict[str, list]
    x_map: dict
    time_as_input: bool
    normalise: bool
    extent: dict


def space_dims(data: GridData, o: GridOptions, stations: StationSide) -> list[str]:
    """The grid's dims that are the stations' coordinates, in the coordinates' order.

    Args:
        data: the opened grid.
        o: its options; ``o.dims`` names the dims (None: the coordinates' names), ``o.time``
            the time dim.
        stations: the stations' side; where ``stations.extent`` has a coordinate, its range
            must overlap the grid's.

    Returns:
        ``[len(stations.coords)]`` dim names.

    Raises:
        DataError: a dim is missing or named twice, another dim holds more than one point, or
            a coordinate's range misses the grid's (other units).
    """
    where, coords = f"{data.name}: {', '.join(map(repr, data.y))}", stations.coords
    dims = list(coords if o.dims is None else as_list(o.dims))
    have = f"its dims are ({', '.join(data.dims)})"
    if len(dims) != len(coords) or len(set(dims)) != len(dims):
        raise DataError(
            f"{where}: grid.dims {dims} must name one grid dim for each of the coords {coords}, "
            f"in order; {have}"
        )
    for dim in [*dims, o.time]:
        if dim not in data.dims:
            option = "grid.time" if dim == o.time else "grid.dims"
            raise DataError(f"{where}: no dim {dim!r} (named by {option}); {have}")
    for dim, n in zip(data.dims, data.sizes):
        if dim not in (*dims, o.time) and n != 1:
            raise DataError(
                f"{where}: dim {dim!r} has {n} points but is neither time nor one of grid.dims; "
                f"select one (grid.select: {{{dim}: [VALUE, VALUE]}})"
            )
    for dim, col in zip(dims, coords):
        if col not in stations.extent:  # at predict time: no stations' extent to check
            continue
        low, high = stations.extent[col]
        grid = data.coords[dim]
        if high < grid.min() or low > grid.max():
            raise DataError(
                f"{where}: the stations' {col!r} runs from {low:g} to {high:g} but the grid's "
                f"{dim!r} from {grid.min():g} to {grid.max():g}; are they in the same units?"
            )
    return dims


def task_times(data: GridData, time: str, stations: StationSide) -> dict[str, np.ndarray]:
    """Each split's task times on the grid's clock.

    Args:
        data: the opened grid; its dim ``time`` must be sorted increasing.
        time: the grid's time dim.
        stations: the stations' side; ``stations.keys[split]`` are the task keys (numbers, or
            dates as text).

    Returns:
        ``{split: [n_tasks] float64}``: hours since 1970 for dates, the numbers otherwise.

    Raises:
        DataError: one side holds dates and the other numbers, or the grid's time is not
            sorted.
    """
    import pandas as pd

    keys = stations.keys
    dates = any(isinstance(k, str) for split in keys.values() for k in split)
    index = data.labels[time]
    grid_dates = np.issubdtype(index.dtype, np.datetime64) or (
        len(index) > 0 and hasattr(index[0], "calendar")
    )
    if dates != grid_dates:
        kinds = ("dates", "numbers")
        raise DataError(
            f"{data.name}: the grid's {time!r} holds {kinds[not grid_dates]} but the stations' "
            f"{stations.time!r} holds {kinds[not dates]}; both must be dates or both numbers"
        )
    if not (index.is_monotonic_increasing and index.is_unique):
        raise DataError(f"{data.name}: the grid's {time!r} is not sorted increasing")
    out = {}
    for split, split_keys in keys.items():
        if not dates:
            out[split] = np.asarray(split_keys, np.float64).reshape(-1)
            continue
        stamps = pd.to_datetime(pd.Index(split_keys, dtype=object), utc=True).tz_localize(None)
        out[split] = time_values(stamps.to_numpy("datetime64[ns]"))
    return out


def match_steps(
    data: GridData,
    o: GridOptions,
    times: np.ndarray,
    when: np.ndarray,
    stations: StationSide,
    split: str,
) -> np.ndarray:
    """The grid time step of each of a split's tasks.

    Args:
        data: the opened grid (its name and time labels, for the message).
        o: its options; ``o.match``: ``before`` takes the last step at or before a task's
            time, ``nearest`` the nearest step.
        times: ``[n_steps]`` float64, the grid's times (as :func:`task_times` gives the
            tasks'), increasing.
        when: ``[n_tasks]`` float64, the tasks' times (:func:`task_times`).
        stations: the stations' side, naming a task in the message.
        split: the tasks' split, ``stations.keys[split]`` their keys.

    Returns:
        ``[n_tasks]`` int indices into ``times``.

    Raises:
        DataError: naming the first task the grid does not cover: no step at or before it
            (``before``), or the step found lies as far as the grid's largest time spacing
            or further.
    """
    before = np.searchsorted(times, when, side="right") - 1  # -1: none at or before
    step = before.clip(0, len(times) - 1)
    if o.match == "nearest":
        after = (before + 1).clip(0, len(times) - 1)
        closer = np.abs(times[after] - when) < np.abs(when - times[step])
        step = np.where(closer, after, step)
    gap = np.abs(when - times[step])
    reach = np.diff(times).max() if len(times) > 1 else 0.0  # the grid's largest time step
    bad = (gap >= reach) & (gap > 0)
    if o.match == "before":
        bad |= before < 0
    if not bad.any():
        return step
    i = int(np.argmax(bad))
    labels = data.labels[o.time]
    where = "at or before" if o.match == "before" else "near"
    raise DataError(
        f"{data.name}: {', '.join(map(repr, data.y))} has no {o.time!r} step {where} the "
        f"{split} task {stations.time}={stations.keys[split][i]} ({int(bad.sum())} such task(s); "
        f"the grid runs from {labels[0]} to {labels[-1]}); extend the grid or cut the stations' "
        "period"
    )
