"""Measured 2D fields that ship inside matplotlib (its sample data; nothing is downloaded), for
scoring 2D models zero-shot on real spatial data (``python -m experiments.zero_shot.fields``).

    >>> from experiments.zero_shot.field_data import load_field
    >>> field = load_field("topobathy")
    >>> field.x.shape, field.grid_shape, field.y_units
    ((10920, 2), (91, 120), 'm')

- ``jacksboro`` (``jacksboro_fault_dem.npz``): a digital elevation model of the Cumberland
  Mountains around the Jacksboro fault, Tennessee (36.45-36.73 °N, 84.41-84.08 °W): 344 x 403
  cells of 3 arc-seconds (``dx = dy = 1/1200`` degree: about 74 m east by 93 m north), elevation
  in metres (int16, 236 to 1,076 m). matplotlib's hillshading example converts ``dx``, ``dy``
  from decimal degrees to metres "in the same units as your z-values", so the elevation is in
  metres. Orientation: row 0 is the northern edge (the file's ``ymin``, 36.733, is the larger
  latitude: ``ymin`` and ``ymax`` name the first and last rows, as the gallery's
  ``linspace(ymin, ymax, nrows)`` reads them), column 0 the western one. ``xmax - xmin`` and
  ``ymin - ymax`` are exactly ``ncols * dx`` and ``nrows * dy``, so those are the outer edges:
  cell centres lie half a cell inside them.
- ``topobathy`` (``topobathy.npz``): topography and bathymetry of Vancouver Island, the Strait of
  Georgia and the Pacific off them: 91 x 120 cells, ``longitude`` 234.02-237.98 °E (every 2
  arc-minutes), ``latitude`` 48.02-49.98 °N (steps of 0.0214 to 0.0223 degrees, not quite even:
  the given latitudes are used as they are), elevation in metres, negative below sea level
  (-1,437 to 2,205 m; the gallery's colour bar reads "Elevation [m]"). ``topo[i, j]`` lies at
  ``latitude[i]``, ``longitude[j]`` (the gallery's ``pcolormesh(longitude, latitude, topo)``),
  so row 0 is the southern edge.

Coordinates: kilometres east and north of the field's south-west cell centre, from degrees by
an equirectangular approximation at the field's mean latitude (east = R cos(mean lat) dlon,
north = R dlat, R = 6371.0088 km, the mean Earth radius). Over the 2 degrees of latitude of
``topobathy`` the true east-west scale differs from the mean one by up to 2 % at the northern
and southern edges; over ``jacksboro``'s 0.3 degree, by 0.3 %. Points come in grid order, row
by row from the south, west to east within a row: ``x.reshape(*grid_shape, 2)`` is the grid.

Needs matplotlib (the ``plot`` extra, ``pip install 'tnpx[plot]'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnpx.extras import require

EARTH_RADIUS_KM = 6371.0088  # mean radius (IUGG)
FIELDS = ("jacksboro", "topobathy")


@dataclass(frozen=True)
class RealField:
    """One measured field on a grid, without missing values.

    ``x [n, 2]``: km east and north of the south-west cell centre (module docstring);
    ``y [n]``: the value in ``y_units``; ``grid_shape``: ``(rows, cols)``, rows south to north.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    grid_shape: tuple[int, int]
    y_units: str
    description: str
    source: str


def _sample_data(name: str):
    cbook = require("matplotlib.cbook", "plot", "experiments.zero_shot.field_data")
    return np.load(cbook.get_sample_data(name, asfileobj=False))


def _jacksboro() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longitudes ``[cols]``, latitudes ``[rows]`` (both increasing) and values ``[rows, cols]``."""
    with _sample_data("jacksboro_fault_dem.npz") as dem:
        z = dem["elevation"].astype(np.float64)[::-1]  # row 0 north in the file: flip to south
        rows, cols = z.shape
        lon = float(dem["xmin"]) + (np.arange(cols) + 0.5) * float(dem["dx"])
        north_edge = float(dem["ymin"])  # the first row's edge: see the module docstring
        lat = north_edge - (np.arange(rows)[::-1] + 0.5) * float(dem["dy"])
    return lon, lat, z


def _topobathy() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with _sample_data("topobathy.npz") as dem:
        lon = dem["longitude"].astype(np.float64)
        lat = dem["latitude"].astype(np.float64)
        z = dem["topo"].astype(np.float64)
    return lon, lat, z


_LOADERS = {
    "jacksboro": (
        _jacksboro,
        "elevation, Cumberland Mountains around the Jacksboro fault (Tennessee), 3'' DEM",
        "matplotlib sample data jacksboro_fault_dem.npz",
    ),
    "topobathy": (
        _topobathy,
        "elevation and sea depth, Vancouver Island and the Strait of Georgia, 2' grid",
        "matplotlib sample data topobathy.npz",
    ),
}


def degrees_to_km(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equirectangular kilometres east and north of ``(lon.min(), lat.min())`` at the mean
    latitude, for longitudes ``lon [cols]`` and latitudes ``lat [rows]`` in degrees."""
    per_degree = EARTH_RADIUS_KM * math.pi / 180
    east = (lon - lon.min()) * per_degree * math.cos(math.radians(lat.mean()))
    return east, (lat - lat.min()) * per_degree


def load_field(name: str) -> RealField:
    """The field ``name`` (one of :data:`FIELDS`), in km and its own units (metres).

    Raises:
        ValueError: an unknown name.
        tnpx.extras.MissingExtraError: matplotlib is not installed.
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown field {name!r}; choose from {', '.join(FIELDS)}")
    load, description, source = _LOADERS[name]
    lon, lat, z = load()
    if z.shape != (len(lat), len(lon)) or not np.isfinite(z).all():
        raise ValueError(f"{source}: expected finite values on a {len(lat)} x {len(lon)} grid")
    east, north = degrees_to_km(lon, lat)
    x = np.stack(np.meshgrid(east, north), -1).reshape(-1, 2)  # row by row from the south
    return RealField(name, x, z.ravel(), z.shape, "m", description, source)
