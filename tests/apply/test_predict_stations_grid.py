"""Predicting with a checkpoint trained on stations with a grid as extra context
(tnpx.apply.grid_context): the grid's rows built at a task's time, joined to the task's station
readings, give through ``tnpx.predict`` what the model gives on the sampler's own batch; a
draw of cells carries the grid's values there; a checkpoint without a grid is refused; a count
model's cells carry exposure 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tnpx.apply.grid_context import grid_context_rows
from tnpx.batch import Batch
from tnpx.data import batch_at
from tnpx.user_files import DataError

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

LAT, LON = np.linspace(50.0, 55.0, 5), np.linspace(0.0, 6.0, 7)
DAYS, N_STATIONS = 30, 10
CONFIG = """
name: stations-grid-predict
model: {{name: tnp, dim_x: 2, dim_y: {dim_y}, dim_model: 16, n_layers: 1, n_heads: 2,
        dim_head: 8, dim_ff: 16, missing_outputs: true}}
data: {{name: stations, path: {path}, time: time, coords: [lat, lon], y: [temp], max_tgt: 6,
       batch_size: 4{grid}}}
train: {{steps: 3, log_every: 3, val_every: 3, val_batches: 1, checkpoint_every: 1000,
        progress: false, out_dir: {out}}}
"""


def make_grid() -> xr.Dataset:
    """A daily field ``t2m (time, lat, lon)`` at 00:00 from 2024-03-01, a new pattern a day."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2, (2, DAYS, 1, 1))
    t2m = np.sin(a * LAT[None, :, None]) + np.cos(b * LON[None, None, :])
    times = pd.date_range("2024-03-01", periods=DAYS, freq="D")
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m)}, coords={"time": times, "lat": LAT, "lon": LON}
    )


def make_stations(grid: xr.Dataset) -> pd.DataFrame:
    """Readings at 06:00 at stations on grid cells: the day's value there plus noise."""
    rng = np.random.default_rng(1)
    cells = rng.choice(len(LAT) * len(LON), N_STATIONS, replace=False)
    i, j = np.unravel_index(cells, (len(LAT), len(LON)))
    values = grid["t2m"].values[:, i, j]  # [days, stations]
    return pd.DataFrame(
        {
            "time": np.repeat(grid["time"].values, N_STATIONS) + np.timedelta64(6, "h"),
            "lat": np.tile(LAT[i], DAYS),
            "lon": np.tile(LON[j], DAYS),
            "temp": values.ravel() + 0.05 * rng.standard_normal(values.size),
        }
    )


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    return make_grid()


@pytest.fixture(scope="module")
def readings(grid) -> pd.DataFrame:
    return make_stations(grid)


