"""tnpx.ContextStream of a checkpoint that stores a normalisation (a model trained on a user's
data): observations and targets in the user's units, predictions mapped back as tnpx.predict
maps them; without a stored map, the stream works in the model's units as it always did."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch.distributions import Normal
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import small_model
from tnpx.checkpoint import CheckpointError
from tnpx.distributions import JointGaussian, LatentMixture

# Days around 100 and masses around 1000: far from a model's training units.
X_LOC, X_SCALE, Y_LOC, Y_SCALE = 100.0, 4.0, 1000.0, 40.0
NORMALISATION = {
    "x": {"loc": [X_LOC], "scale": [X_SCALE], "columns": ["day"]},
    "y": {"loc": [Y_LOC], "scale": [Y_SCALE], "columns": ["mass"]},
}


def saved(tmp_path, name: str = "tnp", normalisation=NORMALISATION, **extra):
    """A small untrained ``name`` saved with a stored normalisation (none if None)."""
    model = small_model(name, **extra)
    path = tmp_path / f"{name}.pt"
    if normalisation is None:
        tnpx.save(model, path)
    else:
        tnpx.save(model, path, normalisation=normalisation)
    return path


def user_task(b: int = 1, n_ctx: int = 6, n_tgt: int = 4, seed: int = 0):
    """``(xc, yc, xt)`` float64 in the user's units: days 92-108, masses about 1000."""
    g = torch.Generator().manual_seed(seed)
    xc = 92 + 16 * torch.rand(b, n_ctx, 1, generator=g, dtype=torch.float64)
    yc = Y_LOC + 30 * torch.randn(b, n_ctx, 1, generator=g, dtype=torch.float64)
    xt = 90 + 20 * torch.rand(b, n_tgt, 1, generator=g, dtype=torch.float64)
    return xc, yc, xt


def to_model(x: torch.Tensor, y: torch.Tensor | None = None):
    """The float64 re-derivation of the stored map, cast to the model's float32."""
    xm = ((x.double() - X_LOC) / X_SCALE).float()
    return xm if y is None else (xm, ((y.double() - Y_LOC) / Y_SCALE).float())


@pytest.mark.parametrize("name", ["tnp", "inc-tnp"])
def test_stream_predicts_what_tnpx_predict_does_in_user_units(tmp_path, name):
    path = saved(tmp_path, name)
    xc, yc, xt = user_task()
    stream = tnpx.ContextStream(path, xc, yc)
    assert stream.units is not None
    pred = stream.predict(xt)
    assert isinstance(pred, Normal) and pred.mean.dtype == torch.float64
    context = pd.DataFrame({"day": xc[0, :, 0].numpy(), "mass": yc[0, :, 0].numpy()})
    expected = tnpx.predict(path, context, pd.DataFrame({"day": xt[0, :, 0].numpy()}))
    assert expected.attrs["tnpx"]["scaling"] == "stored"
    np.testing.assert_allclose(pred.mean[0, :, 0].numpy(), expected["mass_mean"], rtol=1e-6)
    np.testing.assert_allclose(pred.stddev[0, :, 0].numpy(), expected["mass_std"], rtol=1e-5)


@pytest.mark.parametrize("name", ["tnp", "inc-tnp"])
def test_incremental_adds_equal_one_add_and_the_float64_map(tmp_path, name):
    path = saved(tmp_path, name)
    xc, yc, xt = user_task(b=2, n_ctx=7, seed=1)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 3] = False
    yc[1, 3] = float("nan")  # an unobserved entry may hold anything
    whole = tnpx.ContextStream(path, xc, yc, mask)
    grown = tnpx.ContextStream(path, batch=2)
    for lo, hi in ((0, 2), (2, 3), (3, 7)):
        grown.add(xc[:, lo:hi], yc[:, lo:hi], mask[:, lo:hi])
    a, b = whole.predict(xt), grown.predict(xt)
    assert_close(a.mean, b.mean, rtol=1e-5, atol=1e-3)
    assert_close(a.stddev, b.stddev, rtol=1e-5, atol=1e-4)
    # the map by hand, in float64, around the model itself
    model = tnpx.load(path).eval()
    xm, ym = to_model(xc, yc)
    with torch.no_grad():
        direct = model(xm, ym, to_model(xt), mask_c=mask)
    assert_close(a.mean, direct.mean.double() * Y_SCALE + Y_LOC, rtol=1e-5, atol=1e-3)
    assert_close(a.stddev, direct.stddev.double() * Y_SCALE, rtol=1e-5, atol=1e-4)
    assert_close(whole.xc[mask], xm[mask])  # the stream holds what it encodes: model units


