"""The ``grid`` source's small NetCDF data for its tests: a 6-hourly Dataset on a descending
latitude grid, the sampler over it, the points of a batch in the data's units and their grid
indices, a tiny config that trains on it, and a grid of counts with an exposure variable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tnpx.data import build_sampler
from tnpx.data.field_arrays import time_values
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


def grid_file(tmp_path_factory) -> Path:
    """:func:`make_dataset` written to a NetCDF file of its own (a test module's ``nc``)."""
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


def counts_grid(on_time: bool = False, sea: bool = False, seed: int = 0) -> xr.Dataset:
    """Daily ``cases (time, lat, lon)``: Poisson counts of a smooth rate per person times
    ``pop`` (people per cell, on ``(lat, lon)`` or, ``on_time``, ``(time, lat, lon)``); with
    ``sea``, a corner of cells with no cases and no population (NaN)."""
    rng = np.random.default_rng(seed)
    time = np.arange(30) * np.timedelta64(1, "D") + np.datetime64("2021-01-01", "ns")
    lat, lon = np.arange(50.0, 56.0, 0.5), np.arange(0.0, 7.0, 0.5)
    shape = (len(time), len(lat), len(lon))
    pop = rng.uniform(0.5, 20.0, shape if on_time else shape[1:])
    rate = np.exp(np.sin(lat[None, :, None] / 2 + np.arange(30)[:, None, None] / 7) - 1)
    cases = rng.poisson(rate * pop * np.ones(shape)).astype(float)
    if sea:
        cases[:, :3, :3] = np.nan
        (pop[:, :3, :3] if on_time else pop[:3, :3])[...] = np.nan
    dims = ("time", "lat", "lon")
    return xr.Dataset(
        {"cases": (dims, cases), "pop": (dims if on_time else dims[1:], pop)},
        coords={"time": time, "lat": lat, "lon": lon},
    )
