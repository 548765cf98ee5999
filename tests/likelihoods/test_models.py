"""Every model whose head comes from ``likelihood_head`` takes every family; the models whose
prediction is built of Gaussians (latent and bootstrap mixtures, TNP-ND's joint Gaussian,
inc-tnp's causal buffer) refuse any other in one line, and so do the paths that handle Gaussian
predictions only (the BoTorch adapter, chunked decoding); ``tnpx.predict`` takes every family."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.small_models import ALL_MODELS, make_task, small_model, supports
from tests.likelihoods.family_cases import values
from tnpx.batch import Batch
from tnpx.likelihoods import FAMILIES, model_family
from tnpx.models.registry import REGISTRY, hyper_names

HEAD_MODELS = [n for n in ALL_MODELS if "likelihood" in hyper_names(REGISTRY[n])]
# models whose prediction is a mixture of Normals, a joint Gaussian or a Gaussian buffer
GAUSSIAN_ONLY = sorted(
    n for n in HEAD_MODELS if REGISTRY[n].predicts_jointly or REGISTRY[n].buffered_sampling
)


def family_task(family: str, dim_y: int = 2, seed: int = 0) -> Batch:
    xc, _, xt = make_task(2, 6, 5, 1, dim_y, seed=seed)
    key = "beta" if family == "beta" else family
    yc = values(key, (2, 6, dim_y), seed=seed).float()
    yt = values(key, (2, 5, dim_y), seed=seed + 1).float()
    return Batch(xc, yc, xt, yt)


def test_the_gaussian_only_models_are_the_joint_and_buffered_ones():
    assert {"np", "anp", "bnp", "banp", "tnp-nd", "inc-tnp"} <= set(GAUSSIAN_ONLY)
    assert "tnp" in HEAD_MODELS and "tnp" not in GAUSSIAN_ONLY


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "gaussian"])
@pytest.mark.parametrize("name", HEAD_MODELS)
def test_every_head_model_takes_every_family_or_refuses_in_one_line(name, family):
    if not supports(name, 1, 2):
        pytest.skip(f"{name} does not take dim_y=2")
    if name in GAUSSIAN_ONLY:
        with pytest.raises(ValueError, match=f"takes the gaussian likelihood only .*'{family}'"):
            small_model(name, 1, 2, likelihood=family)
        return
    model = small_model(name, 1, 2, likelihood=family)
    assert model_family(model) == family
    batch = family_task(family)
    with torch.no_grad():
        pred = model.predict_batch(batch)
        ll = model.log_likelihood(batch, pred)
    assert pred.mean.shape == (2, 5, 2)
    assert ll.shape == (2,) and torch.isfinite(ll).all()


def test_refusal_is_one_line_naming_the_model():
    with pytest.raises(ValueError) as err:
        tnpx.build_model("tnp-nd", likelihood="poisson")
    message = str(err.value)
    assert "\n" not in message and "tnp-nd" in message and "'poisson'" in message


def test_gp_baselines_do_not_take_a_likelihood():
    for name in ("gp", "mt-gp"):
        if name in REGISTRY:
            with pytest.raises(ValueError, match="does not take \\['likelihood'\\]"):
                tnpx.build_model(name, likelihood="poisson")


def test_predict_takes_a_non_gaussian_model():
    # (tests/apply/test_predict_families.py tests the columns of every family)
    import pandas as pd

    model = small_model("tnp", likelihood={"name": "student-t"})
    context = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 0.0, 3.0]})
    out = tnpx.predict(model, context, pd.DataFrame({"x": [0.5]}), domain=(-2, 2))
    assert list(out.columns) == ["x", "y_mean", "y_std", "y_lower", "y_upper"]


def test_botorch_adapter_refuses_a_non_gaussian_model():
    pytest.importorskip("botorch")
    from tnpx.bo.surrogate import NPSurrogate

    model = small_model("tnp", likelihood="bernoulli")
    x, y = torch.rand(4, 1, dtype=torch.float64), torch.rand(4, 1, dtype=torch.float64).round()
    with pytest.raises(ValueError, match="BoTorch adapter .* does not take a 'bernoulli'"):
        NPSurrogate(model, x, y)


def test_chunked_decoding_refuses_a_non_normal_prediction():
    model = small_model("tnp", likelihood="poisson")
    xc, yc, xt = make_task(1, 4, 6)
    with torch.no_grad():
        whole = model.predict_streamed(xc, yc.abs().round(), xt, chunk_size=6)
        assert whole.mean.shape == (1, 6, 1)
        with pytest.raises(ValueError, match="cannot be decoded in chunks yet"):
            model.predict_streamed(xc, yc.abs().round(), xt, chunk_size=2)


def test_autoregressive_samples_follow_the_family():
    model = small_model("tnp", likelihood="poisson")
    xc, yc, xt = make_task(2, 4, 3)
    draws = tnpx.sample(model, xc, yc.abs().round(), xt, n_samples=4, seed=0)
    assert draws.shape == (4, 2, 3, 1)
    assert torch.equal(draws, draws.round()) and (draws >= 0).all()


def test_lowrank_refuses_missing_target_outputs():
    model = small_model("tnp", 1, 2, likelihood="lowrank-gaussian")
    batch = family_task("lowrank-gaussian")
    mask = torch.ones(2, 5, 2, dtype=torch.bool)
    mask[0, 0, 1] = False
    batch = Batch(batch.xc, batch.yc, batch.xt, batch.yt, mask_yt=mask)
    with pytest.raises(ValueError, match="cannot leave missing outputs out"):
        model.log_likelihood(batch)


def test_lowrank_needs_two_outputs():
    with pytest.raises(ValueError, match="needs dim_y >= 2"):
        tnpx.build_model("tnp", 1, 1, likelihood="lowrank-gaussian")


def test_a_context_stream_predicts_a_family():
    model = small_model("tnp", likelihood="negative-binomial")
    xc, yc, xt = make_task(1, 4, 3)
    stream = tnpx.ContextStream(model, xc, yc.abs().round())
    stream.add(xt[:, :1], torch.ones(1, 1, 1))
    pred = stream.predict(xt)
    assert pred.mean.shape == (1, 3, 1) and (pred.mean > 0).all()
    assert pred.quantile(0.5).shape == (1, 3, 1)