@pytest.mark.parametrize(
    "name, extra",
    [("np", {}), ("tnp-nd", {"covariance": "cholesky"}), ("tnp-nd", {"covariance": "lowrank"})],
)
def test_every_kind_of_prediction_maps_with_its_spread(tmp_path, name, extra):
    """A latent NP's mixture maps component by component, TNP-ND's joint Gaussian with its
    covariance: means, spreads and densities are those of the model-unit prediction."""
    path = saved(tmp_path, name, **extra)
    xc, yc, xt = user_task(seed=2)
    user = tnpx.ContextStream(path, xc, yc)
    plain = tnpx.ContextStream(path, *to_model(xc, yc), scaling="none")
    assert plain.units is None
    torch.manual_seed(0)
    a = user.predict(xt)
    torch.manual_seed(0)
    b = plain.predict(to_model(xt))
    assert type(a) is type(b) and isinstance(a, (LatentMixture, JointGaussian))
    assert_close(a.mean, b.mean.double() * Y_SCALE + Y_LOC, rtol=1e-6, atol=1e-3)
    assert_close(a.stddev, b.stddev.double() * Y_SCALE, rtol=1e-5, atol=1e-4)
    yt = Y_LOC + 30 * torch.randn(1, xt.shape[1], 1, dtype=torch.float64)
    ym = (yt - Y_LOC) / Y_SCALE
    log_scale = math.log(Y_SCALE)  # densities of y = loc + scale * y_model
    assert_close(a.log_prob(yt), b.log_prob(ym.float()).double() - log_scale, rtol=1e-4, atol=1e-4)
    n = xt.shape[1]
    joint = b.joint_log_prob(ym.float()).double() - n * log_scale
    assert_close(a.joint_log_prob(yt), joint, rtol=1e-4, atol=1e-3)


def test_without_a_stored_map_the_stream_is_in_the_models_units(tmp_path):
    model = small_model("tnp")
    xc_user, yc_user, xt_user = user_task()
    (xc, yc), xt = to_model(xc_user, yc_user), to_model(xt_user)
    for source in (model, saved(tmp_path, normalisation=None)):
        stream = tnpx.ContextStream(source, xc, yc)
        assert stream.units is None
        with torch.no_grad():
            expected = model(xc, yc, xt)
        assert_close(stream.predict(xt).mean, expected.mean)
        with pytest.raises(ValueError, match="dtype"):  # the model's own rules, as before
            stream.add(xc.double(), yc.double())
    # "none" keeps the model's units for a model that stores a map
    stream = tnpx.ContextStream(saved(tmp_path), xc, yc, scaling="none")
    assert stream.units is None
    with torch.no_grad():
        assert_close(stream.predict(xt).mean, model(xc, yc, xt).mean)


def test_scaling_choices_that_cannot_apply_fail_in_one_line(tmp_path):
    model = small_model("tnp")
    with pytest.raises(ValueError, match="does not apply to a stream"):
        tnpx.ContextStream(saved(tmp_path), scaling="context")
    with pytest.raises(ValueError, match="stores no normalisation.*'auto' or 'none'"):
        tnpx.ContextStream(model, scaling="stored")
    with pytest.raises(ValueError, match="scaling must be one of auto, stored, none"):
        tnpx.ContextStream(model, scaling="bogus")
    with pytest.raises(TypeError, match="names an architecture"):
        tnpx.ContextStream("tnp")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        tnpx.ContextStream(tmp_path / "missing.pt")


def test_a_prediction_that_is_not_finite_is_refused(tmp_path, monkeypatch):
    stream = tnpx.ContextStream(saved(tmp_path), *user_task()[:2])
    xt = user_task()[2].float()

    def huge(encoding, xt_model):  # finite in the model's units, beyond float32 in the user's
        mean = torch.zeros(*xt_model.shape[:2], 1)
        mean[0, 2, 0] = 3e38
        return Normal(mean, torch.ones_like(mean))

    monkeypatch.setattr(stream.model, "decode_targets", huge)
    with pytest.raises(tnpx.DataError, match="task 0, target 2, output 0 is inf") as err:
        stream.predict(xt)  # float32 targets: a float32 prediction
    assert "\n" not in str(err.value)
    assert stream.predict(xt.double()).mean.dtype == torch.float64  # fits in float64


def test_a_scaled_family_is_refused_when_the_stream_is_made_and_an_unscaled_one_streams(
    tmp_path,
):
    """Rain is scaled (loc 0, scale the training values' RMS): the stream cannot map a
    bernoulli-gamma prediction, so it says so before encoding anything. Counts are left as they
    are (an identity map): a Poisson model streams, its prediction as the model's own."""
    rain = {"x": NORMALISATION["x"], "y": {"loc": [0.0], "scale": [3.5], "columns": ["rain"]}}
    path = saved(tmp_path, "tnp", rain, likelihood="bernoulli-gamma")
    xc, _, xt = user_task()
    with pytest.raises(ValueError, match="this bernoulli-gamma model's outputs are scaled"):
        tnpx.ContextStream(path, xc, torch.rand(1, 6, 1, dtype=torch.float64))
    assert tnpx.ContextStream(path, scaling="none").units is None  # the model's units: fine
    counts = {"x": NORMALISATION["x"], "y": {"loc": [0.0], "scale": [1.0], "columns": ["cases"]}}
    path = saved(tmp_path, "tnp", counts, likelihood="poisson")
    yc = torch.tensor([[[0.0], [3.0], [1.0], [7.0], [2.0], [0.0]]], dtype=torch.float64)
    pred = tnpx.ContextStream(path, xc, yc).predict(xt)
    model = tnpx.load(path).eval()
    with torch.no_grad():
        direct = model(to_model(xc), yc.float(), to_model(xt))
    assert_close(pred.mean, direct.mean)
