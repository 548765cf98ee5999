"""The CRPS: each closed form against the integral ``int (F(x) - 1{x >= y})² dx`` (the
definition, by the trapezoidal rule on the family's cdf), and the sample estimate of the other
families against the same integral."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal

from tests.likelihoods.family_cases import distribution, values
from tnpx.likelihoods import BetaPrediction, crps, quantile
from tnpx.likelihoods.numerics import sample_crps


def integrated_crps(cdf, y: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, n: int = 20001):
    """``int_lo^hi (F(x) - 1{x >= y})² dx`` on ``n`` points per element (float64)."""
    t = torch.linspace(0, 1, n, dtype=torch.float64).reshape(n, *([1] * y.dim()))
    x = lo + (hi - lo) * t  # [n, *shape]
    gap = (cdf(x) - (x >= y).double()).square()
    return torch.trapezoid(gap, x, dim=0)


def closed_form_cases():
    return ["gaussian", "student-t", "mixture", "lowrank-gaussian", "beta"]


@pytest.mark.parametrize("key", closed_form_cases())
def test_closed_form_crps_equals_the_integral(key):
    d, _ = distribution(key, b=2, n=3)
    y = values(key, d.mean.shape)
    if key == "gaussian":
        ours = crps(d, y)
    else:
        ours = d.crps(y)
    mean, std = d.mean.double(), d.stddev.double()
    span = 40 if key == "student-t" else 12
    cdf = d.cdf if key != "lowrank-gaussian" else d.marginal().cdf
    lo = torch.minimum(mean - span * std, y - 1)
    hi = torch.maximum(mean + span * std, y + 1)
    want = integrated_crps(cdf, y, lo, hi, n=50001 if key == "student-t" else 20001)
    torch.testing.assert_close(ours, want, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize(("a", "b", "y"), [(5.0, 5.0, 0.3), (0.3, 2.7, 0.01), (0.3, 2.7, 0.6)])
def test_beta_crps_is_scipys_quadrature_of_its_definition(a, b, y):
    """Shapes below 1 too (fractions piled up at 0, an infinite density at the bound), where
    the trapezoidal rule is coarse: scipy's adaptive quadrature, to 1e-9 in float64."""
    from scipy import integrate, stats

    def squared_gap(z):
        return (stats.beta.cdf(z, a, b) - float(z >= y)) ** 2

    below, _ = integrate.quad(squared_gap, 0.0, y, limit=500, epsabs=1e-12)
    above, _ = integrate.quad(squared_gap, y, 1.0, limit=500, epsabs=1e-12)
    d = BetaPrediction(
        torch.tensor([a], dtype=torch.float64), torch.tensor([b], dtype=torch.float64)
    )
    got = d.crps(torch.tensor([y], dtype=torch.float64))
    assert got.shape == (1,) and got.dtype == torch.float64
    assert float(got[0]) == pytest.approx(below + above, abs=1e-9)


def test_beta_crps_outside_the_support_is_the_distance_to_the_mean_less_half_the_spread():
    d = BetaPrediction(torch.tensor([2.0, 2.0], dtype=torch.float64), torch.tensor([3.0, 3.0]))
    at_zero, at_one = d.crps(torch.zeros(2)), d.crps(torch.ones(2))
    got = d.crps(torch.tensor([-0.5, 1.5]))
    want = torch.stack([at_zero[0] + 0.5, at_one[1] + 0.5])  # E|X - y| grows one for one
    torch.testing.assert_close(got, want)


def test_bernoulli_crps_is_the_brier_score():
    d, _ = distribution("bernoulli")
    y = values("bernoulli", d.mean.shape)
    want = integrated_crps(d.cdf, y, torch.full_like(y, -1.0), torch.full_like(y, 2.0))
    torch.testing.assert_close(d.crps(y), want, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(d.crps(y), (d.probs - y).square())


@pytest.mark.parametrize(
    "key",
    [
        "poisson",
        # its cdf is a quadrature: 100,001 points of it take ~30 s
        pytest.param("poisson-lognormal", marks=pytest.mark.slow),
        "negative-binomial",
        "beta-spikes",
        "bernoulli-gamma",
    ],
)
def test_sample_crps_estimates_the_integral(key):
    torch.manual_seed(5)
    d, _ = distribution(key, b=2, n=2)
    y = values(key, d.mean.shape)
    m = 20_000
    ours = d.crps(y, n_samples=m)
    lo = torch.minimum(torch.full_like(y, -1.0), y - 1)
    hi = torch.maximum(d.mean + 40 * d.stddev + 2, y + 1)
    want = integrated_crps(d.cdf, y, lo, hi, n=100001)
    # the estimate's standard error is below 1.5 std / sqrt(m): allow about 3 of them
    assert ((ours - want).abs() <= 4 * d.stddev / m**0.5 + 1e-4).all()


def test_sample_crps_of_a_point_mass_is_the_distance():
    samples = torch.full((50, 3), 2.0)
    torch.testing.assert_close(
        sample_crps(samples, torch.tensor([2.0, 3.0, 0.5])),
        torch.tensor([0.0, 1.0, 1.5], dtype=torch.float64),
    )


def test_scores_take_torch_normal():
    d = Normal(torch.zeros(2, 3, 1), torch.ones(2, 3, 1))
    assert crps(d, torch.zeros(2, 3, 1)).shape == (2, 3, 1)
    torch.testing.assert_close(quantile(d, 0.5), torch.zeros(2, 3, 1))
    with pytest.raises(TypeError, match="no CRPS"):
        crps(object(), torch.zeros(1))


def test_coverage_uses_the_familys_interval():
    from tnpx.likelihoods import covered
    from tnpx.likelihoods.counts import PoissonPrediction as Poisson

    normal = Normal(torch.zeros(1, 2, 1), torch.ones(1, 2, 1))
    y = torch.tensor([[[1.9], [2.0]]])
    assert covered(normal, y, 1.959963984540054).flatten().tolist() == [True, False]
    d = Poisson(torch.tensor([[[20.0]]]))
    lo, hi = d.quantile(0.025), d.quantile(0.975)
    assert (lo > 0).all() and (hi > lo).all()
    ys = [lo - 1, lo, hi, hi + 1]  # counts just outside and at the bounds
    inside = [bool(covered(d, v, 1.959963984540054)) for v in ys]
    assert inside == [False, True, True, False]
