"""Worked example 6 (examples/seattle_rain.py): daily rain with a ``bernoulli-gamma`` head beside
a Gaussian-head control trained on the same data, both scored on the same held-out months (issue
52, item 4): the table keeps every day, the months split by time, the control sees the same
tasks and contexts, and the README compares by CRPS where the LLs do not compare."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from examples.runner import _check_same_contexts, main
from examples.seattle_rain import EXAMPLE, monthly_rain
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation.protocol import build_test_sampler

pytest.importorskip("vega_datasets")  # the real-data extra
pytest.importorskip("matplotlib").use("Agg")


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rain") / "table.csv"
    EXAMPLE.write_table(path)
    return path


def _sampler(table: Path, *overrides: str):
    return build_test_sampler(load_config(EXAMPLE.config, [f"data.path={table}", *overrides]))


def test_every_day_is_a_row_and_every_month_a_task(table):
    from vega_datasets import data

    days = data.seattle_weather()
    frame = monthly_rain(days)
    assert len(frame) == len(days) == 1461 and frame["month"].nunique() == 48
    assert (frame["rain"].to_numpy() == days["precipitation"].to_numpy()).all()  # unchanged
    sampler = _sampler(table)
    counts = {s: len(sampler.task_keys(s)) for s in ("train", "val", "test")}
    assert counts == {"train": 30, "val": 6, "test": 12}
    assert [str(k) for k in sampler.task_keys("test")] == [f"2015-{m:02d}" for m in range(1, 13)]
    # rain is scaled, not centred: a dry day stays exactly 0 in the model's units
    assert sampler.normalisation["y"]["loc"] == [0.0]
    batch = batch_at(sampler, 0, split="test")
    assert batch.batch_size == 12 and bool((batch.yt >= 0).all())


def test_the_gaussian_control_draws_the_same_tasks_and_contexts(table):
    ours = _sampler(table)
    theirs = _sampler(table, *EXAMPLE.control.overrides)
    assert theirs.normalisation["y"]["loc"] != [0.0]  # standardised: other units
    _check_same_contexts(ours, theirs, 1)
    shifted = _sampler(table, *EXAMPLE.control.overrides, "eval.seed=1")  # other contexts
    with pytest.raises(AssertionError, match="not the model's tasks"):
        _check_same_contexts(ours, shifted, 1)


@pytest.mark.slow  # trains two models for 10 steps, fits a GP per task: ~10 s
def test_quick_run_compares_the_rain_head_with_its_control_by_crps(tmp_path: Path):
    results = main(EXAMPLE, ["--quick", "--out", str(tmp_path), "eval.n_batches=1"])
    record = json.loads((results / "metrics.json").read_text())
    rows = [r["model"] for r in record["headline"]]
    assert rows == ["tnp", "gp", "context-moments", "gaussian head"]
    ours = record["headline"][0]
    assert not ours["ll_is_density"] and ours["vs"] == {}  # a dry day's LL is a probability
    assert set(ours["crps_vs"]) == {"gp", "context-moments", "gaussian head"}
    assert all(math.isfinite(v) for pair in ours["crps_vs"].values() for v in pair[0])
    assert record["control"]["overrides"] == ["model.likelihood=heteroscedastic"]
    assert (tmp_path / "runs/examples/seattle-rain/control/model.pt").is_file()
    readme = (results / "README.md").read_text()
    for needed in ["**Control** (`gaussian head`)", "CRPS less tnp's, paired over tasks",
                   "| gaussian head | 4 |", "gaussian head − model"]:  # fmt: skip
        assert needed in readme, needed
    figure = (results / "tasks.png").read_bytes()
    assert figure.startswith(b"\x89PNG") and len(figure) > 10_000
