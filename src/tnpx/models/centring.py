"""Per-task output centring (the model option ``centre_outputs``): each task's context outputs
have their mean taken out before the model sees them, and the same mean is put back on the
prediction.

The prediction then moves exactly with the outputs: ``model(xc, yc + c, xt)`` is
``model(xc, yc, xt)`` shifted by ``c`` for any per-task constant ``c`` (translation
equivariance in the outputs). A task whose level no training task had (a warmer year, a
wetter site) is then no extrapolation for the model; what it has to learn is the field's shape
about the context's level. A task without any observed context point is not shifted.

Only for a model whose prediction is per-target Gaussians computed by one deterministic call
(:func:`centring_refusal`): a joint, latent, incremental or non-Gaussian prediction would need
its own shift.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch.distributions import Distribution, Normal

from ..likelihoods.options import family_of

# The methods a model must inherit from NeuralProcess for the shift to reach every score.
_SHARED_METHODS = ("predict_batch", "log_likelihood", "training_loss")


def context_output_mean(yc: torch.Tensor, mask_c: torch.Tensor | None) -> torch.Tensor:
    """``[batch, 1, dim_y]``: each task's mean context output over its observed points.

    Args:
        yc: ``[batch, n_ctx, dim_y]`` context outputs (anything at unobserved entries).
        mask_c: None (every point observed), ``[batch, n_ctx]`` (True = observed point) or
            ``[batch, n_ctx, dim_y]`` (True = observed output).

    An output no context point observes gets 0 (no shift). Pure tensor arithmetic: no host
    synchronisation, any device.
    """
    if mask_c is None:
        if yc.shape[1] == 0:
            return yc.new_zeros(yc.shape[0], 1, yc.shape[2])
        return yc.mean(1, keepdim=True)
    observed = mask_c if mask_c.dim() == 3 else mask_c[..., None]
    observed = observed.expand_as(yc)
    total = torch.where(observed, yc, torch.zeros((), dtype=yc.dtype, device=yc.device))
    count = observed.sum(1, keepdim=True).to(yc.dtype)
    return total.sum(1, keepdim=True) / count.clamp_min(1)


def shifted(prediction: Distribution, shift: torch.Tensor) -> Normal:
    """``prediction`` (per-target Normals ``[batch, n_tgt, dim_y]``) moved by ``shift``
    ``[batch, 1, dim_y]``."""
    if type(prediction) is not Normal:
        raise TypeError(
            f"centre_outputs: cannot shift a {type(prediction).__name__} prediction (per-target "
            "Normals only)"
        )
    return Normal(prediction.loc + shift, prediction.scale, validate_args=False)


def centring_refusal(cls: type, likelihood: str | Mapping) -> str | None:
    """Why a model of class ``cls`` (a ``NeuralProcess``) with the ``likelihood`` option cannot
    centre its outputs, or None where it can: its prediction must be per-target Normals from
    one deterministic call, scored by the base class's methods."""
    if cls.predicts_jointly or cls.targets_interact or cls.stochastic:
        return "its prediction is joint or random, not per-target Normals from one call"
    if cls.incremental or cls.buffered_sampling:
        return "it extends an encoded context incrementally"
    for method in _SHARED_METHODS:
        owner = next(k for k in cls.__mro__ if method in vars(k))
        if owner.__name__ != "NeuralProcess":
            return f"it computes its own {method}"
    family = family_of(likelihood)
    if family != "gaussian":
        return f"its likelihood is {family!r} (gaussian only)"
    return None
