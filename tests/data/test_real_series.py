"""Measured series shipped inside statsmodels (tnpx.data.synthetic.real_series)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tnpx.data.synthetic.real_series import SERIES, load_series

datasets = pytest.importorskip("statsmodels.datasets", reason="needs the real-data extra")

SIZES = {"sunspots": 309, "nile": 100, "elnino": 61 * 12}


@pytest.mark.parametrize("name", SERIES)
def test_every_series_loads_sorted_and_finite(name):
    s = load_series(name)
    assert s.name == name and s.x.shape == s.y.shape and s.x.ndim == 1
    assert np.isfinite(s.x).all() and np.isfinite(s.y).all()
    assert (np.diff(s.x) > 0).all()
    assert s.x_units == "years" and s.y_units and s.description and "statsmodels" in s.source
    if name in SIZES:
        assert len(s.x) == SIZES[name]


def test_values_match_the_statsmodels_tables():
    sun = load_series("sunspots")
    assert (sun.x[0], sun.y[0], sun.x[-1]) == (1700.0, 5.0, 2008.0)
    nile = load_series("nile")
    assert (nile.x[0], nile.y[0], nile.x[-1]) == (1871.0, 1120.0, 1970.0)
    table = datasets.elnino.load_pandas().data
    nino = load_series("elnino")
    # Row-major: year by year, January first, each month at its middle.
    np.testing.assert_allclose(nino.y[:12], table.iloc[0, 1:].to_numpy(float))
    np.testing.assert_allclose(nino.x[13], 1951 + 1.5 / 12)
    assert nino.y[-1] == table.iloc[-1, -1]


def test_co2_is_the_monthly_mean_of_the_weekly_record():
    weekly = datasets.co2.load_pandas().data["co2"]
    monthly = weekly.resample("MS").mean().dropna()  # months with no sample are left out
    co2 = load_series("co2")
    np.testing.assert_allclose(co2.y, monthly.to_numpy())
    np.testing.assert_allclose(co2.x, monthly.index.year + (monthly.index.month - 0.5) / 12)


def test_unknown_name_lists_the_series():
    with pytest.raises(ValueError, match="sunspots, nile, elnino, co2"):
        load_series("mauna-kea")


def test_missing_statsmodels_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "statsmodels", None)  # import statsmodels now fails
    with pytest.raises(ImportError, match=r"tnpx\[real-data\]"):
        load_series("nile")
