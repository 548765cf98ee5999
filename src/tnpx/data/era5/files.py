"""Where the TE-4 temperature and elevation fields come from: reading the data sets.

One job: reading ERA5 NetCDF as the Copernicus service delivers them, and the
``iris-sample-data`` stand-in with ``ferret-datasets`` relief grids, into the Dataset that the
sampler of :mod:`tnpx.data.era5` takes. Task sampling lives there (regions and statistics in
:mod:`tnpx.data.era5.regions`); it re-exports the public names of this module.

Pieces:

- :func:`load_era5` reads NetCDF files as the Copernicus Climate Data Store (CDS) delivers them
  and returns a :class:`xarray.Dataset` with ``temperature`` (time, lat, lon) and ``elevation``
  (lat, lon), latitude ascending, longitude in [-180, 180).
- :func:`iris_standin`: an offline stand-in of the same form, built from the PyPI package
  ``iris-sample-data`` (North America, annual means, :data:`STANDIN_FILES`), with elevation
  from the ETOPO relief grids of the Debian package ``ferret-datasets`` (:data:`RELIEF_FILES`).

xarray and netCDF4 are optional (``pip install 'tnpx[xarray]'``); this module imports without
them and raises an ``ImportError`` naming that extra when a function needs them.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...extras import require

if TYPE_CHECKING:  # pragma: no cover
    import xarray

G = 9.80665  # standard gravity (m s^-2): ERA5 orography = geopotential z / G
_EPS = 1e-6  # tolerance (degrees) when comparing grid coordinates

#: ``iris-sample-data`` files with 1.5 m air temperature, by scenario (identical until 1999).
STANDIN_FILES = {"E1": "E1_north_america.nc", "A1B": "A1B_north_america.nc"}

#: Relief grids of the Debian package ``ferret-datasets`` (ETOPO 20', 40', 60'), tried in order.
RELIEF_FILES = tuple(f"/usr/share/ferret-vis/data/etopo{m}.cdf" for m in (20, 40, 60))

_GEOPOTENTIAL_UNITS = {"m**2s**-2", "m2s-2", "m^2s^-2", "m2/s2", "m**2/s**2", "m^2/s^2"}
_CDS_NAMES = {"valid_time": "time", "latitude": "lat", "longitude": "lon"}


def _xarray():
    """The ``xarray`` module, or an ImportError that says how to install it."""
    return require("xarray", "xarray", "tnpx.data.era5")


# --- loading --------------------------------------------------------------------------------


def load_era5(
    path_or_paths: str | os.PathLike | list[str | os.PathLike],
    temperature_var: str = "t2m",
    elevation: str | os.PathLike | xarray.DataArray | None = None,
    elevation_var: str = "z",
    year: int | None = None,
    hours: int | None = 6,
    resolution: float | None = 0.5,
) -> xarray.Dataset:
    """Read ERA5 2 m temperature (and orography) from CDS NetCDF files.

    Handles both CDS layouts: the time axis named ``time`` or ``valid_time``, an ``expver``
    axis (ERA5 / ERA5T mixed; the first non-missing value is kept), coordinates ``latitude``
    (usually descending) and ``longitude`` (usually in [0, 360)), packed integers.

    Args:
        path_or_paths: one NetCDF file or a list of them (e.g. one per month); their time
            steps are concatenated, sorted and de-duplicated.
        temperature_var: the temperature variable (``t2m`` in CDS files), kept in its units.
        elevation: orography: a NetCDF path (the ERA5 invariant file), a DataArray with
            ``lat``/``lon`` or ``latitude``/``longitude`` coordinates, or None to take
            ``elevation_var`` from the first temperature file when it has one (else no
            elevation). Geopotential (variable ``z`` without units, or units m**2 s**-2) is
            divided by ``G`` to give metres; anything else is taken to be metres already.
        elevation_var: the orography variable in the elevation file (``z``: geopotential).
        year: keep only the time steps of this year (TE-4: 2019); None keeps all.
        hours: keep time steps whose hour of day is a multiple of ``hours`` (6: 00, 06, 12 and
            18 UTC); None keeps all.
        resolution: keep the grid points whose latitude and longitude are multiples of this
            many degrees (0.5 turns the CDS default 0.25° grid into TE-4's 0.5°) and check the
            result is spaced ``resolution`` apart; None keeps the file's grid.

    Returns:
        A Dataset with ``temperature`` ``[time, lat, lon]`` and, when available,
        ``elevation`` ``[lat, lon]`` in metres; ``lat`` ascending, ``lon`` ascending in
        [-180, 180), ``time`` datetime64.

    Raises:
        FileNotFoundError: a file does not exist.
        ValueError: a variable is missing (the message lists the file's variables), no time
            step is left, or the grid cannot be brought to ``resolution``.
    """
    xr = _xarray()
    paths = [path_or_paths] if isinstance(path_or_paths, (str, os.PathLike)) else path_or_paths
    if not paths:
        raise ValueError("load_era5 needs at least one file")
    pieces = [
        _read_temperature(p, temperature_var, year, hours, resolution) for p in map(Path, paths)
    ]
    temperature = xr.concat(pieces, "time", join="exact") if len(pieces) > 1 else pieces[0]
    _, first = np.unique(temperature["time"].values, return_index=True)
    temperature = temperature.isel(time=first)
    if temperature.sizes["time"] == 0:
        raise ValueError(
            f"no time step left in {[str(p) for p in paths]} (year={year}, hours={hours})"
        )
    data = xr.Dataset({"temperature": temperature})
    if elevation is None:
        elevation = _read_variable(Path(paths[0]), elevation_var, required=False)
    elif isinstance(elevation, (str, os.PathLike)):
        elevation = _read_variable(Path(elevation), elevation_var, required=True)
    if elevation is not None:
        data["elevation"] = _elevation_on(elevation, temperature)
    return data


def _open(path: Path) -> xarray.Dataset:
    if not path.exists():
        raise FileNotFoundError(f"ERA5 file not found: {path}")
    try:
        return _xarray().open_dataset(path)
    except Exception as err:  # any backend failure: report it against the file
        text = str(err).strip().splitlines()
        raise ValueError(
            f"{path}: cannot read the NetCDF file ({text[0] if text else err!r})"
        ) from err


def _pick(data: xarray.Dataset, name: str, path: Path) -> xarray.DataArray:
    if name not in data.data_vars:
        have = ", ".join(sorted(map(str, data.data_vars))) or "none"
        raise ValueError(f"{path}: no variable {name!r}; the file has: {have}")
    return data[name]


def _read_temperature(
    path: Path, name: str, year: int | None, hours: int | None, resolution: float | None
) -> xarray.DataArray:
    """One file's temperature, normalised and sub-sampled, loaded into memory."""
    with _open(path) as data:
        temperature = _normalise(_pick(data, name, path), ("time", "lat", "lon"), path)
        temperature = _select_times(temperature, year, hours, path)
        if resolution is not None:
            temperature = _on_resolution(temperature, resolution, path)
        return temperature.load()


def _read_variable(path: Path, name: str, required: bool) -> xarray.DataArray | None:
    with _open(path) as data:
        if name not in data.data_vars and not required:
            return None
        return _pick(data, name, path).load()


def _normalise(da: xarray.DataArray, dims: tuple[str, ...], where) -> xarray.DataArray:
    """``da`` with dims ``dims`` (names from :data:`_CDS_NAMES`), ``lat`` ascending, ``lon``
    ascending in [-180, 180) without duplicates, and no other coordinates. A time axis that
    ``dims`` lacks (an invariant field) keeps its first step; other length-1 axes go."""
    da = da.reset_coords(drop=True)
    da = da.rename({k: v for k, v in _CDS_NAMES.items() if k in da.dims})
    if "expver" in da.dims:  # ERA5 and ERA5T in one file: each step is valid in one expver
        merged = da.isel(expver=0)
        for i in range(1, da.sizes["expver"]):
            merged = merged.fillna(da.isel(expver=i))
        da = merged
    if "time" in da.dims and "time" not in dims:
        da = da.isel(time=0)
    extra = [d for d in da.dims if d not in dims]
    if any(da.sizes[d] > 1 for d in extra) or set(dims) - set(da.dims):
        raise ValueError(f"{where}: {da.name!r} has dims {tuple(da.dims)}; expected {dims}")
    da = da.squeeze(extra, drop=True).transpose(*dims)
    lon = (da["lon"].values.astype(np.float64) + 180.0) % 360.0 - 180.0
    _, order = np.unique(lon, return_index=True)  # sorted, duplicates (0 and 360) dropped
    da = da.assign_coords(lon=lon, lat=da["lat"].values.astype(np.float64)).isel(lon=order)
    if "time" in dims:
        da = da.sortby("time")
    return da.sortby("lat")


def _select_times(
    da: xarray.DataArray, year: int | None, hours: int | None, where
) -> xarray.DataArray:
    times = da["time"].values
    if not np.issubdtype(times.dtype, np.datetime64):
        raise ValueError(f"{where}: the time axis is not datetime64 ({times.dtype})")
    keep = np.ones(times.shape, dtype=bool)
    if year is not None:
        keep &= times.astype("datetime64[Y]").astype(np.int64) + 1970 == year
    if hours is not None:
        hour = (times - times.astype("datetime64[D]")) / np.timedelta64(1, "h")
        keep &= np.isclose(hour % hours, 0.0)
    return da.isel(time=np.flatnonzero(keep))


def _on_resolution(da: xarray.DataArray, step: float, where) -> xarray.DataArray:
    """Keep the points on multiples of ``step`` degrees; they must then be ``step`` apart."""
    keep = {}
    for axis in ("lat", "lon"):
        values = da[axis].values
        ratio = values / step
        keep[axis] = np.flatnonzero(np.abs(ratio - np.round(ratio)) < _EPS)
        spacing = np.diff(values[keep[axis]])
        enough = len(keep[axis]) >= min(2, len(values))
        if not enough or not np.allclose(spacing, step, atol=_EPS):
            found = np.unique(np.round(np.diff(values), 6))
            raise ValueError(
                f"{where}: {axis} grid (spacing {found.tolist()}°) cannot be sub-sampled to "
                f"{step}°; pass resolution=None to keep the file's grid"
            )
    return da.isel(**keep)


def _elevation_on(elevation: xarray.DataArray, temperature: xarray.DataArray) -> xarray.DataArray:
    """Orography in metres on the temperature grid ``[lat, lon]``."""
    units = str(elevation.attrs.get("units", "")).replace(" ", "").lower()
    geopotential = units in _GEOPOTENTIAL_UNITS or (not units and elevation.name == "z")
    heights = _normalise(elevation, ("lat", "lon"), "elevation")
    metres = heights / G if geopotential else heights
    metres = metres.reindex(
        lat=temperature["lat"], lon=temperature["lon"], method="nearest", tolerance=_EPS
    )
    if bool(metres.isnull().any()):
        raise ValueError(
            "the elevation grid does not cover the temperature grid (lat "
            f"{float(temperature.lat.min())}…{float(temperature.lat.max())}, lon "
            f"{float(temperature.lon.min())}…{float(temperature.lon.max())})"
        )
    return metres.rename("elevation").assign_attrs(units="m")


# --- stand-in -------------------------------------------------------------------------------


def iris_standin(
    scenario: str = "E1", relief: str | os.PathLike | bool | None = None
) -> xarray.Dataset:
    """An offline stand-in for ERA5 from the PyPI package ``iris-sample-data``.

    The field is Met Office Unified Model (6.05) 1.5 m air temperature (K) over North America:
    37 latitudes × 49 longitudes at 1.25° × 1.875° (lat 15…60, lon -135…-45) and 240
    **annual means**, 1860…2099, under scenario ``E1`` or ``A1B`` (the two files agree until
    1999). It is read with xarray, not with iris. Its ``time`` axis is the **year** (float,
    ``units="year"``), so a ``[15, 15, 5]`` task spans 5 consecutive years, not 30 hours, and
    the grid is coarser than ERA5's: the data have ERA5's form, not its scales.

    Elevation comes from an ETOPO relief grid (negative relief, the sea floor, is clipped to
    sea level 0 as in ERA5's orography, then averaged over each stand-in cell): ``relief``
    names the file, ``False`` leaves elevation out, ``None`` looks for the Debian package
    ``ferret-datasets`` (:data:`RELIEF_FILES`). Without a relief grid there is no
    ``elevation`` variable (a warning says so) and the sampler has ``dim_x = 3``.

    Returns:
        A Dataset with ``temperature`` ``[time=240, lat=37, lon=49]`` and possibly
        ``elevation`` ``[lat, lon]`` (metres), in the form :func:`load_era5` returns.
    """
    xr = _xarray()
    try:
        import iris_sample_data
    except ImportError:
        raise ImportError("the ERA5 stand-in needs `pip install iris-sample-data`") from None
    if scenario not in STANDIN_FILES:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(STANDIN_FILES)}")
    path = Path(iris_sample_data.path) / STANDIN_FILES[scenario]
    with _open(path) as data:
        temperature = _pick(data, "air_temperature", path).load()
    temperature = _normalise(temperature, ("time", "lat", "lon"), path)
    years = temperature["time"].dt.year.values.astype(np.float64)
    temperature = temperature.assign_coords(time=years).rename("temperature")
    standin = xr.Dataset({"temperature": temperature})
    standin["time"].attrs["units"] = "year"
    path = _find_relief() if relief is None or relief is True else relief
    if path is False:
        return standin
    if path is None:
        warnings.warn(
            "no relief grid found (Debian package ferret-datasets): the ERA5 stand-in has no "
            "elevation, so its tasks have dim_x = 3",
            stacklevel=2,
        )
        return standin
    heights = _relief_on_grid(Path(path), standin["lat"].values, standin["lon"].values)
    standin["elevation"] = (("lat", "lon"), heights, {"units": "m"})
    return standin


def _find_relief() -> str | None:
    return next((p for p in RELIEF_FILES if Path(p).exists()), None)


def _relief_on_grid(path: Path, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Mean of ``max(relief, 0)`` over each cell of the ascending, evenly spaced ``lat`` ×
    ``lon`` grid: ``[len(lat), len(lon)]``. Longitudes compare modulo 360."""
    with _open(path) as data:
        names = ["ROSE"] if "ROSE" in data.data_vars else list(data.data_vars)
        if len(names) != 1:
            raise ValueError(f"{path}: expected one relief variable (ROSE), found {names}")
        relief = data[names[0]].load()
    axes = {str(relief[d].attrs.get("units", "")): d for d in relief.dims}
    if {"degrees_north", "degrees_east"} - set(axes):
        raise ValueError(f"{path}: relief axes need units degrees_north and degrees_east")
    relief = relief.transpose(axes["degrees_north"], axes["degrees_east"])
    heights = np.clip(np.nan_to_num(relief.values.astype(np.float64)), 0.0, None)
    rel_lat, rel_lon = (relief[d].values.astype(np.float64) for d in relief.dims)
    in_lat = np.abs(rel_lat[None, :] - lat[:, None]) <= np.diff(lat).mean() / 2 + _EPS
    lon_gap = (rel_lon[None, :] - lon[:, None] + 180.0) % 360.0 - 180.0
    in_lon = np.abs(lon_gap) <= np.diff(lon).mean() / 2 + _EPS
    counts = np.outer(in_lat.sum(1), in_lon.sum(1))
    if (counts == 0).any():
        raise ValueError(f"{path}: the relief grid is coarser than the stand-in grid")
    return (in_lat.astype(np.float64) @ heights @ in_lon.T.astype(np.float64)) / counts


__all__ = ["G", "RELIEF_FILES", "STANDIN_FILES", "iris_standin", "load_era5"]
