"""Issue 51, item 3: units travel with the model. A grid model stores each input's unit (hours
since 1970-01-01 for its time, a coordinate's CF units); at prediction a time input takes date
strings, datetime64 and Timestamps, converted to those hours; a date where the model takes
numbers is refused naming the unit; a non-standard calendar's dates are refused; an older
checkpoint without units predicts as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.small_grids import CONFIG, make_dataset
from tests.helpers.small_models import small_model
from tnpx.checkpoint import CheckpointError, read_checkpoint
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.training.loop import fit
from tnpx.user_files import DataError

HOURS = "hours since 1970-01-01"
START = np.datetime64("2020-01-01T00", "h")  # the small grid's first time


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A grid model trained a few steps on 6-hourly fields whose latitude has CF units."""
    tmp = tmp_path_factory.mktemp("grid-units")
    data = make_dataset()
    data["lat"].attrs["units"] = "degrees_north"
    data.to_netcdf(tmp / "t2m.nc")
    config = tmp / "grid.yaml"
    config.write_text(CONFIG.format(path=tmp / "t2m.nc", out=tmp / "run"))
    fit(load_config(config, ["train.steps=2"]))
    return tmp / "run" / "model.pt"


def tables(n_ctx: int = 10, n_tgt: int = 5, seed: int = 0):
    """A context and targets of the grid model (lat, lon, time in hours, z -> t2m)."""
    rng = np.random.default_rng(seed)

    def inputs(n):
        hours = (START - np.datetime64("1970-01-01T00", "h")).astype(float) + 6 * rng.integers(
            0, 30, n
        )
        return {"lat": rng.uniform(51, 55, n), "lon": rng.uniform(3, 8, n),
                "time": hours.astype(float), "z": rng.uniform(0, 300, n)}  # fmt: skip

    ctx = pd.DataFrame({**inputs(n_ctx), "t2m": rng.normal(280, 3, n_ctx)})
    return ctx, pd.DataFrame(inputs(n_tgt))


def as_dates(frame: pd.DataFrame) -> pd.Series:
    return pd.to_datetime(frame["time"], unit="h")


def test_the_checkpoint_stores_each_inputs_unit(trained):
    x = read_checkpoint(trained)["normalisation"]["x"]
    assert x["columns"] == ["lat", "lon", "time", "z"]
    assert x["units"] == ["degrees_north", "", HOURS, ""]


