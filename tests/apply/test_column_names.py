"""Issue 51, item 1: a checkpoint that stores its column names (a model trained on a user's
data) has the user's columns matched to them by name, whatever their order, in tnpx.predict,
tnpx predict and NPRegressor; a renamed, unknown or missing column is refused in one line that
lists the names the model knows. Positional matching only where there are no names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tnpx
from tests.helpers.small_models import small_model
from tnpx.cli import main
from tnpx.user_files import DataError

X_NAMES, Y_NAMES = ["latitude", "longitude", "time"], ["sst", "wind"]
NORMALISATION = {
    "x": {"columns": X_NAMES, "loc": [0.0, 150.0, 350000.0], "scale": [5.0, 20.0, 400.0]},
    "y": {"columns": Y_NAMES, "loc": [300.0, 5.0], "scale": [2.0, 3.0]},
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An untrained small TNP on (latitude, longitude, time) -> (sst, wind), saved with the
    normalisation training on a user's data stores."""
    path = tmp_path_factory.mktemp("names") / "model.pt"
    tnpx.save(small_model("tnp", dim_x=3, dim_y=2), path, normalisation=NORMALISATION)
    return path


def tables(seed: int = 0, n_ctx: int = 12, n_tgt: int = 7):
    """A context and targets with the model's columns, in the model's order."""
    rng = np.random.default_rng(seed)

    def inputs(n):
        return {
            "latitude": rng.uniform(-5, 5, n),
            "longitude": rng.uniform(130, 170, n),
            "time": rng.uniform(349500, 350500, n),
        }

    ctx = pd.DataFrame({**inputs(n_ctx), "sst": rng.normal(300, 2, n_ctx),
                        "wind": rng.normal(5, 3, n_ctx)})  # fmt: skip
    return ctx, pd.DataFrame(inputs(n_tgt))


def test_x_cols_in_another_order_predict_the_same(checkpoint):
    ctx, tgt = tables()
    expected = tnpx.predict(checkpoint, ctx, tgt)
    assert list(expected.columns[:3]) == X_NAMES
    turned = tnpx.predict(checkpoint, ctx, tgt, x_cols=["longitude", "latitude", "time"],
                          y_cols=["wind", "sst"])  # fmt: skip
    # the result keeps the user's order, and its numbers are the same
    assert list(turned.columns[:3]) == ["longitude", "latitude", "time"]
    assert list(turned.columns[3:7]) == ["wind_mean", "wind_std", "wind_lower", "wind_upper"]
    pd.testing.assert_frame_equal(turned[expected.columns], expected)


def test_reordered_table_columns_predict_the_same(checkpoint, tmp_path):
    ctx, tgt = tables(seed=1)
    expected = tnpx.predict(checkpoint, ctx, tgt)
    ctx[["wind", "time", "sst", "longitude", "latitude"]].to_csv(tmp_path / "c.csv", index=False)
    tgt[["time", "longitude", "latitude"]].to_csv(tmp_path / "t.csv", index=False)
    shuffled = tnpx.predict(checkpoint, tmp_path / "c.csv", tmp_path / "t.csv")
    assert list(shuffled.columns[:3]) == ["time", "longitude", "latitude"]  # as the file has
    pd.testing.assert_frame_equal(shuffled[expected.columns], expected, rtol=1e-12)


def test_renamed_columns_are_refused_naming_the_models_columns(checkpoint):
    ctx, tgt = tables()
    names = {"latitude": "lat", "longitude": "lon"}
    with pytest.raises(DataError) as err:
        tnpx.predict(checkpoint, ctx.rename(columns=names), tgt.rename(columns=names))
    message = str(err.value)
    assert "the model was trained on inputs ['latitude', 'longitude', 'time']" in message
    assert "no column 'latitude'" in message and "rename your columns" in message
    assert "\n" not in message
    with pytest.raises(DataError, match="'lat' .* is not one of them: rename your columns"):
        tnpx.predict(checkpoint, ctx.rename(columns=names), tgt.rename(columns=names),
                     x_cols=["lat", "lon", "time"])  # fmt: skip


