"""``tnpx plot`` of a checkpoint trained on the ``stations`` source: a PNG of held-out time
steps, a row of maps per task (context stations, targets by mean, std and truth) on the input
columns, values in the data's units re-derived in float64 from the readings and the stored
normalisation; one input column is drawn along it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tests.data.test_stations import (  # the stations source's readings and config
    CONFIG,
    network,
    write,
)
from tnpx.batch import Batch
from tnpx.cli import main
from tnpx.data import batch_at

pytest.importorskip("matplotlib").use("Agg")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def train(tmp, frame: pd.DataFrame, one_input: bool = False):
    """A 3-step ``tnp`` on ``frame``'s readings (coords lat and lon, or lat alone); the
    checkpoint's path."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    text = CONFIG.format(path=write(tmp, frame), out=tmp / "run")
    text = text.replace("steps: 40", "steps: 3").replace("val_every: 40", "val_every: 3")
    if one_input:
        text = text.replace("coords: [lat, lon]", "coords: [lat]").replace("dim_x: 2", "dim_x: 1")
    config = tmp / "stations.yaml"
    config.write_text(text)
    fit(load_config(config))
    return tmp / "run" / "model.pt"


@pytest.fixture(scope="module")
def readings() -> pd.DataFrame:
    return network(n_stations=20, days=6)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, readings):
    return train(tmp_path_factory.mktemp("stations_plot"), readings)


