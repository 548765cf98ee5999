"""The predictive law of the approximate per-task GP (:mod:`tnpx.gp.approx_fit`) as a
distribution that scores like a model's prediction: ``p(y) = E_q[p(y | f)]`` with ``q(f) =
N(mean, variance)`` the fitted GP's posterior marginal at each target.

- ``log_prob`` and ``cdf`` by Gauss-Hermite quadrature over ``f`` (``log_prob`` summed in log
  space, so no node's tiny density underflows);
- ``sample`` exactly: ``f ~ q(f)``, then ``y ~ p(y | f)``; the CRPS from those samples;
- ``mean`` and ``variance`` by the same quadrature (the law of total variance).

``p(y | f)`` is the family's own prediction class (``PoissonPrediction``, ``BetaPrediction``,
...), so each node's ``cdf`` is the one the neural processes' heads are scored with.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch.distributions import (
    Bernoulli,
    Beta,
    Distribution,
    NegativeBinomial,
    Normal,
    Poisson,
    StudentT,
    constraints,
)

from ..likelihoods.bernoulli import BernoulliPrediction
from ..likelihoods.beta import BetaPrediction
from ..likelihoods.counts import NegativeBinomialPrediction, PoissonPrediction
from ..likelihoods.numerics import CRPS_SAMPLES, sample_crps
from ..likelihoods.student_t import StudentTPrediction

_NO_SHAPE = torch.Size()


def as_prediction(law: Distribution) -> Distribution:
    """A GPyTorch likelihood's ``p(y | f)`` (a torch distribution) as the tnpx family's
    prediction of the same law, which has a ``cdf``."""
    if isinstance(law, Normal):
        return Normal(law.loc, law.scale)
    if isinstance(law, StudentT):
        return StudentTPrediction(law.df, law.loc, law.scale, validate_args=False)
    if isinstance(law, Bernoulli):
        return BernoulliPrediction(probs=law.probs, validate_args=False)
    if isinstance(law, Beta):
        return BetaPrediction(law.concentration1, law.concentration0, validate_args=False)
    if isinstance(law, Poisson):
        return PoissonPrediction(law.rate)
    if isinstance(law, NegativeBinomial):
        return NegativeBinomialPrediction.from_logits(law.total_count, law.logits)
    raise TypeError(f"no tnpx prediction for a {type(law).__name__}")


class QuadraturePredictive(Distribution):
    """``E_q[p(y | f)]`` per target, batch shape ``[batch, n_tgt, 1]`` (one output).

    Args:
        mean, variance: ``q(f)``'s moments at the targets, ``[batch, n_tgt]`` float64.
        law: ``f [..., batch, n_tgt] -> p(y | f)``, a distribution of the same batch shape
            with ``log_prob``, ``cdf``, ``mean``, ``variance`` and ``sample``.
        nodes: Gauss-Hermite nodes.
    """

    arg_constraints: dict = {}
    support = constraints.real
    has_rsample = False

    def __init__(
        self,
        mean: torch.Tensor,
        variance: torch.Tensor,
        law: Callable[[torch.Tensor], Distribution],
        nodes: int = 20,
    ):
        self.f_mean, self.f_std, self.law = mean, variance.clamp_min(0).sqrt(), law
        x, w = (
            torch.as_tensor(a, dtype=torch.float64) for a in np.polynomial.hermite.hermgauss(nodes)
        )
        shape = (-1,) + (1,) * mean.dim()
        self._f = mean + math.sqrt(2) * self.f_std * x.view(shape)  # [nodes, batch, n_tgt]
        self._log_w = (w.log() - 0.5 * math.log(math.pi)).view(shape)  # sums to 1
        self._at_nodes = law(self._f)
        super().__init__(batch_shape=(*mean.shape, 1), validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``log p(y)`` ``[batch, n_tgt, 1]`` for ``value [batch, n_tgt, 1]``."""
        log_p = self._at_nodes.log_prob(value[..., 0].to(self._f))
        return torch.logsumexp(log_p + self._log_w, 0)[..., None]

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(Y <= y)`` ``[batch, n_tgt, 1]``."""
        below = self._at_nodes.cdf(value[..., 0].to(self._f))
        return (below.double() * self._log_w.exp()).sum(0)[..., None]

    @property
    def mean(self) -> torch.Tensor:
        return (self._at_nodes.mean * self._log_w.exp()).sum(0)[..., None]

    @property
    def variance(self) -> torch.Tensor:
        w, at = self._log_w.exp(), self._at_nodes
        second = ((at.variance + at.mean.square()) * w).sum(0)
        return (second - self.mean[..., 0].square()).clamp_min(0)[..., None]

    def sample(self, sample_shape: torch.Size = _NO_SHAPE) -> torch.Tensor:
        """``[*sample_shape, batch, n_tgt, 1]``: ``f ~ q(f)`` then ``y ~ p(y | f)``, exactly."""
        shape = torch.Size(sample_shape)
        with torch.no_grad():
            noise = torch.randn(*shape, *self.f_mean.shape, dtype=self.f_mean.dtype)
            return self.law(self.f_mean + self.f_std * noise).sample()[..., None]

    def crps(self, y: torch.Tensor, n_samples: int = CRPS_SAMPLES) -> torch.Tensor:
        """The sample CRPS at ``y [batch, n_tgt, 1]`` (``n_samples`` exact draws)."""
        return sample_crps(self.sample((n_samples,)), y)
