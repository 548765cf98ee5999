"""The per-task GP baseline with a family's own likelihood (tnpx.gp.approx_fit): its
quadrature and count likelihoods against scipy, a fit that learns from the context and comes
near the truth given a rich one, the exposures used, and one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from tnpx.data import batch_at, build_sampler
from tnpx.data.synthetic import true_predictive_log_prob
from tnpx.gp.approx_fit import (
    APPROX_FAMILIES,
    MeanPrecisionBetaLikelihood,
    NegativeBinomialLikelihood,
    PoissonLikelihood,
    approx_gp_log_density,
    approx_gp_log_prob,
    approx_gp_predictive,
)
from tnpx.gp.approx_predictive import QuadraturePredictive, as_prediction


def rich_batch(family: str, **options):
    """4 tasks of 40 context points and 16 targets: enough for a GP to learn the function."""
    sampler = build_sampler(
        "gp-link",
        4,
        0,
        family=family,
        min_ctx=40,
        max_ctx=40,
        n_tgt=16,
        lengthscale_a=0.5,
        **options,
    )
    return batch_at(sampler, 0, split="test")


def test_count_likelihoods_equal_scipy():
    f = torch.tensor([[-1.0, 0.3, 2.0]], dtype=torch.float64)
    exposure = torch.tensor([[0.5, 1.0, 3.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, 2.0, 17.0]], dtype=torch.float64)
    rate = (exposure * f.exp()).numpy()
    got = PoissonLikelihood().forward(f, exposure=exposure).log_prob(y)
    np.testing.assert_allclose(got.numpy(), stats.poisson.logpmf(y.numpy(), rate), atol=1e-10)
    nb = NegativeBinomialLikelihood(torch.Size([1])).double()
    r = float(torch.nn.functional.softplus(nb.raw_dispersion.detach())) + 1e-4
    got = nb.forward(f, exposure=exposure).log_prob(y)
    expected = stats.nbinom.logpmf(y.numpy(), r, r / (r + rate))
    np.testing.assert_allclose(got.detach().numpy(), expected, atol=1e-10)


def test_the_beta_likelihood_is_the_mean_precision_beta_of_scipy():
    """``Beta(mu s, (1 - mu) s)``, shapes below 1 included (fractions piled up at 0)."""
    yc = torch.tensor([[0.02, 0.3, 0.05, 0.01]], dtype=torch.float64)
    beta = MeanPrecisionBetaLikelihood(yc).double()
    s = float(torch.nn.functional.softplus(beta.raw_precision.detach())) + 1e-4
    m, v = yc.mean().item(), yc.var().item()
    assert s == pytest.approx(m * (1 - m) / v - 1 + 1e-4, rel=1e-9)  # the context's moments
    f = torch.tensor([[-3.0, 0.0, 1.2, -1.0]], dtype=torch.float64)
    y = torch.tensor([[0.001, 0.5, 0.9, 0.2]], dtype=torch.float64)
    mu = torch.sigmoid(f).numpy()
    expected = stats.beta.logpdf(y.numpy(), mu * s, (1 - mu) * s)
    got = beta.forward(f).log_prob(y).detach().numpy()
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert (mu * s)[0, 0] < 1  # a shape GPyTorch's own BetaLikelihood (above 1) cannot take


def test_the_beta_fit_nears_the_truth_on_fractions_piled_up_at_0():
    """Skewed fractions (latent mean -2, precision 3: shapes below 1) are the law the fit
    assumes, so it comes within 0.6 nats of the truth, as on symmetric ones."""
    check_fit("beta", steps=100, latent_mean=-2.0, concentration=3.0)


def poisson_law(mean, variance) -> QuadraturePredictive:
    return QuadraturePredictive(
        mean, variance, lambda f: as_prediction(PoissonLikelihood().forward(f))
    )


MEAN = torch.tensor([[0.2, -1.0, 1.5]], dtype=torch.float64)
VARIANCE = torch.tensor([[0.3, 0.05, 0.2]], dtype=torch.float64)


def integral(m: float, s: float, g) -> float:
    """``E[g(f)]``, ``f ~ N(m, s²)``, by scipy's adaptive quadrature."""
    value, _ = integrate.quad(lambda f: stats.norm.pdf(f, m, s) * g(f), m - 10 * s, m + 10 * s)
    return value


def test_the_quadrature_is_the_predictive_density_and_cdf():
    y = torch.tensor([[3.0, 0.0, 5.0]], dtype=torch.float64)
    law = poisson_law(MEAN, VARIANCE)
    assert law.batch_shape == (1, 3, 1)
    log_p, cdf = law.log_prob(y[..., None]), law.cdf(y[..., None])
    for j in range(3):
        m, s, k = float(MEAN[0, j]), float(VARIANCE[0, j]) ** 0.5, float(y[0, j])
        p = integral(m, s, lambda f, k=k: stats.poisson.pmf(k, np.exp(f)))
        c = integral(m, s, lambda f, k=k: stats.poisson.cdf(k, np.exp(f)))
        # 20 Gauss-Hermite nodes: within 2e-8 of scipy's adaptive quadrature here
        assert float(log_p[0, j, 0]) == pytest.approx(np.log(p), abs=2e-8)
        assert float(cdf[0, j, 0]) == pytest.approx(c, abs=2e-8)


