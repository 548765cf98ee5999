"""The ``grid`` task source on small NetCDF files: window shapes and input order, every value
re-derived in float64 from the file, whole-window splits, normalisation fitted on training
alone, missing values, lazy reading (same batches, never the whole variable), several outputs
and files, Zarr, and training that stores the normalisation. Bad data: ``test_grid_errors.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tnpx.data import batch_at, build_sampler
from tnpx.data.era5_regions import time_values
from tnpx.data.grid import GridSampler

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

WINDOW = {"time": 3, "lat": 4, "lon": 5}  # N = 60


def make_dataset(seed: int = 0, n_time: int = 40) -> xr.Dataset:
    """6-hourly fields on a descending-latitude grid (as the CDS delivers them): ``t2m`` and
    ``u`` (time, lat, lon) float32, elevation ``z`` (lat, lon)."""
    rng = np.random.default_rng(seed)
    time = np.arange(n_time) * np.timedelta64(6, "h") + np.datetime64("2020-01-01T00", "ns")
    lat = np.arange(56.0, 50.0, -0.5)  # 12, descending
    lon = np.arange(2.0, 9.0, 0.5)  # 14
    shape = (n_time, len(lat), len(lon))
    t2m = 280 + 0.5 * (lat[None, :, None] - 53) + 3 * rng.standard_normal(shape)
    u = 5 * rng.standard_normal(shape)
    z = 300 * rng.random((len(lat), len(lon)))
    return xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t2m.astype(np.float32)),
            "u": (("time", "lat", "lon"), u.astype(np.float32)),
            "z": (("lat", "lon"), z),
        },
        coords={"time": time, "lat": lat, "lon": lon},
    )


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("grid") / "t2m.nc"
    make_dataset().to_netcdf(path)
    return path


def grid(path, batch_size=4, seed=0, **options) -> GridSampler:
    options = {"y": ["t2m"], "window": WINDOW, **options}
    path = path if isinstance(path, list) else str(path)
    return build_sampler("grid", batch_size, seed, path=path, **options)


def points(sampler: GridSampler, batch):
    """All points of a batch in the data's units: ``x [b, N, dim_x]``, ``y [b, N, dim_y]``."""
    x = torch.cat([batch.xc, batch.xt], 1)
    y = torch.cat([batch.yc, batch.yt], 1)
    return sampler.to_physical(x, y)


def indices(data, x: np.ndarray, order=("lat", "lon", "time")) -> dict[str, np.ndarray]:
    """The grid index along each dim of the points ``x [n, >= 3]`` (inputs in ``order``),
    checked to lie on the grid."""
    out = {}
    for k, dim in enumerate(order):
        values = time_values(data[dim].values) if dim == "time" else data[dim].values
        nearest = np.abs(values[None, :] - x[:, k : k + 1]).argmin(1)
        np.testing.assert_allclose(values[nearest], x[:, k], atol=1e-3)
        out[dim] = nearest
    return out


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


# --- splits and normalisation -----------------------------------------------------------------
def _cells(sampler, data, split: str, steps: int = 12) -> set:
    cells = set()
    for step in range(steps):
        x, _ = points(sampler, batch_at(sampler, step, split=split, batch_size=16))
        at = indices(data, x.reshape(-1, x.shape[-1]).numpy())
        cells |= set(zip(at["time"].tolist(), at["lat"].tolist(), at["lon"].tolist()))
    return cells


def test_the_default_split_holds_out_the_last_periods(nc):
    data = make_dataset()
    sampler = grid(nc)  # 40 time steps: train 32, val 4, test 4
    times = {s: {t for t, _, _ in _cells(sampler, data, s)} for s in ("train", "val", "test")}
    assert max(times["train"]) < min(times["val"]) and max(times["val"]) < min(times["test"])
    assert max(times["train"]) <= 31 and min(times["val"]) >= 32 and min(times["test"]) >= 36
    assert len(sampler.windows("val")) == (4 - 3 + 1) * (12 - 4 + 1) * (14 - 5 + 1)


def test_regions_held_out_share_no_cell_with_training(nc):
    data = make_dataset()
    sampler = grid(
        nc, val_select={"lon": [2.0, 4.0]}, test_select={"lat": [54.0, 56.0], "lon": [6.5, 9.0]}
    )
    cells = {s: _cells(sampler, data, s) for s in ("train", "val", "test")}
    space = {s: {(i, j) for _, i, j in c} for s, c in cells.items()}
    assert not cells["train"] & cells["val"] and not cells["train"] & cells["test"]
    assert not space["train"] & space["val"]  # a region boxed in lon alone: every time step
    lon = data.lon.values
    assert all(lon[j] <= 4.0 for _, j in space["val"])
    assert all(lon[j] > 4.0 for _, j in space["train"])  # whole windows clear of the box
    test_lat = data.lat.values[[i for i, _ in space["test"]]]
    assert (test_lat >= 54.0).all()
    windows = sampler.windows("train")
    assert len(windows) < 38 * 9 * 10 and windows.excluded == 0  # excluded by the boxes


