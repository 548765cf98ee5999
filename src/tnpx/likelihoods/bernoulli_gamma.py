"""The ``bernoulli-gamma`` family: amounts with a point mass at zero (daily rain: dry days are
exactly 0, wet days a skewed positive amount). ``P(y > 0) = p`` by a logit; a positive amount
is ``Gamma(concentration, rate)``, both by softplus."""

from __future__ import annotations

import torch
from torch.distributions import Bernoulli, Distribution, Gamma, constraints

from .numerics import PlainHead, Scored, positive

_NO_SHAPE = torch.Size()


class BernoulliGamma(Scored, Distribution):
    """``p(y) = 1 - p`` at ``y = 0``, ``p Gamma(y; a, b)`` for ``y > 0`` (batch shape of the
    parameters, ``[b, n_tgt, dim_y]`` from the head). ``log_prob`` of an exact zero is
    ``log(1 - p)``; ``mean = p a / b``, ``variance = p a / b² + p (1 - p) (a / b)²``."""

    arg_constraints: dict = {}
    support = constraints.greater_than_eq(0.0)
    has_rsample = False

    def __init__(self, logits: torch.Tensor, concentration: torch.Tensor, rate: torch.Tensor):
        self.wet = Bernoulli(logits=logits, validate_args=False)
        self.amount = Gamma(concentration, rate, validate_args=False)
        super().__init__(batch_shape=logits.shape, validate_args=False)

    @property
    def mean(self) -> torch.Tensor:
        return self.wet.probs * self.amount.mean

    @property
    def variance(self) -> torch.Tensor:
        p, m = self.wet.probs, self.amount.mean
        return p * self.amount.variance + p * (1 - p) * m.square()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        dry = -torch.nn.functional.softplus(self.wet.logits)  # log(1 - p)
        wet = -torch.nn.functional.softplus(-self.wet.logits)  # log p
        positive_part = torch.where(value > 0, value, torch.ones_like(value))
        return torch.where(value > 0, wet + self.amount.log_prob(positive_part), dry)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        a, b = self.amount.concentration, self.amount.rate
        inside = torch.special.gammainc(a.double(), (b * value.clamp_min(0)).double())
        p = self.wet.probs.double()
        out = torch.where(value < 0, torch.zeros_like(inside), 1 - p + p * inside)
        return out.to(self.wet.probs.dtype)

    def sample(self, sample_shape: torch.Size = _NO_SHAPE) -> torch.Tensor:
        with torch.no_grad():
            return self.wet.sample(sample_shape) * self.amount.sample(sample_shape)

    def _bracket(self):  # in log(y)
        mean = self.amount.mean.double().log()
        return mean - 3, mean + 3, False, False

    def _to_x(self, t: torch.Tensor) -> torch.Tensor:
        return t.exp()

    def quantile(self, q: float | torch.Tensor) -> torch.Tensor:
        """0 where ``q <= 1 - p`` (a dry day), else the root of the cdf by bisection."""
        dry = 1 - self.wet.probs
        q = torch.as_tensor(q, dtype=dry.dtype, device=dry.device).expand(dry.shape)
        wet = q > dry
        found = super().quantile(torch.where(wet, q, (1 + dry) / 2))
        return torch.where(wet, found, torch.zeros_like(found))


class BernoulliGammaHead(PlainHead):
    """``[b, n_tgt, 3 * dim_y]`` = ``[logit of P(y > 0), concentration, rate]`` (the last two
    by softplus) -> :class:`BernoulliGamma` ``[b, n_tgt, dim_y]``."""

    family = "bernoulli-gamma"

    params_per_output = 3

    def forward(self, raw: torch.Tensor) -> BernoulliGamma:
        logits, raw_a, raw_b = raw.split(self.dim_y, dim=-1)
        return BernoulliGamma(logits, positive(raw_a), positive(raw_b))
