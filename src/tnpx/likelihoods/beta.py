"""The ``beta`` family: fractions in (0, 1) (cover, proportions). The mean ``m`` by a sigmoid,
the concentration ``k`` by softplus: ``Beta(m k, (1 - m) k)``. With ``spikes: true``, point
masses at exactly 0 and 1 too (no cover, full cover): the three weights ``(P(y = 0),
P(y = 1), P(0 < y < 1))`` are a softmax of two logits and a zero."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Beta, Categorical, Distribution, constraints

from .numerics import Scored, betainc, log_beta, positive

MEAN_MARGIN = 1e-6  # keeps both Beta parameters > 0 where the sigmoid saturates
_NO_SHAPE = torch.Size()


class BetaPrediction(Scored, Beta):
    """torch's ``Beta`` with ``cdf`` (``I_y(a, b)``), ``quantile`` (bisection) and the CRPS in
    closed form."""

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        a, b = self.concentration1, self.concentration0
        return betainc(a, b, value.double().clamp(0, 1)).to(a.dtype)

    def crps(self, y: torch.Tensor, n_samples: int = 0) -> torch.Tensor:
        """CRPS at ``y`` (lower is better), ``[*batch_shape]``, closed form (as in Taillardat
        et al. 2016 and scoringRules' ``crps_beta``; float64 inside): ``E|X - y| = y (2 F(y) -
        1) + mu (1 - 2 F_{a+1,b}(y))``, as ``x`` times the ``Beta(a, b)`` density is ``mu``
        times the ``Beta(a + 1, b)`` density, and ``E|X - X'| / 2 = 2 B(2a, 2b) / ((a + b)
        B(a, b)²)``. Exact for ``y`` outside [0, 1] too. ``n_samples`` is ignored (no draws)."""
        a, b = self.concentration1.double(), self.concentration0.double()
        y64 = y.double()
        inside = y64.clamp(0, 1)  # the cdfs are 0 below the support and 1 above it
        mu = a / (a + b)
        to_y = y64 * (2 * betainc(a, b, inside) - 1) + mu * (1 - 2 * betainc(a + 1, b, inside))
        half_spread = 2 * torch.exp(log_beta(2 * a, 2 * b) - 2 * log_beta(a, b)) / (a + b)
        return (to_y - half_spread).to(self.mean.dtype)

    def _bracket(self):  # in logit(y)
        zero = torch.zeros_like(self.mean, dtype=torch.float64)
        return zero - 10, zero + 10, False, False

    def _to_x(self, t: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(t)


class SpikeBeta(Scored, Distribution):
    """``P(y = 0) = w0``, ``P(y = 1) = w1``, density ``(1 - w0 - w1) Beta(y; a, b)`` inside:
    ``log_prob`` of an exact 0 (1) is ``log w0`` (``log w1``); moments by total variance."""

    arg_constraints: dict = {}
    support = constraints.unit_interval
    has_rsample = False

    def __init__(self, weights: torch.Tensor, inner: BetaPrediction):
        """``weights [..., 3]``: ``P(y = 0), P(y = 1), P(0 < y < 1)`` (summing to 1)."""
        self.weights, self.inner = weights, inner
        super().__init__(batch_shape=inner.batch_shape, validate_args=False)

    @property
    def mean(self) -> torch.Tensor:
        return self.weights[..., 1] + self.weights[..., 2] * self.inner.mean

    @property
    def variance(self) -> torch.Tensor:
        w1, wi, m = self.weights[..., 1], self.weights[..., 2], self.inner.mean
        second = w1 + wi * (self.inner.variance + m.square())
        return second - self.mean.square()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        log_w = self.weights.log()
        inner = value.clamp(MEAN_MARGIN, 1 - MEAN_MARGIN)
        inside = log_w[..., 2] + self.inner.log_prob(inner)
        return torch.where(
            value <= 0, log_w[..., 0], torch.where(value >= 1, log_w[..., 1], inside)
        )

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        w = self.weights.double()
        inside = w[..., 0] + w[..., 2] * self.inner.cdf(value).double()
        out = torch.where(value >= 1, torch.ones_like(inside), inside)
        return torch.where(value < 0, torch.zeros_like(inside), out).to(self.weights.dtype)

    def sample(self, sample_shape: torch.Size = _NO_SHAPE) -> torch.Tensor:
        with torch.no_grad():
            which = Categorical(probs=self.weights).sample(sample_shape)
            inner = self.inner.sample(sample_shape)
            return torch.where(which == 2, inner, (which == 1).to(inner.dtype))

    def _bracket(self):  # in logit(y)
        zero = torch.zeros_like(self.mean, dtype=torch.float64)
        return zero - 10, zero + 10, False, False

    def _to_x(self, t: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(t)

    def quantile(self, q: float | torch.Tensor) -> torch.Tensor:
        """0 where ``q <= P(y = 0)``, 1 where ``q > 1 - P(y = 1)``, else the root of the cdf."""
        w = self.weights
        q = torch.as_tensor(q, dtype=w.dtype, device=w.device).expand(self.mean.shape)
        inside = (q > w[..., 0]) & (q <= 1 - w[..., 1])
        found = super().quantile(torch.where(inside, q, torch.full_like(q, 0.5)))
        return torch.where(inside, found, (q > w[..., 0]).to(found.dtype))


class BetaHead(nn.Module):
    """``[b, n_tgt, n_params]`` = ``[mean logit, concentration (softplus)]`` (and, with
    ``spikes``, ``[logit of y = 0, logit of y = 1]``), each ``dim_y`` wide -> ``BetaPrediction``
    or :class:`SpikeBeta` ``[b, n_tgt, dim_y]``."""

    family = "beta"

    def __init__(self, dim_y: int, spikes: bool = False):
        super().__init__()
        if not isinstance(spikes, bool):
            raise ValueError(f"beta option spikes must be true or false, got {spikes!r}")
        self.dim_y, self.spikes = dim_y, spikes

    @property
    def n_params(self) -> int:
        """Decoder outputs this head needs per target."""
        return (4 if self.spikes else 2) * self.dim_y

    def forward(self, raw: torch.Tensor) -> BetaPrediction | SpikeBeta:
        parts = raw.split(self.dim_y, dim=-1)
        mean = torch.sigmoid(parts[0]).clamp(MEAN_MARGIN, 1 - MEAN_MARGIN)
        k = positive(parts[1])
        inner = BetaPrediction(mean * k, (1 - mean) * k, validate_args=False)
        if not self.spikes:
            return inner
        logits = torch.stack([parts[2], parts[3], torch.zeros_like(parts[2])], -1)
        return SpikeBeta(F.softmax(logits, -1), inner)
