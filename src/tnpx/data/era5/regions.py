"""ERA5 regions and statistics (TE-4): where tasks are drawn and how they are standardised.

One job: the geographic side of TE-4. :data:`ERA5_REGIONS` (central Europe for training,
western and northern Europe held out) and :data:`STANDIN_REGIONS` (their mirror on the
stand-in's North America grid) name boxes ``[lat_min, lat_max, lon_min, lon_max]``;
:func:`select_region` cuts a box (and a time range) out of a Dataset and :func:`region_stats`
gives the mean and standard deviation every sampler of an experiment standardises with (times
as numbers by :func:`tnpx.data.field_arrays.time_values`). The task sampler is in
:mod:`tnpx.data.era5`, which re-exports these names.

This module imports without xarray: it only calls methods of the Dataset it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..field_arrays import mean_std, time_values
from .files import _EPS

if TYPE_CHECKING:  # pragma: no cover
    import xarray

#: TE-4 regions ``[lat_min, lat_max, lon_min, lon_max]`` (degrees): central Europe (train),
#: western and northern Europe (held out). Boxes are half-open, ``min <= value < max``, so
#: neighbouring boxes share no grid point.
ERA5_REGIONS: dict[str, list[float]] = {
    "train": [42.0, 53.0, 8.0, 28.0],
    "west": [42.0, 53.0, -4.0, 8.0],
    "north": [53.0, 62.0, 8.0, 28.0],
}

#: Stand-in regions on the ``iris-sample-data`` North America grid (1.25° lat × 1.875° lon,
#: lat 15…60, lon -135…-45), mirroring the C. / W. / N. Europe split: a central training box,
#: one west of it (same latitudes) and one north of it (same longitudes). Each holds at least
#: one 15 × 15 window: train 22 × 21 grid points, west 22 × 16, north 15 × 21.
STANDIN_REGIONS: dict[str, list[float]] = {
    "train": [15.0, 41.5, -105.5, -67.0],
    "west": [15.0, 41.5, -135.5, -106.0],
    "north": [42.0, 60.5, -105.5, -67.0],
}


# --- regions and statistics -----------------------------------------------------------------


def _check_box(region, what: str = "region") -> list[float]:
    if len(region) != 4 or not all(isinstance(v, (int, float)) for v in region):
        raise ValueError(f"{what} must be [lat_min, lat_max, lon_min, lon_max], got {region!r}")
    lat_min, lat_max, lon_min, lon_max = map(float, region)
    if not (lat_min < lat_max and lon_min < lon_max):
        raise ValueError(f"{what} {list(region)} needs lat_min < lat_max and lon_min < lon_max")
    return [lat_min, lat_max, lon_min, lon_max]


def select_region(
    data: xarray.Dataset, region: list[float], time_range: list | None = None
) -> xarray.Dataset:
    """The part of ``data`` with ``lat_min <= lat < lat_max`` and ``lon_min <= lon < lon_max``
    (``region``), and ``time_range[0] <= time <= time_range[1]`` when given (date strings
    such as ``"2019-10"`` for datetime axes, numbers for numeric ones)."""
    lat_min, lat_max, lon_min, lon_max = _check_box(region)
    lat, lon = data["lat"].values, data["lon"].values
    box = data.isel(
        lat=np.flatnonzero((lat >= lat_min - _EPS) & (lat < lat_max - _EPS)),
        lon=np.flatnonzero((lon >= lon_min - _EPS) & (lon < lon_max - _EPS)),
    )
    if time_range is not None:
        if len(time_range) != 2:
            raise ValueError(f"time_range must be [start, end], got {time_range!r}")
        box = box.sel(time=slice(*time_range))
    if not all(box.sizes[d] for d in ("time", "lat", "lon")):
        raise ValueError(
            f"region {region} (time_range {time_range}) holds no data: the data cover lat "
            f"{lat.min()}…{lat.max()}, lon {lon.min()}…{lon.max()}"
        )
    return box


def region_stats(
    data: xarray.Dataset, region: list[float], time_range: list | None = None
) -> dict[str, tuple[float, float]]:
    """Mean and standard deviation of each input and of the output over ``region``.

    Computed over the points of :func:`select_region` whose temperature is present: keys
    ``lat``, ``lon``, ``time`` (in the units :func:`time_values` gives), ``elevation`` (when
    ``data`` has it) and ``temperature``, each ``(mean, std)`` (population std; a quantity
    that does not vary gets std 1). Every sampler of an experiment standardises with the
    statistics of the training region, so held-out regions are scaled as in training.
    """
    box = select_region(data, region, time_range)
    temperature = box["temperature"].transpose("time", "lat", "lon").values.astype(np.float64)
    present = np.isfinite(temperature)
    if not present.any():
        raise ValueError(f"region {region} has no temperature values (all missing)")
    coords = {
        "lat": (box["lat"].values, present.sum((0, 2))),
        "lon": (box["lon"].values, present.sum((0, 1))),
        "time": (time_values(box["time"].values), present.sum((1, 2))),
    }
    if "elevation" in box:
        heights = box["elevation"].transpose("lat", "lon").values
        coords["elevation"] = (heights, present.sum(0))
    stats = {name: mean_std(v, w) for name, (v, w) in coords.items()}
    stats["temperature"] = mean_std(temperature[present], np.ones(int(present.sum())))
    return stats


def _named_region(region: str | list[float], source: str, what: str) -> list[float]:
    """The box of ``region``: a name among ``source``'s regions, or a box checked as is."""
    if isinstance(region, str):
        names = STANDIN_REGIONS if source == "iris-standin" else ERA5_REGIONS
        if region not in names:
            raise ValueError(f"unknown {what} {region!r}; choose from {', '.join(names)}")
        return list(names[region])
    return _check_box(region, what)


__all__ = ["ERA5_REGIONS", "STANDIN_REGIONS", "region_stats", "select_region"]