def train(tmp, readings: pd.DataFrame, grid_path=None):
    """A 3-step ``tnp`` on the readings (with the grid at ``grid_path`` as context)."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    path = tmp / "readings.csv"
    readings.to_csv(path, index=False)
    extra = "" if grid_path is None else f", grid: {{path: {grid_path}, y: [t2m]}}"
    config = tmp / "run.yaml"
    dim_y = 1 if grid_path is None else 2
    config.write_text(CONFIG.format(path=path, grid=extra, out=tmp / "run", dim_y=dim_y))
    fit(load_config(config))
    return tmp / "run" / "model.pt"


@pytest.fixture(scope="module")
def trained(tmp_path_factory, grid, readings):
    tmp = tmp_path_factory.mktemp("stations_grid_predict")
    nc = tmp / "t2m.nc"
    grid.to_netcdf(nc)
    return train(tmp, readings, nc), nc


def test_predict_on_the_joint_context_is_the_models_forward_on_the_samplers_batch(
    trained, readings
):
    from tnpx.checkpoint import experiment_from_record, read_checkpoint
    from tnpx.evaluation.protocol import build_test_sampler

    checkpoint, nc = trained
    model = tnpx.load(checkpoint)
    sampler = build_test_sampler(experiment_from_record(read_checkpoint(checkpoint)))
    norm = sampler.normalisation
    n_cells = len(LAT) * len(LON)
    batch = batch_at(sampler, 0, split="test", batch_size=2)
    for i in range(2):
        key = sampler.task_keys("test")[int(batch.info["task"][i])]
        rows = grid_context_rows(nc, checkpoint, time=key)
        assert list(rows.columns) == ["lat", "lon", "temp", "t2m"] and len(rows) == n_cells
        assert rows["temp"].isna().all() and rows.attrs["grid_time"].startswith(key[:10])
        at = readings[readings["time"] == pd.Timestamp(key)]
        real_c = torch.ones(batch.xc.shape[1], dtype=torch.bool)
        real_c = real_c if batch.mask_c is None else batch.mask_c[i]
        stations = real_c.clone()
        stations[:n_cells] = False  # the grid's cells come first in a task's context
        ctx = at.loc[_rows_at(at, sampler, batch.xc[i, stations])]
        real_t = torch.ones(batch.xt.shape[1], dtype=torch.bool)
        real_t = real_t if batch.mask_t is None else batch.mask_t[i]
        tgt = at.loc[_rows_at(at, sampler, batch.xt[i, real_t])]
        context = pd.concat([ctx[["lat", "lon", "temp"]].assign(t2m=np.nan), rows])
        pred = tnpx.predict(checkpoint, context, tgt[["lat", "lon"]])

        task = slice(i, i + 1)
        masks = {k: None if v is None else v[task] for k, v in
                 (("mask_c", batch.mask_c), ("mask_yc", batch.mask_yc))}  # fmt: skip
        with torch.no_grad():
            want = model.predict_batch(Batch(batch.xc[task], batch.yc[task],
                                             batch.xt[task][:, real_t], **masks))  # fmt: skip
        loc, scale = norm["y"]["loc"][0], norm["y"]["scale"][0]
        mean = want.mean[0, :, 0].double().numpy() * scale + loc
        std = want.stddev[0, :, 0].double().numpy() * scale
        np.testing.assert_allclose(pred["temp_mean"], mean, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(pred["temp_std"], std, rtol=1e-5, atol=1e-6)


def _rows_at(rows: pd.DataFrame, sampler, x: torch.Tensor) -> list:
    """The index of the reading of ``rows`` at each point ``x [n, 2]`` (model units)."""
    norm = sampler.normalisation["x"]
    places = x.double().numpy() * np.array(norm["scale"]) + np.array(norm["loc"])
    gap = np.abs(rows[["lat", "lon"]].to_numpy()[None] - places[:, None]).max(-1)  # [n, rows]
    assert (gap.min(1) < 1e-4).all()
    return list(rows.index[gap.argmin(1)])


def test_a_draw_of_cells_carries_the_grids_values_at_the_step_before(trained, grid):
    checkpoint, nc = trained
    rows = grid_context_rows(grid, checkpoint, time="2024-03-20 06:00", points=9, seed=3)
    again = grid_context_rows(str(nc), checkpoint, time=pd.Timestamp("2024-03-20 06:00"),
                              points=9, seed=3)  # fmt: skip
    pd.testing.assert_frame_equal(rows, again)
    assert len(rows) == 9 and len({*zip(rows["lat"], rows["lon"])}) == 9
    day = grid["t2m"].sel(time="2024-03-20")  # the grid step at or before 06:00
    want = [float(day.sel(lat=a, lon=b)) for a, b in zip(rows["lat"], rows["lon"])]
    np.testing.assert_allclose(rows["t2m"], want, rtol=1e-12)
    other = grid_context_rows(grid, checkpoint, time="2024-03-20 06:00", points=9, seed=4)
    assert not other[["lat", "lon"]].equals(rows[["lat", "lon"]])


def test_a_cell_missing_its_value_is_left_out(trained, grid):
    holes = grid.copy(deep=True)
    holes["t2m"][:, 0, :2] = np.nan
    rows = grid_context_rows(holes, trained[0], time="2024-03-20 06:00")
    assert len(rows) == len(LAT) * len(LON) - 2 and rows["t2m"].notna().all()


def test_a_time_the_grid_does_not_cover_is_named(trained):
    with pytest.raises(DataError, match=r"no 'time' step at or before the predict task "
                                        r"time=2024-02-01 00:00:00"):  # fmt: skip
        grid_context_rows(None, trained[0], time="2024-02-01")


def test_a_checkpoint_without_a_grid_context_is_refused(tmp_path, trained, readings):
    plain = train(tmp_path, readings)
    with pytest.raises(ValueError) as err:
        grid_context_rows(trained[1], plain, time="2024-03-20 06:00")
    text = str(err.value)
    assert "\n" not in text and "not trained with a grid context" in text
    assert text.startswith(str(plain)) and "'stations'" in text
    with pytest.raises(ValueError, match="needs a checkpoint's path, got "):
        grid_context_rows(trained[1], tnpx.load(trained[0]), time="2024-03-20 06:00")


def test_the_stations_plot_draws_the_stations_of_a_grid_context(trained):
    """The plot (tnpx.plot.stations) conditions on the cells but draws only the stations."""
    pytest.importorskip("matplotlib").use("Agg")
    from tnpx.checkpoint import experiment_from_record, read_checkpoint
    from tnpx.evaluation.protocol import build_test_sampler
    from tnpx.plot.stations import station_maps

    sampler = build_test_sampler(experiment_from_record(read_checkpoint(trained[0])))
    batch = batch_at(sampler, 0, split="test", batch_size=2)
    n_cells = len(LAT) * len(LON)
    for i in range(2):
        maps = station_maps(tnpx.load(trained[0]), sampler, batch, i)
        real_c = batch.xc.shape[1] if batch.mask_c is None else int(batch.mask_c[i].sum())
        assert len(maps.context_x) == real_c - n_cells and maps.output == "temp"
        assert np.isfinite(maps.context_y).all() and np.isfinite(maps.mean).all()


def test_with_time_as_input_a_cell_carries_its_time_since_the_window_start(tmp_path):
    """Numbers for times, windows of 3 units, the grid every 2: the cells read at window
    start 9 are those of grid time 8, offset -1 (in the stored input column)."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    times = np.arange(0.0, 40.0, 2.0)
    field = np.sin(times[:, None, None] + LAT[None, :, None] + LON[None, None, :])
    grid = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), field)}, coords={"time": times, "lat": LAT, "lon": LON}
    )
    grid.to_netcdf(tmp_path / "t2m.nc")
    rng = np.random.default_rng(2)
    t = np.repeat(np.arange(1.0, 39.0), 6)
    lat, lon = rng.uniform(50, 55, len(t)), rng.uniform(0, 6, len(t))
    frame = pd.DataFrame({"time": t, "lat": lat, "lon": lon, "temp": rng.standard_normal(len(t))})
    frame.to_csv(tmp_path / "readings.csv", index=False)
    text = CONFIG.format(
        path=tmp_path / "readings.csv", dim_y=2, out=tmp_path / "run",
        grid=f", window: 3, time_as_input: true, grid: {{path: {tmp_path / 't2m.nc'}, y: [t2m]}}",
    ).replace("dim_x: 2", "dim_x: 3")  # fmt: skip
    (tmp_path / "run.yaml").write_text(text)
    fit(load_config(tmp_path / "run.yaml"))
    rows = grid_context_rows(None, tmp_path / "run" / "model.pt", time=9, points=5)
    assert list(rows.columns) == ["lat", "lon", "time_offset", "temp", "t2m"]
    assert (rows["time_offset"] == -1.0).all() and rows.attrs["grid_time"] == "8.0"
    want = [
        float(grid["t2m"].sel(time=8.0, lat=a, lon=b)) for a, b in zip(rows["lat"], rows["lon"])
    ]
    np.testing.assert_allclose(rows["t2m"], want, rtol=1e-12)


