"""The gridded worked example (examples/iris_air_temperature.py): its ``--quick`` path end to
end in a tmp folder, NetCDF file -> training -> scores on E1 and A1B beside the per-task
baselines -> results folder; the fixed context sizes it asks the grid source for; and its
figure's maps, checked against the file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from examples.iris_air_temperature import EXAMPLE, _window_maps, iris_file, window_context
from examples.runner import Example, main
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.data.grid import context_range
from tnpx.evaluation.protocol import build_test_sampler
from tnpx.models import build_model

pytest.importorskip("iris_sample_data")
pytest.importorskip("cftime")  # the file's 360-day calendar
pytest.importorskip("gpytorch")  # the gp baseline
pytest.importorskip("matplotlib").use("Agg")

ROWS = ["tnp", "gp", "context-moments"]
HOURS_PER_YEAR = 360 * 24


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("iris")
    return main(EXAMPLE, ["--quick", "--out", str(out)])


def _finite(row: dict) -> bool:
    numbers = [row["ll"], row["ll_se"], *row["rmse"], row["coverage95"]]
    numbers += [v for pair in row["vs"].values() for v in pair]
    return all(math.isfinite(v) for v in numbers)


def _windows(n_years: int) -> int:
    """Windows of 8 x 8 points x 5 years on the file's 37 x 49 grid over ``n_years``."""
    return (37 - 8 + 1) * (49 - 8 + 1) * (n_years - 5 + 1)


@pytest.mark.slow  # about 20-45 s: two files, a GP per task
def test_quick_run_writes_scores_on_both_scenarios_and_the_figure(quick):
    record = json.loads((quick / "metrics.json").read_text())
    # 240 years: 180 to train (1860-2039), 30 to validate, 30 to test
    assert record["tasks"] == {"train": _windows(180), "val": _windows(30), "test": _windows(30)}
    assert not record["task_list"] and len(record["test_tasks"]) == 8  # 2 batches of 4
    for origin in record["test_tasks"]:  # each window lies in 2070-2099 (its first year <= 2095)
        lat, lon, hours = (float(v) for v in origin.split(","))
        assert 15 <= lat <= 60 - 7 * 1.25 and 225 <= lon <= 315 - 7 * 1.875  # a whole window
        assert 2070 <= 1970 + hours / HOURS_PER_YEAR < 2096
    for scores in (record, record["other_data"]):
        for rows in [scores["headline"], *scores["by_context_size"].values()]:
            assert [r["model"] for r in rows] == ROWS
            assert all(r["n_tasks"] == 8 and _finite(r) for r in rows)
            assert set(rows[0]["vs"]) == {"gp", "context-moments"}
    assert record["other_data"]["name"] == "A1B"
    assert record["other_data"]["headline"][0]["ll"] != record["headline"][0]["ll"]
    readme = (quick / "README.md").read_text()
    for needed in [
        "**Command**",
        "**Hardware and time**",
        "## Reading",
        "## The same model on A1B",
    ]:
        assert needed in readme, needed
    assert "--quick smoke run" in readme and "| gp | 8 |" in readme
    assert "`python examples/iris_air_temperature.py --quick --out " in readme
    figure = (quick / "tasks.png").read_bytes()
    assert figure.startswith(b"\x89PNG") and len(figure) > 10_000


@pytest.mark.parametrize("k", [1, 4, 16, 64, 106, 200, 319])
def test_a_fixed_context_size_gives_exactly_that_many_points(k):
    cfg = load_config(EXAMPLE.config, [f"data.path={iris_file('E1_north_america.nc')}"])
    fractions = window_context(cfg, k)
    assert context_range(320, fractions["min_ctx_frac"], fractions["max_ctx_frac"]) == (k, k)


def test_the_full_config_scores_at_least_256_test_windows():
    cfg = load_config(EXAMPLE.config, [f"data.path={iris_file('E1_north_america.nc')}"])
    assert cfg.eval.n_batches * cfg.eval.batch_size >= 256


def test_the_figure_maps_are_the_files_values_where_they_are_drawn():
    xr = pytest.importorskip("xarray")
    path = iris_file("E1_north_america.nc")
    sampler = build_test_sampler(load_config(EXAMPLE.config, [f"data.path={path}"]))
    batch = batch_at(sampler, 0, split="test", batch_size=2)
    model = build_model("context-moments", 3, 1)
    # the file read again, float64, times as stored (hours since 1970, 360-day calendar)
    data = xr.open_dataset(path, decode_times=False)["air_temperature"].astype(np.float64)
    lats, lons, hours = (data[d].values for d in ("latitude", "longitude", "time"))
    for i in range(2):
        maps, context, (west, east, south, north), year = _window_maps(
            {"m": model}, sampler, batch, i
        )
        assert maps["truth"].shape == (8, 8) and len(context) == batch.xc.shape[1]
        rows = (lats > south) & (lats < north)  # the cells inside the drawn extent
        cols = (lons > west) & (lons < east)
        assert rows.sum() == cols.sum() == 8
        first_year = batch.info["origin"][i, 2].item()
        middle = np.flatnonzero(np.isclose(hours, first_year + 2 * HOURS_PER_YEAR))
        assert len(middle) == 1  # the window's middle year of five
        assert year == math.floor(1970 + hours[middle[0]] / HOURS_PER_YEAR)
        expected = data.values[middle[0]][np.ix_(rows, cols)]
        assert np.allclose(maps["truth"], expected, atol=1e-3)
        # context-moments: the same mean and std at every cell
        assert np.allclose(maps["m std"], maps["m std"][0, 0])
        assert np.allclose(maps["m mean"], maps["m mean"][0, 0])


def test_an_example_needs_exactly_one_data_source():
    with pytest.raises(ValueError, match="give write_table or data_file"):
        Example(name="x", title="x", source="x", task="x", unit="K", context_sizes=(1,))
