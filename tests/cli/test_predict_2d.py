"""Prediction with two input columns: ``tnpx.predict`` on a 2D model, and the map that
``tnpx predict --plot`` draws for it (:mod:`tnpx.plot.map`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tnpx
from tests.helpers.predict_inputs import frames, quiet_predict, tiny
from tnpx.cli import main
from tnpx.plot.map import PANELS, prediction_map_figure

pytest.importorskip("matplotlib")


@pytest.mark.parametrize("name", ["tnp", "te-tnp-rope"])
def test_predict_takes_two_input_columns(name):
    model = tiny(dim_x=2, name=name)
    ctx, tgt = frames(n_ctx=20, n_tgt=31, dim_x=2)
    result = quiet_predict(model, ctx, tgt, domain=(-2.0, 2.0))
    assert list(result.columns[:3]) == ["x0", "x1", "y_mean"] and len(result) == 31
    np.testing.assert_array_equal(result[["x0", "x1"]].to_numpy(), tgt.to_numpy())
    assert np.isfinite(result[["y_mean", "y_std"]].to_numpy()).all()
    assert (result["y_std"] > 0).all()


def _panel_titles(fig) -> list[str]:
    return [ax.get_title() for ax in fig.axes if ax.get_title()]  # colour bars have none


def test_map_has_a_mean_and_a_std_panel_per_output():
    model = tiny(dim_x=2, dim_y=2)
    ctx, tgt = frames(n_ctx=15, n_tgt=40, dim_x=2, dim_y=2)
    result = quiet_predict(model, ctx, tgt, domain=(-2.0, 2.0))
    fig = prediction_map_figure(result, ["x0", "x1"], ["y0", "y1"], context=ctx)
    assert _panel_titles(fig) == [f"{y} {p}" for y in ("y0", "y1") for p in PANELS]
    first = next(ax for ax in fig.axes if ax.get_title() == "y0 mean")
    assert first.get_xlabel() == "x0" and first.get_ylabel() == "x1"
    marked = [c for c in first.collections if c.get_label() == "context"]
    assert len(marked) == 1 and len(marked[0].get_offsets()) == 15


def test_map_of_targets_on_a_line_falls_back_to_points():
    line = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 1.0, 2.0, 3.0]})
    result = line.assign(y_mean=[0.0, 1.0, 0.5, 0.2], y_std=[1.0, 0.5, 0.4, 0.3])
    fig = prediction_map_figure(result, ["a", "b"], ["y"])
    assert _panel_titles(fig) == ["y mean", "y std"]
    with pytest.raises(ValueError, match="two input columns"):
        prediction_map_figure(result, ["a"], ["y"])


def test_a_truth_panel_comes_first_on_the_means_colour_scale():
    model = tiny(dim_x=2)
    ctx, tgt = frames(n_ctx=15, n_tgt=60, dim_x=2)
    result = quiet_predict(model, ctx, tgt, domain=(-2.0, 2.0))
    truth = pd.DataFrame({"y": np.linspace(-5.0, 7.0, 60)})  # wider than the mean's range
    fig = prediction_map_figure(result, ["x0", "x1"], ["y"], context=ctx, truth=truth)
    assert _panel_titles(fig) == ["y truth", "y mean", "y std"]
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    scales = [by_title[t].collections[0].get_clim() for t in ("y truth", "y mean")]
    assert scales[0] == scales[1] and scales[0][0] <= -5.0 and scales[0][1] >= 7.0
    gaps = truth.assign(y=truth["y"].where(truth.index % 7 > 0))  # missing true values: NaN
    fig = prediction_map_figure(result, ["x0", "x1"], ["y"], truth=gaps)
    low, high = next(ax for ax in fig.axes if ax.get_title() == "y truth").collections[0].get_clim()
    assert np.isfinite([low, high]).all() and high >= 6.5
    with pytest.raises(ValueError, match="truth has 59 rows for 60"):
        prediction_map_figure(result, ["x0", "x1"], ["y"], truth=truth.iloc[1:])


def _write(tmp_path, dim_x: int):
    tnpx.save(tiny(dim_x=dim_x), tmp_path / "model.pt")
    ctx, tgt = frames(n_ctx=20, n_tgt=50, dim_x=dim_x)
    ctx.to_csv(tmp_path / "ctx.csv", index=False)
    tgt.to_csv(tmp_path / "tgt.csv", index=False)
    args = ["predict", str(tmp_path / "model.pt"), "--context", str(tmp_path / "ctx.csv")]
    return args + ["--targets", str(tmp_path / "tgt.csv"), "--domain", "-2", "2"]


def test_cli_plot_writes_a_map_png(tmp_path):
    png, out = tmp_path / "map.png", tmp_path / "pred.csv"
    assert main([*_write(tmp_path, 2), "--out", str(out), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert len(pd.read_csv(out)) == 50