def _model_and_sampler(checkpoint):
    from tnpx.checkpoint import experiment_from_record, model_from_record, read_checkpoint
    from tnpx.evaluation.protocol import build_test_sampler

    record = read_checkpoint(checkpoint)
    return model_from_record(record, checkpoint).eval(), build_test_sampler(
        experiment_from_record(record)
    )


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_tnpx_plot_writes_a_png_of_station_tasks(trained, tmp_path, capsys):
    out = tmp_path / "stations.png"
    assert main(["plot", str(trained), "--n-tasks", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert str(out) in capsys.readouterr().out


def test_samples_are_refused_for_station_maps(trained, tmp_path):
    out = tmp_path / "samples.png"
    with pytest.raises(SystemExit, match="not station maps"):
        main(["plot", str(trained), "--samples", "2", "--out", str(out)])
    assert not out.exists()


@pytest.mark.parametrize("n_tasks", [1, 3])
def test_figure_has_a_row_of_four_maps_per_task(trained, n_tasks):
    import matplotlib.pyplot as plt

    from tnpx.plot.grid import PANELS
    from tnpx.plot.stations import station_maps, stations_figure

    model, sampler = _model_and_sampler(trained)
    fig = stations_figure(model, sampler, n_tasks=n_tasks)
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)
    maps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(maps) == len(PANELS) * n_tasks
    assert len(fig.axes) == (len(PANELS) + 2) * n_tasks  # + the std and mean/truth colour bars
    for row in range(n_tasks):
        context, mean, std, truth = maps[4 * row : 4 * row + 4]
        scale = mean.collections[0].get_clim()
        assert truth.collections[0].get_clim() == scale == context.collections[0].get_clim()
        assert std.collections[0].get_clim()[0] == 0
        assert mean.get_xlabel() == "lon" and context.get_ylabel().endswith("lat")
        assert len(mean.collections) == 2  # the targets, and the context stations as markers
        task = station_maps(model, sampler, batch, row)
        placed = mean.collections[0].get_offsets()  # (lon, lat): lat up the map
        np.testing.assert_allclose(placed, task.target_x[:, ::-1], rtol=1e-6)
        np.testing.assert_allclose(mean.collections[0].get_array(), task.mean)
        np.testing.assert_allclose(context.collections[0].get_offsets(), task.context_x[:, ::-1])
    plt.close(fig)


def test_maps_are_in_the_datas_units(trained, readings):
    """One task's truth read from the readings, and one target's mean and std from the
    model conditioned on the context stations mapped in float64 with the stored map."""
    from tnpx.checkpoint import read_checkpoint
    from tnpx.plot.stations import station_maps

    model, sampler = _model_and_sampler(trained)
    stored = read_checkpoint(trained)["normalisation"]
    x_loc, x_scale = (np.array(stored["x"][k], dtype=np.float64) for k in ("loc", "scale"))
    y_loc, y_scale = (float(stored["y"][k][0]) for k in ("loc", "scale"))
    batch = batch_at(sampler, 0, split="test", batch_size=2)
    for i in range(2):
        maps = station_maps(model, sampler, batch, i)
        assert maps.columns == ["lat", "lon"] and maps.output == "temp"
        rows = readings[readings["time"] == pd.Timestamp(maps.task)]
        found = [_row_at(rows, x) for x in (*maps.context_x, *maps.target_x)]
        ctx, tgt = rows.loc[found[: len(maps.context_x)]], rows.loc[found[len(maps.context_x) :]]
        np.testing.assert_allclose(maps.context_y, ctx["temp"], rtol=1e-6)
        np.testing.assert_allclose(maps.truth, tgt["temp"], rtol=1e-6)
        xc = (ctx[["lat", "lon"]].to_numpy() - x_loc) / x_scale
        yc = (ctx[["temp"]].to_numpy() - y_loc) / y_scale
        xt = (tgt[["lat", "lon"]].to_numpy()[:1] - x_loc) / x_scale
        as_batch = (torch.tensor(v, dtype=torch.float32)[None] for v in (xc, yc, xt))
        pred = model.predict_batch(Batch(*as_batch))
        assert maps.mean[0] == pytest.approx(pred.mean.double().item() * y_scale + y_loc, abs=1e-4)
        assert maps.std[0] == pytest.approx(pred.stddev.double().item() * y_scale, rel=1e-4)


def _row_at(rows: pd.DataFrame, x: np.ndarray):
    """The index of the reading of ``rows`` at (lat, lon) ``x``."""
    gap = np.abs(rows[["lat", "lon"]].to_numpy() - x).max(1)
    assert gap.min() < 1e-4
    return rows.index[int(gap.argmin())]


def test_one_input_column_is_drawn_along_it(tmp_path, readings):
    from tnpx.plot.stations import stations_figure

    checkpoint = train(tmp_path, readings.drop(columns="lon"), one_input=True)
    model, sampler = _model_and_sampler(checkpoint)
    fig = stations_figure(model, sampler, n_tasks=2)
    assert len(fig.axes) == 2 and fig.axes[0].get_xlabel() == "lat"
    assert fig.axes[0].get_ylabel() == "temp"
    out = tmp_path / "line.png"
    assert main(["plot", str(checkpoint), "--n-tasks", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_a_grid_output_is_not_drawn(trained):
    from tnpx.plot.stations import stations_figure

    model, sampler = _model_and_sampler(trained)
    with pytest.raises(ValueError, match=r"output must be a station output in \[0, 1\), got 1"):
        stations_figure(model, sampler, output=1)


@pytest.mark.parametrize(("columns", "across"), [(["lon", "lat"], "lon"), (["x0", "x1"], "x0")])
def test_the_maps_axes_follow_predicts_convention(columns, across):
    """Issue 51, 8b: the station maps put a longitude-like input across, else the first, as
    ``tnpx predict --plot`` does (:func:`tnpx.plot.map.map_axes`)."""
    import matplotlib.pyplot as plt

    from tnpx.plot.grid import PANELS
    from tnpx.plot.stations import StationMaps, _draw_maps

    points = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    values = np.array([0.1, 0.2, 0.3])
    task = StationMaps(columns, "temp", points, values, points, values, values, values, "day 1")
    fig, axes = plt.subplots(1, len(PANELS))
    _draw_maps(fig, axes, task)
    up = columns[1 - columns.index(across)]
    assert axes[1].get_xlabel() == across and axes[0].get_ylabel().endswith(up)
    placed = axes[1].collections[0].get_offsets()
    np.testing.assert_allclose(placed, points[:, [columns.index(across), columns.index(up)]])
    plt.close(fig)
