"""The count families: ``poisson`` (log link for the rate) and ``negative-binomial`` (mean by a
log link, ``total_count`` by softplus: overdispersed counts, ``variance = mean + mean² /
total_count``).

Both take an optional ``exposure`` (``[b, n_tgt, dim_y]`` or broadcastable, > 0): the rate,
or the mean, is multiplied by it (cases per population, counts per hour observed). The heads'
``forward(raw, exposure=None)`` accept it; models call the heads without one (exposure 1) and
:mod:`tnpx.models.exposure` puts a batch's exposures on the prediction (the ``table`` source's
option ``exposure``, the ``gp-link`` sampler's ``exposure_c`` / ``exposure_t``).
"""

from __future__ import annotations

import torch
from torch.distributions import NegativeBinomial, Poisson

from .numerics import PlainHead, Scored, betainc, positive

# the families whose prediction takes an exposure (a data source's option ``exposure``)
EXPOSURE_FAMILIES = ("poisson", "negative-binomial")
MAX_LOG_RATE = 30.0  # exp(30) ~ 1e13 counts: beyond, float32 rates lose all precision


class _Counts(Scored):
    """``quantile`` by the count rule (the smallest ``k`` with ``P(Y <= k) >= q``)."""

    counts = True

    def _bracket(self):
        lo = torch.full_like(self.mean, -1.0, dtype=torch.float64)
        return lo, self.mean.double() + 3 * self.variance.double().sqrt() + 1, True, False


class PoissonPrediction(_Counts, Poisson):
    """torch's ``Poisson`` with ``cdf`` (``Q(k + 1, rate)``), ``quantile`` and the sample CRPS;
    ``exposure`` multiplies the rate."""

    def __init__(self, rate: torch.Tensor, exposure: torch.Tensor | None = None):
        super().__init__(rate if exposure is None else rate * exposure, validate_args=False)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        k = torch.floor(value.double())
        inside = torch.special.gammaincc(k.clamp_min(0) + 1, self.rate.double())
        return torch.where(k < 0, torch.zeros_like(inside), inside).to(self.rate.dtype)


class NegativeBinomialPrediction(_Counts, NegativeBinomial):
    """torch's ``NegativeBinomial`` parametrised by its ``mean`` (times ``exposure``) and
    ``total_count`` r (``probs = mean / (mean + r)``), with ``cdf`` (``I_{1-p}(r, k + 1)``),
    ``quantile`` and the sample CRPS."""

    def __init__(
        self, mean: torch.Tensor, total_count: torch.Tensor, exposure: torch.Tensor | None = None
    ):
        mean = mean if exposure is None else mean * exposure
        logits = mean.log() - total_count.log()
        super().__init__(total_count, logits=logits, validate_args=False)

    @classmethod
    def from_logits(
        cls, total_count: torch.Tensor, logits: torch.Tensor
    ) -> NegativeBinomialPrediction:
        """The prediction of ``total_count`` r and ``logits`` ``log(mean / r)`` taken as they
        are (no round trip through the mean: a logit shifted by ``log 1`` stays bit for bit)."""
        prediction = cls.__new__(cls)
        NegativeBinomial.__init__(prediction, total_count, logits=logits, validate_args=False)
        return prediction

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        k = torch.floor(value.double())
        r, p = self.total_count.double(), self.probs.double()
        inside = betainc(r, k.clamp_min(0) + 1, 1 - p).double()
        return torch.where(k < 0, torch.zeros_like(inside), inside).to(self.probs.dtype)


class PoissonHead(PlainHead):
    """``[b, n_tgt, dim_y]`` log rates -> :class:`PoissonPrediction` ``[b, n_tgt, dim_y]``
    (the log rate is clamped to [-30, 30])."""

    family = "poisson"

    params_per_output = 1

    def forward(self, raw: torch.Tensor, exposure: torch.Tensor | None = None) -> PoissonPrediction:
        return PoissonPrediction(raw.clamp(-MAX_LOG_RATE, MAX_LOG_RATE).exp(), exposure)


class NegativeBinomialHead(PlainHead):
    """``[b, n_tgt, 2 * dim_y]`` = ``[log mean, total_count (softplus)]`` ->
    :class:`NegativeBinomialPrediction` ``[b, n_tgt, dim_y]``."""

    family = "negative-binomial"

    params_per_output = 2

    def forward(
        self, raw: torch.Tensor, exposure: torch.Tensor | None = None
    ) -> NegativeBinomialPrediction:
        log_mean, raw_r = raw.split(self.dim_y, dim=-1)
        mean = log_mean.clamp(-MAX_LOG_RATE, MAX_LOG_RATE).exp()
        return NegativeBinomialPrediction(mean, positive(raw_r), exposure)
