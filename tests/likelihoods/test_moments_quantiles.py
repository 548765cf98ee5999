"""Each family's ``mean`` / ``variance`` against the moments of many samples, and its
``quantile`` against its cdf (the count rule for counts) and scipy's ``ppf``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from tests.likelihoods.family_cases import OPTIONS, distribution

N_SAMPLES = 100_000


@pytest.mark.parametrize("key", list(OPTIONS))
def test_mean_and_variance_match_samples(key):
    torch.manual_seed(0)
    d, _ = distribution(key, b=2, n=3)
    if key.startswith("student-t"):
        # the closed form against scipy's at the head's df (> 2), and the samples at df > 10,
        # where the sample variance settles (its own variance needs the fourth moment)
        f = lambda t: t.detach().numpy()  # noqa: E731
        want = stats.t.var(f(d.df), f(d.loc), f(d.scale))
        np.testing.assert_allclose(f(d.variance), want, rtol=1e-10)
        d = type(d)(d.df + 8, d.loc, d.scale, validate_args=False)
    s = d.sample((N_SAMPLES,))
    assert s.shape == (N_SAMPLES, *d.mean.shape)
    mean, var = d.mean, d.variance
    # tolerances: 6 standard errors of the sample mean and of the sample variance
    se_mean = (var / N_SAMPLES).sqrt()
    assert ((s.mean(0) - mean).abs() <= 6 * se_mean).all()
    fourth = ((s - mean) ** 4).mean(0)
    se_var = ((fourth - var.square()).clamp_min(0) / N_SAMPLES).sqrt()
    assert ((s.var(0) - var).abs() <= 6 * se_var + 1e-9).all()
    assert torch.allclose(d.stddev, var.sqrt())


CONTINUOUS = ["gaussian", "student-t", "mixture", "beta", "bernoulli-gamma", "beta-spikes"]


@pytest.mark.parametrize("key", [k for k in CONTINUOUS if k != "gaussian"])
@pytest.mark.parametrize("q", [0.05, 0.5, 0.9])
def test_quantile_inverts_the_cdf(key, q):
    d, _ = distribution(key)
    x = d.quantile(q)
    assert x.shape == d.mean.shape
    at = d.cdf(x)
    mass = torch.zeros_like(x, dtype=torch.bool)
    if key in ("bernoulli-gamma", "beta-spikes"):
        mass = (x <= 0) | (x >= 1) if key == "beta-spikes" else x <= 0
    # where a point mass holds q, the cdf jumps past q there; elsewhere it equals q, except
    # within 1e-12 of a bound of (0, 1), where float64 cannot hold x finely enough
    edge = (x < 1e-12) | (x > 1 - 1e-12) if key.startswith("beta") else ~mass & False
    assert ((at - q).abs() < 1e-6)[~mass & ~edge].all()
    assert (at[mass] >= q - 1e-9).all()


@pytest.mark.parametrize("key", ["poisson", "poisson-lognormal", "negative-binomial", "bernoulli"])
@pytest.mark.parametrize("q", [0.05, 0.5, 0.9, 0.999])
def test_count_quantile_rule(key, q):
    d, _ = distribution(key)
    k = d.quantile(q)
    assert torch.equal(k, k.round())
    assert (d.cdf(k) >= q).all() and (d.cdf(k - 1) < q).all()


def ppf(key, d, q):
    f = lambda t: t.detach().numpy()  # noqa: E731
    if key == "student-t":
        return stats.t.ppf(q, f(d.df), f(d.loc), f(d.scale))
    if key == "poisson":
        return stats.poisson.ppf(q, f(d.rate))
    if key == "negative-binomial":
        return stats.nbinom.ppf(q, f(d.total_count), 1 - f(d.probs))
    if key == "beta":
        return stats.beta.ppf(q, f(d.concentration1), f(d.concentration0))
    if key == "bernoulli":
        return stats.bernoulli.ppf(q, f(d.probs))
    raise KeyError(key)


@pytest.mark.parametrize("key", ["student-t", "poisson", "negative-binomial", "beta", "bernoulli"])
def test_quantile_matches_scipy_ppf(key):
    d, _ = distribution(key)
    for q in (0.1, 0.5, 0.95):
        np.testing.assert_allclose(d.quantile(q).numpy(), ppf(key, d, q), rtol=1e-6, atol=1e-6)


def test_bernoulli_gamma_quantile_below_the_dry_mass_is_zero():
    d, _ = distribution("bernoulli-gamma")
    dry = 1 - d.wet.probs
    x = d.quantile(0.5)
    assert (x[dry >= 0.5] == 0).all() and (x[dry < 0.5] > 0).all()


def test_betainc_matches_scipy():
    from scipy import special

    from tnpx.likelihoods.numerics import betainc

    g = torch.Generator().manual_seed(3)
    a = 0.1 + 50 * torch.rand(200, generator=g, dtype=torch.float64)
    b = 0.1 + 500 * torch.rand(200, generator=g, dtype=torch.float64)
    x = torch.rand(200, generator=g, dtype=torch.float64)
    want = special.betainc(a.numpy(), b.numpy(), x.numpy())
    np.testing.assert_allclose(betainc(a, b, x).numpy(), want, rtol=1e-9, atol=1e-12)
