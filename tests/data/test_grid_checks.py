"""The ``grid`` source's refusals of data a model would learn wrong from without a word (an
undeclared fill value, an unsorted coordinate, a window dim left out of the inputs), the
``missing_value:`` option that declares a fill value, and the warning that held-out periods
lie outside the training period along an input time dim."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import WINDOW, grid, make_dataset
from tnpx.data import batch_at
from tnpx.data.grid import GridSampler
from tnpx.user_files import DataError

TIME_SPLIT = "the val/test periods lie outside the training period along 'time'"


def _write(data, tmp_path, name="t2m.nc"):
    data.to_netcdf(tmp_path / name)
    return tmp_path / name


def _build(path, **options):
    """The sampler, its warnings kept: ``(sampler, [messages])``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sampler = grid(path, **options)
    return sampler, [str(w.message) for w in caught]


def _refused(path, match: str, **options) -> str:
    with pytest.raises(DataError, match=match) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid(path, **options)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


# --- fill values ------------------------------------------------------------------------------
def _filled(value, dtype=np.float32):
    """Land (4 lon columns) filled with ``value`` and no ``_FillValue``."""
    data = make_dataset()
    t2m = data.t2m.values.astype(dtype)
    t2m[:, :, :4] = value
    data["t2m"] = (("time", "lat", "lon"), t2m)
    return data


@pytest.mark.parametrize("value", [-999.0, 9.96921e36, -32767.0])
def test_an_undeclared_fill_value_is_refused(tmp_path, value):
    path = _write(_filled(value), tmp_path)
    message = _refused(path, "an undeclared fill value", y=["t2m"])
    cells = 40 * 12 * 4
    assert f"variable 't2m' holds {np.float32(value):g} in {cells} cells" in message
    assert f"missing_value: {np.float32(value):g}" in message


def test_a_fill_value_in_a_static_input_is_refused(tmp_path):
    data = make_dataset()
    data["z"][:3, :] = -9999.0
    message = _refused(_write(data, tmp_path), "undeclared fill value", static=["z"])
    assert "'z' holds -9999 in 42 cells" in message and "missing_value" in message


def test_a_declared_fill_value_becomes_missing(tmp_path):
    data = _filled(-999.0)
    path = _write(data, tmp_path)
    file_values = data.t2m.values.copy()
    for declared in (-999, {"t2m": [-999.0]}):
        sampler, _ = _build(path, missing_value=declared)
        assert sampler.normalisation["y"]["loc"][0] > 270  # the land is not in the statistics
        batch = batch_at(sampler, 0, batch_size=16)
        assert torch.isfinite(batch.yt).all()
        _, y = sampler.to_physical(None, batch.yt[batch.mask_t])
        assert (y > 200).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GridSampler.from_dataset(data, y="t2m", window=WINDOW, missing_value=-999)
    np.testing.assert_array_equal(data.t2m.values, file_values)  # the user's Dataset unwritten


@pytest.mark.parametrize(
    ("declared", "match"),
    [({"sst": -999}, r"missing_value names \['sst'\]"), ("none", "must be a number")],
)
def test_a_bad_missing_value_option(tmp_path, declared, match):
    path = _write(make_dataset(), tmp_path)
    with pytest.raises(ValueError, match=match):
        grid(path, missing_value=declared)


def test_extremes_of_real_fields_are_not_fill_values(tmp_path):
    """Rain: mostly zero (the minimum held by many cells, at the bulk), one storm far out."""
    data = make_dataset()
    rng = np.random.default_rng(3)
    rain = np.where(rng.random(data.t2m.shape) < 0.7, 0.0, rng.exponential(2.0, data.t2m.shape))
    rain[5, 3, 3] = 500.0  # one cell far out: an outlier, not a fill
    data["t2m"] = (("time", "lat", "lon"), rain.astype(np.float32))
    sampler, _ = _build(_write(data, tmp_path))
    assert sampler.normalisation["y"]["scale"][0] > 0


