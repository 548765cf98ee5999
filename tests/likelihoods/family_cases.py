"""Each family's distribution from random decoder outputs (float64), with values in its
support, shared by the likelihood tests."""

from __future__ import annotations

import torch

from tnpx.likelihoods import build_likelihood

# option -> dim_y of its cases
OPTIONS = {
    "gaussian": 2,
    "homoscedastic": 2,
    "student-t": 2,
    "student-t-shared": 2,
    "bernoulli": 2,
    "bernoulli-gamma": 2,
    "poisson": 2,
    "poisson-lognormal": 2,
    "negative-binomial": 2,
    "beta": 2,
    "beta-spikes": 2,
    "mixture": 2,
    "lowrank-gaussian": 3,
}


def option(key: str):
    """The ``likelihood`` option a case key stands for."""
    return {
        "student-t-shared": {"name": "student-t", "df": "shared"},
        "beta-spikes": {"name": "beta", "spikes": True},
        "poisson-lognormal": {"name": "poisson", "overdispersion": "lognormal"},
        "mixture": {"name": "mixture", "components": 3},
        "lowrank-gaussian": {"name": "lowrank-gaussian", "rank": 2},
    }.get(key, key)


def distribution(key: str, b: int = 3, n: int = 4, seed: int = 0):
    """``(dist, head)`` for case ``key`` from ``raw ~ N(0, 1)`` ``[b, n, n_params]`` (float64)."""
    g = torch.Generator().manual_seed(seed)
    head = build_likelihood(option(key), OPTIONS[key], 1e-3).double()
    raw = torch.randn(b, n, head.n_params, generator=g, dtype=torch.float64)
    return head(raw), head


def values(key: str, shape, seed: int = 1) -> torch.Tensor:
    """Values in the family's support ``shape`` (float64), exact zeros and ones included where
    the family has point masses there."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(shape, generator=g, dtype=torch.float64)
    if key == "bernoulli":
        return (u > 0.5).double()
    if key == "bernoulli-gamma":
        return torch.where(u < 0.4, torch.zeros_like(u), 3 * u)
    if key in ("poisson", "poisson-lognormal", "negative-binomial"):
        return torch.floor(6 * u)
    if key == "beta":
        return 0.02 + 0.96 * u
    if key == "beta-spikes":
        return torch.where(u < 0.2, 0.0, torch.where(u > 0.8, 1.0, u)).double()
    return 3 * torch.randn(shape, generator=g, dtype=torch.float64)
