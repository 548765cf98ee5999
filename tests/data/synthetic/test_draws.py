"""Draws from one generator (tnpx.data.synthetic.draws): reproducible, with the moments of their
laws, and the Gamma draw the ``gp`` sampler's lengthscale prior uses unchanged."""

from __future__ import annotations

import math

import pytest
import torch

from tnpx.data.synthetic import draws
from tnpx.data.synthetic.gp import _gamma


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("shape", [0.05, 0.7, 1.0, 2.5, 30.0])
def test_gamma_has_mean_and_variance_of_its_shape(shape):
    x = draws.gamma(gen(), torch.full((40_000,), shape, dtype=torch.float64))
    assert bool((x >= 0).all())
    se = math.sqrt(shape / x.numel())
    assert abs(float(x.mean()) - shape) < 4 * se
    # log=True gives the logarithms of the same draws
    log_x = draws.gamma(gen(), torch.full((40_000,), shape, dtype=torch.float64), log=True)
    torch.testing.assert_close(log_x.exp(), x, rtol=1e-12, atol=0)


def test_gamma_per_element_shapes_and_reproducible():
    shapes = torch.tensor([[0.3, 3.0], [1.0, 10.0]], dtype=torch.float64).repeat(5000, 1, 1)
    a, b = draws.gamma(gen(4), shapes), draws.gamma(gen(4), shapes)
    assert a.shape == shapes.shape and torch.equal(a, b)
    mean = a.mean(0)
    assert bool(((mean - shapes[0]).abs() < 4 * (shapes[0] / 5000).sqrt()).all())


def test_the_gp_samplers_gamma_is_the_shared_draw():
    # the gp sampler's Beta lengthscale prior draws through draws.gamma: the numbers of the
    # former scalar-shape code (pinned from it at 7beff27), a shape below 1 included
    x = _gamma(gen(1), 3.0, 5)
    assert torch.equal(x, draws.gamma(gen(1), torch.full((5,), 3.0, dtype=torch.float64)))
    old = [3.8990065060, 3.1267327208, 2.7686585571, 3.8153919403, 1.9946871874]
    torch.testing.assert_close(x, torch.tensor(old, dtype=torch.float64), atol=1e-9, rtol=0)
    old_small = [0.8048928772, 0.3498230858, 0.1967312842]
    torch.testing.assert_close(
        _gamma(gen(1), 0.4, 3), torch.tensor(old_small, dtype=torch.float64), atol=1e-9, rtol=0
    )


def test_beta_never_divides_zero_by_zero():
    # tiny shapes underflow both Gamma draws to 0 in linear scale; the log form stays finite
    y = draws.beta(gen(), torch.full((20_000,), 1e-3), torch.full((20_000,), 1e-3))
    assert bool(torch.isfinite(y).all()) and bool(((y >= 0) & (y <= 1)).all())
    assert abs(float((y > 0.5).double().mean()) - 0.5) < 0.02  # symmetric


def test_student_t_and_negative_binomial_moments():
    t = draws.student_t(gen(), torch.tensor(6.0), (50_000,))
    assert abs(float(t.var()) - 1.5) < 0.1  # df / (df - 2)
    mean, r = torch.full((50_000,), 4.0), torch.tensor(2.0)
    y = draws.negative_binomial(gen(), mean, r)
    assert torch.equal(y, y.round())
    assert abs(float(y.mean()) - 4.0) < 4 * math.sqrt(12 / 50_000)
    assert abs(float(y.var()) - 12.0) < 1.0  # 4 + 16 / 2
