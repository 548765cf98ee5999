"""``tnpx plot`` answers a user's question (tnpx.plot.grid_select): ``--time``, ``--period``,
``--region`` and ``--select`` draw exactly the windows inside the period and region asked for
(checked on the data, not the pixels), a bad date or region is one clear line, and time axes
and rows are labelled with dates, not hours since 1970."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tnpx
from tnpx.data import batch_at
from tnpx.plot.grid_select import date_text, restricted, selection_box, window_origins
from tnpx.user_files import DataError

xr = pytest.importorskip("xarray")
pytest.importorskip("matplotlib").use("Agg")

DATE = re.compile(r"^\d{4}-\d\d-\d\d( \d\d:\d\d)?$")


def _monthly() -> xr.Dataset:
    """24 months (2000-01 .. 2001-12) on a descending 6-point latitude and 8 longitudes."""
    time = np.arange("2000-01", "2002-01", dtype="datetime64[M]").astype("datetime64[ns]")
    v = np.random.default_rng(0).standard_normal((24, 6, 8))
    coords = {"time": time, "lat": np.arange(10.0, 4.0, -1.0), "lon": np.arange(8.0)}
    return xr.Dataset({"v": (("time", "lat", "lon"), v)}, coords=coords)


def _sampler(**options):
    from tnpx.data.grid import GridSampler

    window = options.pop("window", {"time": 1, "lat": 3, "lon": 3})
    options.setdefault("x", ["lat", "lon", "time"])  # time an input, though one month long
    # the last 6 months (2001-07 .. 2001-12) are the test split
    return GridSampler.from_dataset(_monthly(), batch_size=4, y=["v"], window=window,
                                    test_fraction=0.25, **options)  # fmt: skip


def _drawn(view, split="test"):
    """Every window the view draws: its points' inputs in the data's units ``[n, N, dim_x]``."""
    n = len(view.windows(split))
    batch = batch_at(view, 0, split=split, batch_size=n)
    x, _ = view.to_physical(x=torch.cat([batch.xc, batch.xt], 1))
    return batch, x.numpy()


def _month_hours(month: str) -> float:
    return float((np.datetime64(month, "h") - np.datetime64("1970-01-01", "h")).astype(float))


def test_time_draws_every_window_of_that_month_and_no_other():
    sampler = _sampler()
    view = restricted(sampler, selection_box(sampler, time="2001-09"))
    assert len(view.windows("test")) == 4 * 6  # every lat x lon window of the month
    batch, x = _drawn(view)
    hours = x[..., sampler.x.index("time")]
    np.testing.assert_allclose(hours, _month_hours("2001-09"), atol=1.0)  # float32 inputs
    origins = {tuple(o) for o in batch.info["origin_index"].tolist()}
    assert len(origins) == 24  # each window once
    assert len(sampler.windows("test")) == 6 * 24  # the sampler itself is unchanged


def test_period_and_region_keep_the_windows_wholly_inside_both():
    sampler = _sampler()
    box = selection_box(sampler, period=["2001-08", "2001-10"], region=[9.0, 6.0, 1.0, 5.0])
    view = restricted(sampler, box)
    _, x = _drawn(view)
    lat, lon, time = (x[..., sampler.x.index(d)].round(3) for d in ("lat", "lon", "time"))
    assert lat.min() >= 6 and lat.max() <= 9 and lon.min() >= 1 and lon.max() <= 5
    months = {round(float(h)) for h in np.unique(time.round())}
    assert months == {round(_month_hours(m)) for m in ("2001-08", "2001-09", "2001-10")}
    # lat 9..6 holds 4 rows (2 window starts), lon 1..5 holds 5 (3 starts), 3 months
    assert len(view.windows("test")) == 2 * 3 * 3


def test_select_takes_the_configs_box_for_any_dim():
    sampler = _sampler()
    box = selection_box(sampler, select=["lon=2:6", "time=2001-12-01,2001-12-31"])
    assert box == {"lon": [2.0, 6.0], "time": ["2001-12-01", "2001-12-31"]}
    origins = window_origins(sampler, box)
    assert set(origins[:, 0].tolist()) == {23} and set(origins[:, 2].tolist()) == {2, 3, 4}


def test_another_split_is_drawn_when_asked():
    sampler = _sampler()
    view = restricted(sampler, selection_box(sampler, time="2000-05"), split="train")
    _, x = _drawn(view, "train")
    np.testing.assert_allclose(x[..., sampler.x.index("time")], _month_hours("2000-05"), atol=1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time": "2001-13"}, "time bound '2001-13' is not a date: give e.g. 2010, 2010-05"),
        ({"time": "2030-01"}, "holds no grid point (the coordinate runs from 2000-01-01"),
        ({"time": "2000-05"}, "no test window lies inside the selection"),
        ({"region": [9.0, 9.5, 0.0, 7.0]}, "the selection holds 1 lat point(s); a window spans 3"),
        ({"select": ["depth=0:10"]}, "selects dim 'depth', which the grid lacks"),
        ({"select": ["lon=2"]}, "--select 'lon=2' is not DIM=LO:HI"),
        ({"time": "2001-09", "period": ["2001-01", "2001-02"]}, "--time and --period both"),
    ],
)
def test_a_bad_date_or_region_is_one_clear_line(options, message):
    sampler = _sampler()
    with pytest.raises(DataError) as caught:
        restricted(sampler, selection_box(sampler, **options))
    text = str(caught.value)
    assert message in text and "\n" not in text
    if "no test window" in text:  # says where the test windows are and what to do
        assert "time 2001-07-01..2001-12-01" in text and "--split train" in text


def test_region_needs_latitude_and_longitude_dims():
    from tnpx.data.grid import GridSampler

    data = _monthly().rename({"lat": "y", "lon": "x"})
    sampler = GridSampler.from_dataset(data, y=["v"], window={"time": 1, "y": 3, "x": 3})
    with pytest.raises(DataError, match=r"--region needs dims named lat\.\.\. and lon\.\.\."):
        selection_box(sampler, region=[5.0, 9.0, 0.0, 4.0])


def test_hours_since_1970_are_written_as_dates():
    assert date_text(_month_hours("2001-09")) == "2001-09-01"
    assert date_text(_month_hours("2001-09") + 6.5) == "2001-09-01 06:30"


def _model(dim_x: int):
    torch.manual_seed(0)
    return tnpx.build_model("tnp", dim_x, 1, dim_model=16, n_layers=1, n_heads=2, dim_head=8)


def test_a_time_axis_is_labelled_with_dates():
    from tnpx.plot.grid import grid_figure

    # a Hovmoeller map: time down the rows, longitude across
    window = {"time": 4, "lat": 1, "lon": 5}
    sampler = _sampler(window=window, x=["time", "lon", "lat"], val_fraction=0.2)
    fig = grid_figure(_model(3), sampler, n_tasks=1)
    fig.canvas.draw()
    maps = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    for ax in maps:
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert labels and all(DATE.match(label) for label in labels), labels
        assert not any(DATE.match(t.get_text()) for t in ax.get_xticklabels())  # longitude
        # a tick per cell of the window's 4 months, each its own month's first day
        assert len(labels) == 4 and all(label.endswith("-01") for label in labels)
        months = [np.datetime64(label[:7], "M") for label in labels]
        assert np.all(np.diff(months) == np.timedelta64(1, "M"))
    assert "lat " in maps[0].get_ylabel() and "h)" not in maps[0].get_ylabel()


def test_a_row_names_its_month_as_a_date_even_when_time_is_no_input():
    from tnpx.plot.grid import grid_figure

    sampler = _sampler(x=["lat", "lon"])
    view = restricted(sampler, selection_box(sampler, time="2001-09"))
    fig = grid_figure(_model(2), view, n_tasks=2)
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel().startswith("task")]
    assert len(labels) == 2 and all("(time 2001-09-01)" in label for label in labels)


def test_a_row_names_its_fixed_time_input_as_a_date():
    from tnpx.plot.grid import grid_figure

    sampler = _sampler(window={"time": 3, "lat": 3, "lon": 3}, val_fraction=0.15)
    fig = grid_figure(_model(3), sampler, n_tasks=1)  # lat x lon maps; time fixed mid-window
    label = next(ax.get_ylabel() for ax in fig.axes if ax.get_ylabel().startswith("task"))
    assert re.search(r"\(time 2001-\d\d-01\)", label), label


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 4-step ``tnp`` on 6-hourly windows (time 3, lat 4, lon 5) of 2020-01-01 .. 01-10."""
    pytest.importorskip("netCDF4")
    from tests.helpers.small_grids import CONFIG, make_dataset
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    tmp = tmp_path_factory.mktemp("grid_select")
    make_dataset().to_netcdf(tmp / "t2m.nc")
    (tmp / "grid.yaml").write_text(CONFIG.format(path=tmp / "t2m.nc", out=tmp / "run"))
    fit(load_config(tmp / "grid.yaml"))
    return tmp / "run" / "model.pt"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--time", "2020-13"], "time bound '2020-13' is not a date"),
        (["--region", "60", "70", "2", "5"], "nc: selection.lat = [60.0, 70.0] holds no grid"),
        (["--time", "2020-01-02"], "no test window lies inside the selection"),
    ],
)
def test_tnpx_plot_refuses_a_bad_selection_in_one_line(
    checkpoint, tmp_path, capsys, options, message
):
    from tnpx.cli import main

    out = tmp_path / "p.png"
    assert main(["plot", str(checkpoint), *options, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tnpx plot: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_a_source_without_windows_refuses_the_grid_options(checkpoint, tmp_path, capsys):
    from tests.helpers.user_tables import CONFIG, write_sines
    from tnpx.cli import main

    write_sines(tmp_path / "s.csv")
    config = tmp_path / "sines.yaml"
    config.write_text(CONFIG.format(path=tmp_path / "s.csv", out=tmp_path / "run"))
    args = ["plot", str(checkpoint), "--config", str(config), "--time", "2020-01"]
    assert main([*args, "--out", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert "--time: chooses the windows of a grid; the 'table' source's plot" in err


@pytest.mark.slow  # writes a PNG (the default suite's time)
def test_tnpx_plot_draws_the_period_asked_for(checkpoint, tmp_path, capsys):
    from tnpx.cli import main

    out = tmp_path / "p.png"
    args = ["plot", str(checkpoint), "--period", "2020-01-10", "2020-01-10", "--out", str(out)]
    assert main(args) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
