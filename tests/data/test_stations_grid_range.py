"""A stations model with a grid as context stores a training range that holds the grid's cells
too (they were context in training), so predicting with the grid's rows does not warn."""

from __future__ import annotations

from tests.helpers.stations_grid_data import LAT, LON, make_grid, make_stations, sampler_of


def test_the_range_holds_the_grid_cells_and_their_time_offsets():
    grid = make_grid()
    frame = make_stations(grid)
    south_west = frame[(frame["lat"] <= 52.0) & (frame["lon"] <= 3.0)]
    alone = sampler_of(south_west, None)  # without the grid: the stations' own range
    (lat_low, lat_high), (lon_low, lon_high) = alone.normalisation["x"]["range"]
    assert lat_high <= 52.0 and lon_high <= 3.0
    joined = sampler_of(south_west, {"path": grid, "y": ["t2m"]})
    lat, lon = joined.normalisation["x"]["range"]
    assert lat == [LAT.min(), LAT.max()] and lon == [LON.min(), LON.max()]
    daily = {"window": "1D", "time_as_input": True}
    readings = sampler_of(south_west, None, **daily).normalisation["x"]["range"][-1]
    assert readings == [6.0, 6.0]  # every reading at 06:00 of its day's window
    timed = sampler_of(south_west, {"path": grid, "y": ["t2m"]}, **daily)
    assert timed.normalisation["x"]["range"][-1] == [0.0, 6.0]  # the grid's step at 00:00
