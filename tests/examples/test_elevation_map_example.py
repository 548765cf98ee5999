"""``examples/elevation_map.py`` end to end on a small untrained 2D model: the field's table, a
seeded context, every grid cell predicted in metres, the held-out cells scored beside a GP
fitted to the context, and the results folder (README with its command, map, metrics)
written."""

from __future__ import annotations

import json
import math

import pytest

import tnpx
from examples import elevation_map
from tests.helpers.predict_inputs import tiny

pytest.importorskip("matplotlib").use("Agg")
pytest.importorskip("gpytorch")  # the fitted-GP baseline


@pytest.mark.slow  # the GP fit and its prediction of 10,880 cells: ~15 s
def test_the_example_scores_every_cell_outside_the_context(tmp_path):
    tnpx.save(tiny(dim_x=2), tmp_path / "model.pt")
    out = tmp_path / "out"
    args = ["--model", str(tmp_path / "model.pt"), "--context", "40", "--domain", "-2", "2"]
    record = elevation_map.main([*args, "--out", str(out)])
    assert record["grid_cells"] == 91 * 120 and record["held_out"]["n_points"] == 91 * 120 - 40
    for row in (record["held_out"], record["fitted_gp"]):  # the same cells for both
        assert row["n_points"] == 91 * 120 - 40
        assert all(math.isfinite(row[k]) for k in ("rmse_m", "nll", "coverage95"))
        assert 0.0 <= row["coverage95"] <= 1.0
    assert json.loads((out / "metrics.json").read_text()) == record
    readme = (out / "README.md").read_text()
    assert "**Command**" in readme and "**Reading**" in readme and "| fitted GP (Mat" in readme
    assert (out / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_context_is_seeded_and_drawn_from_the_field():
    table, context = elevation_map.field_tables(25, seed=3)
    again = elevation_map.field_tables(25, seed=3)[1]
    assert context.equals(again) and len(context) == 25
    assert context.merge(table, how="left", indicator=True)["_merge"].eq("both").all()


def test_a_context_too_small_is_refused():
    with pytest.raises(ValueError, match="--context must be in"):
        elevation_map.field_tables(2, seed=0)
