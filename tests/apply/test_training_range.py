"""A model trained on a user's grid knows where it was trained (issue 51, item 2): its
checkpoint records each input's training range and measured limits, and predict warns past the
first and refuses past the second, for the context and the targets alike (another region, a
period in 2030, time in days where it was trained in hours), unless allow_extrapolation."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tnpx
from tests.helpers.small_grids import CONFIG, make_dataset
from tnpx.checkpoint import CheckpointError, atomic_save, read_checkpoint
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.data.field_arrays import time_values
from tnpx.training.loop import fit
from tnpx.user_files import DataError

LAT, TIME = 0, 2  # input columns: lat, lon, time, z


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained a few steps on the 6-hourly grid (time in hours since 1970)."""
    tmp = tmp_path_factory.mktemp("range")
    make_dataset().to_netcdf(tmp / "t2m.nc")
    (tmp / "grid.yaml").write_text(CONFIG.format(path=tmp / "t2m.nc", out=tmp / "run"))
    fit(load_config(tmp / "grid.yaml", ["train.steps=6"]))
    return tmp / "run" / "model.pt"


def variant(path, tmp_path, name: str, **x_part):
    """A copy of the checkpoint at ``path`` whose ``normalisation["x"]`` has ``x_part``'s keys
    set (None: removed)."""
    record = read_checkpoint(path)
    x = record["normalisation"]["x"]
    for key, value in x_part.items():
        if value is None:
            x.pop(key, None)
        else:
            x[key] = value
    out = tmp_path / f"{name}.pt"
    atomic_save(record, out)
    return out


def cells(lat_shift: float = 0.0, time_scale: float = 1.0, n: int = 30, seed: int = 0):
    """Context and target tables from the grid's training period and region (the first 28
    time steps), latitude moved by ``lat_shift`` and time (hours since 1970) divided by
    ``time_scale`` (24: days)."""
    data = make_dataset()
    rng = np.random.default_rng(seed)
    it, ia, io = (rng.integers(0, k, n) for k in (28, data.lat.size, data.lon.size))
    frame = pd.DataFrame({
        "lat": data.lat.values[ia] + lat_shift,
        "lon": data.lon.values[io],
        "time": time_values(data.time.values[it]) / time_scale,
        "z": data.z.values[ia, io],
        "t2m": data.t2m.values[it, ia, io].astype(np.float64),
    })  # fmt: skip
    return frame.iloc[:20], frame.iloc[20:, :4].copy()


