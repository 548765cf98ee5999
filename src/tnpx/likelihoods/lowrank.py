"""The ``lowrank-gaussian`` family: the outputs of each target move together (temperature and
humidity at a station). Per target, one Gaussian over its ``dim_y`` outputs with covariance
``W W^T + diag(d)``, ``W`` of ``rank`` columns (``rank: 1`` by default); targets stay
independent given the context.

Shapes differ from the other families: the batch shape is ``[b, n_tgt]`` and the event shape
``[dim_y]``, so ``log_prob(y [b, n_tgt, dim_y])`` is ``[b, n_tgt]``, each target's outputs
jointly (``tnpx.batch.observed_score`` takes it; a target with some outputs missing cannot be
scored by it). ``mean``, ``variance`` (the marginal variances), ``quantile`` and ``crps`` are
per output, ``[b, n_tgt, dim_y]``: each output's marginal is a Normal.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.distributions import LowRankMultivariateNormal, Normal

from .gaussian import normal_crps
from .numerics import positive


class LowRankPrediction(LowRankMultivariateNormal):
    """torch's ``LowRankMultivariateNormal`` with per-output ``cdf``, ``quantile`` and CRPS
    (of each output's Normal marginal)."""

    def marginal(self) -> Normal:
        """Each output's own Normal, ``[b, n_tgt, dim_y]``."""
        return Normal(self.mean, self.variance.sqrt(), validate_args=False)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        return self.marginal().cdf(value)

    def quantile(self, q: float | torch.Tensor) -> torch.Tensor:
        q = torch.as_tensor(q, dtype=self.mean.dtype, device=self.mean.device)
        return self.marginal().icdf(q.expand(self.mean.shape))

    def crps(self, y: torch.Tensor, n_samples: int = 0) -> torch.Tensor:
        return normal_crps(self.mean, self.variance.sqrt(), y)


class LowRankHead(nn.Module):
    """``[b, n_tgt, (2 + rank) * dim_y]`` = ``[mean, diagonal (softplus + min_std²), factor
    (dim_y x rank, row-major)]`` -> :class:`LowRankPrediction` (batch ``[b, n_tgt]``, event
    ``[dim_y]``)."""

    family = "lowrank-gaussian"

    def __init__(self, dim_y: int, min_std: float = 1e-3, rank: int = 1):
        super().__init__()
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"lowrank-gaussian option rank must be an integer >= 1, got {rank!r}")
        if dim_y < 2:
            raise ValueError(
                f"lowrank-gaussian correlates the outputs of a target: it needs dim_y >= 2, "
                f"got dim_y={dim_y}; use gaussian for one output"
            )
        self.dim_y, self.min_std, self.rank = dim_y, min_std, rank

    @property
    def n_params(self) -> int:
        """Decoder outputs this head needs per target."""
        return (2 + self.rank) * self.dim_y

    def forward(self, raw: torch.Tensor) -> LowRankPrediction:
        d = self.dim_y
        mean, raw_diag, factor = raw.split([d, d, d * self.rank], dim=-1)
        diag = positive(raw_diag, self.min_std**2)
        factor = factor.reshape(*raw.shape[:-1], d, self.rank)
        return LowRankPrediction(mean, factor, diag, validate_args=False)
