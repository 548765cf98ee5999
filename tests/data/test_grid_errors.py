"""The ``grid`` task source's bad data and bad options: each an error of one line that names the
file and the variable (or option) at fault."""

from __future__ import annotations

import numpy as np
import pytest

from tnpx.data import build_sampler
from tnpx.user_files import DataError

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

WINDOW = {"time": 3, "lat": 4, "lon": 5}


def dataset(n_time: int = 30) -> xr.Dataset:
    rng = np.random.default_rng(1)
    shape = (n_time, 8, 9)
    return xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), rng.standard_normal(shape).astype(np.float32)),
            "z": (("lat", "lon"), rng.random(shape[1:])),
            "level_t": (("level", "lat", "lon"), rng.random((2, *shape[1:]))),
            "profile": (("time", "level"), rng.random((n_time, 2))),
        },
        coords={
            "time": np.arange(n_time, dtype=float),
            "lat": np.arange(8.0),
            "lon": np.arange(9.0),
            "level": [850.0, 500.0],
        },  # fmt: skip
    )


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("grid-errors") / "fields.nc"
    dataset().to_netcdf(path)
    return path


def fails(path, match: str, error=DataError, **options) -> str:
    """The one-line message ``build_sampler('grid', ...)`` raises, checked to name ``path``."""
    options = {"y": ["t2m"], "window": WINDOW, **options}
    with pytest.raises(error, match=match) as caught:
        build_sampler("grid", 4, 0, path=str(path), **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_path_that_does_not_exist(tmp_path):
    message = fails(tmp_path / "missing.nc", "no such file")
    assert str(tmp_path / "missing.nc") in message
    assert str(tmp_path) in fails(tmp_path / "nothing-*.nc", "no file matches")


def test_a_file_that_is_not_netcdf(tmp_path):
    (tmp_path / "junk.nc").write_bytes(b"not a NetCDF file")
    assert "junk.nc" in fails(tmp_path / "junk.nc", "cannot read the NetCDF file")


@pytest.mark.parametrize(
    ("options", "match", "variable"),
    [
        ({"y": ["t2"]}, r"no variable 't2' \(named by y\); it has: level_t, profile, t2m, z", "t2"),
        ({"static": ["orography"]}, r"no variable 'orography' \(named by static\)", "orography"),
        ({"window": {**WINDOW, "height": 2}}, "window names dim 'height'", "'t2m'"),
        (
            {"window": {"time": 3, "lat": 4}},
            r"window must name every dim of 't2m'; missing \['lon'\]",
            "'t2m'",
        ),  # fmt: skip
        (
            {"window": {**WINDOW, "lon": 10}},
            "window lon=10 is longer than the 9 lon points",
            "'t2m'",
        ),
        ({"select": {"time": [0, 10]}}, "the val split holds 1 time points", "'t2m'"),
        ({"val_fraction": 0.05}, "the val split holds 2 time points .* a window needs 3", "'t2m'"),
        ({"select": {"lat": [20, 30]}}, r"select.lat = \[20, 30\] holds no grid point", "lat"),
        ({"select": {"height": [0, 1]}}, "select names dim 'height'", "'t2m'"),
        ({"split_dim": "level"}, "split_dim 'level' is not a dim", "t2m"),
        ({"y": ["t2m", "level_t"]}, "outputs must share dims: 'level_t' has", "level_t"),
        (
            {"static": ["profile"]},
            "static input 'profile' has dims .* among the outputs'",
            "profile",
        ),
        ({"x": ["lat", "lat"]}, "x must name dims", "t2m"),
        (
            {"val_select": {"lat": [0, 3]}, "test_select": {"lat": [2, 5]}},
            "val_select and test_select overlap",
            "",
        ),  # fmt: skip
        (
            {"val_select": {"lat": [0, 3]}, "test_select": {"lat": [4, 7]}},
            "no time=3 × lat=4 × lon=5 window of the train split lies clear",
            "",
        ),  # fmt: skip
    ],
)
def test_bad_variables_dims_and_windows(nc, options, match, variable):
    message = fails(nc, match, **options)
    assert str(nc) in message and variable in message


def test_an_output_constant_or_all_missing_in_training(tmp_path):
    data = dataset()
    data["t2m"][:24] = 2.5  # constant over the training period (24 of 30 steps)
    data.to_netcdf(tmp_path / "flat.nc")
    message = fails(tmp_path / "flat.nc", "'t2m' is 2.5 throughout the train split")
    assert "flat.nc" in message
    data["t2m"][:24] = np.nan  # missing over the training period, present later
    data.to_netcdf(tmp_path / "gap.nc")
    assert "gap.nc" in fails(
        tmp_path / "gap.nc", "variable 't2m' is all missing in the train split"
    )
    data["t2m"][:] = np.nan
    data["u"] = data["z"] + 0 * data["time"]
    data.to_netcdf(tmp_path / "empty.nc")
    fails(tmp_path / "empty.nc", "'t2m' is all missing", y=["u", "t2m"])


def test_no_window_free_of_missing_values(tmp_path):
    data = dataset()
    data["t2m"][:, ::3, :] = np.nan  # every third latitude row: no 4-row window is complete
    data.to_netcdf(tmp_path / "striped.nc")
    message = fails(tmp_path / "striped.nc", "is free of missing values of 't2m'", min_valid=1.0)
    assert "striped.nc" in message and "train split" in message and "lower min_valid" in message
    data = dataset()
    data["t2m"][:, :, [1, 2, 4, 5, 7, 8]] = np.nan  # a 5-column window: 1 or 2 valid columns
    data.to_netcdf(tmp_path / "sparse.nc")
    message = fails(tmp_path / "sparse.nc", "has 50% of its cells valid")
    assert "train split" in message and "lower min_valid (now 0.5)" in message


def test_several_files_must_differ_along_one_dim(tmp_path):
    data = dataset()
    data.to_netcdf(tmp_path / "a.nc")
    data.to_netcdf(tmp_path / "b.nc")
    fails(tmp_path / "*.nc", r"here none do")
    data.isel(time=slice(0, 20)).to_netcdf(tmp_path / "c.nc")
    data.isel(time=slice(10, 30)).to_netcdf(tmp_path / "d.nc")
    assert "c.nc" in fails(tmp_path / "[cd].nc", "coordinates overlap")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"y": []}, r"name the output variable\(s\)"),
        ({"window": {}}, "window must map each dim to a positive length"),
        ({"window": {"time": 0, "lat": 4, "lon": 5}}, "positive length"),
        ({"load": "disk"}, "load must be one of"),
        ({"split_dim": "lat", "val_select": {"lat": [0, 3]}}, "split_dim cuts stretches"),
        ({"val_fraction": 1.2}, r"must lie in \[0, 1\)"),
        ({"val_fraction": 0.5, "test_fraction": 0.5}, "must leave training data"),
        ({"min_valid": 0.0}, r"min_valid .* must lie in \(0, 1\], got 0.0"),
        ({"min_valid": 1.5}, r"must lie in \(0, 1\], got 1.5"),
        ({"min_ctx_frac": 0.5, "max_ctx_frac": 0.2}, "min_ctx_frac <= max_ctx_frac"),
        (
            {"window": {"time": 1, "lat": 1, "lon": 2}, "min_ctx_frac": 0.6, "max_ctx_frac": 0.9},
            "no context size",
        ),  # fmt: skip
    ],
)
def test_bad_options(nc, options, match):
    fails(nc, match, error=ValueError, **options)
    with pytest.raises(ValueError, match="needs path"):
        build_sampler("grid", y=["t2m"], window=WINDOW)


def test_requesting_an_empty_split(nc):
    sampler = build_sampler("grid", path=str(nc), y=["t2m"], window=WINDOW, test_fraction=0.0)
    with pytest.raises(ValueError, match="the test split has no windows"):
        sampler.windows("test")
