"""The Beta-headroom study's closed-form Beta CRPS against scipy's adaptive quadrature of its
definition, shapes below 1 (fractions piled up at 0) included."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from experiments.likelihoods.beta_headroom import beta_crps


@pytest.mark.parametrize(("a", "b", "y"), [(5.0, 5.0, 0.3), (0.3, 2.7, 0.01), (0.3, 2.7, 0.6)])
def test_the_beta_crps_is_the_integral_of_its_definition(a, b, y):
    def squared_gap(z):
        return (stats.beta.cdf(z, a, b) - float(z >= y)) ** 2

    below, _ = integrate.quad(squared_gap, 0.0, y, limit=500, epsabs=1e-12)
    above, _ = integrate.quad(squared_gap, y, 1.0, limit=500, epsabs=1e-12)
    got = beta_crps(np.array([a]), np.array([b]), np.array([y]))
    assert got.shape == (1,)
    assert float(got[0]) == pytest.approx(below + above, abs=1e-9)
