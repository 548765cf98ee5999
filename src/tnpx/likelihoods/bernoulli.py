"""The ``bernoulli`` family: yes/no outcomes (0/1), by a logit link. ``mean`` is ``P(y = 1)``."""

from __future__ import annotations

import torch
from torch.distributions import Bernoulli

from .numerics import PlainHead


class BernoulliPrediction(Bernoulli):
    """torch's ``Bernoulli`` (``mean = probs = P(y = 1)``) with ``cdf``, ``quantile`` and the
    closed-form CRPS."""

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(Y <= value)``: 0 below 0, ``1 - p`` on ``[0, 1)``, 1 from 1."""
        below = torch.where(value < 1, 1 - self.probs, torch.ones_like(self.probs))
        return torch.where(value < 0, torch.zeros_like(self.probs), below)

    def quantile(self, q: float | torch.Tensor) -> torch.Tensor:
        """0 where ``q <= 1 - p``, else 1 (the smallest ``y`` with ``cdf(y) >= q``)."""
        q = torch.as_tensor(q, dtype=self.probs.dtype, device=self.probs.device)
        return (q > 1 - self.probs).to(self.probs.dtype)

    def crps(self, y: torch.Tensor, n_samples: int = 0) -> torch.Tensor:
        """``(p - y)²`` for ``y`` in {0, 1}: the CRPS of a binary forecast is its Brier score."""
        return (self.probs - y).square()


class BernoulliHead(PlainHead):
    """``[b, n_tgt, dim_y]`` logits -> ``BernoulliPrediction`` ``[b, n_tgt, dim_y]``."""

    family = "bernoulli"

    params_per_output = 1

    def forward(self, raw: torch.Tensor) -> BernoulliPrediction:
        return BernoulliPrediction(logits=raw, validate_args=False)
