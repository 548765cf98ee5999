"""A gridded field as extra context of the ``stations`` source (tnpx.data.stations_grid): one
context set of grid cells and stations with per-output masks, each cell's inputs and value
re-derived in float64 from the grid, the grid time step each task reads, the grid normalised on
the training tasks' steps only, missing grid values masked, bad grids named in one line, and
``tnpx train`` / ``tnpx eval`` end to end with ``missing_outputs: true``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.data import SPLITS, batch_at, build_sampler
from tnpx.data.era5_regions import time_values
from tnpx.data.stations import StationsSampler
from tnpx.data.stations_grid import GridContext
from tnpx.data.user_files import DataError
from tnpx.training.loop import build_train_sampler, fit, validation_ll

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")

SPLIT_NAMES = list(SPLITS)
LAT, LON = np.linspace(50.0, 55.0, 6), np.linspace(0.0, 7.0, 8)
N_CELLS = len(LAT) * len(LON)
DAYS, N_STATIONS = 40, 12
COLUMNS = {"time": "time", "coords": ["lat", "lon"], "y": ["temp"]}
SMALL = {"dim_model": 32, "n_layers": 2, "n_heads": 2, "dim_head": 16, "dim_ff": 32,
         "n_embed_hidden": 1, "n_decoder_hidden": 1}  # fmt: skip


def make_grid(days: int = DAYS, seed: int = 0, trend: float = 0.1) -> xr.Dataset:
    """A daily field ``t2m (time, lat, lon)`` (00:00) from 2024-03-01: a random smooth pattern
    each day on a ``trend`` per day, so the later (held-out) days have larger values."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 2, (2, days, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (2, days, 1, 1))
    t2m = (
        np.sin(a * LAT[None, :, None] + phase[0])
        + np.cos(b * LON[None, None, :] + phase[1])
        + trend * np.arange(days)[:, None, None]
    )
    times = pd.date_range("2024-03-01", periods=days, freq="D")
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m)}, coords={"time": times, "lat": LAT, "lon": LON}
    )


def make_stations(grid: xr.Dataset, hour: int = 6, seed: int = 0) -> pd.DataFrame:
    """Daily readings at ``hour``:00 of stations on grid cells: the day's grid value there plus
    noise, a few readings missing: ``time, lat, lon, temp``."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(N_CELLS, N_STATIONS, replace=False)
    i, j = np.unravel_index(cells, (len(LAT), len(LON)))
    values = grid["t2m"].values[:, i, j]  # [days, stations]
    days = grid["time"].values
    frame = pd.DataFrame(
        {
            "time": np.repeat(days, N_STATIONS) + np.timedelta64(hour, "h"),
            "lat": np.tile(LAT[i], len(days)),
            "lon": np.tile(LON[j], len(days)),
            "temp": values.ravel() + 0.05 * rng.standard_normal(values.size),
        }
    )
    return frame[rng.uniform(size=len(frame)) > 0.05].reset_index(drop=True)


@pytest.fixture(scope="module")
def grid() -> xr.Dataset:
    return make_grid()


@pytest.fixture(scope="module")
def stations(grid) -> pd.DataFrame:
    return make_stations(grid)


@pytest.fixture(scope="module")
def nc(tmp_path_factory, grid):
    path = tmp_path_factory.mktemp("grid") / "t2m.nc"
    grid.to_netcdf(path)
    return path


def sampler_of(frame, grid_options: dict, batch_size: int = 4, **options) -> StationsSampler:
    options = {**COLUMNS, **options}
    return StationsSampler.from_frame(frame, batch_size, grid=grid_options, **options)


def in_data_units(sampler, x: torch.Tensor, y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """``x [..., dim_x]`` and ``y [..., dim_y]`` in the data's units (float64)."""
    norm = sampler.normalisation
    out = []
    for side, values in (("x", x), ("y", y)):
        loc, scale = (np.asarray(norm[side][k]) for k in ("loc", "scale"))
        out.append(values.double().numpy() * scale + loc)
    return out[0], out[1]


def hours(key: str) -> float:
    return float(time_values(np.array([np.datetime64(key)], "datetime64[ns]"))[0])


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


# --- batches: one context set of cells and stations ---------------------------------------------