def test_a_missing_column_is_refused(checkpoint):
    ctx, tgt = tables()
    with pytest.raises(DataError, match=r"targets DataFrame: .*inputs \[.*\]; the table has no "
                                        r"column 'time'"):  # fmt: skip
        tnpx.predict(checkpoint, ctx, tgt.drop(columns="time"))
    with pytest.raises(DataError, match="context DataFrame: .*outputs \\['sst', 'wind'\\]; the "
                                        "table has no column 'wind'"):  # fmt: skip
        tnpx.predict(checkpoint, ctx.drop(columns="wind"), tgt)
    with pytest.raises(DataError, match="x_cols .* leaves out 'time': the model was trained on"):
        tnpx.predict(checkpoint, ctx, tgt, x_cols=["longitude", "latitude"])
    with pytest.raises(DataError, match="names 'sst' twice"):
        tnpx.predict(checkpoint, ctx, tgt, y_cols=["sst", "sst"])


def test_the_cli_matches_x_cols_by_name(checkpoint, tmp_path, capsys):
    ctx, tgt = tables(seed=2)
    ctx.to_csv(tmp_path / "c.csv", index=False)
    tgt.to_csv(tmp_path / "t.csv", index=False)
    base = ["predict", str(checkpoint), "--context", str(tmp_path / "c.csv"),
            "--targets", str(tmp_path / "t.csv")]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a.csv"), "--x-cols", *X_NAMES]) == 0
    turned = ["longitude", "latitude", "time"]
    assert main([*base, "--out", str(tmp_path / "b.csv"), "--x-cols", *turned]) == 0
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert list(b.columns[:3]) == turned
    pd.testing.assert_frame_equal(b[a.columns], a)
    capsys.readouterr()
    assert main([*base, "--x-cols", "lon", "lat", "time"]) == 2  # a data error
    err = capsys.readouterr().err
    assert "'lon' (named by x_cols (--x-cols)) is not one of them" in err
    assert "['latitude', 'longitude', 'time']" in err


def test_npregressor_matches_dataframe_columns_by_name(checkpoint):
    ctx, tgt = tables(seed=3)
    expected = tnpx.predict(checkpoint, ctx, tgt)[["sst_mean", "wind_mean"]].to_numpy()
    y = ctx[Y_NAMES].to_numpy()
    # fitted in another order than the model's: matched to the model by name
    turned = ["time", "longitude", "latitude"]
    reg = tnpx.NPRegressor(str(checkpoint)).fit(ctx[turned], y)
    assert list(reg.feature_names_in_) == turned
    np.testing.assert_allclose(reg.predict(tgt[turned]), expected, rtol=1e-12)
    # predict takes a DataFrame's columns by name, in any order
    np.testing.assert_allclose(reg.predict(tgt[X_NAMES]), expected, rtol=1e-12)
    with pytest.raises(ValueError, match=r"fitted on columns \['time', 'longitude', 'latitude'\]; "
                                         "'lat' is not one of them"):  # fmt: skip
        reg.predict(tgt.rename(columns={"latitude": "lat"}))
    with pytest.raises(ValueError, match="'time' is missing"):
        reg.predict(tgt[["latitude", "longitude"]])
    # renamed at fit: refused against the model's names
    with pytest.raises(
        DataError,
        match=r"X: the model was trained on inputs \['latitude', "
        r"'longitude', 'time'\]; 'lat' .* is not one of them",
    ):
        tnpx.NPRegressor(str(checkpoint)).fit(ctx[X_NAMES].rename(columns={"latitude": "lat"}), y)


def test_npregressor_takes_a_bare_arrays_columns_by_position(checkpoint):
    ctx, tgt = tables(seed=4)
    expected = tnpx.predict(checkpoint, ctx, tgt)[["sst_mean", "wind_mean"]].to_numpy()
    reg = tnpx.NPRegressor(str(checkpoint)).fit(ctx[X_NAMES].to_numpy(), ctx[Y_NAMES].to_numpy())
    np.testing.assert_allclose(reg.predict(tgt[X_NAMES].to_numpy()), expected, rtol=1e-12)
