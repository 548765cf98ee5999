"""The table, grid and stations sources scale a non-Gaussian model's outputs by its family's
rule (counts, 0/1 and fractions as they are, amounts scaled but not centred) and refuse data
outside the family's support in one line naming the row (or cell) and column; a Gaussian
model's normalisation is exactly what it always was. ``model.likelihood`` reaches the source
through ``ExperimentConfig.data_options``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tnpx import DataError
from tnpx.config import ExperimentConfig
from tnpx.data import GridSampler, StationsSampler, TableSampler, build_sampler
from tnpx.likelihoods import output_scaling, scaling_rule


def amounts_table(n_tasks: int = 30, seed: int = 0) -> pd.DataFrame:
    """Rain-like amounts (about half exact zeros) and counts on ``t``, per task ``site``."""
    rng = np.random.default_rng(seed)
    n = 12
    t = np.tile(np.arange(n, dtype=float), n_tasks)
    wet = rng.random(n * n_tasks) < 0.5
    return pd.DataFrame(
        {
            "site": np.repeat(np.arange(n_tasks), n),
            "t": t,
            "rain": np.where(wet, rng.gamma(2.0, 3.0, n * n_tasks), 0.0),
            "cases": rng.poisson(4.0, n * n_tasks).astype(float),
            "yes": (rng.random(n * n_tasks) < 0.3).astype(float),
        }
    )


def sampler(frame: pd.DataFrame, y: str, likelihood=None) -> TableSampler:
    return TableSampler.from_frame(frame, task="site", x=["t"], y=[y], likelihood=likelihood)


def train_values(s: TableSampler, frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame.loc[frame.site.isin(s.task_keys("train")), column].to_numpy(np.float64)


def test_the_rule_of_each_family():
    assert scaling_rule("heteroscedastic") == scaling_rule({"name": "mixture"}) == "standardise"
    assert scaling_rule("bernoulli-gamma") == "scale"
    for family in ("poisson", "negative-binomial", "bernoulli", {"name": "beta", "spikes": True}):
        assert scaling_rule(family) == "none"
    loc, scale = output_scaling("bernoulli-gamma", np.array([3.0, 0.0]), np.array([4.0, 0.0]))
    assert loc.tolist() == [0.0, 0.0] and scale.tolist() == [5.0, 1.0]  # sqrt(4² + 3²); 0 -> 1


@pytest.mark.parametrize("family", ["poisson", "negative-binomial"])
def test_counts_are_left_alone_and_inputs_normalised_as_ever(family):
    frame = amounts_table()
    plain, counts = sampler(frame, "cases"), sampler(frame, "cases", family)
    assert counts.normalisation["y"]["loc"] == [0.0] and counts.normalisation["y"]["scale"] == [1.0]
    assert counts.normalisation["x"] == plain.normalisation["x"]
    y = counts._splits["train"].y
    assert np.array_equal(y.numpy(), y.numpy().round()) and (y >= 0).all()  # whole counts


def test_rain_is_scaled_by_its_root_mean_square_and_zero_stays_zero():
    frame = amounts_table()
    rain = sampler(frame, "rain", "bernoulli-gamma")
    expected = np.sqrt(np.mean(train_values(rain, frame, "rain") ** 2))  # float64, directly
    assert rain.normalisation["y"]["loc"] == [0.0]
    np.testing.assert_allclose(rain.normalisation["y"]["scale"], [expected], rtol=1e-12)
    part = rain._splits["train"]
    raw = train_values(rain, frame, "rain")
    assert int((part.y == 0).sum()) == int((raw == 0).sum()) and (part.y >= 0).all()


def test_a_gaussian_models_normalisation_is_unchanged_bit_for_bit():
    frame = amounts_table()
    plain = sampler(frame, "rain").normalisation
    for option in ("heteroscedastic", {"name": "gaussian", "noise": "homoscedastic"}):
        assert sampler(frame, "rain", option).normalisation == plain
    cfg = ExperimentConfig(data={"name": "table", "path": "x.csv"}, model={"name": "tnp"})
    assert cfg.data_options() == {"path": "x.csv"}  # nothing added for a gaussian model
    cfg.model["likelihood"] = "homoscedastic"
    assert cfg.data_options() == {"path": "x.csv"}


def test_the_model_likelihood_reaches_the_sources_that_take_it():
    cfg = ExperimentConfig(
        data={"name": "table", "path": "x.csv"}, model={"name": "tnp", "likelihood": "poisson"}
    )
    assert cfg.data_options() == {"path": "x.csv", "likelihood": "poisson"}
    assert cfg.data_options(test=True)["likelihood"] == "poisson"
    for name in ("grid", "stations"):
        cfg.data["name"] = name
        assert cfg.data_options()["likelihood"] == "poisson"
    cfg.data = {"name": "gp"}  # a prior's sampler takes no likelihood
    assert "likelihood" not in cfg.data_options()
    cfg.data = {"name": "table", "likelihood": "bernoulli"}
    with pytest.raises(ValueError, match="data.likelihood = 'bernoulli' but model.likelihood"):
        cfg.data_options()


@pytest.mark.parametrize(
    "column, family, bad, message",
    [
        ("cases", "poisson", -1.0, "column cases = -1 is not a count"),
        ("cases", "negative-binomial", 2.5, "column cases = 2.5 is not a count"),
        ("yes", "bernoulli", 2.0, "column yes = 2 is not 0 or 1"),
        ("rain", "bernoulli-gamma", -0.2, "column rain = -0.2 is not >= 0"),
    ],
)
def test_bad_data_is_refused_in_one_line_naming_row_and_column(
    tmp_path, column, family, bad, message
):
    frame = amounts_table()
    frame.loc[17, column] = bad
    with pytest.raises(DataError, match=f"row 17, {message}") as err:
        sampler(frame, column, family)
    assert "\n" not in str(err.value)
    sampler(frame, column)  # without a family the same values are accepted
    frame.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(DataError, match=f"d.csv: data row 18, {message}"):  # the file's row
        build_sampler("table", path=str(tmp_path / "d.csv"), task="site", x=["t"], y=[column],
                      likelihood=family)  # fmt: skip


def test_a_missing_output_is_not_checked():
    frame = amounts_table()
    frame.loc[5, "cases"] = np.nan
    s = TableSampler.from_frame(frame, task="site", x=["t"], y=["cases", "yes"],
                                likelihood="poisson")  # fmt: skip
    assert s.missing_outputs and s.normalisation["y"]["loc"] == [0.0, 0.0]


def test_stations_take_the_family_too():
    frame = amounts_table()
    frame["lat"] = frame.site * 0.1
    stations = StationsSampler.from_frame(
        frame, time="t", coords=["lat"], y=["yes"], likelihood="bernoulli"
    )
    assert stations.normalisation["y"]["loc"] == [0.0]
    assert stations.normalisation["y"]["scale"] == [1.0]
    frame.loc[3, "yes"] = 0.5
    with pytest.raises(DataError, match="row 3, column yes = 0.5 is not 0 or 1"):
        StationsSampler.from_frame(frame, time="t", coords=["lat"], y=["yes"],
                                   likelihood="bernoulli")  # fmt: skip


def rain_grid(bad: float | None = None):
    import xarray as xr

    rng = np.random.default_rng(1)
    rain = np.where(rng.random((40, 6)) < 0.5, rng.gamma(2.0, 2.0, (40, 6)), 0.0)
    if bad is not None:
        rain[21, 4] = bad
    coords = {"time": np.arange(40.0), "x": np.arange(6.0) * 0.5}
    return xr.Dataset({"rain": (("time", "x"), rain)}, coords=coords), rain


@pytest.mark.filterwarnings("ignore:.*extrapolate in time")
def test_grid_rain_is_scaled_not_centred_and_a_gaussian_grid_unchanged():
    data, rain = rain_grid()
    options = {"y": ["rain"], "window": {"time": 4, "x": 3}}
    plain = GridSampler.from_dataset(data, **options)
    scaled = GridSampler.from_dataset(data, likelihood="bernoulli-gamma", **options)
    assert scaled.normalisation["x"] == plain.normalisation["x"]
    (m,), (s,) = plain.normalisation["y"]["loc"], plain.normalisation["y"]["scale"]
    assert scaled.normalisation["y"]["loc"] == [0.0]
    np.testing.assert_allclose(scaled.normalisation["y"]["scale"], [np.hypot(m, s)], rtol=1e-12)
    counts = GridSampler.from_dataset(data.round(), likelihood="poisson", **options)
    assert counts.normalisation["y"]["scale"] == [1.0]


@pytest.mark.filterwarnings("ignore:.*extrapolate in time")
def test_grid_bad_cell_is_named_by_its_coordinates():
    data, _ = rain_grid(bad=-1.5)
    with pytest.raises(DataError, match="cell time=21, x=2, column rain = -1.5 is not >= 0"):
        GridSampler.from_dataset(
            data, y=["rain"], window={"time": 4, "x": 3}, likelihood="bernoulli-gamma"
        )
