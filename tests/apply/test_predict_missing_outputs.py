"""Missing output values (NaN) in a prediction's context: masked for a model that reads them
(``missing_outputs=True``), in ``tnpx.predict``, ``tnpx predict`` and ``NPRegressor``. Each
prediction equals a float64 re-derivation: each output standardised by its observed context
values, the model called with an arbitrary number at the missing place under ``mask_yc``.
Everything else (another model, a row without any output) is one line naming the row."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.small_models import small_model
from tnpx.cli import main
from tnpx.user_files import DataError

DOMAIN = (-2.0, 2.0)
MISSING = [(3, "y1"), (7, "y0"), (8, "y1")]  # (row, column): each row keeps one output


def tables(seed: int = 0):
    """A context of 12 rows (x, y0, y1) with the ``MISSING`` values NaN, and 6 targets."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, 12))
    ctx = pd.DataFrame({"x": x, "y0": np.sin(x) + 3, "y1": 20 * np.cos(x / 2)})
    for row, col in MISSING:
        ctx.loc[row, col] = np.nan
    return ctx, pd.DataFrame({"x": np.linspace(-1, 11, 6)})


def reads_missing(**extra):
    return small_model("tnp", 1, 2, missing_outputs=True, **extra)


def rederived(model, ctx: pd.DataFrame, targets: pd.DataFrame, filler: float):
    """The predicted mean and std ``[n_tgt, 2]`` in the user's units, float64 maps by hand."""
    x, y = ctx["x"].to_numpy(), ctx[["y0", "y1"]].to_numpy()
    observed = ~np.isnan(y)
    lo, hi = x.min(), x.max()
    to_model = lambda v: (v - lo) / (hi - lo) * (DOMAIN[1] - DOMAIN[0]) + DOMAIN[0]  # noqa: E731
    mean = np.array([y[observed[:, j], j].mean() for j in range(2)])
    std = np.array([y[observed[:, j], j].std() for j in range(2)])
    y_model = np.where(observed, (y - mean) / std, filler)
    as32 = lambda a: torch.tensor(a, dtype=torch.float32)[None]  # noqa: E731
    with torch.no_grad():
        pred = model(
            as32(to_model(x)[:, None]),
            as32(y_model),
            as32(to_model(targets["x"].to_numpy())[:, None]),
            mask_yc=torch.tensor(observed)[None],
        )
    return pred.mean[0].double().numpy() * std + mean, pred.stddev[0].double().numpy() * std


@pytest.mark.parametrize("filler", [0.0, 1e3])
def test_predict_masks_a_missing_output(filler):
    model = reads_missing()
    ctx, targets = tables()
    before = ctx.copy()
    result = tnpx.predict(model, ctx, targets, domain=DOMAIN)
    pd.testing.assert_frame_equal(ctx, before)  # the user's table is unchanged
    mean, std = rederived(model, ctx, targets, filler)  # whatever stands there: masked
    for j, col in enumerate(["y0", "y1"]):
        np.testing.assert_allclose(result[f"{col}_mean"], mean[:, j], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result[f"{col}_std"], std[:, j], rtol=1e-5, atol=1e-6)
    assert np.isfinite(result.to_numpy()).all()
    assert result.attrs["tnpx"]["output_mean_std"]["y1"][0] == pytest.approx(np.nanmean(ctx["y1"]))


def test_the_estimator_masks_as_predict_does():
    model = reads_missing()
    ctx, targets = tables()
    X, y = ctx[["x"]].to_numpy(), ctx[["y0", "y1"]].to_numpy()
    y_before = y.copy()
    reg = tnpx.NPRegressor(model, domain=DOMAIN).fit(X, y)
    mean, std = reg.predict(targets[["x"]].to_numpy(), return_std=True)
    np.testing.assert_array_equal(y, y_before)  # the caller's array is unchanged
    expected_mean, expected_std = rederived(model, ctx, targets, 0.0)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(std, expected_std, rtol=1e-5, atol=1e-6)


def test_tnpx_predict_command_masks_as_predict_does(tmp_path):
    model = reads_missing()
    ctx, targets = tables()
    tnpx.save(model, tmp_path / "model.pt")
    ctx.to_csv(tmp_path / "ctx.csv", index=False)  # NaN: an empty cell
    targets.to_csv(tmp_path / "tgt.csv", index=False)
    args = ["predict", str(tmp_path / "model.pt"), "--context", str(tmp_path / "ctx.csv"),
            "--targets", str(tmp_path / "tgt.csv"), "--out", str(tmp_path / "pred.csv"),
            "--domain", "-2", "2"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    written = pd.read_csv(tmp_path / "pred.csv")
    mean, _ = rederived(model, ctx, targets, 0.0)
    np.testing.assert_allclose(written[["y0_mean", "y1_mean"]], mean, rtol=1e-5, atol=1e-5)


def test_a_model_that_does_not_read_missing_outputs_says_which_do():
    ctx, targets = tables()
    plain = small_model("tnp", 1, 2)
    with pytest.raises(DataError) as err:
        tnpx.predict(plain, ctx, targets, domain=DOMAIN)
    text = str(err.value)
    assert "\n" not in text and "row 3" in text and "'y1'" in text
    assert "missing_outputs" in text and "2 more row(s)" in text
    with pytest.raises(ValueError, match=r"Input y contains NaN at row 3 \(output 1\)") as err:
        tnpx.NPRegressor(plain, domain=DOMAIN).fit(ctx[["x"]], ctx[["y0", "y1"]])
    assert "missing_outputs" in str(err.value) and "\n" not in str(err.value)


def test_a_row_without_any_output_is_refused_with_its_row_or_dropped():
    model = reads_missing()
    ctx, targets = tables()
    ctx.loc[5, ["y0", "y1"]] = np.nan
    with pytest.raises(DataError) as err:
        tnpx.predict(model, ctx, targets, domain=DOMAIN)
    text = str(err.value)
    assert "\n" not in text and "row 5" in text and "'y0', 'y1'" in text
    with pytest.raises(ValueError, match="Input y contains NaN at row 5 .*every output"):
        tnpx.NPRegressor(model, domain=DOMAIN).fit(ctx[["x"]], ctx[["y0", "y1"]])
    with pytest.warns(UserWarning, match="dropped 1 of 12 rows"):
        dropped = tnpx.predict(model, ctx, targets, domain=DOMAIN, drop_missing=True)
    without = tnpx.predict(model, ctx.drop(index=5), targets, domain=DOMAIN)
    pd.testing.assert_frame_equal(dropped, without)


def test_an_output_missing_from_every_row_is_named():
    model = reads_missing()
    ctx, targets = tables()
    ctx["y1"] = np.nan
    ctx.loc[:, "y0"] = ctx["y0"].fillna(1.0)
    with pytest.raises(DataError, match="'y1' have no value in the context"):
        tnpx.predict(model, ctx, targets, domain=DOMAIN)
