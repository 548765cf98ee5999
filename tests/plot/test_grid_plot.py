"""``tnpx plot`` of a checkpoint trained on the ``grid`` source: a PNG of held-out windows, one
row of maps per task (context, mean, std, truth), its values in the data's units re-derived in
float64 from the NetCDF file and the stored normalisation; a source it cannot draw is one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.small_grids import (  # the grid source's tiny NetCDF and config
    CONFIG,
    make_dataset,
)
from tnpx.batch import Batch
from tnpx.cli import main
from tnpx.data import batch_at
from tnpx.data.field_arrays import time_values

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")
pytest.importorskip("matplotlib").use("Agg")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 4-step ``tnp`` on windows (time 3, lat 4, lon 5) of ``t2m`` with static input ``z``."""
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    tmp = tmp_path_factory.mktemp("grid_plot")
    nc = tmp / "t2m.nc"
    make_dataset().to_netcdf(nc)
    config = tmp / "grid.yaml"
    config.write_text(CONFIG.format(path=nc, out=tmp / "run"))
    fit(load_config(config))
    return tmp / "run" / "model.pt", nc


def _model_and_sampler(checkpoint):
    from tnpx.checkpoint import experiment_from_record, model_from_record, read_checkpoint
    from tnpx.evaluation.protocol import build_test_sampler

    record = read_checkpoint(checkpoint)
    return model_from_record(record, checkpoint).eval(), build_test_sampler(
        experiment_from_record(record)
    )


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_tnpx_plot_writes_a_png_of_grid_windows(trained, tmp_path, capsys):
    checkpoint, _ = trained
    out = tmp_path / "windows.png"
    assert main(["plot", str(checkpoint), "--n-tasks", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert str(out) in capsys.readouterr().out


@pytest.mark.parametrize("n_tasks", [1, 3])
def test_figure_has_a_row_of_four_maps_per_task(trained, n_tasks):
    from tnpx.plot.grid import PANELS, grid_figure

    model, sampler = _model_and_sampler(trained[0])
    fig = grid_figure(model, sampler, n_tasks=n_tasks)
    maps = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(maps) == len(PANELS) * n_tasks
    assert len(fig.axes) == (len(PANELS) + 2) * n_tasks  # + the std and mean/truth colour bars
    for row in range(n_tasks):
        context, mean, std, truth = maps[4 * row : 4 * row + 4]
        assert mean.images[0].get_clim() == truth.images[0].get_clim()  # one scale
        assert context.images[0].get_clim() == truth.images[0].get_clim()
        assert std.images[0].get_clim()[0] == 0
        assert mean.get_xlabel() == "lon" and "lat" in context.get_ylabel()  # the grid's dims
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_maps_are_in_the_datas_units(trained):
    """Each map cell re-derived in float64: the truth read from the file, the mean and std from
    the model's prediction at that one cell mapped back with the stored normalisation."""
    from tnpx.checkpoint import read_checkpoint
    from tnpx.plot.grid import window_maps

    checkpoint, nc = trained
    model, sampler = _model_and_sampler(checkpoint)
    stored = read_checkpoint(checkpoint)["normalisation"]
    x_loc, x_scale = (np.array(stored["x"][k], dtype=np.float64) for k in ("loc", "scale"))
    y_loc, y_scale = (float(stored["y"][k][0]) for k in ("loc", "scale"))
    data = xr.open_dataset(nc).astype(np.float64)
    hours = time_values(data["time"].values)
    batch = batch_at(sampler, 0, split="test", batch_size=2)
    for i in range(2):
        maps = window_maps({"m": model}, sampler, batch, i)
        assert maps.dims == ("lat", "lon") and maps.truth.shape == (4, 5)
        lat0, lon0, t0 = batch.info["origin"][i].double().tolist()
        t = int(np.argmin(np.abs(hours - t0))) + 1  # the middle of the window's 3 times
        assert maps.fixed["time"] == pytest.approx(hours[t])
        lats = np.sort(data["lat"].values[np.flatnonzero(data["lat"].values <= lat0)[:4]])
        lons = data["lon"].values[np.flatnonzero(data["lon"].values >= lon0)[:5]]
        expected = data["t2m"].isel(time=t).sel(lat=lats, lon=lons).values
        np.testing.assert_allclose(maps.truth, expected, atol=1e-4)  # float32 storage
        r, c = 2, 3
        cell = np.array([lats[r], lons[c], hours[t], data["z"].sel(lat=lats[r], lon=lons[c])])
        x_model = torch.tensor((cell - x_loc) / x_scale, dtype=torch.float32).view(1, 1, -1)
        pred = model.predict_batch(Batch(batch.xc[i : i + 1], batch.yc[i : i + 1], x_model))
        mean = pred.mean.double().item() * y_scale + y_loc
        std = pred.stddev.double().item() * y_scale
        assert maps.means["m"][r, c] == pytest.approx(mean, abs=1e-4)
        assert maps.stds["m"][r, c] == pytest.approx(std, rel=1e-4)
        observed = maps.is_context
        assert observed.sum() == maps.in_slice.sum()  # the context cells drawn are this slice's
        np.testing.assert_array_equal(np.isnan(maps.context), ~observed)
        np.testing.assert_array_equal(maps.context[observed], maps.truth[observed])


def test_a_source_without_a_plot_is_one_line(trained, tmp_path, capsys):
    from tests.helpers.tiny import TINY_YAML

    config = tmp_path / "gp2d.yaml"
    config.write_text(TINY_YAML.replace("data: {name: gp,", "data: {name: gp, dim_x: 2,"))
    code = main(["plot", str(trained[0]), "--config", str(config), "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "'gp' source with dim_x=2" in err and "image and grid" in err
    assert not (tmp_path / "p").exists()
