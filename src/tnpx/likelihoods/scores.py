"""Scoring any tnpx prediction the same way: :func:`crps`, :func:`quantile` and
:func:`target_log_prob`, for the families' distributions (their own methods) and for torch's
``Normal`` that the gaussian heads return."""

from __future__ import annotations

import torch
from torch.distributions import Distribution, Normal

from ..distributions import JointGaussian, LatentMixture
from .gaussian import normal_crps
from .lowrank import LowRankPrediction
from .numerics import CRPS_SAMPLES, sample_crps


def crps(pred: Distribution, y: torch.Tensor) -> torch.Tensor:
    """CRPS of ``pred`` at ``y [b, n_tgt, dim_y]`` per target and output (lower is better):
    closed form for Normal, Student-t, mixture, Bernoulli and low-rank Gaussian marginals and
    a joint Gaussian's (TNP-ND's) Normal marginals, else a sample estimate
    (``tnpx.likelihoods.numerics.CRPS_SAMPLES`` draws; a latent NP's mixture too)."""
    if hasattr(pred, "crps"):
        return pred.crps(y)
    if isinstance(pred, Normal):
        return normal_crps(pred.loc, pred.scale, y)
    if isinstance(pred, JointGaussian):
        return normal_crps(pred.mean, pred.stddev, y)
    if isinstance(pred, LatentMixture):  # each draw's marginal is the mixture's
        return sample_crps(pred.sample((CRPS_SAMPLES,)), y).to(pred.mean.dtype)
    raise TypeError(f"no CRPS for a {type(pred).__name__} prediction")


def quantile(pred: Distribution, q: float | torch.Tensor) -> torch.Tensor:
    """The ``q``-quantile of ``pred`` per target and output, ``[b, n_tgt, dim_y]``."""
    if hasattr(pred, "quantile"):
        return pred.quantile(q)
    if isinstance(pred, Normal):
        q = torch.as_tensor(q, dtype=pred.loc.dtype, device=pred.loc.device)
        return pred.icdf(q.expand(pred.loc.shape))
    raise TypeError(f"no quantile for a {type(pred).__name__} prediction")


def target_log_prob(pred: Distribution, y: torch.Tensor) -> torch.Tensor:
    """``log p(y_t)`` per target ``[b, n_tgt]``: summed over outputs, or (``lowrank-gaussian``,
    whose ``log_prob`` is already per target) as it is."""
    values = pred.log_prob(y)
    return values if values.dim() == y.dim() - 1 else values.sum(-1)


def covered(pred: Distribution, y: torch.Tensor, z: float) -> torch.Tensor:
    """Whether ``y [b, n_tgt, dim_y]`` lies in ``pred``'s central interval of the level that
    ``mean ± z std`` has for a Normal: exactly ``|y - mean| <= z std`` for Gaussian predictions
    (torch's ``Normal``, the joint and latent Gaussians, ``lowrank-gaussian``'s marginals), else
    between the family's quantiles at ``Phi(-z)`` and ``Phi(z)`` (bool)."""
    if not hasattr(pred, "quantile") or isinstance(pred, LowRankPrediction):
        return (y - pred.mean).abs() <= z * pred.stddev
    upper = float(Normal(0.0, 1.0).cdf(torch.tensor(z)))
    return (y >= pred.quantile(1 - upper)) & (y <= pred.quantile(upper))