@pytest.mark.parametrize("split", SPLIT_NAMES)
def test_context_is_the_grid_cells_then_the_stations_each_missing_the_other(grid, stations, split):
    sampler = sampler_of(stations, {"path": grid, "y": ["t2m"]})
    assert (sampler.dim_x, sampler.dim_y) == (2, 2) and sampler.missing_outputs
    plain = StationsSampler.from_frame(stations, 4, **COLUMNS)
    for step in range(3):
        b, alone = batch_at(sampler, step, split=split), batch_at(plain, step, split=split)
        n_ctx = alone.xc.shape[1]
        assert b.xc.shape == (4, N_CELLS + n_ctx, 2) and b.yc.shape == (4, N_CELLS + n_ctx, 2)
        assert b.xt.shape == alone.xt.shape and b.yt.shape == (*alone.yt.shape[:2], 2)
        # the stations' part is the batch without a grid, drawn alike
        torch.testing.assert_close(b.xc[:, N_CELLS:], alone.xc, rtol=0, atol=0)
        torch.testing.assert_close(b.yc[:, N_CELLS:, :1], alone.yc, rtol=0, atol=0)
        torch.testing.assert_close(b.yt[..., :1], alone.yt, rtol=0, atol=0)
        real_c = torch.ones(4, n_ctx, dtype=torch.bool) if alone.mask_c is None else alone.mask_c
        real_t = torch.ones(alone.xt.shape[:2], dtype=torch.bool)
        real_t = real_t if alone.mask_t is None else alone.mask_t
        cells, readings = b.mask_yc[:, :N_CELLS], b.mask_yc[:, N_CELLS:]
        assert not cells[..., 0].any() and cells[..., 1].all()  # a cell: the grid's output
        assert readings[..., 0].all() and torch.equal(readings[..., 1], ~real_c)
        assert b.mask_yt[..., 0].all() and torch.equal(b.mask_yt[..., 1], ~real_t)
        assert (b.yc[:, :N_CELLS, 0] == 0).all() and (b.yc[:, N_CELLS:, 1] == 0).all()
        assert (b.yt[..., 1] == 0).all()
        if b.mask_c is not None:
            assert b.mask_c[:, :N_CELLS].all() and torch.equal(b.mask_c[:, N_CELLS:], real_c)


def test_grid_cells_carry_the_grid_value_at_their_cell_and_time(grid, stations):
    sampler = sampler_of(stations, {"path": grid, "y": ["t2m"], "points": 20}, batch_size=6)
    field = grid["t2m"]
    for split in SPLIT_NAMES:
        b = batch_at(sampler, 1, split=split)
        x, y = in_data_units(sampler, b.xc[:, :20], b.yc[:, :20])
        for task in range(b.batch_size):
            when = np.datetime64(int(b.info["grid_time"][task]), "h")
            lat = LAT[np.abs(x[task, :, :1] - LAT).argmin(1)]
            lon = LON[np.abs(x[task, :, 1:] - LON).argmin(1)]
            np.testing.assert_allclose(x[task], np.stack([lat, lon], -1), atol=1e-5)
            assert len({*zip(lat, lon)}) == 20  # distinct cells
            want = field.sel(time=when).values[np.searchsorted(LAT, lat), np.searchsorted(LON, lon)]
            np.testing.assert_allclose(y[task, :, 1], want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(("hour", "match", "day_after"), [(6, "before", 0), (18, "nearest", 1)])
def test_each_task_reads_the_grid_step_at_or_before_or_nearest_its_time(
    grid, hour, match, day_after
):
    frame = make_stations(grid, hour=hour).query("time < '2024-04-09'")  # the last day: nearest
    sampler = sampler_of(frame, {"path": grid, "y": ["t2m"], "match": match})
    for split in SPLIT_NAMES:
        keys = sampler.task_keys(split)
        for step in range(2):
            b = batch_at(sampler, step, split=split)
            for task, grid_time in zip(b.info["task"].tolist(), b.info["grid_time"].tolist()):
                key = keys[task]
                assert key.endswith(f"{hour:02d}:00:00")
                day = np.datetime64(key[:10]) + np.timedelta64(day_after, "D")
                assert grid_time == hours(str(day))


def test_time_as_input_gives_cells_their_time_since_the_window_start():
    times = np.arange(0.0, 40.0, 2.0)  # the grid every 2 time units
    field = np.sin(times[:, None, None] + LAT[None, :, None] + LON[None, None, :])
    data = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), field)}, coords={"time": times, "lat": LAT, "lon": LON}
    )
    rng = np.random.default_rng(1)
    t = np.arange(1.0, 40.0)  # readings every unit from t = 1
    frame = pd.DataFrame(
        {
            "time": np.repeat(t, 5),
            "lat": rng.uniform(50, 55, 5 * len(t)),
            "lon": rng.uniform(0, 7, 5 * len(t)),
            "temp": rng.standard_normal(5 * len(t)),
        }
    )
    sampler = sampler_of(
        frame, {"path": data, "y": ["t2m"]}, window=3, time_as_input=True, batch_size=5
    )
    assert sampler.normalisation["x"]["columns"] == ["lat", "lon", "time_offset"]
    for split in SPLIT_NAMES:
        b = batch_at(sampler, 0, split=split)
        x, _ = in_data_units(sampler, b.xc[:, :N_CELLS], b.yc[:, :N_CELLS])
        starts = np.array(sampler.task_keys(split))[b.info["task"].numpy()]
        want = 2.0 * np.floor(starts / 2.0)  # the grid step at or before the window's start
        np.testing.assert_array_equal(b.info["grid_time"].numpy(), want)
        np.testing.assert_allclose(x[..., 2], (want - starts)[:, None].repeat(N_CELLS, 1),
                                   atol=1e-5)  # fmt: skip


