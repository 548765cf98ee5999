"""Predictive distributions whose targets are not independent given the context.

- :class:`LatentMixture`: an equal-weight mixture over ``K`` samples (latent draws ``z_k`` or
  bootstrap contexts) of conditionally independent Gaussians, as latent-variable and
  bootstrapping NPs predict.
- :class:`JointGaussian`: one Gaussian over all targets of a task (TNP-ND), with a
  low-rank-plus-diagonal or a Cholesky covariance.

Both keep the contract every tnpx prediction has: ``mean``, ``stddev`` and ``log_prob(yt)``
are per target point and output dimension, ``[batch, n_tgt, dim_y]`` (``log_prob`` is the
marginal density of each scalar). On top, ``joint_log_prob(yt)`` ``[batch]`` scores all
targets of a task jointly and ``sample()`` draws joint samples.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch.distributions import (
    Distribution,
    LowRankMultivariateNormal,
    MultivariateNormal,
    Normal,
    constraints,
)


def _at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32 if it is in a half precision (float16, bfloat16), else as it is."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _without_autocast(device: torch.device):
    """A block where ``device``'s autocast is off (its matrix products then stay in float32
    for the solves after them); no change where the device has no autocast (``meta``)."""
    if torch.amp.is_autocast_available(device.type):
        return torch.autocast(device.type, enabled=False)
    return contextlib.nullcontext()


def logmeanexp(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """``log(mean(exp(x)))`` over ``dim``, computed stably."""
    return torch.logsumexp(x, dim) - math.log(x.shape[dim])


class LatentMixture(Distribution):
    """``p(y_T) = 1/K sum_k prod_{t,d} N(y_td; mu_ktd, sigma_ktd^2)``.

    ``component`` is a ``Normal`` with batch shape ``[K, batch, n_tgt, dim_y]``: component ``k``
    is the model's prediction given the ``k``-th latent sample (or bootstrap context). The
    distribution's own batch shape is ``[batch, n_tgt, dim_y]``.

    - ``mean``, ``variance`` / ``stddev``: the mixture's moments, by the law of total variance
      ``Var[y] = E_k[sigma_k^2] + Var_k[mu_k]``.
    - ``log_prob(yt)`` ``[batch, n_tgt, dim_y]``: each scalar's marginal mixture density,
      ``logmeanexp_k log N(y_td; mu_ktd, sigma_ktd^2)``.
    - ``target_log_prob(yt)`` ``[batch, n_tgt]``: each target's outputs jointly, marginal over
      the other targets, ``logmeanexp_k sum_d log N(...)``.
    - ``joint_log_prob(yt)`` ``[batch]``: all targets jointly,
      ``logmeanexp_k sum_{t,d} log N(...)``. With ``z_k`` drawn from the model's ``p(z | C)``
      this is the importance-sampled (prior-proposal) estimate of ``log p(y_T | C)``: biased
      low for finite ``K`` (Jensen), consistent as ``K`` grows.
    - ``sample(shape)``: joint samples ``shape + [batch, n_tgt, dim_y]``: per sample and task,
      a component ``k`` uniformly, then every target from that component's Gaussian.
    """

    arg_constraints: dict = {}
    support = constraints.real
    has_rsample = False

    def __init__(self, component: Normal):
        if len(component.batch_shape) != 4:
            raise ValueError(
                "component: expected batch shape [K, batch, n_tgt, dim_y], "
                f"got {list(component.batch_shape)}"
            )
        self.component = component
        super().__init__(batch_shape=component.batch_shape[1:], validate_args=False)

    @property
    def n_components(self) -> int:
        return self.component.batch_shape[0]

    @property
    def mean(self) -> torch.Tensor:
        return self.component.mean.mean(0)

    @property
    def variance(self) -> torch.Tensor:
        spread = (self.component.mean - self.mean).square().mean(0)
        return self.component.variance.mean(0) + spread

    def _component_log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return self.component.log_prob(value.unsqueeze(-4))  # [K, b, n_tgt, dim_y]

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """value ``[batch, n_tgt, dim_y]`` -> per-scalar marginal ``[batch, n_tgt, dim_y]``."""
        return logmeanexp(self._component_log_prob(value), 0)

    def target_log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """value ``[batch, n_tgt, dim_y]`` -> per-target marginal ``[batch, n_tgt]``."""
        return logmeanexp(self._component_log_prob(value).sum(-1), 0)

    def joint_log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """value ``[batch, n_tgt, dim_y]`` -> joint log-density estimate ``[batch]``."""
        return logmeanexp(self._component_log_prob(value).sum((-1, -2)), 0)

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | tuple = ()) -> torch.Tensor:
        """Joint samples ``sample_shape + [batch, n_tgt, dim_y]`` (global RNG)."""
        shape = torch.Size(sample_shape)
        n_batch = self.batch_shape[0]
        device = self.component.mean.device
        k = torch.randint(self.n_components, (*shape, n_batch), device=device)
        task = torch.arange(n_batch, device=device).expand_as(k)
        loc, scale = self.component.mean[k, task], self.component.stddev[k, task]
        return loc + scale * torch.randn_like(loc)


class JointGaussian(Distribution):
    """A Gaussian over all ``n = n_tgt * dim_y`` outputs of a task, flattened target-major
    (flat index ``t * dim_y + d``).

    Build it with :meth:`low_rank` (``Sigma = F F^T + diag(D)``) or :meth:`cholesky`
    (``Sigma = L L^T``). ``mean``, ``stddev`` and ``log_prob`` are the per-scalar marginals
    ``[batch, n_tgt, dim_y]`` (``log_prob`` uses the diagonal of ``Sigma``);
    ``joint_log_prob(yt)`` ``[batch]`` is the full multivariate log-density; ``sample`` and
    ``rsample`` draw joint samples.
    """

    arg_constraints: dict = {}
    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        loc: torch.Tensor,
        cov_factor: torch.Tensor | None = None,
        cov_diag: torch.Tensor | None = None,
        scale_tril: torch.Tensor | None = None,
    ):
        if (scale_tril is None) == (cov_factor is None or cov_diag is None):
            raise ValueError("give either cov_factor and cov_diag, or scale_tril")
        self.loc, self.cov_factor, self.cov_diag, self.scale_tril = (
            loc,
            cov_factor,
            cov_diag,
            scale_tril,
        )
        super().__init__(batch_shape=loc.shape, validate_args=False)

    @classmethod
    def low_rank(cls, loc: torch.Tensor, factor: torch.Tensor, diag: torch.Tensor):
        """loc ``[b, n_tgt, dim_y]``, factor ``[b, n, rank]``, diag ``[b, n]`` (positive)."""
        return cls(loc, cov_factor=factor, cov_diag=diag)

    @classmethod
    def cholesky(cls, loc: torch.Tensor, scale_tril: torch.Tensor):
        """loc ``[b, n_tgt, dim_y]``, scale_tril ``[b, n, n]`` (lower, positive diagonal)."""
        return cls(loc, scale_tril=scale_tril)

    @property
    def _n_outputs(self) -> int:
        return self.loc.shape[-2] * self.loc.shape[-1]

    @property
    def mean(self) -> torch.Tensor:
        return self.loc

    @property
    def variance(self) -> torch.Tensor:
        if self.scale_tril is not None:
            diag = self.scale_tril.square().sum(-1)
        else:
            diag = self.cov_factor.square().sum(-1) + self.cov_diag
        return diag.reshape(self.loc.shape)

    @property
    def covariance_matrix(self) -> torch.Tensor:
        """``[batch, n, n]``."""
        if self.scale_tril is not None:
            return self.scale_tril @ self.scale_tril.mT
        return self.cov_factor @ self.cov_factor.mT + torch.diag_embed(self.cov_diag)

    def flat(self) -> MultivariateNormal | LowRankMultivariateNormal:
        """The same distribution as torch's ``[batch]`` multivariate normal over ``n`` outputs,
        in float32 at least: torch has no float16 or bfloat16 triangular solve or Cholesky,
        and a mixed-precision forward (``train.precision``) makes the factors in them."""
        loc = _at_least_float32(self.loc.flatten(1))
        if self.scale_tril is not None:
            tril = _at_least_float32(self.scale_tril)
            return MultivariateNormal(loc, scale_tril=tril, validate_args=False)
        factor, diag = _at_least_float32(self.cov_factor), _at_least_float32(self.cov_diag)
        return LowRankMultivariateNormal(loc, factor, diag, validate_args=False)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """value ``[batch, n_tgt, dim_y]`` -> per-scalar marginal ``[batch, n_tgt, dim_y]``."""
        return Normal(self.loc, self.stddev, validate_args=False).log_prob(value)

    def joint_log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """value ``[batch, n_tgt, dim_y]`` -> joint log-density ``[batch]``."""
        if self._n_outputs == 0:  # no targets: the empty product
            return value.new_zeros(value.shape[0])
        with _without_autocast(value.device):
            return self.flat().log_prob(_at_least_float32(value.flatten(1)))

    def rsample(self, sample_shape: torch.Size | tuple = ()) -> torch.Tensor:
        """Joint samples ``sample_shape + [batch, n_tgt, dim_y]`` (global RNG)."""
        shape = torch.Size(sample_shape)
        if self._n_outputs == 0:
            return self.loc.expand(*shape, *self.loc.shape)
        with _without_autocast(self.loc.device):
            return self.flat().rsample(shape).reshape(*shape, *self.loc.shape)
