"""ERA5 (TE-4): the task sampler on a synthetic Dataset: shapes and context sizes, values,
windows, reproducibility, regions and their statistics, missing values and config errors. The
CDS loader is tested in ``test_era5_files.py``, the iris-sample-data stand-in in
``test_era5_standin.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tnpx.data.era5 as era5
from tnpx.data.base import batch_at
from tnpx.data.era5 import ERA5_REGIONS, ERA5Config, ERA5Sampler, region_stats

# --- the sampler on a synthetic Dataset ------------------------------------------------------


@pytest.fixture(scope="module")
def grid_data():
    """0.5° × 6-hourly random temperatures and elevations covering all three TE-4 regions."""
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(0)
    lat = np.arange(40.0, 63.0, 0.5)
    lon = np.arange(-6.0, 30.0, 0.5)
    time = np.arange("2019-01-01", "2019-01-11", 6, dtype="datetime64[h]").astype("datetime64[ns]")
    shape = (len(time), len(lat), len(lon))
    temperature = 275.0 + 0.4 * (lat[None, :, None] - 50) + 3.0 * rng.standard_normal(shape)
    return xr.Dataset(
        {
            "temperature": (("time", "lat", "lon"), temperature),
            "elevation": (("lat", "lon"), 800.0 * rng.random((len(lat), len(lon)))),
        },
        coords={"time": time, "lat": lat, "lon": lon},
    )


def _sampler(data, batch_size=4, **options) -> ERA5Sampler:
    return ERA5Sampler.from_dataset(data, ERA5Config(**options), batch_size=batch_size, seed=3)


def _physical_points(sampler: ERA5Sampler, batch):
    """Context and target points in physical units: ``[b, n, dim_x]``, ``[b, n, 1]``."""
    xc, yc = sampler.to_physical(batch.xc, batch.yc)
    xt, yt = sampler.to_physical(batch.xt, batch.yt)
    return xc, yc, xt, yt


def test_sampler_shapes_and_context_sizes(grid_data):
    sampler = _sampler(grid_data)
    assert (sampler.dim_x, sampler.dim_y, sampler.n_points) == (4, 1, 1125)
    assert (sampler.min_ctx, sampler.max_ctx) == (12, 375)  # ceil(N / 100), floor(N / 3)
    sizes = set()
    for step in range(20):
        batch = batch_at(sampler, step)
        n_ctx = batch.xc.shape[1]
        sizes.add(n_ctx)
        assert batch.xc.shape == (4, n_ctx, 4) and batch.yc.shape == (4, n_ctx, 1)
        assert batch.xt.shape == (4, 1125 - n_ctx, 4) and batch.yt.shape == (4, 1125 - n_ctx, 1)
        assert 12 <= n_ctx <= 375
        assert batch.xc.dtype == torch.float32 and batch.mask_c is None
    assert len(sizes) > 10  # drawn per batch
    assert batch_at(sampler, 0, batch_size=7).xc.shape[0] == 7
    assert _sampler(grid_data, use_elevation=False).sample(torch.Generator()).xc.shape[-1] == 3


def _grid_index(data, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices (lat, lon, time) of the grid points nearest physical inputs ``x`` ``[n, >=3]``,
    checked to coincide with them."""
    hours = era5.time_values(data["time"].values)
    axes = [(data["lat"].values, 1e-4), (data["lon"].values, 1e-4), (hours, 1e-2)]
    index = []
    for k, (values, tol) in enumerate(axes):
        nearest = np.abs(values[None, :] - x[:, k : k + 1]).argmin(1)
        np.testing.assert_allclose(values[nearest], x[:, k], atol=tol)
        index.append(nearest)
    return tuple(index)


def test_task_values_are_the_datasets(grid_data):
    sampler = _sampler(grid_data, region="west")
    xc, yc, xt, yt = _physical_points(sampler, batch_at(sampler, 0))
    for x, y in ((xc, yc), (xt, yt)):
        x, y = x.reshape(-1, 4).numpy(), y.reshape(-1).numpy()
        i, j, t = _grid_index(grid_data, x)
        np.testing.assert_allclose(grid_data["elevation"].values[i, j], x[:, 3], atol=1e-3)
        np.testing.assert_allclose(grid_data["temperature"].values[t, i, j], y, atol=1e-4)


