"""Exact joint draws of zero-mean GP functions: the one Cholesky draw the GP priors share."""

from __future__ import annotations

import torch


def joint_draw(
    g: torch.Generator, covariance: torch.Tensor, jitter: float | torch.Tensor
) -> torch.Tensor:
    """Joint samples ``f`` ``[b, n, 1]`` of zero-mean GPs with covariance ``[b, n, n]``.

    ``jitter`` (a float, or ``[b, 1, 1]`` per task) is added to the diagonal before the
    Cholesky factor ``L``; ``f = L z`` with ``z ~ N(0, I)`` drawn with ``g`` in the
    covariance's dtype (float64 in the samplers)."""
    b, n = covariance.shape[0], covariance.shape[-1]
    eye = torch.eye(n, dtype=covariance.dtype)
    chol = torch.linalg.cholesky(covariance + jitter * eye)
    z = torch.randn(b, n, 1, generator=g, dtype=covariance.dtype)
    return chol @ z
