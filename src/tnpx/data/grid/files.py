"""Opening a gridded data set for the ``grid`` task source: files, variables, dims, coordinates.

One job: turning ``path`` (a NetCDF file, a list or glob of them, a Zarr store) or an
:class:`xarray.Dataset` into a :class:`GridData`: the output variables, lazily indexed until
:meth:`GridData.load` reads them into memory, their dims and float64 coordinates, the static
inputs (always in memory: they are defined on fewer dims), each checked with an error of one
line naming the file and variable. Windows and statistics are in :mod:`tnpx.data.grid.windows`,
the sampler in :mod:`tnpx.data.grid`.

Several files are joined along the one dim whose coordinates differ between them (time, for
monthly files) without dask: each keeps its own lazily indexed arrays and a read that spans two
files reads a piece of each. Coordinates become float64 inputs: numbers as they are, datetime64
as hours since 1970-01-01 (:func:`tnpx.data.field_arrays.time_values`), cftime dates (a
360-day calendar, say) as hours since 1970-01-01 of their own calendar.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...extras import require
from ...user_files import DataError
from ..field_arrays import coordinate_unit, time_values
from .exposure import read_exposure
from .fill_values import as_missing

if TYPE_CHECKING:  # pragma: no cover
    import xarray

GLOB_CHARS = set("*?[")


@dataclass
class Part:
    """One file's output variables (lazily indexed DataArrays, or one numpy array ``[n_y,
    ...]`` once loaded) covering positions ``[start, start + length)`` of the joined dim."""

    arrays: list | np.ndarray
    start: int
    length: int


@dataclass
class GridData:
    """Output variables ``y`` on ``dims`` (sizes ``sizes``, after ``select``) and the static
    inputs. ``coords[dim]``: float64 inputs ``[sizes[d]]``; ``labels[dim]``: the coordinate as
    a pandas Index, for ``select``-style boxes; ``statics[name]``: ``(dims, float64 array)``;
    ``name``: the file(s) in messages; ``units[dim or static]``: the unit of its inputs
    (:func:`~tnpx.data.field_arrays.coordinate_unit`); ``missing``: variable -> declared fill
    values, read as NaN (``missing_value:``)."""

    name: str
    y: list[str]
    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    coords: dict[str, np.ndarray]
    labels: dict
    statics: dict[str, tuple[tuple[str, ...], np.ndarray]]
    parts: list[Part]
    joined: int = 0  # the dim the parts are joined along
    lazy: bool = True
    itemsize: int = field(default=8)
    units: dict[str, str] = field(default_factory=dict)
    missing: dict[str, np.ndarray] = field(default_factory=dict)  # declared fill values
    exposure: tuple[tuple[str, ...], np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes the outputs take in memory."""
        return int(np.prod(self.sizes)) * len(self.y) * self.itemsize

    def read(self, starts, lengths) -> np.ndarray:
        """The block ``[n_y, *lengths]`` of every output starting at index ``starts`` (one per
        dim); in lazy mode only that block is read from the backend."""
        j, lo = self.joined, int(starts[self.joined])
        hi = lo + int(lengths[self.joined])
        pieces = []
        for part in self.parts:
            a, b = max(lo, part.start), min(hi, part.start + part.length)
            if a >= b:
                continue
            key = [slice(int(s), int(s) + int(n)) for s, n in zip(starts, lengths)]
            key[j] = slice(a - part.start, b - part.start)
            if isinstance(part.arrays, np.ndarray):
                pieces.append(part.arrays[(slice(None), *key)])
            else:
                blocks = [np.asarray(da[tuple(key)].values) for da in part.arrays]
                pieces.append(blocks[0][None] if len(blocks) == 1 else np.stack(blocks))
        block = pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=j + 1)
        if any(var in self.missing for var in self.y):  # a new array: the input stays as it is
            block = np.stack(
                [as_missing(v, self.missing.get(var)) for var, v in zip(self.y, block)]
            )
        return block

    def load(self) -> None:
        """Read every output into memory (one numpy array): batches then index it."""
        if self.lazy:
            block = self.read([0] * len(self.dims), self.sizes)  # declared fills now NaN
            self.parts, self.joined, self.lazy = [Part(block, 0, self.sizes[0])], 0, False
            self.missing = {}

    def positions(self, box: dict, option: str) -> dict[str, tuple[int, int]]:
        """Index ranges ``[lo, hi)`` per dim of the cells whose coordinates lie in ``box``
        (dim -> ``[low, high]``, both included; dates as strings)."""
        return _positions(self.labels, box, self.dims, self.name, self.y, option)