def test_tasks_are_whole_windows_split_disjointly(grid_data):
    sampler = _sampler(grid_data)
    xc, _, xt, _ = _physical_points(sampler, batch_at(sampler, 1))
    for b in range(xc.shape[0]):
        points = torch.cat([xc[b], xt[b]])[:, :3].numpy()
        keys = {tuple(np.round(p, 3)) for p in points}
        assert len(keys) == 1125  # context and targets disjoint, together the whole window
        lats, lons, times = (np.unique(np.round(points[:, k], 3)) for k in range(3))
        assert (len(lats), len(lons), len(times)) == (15, 15, 5)
        np.testing.assert_allclose(np.diff(lats), 0.5, atol=1e-3)
        np.testing.assert_allclose(np.diff(lons), 0.5, atol=1e-3)
        np.testing.assert_allclose(np.diff(times), 6.0, atol=1e-2)  # 30 hours in 5 steps
        # the context is a random subset, not the window's first points in grid order
        context = xc[b].numpy()
        assert len(np.unique(np.round(context[:, 2], 2))) > 1
        assert len(np.unique(np.round(context[:, 0], 3))) > 1


def test_sampler_is_reproducible_from_the_generator(grid_data):
    sampler = _sampler(grid_data)
    first = sampler.sample(torch.Generator().manual_seed(11))
    again = sampler.sample(torch.Generator().manual_seed(11))
    other = sampler.sample(torch.Generator().manual_seed(12))
    for name in ("xc", "yc", "xt", "yt"):
        torch.testing.assert_close(getattr(first, name), getattr(again, name))
    assert first.xc.shape != other.xc.shape or not torch.equal(first.xc, other.xc)
    torch.testing.assert_close(batch_at(sampler, 5).xt, batch_at(sampler, 5).xt)


@pytest.mark.parametrize("name", ["train", "west", "north"])
def test_tasks_lie_inside_the_region(grid_data, name):
    time_range = ["2019-01-03", "2019-01-06"]
    sampler = _sampler(grid_data, region=name, time_range=time_range)
    lat_min, lat_max, lon_min, lon_max = ERA5_REGIONS[name]
    xc, _, xt, _ = _physical_points(sampler, batch_at(sampler, 2, batch_size=16))
    x = torch.cat([xc, xt], 1).reshape(-1, 4).numpy()
    assert ((x[:, 0] >= lat_min - 1e-4) & (x[:, 0] < lat_max - 1e-4)).all()
    assert ((x[:, 1] >= lon_min - 1e-4) & (x[:, 1] < lon_max - 1e-4)).all()
    start, end = era5.time_values(np.array(["2019-01-03T00", "2019-01-06T18"], "datetime64[ns]"))
    assert ((x[:, 2] >= start - 1e-2) & (x[:, 2] <= end + 1e-2)).all()