def test_a_cap_continuous_with_the_data_is_not_a_fill_value(tmp_path):
    """ERA5 caps snow depth at 10 m: many cells hold it, far above the bulk, but values run up
    to it; a fill value stands apart, or is a usual sentinel even with coast values blended
    in between (a regridded land mask)."""
    data = make_dataset()
    rng = np.random.default_rng(4)
    snow = rng.exponential(0.1, data.t2m.shape)
    snow[:, :3, :] = np.minimum(10.0, rng.uniform(5, 14, (40, 3, 14)))  # a glacier, capped
    data["t2m"] = (("time", "lat", "lon"), snow.astype(np.float32))
    sampler, _ = _build(_write(data, tmp_path, "snow.nc"))
    assert sampler.normalisation["y"]["scale"][0] > 0
    blended = _filled(-999.0)
    blended["t2m"][:, :, 4] = np.linspace(-990, 200, 12, dtype=np.float32)  # the coast
    blended_nc = _write(blended, tmp_path, "blended.nc")
    _refused(blended_nc, "holds -999 in 1920 cells, .* an undeclared fill value")
    odd = _filled(-1234.0)  # not a usual sentinel, but apart from the rest
    _refused(_write(odd, tmp_path, "odd.nc"), "holds -1234 in 1920 cells")


# --- coordinates and inputs -------------------------------------------------------------------
def test_a_coordinate_that_is_not_sorted_is_refused(tmp_path):
    data = make_dataset()
    lon = data.lon.values.copy()  # 2 … 8.5
    lon[lon > 5] -= 360  # relabelled to negative without sorting: a jump after 5.0
    data = data.assign_coords(lon=lon)
    message = _refused(_write(data, tmp_path), "coordinate 'lon' is not sorted")
    assert "jumps from 5 to -354.5 at index 7" in message and "sortby('lon')" in message
    sampler, _ = _build(_write(data.sortby("lon"), tmp_path, "sorted.nc"))  # sorted: fine
    assert sampler.data.coords["lat"][0] > sampler.data.coords["lat"][-1]  # descending is fine


def test_a_window_dim_left_out_of_the_inputs_is_refused(tmp_path):
    path = _write(make_dataset(), tmp_path)
    message = _refused(
        path, "the window spans 3 time points but x leaves 'time' out", x=["lat", "lon"]
    )
    assert "add 'time' to x or set its window to 1" in message
    sampler, _ = _build(path, x=["lat", "lon"], window={"time": 1, "lat": 4, "lon": 5})
    assert sampler.dim_x == 2


# --- the time split ---------------------------------------------------------------------------
def test_held_out_periods_with_time_an_input_warn_once(tmp_path):
    path = _write(make_dataset(), tmp_path)
    _, said = _build(path)
    assert sum(TIME_SPLIT in m for m in said) == 1
    warning = next(m for m in said if TIME_SPLIT in m)
    assert "must extrapolate in time; consider leaving time out of x (x: ['lat', 'lon'])" in warning
    quiet = [
        {"x": ["lat", "lon"], "window": {"time": 1, "lat": 4, "lon": 5}},  # time not an input
        {"split_dim": "lat", "val_fraction": 0.34, "test_fraction": 0.34},  # not periods
        {
            "val_select": {"lat": [54.5, 56], "lon": [2, 4]},
            "test_select": {"lat": [50.5, 52], "lon": [6.5, 8.5]},
        },
    ]
    for options in quiet:
        _, said = _build(path, **options)
        assert not any("extrapolate in time" in m for m in said), options
    numbered = make_dataset().assign_coords(time=np.arange(40.0))  # a time dim by name
    _, said = _build(_write(numbered, tmp_path, "hours.nc"), split_dim="time")
    assert any(TIME_SPLIT in m for m in said)


def test_by_default_the_inputs_are_the_dims_a_window_spans_time_last():
    xr = pytest.importorskip("xarray")
    from tnpx.data.grid import GridSampler

    time = np.arange("2000-01", "2001-01", dtype="datetime64[M]").astype("datetime64[ns]")
    v = np.random.default_rng(0).standard_normal((12, 5, 6))
    data = xr.Dataset(
        {"v": (("time", "lat", "lon"), v)},
        coords={"time": time, "lat": np.arange(5.0), "lon": np.arange(6.0)},
    )
    maps = GridSampler.from_dataset(data, y=["v"], window={"time": 1, "lat": 3, "lon": 3})
    assert maps.x == ["lat", "lon"] and maps.dim_x == 2  # a month per task: time not an input
    spans = GridSampler.from_dataset(
        data, y=["v"], window={"time": 2, "lat": 3, "lon": 3}, val_fraction=0.2, test_fraction=0.2
    )
    assert spans.x == ["lat", "lon", "time"]
    named = GridSampler.from_dataset(
        data, y=["v"], window={"time": 1, "lat": 3, "lon": 3}, x=["lat", "lon", "time"]
    )
    assert named.x == ["lat", "lon", "time"]
