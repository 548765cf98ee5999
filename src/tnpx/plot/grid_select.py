"""Which windows of a ``grid`` source ``tnpx plot`` draws, and time written as dates.

A user asks about a month and a region: ``--time 2010-05`` (a date or a period: ``2010``,
``2010-05``, ``2010-05-17``), ``--period 2010-01 2010-06`` (both ends included),
``--region LAT0 LAT1 LON0 LON1`` and ``--select DIM=LO:HI`` (``LO,HI`` where a date holds a
colon), the same box the grid config's ``select`` takes. :func:`selection_box` turns them into
``{dim: [low, high]}``; :func:`restricted` gives a view of the sampler whose ``split`` draws only
the windows lying wholly inside the box, spread evenly over them in their grid order (the first
dim, time for most grids, slowest), so ``grid_figure`` draws those.

The grid source stores times as hours since 1970-01-01 (:func:`tnpx.data.field_arrays.
time_values`; of the data's own calendar for cftime dates): :func:`time_dims` finds the dims
that are times, :func:`date_text` writes such hours as a date, and :func:`date_axis` labels a
map's time axis with its cells' dates.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ..data.grid import GridSampler
from ..user_files import DataError

EPOCH = np.datetime64("1970-01-01T00:00", "s")


def time_dims(sampler: GridSampler) -> dict[str, str | None]:
    """The dims whose coordinate is a time: dim -> its cftime calendar (None: numpy dates)."""
    out = {}
    for dim, labels in sampler.data.labels.items():
        values = np.asarray(labels)
        if np.issubdtype(values.dtype, np.datetime64):
            out[dim] = None
        elif values.dtype == object and len(values) and hasattr(values[0], "calendar"):
            out[dim] = values[0].calendar
    return out


def date_text(hours: float, calendar: str | None = None) -> str:
    """Hours since 1970-01-01 as ``YYYY-MM-DD`` (``YYYY-MM-DD HH:MM`` off midnight)."""
    if calendar is None:
        stamp = (EPOCH + np.timedelta64(int(round(hours * 3600)), "s")).astype(object)
    else:
        import cftime

        stamp = cftime.num2date(hours, "hours since 1970-01-01", calendar)
    day = f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}"
    return (
        day
        if (stamp.hour, stamp.minute) == (0, 0)
        else f"{day} {stamp.hour:02d}:{stamp.minute:02d}"
    )


def on_grid(values, coords: np.ndarray) -> np.ndarray:
    """Each of ``values`` (inputs read back from float32 model units) as the nearest of the
    grid's ``coords``, so a date is the data's own, not a minute off."""
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    return coords[np.abs(coords[None, :] - values[:, None]).argmin(1)]


def date_axis(axis, ends, cells: np.ndarray, calendar: str | None = None, most: int = 6) -> None:
    """Label the matplotlib ``axis`` of an image spanning ``ends`` (its outer edges) in
    ``len(cells)`` cells of times ``cells`` (hours since 1970-01-01) with dates: a tick at the
    centre of every cell (every k-th, at most ``most``), each written as its cell's own date."""
    from matplotlib.ticker import FixedLocator, FuncFormatter

    n = len(cells)
    centres = ends[0] + (np.arange(n) + 0.5) * (ends[1] - ends[0]) / n

    def text(value, _=None) -> str:  # the date of the cell nearest the tick
        return date_text(float(cells[np.abs(centres - value).argmin()]), calendar)

    axis.set_major_locator(FixedLocator(centres[:: -(-n // most)]))
    axis.set_major_formatter(FuncFormatter(text))


def parse_select(items: list[str]) -> dict[str, list[str]]:
    """``["lat=-10:10", "time=2010-01-01T00:00,2010-02-01"]`` as ``{dim: [low, high]}`` (text)."""
    box = {}
    for item in items:
        dim, _, bounds = item.partition("=")
        parts = bounds.split("," if "," in bounds else ":")
        if not dim or len(parts) != 2 or not all(p.strip() for p in parts):
            raise DataError(
                f"--select {item!r} is not DIM=LO:HI (use DIM=LO,HI where a date holds a colon)"
            )
        box[dim.strip()] = [p.strip() for p in parts]
    return box


def _geo_dims(sampler: GridSampler) -> tuple[str, str]:
    """The latitude and longitude dims (named ``lat...`` and ``lon...``) ``--region`` cuts."""
    dims = sampler.data.dims
    found = [next((d for d in dims if d.lower().startswith(p)), None) for p in ("lat", "lon")]
    if None in found:
        raise DataError(
            f"{sampler.data.name}: --region needs dims named lat... and lon...; the grid's dims "
            f"are ({', '.join(dims)}): use --select DIM=LO:HI"
        )
    return found[0], found[1]


def _time_dim(sampler: GridSampler, option: str) -> str:
    times = list(time_dims(sampler)) or [d for d in sampler.data.dims if d == "time"]
    if len(times) != 1:
        raise DataError(
            f"{sampler.data.name}: {option} needs one time dim; the grid's dims are "
            f"({', '.join(sampler.data.dims)}): use --select DIM=LO:HI"
        )
    return times[0]


def selection_box(
    sampler: GridSampler,
    time: str | None = None,
    period: list[str] | None = None,
    region: list[float] | None = None,
    select: list[str] | None = None,
) -> dict[str, list]:
    """The box ``{dim: [low, high]}`` of the plot options (module docstring); bounds of a
    numeric coordinate as numbers, of a time as the date text given (checked to be a date)."""
    box: dict[str, list] = {}
    if time is not None or period:
        if time is not None and period:
            raise DataError("--time and --period both choose the period: give one")
        dim = _time_dim(sampler, "--time" if time is not None else "--period")
        box[dim] = [time, time] if time is not None else list(period)
    if region:
        lat, lon = _geo_dims(sampler)
        box[lat], box[lon] = sorted(region[:2]), sorted(region[2:])
    for dim, bounds in parse_select(select or []).items():
        box[dim] = bounds
    times = time_dims(sampler)
    for dim, bounds in box.items():
        if dim not in sampler.data.dims:
            raise DataError(
                f"{sampler.data.name}: the plot selects dim {dim!r}, which the grid lacks; its "
                f"dims are ({', '.join(sampler.data.dims)})"
            )
        box[dim] = [_bound(b, dim, dim in times) for b in bounds]
    return box


def _bound(value, dim: str, is_time: bool):
    """A bound as the coordinate takes it: a date's text (parsed here to refuse a bad one),
    else a number."""
    if is_time:
        import pandas as pd

        try:
            pd.Timestamp(str(value))
        except ValueError:
            raise DataError(
                f"{dim} bound {value!r} is not a date: give e.g. 2010, 2010-05 or 2010-05-17"
            ) from None
        return str(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DataError(f"{dim} bound {value!r} is not a number") from None


def window_origins(sampler: GridSampler, box: dict, split: str = "test") -> torch.Tensor:
    """``[n, n_dims]`` the origins of ``split``'s windows lying wholly inside ``box``, in
    row-major grid order; a :class:`DataError` naming the split's extent where none does."""
    data, window = sampler.data, sampler.window
    cut = data.positions(box, "selection") if box else {}
    lo = np.array([cut.get(d, (0, n))[0] for d, n in zip(data.dims, data.sizes)])
    hi = np.array([cut.get(d, (0, n))[1] for d, n in zip(data.dims, data.sizes)])
    for d, (a, b, w) in enumerate(zip(lo, hi, window)):
        if b - a < w:
            raise DataError(
                f"{data.name}: the selection holds {b - a} {data.dims[d]} point(s); a window "
                f"spans {w}: widen it"
            )
    windows = sampler.windows(split)
    start, room = windows.start.numpy(), np.array(windows.room)
    a, b = np.maximum(lo - start, 0), np.minimum(hi - np.array(window) + 1 - start, room)
    origins = _listed(windows, a, b) if (b > a).all() else np.zeros((0, len(room)), np.int64)
    if not len(origins):
        raise DataError(
            f"{data.name}: no {split} window lies inside the selection {box}; the {split} "
            f"windows start within {_extent(sampler, start, room)} (choose within it, or "
            "--split train / val)"
        )
    return torch.from_numpy(origins + start)


def _listed(windows, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The origins (relative to ``windows.start``) in ``[a, b)`` per dim that ``windows`` lists
    (all of them, or those set in its packed per-row mask)."""
    axes = np.meshgrid(*[np.arange(x, y) for x, y in zip(a, b)], indexing="ij")
    if windows.bits is None:
        return np.stack([g.ravel() for g in axes], -1)
    rest, out = windows.room[1:], []
    inner = tuple(slice(x, y) for x, y in zip(a[1:], b[1:]))
    for row in range(a[0], b[0]):
        listed = np.unpackbits(windows.bits[row], count=math.prod(rest)).reshape(rest)[inner]
        for offset in np.argwhere(listed):
            out.append([row, *(offset + a[1:])])
    return np.array(out, dtype=np.int64).reshape(-1, len(a))


def _extent(sampler: GridSampler, start: np.ndarray, room: np.ndarray) -> str:
    """``dim first..last`` of the origins, in the data's labels (dates as dates)."""
    parts = []
    for d, dim in enumerate(sampler.data.dims):
        labels = sampler.data.labels[dim]
        first, last = labels[int(start[d])], labels[int(start[d] + room[d] - 1)]
        parts.append(f"{dim} {label_text(first)}..{label_text(last)}")
    return ", ".join(parts)


def label_text(value) -> str:
    """A coordinate label as text, a date's midnight left off."""
    text = str(value)
    return text[:-9] if text.endswith(" 00:00:00") else text


class _Chosen:
    """The chosen origins as a split's windows: a batch of ``b`` takes ``b`` of them spread
    evenly, in order (repeating only when fewer are chosen)."""

    excluded = 0

    def __init__(self, origins: torch.Tensor):
        self.origins = origins

    def __len__(self) -> int:
        return len(self.origins)

    def draw(self, g: torch.Generator, b: int) -> torch.Tensor:
        n = len(self.origins)
        picks = torch.arange(b) % n if b >= n else torch.linspace(0, n - 1, b).round().long()
        return self.origins[picks]


def restricted(sampler: GridSampler, box: dict, split: str = "test") -> GridSampler:
    """A view of ``sampler`` whose ``split`` draws only the windows inside ``box``
    (:func:`window_origins`); ``len(view.windows(split))``: how many. The sampler is not
    changed; the view shares its data."""
    chosen = _Chosen(window_origins(sampler, box, split))
    view = copy.copy(sampler)
    view.windows = lambda s="train": chosen if s == split else sampler.windows(s)
    return view
