"""The ``gp-link`` sampler's outputs follow each family's law given the latent values: the
link's means (and variances, or distribution functions) over many draws. Given the latents the
points are independent, so each check is a z-score over all points, held within 4 standard
errors (a false alarm about once in 16,000 runs of a check; the draws are seeded, so a passing
check passes every time)."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from tnpx.data import batch_at, build_sampler

Z = 4.0


def _draw(family: str, tasks: int = 128, **options) -> dict[str, torch.Tensor]:
    """Every point of ``tasks`` tasks, context and targets: ``y [n, dim_y]``, ``latent [n, L]``
    (float64), the task's parameters per point, and the exposures (counts)."""
    batch = batch_at(build_sampler("gp-link", tasks, 11, family=family, **options), 0)
    info = batch.info

    def points(c, t):
        return torch.cat([c.double().flatten(0, 1), t.double().flatten(0, 1)])

    out = {"y": points(batch.yc, batch.yt), "latent": points(info["latent_c"], info["latent_t"])}
    if "exposure_c" in info:
        out["exposure"] = points(info["exposure_c"], info["exposure_t"])[:, 0]
    out["task_y"] = batch.yt.double()  # per task, for checks across tasks
    out["info"] = info
    return out


def _z(residual: torch.Tensor, variance: torch.Tensor) -> float:
    """The z-score of a sum of independent zero-mean residuals with the given variances."""
    return float(residual.sum() / variance.sum().sqrt())


def _z_empirical(values: torch.Tensor, expected: float) -> float:
    """The z-score of the mean of i.i.d. ``values`` against ``expected`` (sample s.e.)."""
    return float((values.mean() - expected) / (values.std() / math.sqrt(values.numel())))


def _cdf_z(below: torch.Tensor, probability: torch.Tensor) -> float:
    """z-score of indicators ``below`` against their probabilities (independent Bernoullis)."""
    return _z(below.double() - probability, probability * (1 - probability))


def test_poisson_counts_have_mean_and_variance_exposure_times_exp_latent():
    d = _draw("poisson", exposure_range=[0.5, 4.0])
    mean = d["exposure"] * d["latent"][:, 0].exp()
    y = d["y"][:, 0]
    assert abs(_z(y - mean, mean)) < Z
    assert abs(_z((y - mean) ** 2 - mean, mean + 2 * mean**2)) < Z  # Var((y - mu)²)
    log_e = d["exposure"].log()  # log-uniform exposures on [0.5, 4]
    assert float(log_e.min()) >= math.log(0.5) and float(log_e.max()) <= math.log(4.0)
    assert abs(_z_empirical(log_e, (math.log(0.5) + math.log(4.0)) / 2)) < Z


def test_negative_binomial_counts_are_overdispersed_as_stated():
    d = _draw("negative-binomial", dispersion=3.0)
    mean = d["exposure"] * d["latent"][:, 0].exp()
    variance = mean + mean**2 / 3.0
    y = d["y"][:, 0]
    assert abs(_z(y - mean, variance)) < Z
    assert abs(_z_empirical((y - mean) ** 2 / variance, 1.0)) < Z
    # overdispersed: a Poisson's variance would be far too small
    assert float(((y - mean) ** 2).mean() / mean.mean()) > 1.5


def test_bernoulli_frequencies_match_sigmoid_of_the_latent():
    d = _draw("bernoulli")
    p = torch.sigmoid(d["latent"][:, 0])
    assert abs(_z(d["y"][:, 0] - p, p * (1 - p))) < Z


def test_beta_fractions_have_the_stated_mean_and_variance():
    d = _draw("beta", concentration=8.0)
    mean = torch.sigmoid(d["latent"][:, 0])
    variance = mean * (1 - mean) / 9.0
    y = d["y"][:, 0]
    assert abs(_z(y - mean, variance)) < Z
    assert abs(_z_empirical((y - mean) ** 2 / variance, 1.0)) < Z


def test_gaussian_noise_around_the_latent():
    d = _draw("gaussian", noise=0.3)
    e = (d["y"][:, 0] - d["latent"][:, 0]) / 0.3
    assert abs(_z_empirical(e, 0.0)) < Z
    assert abs(float(e.pow(2).mean()) - 1) < Z * math.sqrt(2 / e.numel())


