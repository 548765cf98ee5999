"""Latent-variable and bootstrapping NPs (np, anp, bnp, banp) and ``LatentMixture``: the
mixture's moments and densities against explicit formulas, the training objectives, the
estimators, and the bootstrap's resampling (padding, seeds, context order)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import ALL_MODELS, make_task, predict, small_model
from tnpx.batch import Batch
from tnpx.distributions import LatentMixture
from tnpx.models.bootstrap import canonical_order, resample_indices, take
from tnpx.models.registry import REGISTRY

# Every model whose prediction is a mixture over random draws (latent or bootstrap).
MIXTURE_MODELS = [n for n in ALL_MODELS if REGISTRY[n].stochastic and REGISTRY[n].predicts_jointly]


def test_the_mixture_models_are_the_latent_and_bootstrap_nps():
    assert set(MIXTURE_MODELS) >= {"np", "anp", "bnp", "banp"}


def random_mixture(k=5, b=2, n=4, d=2, seed=0) -> LatentMixture:
    g = torch.Generator().manual_seed(seed)
    loc = torch.randn(k, b, n, d, generator=g, dtype=torch.float64)
    scale = 0.3 + torch.rand(k, b, n, d, generator=g, dtype=torch.float64)
    return LatentMixture(Normal(loc, scale))


def normal_pdf(y, mu, sigma):
    return math.exp(-0.5 * ((y - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


# --- LatentMixture ----------------------------------------------------------------------


def test_mixture_moments_and_marginals_match_explicit_formulas():
    mix = random_mixture()
    mu, sd = mix.component.mean, mix.component.stddev
    k, b, n, d = mu.shape
    y = torch.randn(b, n, d, dtype=torch.float64)
    for i in range(b):
        for t in range(n):
            for j in range(d):
                mus, sds = mu[:, i, t, j].tolist(), sd[:, i, t, j].tolist()
                mean = sum(mus) / k
                second = sum(s**2 + m**2 for m, s in zip(mus, sds)) / k
                density = sum(normal_pdf(y[i, t, j].item(), m, s) for m, s in zip(mus, sds)) / k
                assert mix.mean[i, t, j].item() == pytest.approx(mean, rel=1e-12)
                assert mix.variance[i, t, j].item() == pytest.approx(second - mean**2, rel=1e-9)
                assert mix.log_prob(y)[i, t, j].item() == pytest.approx(math.log(density), rel=1e-9)
    assert_close(mix.stddev, mix.variance.sqrt())


def test_joint_and_target_log_prob_match_explicit_formulas():
    mix = random_mixture()
    mu, sd = mix.component.mean, mix.component.stddev
    y = torch.randn(mu.shape[1:], dtype=torch.float64)
    pdf = torch.exp(-0.5 * ((y - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))  # [k, b, n, d]
    joint = pdf.prod(-1).prod(-1).mean(0).log()
    target = pdf.prod(-1).mean(0).log()
    assert_close(mix.joint_log_prob(y), joint, rtol=1e-9, atol=1e-12)
    assert_close(mix.target_log_prob(y), target, rtol=1e-9, atol=1e-12)


def test_one_component_mixture_is_its_component():
    component = Normal(torch.randn(1, 3, 4, 2), torch.rand(1, 3, 4, 2) + 0.1)
    mix, y = LatentMixture(component), torch.randn(3, 4, 2)
    assert mix.batch_shape == (3, 4, 2) and mix.n_components == 1
    assert_close(mix.mean, component.mean[0])
    assert_close(mix.stddev, component.stddev[0])
    assert_close(mix.log_prob(y), component.log_prob(y)[0])
    assert_close(mix.joint_log_prob(y), component.log_prob(y)[0].sum((-1, -2)))


def test_mixture_samples_are_joint():
    """Two far-apart components: every sample draws all targets of a task from one of them."""
    loc = torch.tensor([-10.0, 10.0])[:, None, None, None].expand(2, 3, 6, 1)
    mix = LatentMixture(Normal(loc, torch.full_like(loc, 0.1)))
    torch.manual_seed(0)
    samples = mix.sample((400,))
    assert samples.shape == (400, 3, 6, 1)
    signs = samples.sign()
    assert (signs == signs[:, :, :1]).all()  # one component per sample and task
    assert 0.35 < (signs[:, :, 0] > 0).float().mean() < 0.65  # both components drawn


def test_mixture_rejects_a_component_without_the_sample_dimension():
    with pytest.raises(ValueError, match="K, batch"):
        LatentMixture(Normal(torch.zeros(3, 4, 1), torch.ones(3, 4, 1)))


# --- models -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", MIXTURE_MODELS)
def test_prediction_is_a_mixture_of_k_components(name):
    model = small_model(name)
    xc, yc, xt = make_task(2, 6, 5)
    pred = predict(model, xc, yc, xt)
    assert isinstance(pred, LatentMixture)
    assert pred.n_components == 16  # eval default
    assert model.train().n_components == 4  # training default
    assert "K=16" in model.ll_estimator


@pytest.mark.parametrize("name", MIXTURE_MODELS)
def test_log_likelihood_estimators(name):
    """joint: joint_log_prob / n_tgt; marginal: mean of per-target mixtures; with K = 1 (the
    TNP-KR code's single-z score for np/anp) the two are the same number."""
    xc, yc, xt = make_task(3, 6, 5, seed=1)
    batch = Batch(xc, yc, xt, torch.randn(3, 5, 1))
    k = {"n_bootstrap": 1} if name in ("bnp", "banp") else {"n_samples": 1}
    joint, marginal = small_model(name), small_model(name, ll_estimate="marginal")
    torch.manual_seed(0)
    pred = joint(xc, yc, xt)
    assert_close(joint.log_likelihood(batch, pred), pred.joint_log_prob(batch.yt) / 5)
    assert_close(marginal.log_likelihood(batch, pred), pred.target_log_prob(batch.yt).mean(-1))
    one_joint, one_marginal = small_model(name, **k), small_model(name, ll_estimate="marginal", **k)
    torch.manual_seed(1)
    a = one_joint.log_likelihood(batch)
    torch.manual_seed(1)
    assert_close(a, one_marginal.log_likelihood(batch))


@pytest.mark.parametrize("name", MIXTURE_MODELS)
def test_predictions_repeat_under_a_seed_and_vary_without(name):
    model = small_model(name)
    xc, yc, xt = make_task(2, 6, 5, seed=2)
    a, b = predict(model, xc, yc, xt, seed=3), predict(model, xc, yc, xt, seed=3)
    assert torch.equal(a.component.mean, b.component.mean)
    c = predict(model, xc, yc, xt, seed=4)
    assert not torch.equal(a.component.mean, c.component.mean)


@pytest.mark.parametrize("option", [{"objective": "nope"}, {"ll_estimate": "nope"}])
def test_bad_options_are_rejected(option):
    with pytest.raises(ValueError, match="must be one of"):
        tnpx.build_model("np", 1, 1, **option)
    with pytest.raises(ValueError, match="n_bootstrap"):
        tnpx.build_model("bnp", 1, 1, n_bootstrap=0)


def toy_batch(b=8, n_ctx=10, n_tgt=20, seed=0) -> Batch:
    """y = a sin(3x) + c with a, c drawn per task: a family a latent variable can capture."""
    g = torch.Generator().manual_seed(seed)
    a, c = torch.randn(b, 1, 1, generator=g), torch.randn(b, 1, 1, generator=g)
    x = torch.rand(b, n_ctx + n_tgt, 1, generator=g) * 4 - 2
    y = a * torch.sin(3 * x) + c + 0.05 * torch.randn(x.shape, generator=g)
    return Batch(x[:, :n_ctx], y[:, :n_ctx], x[:, n_ctx:], y[:, n_ctx:])


@pytest.mark.parametrize("objective", ["ml", "elbo", "kr-code"])
def test_np_objectives_lower_the_loss(objective):
    torch.manual_seed(0)
    model = tnpx.build_model("np", 1, 1, dim_model=32, dim_latent=16, objective=objective).train()
    batch = toy_batch()
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss():
        torch.manual_seed(123)  # the same latent draws before and after
        return model.training_loss(batch)

    start = loss().item()
    for _ in range(40):
        optimiser.zero_grad()
        model.training_loss(batch).backward()
        optimiser.step()
    assert loss().item() < start - 0.1


@pytest.mark.parametrize("objective", ["ml", "elbo", "kr-code"])
@pytest.mark.parametrize("name", ["np", "anp"])
def test_training_loss_ignores_padding(name, objective):
    model = small_model(name, objective=objective).train()
    xc, yc, xt = make_task(1, 5, 4, seed=4)
    yt = torch.randn(1, 4, 1)
    xp, yp = (
        torch.cat([xc, torch.zeros(1, 3, 1)], 1),
        torch.cat([yc, torch.full((1, 3, 1), 9.0)], 1),
    )
    mask = torch.tensor([[True] * 5 + [False] * 3])
    torch.manual_seed(0)
    plain = model.training_loss(Batch(xc, yc, xt, yt))
    torch.manual_seed(0)
    padded = model.training_loss(Batch(xp, yp, xt, yt, mask_c=mask))
    assert torch.isfinite(plain)
    assert_close(padded, plain, atol=1e-5, rtol=1e-4)


def test_ml_objective_is_the_joint_estimate():
    model = small_model("np").train()
    batch = Batch(*make_task(3, 6, 5, seed=5), torch.randn(3, 5, 1))
    torch.manual_seed(0)
    loss = model.training_loss(batch)
    torch.manual_seed(0)
    pred = model(batch.xc, batch.yc, batch.xt)
    assert_close(loss, -(pred.joint_log_prob(batch.yt) / 5).mean())


def test_bootstrap_training_loss_is_base_plus_mixture():
    model = small_model("bnp").train()
    batch = Batch(*make_task(3, 6, 5, seed=6), torch.randn(3, 5, 1))
    torch.manual_seed(0)
    loss = model.training_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


# --- the bootstrap ----------------------------------------------------------------------


def test_resampled_indices_stay_inside_each_task():
    n_valid = torch.tensor([0, 1, 3, 7])
    torch.manual_seed(0)
    index = resample_indices(n_valid, 7, 50)  # [2, k, b, n_ctx]
    assert index.shape == (2, 50, 4, 7)
    assert (index >= 0).all()
    for b, n in enumerate(n_valid.tolist()):
        assert (index[:, :, b] <= max(n - 1, 0)).all()
    assert len(index[0, :, 3].unique()) == 7  # all points of the full task get drawn


def test_canonical_order_puts_padding_last_and_ignores_input_order():
    xc, yc, _ = make_task(2, 6, 1, seed=7)
    mask = torch.tensor([[True, False, True, True, False, True], [True] * 6])
    order = canonical_order(xc, yc, mask)
    assert mask.gather(1, order)[0].tolist() == [True] * 4 + [False] * 2
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(0))
    moved = canonical_order(xc[:, perm], yc[:, perm], mask[:, perm])
    assert torch.equal(take(xc, order), take(xc[:, perm], moved))