def test_normalisation_is_fitted_on_training_only(nc, tmp_path):
    data = make_dataset()
    sampler = grid(nc, static=["z"])
    train = data.isel(time=slice(0, 32))  # the training period
    hours = time_values(train.time.values)
    n_lat, n_lon = train.sizes["lat"], train.sizes["lon"]
    expected = {  # each training cell counts once
        "lat": (train.lat.values.mean(), train.lat.values.std()),
        "lon": (train.lon.values.mean(), train.lon.values.std()),
        "time": (hours.mean(), hours.std()),
        "z": (train.z.values.mean(), train.z.values.std()),
    }
    norm = sampler.normalisation
    for k, column in enumerate(norm["x"]["columns"]):
        np.testing.assert_allclose(
            [norm["x"]["loc"][k], norm["x"]["scale"][k]], expected[column], rtol=1e-9
        )
    t2m = train.t2m.values.astype(np.float64)
    np.testing.assert_allclose(norm["y"]["loc"], [t2m.mean()], rtol=1e-9)
    np.testing.assert_allclose(norm["y"]["scale"], [t2m.std()], rtol=1e-9)
    assert n_lat * n_lon * 32 == t2m.size
    # the held-out periods do not move it
    changed = data.copy(deep=True)
    changed["t2m"][32:] = changed["t2m"][32:] * 10 + 5
    changed.to_netcdf(tmp_path / "changed.nc")
    assert grid(tmp_path / "changed.nc", static=["z"]).normalisation == norm
    assert grid(nc, normalise=False).normalisation["y"] == {"columns": ["t2m"], "loc": [0.0],
                                                           "scale": [1.0]}  # fmt: skip


def test_a_split_along_another_dim_fits_on_its_training_block(nc):
    data = make_dataset()
    sampler = grid(nc, split_dim="lon", val_fraction=0.0, test_fraction=0.4)  # 14 lon: 8 + 6
    train = data.isel(lon=slice(0, 8))
    norm = sampler.normalisation
    assert norm["x"]["loc"][1] == pytest.approx(train.lon.values.mean(), rel=1e-12)
    t2m = train.t2m.values.astype(np.float64)
    np.testing.assert_allclose([norm["y"]["loc"][0], norm["y"]["scale"][0]],
                               [t2m.mean(), t2m.std()], rtol=1e-9)  # fmt: skip
    lon = {s: {j for _, _, j in _cells(sampler, data, s, 4)} for s in ("train", "test")}
    assert max(lon["train"]) <= 7 and min(lon["test"]) >= 8


def test_static_inputs_from_another_file(nc, tmp_path):
    """An invariant file on a wider grid with a length-1 time axis (ERA5's layout)."""
    data = make_dataset()
    lat, lon = np.arange(60.0, 45.0, -0.5), np.arange(0.0, 12.0, 0.5)
    heights = (lat[:, None] * 10 + lon[None, :])[None]
    coords = {"time": data.time.values[:1], "lat": lat, "lon": lon}
    xr.Dataset({"orog": (("time", "lat", "lon"), heights)}, coords=coords).to_netcdf(
        tmp_path / "invariant.nc"
    )
    sampler = grid(nc, static=["orog"], static_path=str(tmp_path / "invariant.nc"))
    x, _ = points(sampler, batch_at(sampler, 0))
    x = x.reshape(-1, 4).numpy()
    np.testing.assert_allclose(x[:, 3], x[:, 0] * 10 + x[:, 1], rtol=1e-6)


def test_a_given_normalisation_is_used_as_is(nc):
    fitted = grid(nc)
    given = {
        "x": {**fitted.normalisation["x"], "loc": [50.0, 5.0, 438000.0]},
        "y": {"columns": ["t2m"], "loc": [273.15], "scale": [10.0]},
    }
    data = make_dataset()
    sampler = GridSampler.from_dataset(data, 4, normalisation=given, y="t2m", window=WINDOW)
    assert sampler.normalisation == given
    batch, same = batch_at(sampler, 0), batch_at(fitted, 0)  # the same windows and points
    _, y = points(fitted, same)
    n_ctx = batch.yc.shape[1]
    np.testing.assert_allclose(batch.yc.numpy(), (y[:, :n_ctx].numpy() - 273.15) / 10, atol=1e-5)
    wrong = {**given, "y": {"columns": ["u"], "loc": [0.0], "scale": [1.0]}}
    with pytest.raises(ValueError, match=r"normalisation's y columns \['u'\] are not \['t2m'\]"):
        GridSampler.from_dataset(data, normalisation=wrong, y="t2m", window=WINDOW)


