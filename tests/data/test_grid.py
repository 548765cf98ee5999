"""The ``grid`` task source on small NetCDF files: window shapes and input order, every value
re-derived in float64 from the file, lazy reading (same batches, never the whole variable),
several outputs and files, Zarr, and training that stores the normalisation. Splits,
normalisation and missing values: ``test_grid_splits.py``; bad data: ``test_grid_errors.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import CONFIG, WINDOW, grid, grid_file, indices, make_dataset, points
from tnpx.data import batch_at
from tnpx.data.field_arrays import time_values
from tnpx.data.grid import GridSampler


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    return grid_file(tmp_path_factory)


# --- windows, inputs and values ---------------------------------------------------------------
def test_tasks_are_whole_windows_with_inputs_in_order(nc):
    data = make_dataset()
    sampler = grid(nc)
    assert (sampler.dim_x, sampler.dim_y, sampler.n_points) == (3, 1, 60)
    assert sampler.x == ["lat", "lon", "time"]  # time last by default
    assert (sampler.min_ctx, sampler.max_ctx) == (1, 20)
    sizes = set()
    for step in range(6):
        batch = batch_at(sampler, step)
        n_ctx = batch.xc.shape[1]
        sizes.add(n_ctx)
        assert batch.xc.shape == (4, n_ctx, 3) and batch.xt.shape == (4, 60 - n_ctx, 3)
        assert batch.yc.dtype == torch.float32 and batch.mask_c is None
        x, _ = points(sampler, batch)
        for b in range(4):
            at = indices(data, x[b].numpy())
            cells = set(zip(at["time"], at["lat"], at["lon"]))
            assert len(cells) == 60  # context and targets disjoint, together the window
            for dim, n in WINDOW.items():
                span = np.unique(at[dim])
                np.testing.assert_array_equal(span, np.arange(span[0], span[0] + n))
            first = [data.lat.values[at["lat"].min()], data.lon.values[at["lon"].min()],
                     time_values(data.time.values)[at["time"].min()]]  # fmt: skip
            np.testing.assert_allclose(batch.info["origin"][b].numpy(), first)
    assert len(sizes) > 2  # N_c drawn per batch
    other = grid(nc, x=["time", "lon", "lat"])
    xo, _ = points(other, batch_at(other, 5))
    np.testing.assert_allclose(xo.numpy(), x.numpy()[..., [2, 1, 0]], rtol=1e-9)


def test_every_value_is_the_files(nc):
    """Outputs, static input and coordinates, re-derived in float64 from the Dataset and the
    sampler's normalisation, for two outputs and a static input."""
    data = make_dataset()
    sampler = grid(nc, y=["t2m", "u"], static=["z"])
    assert (sampler.dim_x, sampler.dim_y) == (4, 2)
    norm = sampler.normalisation
    assert norm["x"]["columns"] == ["lat", "lon", "time", "z"]
    assert norm["y"]["columns"] == ["t2m", "u"]
    x_loc, x_scale = (np.array(norm["x"][k]) for k in ("loc", "scale"))
    y_loc, y_scale = (np.array(norm["y"][k]) for k in ("loc", "scale"))
    for split in ("train", "val", "test"):
        batch = batch_at(sampler, 1, split=split)
        for xs, ys in ((batch.xc, batch.yc), (batch.xt, batch.yt)):
            x = xs.double().numpy().reshape(-1, 4) * x_scale + x_loc
            at = indices(data, x)
            hours = time_values(data.time.values)[at["time"]]
            cell = (at["time"], at["lat"], at["lon"])
            raw_x = np.stack([data.lat.values[at["lat"]], data.lon.values[at["lon"]], hours,
                              data.z.values[at["lat"], at["lon"]]], -1)  # fmt: skip
            raw_y = np.stack([data[v].values[cell] for v in ("t2m", "u")], -1).astype(np.float64)
            expected_x = torch.from_numpy((raw_x - x_loc) / x_scale).float()
            expected_y = torch.from_numpy((raw_y - y_loc) / y_scale).float()
            torch.testing.assert_close(xs.reshape(-1, 4), expected_x)
            torch.testing.assert_close(ys.reshape(-1, 2), expected_y)