def label_range(index, bounds, where: str) -> tuple[int, int]:
    """Positions ``[lo, hi)`` of the labels of the monotonic pandas ``index`` that lie in
    ``bounds = [low, high]``."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ValueError(f"{where} must be [low, high], got {bounds!r}")
    low, high = bounds
    if index.is_monotonic_increasing:
        lo, hi = index.slice_locs(low, high)
    elif index.is_monotonic_decreasing:
        lo, hi = index.slice_locs(high, low)
    else:
        raise DataError(f"{where}: the coordinate is not sorted, so it cannot be cut by value")
    if hi <= lo:
        raise DataError(
            f"{where} = {list(bounds)} holds no grid point (the coordinate runs from "
            f"{index[0]} to {index[-1]})"
        )
    return int(lo), int(hi)


def open_grid(
    source,
    y: list[str],
    static: list[str],
    select: dict | None = None,
    static_path: str | None = None,
    missing: dict[str, np.ndarray] | None = None,
    exposure: str | None = None,
) -> GridData:
    """``source`` (a path, a list or glob of paths, or an ``xarray.Dataset``) as a lazily
    indexed :class:`GridData` of the outputs ``y`` and the static inputs ``static``, cut to
    ``select`` (dim -> ``[low, high]``); ``missing``: variable -> fill values read as NaN;
    ``exposure``: a count model's exposure variable (:mod:`tnpx.data.grid.exposure`)."""
    xr = require("xarray", "xarray", "the grid data source")
    if isinstance(source, xr.Dataset):
        name, datasets = "the Dataset", [source]
    else:
        paths = _paths(source)
        name = str(paths[0]) if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} files)"
        datasets = [_open(p) for p in paths]
    named = [(v, "y") for v in y] + [(v, "static") for v in static if static_path is None]
    named += [(exposure, "exposure")] if exposure is not None else []
    for data, path in zip(datasets, [name] if len(datasets) == 1 else paths):
        for var, option in named:
            _require_variable(data, var, option, path)
    first = datasets[0][y[0]]
    dims = tuple(map(str, first.dims))
    for var in y[1:]:
        if set(datasets[0][var].dims) != set(dims):
            raise DataError(
                f"{name}: outputs must share dims: {var!r} has {_names(datasets[0][var].dims)}, "
                f"{y[0]!r} has {_names(dims)}"
            )
    joined, order, labels = _join(datasets, dims, name)
    arrays = [[datasets[i][v].transpose(*dims).variable for v in y] for i in order]
    cut = {d: (0, len(labels[d])) for d in dims}
    if select:
        cut.update(_positions(labels, select, dims, name, y, "select"))
    labels = {d: labels[d][lo:hi] for d, (lo, hi) in cut.items()}
    sizes = tuple(len(labels[d]) for d in dims)
    parts = _parts(arrays, joined, dims, cut)
    coords = {d: coordinate_values(labels[d], f"{name}: coordinate {d!r}") for d in dims}
    missing = missing or {}
    statics = _statics(static, static_path, datasets[0], labels, dims, name)
    statics = {s: (own, as_missing(v, missing.get(s))) for s, (own, v) in statics.items()}
    exposed = exposure and read_exposure(datasets, exposure, labels, dims, joined, name, _statics)
    itemsize = max(np.dtype(first.dtype).itemsize, 4)
    attrs = {v: datasets[0][v].attrs for v in [*dims, *statics] if v in datasets[0].variables}
    units = {v: coordinate_unit(labels.get(v, []), attrs.get(v, {})) for v in [*dims, *statics]}
    return GridData(name, list(y), dims, sizes, coords, labels, statics, parts, joined, itemsize=
                    itemsize, units=units, missing=missing, exposure=exposed or None)  # fmt: skip


def coordinate_values(index, where: str) -> np.ndarray:
    """A coordinate as float64 inputs ``[n]`` (see the module docstring)."""
    values = np.asarray(index)
    if values.dtype == object and len(values) and hasattr(values[0], "calendar"):
        import cftime

        values = cftime.date2num(values, "hours since 1970-01-01", values[0].calendar)
    elif np.issubdtype(values.dtype, np.timedelta64):
        values = values / np.timedelta64(1, "h")
    try:
        out = time_values(np.asarray(values))
    except TypeError:
        what = values.dtype
        raise DataError(f"{where}: values of type {what} are not numbers or dates") from None
    if not np.isfinite(out).all():
        raise DataError(f"{where}: has missing values")
    return out


# -- files -------------------------------------------------------------------------------------
def _paths(source) -> list[Path]:
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source or [])
    if not items:
        raise ValueError("data sampler 'grid' needs path: a NetCDF file, files or Zarr store")
    paths = []
    for item in map(str, items):
        if GLOB_CHARS & set(item):
            found = sorted(glob.glob(item))
            if not found:
                raise DataError(f"{item}: no file matches")
            paths += map(Path, found)
        else:
            paths.append(Path(item))
    for path in paths:
        if not path.exists():
            raise DataError(f"{path}: no such file")
    return paths