def test_the_grid_is_normalised_on_the_training_tasks_steps_only(grid, stations):
    sampler = sampler_of(stations, {"path": grid, "y": ["t2m"]})
    days = sorted({k[:10] for k in sampler.task_keys("train")})
    trained = grid["t2m"].sel(time=days).values.ravel()
    norm = sampler.normalisation["y"]
    assert norm["columns"] == ["temp", "t2m"]
    assert norm["loc"][1] == pytest.approx(trained.mean(), rel=1e-12)
    assert norm["scale"][1] == pytest.approx(trained.std(), rel=1e-12)
    assert abs(norm["loc"][1] - grid["t2m"].values.mean()) > 0.1  # the held-out days differ
    plain = StationsSampler.from_frame(stations, **COLUMNS)
    assert sampler.normalisation["x"] == plain.normalisation["x"]  # the stations' own


def test_a_missing_grid_value_is_a_masked_output_of_its_cell(grid, stations):
    holes = grid.copy(deep=True)
    holes["t2m"][:, 0, :3] = np.nan  # three cells never observed
    sampler = sampler_of(stations, {"path": holes, "y": ["t2m"]})
    b = batch_at(sampler, 0)
    seen = b.mask_yc[:, :N_CELLS, 1]
    assert int((~seen).sum()) == 3 * b.batch_size and torch.isfinite(b.yc).all()
    assert (b.yc[:, :N_CELLS, 1][~seen] == 0).all()


def test_lazy_and_in_memory_reading_give_the_same_batches(nc, stations):
    lazy = sampler_of(stations, {"path": str(nc), "y": ["t2m"], "load": "lazy", "points": 10})
    memory = sampler_of(stations, {"path": str(nc), "y": ["t2m"], "load": "memory", "points": 10})
    assert lazy.grid.data.lazy and not memory.grid.data.lazy
    assert lazy.normalisation == memory.normalisation
    for step in range(2):
        a, b = batch_at(lazy, step, split="test"), batch_at(memory, step, split="test")
        torch.testing.assert_close(a.xc, b.xc, rtol=0, atol=0)
        torch.testing.assert_close(a.yc, b.yc, rtol=0, atol=0)


def drawn_as_before(grid: GridContext, batch, split: str, g: torch.Generator):
    """The grid cells' inputs ``[b, points, dim_x]`` and values ``[b, points, dim_y]`` (model
    units) as ``points: N`` drew them before the lazy read: every cell of each task's field
    read whole, then the same draw of cells gathered from it."""
    steps = grid.steps[split][batch.info["task"].numpy()]
    values = torch.from_numpy(grid.fields(steps))  # [b, n_cells, dim_y], every cell
    x = torch.from_numpy(grid.cell_x).expand(len(steps), -1, -1)
    pick = torch.rand(len(steps), N_CELLS, generator=g).argsort(1)[:, : grid.options.points]
    x = x.gather(1, pick[..., None].expand(-1, -1, x.shape[-1]))
    values = values.gather(1, pick[..., None].expand(-1, -1, grid.dim_y))
    return x.float(), ((values - torch.from_numpy(grid.loc)) / torch.from_numpy(grid.scale)).float()


