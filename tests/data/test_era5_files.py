"""ERA5 (TE-4) files: the module imports without xarray, and the CDS loader (tnpx.data.era5's
``load_era5``) normalises small synthetic CDS-style files, with its options and errors; the
sampler reads such files. The sampler on a synthetic Dataset is tested in ``test_era5.py``, the
iris-sample-data stand-in in ``test_era5_standin.py``."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import tnpx.data.era5 as era5
import tnpx.data.era5.files as era5_files
import tnpx.data.era5.regions as era5_regions
from tnpx.data.base import batch_at
from tnpx.data.era5 import ERA5Config, ERA5Sampler


def test_module_imports_without_xarray(monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)  # `import xarray` now fails
    fresh = {}
    # era5 imports its loaders from era5_files and its regions from era5_regions
    for module_of in (era5_files, era5_regions, era5):
        name = module_of.__name__
        spec = importlib.util.spec_from_file_location(name, module_of.__file__)
        module = importlib.util.module_from_spec(spec)
        # fresh copies under the real names (restored afterwards): era5's relative imports
        # find the fresh era5_files and era5_regions, and dataclasses look their module up
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        fresh[name] = module
    module, files = fresh[era5.__name__], fresh[era5_files.__name__]
    assert module.load_era5 is files.load_era5 and files.load_era5 is not era5.load_era5
    with pytest.raises(ImportError, match=r"pip install 'tnpx\[xarray\]'"):
        module.load_era5("t2m.nc")
    with pytest.raises(ImportError, match=r"pip install 'tnpx\[xarray\]'"):
        files.iris_standin()
    with pytest.raises(ImportError, match="tnpx"):
        module.ERA5Sampler(module.ERA5Config(path="t2m.nc"))


# --- the loader on CDS-style files -----------------------------------------------------------


def _cds_value(hours: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """The synthetic temperature at (hours since 1970, lat, lon in [-180, 180))."""
    return 250.0 + lat + 0.01 * lon + (hours % 1000) / 100.0


LAT_CDS = np.arange(46.0, 43.99, -0.25)  # descending, 0.25° as the CDS delivers by default
LON_CDS = np.concatenate([np.arange(0.0, 1.01, 0.25), np.arange(359.0, 359.9, 0.25)])  # 0-360
TIME_CDS = np.arange("2018-12-31T18", "2019-01-03T00", dtype="datetime64[h]")  # hourly


@pytest.fixture
def cds_files(tmp_path):
    """A CDS-style 2 m temperature file (``valid_time``, descending ``latitude``,
    ``longitude`` in [0, 360), ``number``/``expver`` coordinates) and an invariant file with
    the geopotential ``z`` (m**2 s**-2)."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    hours = (TIME_CDS - np.datetime64("1970-01-01T00", "h")).astype(np.float64)
    wrapped = (LON_CDS + 180) % 360 - 180
    values = _cds_value(hours[:, None, None], LAT_CDS[None, :, None], wrapped[None, None, :])
    coords = {
        "valid_time": TIME_CDS.astype("datetime64[ns]"),
        "latitude": LAT_CDS,
        "longitude": LON_CDS,
    }
    t2m = xr.DataArray(values.astype(np.float32), coords, ("valid_time", "latitude", "longitude"))
    t2m.attrs["units"] = "K"
    data = xr.Dataset({"t2m": t2m}, coords={"number": 0, "expver": "0001"})
    data.to_netcdf(tmp_path / "t2m.nc")
    heights = 100.0 * LAT_CDS[:, None] + wrapped[None, :]  # metres
    z = xr.DataArray(
        (heights * era5.G)[None].astype(np.float32),
        {
            "valid_time": TIME_CDS[:1].astype("datetime64[ns]"),
            "latitude": LAT_CDS,
            "longitude": LON_CDS,
        },
        ("valid_time", "latitude", "longitude"),
        attrs={"units": "m**2 s**-2", "long_name": "Geopotential"},
    )
    xr.Dataset({"z": z}).to_netcdf(tmp_path / "z.nc")
    data[["t2m"]].rename(t2m="sp").to_netcdf(tmp_path / "sp.nc")
    return tmp_path


