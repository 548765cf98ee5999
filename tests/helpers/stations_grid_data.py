"""The ``stations`` source's grid context, its tests' shared data: a daily grid ``t2m (time,
lat, lon)`` with a trend (the held-out days differ), station readings on its cells, the
module-scoped fixtures ``grid``, ``stations`` and ``nc`` (the grid as a NetCDF file; import
``grid_fixture``, ``stations_fixture``, ``nc_fixture``) and a sampler of both."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tnpx.data import SPLITS
from tnpx.data.stations import StationsSampler

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

SPLIT_NAMES = list(SPLITS)
LAT, LON = np.linspace(50.0, 55.0, 6), np.linspace(0.0, 7.0, 8)
N_CELLS = len(LAT) * len(LON)
DAYS, N_STATIONS = 40, 12
COLUMNS = {"time": "time", "coords": ["lat", "lon"], "y": ["temp"]}


def make_grid(days: int = DAYS, seed: int = 0, trend: float = 0.1) -> xr.Dataset:
    """A daily field ``t2m (time, lat, lon)`` (00:00) from 2024-03-01: a random smooth pattern
    each day on a ``trend`` per day, so the later (held-out) days have larger values."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 2, (2, days, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (2, days, 1, 1))
    t2m = (
        np.sin(a * LAT[None, :, None] + phase[0])
        + np.cos(b * LON[None, None, :] + phase[1])
        + trend * np.arange(days)[:, None, None]
    )
    times = pd.date_range("2024-03-01", periods=days, freq="D")
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m)}, coords={"time": times, "lat": LAT, "lon": LON}
    )


def make_stations(grid: xr.Dataset, hour: int = 6, seed: int = 0) -> pd.DataFrame:
    """Daily readings at ``hour``:00 of stations on grid cells: the day's grid value there plus
    noise, a few readings missing: ``time, lat, lon, temp``."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(N_CELLS, N_STATIONS, replace=False)
    i, j = np.unravel_index(cells, (len(LAT), len(LON)))
    values = grid["t2m"].values[:, i, j]  # [days, stations]
    days = grid["time"].values
    frame = pd.DataFrame(
        {
            "time": np.repeat(days, N_STATIONS) + np.timedelta64(hour, "h"),
            "lat": np.tile(LAT[i], len(days)),
            "lon": np.tile(LON[j], len(days)),
            "temp": values.ravel() + 0.05 * rng.standard_normal(values.size),
        }
    )
    return frame[rng.uniform(size=len(frame)) > 0.05].reset_index(drop=True)


# Registered under their ``name``, so a test module imports them without a test's argument
# shadowing the import.
@pytest.fixture(scope="module", name="grid")
def grid_fixture() -> xr.Dataset:
    return make_grid()


@pytest.fixture(scope="module", name="stations")
def stations_fixture(grid) -> pd.DataFrame:
    return make_stations(grid)


@pytest.fixture(scope="module", name="nc")
def nc_fixture(tmp_path_factory, grid):
    path = tmp_path_factory.mktemp("grid") / "t2m.nc"
    grid.to_netcdf(path)
    return path


def sampler_of(frame, grid_options: dict, batch_size: int = 4, **options) -> StationsSampler:
    """A sampler of the readings ``frame`` (columns :data:`COLUMNS` unless ``options`` say
    otherwise) with the grid ``grid_options`` as extra context."""
    options = {**COLUMNS, **options}
    return StationsSampler.from_frame(frame, batch_size, grid=grid_options, **options)