@pytest.mark.parametrize("df", [3.0, 1.5])
def test_student_t_noise_has_the_t_distribution_function(df):
    d = _draw("student-t", noise=0.2, df=df)
    e = (d["y"][:, 0] - d["latent"][:, 0]) / 0.2
    for a in (-4.0, -1.0, 0.0, 0.5, 2.0, 6.0):
        assert abs(_cdf_z(e <= a, torch.full_like(e, stats.t.cdf(a, df)))) < Z, a


def test_rain_distribution_function_given_the_latent():
    options = {"threshold": 0.3, "power": 1.5, "amount_scale": 2.0, "rain_noise": 0.4}
    d = _draw("bernoulli-gamma", **options)
    y, f = d["y"][:, 0], d["latent"][:, 0]
    for a in (0.0, 0.1, 1.0, 4.0):  # P(y <= a | f): a = 0 is the dry probability
        u = 0.3 + (a / 2.0) ** (1 / 1.5)
        probability = torch.special.ndtr((u - f) / 0.4)
        assert abs(_cdf_z(y <= a, probability)) < Z, a


def test_rain_dry_fraction_is_the_documented_one():
    # P(dry) = Phi((threshold - latent_mean) / sqrt(variance + rain_noise²)); the tasks are
    # independent (points within one are not), so the s.e. is taken across tasks
    d = _draw("bernoulli-gamma", tasks=256, threshold=0.5, variance=1.0, rain_noise=0.5)
    dry = (d["task_y"] == 0).double().mean((1, 2))
    expected = stats.norm.cdf(0.5 / math.sqrt(1.0 + 0.25))
    assert abs(_z_empirical(dry, expected)) < Z
    half = _draw("bernoulli-gamma", tasks=256)  # the defaults: threshold 0, a half dry
    assert abs(_z_empirical((half["task_y"] == 0).double().mean((1, 2)), 0.5)) < Z


def test_mixture_points_follow_one_of_two_regimes():
    d = _draw("mixture", noise=0.2, mixture_weight=0.3, mixture_offset=3.0)
    y, f = d["y"][:, 0], d["latent"]
    low, high = f[:, 0] - 1.5, f[:, 1] + 1.5
    for a in (-3.0, -1.0, 0.0, 1.0, 3.0):
        probability = 0.3 * stats.norm.cdf((a - low) / 0.2) + 0.7 * stats.norm.cdf((a - high) / 0.2)
        assert abs(_cdf_z(y <= a, torch.as_tensor(probability))) < Z, a


@pytest.mark.parametrize("n_outputs, n_latents", [(2, 2), (3, 1), (3, 2)])
def test_lowrank_outputs_covary_as_w_w_transposed_plus_noise(n_outputs, n_latents):
    noise, variance = 0.3, 1.5
    options = {"n_outputs": n_outputs, "n_latents": n_latents, "noise": noise}
    d = _draw("lowrank-gaussian", tasks=256, variance=variance, **options)
    mixing = d["info"]["mixing"]  # [tasks, n_outputs, n_latents]
    eye = torch.eye(n_outputs, dtype=torch.float64)
    expected = variance * mixing @ mixing.transpose(1, 2) + noise**2 * eye
    y = d["task_y"]  # [tasks, n_tgt, n_outputs]: zero-mean outputs
    empirical = y.transpose(1, 2) @ y / y.shape[1]  # per task, over its targets
    residual = (empirical - expected).flatten(1)  # independent across tasks
    se = residual.std(0) / math.sqrt(residual.shape[0])
    assert bool((residual.mean(0).abs() < Z * se).all()), (residual.mean(0), se)
    # and tight given the latents: the outputs are W f plus independent noise
    latent = d["info"]["latent_t"]
    e = (y - latent @ mixing.transpose(1, 2)) / noise
    assert abs(float(e.pow(2).mean()) - 1) < Z * math.sqrt(2 / e.numel())
    cross = (e.transpose(1, 2) @ e / e.shape[1]).mean(0) - eye
    assert bool((cross.abs() < Z * math.sqrt(1 / e[..., 0].numel())).all())
