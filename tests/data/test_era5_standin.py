"""ERA5 (TE-4): the iris-sample-data stand-in: its grid, its regions, and its elevation from a
relief grid (or none)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import tnpx.data.era5 as era5
import tnpx.data.era5.files as era5_files
from tnpx.data.base import batch_at
from tnpx.data.era5 import STANDIN_REGIONS, ERA5Config, ERA5Sampler, select_region

# --- the iris-sample-data stand-in ----------------------------------------------------------


@pytest.fixture(scope="module")
def standin():
    pytest.importorskip("xarray")
    pytest.importorskip("iris_sample_data")
    return era5.iris_standin(relief=False)


def test_standin_loads(standin):
    temperature = standin["temperature"]
    assert temperature.dims == ("time", "lat", "lon")
    assert dict(temperature.sizes) == {"time": 240, "lat": 37, "lon": 49}
    assert (np.diff(standin.lat) > 0).all() and (np.diff(standin.lon) > 0).all()
    np.testing.assert_allclose(standin.lon[[0, -1]], [-135.0, -45.0])
    np.testing.assert_allclose(standin.lat[[0, -1]], [15.0, 60.0])
    np.testing.assert_array_equal(standin.time, np.arange(1860.0, 2100.0))  # years
    assert 240 < float(temperature.min()) and float(temperature.max()) < 320  # kelvin
    assert "elevation" not in standin


@pytest.mark.parametrize("name", ["train", "west", "north"])
def test_standin_regions_hold_a_task(standin, name):
    box = select_region(standin, STANDIN_REGIONS[name])
    assert box.sizes["lat"] >= 15 and box.sizes["lon"] >= 15
    sampler = ERA5Sampler.from_dataset(
        standin, ERA5Config(source="iris-standin", region=name, use_elevation=False), 2
    )
    batch = batch_at(sampler, 0)
    assert batch.xc.shape[-1] == 3 and batch.xc.shape[1] + batch.xt.shape[1] == 1125
    assert torch.isfinite(batch.yt).all()


def test_standin_regions_are_disjoint(standin):
    points = {}
    for name, region in STANDIN_REGIONS.items():
        box = select_region(standin, region)
        points[name] = {(a, b) for a in box.lat.values for b in box.lon.values}
    assert not points["train"] & points["west"] and not points["train"] & points["north"]
    west, north = STANDIN_REGIONS["west"], STANDIN_REGIONS["north"]
    assert west[3] <= STANDIN_REGIONS["train"][2] and north[0] >= STANDIN_REGIONS["train"][1]


def test_standin_sampler_without_relief(standin, monkeypatch):
    # patched where _find_relief looks it up (era5 only re-exports it)
    monkeypatch.setattr(era5_files, "RELIEF_FILES", ("/nonexistent/etopo20.cdf",))
    with pytest.warns(UserWarning, match="dim_x = 3"):
        sampler = ERA5Sampler(ERA5Config(source="iris-standin"), batch_size=2)
    assert sampler.dim_x == 3
    assert batch_at(sampler, 0).xc.shape[-1] == 3
    with pytest.warns(UserWarning, match="no relief grid"):
        assert "elevation" not in era5.iris_standin()


def test_standin_elevation_from_a_relief_grid(standin, tmp_path):
    """A relief file in the ferret-datasets ETOPO layout (``ROSE``, lon 20…380)."""
    xr = pytest.importorskip("xarray")
    lat = np.arange(-89.75, 90, 0.5)
    lon = np.arange(20.25, 380, 0.5)
    relief = np.where(lon[None, :] % 360 < 270, 1000.0, -3000.0) + 0 * lat[:, None]
    coords = {
        "Y": ("Y", lat, {"units": "degrees_north"}),
        "X": ("X", lon, {"units": "degrees_east"}),
    }
    data = xr.Dataset({"ROSE": (("Y", "X"), relief.astype(np.float32))}, coords=coords)
    data.to_netcdf(tmp_path / "etopo.cdf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with_relief = era5.iris_standin(relief=tmp_path / "etopo.cdf")
    heights = with_relief["elevation"]
    assert heights.dims == ("lat", "lon") and heights.attrs["units"] == "m"
    west_of_90 = heights.sel(lon=slice(-135, -92)).values  # land at 1,000 m
    east_of_90 = heights.sel(lon=slice(-88, -45)).values  # sea: clipped to 0
    np.testing.assert_allclose(west_of_90, 1000.0)
    np.testing.assert_allclose(east_of_90, 0.0)
    assert math.isclose(float(heights.sel(lon=-90.0, lat=30.0)), 1000.0 * 0.5, rel_tol=0.2)
    sampler = ERA5Sampler.from_dataset(with_relief, ERA5Config(source="iris-standin"), 2)
    assert sampler.dim_x == 4 and batch_at(sampler, 0).xc.shape[-1] == 4


def test_real_relief_if_installed(standin):
    path = next((p for p in era5.RELIEF_FILES if Path(p).exists()), None)
    if path is None:
        pytest.skip("Debian ferret-datasets is not installed")
    heights = era5.iris_standin(relief=path)["elevation"]
    assert float(heights.sel(lat=38.75, lon=-106.875)) > 1500  # the Rocky Mountains
    assert float(heights.sel(lat=30.0, lon=-90.0)) < 100  # the Gulf coast
