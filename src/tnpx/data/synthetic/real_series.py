"""Measured 1D time series that ship inside statsmodels (nothing is downloaded): for zero-shot
evaluation of the pretrained models on real data (``python -m experiments.zero_shot.series``).

    >>> from tnpx.data.synthetic.real_series import load_series
    >>> s = load_series("nile")
    >>> s.x.shape, s.y_units
    ((100,), '10^8 m^3 per year')

Needs the optional extra ``real-data`` (``pip install 'tnpx[real-data]'``, i.e. statsmodels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...extras import require

SERIES = ("sunspots", "nile", "elnino", "co2")


@dataclass(frozen=True)
class RealSeries:
    """One measured series, sorted by ``x``, without missing values.

    ``x [n]``: time in decimal years (a monthly value sits at the middle of its month);
    ``y [n]``: the measurement in ``y_units``.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    x_units: str
    y_units: str
    description: str
    source: str


def _statsmodels_datasets():
    return require("statsmodels.datasets", "real-data", "tnpx.data.synthetic.real_series")


def _monthly(years: np.ndarray, months: np.ndarray) -> np.ndarray:
    """Decimal years at the middle of each month (``months`` 1..12)."""
    return years + (months - 0.5) / 12.0


def _sunspots(ds) -> tuple[np.ndarray, np.ndarray]:
    data = ds.sunspots.load_pandas().data
    return data["YEAR"].to_numpy(float), data["SUNACTIVITY"].to_numpy(float)


def _nile(ds) -> tuple[np.ndarray, np.ndarray]:
    data = ds.nile.load_pandas().data
    return data["year"].to_numpy(float), data["volume"].to_numpy(float)


def _elnino(ds) -> tuple[np.ndarray, np.ndarray]:
    data = ds.elnino.load_pandas().data  # one row per year, one column per month
    months = data.columns[1:]
    values = data[months].to_numpy(float)  # [years, 12]
    years = data["YEAR"].to_numpy(float)[:, None].repeat(12, 1)
    x = _monthly(years, np.arange(1, 13, dtype=float)[None, :].repeat(len(data), 0))
    return x.ravel(), values.ravel()


def _co2(ds) -> tuple[np.ndarray, np.ndarray]:
    # Weekly flask samples with gaps: monthly means of the weeks that have a value, so that
    # a 100-point window spans years and the annual cycle is visible in it.
    weekly = ds.co2.load_pandas().data["co2"].dropna()
    monthly = weekly.groupby([weekly.index.year, weekly.index.month]).mean()
    years = np.array([k[0] for k in monthly.index], dtype=float)
    months = np.array([k[1] for k in monthly.index], dtype=float)
    return _monthly(years, months), monthly.to_numpy(float)


_LOADERS = {
    "sunspots": (
        _sunspots,
        "years",
        "sunspot number (yearly mean)",
        "Yearly mean sunspot number, 1700-2008 (309 values)",
        "NOAA National Geophysical Data Center",
    ),
    "nile": (
        _nile,
        "years",
        "10^8 m^3 per year",
        "Annual flow of the Nile at Aswan, 1871-1970 (100 values)",
        "Cobb (1978), Biometrika 65(2), 243-251",
    ),
    "elnino": (
        _elnino,
        "years",
        "degrees Celsius",
        "Monthly mean sea-surface temperature, Nino 1+2 region (0-10S, 90-80W), 1950-2010",
        "NOAA Climate Prediction Center, ERSST.V3B",
    ),
    "co2": (
        _co2,
        "years",
        "ppmv",
        "Atmospheric CO2 at Mauna Loa, monthly means of weekly samples, 1958-2001",
        "Keeling and Whorf (2004), Scripps Institution of Oceanography, via CDIAC",
    ),
}


def load_series(name: str) -> RealSeries:
    """The measured series ``name`` (one of :data:`SERIES`).

    Raises:
        ValueError: an unknown name (the message lists the valid ones).
        ImportError: statsmodels is missing (the message names the ``real-data`` extra).
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown series {name!r}; choose from {', '.join(SERIES)}")
    datasets = _statsmodels_datasets()
    load, x_units, y_units, description, origin = _LOADERS[name]
    x, y = load(datasets)
    order = np.argsort(x, kind="stable")
    source = f"{origin}; shipped as statsmodels.datasets.{name}"
    return RealSeries(name, x[order], y[order], x_units, y_units, description, source)