def _open(path: Path) -> xarray.Dataset:
    """``path`` opened lazily (no cache: a read keeps only what it asked for)."""
    xr = require("xarray", "xarray", "the grid data source")
    zarr = path.is_dir() or path.suffix == ".zarr"
    if zarr:
        require("zarr", "xarray", "a Zarr store")
    try:
        if zarr:
            return xr.open_dataset(path, engine="zarr", chunks=None, cache=False)
        return xr.open_dataset(path, cache=False)
    except Exception as err:  # any backend failure: report it against the file
        text = str(err).strip().splitlines()
        what = "Zarr store" if zarr else "NetCDF file"
        raise DataError(
            f"{path}: cannot read the {what} ({text[0] if text else type(err).__name__})"
        ) from None


def _require_variable(data, var: str, option: str, where) -> None:
    if var not in data.data_vars:
        have = ", ".join(sorted(map(str, data.data_vars))) or "none"
        raise DataError(f"{where}: no variable {var!r} (named by {option}); it has: {have}")


def _names(items) -> str:
    return "(" + ", ".join(map(str, items)) + ")"


def _index(data, dim: str):
    """The coordinate of ``dim`` as a pandas Index (positions where it has none)."""
    import pandas as pd

    return data.indexes[dim] if dim in data.indexes else pd.RangeIndex(data.sizes[dim])


def _join(datasets: list, dims: tuple[str, ...], name: str) -> tuple[int, list[int], dict]:
    """The dim several files are joined along (the one whose coordinates differ), the files
    in the order of their coordinates along it, and the joined coordinates (pandas Indexes)."""
    indexes = [{d: _index(data, d) for d in dims} for data in datasets]
    if len(datasets) == 1:
        return 0, [0], indexes[0]
    differ = [d for d in dims if any(not ix[d].equals(indexes[0][d]) for ix in indexes[1:])]
    if len(differ) != 1:
        why = "none" if not differ else _names(differ)
        raise DataError(
            f"{name}: files are joined along the one dim whose coordinates differ between "
            f"them; here {why} do"
        )
    dim = differ[0]
    order = sorted(range(len(datasets)), key=lambda i: indexes[i][dim][0])
    index = indexes[order[0]][dim].append([indexes[i][dim] for i in order[1:]])
    if not index.is_monotonic_increasing or not index.is_unique:
        raise DataError(f"{name}: the files' {dim!r} coordinates overlap or are not sorted")
    return dims.index(dim), order, {**indexes[0], dim: index}


def _positions(labels, box: dict, dims, name, y, option: str) -> dict[str, tuple[int, int]]:
    out = {}
    for dim, bounds in box.items():
        if dim not in dims:
            raise DataError(
                f"{name}: {option} names dim {dim!r}, which {', '.join(map(repr, y))} do not "
                f"have; their dims are {_names(dims)}"
            )
        out[dim] = label_range(labels[dim], bounds, f"{name}: {option}.{dim}")
    return out


def _parts(arrays, joined: int, dims, cut: dict) -> list[Part]:
    """Each file's arrays cut to ``cut`` (positions per dim; the joined dim's are global)."""
    lo, hi = cut[dims[joined]]
    parts, start = [], 0
    for variables in arrays:
        end = start + variables[0].shape[joined]
        a, b = max(lo, start), min(hi, end)
        if a < b:
            key = {d: slice(*cut[d]) for d in dims}
            key[dims[joined]] = slice(a - start, b - start)
            parts.append(Part([v.isel(key) for v in variables], a - lo, b - a))
        start = end
    return parts


def _statics(static, static_path, data, labels, dims, name, what="static input") -> dict:
    """Each static input (or ``what``) on the outputs' grid (its dims a subset of theirs),
    float64."""
    if not static:
        return {}
    where = name
    if static_path is not None:
        paths = _paths(static_path)
        if len(paths) > 1:
            raise DataError(f"{static_path}: static_path names {len(paths)} files; name one")
        data, where = _open(paths[0]), str(paths[0])
        for var in static:
            _require_variable(data, var, "static", where)
    out = {}
    for var in static:
        da = data[var]
        da = da.squeeze([d for d in da.dims if da.sizes[d] == 1], drop=True)  # invariant fields
        extra = [d for d in da.dims if d not in dims]
        if extra:
            raise DataError(
                f"{where}: {what} {var!r} has dims {_names(da.dims)}; a {what}'s "
                f"dims must be among the outputs' {_names(dims)}"
            )
        own = tuple(d for d in dims if d in da.dims)
        da = da.transpose(*own)
        for d in own:  # on the outputs' cells, matched by coordinate
            index = _index(data, d)
            at = index.get_indexer(labels[d], method="nearest") if len(index) else []
            if len(index) == 0 or not _close(index[at], labels[d]):
                raise DataError(f"{where}: {what} {var!r} does not cover the {d!r} grid")
            da = da.isel({d: at})
        out[var] = (own, np.asarray(da.values, dtype=np.float64))
    return out


def _close(found, wanted) -> bool:
    a = coordinate_values(found, "static coordinate")
    b = coordinate_values(wanted, "coordinate")
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-6))
