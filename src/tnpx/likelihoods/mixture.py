"""The ``mixture`` family: ``K`` Gaussian components per target and output with softmax
weights (``components: K``, default 3), for multimodal predictions."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import Categorical, MixtureSameFamily, Normal

from .numerics import Scored, positive


def _spread(mu: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """``E|X|`` for ``X ~ N(mu, var)``: ``2 s phi(mu / s) + mu (2 Phi(mu / s) - 1)``."""
    s = var.sqrt()
    z = mu / s
    pdf = torch.exp(-0.5 * z.square()) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    return 2 * s * pdf + mu * (2 * cdf - 1)


class GaussianMixture(Scored, MixtureSameFamily):
    """torch's ``MixtureSameFamily`` of ``Normal`` components (the component axis last:
    ``[b, n_tgt, dim_y, K]``), with ``quantile`` (bisection on the cdf) and the closed-form
    CRPS."""

    def crps(self, y: torch.Tensor, n_samples: int = 0) -> torch.Tensor:
        """Closed form (Grimit et al. 2006): ``sum_i w_i E|X_i - y|
        - 1/2 sum_ij w_i w_j E|X_i - X_j|`` with ``E|N(mu, s²)|`` as in :func:`_spread`."""
        w = self.mixture_distribution.probs.double()  # [..., K]
        mu = self.component_distribution.loc.double()
        var = self.component_distribution.scale.double().square()
        to_y = (w * _spread(y.double()[..., None] - mu, var)).sum(-1)
        pair_mu = mu[..., :, None] - mu[..., None, :]
        pair_var = var[..., :, None] + var[..., None, :]
        pairs = (w[..., :, None] * w[..., None, :] * _spread(pair_mu, pair_var)).sum((-2, -1))
        return (to_y - 0.5 * pairs).to(self.mean.dtype)


class MixtureHead(nn.Module):
    """``[b, n_tgt, 3 * K * dim_y]`` = ``[weight logits, means, scales (softplus + min_std)]``,
    each ``[dim_y, K]`` -> :class:`GaussianMixture` ``[b, n_tgt, dim_y]``."""

    family = "mixture"

    def __init__(self, dim_y: int, min_std: float = 1e-3, components: int = 3):
        super().__init__()
        if isinstance(components, bool) or not isinstance(components, int) or components < 1:
            raise ValueError(
                f"mixture option components must be an integer >= 1, got {components!r}"
            )
        self.dim_y, self.min_std, self.components = dim_y, min_std, components

    @property
    def n_params(self) -> int:
        """Decoder outputs this head needs per target."""
        return 3 * self.components * self.dim_y

    def forward(self, raw: torch.Tensor) -> GaussianMixture:
        shape = (*raw.shape[:-1], 3, self.dim_y, self.components)
        logits, loc, raw_scale = raw.reshape(shape).unbind(-3)
        parts = Normal(loc, positive(raw_scale, self.min_std), validate_args=False)
        weights = Categorical(logits=logits, validate_args=False)
        return GaussianMixture(weights, parts, validate_args=False)
