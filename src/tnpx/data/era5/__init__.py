"""ERA5 surface air temperature (TE-4, TE paper Table 3): the task sampler.

One job: drawing TE-4 tasks (:class:`ERA5Config`, :class:`ERA5Sampler`); the regions and the
data each have a module of their own (Pieces, below), whose public names are re-exported here.

TE-4: 2 m temperature of 2019 on a 0.5° grid, hourly data sub-sampled to 6-hourly. A task is
a ``[15, 15, 5]`` (lat, lon, time) sub-grid: 15 × 15 points 0.5° apart (7.5° per axis counting
grid cells) at 5 time steps 6 hours apart (30 hours), so ``N = 1,125`` points; the inputs are
(lat, lon, time, elevation), ``dim_x = 4``; ``N_c ~ U(N/100, N/3)`` of them are context and
the rest targets. Models train on central Europe and are tested there and on western and
northern Europe (:data:`ERA5_REGIONS`). Inputs and output are standardised with the mean and
standard deviation of the *training* region (:func:`region_stats`) in every region, so the
inputs of a held-out region may lie outside the range seen in training: that is the test.

Pieces:

- :data:`ERA5_REGIONS` / :data:`STANDIN_REGIONS`, :func:`select_region`, :func:`region_stats`
  and :func:`time_values`: the regions and the standardising statistics; they live in
  :mod:`tnpx.data.era5.regions` (``time_values`` in :mod:`tnpx.data.field_arrays`).
- :class:`ERA5Config` / :class:`ERA5Sampler`: the task sampler (the ``TaskSampler`` protocol of
  :mod:`tnpx.data.base`); :meth:`ERA5Sampler.from_dataset` for a Dataset of one's own.
- :func:`load_era5` (ERA5 NetCDF from the Copernicus Climate Data Store) and
  :func:`iris_standin` (the offline stand-in, with :data:`STANDIN_REGIONS`) read the data;
  they live in :mod:`tnpx.data.era5.files`.

xarray and netCDF4 are optional (``pip install 'tnpx[xarray]'``); this module imports without
them and raises an ``ImportError`` naming that extra when a function needs them.

The windows are drawn, read and standardised by the ``grid`` source
(:class:`tnpx.data.grid.GridSampler`) set up with TE-4's layout and :attr:`ERA5Sampler.stats`:
TE-4 is one configuration of it, its batches unchanged.

Missing values (e.g. NaN over the sea in a land-only product): a window holding any missing
temperature (or elevation) is never drawn, i.e. such tasks are rejected and redrawn. The
complete windows are listed once when the sampler is built, so drawing stays uniform over them
and never loops; one warning counts the windows left out. ERA5 ``t2m`` itself has no missing
values.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from ...batch import Batch
from ...input_checks import check_option
from ..field_arrays import time_values  # re-exported: TE-4's time axis as numbers
from ..grid import GridSampler, context_range

# Re-exported (see __all__): G, RELIEF_FILES, STANDIN_FILES, iris_standin, load_era5.
from .files import (
    RELIEF_FILES,
    STANDIN_FILES,
    G,
    _find_relief,
    iris_standin,
    load_era5,
)

# Re-exported (see __all__): ERA5_REGIONS, STANDIN_REGIONS, region_stats, select_region.
from .regions import (
    ERA5_REGIONS,
    STANDIN_REGIONS,
    _named_region,
    region_stats,
    select_region,
)

if TYPE_CHECKING:  # pragma: no cover
    import xarray


# --- the task sampler -----------------------------------------------------------------------


@dataclass
class ERA5Config:
    """Data source, regions and task layout of the ERA5 sampler (TE-4 defaults).

    Regions are ``[lat_min, lat_max, lon_min, lon_max]`` (half-open, lon in [-180, 180)) or
    a name: ``train`` / ``west`` / ``north`` of :data:`ERA5_REGIONS`, or of
    :data:`STANDIN_REGIONS` when ``source="iris-standin"``. ``region`` is where tasks are
    drawn; ``stats_region`` (and ``stats_time_range``) where the standardising statistics
    come from: keep it the training region in every sampler of an experiment.
    ``time_range`` is ``[start, end]`` inclusive (date strings such as ``"2019-09-30"``;
    years for the stand-in), to split train and test periods; None takes every time step.
    ``grid`` is the task's (lat, lon, time) point counts: consecutive points of the data's
    grid, so with :func:`load_era5`'s defaults 0.5° and 6 hours apart. ``N_c`` is drawn once
    per batch, uniformly on ``{ceil(N min_ctx_frac), ..., floor(N max_ctx_frac)}``.
    """

    source: str = "file"  # file (load_era5) | iris-standin (iris_standin)
    path: str | list[str] | None = None  # ERA5 temperature file(s), source="file"
    elevation_path: str | None = None  # ERA5 invariant file with geopotential z
    temperature_var: str = "t2m"
    resolution: float | None = 0.5  # load_era5: keep this grid (degrees); None = file's grid
    scenario: str = "E1"  # iris-standin: E1 | A1B
    region: str | list[float] = "train"
    stats_region: str | list[float] = "train"
    time_range: list[str | float] | None = None
    stats_time_range: list[str | float] | None = None  # None: every loaded time step
    grid: list[int] = field(default_factory=lambda: [15, 15, 5])
    min_ctx_frac: float = 0.01
    max_ctx_frac: float = 1 / 3
    use_elevation: bool = True  # dim_x 4 (lat, lon, time, elevation), else 3


class ERA5Sampler:
    """Samples batches of TE-4 temperature tasks; see :class:`ERA5Config`.

    Inputs are ordered (lat, lon, time[, elevation]), standardised with :attr:`stats`
    (:func:`region_stats` of ``stats_region``); the output is the standardised temperature.
    :meth:`to_physical` undoes the scaling. ``Batch.info["origin"]`` ``[batch, 3]`` holds the
    (lat, lon, time) of each task's first grid point in physical units.

    Example:
        >>> from tnpx.data.base import batch_at
        >>> config = ERA5Config(source="iris-standin", use_elevation=False)
        >>> sampler = ERA5Sampler(config, batch_size=2)
        >>> batch = batch_at(sampler, step=0)
        >>> batch.xc.shape[-1], batch.xc.shape[1] + batch.xt.shape[1]
        (3, 1125)
    """

    dim_y = 1

    def __init__(
        self,
        config: ERA5Config | None = None,
        batch_size: int = 16,
        seed: int = 0,
        dataset: xarray.Dataset | None = None,
    ):
        self.config = config = config or ERA5Config()
        self.n_points, self.min_ctx, self.max_ctx = _check_config(config, dataset is not None)
        data = _checked_dataset(_load(config) if dataset is None else dataset)
        self.use_elevation = _elevation_wanted(config, data)
        self.dim_x = 4 if self.use_elevation else 3
        self.batch_size = batch_size
        self.seed = seed
        self.region = _named_region(config.region, config.source, "region")
        self.stats_region = _named_region(config.stats_region, config.source, "stats_region")
        self.stats = region_stats(data, self.stats_region, config.stats_time_range)
        self.grid = self._grid(select_region(data, self.region, config.time_range))

    @classmethod
    def from_dataset(
        cls,
        dataset: xarray.Dataset,
        config: ERA5Config | None = None,
        batch_size: int = 16,
        seed: int = 0,
    ) -> ERA5Sampler:
        """A sampler over ``dataset`` (``temperature`` ``[time, lat, lon]``, optional
        ``elevation`` ``[lat, lon]``, as :func:`load_era5` returns) instead of
        ``config.source``; region names resolve through ``config.source`` as usual."""
        return cls(config, batch_size=batch_size, seed=seed, dataset=dataset)

    def _grid(self, box: xarray.Dataset) -> GridSampler:
        """The ``grid`` source over the sampling region with TE-4's layout, no held-out split
        (TE-4 holds out regions and periods with samplers of their own) and the statistics of
        the stats region."""
        n_lat, n_lon, n_time = self.config.grid
        sizes = [box.sizes[d] for d in ("time", "lat", "lon")]
        if sizes[0] < n_time or sizes[1] < n_lat or sizes[2] < n_lon:
            raise ValueError(
                f"region {self.region} (time_range {self.config.time_range}) holds "
                f"{sizes[1]} × {sizes[2]} lat × lon points and {sizes[0]} time steps; a task "
                f"needs {n_lat} × {n_lon} and {n_time}"
            )
        static = ["elevation"] * self.use_elevation

        def maps(names: list[str]) -> dict:
            loc, scale = zip(*(self.stats[n] for n in names))
            return {"columns": names, "loc": list(loc), "scale": list(scale)}

        normalisation = {"x": maps(["lat", "lon", "time", *static]), "y": maps(["temperature"])}
        return GridSampler.from_dataset(
            box[["temperature", *static]],
            batch_size=self.batch_size,
            seed=self.seed,
            normalisation=normalisation,
            y=["temperature"],
            window={"time": n_time, "lat": n_lat, "lon": n_lon},
            x=["lat", "lon", "time"],
            static=static,
            min_ctx_frac=self.config.min_ctx_frac,
            max_ctx_frac=self.config.max_ctx_frac,
            val_fraction=0.0,
            test_fraction=0.0,
            load="memory",
            min_valid=1.0,  # TE-4: a window with a missing cell is never drawn
        )

    @property
    def _origins(self):
        """The complete windows when some hold a missing value (``len``: how many), else
        None: every window is complete."""
        windows = self.grid.windows("train")
        return None if windows.bits is None else windows

    def standardise(
        self, x: torch.Tensor | None = None, y: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Physical inputs ``[..., dim_x]`` / temperatures ``[..., 1]`` to model units."""
        return self.grid.standardise(x, y)

    def to_physical(
        self, x: torch.Tensor | None = None, y: torch.Tensor | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Undo :meth:`standardise`: degrees, time (:func:`time_values`), metres, kelvin."""
        return self.grid.to_physical(x, y)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """One batch drawn with ``generator`` only: ``xc`` ``[batch, n_ctx, dim_x]``, ``yc``
        ``[batch, n_ctx, 1]``, ``xt`` ``[batch, N - n_ctx, dim_x]``, ``yt``
        ``[batch, N - n_ctx, 1]``; each task is one window, its points shuffled, the first
        ``n_ctx`` context and the rest targets (the grid source's training windows)."""
        return self.grid.sample(generator, batch_size or self.batch_size, split="train")


def _check_config(config: ERA5Config, has_dataset: bool) -> tuple[int, int, int]:
    """Validate ``config``; returns ``(N, min_ctx, max_ctx)``."""
    check_option("source", config.source, ("file", "iris-standin"))
    if config.source == "file" and config.path is None and not has_dataset:
        raise ValueError("source='file' needs path (the ERA5 NetCDF file or files)")
    grid = config.grid
    if len(grid) != 3 or not all(isinstance(n, int) and n >= 1 for n in grid):
        raise ValueError(f"grid must be 3 positive integers [lat, lon, time], got {grid!r}")
    n_points = math.prod(grid)
    min_ctx, max_ctx = context_range(n_points, config.min_ctx_frac, config.max_ctx_frac)
    for name in ("time_range", "stats_time_range"):
        value = getattr(config, name)
        if value is not None and len(value) != 2:
            raise ValueError(f"{name} must be [start, end], got {value!r}")
    for name in ("region", "stats_region"):
        _named_region(getattr(config, name), config.source, name)
    return n_points, min_ctx, max_ctx


def _load(config: ERA5Config) -> xarray.Dataset:
    if config.source == "iris-standin":
        relief = config.use_elevation and (_find_relief() or False)  # the sampler warns
        return iris_standin(config.scenario, relief=relief)
    return load_era5(
        config.path,
        temperature_var=config.temperature_var,
        elevation=config.elevation_path,
        resolution=config.resolution,
    )


def _checked_dataset(data: xarray.Dataset) -> xarray.Dataset:
    """``data`` with ``temperature`` as (time, lat, lon) and every axis ascending."""
    if "temperature" not in data or set(data["temperature"].dims) != {"time", "lat", "lon"}:
        raise ValueError(
            "the dataset needs a variable 'temperature' with dims (time, lat, lon) (and "
            "optionally 'elevation' (lat, lon)); load_era5 returns one"
        )
    data = data.transpose("time", "lat", "lon", ...)
    if "elevation" in data and set(data["elevation"].dims) != {"lat", "lon"}:
        raise ValueError(f"elevation must have dims (lat, lon), got {data['elevation'].dims}")
    return data.sortby(["time", "lat", "lon"])


def _elevation_wanted(config: ERA5Config, data: xarray.Dataset) -> bool:
    if not config.use_elevation or "elevation" in data:
        return config.use_elevation
    if config.source == "iris-standin":
        warnings.warn("the stand-in has no elevation: using dim_x = 3", stacklevel=3)
        return False
    raise ValueError(
        "the dataset has no elevation: pass elevation_path (the ERA5 geopotential file) or "
        "set use_elevation=False"
    )


__all__ = [
    "ERA5_REGIONS",
    "G",
    "RELIEF_FILES",
    "STANDIN_FILES",
    "STANDIN_REGIONS",
    "ERA5Config",
    "ERA5Sampler",
    "iris_standin",
    "load_era5",
    "region_stats",
    "select_region",
    "time_values",
]
