"""Acquisition functions for minimisation, by name: BoTorch's own, plus the one variant it lacks.

``kr-ei`` is the expected improvement of the TNP-KR code (PROTOCOLS KR-2), which differs from
BoTorch's ``ExpectedImprovement`` only by a jitter in the standardised improvement,
``z = (best - mu) / (sigma + 1e-5)``; every other name is a BoTorch class set up to minimise.
"""

from __future__ import annotations

import torch
from botorch.acquisition import (
    ExpectedImprovement,
    LogExpectedImprovement,
    ProbabilityOfImprovement,
    UpperConfidenceBound,
    qExpectedImprovement,
    qLogExpectedImprovement,
    qUpperConfidenceBound,
)
from botorch.acquisition.analytic import AnalyticAcquisitionFunction
from botorch.acquisition.objective import GenericMCObjective
from botorch.models.model import Model
from botorch.utils.transforms import t_batch_mode_transform
from torch.distributions import Normal

ACQUISITIONS = ("kr-ei", "ei", "logei", "pi", "ucb", "qei", "qlogei", "qucb")


class JitteredExpectedImprovement(AnalyticAcquisitionFunction):
    """EI for minimisation as the TNP-KR code computes it:
    ``EI = (best - mu) Phi(z) + sigma phi(z)``, ``z = (best - mu) / (sigma + eps)``."""

    def __init__(self, model: Model, best_f: float | torch.Tensor, eps: float = 1e-5):
        super().__init__(model=model)
        self.register_buffer("best_f", torch.as_tensor(best_f))
        self.eps = eps

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``X [b, 1, d]`` -> ``[b]``."""
        mean, sigma = self._mean_and_sigma(X)  # [b, 1]: one output
        mean, sigma = mean.squeeze(-1), sigma.squeeze(-1)
        improvement = self.best_f.to(mean) - mean
        z = improvement / (sigma + self.eps)
        unit = Normal(torch.zeros_like(z), torch.ones_like(z))
        return improvement * unit.cdf(z) + sigma * unit.log_prob(z).exp()


def _negate(samples: torch.Tensor, X: torch.Tensor | None = None) -> torch.Tensor:
    return -samples[..., 0]


def make_acquisition(name: str, model: Model, best_f: float, beta: float = 2.0):
    """The acquisition ``name`` (one of :data:`ACQUISITIONS`) to *minimise* a single output;
    ``best_f`` is the lowest value observed so far, ``beta`` the UCB exploration weight."""
    if name == "kr-ei":
        return JitteredExpectedImprovement(model, best_f)
    if name == "ei":
        return ExpectedImprovement(model, best_f, maximize=False)
    if name == "logei":
        return LogExpectedImprovement(model, best_f, maximize=False)
    if name == "pi":
        return ProbabilityOfImprovement(model, best_f, maximize=False)
    if name == "ucb":
        return UpperConfidenceBound(model, beta, maximize=False)
    # MC acquisitions maximise an objective: minimise y by maximising -y.
    negate = GenericMCObjective(_negate)
    if name == "qei":
        return qExpectedImprovement(model, -best_f, objective=negate)
    if name == "qlogei":
        return qLogExpectedImprovement(model, -best_f, objective=negate)
    if name == "qucb":
        return qUpperConfidenceBound(model, beta, objective=negate)
    raise ValueError(f"unknown acquisition {name!r}; choose from {', '.join(ACQUISITIONS)}")