@pytest.mark.parametrize("name", ["bnp", "banp"])
def test_bootstrap_contexts_respect_padding_and_repeat_under_a_seed(name):
    model = small_model(name)
    xc, yc, _ = make_task(1, 4, 1, seed=8)
    pad_x, pad_y = torch.full((1, 3, 1), 0.0), torch.full((1, 3, 1), 0.0)  # zeroed, as validated
    xp, yp = (
        torch.cat([pad_x[:, :1], xc, pad_x[:, 1:]], 1),
        torch.cat([pad_y[:, :1], yc, pad_y[:, 1:]], 1),
    )
    mask = torch.tensor([[False, True, True, True, True, False, False]])
    torch.manual_seed(0)
    x_pad, y_pad, m_pad = model.bootstrap_contexts(xp, yp, mask, 8)
    torch.manual_seed(0)
    x_one, y_one, m_one = model.bootstrap_contexts(xc, yc, None, 8)
    assert m_pad.sum(-1).eq(4).all() and m_pad[..., :4].all()  # real points first
    assert_close(x_pad[:, :, :4], x_one)
    assert_close(y_pad[:, :, :4], y_one, atol=1e-5, rtol=1e-4)
    assert set(x_pad[:, :, :4].flatten().tolist()) == set(xc.flatten().tolist())
    torch.manual_seed(0)
    assert torch.equal(model.bootstrap_contexts(xp, yp, mask, 8)[1], y_pad)
    assert not torch.equal(model.bootstrap_contexts(xp, yp, mask, 8)[1], y_pad)  # fresh draw


def test_bootstrap_samples_differ_from_the_context():
    """Residual resampling changes the outputs: the K contexts differ from each other."""
    model = small_model("bnp")
    xc, yc, _ = make_task(2, 9, 1, seed=9)
    torch.manual_seed(0)
    _, y_boot, _ = model.bootstrap_contexts(xc, yc, None, 6)
    assert y_boot.std(0).mean() > 1e-3
