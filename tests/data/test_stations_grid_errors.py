"""A grid that does not fit the ``stations`` source's readings (tnpx.data.stations.grid),
named in one line: a missing variable or dim, a task the grid's time does not cover, dates
against numbers, coordinates in other units, bad ``grid:`` options, a grid variable named as a
station output."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers.stations_grid_data import make_stations, sampler_of
from tnpx.user_files import DataError

# The shared fixtures (grid, nc, stations), imported apart so the noqa covers them only.
# isort: split
from tests.helpers.stations_grid_data import grid_fixture, nc_fixture, stations_fixture  # noqa: F401 (fixtures)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"y": ["sst"]}, ["no variable 'sst'", "it has: t2m"]),
        ({"y": ["t2m"], "dims": ["lat"]}, ["grid.dims ['lat']", "coords ['lat', 'lon']", "'t2m'"]),
        ({"y": ["t2m"], "dims": ["lat", "x"]}, ["no dim 'x'", "grid.dims", "'t2m'"]),
        ({"y": ["t2m"], "time": "date"}, ["no dim 'date'", "grid.time", "'t2m'"]),
    ],
)
def test_a_grid_that_does_not_fit_is_named(nc, stations, options, words):
    with pytest.raises(DataError) as err:
        sampler_of(stations, {"path": str(nc), **options})
    text = one_line(err)
    assert text.startswith(str(nc)) and all(w in text for w in words), text


def test_a_task_before_the_grid_is_named(nc, grid, stations):
    early = make_stations(grid).assign(time=lambda f: f["time"] - pd.Timedelta(days=3))
    with pytest.raises(DataError) as err:
        sampler_of(early, {"path": str(nc), "y": ["t2m"]})
    text = one_line(err)
    assert text.startswith(str(nc)) and "'t2m'" in text, text
    assert "train task time=2024-02-27 06:00:00" in text and "3 such task(s)" in text, text


def test_a_grid_that_ends_before_the_stations_is_named(grid, stations):
    with pytest.raises(DataError, match="before the train task time=2024-03-31 06:00:00"):
        sampler_of(stations, {"path": grid.isel(time=slice(0, 30)), "y": ["t2m"]})


def test_grid_and_stations_on_other_clocks_or_places_are_named(grid, stations):
    numbers = stations.assign(time=(stations["time"] - stations["time"].min()).dt.days)
    with pytest.raises(DataError, match="holds dates but the stations' 'time' holds numbers"):
        sampler_of(numbers, {"path": grid, "y": ["t2m"]})
    east = stations.assign(lon=stations["lon"] + 180)
    with pytest.raises(DataError, match="the stations' 'lon' runs from 18.* same units"):
        sampler_of(east, {"path": grid, "y": ["t2m"]})


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"y": ["t2m"], "level": 850}, "unknown grid option(s) ['level']"),
        ({"y": ["t2m"], "points": 0}, "grid.points must be a positive integer"),
        ({"y": ["t2m"], "match": "after"}, "grid.match must be one of"),
        ({"y": []}, "name the grid's variable(s)"),
    ],
)
def test_bad_grid_options_are_named(grid, stations, options, words):
    with pytest.raises(ValueError) as err:
        sampler_of(stations, {"path": grid, **options})
    assert words in one_line(err)


def test_a_grid_variable_named_as_a_station_output_is_refused(grid, stations):
    with pytest.raises(ValueError, match=r"grid variable\(s\) \['t2m'\] have the name"):
        sampler_of(stations.rename(columns={"temp": "t2m"}), {"path": grid, "y": ["t2m"]},
                   y=["t2m"])  # fmt: skip
