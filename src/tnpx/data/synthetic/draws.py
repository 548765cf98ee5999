"""Random draws taken from one ``torch.Generator``, in float64, for the synthetic priors.

``torch.distributions`` samples from the global random state (it takes no generator), so a
sampler that must be a pure function of its generator (:mod:`tnpx.data.base`) draws with these.
Each takes tensors of parameters and returns a tensor of their broadcast shape.
"""

from __future__ import annotations

import torch


def gamma(g: torch.Generator, concentration: torch.Tensor, log: bool = False) -> torch.Tensor:
    """``Gamma(concentration, rate 1)`` draws, float64, the shape of ``concentration``; with
    ``log``, their logarithms (the same draws), finite where a small concentration's draw
    underflows to 0.

    Marsaglia and Tsang's squeeze method (2000), vectorised: each round proposes for the values
    still undecided; a concentration ``a < 1`` draws ``Gamma(a + 1)`` times ``U^(1 / a)``."""
    a = concentration.to(torch.float64).reshape(-1)
    n = a.numel()
    boost = a < 1
    a_up = torch.where(boost, a + 1.0, a)
    d = a_up - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    out = torch.empty(n, dtype=torch.float64)
    todo = torch.arange(n)
    while todo.numel():
        m = todo.numel()
        x = torch.randn(m, generator=g, dtype=torch.float64)
        u = torch.rand(m, generator=g, dtype=torch.float64)
        dt, ct = d[todo], c[todo]
        v = (1 + ct * x).pow(3)
        ok = (v > 0) & (u.log() < 0.5 * x.pow(2) + dt - dt * v + dt * v.clamp_min(1e-300).log())
        out[todo[ok]] = (dt * v)[ok]
        todo = todo[~ok]
    if bool(boost.any()):
        u = torch.rand(n, generator=g, dtype=torch.float64)
        if log:
            out = out.log() + torch.where(boost, u.log() / a, 0.0)
        else:
            out = torch.where(boost, out * u.pow(1.0 / a), out)
    elif log:
        out = out.log()
    return out.reshape(concentration.shape)


def poisson(g: torch.Generator, rate: torch.Tensor) -> torch.Tensor:
    """``Poisson(rate)`` counts as float64 (whole numbers)."""
    return torch.poisson(rate.to(torch.float64), generator=g)


def bernoulli(g: torch.Generator, probs: torch.Tensor) -> torch.Tensor:
    """``Bernoulli(probs)`` outcomes, 0.0 or 1.0 in float64."""
    return (torch.rand(probs.shape, generator=g, dtype=torch.float64) < probs).to(torch.float64)


def negative_binomial(g: torch.Generator, mean: torch.Tensor, dispersion: torch.Tensor):
    """Negative-binomial counts with ``mean`` and variance ``mean + mean² / dispersion``: a
    Poisson whose rate is ``mean`` times a ``Gamma(dispersion, rate dispersion)`` factor."""
    mean, dispersion = torch.broadcast_tensors(mean.to(torch.float64), dispersion.to(mean.dtype))
    return poisson(g, mean * gamma(g, dispersion) / dispersion)


def student_t(g: torch.Generator, df: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard Student-t draws with ``df`` degrees of freedom (broadcast to ``shape``):
    ``Z / sqrt(V / df)``, ``V = 2 Gamma(df / 2)`` a chi-squared variable."""
    df = torch.broadcast_to(df.to(torch.float64), shape)
    z = torch.randn(shape, generator=g, dtype=torch.float64)
    return z / (2.0 * gamma(g, df / 2.0) / df).sqrt()


def beta(g: torch.Generator, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``Beta(a, b)`` draws: ``Ga / (Ga + Gb)`` of two Gamma variables, computed from their
    logarithms (no 0 / 0 where both underflow)."""
    a, b = torch.broadcast_tensors(a.to(torch.float64), b.to(torch.float64))
    return torch.sigmoid(gamma(g, a, log=True) - gamma(g, b, log=True))