def test_select_restricts_the_data(nc):
    sampler = grid(nc, select={"lat": [51, 54.5], "time": ["2020-01-02", "2020-01-08"]})
    assert sampler.data.sizes == (28, 8, 14)  # lat descending: 54.5 … 51 both included
    x, _ = points(sampler, batch_at(sampler, 0, batch_size=16))
    assert (x[..., 0] >= 51 - 1e-6).all() and (x[..., 0] <= 54.5 + 1e-6).all()
    start, end = time_values(np.array(["2020-01-02T00", "2020-01-08T18"], "datetime64[ns]"))
    assert (x[..., 2] >= start - 1e-3).all() and (x[..., 2] <= end + 1e-3).all()


def test_batches_are_reproducible_and_differ_by_step(nc):
    sampler = grid(nc)
    a, b = batch_at(sampler, 3, split="val"), batch_at(sampler, 3, split="val")
    torch.testing.assert_close(a.xt, b.xt, rtol=0, atol=0)
    assert not torch.equal(batch_at(sampler, 4).yt[:, :5], a.yt[:, :5])


# --- lazy reading -----------------------------------------------------------------------------
@pytest.fixture
def reads(monkeypatch):
    """The sizes of every read the NetCDF backend makes."""
    from xarray.backends import netCDF4_

    sizes: list[int] = []
    original = netCDF4_.NetCDF4ArrayWrapper._getitem

    def spy(self, key):
        out = original(self, key)
        sizes.append(np.asarray(out).size)
        return out

    monkeypatch.setattr(netCDF4_.NetCDF4ArrayWrapper, "_getitem", spy)
    return sizes