# --- missing values ---------------------------------------------------------------------------
def _complete(missing: np.ndarray, window: tuple[int, ...]) -> int:
    """How many windows hold no missing cell, counted one window at a time."""
    room = [n - w + 1 for n, w in zip(missing.shape, window)]
    count = 0
    for origin in np.ndindex(*room):
        box = tuple(slice(o, o + w) for o, w in zip(origin, window))
        count += not missing[box].any()
    return count


def test_windows_with_missing_values_are_never_drawn_and_counted(tmp_path):
    data = make_dataset()
    data["t2m"][3:9, 0:5, 0:6] = np.nan  # "sea" for a while
    data["t2m"][20, 7, 9] = np.nan
    data["z"][10, 12] = np.nan
    data.to_netcdf(tmp_path / "holes.nc")
    with pytest.warns(UserWarning, match=r"holes.nc: \d+ of \d+ .* never drawn") as caught:
        sampler = grid(tmp_path / "holes.nc", static=["z"])
    missing = np.isnan(data.t2m.values) | np.isnan(data.z.values)[None]
    window = (3, 4, 5)
    counts = {"train": missing[:32], "val": missing[32:36], "test": missing[36:]}
    full = {s: np.prod([n - w + 1 for n, w in zip(m.shape, window)]) for s, m in counts.items()}
    complete = {s: _complete(m, window) for s, m in counts.items()}
    excluded = sum(full[s] - complete[s] for s in counts)
    assert f": {excluded} of {sum(full.values())} " in str(caught[0].message)
    for split in counts:
        assert len(sampler.windows(split)) == complete[split]
    for step in range(10):
        batch = batch_at(sampler, step, batch_size=16)
        assert torch.isfinite(batch.yc).all() and torch.isfinite(batch.xt).all()
        assert torch.isfinite(batch.yt).all() and torch.isfinite(batch.xc).all()
    # statistics over the cells where everything is present
    t2m = data.t2m.values[:32].astype(np.float64)
    present = ~missing[:32]
    np.testing.assert_allclose(sampler.normalisation["y"]["loc"], [t2m[present].mean()], rtol=1e-9)


def test_windows_listed_block_by_block_are_the_same(tmp_path, monkeypatch):
    """The start-up pass one time step at a time (blocks shorter than a window at the end)
    lists the same complete windows."""
    import tnpx.data.grid_windows as grid_windows

    data = make_dataset()
    data["t2m"][10:12, 2:6, 3:9] = np.nan
    data["t2m"][30, 0, 0] = np.nan
    data.to_netcdf(tmp_path / "holes.nc")
    options = {"window": {"time": 5, "lat": 4, "lon": 5}, "val_fraction": 0.15}
    options["test_fraction"] = 0.15
    with pytest.warns(UserWarning, match="never drawn"):
        whole = grid(tmp_path / "holes.nc", **options)
    monkeypatch.setattr(grid_windows, "SCAN_BYTES", 12 * 14 * 4)
    with pytest.warns(UserWarning, match="never drawn"):
        blocks = grid(tmp_path / "holes.nc", load="lazy", **options)
    for split in ("train", "val", "test"):
        assert len(blocks.windows(split)) == len(whole.windows(split))
        a, b = batch_at(whole, 7, split=split), batch_at(blocks, 7, split=split)
        assert torch.equal(a.xt, b.xt) and torch.equal(a.yc, b.yc)
    assert whole.normalisation["x"] == blocks.normalisation["x"]  # exact counts per coordinate
    for key in ("loc", "scale"):  # merged block by block: equal to rounding
        assert whole.normalisation["y"][key] == pytest.approx(blocks.normalisation["y"][key])


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
    import tnpx.data.grid_windows as grid_windows

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
CONFIG = """
name: grid-smoke
model: {{name: tnp, dim_x: 4, dim_y: 1, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1}}
data: {{name: grid, path: {path}, y: [t2m], static: [z], window: {{time: 3, lat: 4, lon: 5}},
       batch_size: 4}}
optim: {{name: adamw, lr: 1.0e-3}}
train: {{steps: 4, log_every: 2, val_every: 4, val_batches: 1, checkpoint_every: 100,
        progress: false, out_dir: {out}}}
eval: {{n_batches: 1, batch_size: 4}}
"""


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
    assert record["normalisation"] == expected
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
