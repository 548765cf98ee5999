"""A gridded field as extra context of the ``stations`` source (tnpx.data.stations.grid), its
batches: one context set of grid cells and stations with per-output masks, each cell's inputs
and value re-derived in float64 from the grid, the grid time step each task reads, the grid
normalised on the training tasks' steps only, missing grid values masked, lazy and in-memory
reads alike, and a draw of cells reading those cells only. Bad grids are in
test_stations_grid_errors.py, training in test_stations_grid_training.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.stations_grid_data import (
    COLUMNS,
    LAT,
    LON,
    N_CELLS,
    SPLIT_NAMES,
    make_stations,
    sampler_of,
    xr,
)
from tnpx.data import batch_at
from tnpx.data.field_arrays import time_values
from tnpx.data.stations import StationsSampler
from tnpx.data.stations.grid import GridContext

# The shared fixtures (grid, nc, stations), imported apart so the noqa covers them only.
# isort: split
from tests.helpers.stations_grid_data import grid_fixture, nc_fixture, stations_fixture  # noqa: F401 (fixtures)


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