@pytest.mark.parametrize("source", ["dataset", "lazy", "memory", "two files"])
def test_points_read_only_the_drawn_cells_and_draw_the_batch_as_before(
    tmp_path, grid, nc, stations, source
):
    from tnpx.data.base import task_generator
    from tnpx.data.table import TableSampler

    halves = [tmp_path / "a.nc", tmp_path / "b.nc"]  # two files joined along time
    grid.isel(time=slice(0, 17)).to_netcdf(halves[0])
    grid.isel(time=slice(17, None)).to_netcdf(halves[1])
    files = list(map(str, halves))
    path, load = {"dataset": (grid, "auto"), "lazy": (str(nc), "lazy"),
                  "memory": (str(nc), "memory"), "two files": (files, "lazy")}[source]  # fmt: skip
    sampler = sampler_of(stations, {"path": path, "y": ["t2m"], "load": load, "points": 7})
    assert sampler.grid.data.lazy == (load == "lazy")

    def no_block_read(*args):
        raise AssertionError("a batch read a whole field")

    sampler.grid.data.read = no_block_read  # a draw of cells reads those cells only
    for split in SPLIT_NAMES:
        g = task_generator(sampler.seed, split, 3, 0)
        alone = TableSampler.sample(sampler, g, None, split)  # the stations' part of the batch
        before = torch.Generator().set_state(g.get_state())
        got = sampler.grid.extend(alone, split, g)
        sampled = batch_at(sampler, 3, split=split)
        for name in ("xc", "yc", "mask_yc", "xt", "yt"):
            torch.testing.assert_close(getattr(got, name), getattr(sampled, name), rtol=0, atol=0)
        del sampler.grid.data.read  # the old path reads whole fields
        x, y = drawn_as_before(sampler.grid, alone, split, before)
        sampler.grid.data.read = no_block_read
        torch.testing.assert_close(got.xc[:, :7], x, rtol=0, atol=0)
        torch.testing.assert_close(got.yc[:, :7, 1:], y, rtol=0, atol=0)
        assert got.mask_yc[:, :7, 1].all() and not got.mask_yc[:, :7, 0].any()


@pytest.mark.slow  # 200 training steps of two models: about 10 s
def test_a_model_given_the_grid_predicts_the_stations_better():
    """With one to three context stations a day, the day's field is unknown without the grid;
    with it, a target station's value is its cell's (validation LL -0.30 against -1.41 when
    written; seeds 1 and 2 of the weights: -0.25 / 0.26 against -1.41)."""
    grid = make_grid(days=120, trend=0.0)
    frame = make_stations(grid)
    lls = {}
    for name, options in (("grid", {"grid": {"path": grid, "y": ["t2m"]}}), ("alone", {})):
        sampler = StationsSampler.from_frame(frame, 8, ctx_fraction=[0.1, 0.3], **COLUMNS,
                                             **options)  # fmt: skip
        torch.manual_seed(0)
        model = tnpx.build_model("tnp", 2, sampler.dim_y, missing_outputs=True, **SMALL)
        optimiser = torch.optim.Adam(model.parameters(), 3e-3)
        for step in range(200):
            loss = -model.log_likelihood(batch_at(sampler, step)).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        lls[name] = validation_ll(model, sampler, 4, torch.device("cpu"))
    assert lls["grid"] > lls["alone"] + 0.5, lls


# --- bad grids: one line naming the file and the variable ---------------------------------------


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


# --- end to end: train with missing_outputs, the normalisation stored, eval ---------------------

CONFIG = """
name: stations-grid
model: {{name: tnp, dim_x: 2, dim_y: 2, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1, missing_outputs: {missing}}}
data: {{name: stations, path: {path}, time: time, coords: [lat, lon], y: [temp], max_tgt: 8,
       batch_size: 4, grid: {{path: {grid}, y: [t2m], points: 24}}}}
optim: {{name: adamw, lr: 1.0e-2}}
schedule: {{name: cosine, warmup_steps: 2}}
train: {{steps: 6, log_every: 3, val_every: 6, val_batches: 1, checkpoint_every: 1000,
        progress: false, out_dir: {out}}}
eval: {{n_batches: 2, batch_size: 4}}
"""


def test_train_and_evaluate_with_a_grid_context(tmp_path, nc, stations):
    path = tmp_path / "readings.csv"
    stations.to_csv(path, index=False)
    config = tmp_path / "run.yaml"
    text = {"path": path, "grid": nc, "out": tmp_path / "run"}
    config.write_text(CONFIG.format(missing="false", **{**text, "out": tmp_path / "refused"}))
    with pytest.raises(ValueError, match="missing output values"):
        fit(load_config(config))
    config.write_text(CONFIG.format(missing="true", **text))
    cfg = load_config(config)
    fit(cfg)
    model = tmp_path / "run" / "model.pt"
    stored = tnpx.checkpoint.read_checkpoint(model)["normalisation"]
    assert stored == build_train_sampler(cfg).normalisation
    assert stored["y"]["columns"] == ["temp", "t2m"]
    out = tmp_path / "eval.json"
    assert main(["eval", str(model), "--out", str(out), "--no-baselines"]) == 0
    (ours,) = json.loads(out.read_text())["rows"]
    assert ours["n_tasks"] == 8 and np.isfinite(ours["ll"]) and np.isfinite(ours["rmse"][0])
    assert build_sampler("stations", **cfg.data_options(test=True)).dim_y == 2
