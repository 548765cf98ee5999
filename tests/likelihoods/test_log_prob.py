"""Every family's log-density equals scipy's to 1e-6 in float64 (bernoulli-gamma and beta with
spikes built from scipy's pieces)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, special, stats

from tests.likelihoods.family_cases import OPTIONS, distribution, values


def np64(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


def scipy_log_prob(key: str, d, y: np.ndarray) -> np.ndarray:
    if key in ("gaussian", "homoscedastic"):
        return stats.norm.logpdf(y, np64(d.loc), np64(d.scale))
    if key.startswith("student-t"):
        return stats.t.logpdf(y, np64(d.df), np64(d.loc), np64(d.scale))
    if key == "bernoulli":
        return stats.bernoulli.logpmf(y, np64(d.probs))
    if key == "bernoulli-gamma":
        p = np64(d.wet.probs)
        a, rate = np64(d.amount.concentration), np64(d.amount.rate)
        wet = np.log(p) + stats.gamma.logpdf(np.where(y > 0, y, 1.0), a, scale=1 / rate)
        return np.where(y > 0, wet, np.log1p(-p))
    if key == "poisson":
        return stats.poisson.logpmf(y, np64(d.rate))
    if key == "poisson-lognormal":  # the mixture over the log rate, by scipy's quadrature
        return _poisson_lognormal(np64(d.loc), np64(d.scale), y)
    if key == "negative-binomial":  # scipy's p is torch's 1 - probs
        return stats.nbinom.logpmf(y, np64(d.total_count), 1 - np64(d.probs))
    if key == "beta":
        return stats.beta.logpdf(y, np64(d.concentration1), np64(d.concentration0))
    if key == "beta-spikes":
        w = np64(d.weights)
        a, b = np64(d.inner.concentration1), np64(d.inner.concentration0)
        inside = np.log(w[..., 2]) + stats.beta.logpdf(np.clip(y, 1e-9, 1 - 1e-9), a, b)
        return np.where(y == 0, np.log(w[..., 0]), np.where(y == 1, np.log(w[..., 1]), inside))
    if key == "mixture":
        w = np64(d.mixture_distribution.probs)
        loc, scale = np64(d.component_distribution.loc), np64(d.component_distribution.scale)
        return special.logsumexp(np.log(w) + stats.norm.logpdf(y[..., None], loc, scale), -1)
    if key == "lowrank-gaussian":
        cov = np64(d.covariance_matrix)
        mean = np64(d.loc)
        out = np.empty(mean.shape[:-1])
        for idx in np.ndindex(out.shape):
            out[idx] = stats.multivariate_normal.logpdf(y[idx], mean[idx], cov[idx])
        return out
    raise KeyError(key)


def _poisson_lognormal(loc: np.ndarray, scale: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(y.shape)
    for i in np.ndindex(y.shape):
        m, s, k = loc[i], scale[i], y[i]
        peak = [m, np.log(k + 1)]  # the integrand lies between the prior's and the count's

        def joint(f, m=m, s=s, k=k):
            return stats.norm.pdf(f, m, s) * stats.poisson.pmf(k, np.exp(f))

        lo, hi = min(peak) - 12 * s - 5, max(peak) + 12 * s + 5
        p, _ = integrate.quad(joint, lo, hi, points=sorted(set(peak)), limit=500, epsrel=1e-12)
        out[i] = np.log(p)
    return out


@pytest.mark.parametrize("key", list(OPTIONS))
def test_log_prob_matches_scipy(key):
    d, _ = distribution(key)
    y = values(key, d.mean.shape)
    ours = np64(d.log_prob(y))
    want = scipy_log_prob(key, d, np64(y))
    assert ours.shape == want.shape
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)


def test_lowrank_log_prob_is_per_target():
    d, _ = distribution("lowrank-gaussian", b=2, n=5)
    assert d.log_prob(values("lowrank-gaussian", (2, 5, 3))).shape == (2, 5)
    assert d.mean.shape == d.variance.shape == (2, 5, 3)