def test_load_era5_normalises_a_cds_file(cds_files):
    data = era5.load_era5(cds_files / "t2m.nc", elevation=cds_files / "z.nc", year=2019)
    assert dict(data["temperature"].sizes) == {"time": 8, "lat": 5, "lon": 5}
    np.testing.assert_allclose(data["lat"], [44.0, 44.5, 45.0, 45.5, 46.0])  # ascending
    np.testing.assert_allclose(data["lon"], [-1.0, -0.5, 0.0, 0.5, 1.0])  # wrapped and sorted
    times = data["time"].values
    assert (times.astype("datetime64[Y]") == np.datetime64("2019", "Y")).all()
    assert np.array_equal(
        times, np.arange("2019-01-01T00", "2019-01-03T00", 6, dtype="datetime64[h]")
    )  # 6-hourly: 00, 06, 12, 18 UTC
    hours = era5.time_values(times)
    expected = _cds_value(
        hours[:, None, None], data["lat"].values[None, :, None], data["lon"].values[None, None]
    )
    np.testing.assert_allclose(data["temperature"].values, expected, rtol=1e-6)
    expected_height = 100.0 * data["lat"].values[:, None] + data["lon"].values[None, :]
    np.testing.assert_allclose(data["elevation"].values, expected_height, rtol=1e-5)  # z / g
    assert data["elevation"].dims == ("lat", "lon")


def test_load_era5_options_and_file_lists(cds_files, tmp_path):
    xr = pytest.importorskip("xarray")
    whole = era5.load_era5(cds_files / "t2m.nc", hours=None, resolution=None)
    assert dict(whole["temperature"].sizes) == {"time": len(TIME_CDS), "lat": 9, "lon": 9}
    assert "elevation" not in whole  # the temperature file has no z
    with xr.open_dataset(cds_files / "t2m.nc") as f:  # split in two files, out of order
        f.isel(valid_time=slice(30, None)).to_netcdf(tmp_path / "late.nc")
        f.isel(valid_time=slice(0, 40)).to_netcdf(tmp_path / "early.nc")
    parts = era5.load_era5([tmp_path / "late.nc", tmp_path / "early.nc"], hours=None)
    one = era5.load_era5(cds_files / "t2m.nc", hours=None)
    xr.testing.assert_identical(parts, one)
    heights = xr.DataArray(  # orography given as a DataArray in metres, CDS coordinates
        np.arange(81.0).reshape(9, 9), {"latitude": LAT_CDS, "longitude": LON_CDS}
    )
    given = era5.load_era5(cds_files / "t2m.nc", elevation=heights)
    np.testing.assert_allclose(
        given["elevation"].sel(lat=46.0, lon=-1.0), heights.sel(latitude=46.0, longitude=359.0)
    )


def test_load_era5_errors(cds_files):
    with pytest.raises(ValueError, match=r"no variable 't2m'; the file has: sp"):
        era5.load_era5(cds_files / "sp.nc")
    with pytest.raises(FileNotFoundError, match="missing.nc"):
        era5.load_era5(cds_files / "missing.nc")
    with pytest.raises(ValueError, match="no variable 'orography'.*: z"):
        era5.load_era5(
            cds_files / "t2m.nc", elevation=cds_files / "z.nc", elevation_var="orography"
        )
    with pytest.raises(ValueError, match="no time step"):
        era5.load_era5(cds_files / "t2m.nc", year=2020)
    (cds_files / "junk.nc").write_text("not a NetCDF file")
    with pytest.raises(ValueError, match="junk.nc: cannot read the NetCDF file"):
        era5.load_era5(cds_files / "junk.nc")
    with pytest.raises(ValueError, match="cannot be sub-sampled to 0.3"):
        era5.load_era5(cds_files / "t2m.nc", resolution=0.3)


def test_load_era5_merges_expver(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    time = np.arange("2019-01-01T00", "2019-01-02T00", 6, dtype="datetime64[h]")
    values = np.full((4, 2, 2, 3), np.nan, np.float32)
    values[:2, 0], values[2:, 1] = 280.0, 290.0  # ERA5 for the first steps, ERA5T after
    t2m = xr.DataArray(
        values,
        {
            "time": time.astype("datetime64[ns]"),
            "expver": [1, 5],
            "latitude": [1.0, 0.5],
            "longitude": [0.0, 0.5, 1.0],
        },
        ("time", "expver", "latitude", "longitude"),
    )
    xr.Dataset({"t2m": t2m}).to_netcdf(tmp_path / "old.nc")
    data = era5.load_era5(tmp_path / "old.nc")
    assert data["temperature"].dims == ("time", "lat", "lon")
    assert data["temperature"].values[:, 0, 0].tolist() == [280.0, 280.0, 290.0, 290.0]


def test_sampler_reads_files(cds_files):
    config = ERA5Config(
        path=str(cds_files / "t2m.nc"),
        elevation_path=str(cds_files / "z.nc"),
        region=[43.0, 47.0, -2.0, 2.0],
        stats_region=[43.0, 47.0, -2.0, 2.0],
        grid=[3, 3, 2],
        min_ctx_frac=0.1,
    )
    batch = batch_at(ERA5Sampler(config, batch_size=2), 0)
    assert batch.xc.shape[-1] == 4 and batch.xc.shape[1] + batch.xt.shape[1] == 18
