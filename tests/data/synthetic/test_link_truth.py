"""``true_predictive_log_prob`` (tnpx.data.synthetic.link_priors): each family's log-density of
the targets given the latent values equals a float64 re-derivation from scipy.stats to 1e-6,
scores like a model's log-likelihood (per-target mean, summed over outputs, masks honoured),
and refuses a batch that does not carry the truth."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import special, stats

from tnpx.batch import Batch
from tnpx.data import batch_at, build_sampler
from tnpx.data.synthetic.link_priors import true_log_density, true_predictive_log_prob

OPTIONS = {
    "gaussian": {"noise": 0.3},
    "student-t": {"noise": 0.2, "df": 2.5},
    "bernoulli": {},
    "bernoulli-gamma": {"threshold": 0.2, "power": 1.7, "amount_scale": 1.5, "rain_noise": 0.6},
    "poisson": {"exposure_range": [0.3, 3.0]},
    "negative-binomial": {"dispersion": 1.5},
    "beta": {"concentration": 6.0},
    "mixture": {"noise": 0.25, "mixture_weight": 0.35, "mixture_offset": 1.5},
    "lowrank-gaussian": {"n_outputs": 3, "n_latents": 2, "noise": 0.4},
}


def scipy_log_density(family: str, y: np.ndarray, f: np.ndarray, o: dict, info) -> np.ndarray:
    """``log p(y | f)`` per target and output, ``[tasks, n_tgt, dim_y]``, from scipy.stats."""
    if family == "gaussian":
        return stats.norm.logpdf(y, f, o["noise"])
    if family == "student-t":
        return stats.t.logpdf(y, o["df"], loc=f, scale=o["noise"])
    if family == "bernoulli":
        return stats.bernoulli.logpmf(y, special.expit(f))
    if family in ("poisson", "negative-binomial"):
        mean = info["exposure_t"].numpy() * np.exp(f)
        if family == "poisson":
            return stats.poisson.logpmf(y, mean)
        r = o["dispersion"]
        return stats.nbinom.logpmf(y, r, r / (r + mean))
    if family == "beta":
        mean, k = special.expit(f), o["concentration"]
        return stats.beta.logpdf(y, mean * k, (1 - mean) * k)
    if family == "bernoulli-gamma":
        t, p, s, sigma = o["threshold"], o["power"], o["amount_scale"], o["rain_noise"]
        amount = np.where(y > 0, y, 1.0)
        u = t + (amount / s) ** (1 / p)
        density = stats.norm.pdf(u, f, sigma) * (amount / s) ** (1 / p) / (p * amount)
        return np.where(y > 0, np.log(density), stats.norm.logcdf(t, f, sigma))
    if family == "mixture":
        w, half, sigma = o["mixture_weight"], o["mixture_offset"] / 2, o["noise"]
        low = stats.norm.pdf(y[..., 0], f[..., 0] - half, sigma)
        high = stats.norm.pdf(y[..., 0], f[..., 1] + half, sigma)
        return np.log(w * low + (1 - w) * high)[..., None]
    mixing = info["mixing"].numpy()  # lowrank-gaussian
    return stats.norm.logpdf(y, f @ mixing.transpose(0, 2, 1), o["noise"])


@pytest.mark.parametrize("family", list(OPTIONS))
def test_true_log_density_equals_scipy(family):
    options = OPTIONS[family]
    batch = batch_at(build_sampler("gp-link", 6, 5, family=family, n_tgt=40, **options), 1)
    y, f = batch.yt.double().numpy(), batch.info["latent_t"].numpy()
    expected = scipy_log_density(family, y, f, options, batch.info)
    got = true_log_density(batch)
    assert got.dtype == torch.float64 and got.shape == batch.yt.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-6)
    score = true_predictive_log_prob(batch)
    assert score.shape == (6,) and score.dtype == torch.float64
    np.testing.assert_allclose(score.numpy(), expected.sum(-1).mean(-1), rtol=0, atol=1e-6)


def test_rain_scores_dry_days_and_amounts():
    batch = batch_at(build_sampler("gp-link", 8, 0, family="bernoulli-gamma"), 0)
    dry = batch.yt == 0
    assert bool(dry.any()) and bool((~dry).any())
    assert bool(torch.isfinite(true_log_density(batch)).all())


def test_masked_targets_count_nowhere():
    batch = batch_at(build_sampler("gp-link", 3, 0, family="poisson", n_tgt=10), 0)
    full = true_log_density(batch)
    mask_t = torch.ones(3, 10, dtype=torch.bool)
    mask_t[:, 6:] = False
    masked = Batch(batch.xc, batch.yc, batch.xt, batch.yt, info=batch.info, mask_t=mask_t)
    torch.testing.assert_close(true_predictive_log_prob(masked), full[:, :6, 0].mean(1))


def test_the_truth_beats_a_wrong_law_on_average():
    # a law's own draws score higher under it than under a miscalibrated one (the noise wrong)
    batch = batch_at(build_sampler("gp-link", 32, 0, family="student-t", noise=0.2), 0)
    wrong = dict(batch.info, noise=batch.info["noise"] * 3)
    worse = Batch(batch.xc, batch.yc, batch.xt, batch.yt, info=wrong)
    assert float((true_predictive_log_prob(batch) - true_predictive_log_prob(worse)).mean()) > 0.3


@pytest.mark.parametrize(
    "batch",
    [
        batch_at(build_sampler("gp", 2, 0), 0),  # a GP batch carries no family
        Batch(
            torch.zeros(1, 2, 1),
            torch.zeros(1, 2, 1),
            torch.zeros(1, 3, 1),
            None,
            info={"family": "poisson", "latent_t": torch.zeros(1, 3, 1)},
        ),
    ],
    ids=["no-family", "no-targets"],
)
def test_a_batch_without_the_truth_is_refused_in_one_line(batch):
    with pytest.raises(ValueError, match="needs a batch of the link sampler with target outputs"):
        true_predictive_log_prob(batch)
