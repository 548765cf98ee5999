"""Worked example 5 (examples/iris_maps.py): the grid source at its documented defaults, a task
per year's map. Time is not an input by default for a one-step window, so the held-out period
lies inside every input's training range."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from examples.iris_air_temperature import window_year
from examples.iris_maps import EXAMPLE
from examples.runner import main
from tnpx.checkpoint import read_checkpoint
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation.protocol import build_test_sampler

pytest.importorskip("iris_sample_data")
pytest.importorskip("cftime")  # the file's 360-day calendar
pytest.importorskip("gpytorch")  # the gp baseline
pytest.importorskip("matplotlib").use("Agg")


def _test_sampler():
    cfg = load_config(EXAMPLE.config, [f"data.path={EXAMPLE.data_file()}"])
    return build_test_sampler(cfg)


def test_a_task_is_one_years_map_and_time_is_not_an_input():
    sampler = _test_sampler()
    assert sampler.x == ["latitude", "longitude"] and sampler.dim_x == 2
    assert sampler.n_points == 64
    batch = batch_at(sampler, 0, split="test")
    years = {window_year(sampler, batch, i) for i in range(batch.batch_size)}
    assert all(2070 <= year <= 2099 for year in years)  # the held-out period


@pytest.mark.slow  # about 30-60 s: two files, a GP per task
def test_quick_run_scores_both_scenarios_inside_the_training_range(tmp_path: Path):
    results = main(EXAMPLE, ["--quick", "--out", str(tmp_path)])
    record = json.loads((results / "metrics.json").read_text())
    for scores in (record, record["other_data"]):
        for row in scores["headline"]:
            assert math.isfinite(row["ll"]) and 0 <= row["coverage95"] <= 1
    model = next((tmp_path / "runs").rglob("model.pt"))
    stored = read_checkpoint(model)["normalisation"]["x"]
    assert stored["columns"] == ["latitude", "longitude"]
    assert stored["range"] == [[15.0, 60.0], [225.0, 315.0]]  # the whole map: no test map outside
    assert (results / "tasks.png").is_file()
