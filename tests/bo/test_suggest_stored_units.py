"""The BoTorch adapter with a checkpoint that stores a normalisation (a model trained on a
user's data): NPSurrogate and suggest map the user's X and Y with it, the posterior is in the
user's units and equals tnpx.predict's; without one, BO's per-call maps are unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.testing import assert_close

import tnpx

pytest.importorskip("botorch", reason="the BoTorch adapter needs the bo extra")
from tnpx.bo import NPSurrogate, suggest  # noqa: E402
from tnpx.bo import suggestion as suggestion_module  # noqa: E402
from tnpx.cli import main  # noqa: E402

# Days around 100, costs around 1000; the GP's lengthscale of 1 is 10 days here.
X_LOC, X_SCALE, Y_LOC, Y_SCALE = 100.0, 10.0, 1000.0, 50.0
NORMALISATION = {
    "x": {"loc": [X_LOC], "scale": [X_SCALE], "columns": ["day"]},
    "y": {"loc": [Y_LOC], "scale": [Y_SCALE], "columns": ["cost"]},
}
BOUNDS = torch.tensor([[80.0], [130.0]], dtype=torch.float64)
VALLEY = 112.0


def oracle():
    return tnpx.build_model("gp-oracle", kernel="rbf", lengthscale=1.0, noise_ctx=0.01)


def saved(tmp_path, normalisation=NORMALISATION):
    path = tmp_path / "model.pt"
    if normalisation is None:
        tnpx.save(oracle(), path)
    else:
        tnpx.save(oracle(), path, normalisation=normalisation)
    return path


def observations():
    """Costs of a valley at day 112, in the user's units ``[6, 1]`` each."""
    X = torch.tensor([[80.0], [90.0], [100.0], [110.0], [120.0], [130.0]], dtype=torch.float64)
    return X, Y_LOC + Y_SCALE * ((X - VALLEY) / X_SCALE) ** 2


def predicted(path, X, Y, xt: torch.Tensor) -> pd.DataFrame:
    context = pd.DataFrame({"day": X[:, 0].numpy(), "cost": Y[:, 0].numpy()})
    return tnpx.predict(path, context, pd.DataFrame({"day": xt.reshape(-1).numpy()}))


def test_the_surrogate_posterior_is_predicts_in_user_units(tmp_path):
    path = saved(tmp_path)
    X, Y = observations()
    xt = torch.tensor([[[85.0]], [[104.0]], [[112.0]]], dtype=torch.float64)  # [3, 1, 1]
    expected = predicted(path, X, Y, xt)
    bounds = BOUNDS.clone()
    for surrogate in (
        NPSurrogate(path, X, Y),
        NPSurrogate(path, X, Y, bounds=bounds, domain=(-2, 2), standardize=True),  # unused
        NPSurrogate(path, X, Y, scaling="stored"),
    ):
        assert surrogate.stored is not None
        post = surrogate.posterior(xt)
        np.testing.assert_allclose(post.mean.reshape(-1), expected["cost_mean"], rtol=1e-6)
        np.testing.assert_allclose(
            post.variance.reshape(-1).sqrt(), expected["cost_std"], rtol=1e-5
        )
    # the float64 map around the model itself
    with torch.no_grad():
        direct = oracle()(
            ((X - X_LOC) / X_SCALE).float()[None],
            ((Y - Y_LOC) / Y_SCALE).float()[None],
            ((xt.reshape(1, -1, 1) - X_LOC) / X_SCALE).float(),
        )
    assert_close(post.mean.reshape(-1), direct.mean.double().reshape(-1) * Y_SCALE + Y_LOC)
    # "context": BO's per-call maps, as a model object gets them
    by_context = NPSurrogate(path, X, Y, bounds, (-2, 2), standardize=True, scaling="context")
    plain = NPSurrogate(oracle(), X, Y, bounds, (-2, 2), standardize=True)
    assert by_context.stored is None
    assert_close(by_context.posterior(xt).mean, plain.posterior(xt).mean)
    assert not torch.allclose(by_context.posterior(xt).mean, post.mean)


def test_conditioning_keeps_the_stored_map(tmp_path):
    path = saved(tmp_path)
    X, Y = observations()
    more = NPSurrogate(path, X[:4], Y[:4]).condition_on_observations(X[4:], Y[4:])
    xt = torch.tensor([[[95.0]], [[121.0]]], dtype=torch.float64)
    assert_close(more.posterior(xt).mean, NPSurrogate(path, X, Y).posterior(xt).mean)
    with pytest.raises(ValueError, match="encoding"):  # an encoding is of model-unit values
        NPSurrogate(path, X, Y, encoding=tnpx.ContextStream(oracle()).encoding)


def test_suggest_finds_the_valley_inside_the_users_bounds(tmp_path, monkeypatch):
    path = saved(tmp_path)
    X, Y = observations()
    surrogates = []
    make = suggestion_module.make_acquisition

    def recording(name, model, best_f):
        surrogates.append(model)
        return make(name, model, best_f)

    monkeypatch.setattr(suggestion_module, "make_acquisition", recording)
    point = suggest(path, X, Y, BOUNDS)
    assert point.shape == (1, 1) and 80 <= point.item() <= 130
    assert abs(point.item() - VALLEY) < 5
    # the surrogate suggest optimised is predict's, in the user's units
    xt = torch.tensor([[[87.0]], [[112.0]]], dtype=torch.float64)
    mean = surrogates[0].posterior(xt).mean.reshape(-1)
    np.testing.assert_allclose(mean, predicted(path, X, Y, xt)["cost_mean"], rtol=1e-6)
    two = suggest(path, X, Y, BOUNDS, "qlogei", q=2)
    assert two.shape == (2, 1) and ((two >= 80) & (two <= 130)).all()
    # maximising the negated costs: the model still sees the costs, its acquisition -y
    top = suggest(path, X, 2 * Y_LOC - Y, BOUNDS, maximise=True)
    assert abs(top.item() - VALLEY) < 5
    negated = surrogates[-1].posterior(xt)
    assert_close(negated.mean.reshape(-1), -(2 * Y_LOC - mean))


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_a_model_without_a_stored_map_keeps_bos_own_maps(tmp_path):
    path = saved(tmp_path, normalisation=None)
    X, Y = observations()
    by_path = suggest(path, X, Y, BOUNDS, domain=(-2, 2))
    by_object = suggest(oracle(), X, Y, BOUNDS, domain=(-2, 2))
    assert_close(by_path, by_object)
    with pytest.raises(ValueError, match="stores no normalisation"):
        suggest(path, X, Y, BOUNDS, domain=(-2, 2), scaling="stored")
    with pytest.raises(ValueError, match="scaling must be one of"):
        NPSurrogate(path, X, Y, scaling="none")


def test_cli_maximise_with_a_stored_map(tmp_path, capsys):
    path = saved(tmp_path)
    X, Y = observations()
    obs = tmp_path / "obs.csv"
    pd.DataFrame({"day": X[:, 0].numpy(), "score": (2 * Y_LOC - Y)[:, 0].numpy()}).to_csv(
        obs, index=False
    )
    args = ["bo", "suggest", str(path), "--observations", str(obs), "--bounds", "80", "130"]
    assert main([*args, "--maximise"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "day" and abs(float(lines[1]) - VALLEY) < 5