def test_a_count_models_cells_carry_exposure_one_and_its_targets_their_own(tmp_path, grid):
    """Counts at stations with an exposure column (hours watched) and the grid as context:
    the cells' rows carry the column at 1, as training gave them, and the counts predicted
    follow each target's exposure."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    readings = make_stations(grid)
    rng = np.random.default_rng(5)
    readings["hours"] = rng.uniform(1.0, 24.0, len(readings))
    readings["temp"] = rng.poisson(readings["hours"] * np.exp(readings["temp"] - 1)).astype(float)
    readings.to_csv(tmp_path / "readings.csv", index=False)
    grid.to_netcdf(tmp_path / "t2m.nc")
    text = CONFIG.format(
        path=tmp_path / "readings.csv", dim_y=2, out=tmp_path / "run",
        grid=f", exposure: hours, grid: {{path: {tmp_path / 't2m.nc'}, y: [t2m]}}",
    ).replace("missing_outputs: true", "missing_outputs: true, likelihood: poisson")  # fmt: skip
    (tmp_path / "run.yaml").write_text(text)
    fit(load_config(tmp_path / "run.yaml"))
    checkpoint = tmp_path / "run" / "model.pt"
    rows = grid_context_rows(None, checkpoint, time="2024-03-20 06:00")
    assert list(rows.columns) == ["lat", "lon", "temp", "t2m", "hours"]
    assert (rows["hours"] == 1.0).all()
    day = readings[readings["time"] == pd.Timestamp("2024-03-20 06:00")]
    context = pd.concat([day.iloc[:5].drop(columns="time").assign(t2m=np.nan), rows])
    targets = day.iloc[5:][["lat", "lon", "hours"]]
    pred = tnpx.predict(checkpoint, context, targets)
    twice = tnpx.predict(checkpoint, context, targets.assign(hours=2 * targets["hours"]))
    np.testing.assert_allclose(twice["temp_mean"], 2 * pred["temp_mean"], rtol=1e-5)
    with pytest.raises(DataError, match="no column 'hours'"):
        tnpx.predict(checkpoint, context.drop(columns="hours"), targets)
