"""The worked examples (examples/): each one's ``--quick`` path end to end in a tmp folder,
table -> training -> scores beside the per-task baselines -> results folder, so an example that
stops running, or stops writing its table, figure or numbers, fails here; and plot_1d_tasks on
a table's padded tasks (real points only, the data's units)."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest

import tnpx
from examples import EXAMPLES
from examples.runner import _covered_tasks, main
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.data.table import TableSampler
from tnpx.evaluation.protocol import build_test_sampler

pytest.importorskip("vega_datasets")  # the real-data extra
pytest.importorskip("gpytorch")  # the gp baseline
pytest.importorskip("matplotlib").use("Agg")

ROWS = ["tnp", "gp", "context-moments"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """Every example's --quick run into one tmp folder, in order (sf_temps scores the model
    seattle_temps trains): name -> (its Example, its results folder)."""
    out = tmp_path_factory.mktemp("examples")
    runs = {}
    for name in EXAMPLES:
        example = importlib.import_module(f"examples.{name}").EXAMPLE
        runs[name] = example, main(example, ["--quick", "--out", str(out)])
    return runs


def _finite(row: dict) -> bool:
    numbers = [row["ll"], row["ll_se"], *row["rmse"], row["coverage95"]]
    numbers += [v for pair in row["vs"].values() for v in pair]
    return all(math.isfinite(v) for v in numbers)


@pytest.mark.slow  # the module's quick runs train two examples (~50 s)
@pytest.mark.parametrize("name", EXAMPLES)
def test_quick_run_writes_the_table_numbers_and_figure(quick, name):
    example, results = quick[name]
    record = json.loads((results / "metrics.json").read_text())
    # the package's data still make 365 daily tasks, split 291 / 37 / 37 by day
    assert record["tasks"] == {"train": 291, "val": 37, "test": 37}
    for rows in [record["headline"], *record["by_context_size"].values()]:
        assert [r["model"] for r in rows] == ROWS
        assert all(r["n_tasks"] == 8 and _finite(r) for r in rows)  # 2 batches of 4 tasks
        assert set(rows[0]["vs"]) == {"gp", "context-moments"}
    readme = (results / "README.md").read_text()
    for needed in ["**Command**", "**Hardware and time**", "## Reading", "| gp | 8 |"]:
        assert needed in readme, needed
    assert "| context-moments | 8 |" in readme and "--quick smoke run" in readme
    assert f"`python examples/{name}.py --quick --out " in readme  # the command that wrote it
    figure = (results / "tasks.png").read_bytes()
    assert figure.startswith(b"\x89PNG") and len(figure) > 10_000


@pytest.mark.slow
def test_the_transfer_scores_the_other_examples_model(quick):
    record = json.loads((quick["sf_temps"][1] / "metrics.json").read_text())
    transfer = record["transfer"]
    assert transfer["model"] == "seattle-temps (zero-shot)" and transfer["n_tasks"] == 8
    assert set(transfer["vs"]) == {"trained here", *ROWS[1:]} and _finite(transfer)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_the_full_config_scores_every_test_task_once(quick, name):
    example, results = quick[name]
    table = results.parents[2] / "runs" / "examples" / example.name / "table.csv"
    cfg = load_config(example.config, [f"data.path={table}"])
    sampler = build_test_sampler(cfg)
    assert _covered_tasks(sampler, cfg.eval.n_batches) == len(sampler.task_keys("test")) == 37
    assert cfg.eval.n_batches * cfg.eval.batch_size == 37


def test_plot_draws_a_tables_real_points_in_its_units(monkeypatch, tmp_path):
    days = np.repeat(np.arange(12), 10)[5:]  # day 0 has 5 points, the rest 10: padded batches
    hour = np.tile(np.arange(10.0), 12)[5:]
    frame = pd.DataFrame({"day": days, "hour": hour, "temp": 50 + 10 * np.sin(hour) + days})
    sampler = TableSampler.from_frame(
        frame, task="day", x=["hour"], y=["temp"], val_fraction=0.2, test_fraction=0.25
    )
    batch = batch_at(sampler, 0, split="test", batch_size=3)
    assert batch.mask_c is not None  # the contexts differ in size: the case drawn here
    figures = []
    monkeypatch.setattr(
        "tnpx.plot.tasks_1d.save_figure", lambda fig, path: figures.append(fig) or path
    )
    model = tnpx.build_model("context-moments", 1, 1)
    tnpx.plot.plot_1d_tasks({"m": model}, sampler, tmp_path / "p.png", n_tasks=3)
    keys, x, y = sampler.task_keys("test"), frame["hour"].to_numpy(), frame["temp"].to_numpy()
    loc, scale = sampler.normalisation["y"]["loc"][0], sampler.normalisation["y"]["scale"][0]
    assert figures[0].axes[0].get_ylabel() == "temp"
    for i, ax in enumerate(figures[0].axes):
        assert ax.get_xlabel() == "hour"
        lines = {line.get_label(): line for line in ax.get_lines()}
        day = keys[int(batch.info["task"][i])]
        real_c = batch.mask_c[i]
        context = lines["context"].get_xydata()
        assert len(context) == int(real_c.sum())  # the real context points only
        for h, t in context:  # each drawn at its hour and temperature in the table
            row = ((frame["day"] == day) & np.isclose(x, h, atol=1e-3)).to_numpy()
            assert row.sum() == 1 and np.isclose(y[row], t, atol=1e-3).all()
        real_t = batch.mask_t[i].sum() if batch.mask_t is not None else batch.xt.shape[1]
        assert len(lines["targets"].get_xydata()) == int(real_t)
        # the model saw the real context only: context-moments' mean, shrunk by one
        # pseudo-point towards 0 in model units, is sum(y) / (n + 1) of the real points
        expected = loc + scale * float(batch.yc[i, real_c, 0].sum()) / (int(real_c.sum()) + 1)
        assert np.allclose(lines["m mean ± 2σ"].get_ydata(), expected, atol=1e-3)
