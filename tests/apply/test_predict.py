"""tnpx.predict: user data in, predictions in the user's units out: the result table, the
scaling to and from the model's units, the training domain, and streamed (chunked) prediction.
Bad input is tested in ``test_predict_errors.py``, ``tnpx predict`` in ``test_predict_cli.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.predict_inputs import DOMAIN, SIZES, frames, quiet_predict, tiny
from tests.helpers.tiny import write_tiny
from tnpx.apply.predict import can_stream, training_domain
from tnpx.config import config_to_yaml, load_config


def direct(model, xc, yc, xt):
    """The model called on arrays ``[n, d]`` as one task: mean and std ``[n_tgt, dim_y]``."""

    def t(a):
        return torch.tensor(np.array(a, dtype=np.float64), dtype=torch.float32)[None]

    with torch.no_grad():
        pred = model(t(xc), t(yc), t(xt))
    return pred.mean[0].double().numpy(), pred.stddev[0].double().numpy()


# -- the result table --------------------------------------------------------------------------
def test_columns_and_row_order():
    model = tiny(dim_y=2)
    ctx, tgt = frames(dim_y=2)
    tgt = tgt.sample(frac=1.0, random_state=1)  # shuffled, with a non-trivial index
    out = quiet_predict(model, ctx, tgt, domain=DOMAIN)
    stats = ["mean", "std", "lower", "upper"]
    assert list(out.columns) == ["x", *[f"{y}_{s}" for y in ("y0", "y1") for s in stats]]
    assert list(out.index) == list(tgt.index)
    np.testing.assert_array_equal(out["x"].to_numpy(), tgt["x"].to_numpy())
    assert (out["y0_std"] > 0).all() and (out["y0_lower"] < out["y0_mean"]).all()


def test_interval_is_the_gaussian_central_interval():
    model = tiny()
    ctx, tgt = frames()
    out = quiet_predict(model, ctx, tgt, domain=DOMAIN, level=0.5)
    half = 0.6744897501960817 * out["y_std"]  # Phi^-1(0.75)
    np.testing.assert_allclose(out["y_upper"] - out["y_mean"], half, rtol=1e-9)
    np.testing.assert_allclose(out["y_mean"] - out["y_lower"], half, rtol=1e-9)


# -- scaling -----------------------------------------------------------------------------------
def test_scaling_is_the_documented_affine_map():
    """Inputs: context range -> domain, per column; outputs: context mean / population std."""
    model = tiny(dim_x=2)
    ctx, tgt = frames(dim_x=2)
    domain = (-1.0, 3.0)
    out = quiet_predict(model, ctx, tgt, domain=domain)
    xc, yc, xt = ctx[["x0", "x1"]].to_numpy(), ctx[["y"]].to_numpy(), tgt.to_numpy()
    lo, hi = xc.min(0), xc.max(0)

    def to_model(x):
        return domain[0] + (x - lo) / (hi - lo) * (domain[1] - domain[0])

    mu, sd = yc.mean(0), yc.std(0)
    mean, std = direct(model, to_model(xc), (yc - mu) / sd, to_model(xt))
    np.testing.assert_allclose(out["y_mean"], mean[:, 0] * sd[0] + mu[0], rtol=1e-6)
    np.testing.assert_allclose(out["y_std"], std[:, 0] * sd[0], rtol=1e-5)
    assert out.attrs["tnpx"]["input_ranges"]["x0"] == pytest.approx([lo[0], hi[0]])
    assert out.attrs["tnpx"]["output_mean_std"]["y"] == pytest.approx([mu[0], sd[0]])


@pytest.mark.parametrize("a, b", [(3.5, -40.0), (0.01, 7.0)])
def test_outputs_round_trip_an_affine_change_of_units(a, b):
    model = tiny()
    ctx, tgt = frames()
    base = quiet_predict(model, ctx, tgt, domain=DOMAIN)
    moved = ctx.assign(y=a * ctx["y"] + b)
    out = quiet_predict(model, moved, tgt, domain=DOMAIN)
    np.testing.assert_allclose(out["y_mean"], a * base["y_mean"] + b, rtol=1e-6, atol=1e-5 * a)
    np.testing.assert_allclose(out["y_std"], abs(a) * base["y_std"], rtol=1e-5)


@pytest.mark.parametrize("c, d", [(7.0, 100.0), (1e-3, -2.0)])
def test_prediction_is_invariant_to_an_affine_change_of_input_units(c, d):
    model = tiny()
    ctx, tgt = frames()
    base = quiet_predict(model, ctx, tgt, domain=DOMAIN)
    out = quiet_predict(
        model, ctx.assign(x=c * ctx["x"] + d), tgt.assign(x=c * tgt["x"] + d), domain=DOMAIN
    )
    np.testing.assert_allclose(out["y_mean"], base["y_mean"], rtol=1e-5)
    np.testing.assert_allclose(out["y_std"], base["y_std"], rtol=1e-5)


def test_prediction_at_a_target_does_not_depend_on_the_other_targets():
    model = tiny()
    ctx, tgt = frames()
    full = quiet_predict(model, ctx, tgt, domain=DOMAIN)
    part = quiet_predict(model, ctx, tgt.iloc[:3], domain=DOMAIN)
    np.testing.assert_allclose(part["y_mean"], full["y_mean"].iloc[:3], rtol=1e-6)


def test_switching_scaling_off_passes_values_unchanged():
    model = tiny()
    ctx, tgt = frames()
    ctx = ctx.assign(x=(ctx["x"] - 20) / 5, y=(ctx["y"] - 280) / 3)
    tgt = tgt.assign(x=(tgt["x"] - 20) / 5)
    out = quiet_predict(model, ctx, tgt, scale_inputs=False, standardise_outputs=False)
    mean, std = direct(model, ctx[["x"]], ctx[["y"]], tgt[["x"]])
    np.testing.assert_allclose(out["y_mean"], mean[:, 0], rtol=1e-6)
    np.testing.assert_allclose(out["y_std"], std[:, 0], rtol=1e-6)
    assert out.attrs["tnpx"] == {"domain": None, "input_ranges": None, "output_mean_std": None}


def test_scales_given_by_hand():
    model = tiny()
    ctx, tgt = frames()
    out = quiet_predict(
        model, ctx, tgt, domain=(0.0, 1.0), input_scale=(10.0, 30.0), output_scale=(280.0, 4.0)
    )
    mean, std = direct(
        model, (ctx[["x"]] - 10) / 20, (ctx[["y"]] - 280) / 4, (tgt[["x"]] - 10) / 20
    )
    np.testing.assert_allclose(out["y_mean"], mean[:, 0] * 4 + 280, rtol=1e-6)
    np.testing.assert_allclose(out["y_std"], std[:, 0] * 4, rtol=1e-5)
    with pytest.raises(ValueError, match="output_scale"):
        tnpx.predict(model, ctx, tgt, domain=DOMAIN, output_scale=(0.0, 0.0))


def test_domain_comes_from_the_checkpoint_the_trainer_writes(tmp_path):
    cfg = load_config(write_tiny(tmp_path), ["data.domain=[0.0,4.0]"])
    model = tnpx.build_model(cfg.model["name"], 1, 1, **cfg.model_options()).eval()
    path = tmp_path / "model.pt"
    tnpx.save(model, path, experiment=config_to_yaml(cfg))  # as tnpx.training.loop.fit does
    ctx, tgt = frames()
    out = quiet_predict(path, ctx, tgt)  # no warning: the domain is known
    assert out.attrs["tnpx"]["domain"] == [[0.0, 4.0]]
    by_hand = quiet_predict(model, ctx, tgt, domain=(0.0, 4.0))
    pd.testing.assert_frame_equal(out, by_hand)


def test_unknown_domain_falls_back_with_a_warning(tmp_path):
    model = tiny()
    tnpx.save(model, tmp_path / "bare.pt")
    ctx, tgt = frames()
    for source in (model, tmp_path / "bare.pt"):
        with pytest.warns(UserWarning, match=r"domain is unknown.*\[-2.0, 2.0\]"):
            out = tnpx.predict(source, ctx, tgt)
        assert out.attrs["tnpx"]["domain"] == [[-2.0, 2.0]]


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"name": "gp", "layout": "kr", "domain": [-1.0, 1.0]}, (-1.0, 1.0)),
        ({"name": "gp", "layout": "uniform", "ctx_range": [-2.0, 2.0], "shift": 1.0}, (-1, 3)),
        ({"name": "gp", "layout": "uniform", "input_distribution": "bimodal"}, (-4.0, 4.0)),
        ({"name": "sawtooth", "ctx_range": [0.0, 3.0]}, (0.0, 3.0)),
    ],
)
def test_training_domain_of_each_sampler(data, expected):
    cfg = load_config(None, [f"data.{k}={v}" for k, v in data.items()])
    assert training_domain(cfg) == expected


def test_empty_context_predicts_the_prior_with_a_warning():
    model = tiny()
    _, tgt = frames()
    empty = pd.DataFrame({"x": [], "y": []})
    with pytest.warns(UserWarning, match="prior"):
        out = tnpx.predict(model, empty, tgt, domain=DOMAIN)
    xt = tgt[["x"]].to_numpy()
    lo, hi = xt.min(), xt.max()  # no context range: the targets' range maps onto the domain
    mean, std = direct(model, np.zeros((0, 1)), np.zeros((0, 1)), -2 + 4 * (xt - lo) / (hi - lo))
    np.testing.assert_allclose(out["y_mean"], mean[:, 0], rtol=1e-6)
    np.testing.assert_allclose(out["y_std"], std[:, 0], rtol=1e-6)
    with pytest.warns(UserWarning, match="prior"):
        out = tnpx.predict(model, empty, tgt, domain=DOMAIN, output_scale=(10.0, 2.0))
    np.testing.assert_allclose(out["y_mean"], mean[:, 0] * 2 + 10, rtol=1e-6)


@pytest.mark.parametrize("ctx", [{"x": [15.0], "y": [3.0]}, {"x": [1.0, 2.0], "y": [7.0, 7.0]}])
def test_one_point_or_a_constant_column_does_not_divide_by_zero(ctx):
    model = tiny()
    _, tgt = frames()
    with pytest.warns(UserWarning) as caught:
        out = tnpx.predict(model, pd.DataFrame(ctx), tgt, domain=DOMAIN)
    assert any("no spread" in str(w.message) for w in caught)
    assert np.isfinite(out.drop(columns="x").to_numpy()).all()
    assert out.attrs["tnpx"]["output_mean_std"]["y"] == [ctx["y"][0], 1.0]


def test_far_targets_warn():
    model = tiny()
    ctx, _ = frames()  # inputs in [10, 30]
    with pytest.warns(UserWarning, match="2 of 3 targets .* extrapolate poorly"):
        tnpx.predict(model, ctx, pd.DataFrame({"x": [20.0, 60.0, -30.0]}), domain=DOMAIN)


# -- streaming ---------------------------------------------------------------------------------
def test_streamed_equals_one_shot():
    model = tiny()
    ctx, tgt = frames(n_tgt=50)
    one = quiet_predict(model, ctx, tgt, domain=DOMAIN, chunk_size=10**6)
    chunked = quiet_predict(model, ctx, tgt, domain=DOMAIN, chunk_size=7)
    np.testing.assert_allclose(chunked.to_numpy(), one.to_numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name, sizes",
    [("np", {"dim_model": 16, "dim_latent": 8, "n_samples": 4}), ("tnp-nd", {**SIZES, "rank": 2})],
)
def test_models_that_cannot_stream_are_called_once(name, sizes):
    torch.manual_seed(0)
    model = tnpx.build_model(name, 1, 1, **sizes).eval()
    assert not can_stream(model) and can_stream(tiny())
    ctx, tgt = frames()
    out = quiet_predict(model, ctx, tgt, domain=DOMAIN, chunk_size=2)
    assert len(out) == len(tgt) and np.isfinite(out["y_std"]).all()
