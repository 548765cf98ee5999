"""The ``grid`` source's whole-window splits (the last periods, boxed regions, another dim),
its normalisation fitted on the training windows alone (or given), static inputs from another
file, and missing values at ``min_valid: 1.0``: windows holding one are never drawn, and
counted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import WINDOW, grid, grid_file, indices, make_dataset, points, xr
from tnpx.data import batch_at
from tnpx.data.field_arrays import time_values
from tnpx.data.grid import GridSampler


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    return grid_file(tmp_path_factory)


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
    """``min_valid: 1.0``: a window with a missing cell is never drawn (masking at lower
    shares: ``test_grid_masking.py``)."""
    data = make_dataset()
    data["t2m"][3:9, 0:5, 0:6] = np.nan  # "sea" for a while
    data["t2m"][20, 7, 9] = np.nan
    data["z"][10, 12] = np.nan
    data.to_netcdf(tmp_path / "holes.nc")
    with pytest.warns(UserWarning, match=r"holes.nc: \d+ of \d+ .* never drawn") as caught:
        sampler = grid(tmp_path / "holes.nc", static=["z"], min_valid=1.0)
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
    import tnpx.data.grid.windows as grid_windows

    data = make_dataset()
    data["t2m"][10:12, 2:6, 3:9] = np.nan
    data["t2m"][30, 0, 0] = np.nan
    data.to_netcdf(tmp_path / "holes.nc")
    options = {"window": {"time": 5, "lat": 4, "lon": 5}, "val_fraction": 0.15, "min_valid": 1.0}
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