def test_held_out_regions_use_training_statistics(grid_data):
    train = _sampler(grid_data)
    north = _sampler(grid_data, region="north")
    # the statistics, computed independently over the half-open training box
    box = grid_data.where(
        (grid_data.lat >= 42) & (grid_data.lat < 53) & (grid_data.lon >= 8) & (grid_data.lon < 28),
        drop=True,
    )
    temperature = box["temperature"].values
    hours = era5.time_values(box["time"].values)
    expected = {
        "lat": (box.lat.values.mean(), box.lat.values.std()),
        "lon": (box.lon.values.mean(), box.lon.values.std()),
        "time": (hours.mean(), hours.std()),
        "elevation": (box["elevation"].values.mean(), box["elevation"].values.std()),
        "temperature": (temperature.mean(), temperature.std()),
    }
    for key, value in expected.items():
        np.testing.assert_allclose(north.stats[key], value, rtol=1e-9)
        np.testing.assert_allclose(train.stats[key], value, rtol=1e-9)
    own = region_stats(grid_data, ERA5_REGIONS["north"])
    assert abs(own["lat"][0] - north.stats["lat"][0]) > 5  # the north box's own stats differ
    batch = batch_at(north, 0)
    lat_mean, lat_std = expected["lat"]
    raw_lat = batch.xc[..., 0].double() * lat_std + lat_mean
    assert (raw_lat >= 53 - 1e-3).all()  # north's inputs, scaled with training statistics,
    assert (batch.xc[..., 0] > 1.0).all()  # lie outside the training range
    t_mean, t_std = expected["temperature"]
    x, _ = north.to_physical(batch.xc[0])
    i, j, t = _grid_index(grid_data, x.numpy())
    standardised = (grid_data["temperature"].values[t, i, j] - t_mean) / t_std
    np.testing.assert_allclose(batch.yc[0, :, 0].numpy(), standardised, atol=1e-5)


def test_missing_values_are_never_drawn(grid_data):
    data = grid_data.copy(deep=True)
    sea = (data.lon < 0) & (data.lat >= 50)  # "sea" in the north-west of the west region
    data["temperature"] = data["temperature"].where(~sea)
    sampler = _sampler(data, region="west", batch_size=32)
    assert sampler._origins is not None and len(sampler._origins) > 0
    first, again = batch_at(sampler, 0), batch_at(sampler, 0)  # reproducible here too
    torch.testing.assert_close(first.xt, again.xt)
    for step in range(5):
        batch = batch_at(sampler, step)
        assert torch.isfinite(batch.yc).all() and torch.isfinite(batch.yt).all()
        x = torch.cat([sampler.to_physical(batch.xc)[0], sampler.to_physical(batch.xt)[0]], 1)
        assert not ((x[..., 1] < 0 - 1e-3) & (x[..., 0] >= 50 - 1e-3)).any()
    data["temperature"] = data["temperature"].where(data.lon >= 8)
    with pytest.raises(ValueError, match="free of missing values"):
        _sampler(data, region="west")
    stats = region_stats(data, ERA5_REGIONS["train"])  # NaNs elsewhere do not matter
    assert np.isfinite([v for pair in stats.values() for v in pair]).all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"source": "cds"}, "source must be"),
        ({"grid": [15, 15]}, "grid must be 3"),
        ({"grid": [15, 0, 5]}, "grid must be 3"),
        ({"min_ctx_frac": 0.5, "max_ctx_frac": 0.2}, "min_ctx_frac <= max_ctx_frac"),
        ({"max_ctx_frac": 1.0}, "max_ctx_frac < 1"),
        ({"grid": [1, 1, 2], "min_ctx_frac": 0.6, "max_ctx_frac": 0.9}, "no context size"),
        ({"region": "east"}, "unknown region 'east'; choose from train, west, north"),
        ({"region": [53, 42, 8, 28]}, "lat_min < lat_max"),
        ({"stats_region": [42, 53, 8]}, r"stats_region must be \[lat_min"),
        ({"time_range": ["2019-01-01"]}, r"time_range must be \[start, end\]"),
        ({"region": [0, 10, 0, 10]}, "holds no data"),
        ({"region": [42, 46, 8, 28]}, "8 × 40 lat × lon points"),
        ({"time_range": ["2019-01-01", "2019-01-01"]}, "a task needs 15 × 15 and 5"),
    ],
)
def test_config_errors(grid_data, options, message):
    with pytest.raises(ValueError, match=message):
        _sampler(grid_data, **options)


def test_config_errors_without_dataset(grid_data):
    with pytest.raises(ValueError, match="needs path"):
        ERA5Sampler(ERA5Config())
    with pytest.raises(ValueError, match="no elevation"):
        _sampler(grid_data.drop_vars("elevation"))
    assert _sampler(grid_data.drop_vars("elevation"), use_elevation=False).dim_x == 3