def test_lazy_reading_gives_the_same_batches_and_never_the_whole_variable(nc, reads, monkeypatch):
    import tnpx.data.grid.windows as grid_windows

    monkeypatch.setattr(grid_windows, "SCAN_BYTES", 8_000)  # blocks of a few time steps
    options = {"y": ["t2m", "u"], "static": ["z"]}
    memory = grid(nc, load="memory", **options)
    reads.clear()
    lazy = grid(nc, load="lazy", **options)
    whole = 40 * 12 * 14
    assert reads and max(reads) < whole / 4  # the start-up pass reads block by block
    assert lazy.data.lazy and not memory.data.lazy
    assert lazy.normalisation == memory.normalisation
    for step, split in ((0, "train"), (1, "val"), (2, "test")):
        reads.clear()
        a, b = batch_at(lazy, step, split=split), batch_at(memory, step, split=split)
        assert reads and max(reads) <= 60  # one window of one variable at a time
        for name in ("xc", "yc", "xt", "yt"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
    auto = grid(nc, load="auto", memory_limit_mb=0.01, **options)
    assert auto.data.lazy and not grid(nc, **options).data.lazy


def test_several_files_and_a_zarr_store_give_the_same_batches(nc, tmp_path):
    data = make_dataset()
    data.isel(time=slice(0, 17)).to_netcdf(tmp_path / "part-a.nc")
    data.isel(time=slice(17, None)).to_netcdf(tmp_path / "part-b.nc")
    one = grid(nc, static=["z"])
    sources = [
        str(tmp_path / "part-*.nc"),
        [str(tmp_path / "part-b.nc"), str(tmp_path / "part-a.nc")],  # sorted by time
    ]
    try:  # zarr is optional (the xarray extra installs it)
        import zarr  # noqa: F401
    except ImportError:
        pass
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr's note on consolidated metadata
            data.to_zarr(tmp_path / "t2m.zarr")
        sources.append(str(tmp_path / "t2m.zarr"))
    for source in sources:
        for load in ("lazy", "memory"):
            other = grid(source, static=["z"], load=load)
            assert other.normalisation == one.normalisation
            for step, split in ((0, "train"), (3, "test")):
                a, b = batch_at(one, step, split=split), batch_at(other, step, split=split)
                assert torch.equal(a.yt, b.yt) and torch.equal(a.xc, b.xc)


def test_from_dataset_matches_the_file(nc):
    a = GridSampler.from_dataset(make_dataset(), batch_size=4, y="t2m", window=WINDOW)
    b = grid(nc)
    assert a.data.name == "the Dataset"
    assert torch.equal(batch_at(a, 2, split="val").yc, batch_at(b, 2, split="val").yc)


def test_360_day_calendar_times_are_hours(tmp_path):
    cftime = pytest.importorskip("cftime")
    data = make_dataset(n_time=40)
    times = [cftime.Datetime360Day(2000, 1, 1 + k // 4, 6 * (k % 4)) for k in range(40)]
    data = data.assign_coords(time=times)
    data.to_netcdf(tmp_path / "360.nc")
    sampler = grid(tmp_path / "360.nc")
    hours = cftime.date2num(times, "hours since 1970-01-01", "360_day")
    np.testing.assert_allclose(sampler.data.coords["time"], hours)
    assert np.allclose(np.diff(sampler.data.coords["time"]), 6.0)


# --- training ---------------------------------------------------------------------------------
def test_training_stores_the_grids_normalisation(nc, tmp_path):
    from tnpx.checkpoint import read_checkpoint
    from tnpx.config import load_config
    from tnpx.training.loop import build_train_sampler, fit

    config = tmp_path / "grid.yaml"
    config.write_text(CONFIG.format(path=nc, out=tmp_path / "run"))
    cfg = load_config(config)
    fit(cfg)
    record = read_checkpoint(tmp_path / "run" / "model.pt")
    expected = build_train_sampler(cfg).normalisation
    limits = record["normalisation"]["x"].pop("limits")  # measured after training
    assert record["normalisation"] == expected
    assert len(limits["warn_at"]) == len(limits["refuse_at"]) == 4
    assert record["normalisation"]["x"]["columns"] == ["lat", "lon", "time", "z"]


def test_the_iris_example_config_trains(tmp_path):
    """configs/examples/grid-iris-e1.yaml on the iris-sample-data file as it comes."""
    iris = pytest.importorskip("iris_sample_data")
    pytest.importorskip("cftime")
    from pathlib import Path

    from tnpx.checkpoint import read_checkpoint
    from tnpx.config import load_config
    from tnpx.evaluation.protocol import build_test_sampler
    from tnpx.training.loop import fit

    config = Path(__file__).parents[2] / "configs" / "examples" / "grid-iris-e1.yaml"
    path = Path(iris.path) / "E1_north_america.nc"
    overrides = [f"data.path={path}", f"train.out_dir={tmp_path / 'run'}", "train.steps=2",
                 "train.val_every=2", "train.val_batches=1", "data.batch_size=2"]  # fmt: skip
    cfg = load_config(config, overrides)
    fit(cfg)
    stored = read_checkpoint(tmp_path / "run" / "model.pt")["normalisation"]
    assert stored["x"]["columns"] == ["latitude", "longitude", "time"]
    test = build_test_sampler(cfg)
    x, _ = test.to_physical(batch_at(test, 0, split="test").xc)
    years = 1970 + x[..., 2] / (360 * 24)  # hours of the 360-day calendar
    assert (years >= 2069.9).all() and (years < 2100).all()  # the last 30 years


def test_log_uniform_context_sizes_favour_small_contexts(nc):
    """``ctx_size: log-uniform`` (the default) draws ``N_c`` with ``P(k)`` proportional to
    ``log((k + 1) / k)`` on ``{1, ..., 20}``: 1 point in ~23 % of batches, against 5 % for
    ``uniform``; an unknown rule is refused naming the choices."""
    uniform_sizes = [batch_at(grid(nc, ctx_size="uniform"), s).xc.shape[1] for s in range(200)]
    sampler = grid(nc)
    sizes = np.array([batch_at(sampler, s).xc.shape[1] for s in range(200)])
    assert sizes.min() == 1 and sizes.max() <= 20
    p_one = np.log(2) / np.log(21)  # 0.228
    assert abs((sizes == 1).mean() - p_one) < 4 * np.sqrt(p_one * (1 - p_one) / 200)
    assert (np.array(uniform_sizes) == 1).mean() < 0.12
    with pytest.raises(ValueError, match="ctx_size.*uniform.*log-uniform"):
        grid(nc, ctx_size="small")