def test_the_predictive_moments_and_samples_agree():
    """Counts with a log-normal rate: mean ``exp(m + s²/2)``, variance the mean plus
    ``(exp(s²) - 1) exp(2m + s²)`` (overdispersed); 200,000 exact draws match both."""
    law = poisson_law(MEAN, VARIANCE)
    mean = torch.exp(MEAN + VARIANCE / 2)
    variance = mean + (VARIANCE.exp() - 1) * torch.exp(2 * MEAN + VARIANCE)
    torch.testing.assert_close(law.mean[..., 0], mean, rtol=1e-9, atol=0)
    torch.testing.assert_close(law.variance[..., 0], variance, rtol=1e-7, atol=0)
    torch.manual_seed(0)
    draws = law.sample((200_000,))
    assert draws.shape == (200_000, 1, 3, 1)
    se = (variance / 200_000).sqrt()
    assert ((draws.mean(0)[..., 0] - mean).abs() < 4 * se).all()
    assert ((draws.var(0)[..., 0] / variance - 1).abs() < 0.03).all()


def check_fit(family: str, steps: int, **options) -> None:
    """On tasks with a rich context the fit beats its initial GP and comes within 0.6 nats per
    target of the truth (an upper bound: it knows the latent function)."""
    batch = rich_batch(family, **options)
    density = approx_gp_log_density(batch, family, steps=steps)
    assert density.shape == (4, 16, 1) and density.dtype == torch.float64
    assert bool(torch.isfinite(density).all())
    fitted = float(density.mean())
    unfitted = float(approx_gp_log_prob(batch, family, steps=0).mean())  # the initial GP
    truth = float(true_predictive_log_prob(batch).mean())
    assert fitted > unfitted, (fitted, unfitted)
    assert truth - 0.6 < fitted < truth + 0.1, (fitted, truth)


def test_the_fit_learns_counts_from_the_context():
    check_fit("poisson", steps=50)


@pytest.mark.slow  # a few seconds per family
@pytest.mark.parametrize("family", APPROX_FAMILIES)
def test_the_fit_learns_from_the_context_and_nears_the_truth(family):
    check_fit(family, steps=100)


def test_counts_use_each_point_s_exposure():
    batch = rich_batch("poisson", exposure_range=[0.2, 5.0])
    with_exposure = float(approx_gp_log_prob(batch, "poisson", steps=50).mean())
    info = {k: v for k, v in batch.info.items() if not k.startswith("exposure")}
    blind = type(batch)(batch.xc, batch.yc, batch.xt, batch.yt, info=info)
    assert with_exposure > float(approx_gp_log_prob(blind, "poisson", steps=50).mean()) + 0.3


@pytest.mark.parametrize("family", ["bernoulli-gamma", "mixture", "lowrank-gaussian", "gamma"])
def test_a_family_without_a_gpytorch_likelihood_is_refused(family):
    with pytest.raises(ValueError, match=f"has no likelihood '{family}'; choose from gaussian, "):
        approx_gp_log_prob(rich_batch("gaussian"), family)


def test_a_batch_it_cannot_fit_is_refused_in_one_line():
    batch = rich_batch("gaussian")
    two_outputs = batch_at(build_sampler("gp-link", 2, 0, family="lowrank-gaussian"), 0)
    with pytest.raises(ValueError, match="needs one output and at least one context point"):
        approx_gp_log_prob(two_outputs, "gaussian")
    masked = type(batch)(
        batch.xc,
        batch.yc,
        batch.xt,
        batch.yt,
        mask_c=torch.ones(batch.xc.shape[:2], dtype=torch.bool),
    )
    with pytest.raises(ValueError, match="takes no padded or missing context values"):
        approx_gp_log_prob(masked, "gaussian")


@pytest.mark.parametrize("family", APPROX_FAMILIES)
def test_every_familys_predictive_scores_like_a_models(family):
    """Finite LL, a cdf in [0, 1] rising with y, a CRPS >= 0 and samples in the support."""
    batch = rich_batch(family)
    law = approx_gp_predictive(batch, family, steps=10)
    y = batch.yt.double()
    assert law.batch_shape == y.shape and bool(law.log_prob(y).isfinite().all())
    low, high = law.cdf(y - 0.5), law.cdf(y + 0.5)
    assert bool(((0 <= low) & (low <= high + 1e-12) & (high <= 1 + 1e-12)).all())
    torch.manual_seed(0)
    assert bool((law.crps(y) >= 0).all())
    draws = law.sample((64,))
    if family in ("poisson", "negative-binomial"):
        assert bool(((draws >= 0) & (draws == draws.round())).all())
    if family == "bernoulli":
        assert set(draws.unique().tolist()) <= {0.0, 1.0}
    if family == "beta":
        assert bool(((draws > 0) & (draws < 1)).all())