def quiet_predict(model, context, targets, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return tnpx.predict(model, context, targets, **options)


def test_the_checkpoint_records_the_training_range_and_its_measured_limits(trained):
    x = read_checkpoint(trained)["normalisation"]["x"]
    assert x["columns"] == ["lat", "lon", "time", "z"]
    np.testing.assert_allclose(x["range"][LAT], [50.5, 56.0])
    hours = time_values(make_dataset().time.values)
    assert x["range"][TIME][0] == hours[0] and hours[20] < x["range"][TIME][1] < hours[-1]
    limits = x["limits"]
    assert len(limits["warn_at"]) == len(limits["refuse_at"]) == 4
    assert all(0 <= w <= r for w, r in zip(limits["warn_at"], limits["refuse_at"]))
    assert limits["measured_on"] == "4 validation tasks"


def test_inside_the_training_range_nothing_is_said(trained):
    context, targets = cells()
    out = quiet_predict(trained, context, targets)
    assert np.isfinite(out["t2m_mean"]).all()


def test_targets_in_another_region_warn_then_are_refused(trained, tmp_path):
    model = variant(trained, tmp_path, "defaults", limits=None)  # warn 0.1, refuse 1 width
    context, _ = cells()
    _, north = cells(lat_shift=4.0)  # a little north of the band (at most 4 / 5.5 widths)
    furthest = (north["lat"].max() - 56.0) / 5.5
    assert 0.1 < furthest < 1
    with pytest.warns(UserWarning, match="outside the region and period") as caught:
        tnpx.predict(model, context, north)
    message = str(caught[0].message)
    assert f"'lat' up to {furthest:.3g} widths outside [50.5, 56]" in message
    assert "no measurement is stored" in message and "another unit" in message
    _, far_north = cells(lat_shift=30.0)  # 30 degrees north: 5 widths
    with pytest.raises(DataError, match=r"column 'lat': .* widths outside the range the model "
                       r"was trained on, \[50.5, 56\].*another region or period"):  # fmt: skip
        tnpx.predict(model, context, far_north)


def test_time_in_days_where_the_model_was_trained_in_hours_is_refused(trained):
    context, targets = cells(time_scale=24.0)
    with pytest.raises(DataError, match=r"column 'time'.*times 24 it would lie inside: the "
                       r"likely cause is a value in another unit \(days for hours"):  # fmt: skip
        tnpx.predict(trained, context, targets)


def test_a_year_in_2030_is_refused(trained):
    context, targets = cells()
    later = targets.assign(time=targets["time"] + 10 * 365.25 * 24)
    with pytest.raises(DataError, match=r"targets DataFrame, row \d+.*, column 'time'"):
        tnpx.predict(trained, context, later)


def test_the_context_alone_out_of_range_is_caught(trained):
    context, targets = cells()
    with pytest.raises(DataError, match=r"context DataFrame, row \d+.*, column 'lat'"):
        tnpx.predict(trained, context.assign(lat=context["lat"] + 30), targets)


def test_allow_extrapolation_predicts_with_a_warning(trained):
    context, targets = cells(time_scale=24.0)
    with pytest.warns(UserWarning, match=r"'time' up to .* widths outside"):
        out = tnpx.predict(trained, context, targets, allow_extrapolation=True)
    assert np.isfinite(out.filter(like="t2m_").to_numpy()).all()


@pytest.mark.filterwarnings("ignore:.*context-range width")  # targets beyond the context's too
def test_measured_limits_decide(trained, tmp_path):
    limits = {"warn_at": 0.75, "refuse_at": 3.0, "measured_on": "64 validation tasks"}
    model = variant(trained, tmp_path, "measured", limits=limits)
    context, _ = cells()
    _, near = cells(lat_shift=4.0)  # < 0.73 widths: inside the measured warn_at
    quiet_predict(model, context, near)
    _, north = cells(lat_shift=10.0)  # 1.8 widths
    with pytest.warns(UserWarning, match="past 0.75 training-range widths, measured on 64"):
        tnpx.predict(model, context, north)


def test_an_old_checkpoint_without_a_range_predicts_as_before(trained, tmp_path):
    old = variant(trained, tmp_path, "old", range=None, limits=None)
    context, targets = cells()
    before = quiet_predict(trained, context, targets)
    context_north, north = cells(lat_shift=30.0)  # both 30 degrees north: silent, as before
    quiet_predict(old, context_north, north)
    np.testing.assert_array_equal(quiet_predict(old, context, targets), before)


def test_scaling_by_the_context_is_not_checked(trained):
    context, targets = cells(time_scale=24.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the context-range map's own notes
        tnpx.predict(trained, context, targets, scaling="context")


def test_an_unreadable_range_is_refused_in_one_line(trained, tmp_path):
    bad = variant(trained, tmp_path, "bad", range=[[0.0, 1.0]])
    context, targets = cells()
    with pytest.raises(CheckpointError, match="stored training range cannot be read"):
        tnpx.predict(bad, context, targets)


def test_the_cli_and_npregressor_refuse_too(trained, tmp_path, capsys):
    context, targets = cells(time_scale=24.0)
    context.to_csv(tmp_path / "c.csv", index=False)
    targets.to_csv(tmp_path / "t.csv", index=False)
    args = ["predict", str(trained), "--context", str(tmp_path / "c.csv"),
            "--targets", str(tmp_path / "t.csv"), "--out", str(tmp_path / "out.csv")]  # fmt: skip
    assert main(args) != 0
    assert "another unit" in capsys.readouterr().err
    assert main([*args, "--allow-extrapolation"]) == 0
    assert "widths outside" in capsys.readouterr().err
    x_cols = ["lat", "lon", "time", "z"]
    reg = tnpx.NPRegressor(str(trained)).fit(context[x_cols].to_numpy(), context["t2m"].to_numpy())
    with pytest.raises(DataError, match="another unit"):
        reg.predict(targets[x_cols].to_numpy())