def test_dates_predict_what_their_hours_do(trained, tmp_path):
    ctx, tgt = tables()
    expected = tnpx.predict(trained, ctx, tgt)
    texts = as_dates(tgt).dt.strftime("%Y-%m-%d %H:%M")
    for given in (
        texts,
        as_dates(tgt),
        as_dates(tgt).dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo"),
    ):
        out = tnpx.predict(trained, ctx.assign(time=as_dates(ctx)), tgt.assign(time=given))
        pd.testing.assert_frame_equal(out, expected, rtol=1e-12)  # times come back in hours
    # the CSV route: date text in the files
    ctx.assign(time=as_dates(ctx).dt.strftime("%Y-%m-%dT%H:%M")).to_csv(
        tmp_path / "c.csv", index=False
    )
    tgt.assign(time=texts).to_csv(tmp_path / "t.csv", index=False)
    tgt.to_csv(tmp_path / "hours.csv", index=False)
    base = ["predict", str(trained), "--context", str(tmp_path / "c.csv")]
    assert (
        main([*base, "--targets", str(tmp_path / "t.csv"), "--out", str(tmp_path / "a.csv")]) == 0
    )
    assert (
        main([*base, "--targets", str(tmp_path / "hours.csv"), "--out", str(tmp_path / "b.csv")])
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv"))
    # the user's tables are never changed
    assert tgt["time"].dtype == np.float64


def test_npregressor_takes_dates_too(trained):
    ctx, tgt = tables(seed=1)
    x_cols = ["lat", "lon", "time", "z"]
    expected = tnpx.predict(trained, ctx, tgt)["t2m_mean"].to_numpy()
    reg = tnpx.NPRegressor(str(trained)).fit(ctx[x_cols].assign(time=as_dates(ctx)), ctx["t2m"])
    dated = tgt[x_cols].assign(time=as_dates(tgt).dt.strftime("%Y-%m-%d %H:%M"))
    np.testing.assert_allclose(reg.predict(dated), expected, rtol=1e-12)


def test_a_date_in_a_numeric_column_is_refused_naming_the_unit(trained):
    ctx, tgt = tables()
    with pytest.raises(DataError) as err:
        tnpx.predict(trained, ctx, tgt.assign(lat=["2010-05-01"] * len(tgt)))
    assert "targets DataFrame, row 0, column 'lat': the model takes numbers in degrees_north, " \
           "got '2010-05-01'" == str(err.value)  # fmt: skip
    with pytest.raises(DataError, match="'time': 'soon' is neither a number .hours since "
                                        "1970-01-01. nor a date"):  # fmt: skip
        tnpx.predict(trained, ctx, tgt.assign(time="soon"))


def test_a_non_standard_calendars_dates_are_refused(tmp_path):
    unit = f"{HOURS} (360_day)"
    norm = {"x": {"columns": ["time"], "loc": [0.0], "scale": [1000.0], "units": [unit]},
            "y": {"columns": ["v"], "loc": [0.0], "scale": [1.0]}}  # fmt: skip
    path = tmp_path / "m.pt"
    tnpx.save(small_model("tnp"), path, normalisation=norm)
    ctx = pd.DataFrame({"time": [10.0, 20.0], "v": [0.1, 0.2]})
    assert np.isfinite(tnpx.predict(path, ctx, ctx[["time"]])["v_mean"]).all()  # numbers: fine
    with pytest.raises(DataError, match=r"column 'time': the model takes numbers in hours since "
                                        r"1970-01-01 \(360_day\), got '2010-02-30'; dates in the "
                                        r"360_day calendar are not converted"):  # fmt: skip
        tnpx.predict(path, ctx, pd.DataFrame({"time": ["2010-02-30"]}))


def test_an_old_checkpoint_without_units_predicts_as_before(trained, tmp_path):
    record = read_checkpoint(trained)
    x = dict(record["normalisation"]["x"])
    del x["units"]
    old = {**record, "normalisation": {**record["normalisation"], "x": x}}
    torch.save(old, tmp_path / "old.pt")
    ctx, tgt = tables(seed=2)
    pd.testing.assert_frame_equal(tnpx.predict(tmp_path / "old.pt", ctx, tgt),
                                  tnpx.predict(trained, ctx, tgt))  # fmt: skip
    with pytest.raises(DataError, match="column 'time': '2020-01-01' is not a number"):
        tnpx.predict(tmp_path / "old.pt", ctx, tgt.assign(time="2020-01-01"))
    bad = {**record, "normalisation": {**record["normalisation"], "x": {**x, "units": ["h"]}}}
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="stored input units cannot be read"):
        tnpx.predict(tmp_path / "bad.pt", ctx, tgt)


def test_the_cli_plots_a_prediction_from_dates(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import tnpx.plot
    import tnpx.plot.prediction

    drawn = []  # the context each plot is drawn with: its times in hours, as the result's

    def record(result, path, x_col, y_cols, context=None, **_):
        drawn.append(context)
        open(path, "wb").close()

    monkeypatch.setattr(tnpx.plot.prediction, "plot_prediction", record)
    monkeypatch.setattr(tnpx.plot, "plot_prediction", record, raising=False)
    norm = {"x": {"columns": ["time"], "loc": [438300.0], "scale": [50.0], "units": [HOURS]},
            "y": {"columns": ["v"], "loc": [0.0], "scale": [1.0]}}  # fmt: skip
    tnpx.save(small_model("tnp"), tmp_path / "m.pt", normalisation=norm)
    days = pd.date_range("2020-01-01", periods=6, freq="12h")
    pd.DataFrame({"time": days.strftime("%Y-%m-%d %H:%M"), "v": np.arange(6.0)}).to_csv(
        tmp_path / "c.csv", index=False
    )
    pd.DataFrame({"time": ["2020-01-02 06:00", "2020-01-03"]}).to_csv(
        tmp_path / "t.csv", index=False
    )
    files = {f: str(tmp_path / f) for f in ("m.pt", "c.csv", "t.csv", "p.csv", "p.png")}
    args = ["predict", files["m.pt"], "--context", files["c.csv"], "--targets", files["t.csv"],
            "--out", files["p.csv"], "--plot", files["p.png"]]  # fmt: skip
    assert main(args) == 0
    hours = np.array(["2020-01-02T06", "2020-01-03T00"], "datetime64[h]").astype(float)
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "p.csv")["time"], hours)
    np.testing.assert_array_equal(drawn[0]["time"], 438288.0 + 12 * np.arange(6))
