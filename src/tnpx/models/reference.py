"""``context-moments``: the reference a trained model must beat to have used the inputs.

Every target of a task gets the same Gaussian: the mean and variance of the task's context
outputs, per output dimension, ignoring every input location. A neural process stuck at a
plateau (predicting about the same value everywhere) scores about this, so a table row of it
says how much of a model's number comes from reading *where* the context points are.

The moments are shrunk towards N(0, 1), the distribution every protocol standardises its
outputs to, by ``prior_weight`` pseudo-observations: mean = sum(y) / (n + w) and second moment
(sum(y^2) + w) / (n + w). So one context point, or several identical ones, do not give a zero
variance, and an empty context predicts N(0, 1). Nothing is trained.

Missing outputs (``mask_yc``) are read per output: each output's moments are those of the
context points where it is observed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributions import Normal

from .base import NeuralProcess
from .registry import register


@dataclass
class Moments:
    """The context outputs' mean and std ``[batch, 1, dim_y]``."""

    mean: torch.Tensor
    std: torch.Tensor


@dataclass
class ContextMomentsHyper:
    prior_weight: float = 1.0  # pseudo-observations of N(0, 1) mixed into the moments
    min_std: float = 1e-3  # floor on the predictive standard deviation

    def __post_init__(self):
        if not self.prior_weight > 0:
            raise ValueError(f"prior_weight must be > 0, got {self.prior_weight}")
        if not self.min_std > 0:
            raise ValueError(f"min_std must be > 0, got {self.min_std}")


@register("context-moments")
class ContextMoments(NeuralProcess):
    """Per task and output dimension, N(context mean, context variance), shrunk towards
    N(0, 1); the same at every target. No parameters."""

    Hyper = ContextMomentsHyper
    summary = "Reference: every target gets the context outputs' mean and variance (no training)"
    translation_equivariant = True  # ignores the inputs altogether
    rotation_equivariant = True

    @classmethod
    def missing_outputs_support(cls) -> str:
        return "always"  # per-output moments

    def __init__(self, dim_x: int, dim_y: int, hyper: ContextMomentsHyper):
        super().__init__(dim_x, dim_y, hyper)
        self._anchor_dtype()

    def _encode_context(self, xc, yc, mask_c) -> Moments:
        """The context outputs' shrunk ``mean`` and ``std``, each ``[batch, 1, dim_y]``;
        ``mask_c`` is ``[batch, n_ctx]`` or, per output, ``[batch, n_ctx, dim_y]``."""
        if mask_c is None:
            weight = torch.ones_like(yc[..., :1])
        else:
            weight = (mask_c if mask_c.dim() == 3 else mask_c[..., None]).to(yc)
        w = self.hyper.prior_weight
        n = weight.sum(1, keepdim=True) + w  # [batch, 1, 1], or [batch, 1, dim_y] per output
        mean = (weight * yc).sum(1, keepdim=True) / n
        second = ((weight * yc.square()).sum(1, keepdim=True) + w) / n
        # second - mean^2 >= w / n * (1 - w / n) > 0 in exact arithmetic; clamp rounding.
        std = (second - mean.square()).clamp_min(0).sqrt().clamp_min(self.hyper.min_std)
        return Moments(mean, std)

    def _decode_targets(self, state: Moments, xt: torch.Tensor) -> Normal:
        shape = (xt.shape[0], xt.shape[1], self.dim_y)
        return Normal(state.mean.expand(shape), state.std.expand(shape), validate_args=False)
