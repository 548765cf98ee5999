"""Gaussian likelihood heads: map decoder outputs to a predictive ``Normal``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal

from .input_checks import check_option

SCALE_TRANSFORMS = (
    "softplus",
    "exp",
    "sqrt_softplus",
    "exp_raw",
    "affine_softplus",
    "affine_exp",
    "exp_raw_or_affine_softplus",
)


class HeteroscedasticGaussian(nn.Module):
    """Per-target mean and scale from a ``[..., 2 * dim_y]`` decoder output ``[mean, raw]``.

    How ``raw`` becomes the standard deviation, and where ``min_std`` enters:

    - ``"softplus"`` (tnpx's default, TE papers): std = sqrt(softplus(raw) + min_std²);
    - ``"exp"``: std = max(exp(raw / 2), min_std);
    - ``"affine_exp"`` (the TNP-KR code, MLGlobalHealth/dl4bi ``TNPKR``): std = min_std +
      (1 - min_std) exp(raw / 2) (the same as ``"exp"`` where ``min_std = 0``);
    - ``"sqrt_softplus"`` (cambridge-mlg/tnp ``HeteroscedasticNormalLikelihood``, ``min_noise``
      = ``min_std``, added outside the root): std = sqrt(softplus(raw)) + min_std;
    - ``"exp_raw"`` (tung-nd/TNP-pytorch TNP-D, ``bound_std=False``; no minimum there, so
      ``min_std=0``): std = max(exp(raw), min_std);
    - ``"affine_softplus"`` (tung-nd/TNP-pytorch, ``bound_std=True``: min_std 0.05):
      std = min_std + (1 - min_std) softplus(raw);
    - ``"exp_raw_or_affine_softplus"`` (the TNP-KR code's TNP-D, dl4bi ``TNPD``, which switches
      on ``min_std``): ``"exp_raw"`` where ``min_std = 0``, else ``"affine_softplus"``.
    """

    def __init__(self, dim_y: int, min_std: float = 1e-3, transform: str = "softplus"):
        super().__init__()
        check_option("transform", transform, SCALE_TRANSFORMS)
        if min_std < 0:
            raise ValueError(f"min_std must be >= 0, got {min_std}")
        affine = ("affine_softplus", "affine_exp", "exp_raw_or_affine_softplus")
        if transform in affine and min_std >= 1:
            raise ValueError(f"{transform} needs min_std < 1, got {min_std}")
        self.dim_y, self.min_std, self.transform = dim_y, min_std, transform

    @property
    def n_params(self) -> int:
        """Decoder outputs this head needs per target."""
        return 2 * self.dim_y

    def forward(self, raw: torch.Tensor) -> Normal:
        """raw ``[b, n_tgt, 2 * dim_y]`` -> ``Normal`` with batch shape ``[b, n_tgt, dim_y]``."""
        mean, raw_scale = raw.split(self.dim_y, dim=-1)
        if self.transform == "softplus":
            std = (F.softplus(raw_scale) + self.min_std**2).sqrt()
        elif self.transform == "exp":
            std = torch.exp(raw_scale / 2).clamp_min(self.min_std)
        elif self.transform == "sqrt_softplus":
            std = F.softplus(raw_scale).sqrt() + self.min_std
        elif self.transform == "exp_raw" or (
            self.transform == "exp_raw_or_affine_softplus" and self.min_std == 0
        ):
            std = torch.exp(raw_scale).clamp_min(self.min_std)
        elif self.transform == "affine_exp":
            std = self.min_std + (1 - self.min_std) * torch.exp(raw_scale / 2)
        else:  # affine_softplus (or exp_raw_or_affine_softplus with min_std > 0)
            std = self.min_std + (1 - self.min_std) * F.softplus(raw_scale)
        return Normal(mean, std, validate_args=False)


class HomoscedasticGaussian(nn.Module):
    """Mean from the decoder, one learned noise scale per output dimension."""

    def __init__(self, dim_y: int, min_std: float = 1e-3, init_std: float = 0.5):
        super().__init__()
        self.dim_y, self.min_std = dim_y, min_std
        self.raw_std = nn.Parameter(torch.full((dim_y,), float(init_std)).expm1().log())

    @property
    def n_params(self) -> int:
        return self.dim_y

    def forward(self, raw: torch.Tensor) -> Normal:
        """raw ``[b, n_tgt, dim_y]`` -> ``Normal`` ``[b, n_tgt, dim_y]``."""
        std = F.softplus(self.raw_std) + self.min_std
        return Normal(raw, std.expand_as(raw), validate_args=False)


def build_likelihood(
    name: str, dim_y: int, min_std: float, transform: str = "softplus"
) -> nn.Module:
    """``heteroscedastic`` or ``homoscedastic`` Gaussian head."""
    check_option("likelihood", name, ("heteroscedastic", "homoscedastic"))
    if name == "heteroscedastic":
        return HeteroscedasticGaussian(dim_y, min_std, transform)
    return HomoscedasticGaussian(dim_y, min_std)


@dataclass
class HeadHyper:
    """Likelihood options shared by every model with a Gaussian head."""

    likelihood: str = "heteroscedastic"  # heteroscedastic | homoscedastic
    min_std: float = 1e-3
    # softplus (TE) | exp | affine_exp (TNP-KR code) | sqrt_softplus (cambridge-mlg/tnp) |
    # exp_raw (TNP-D code) | affine_softplus (TNP-D code, bound_std; CNP family in the TNP-KR
    # code) | exp_raw_or_affine_softplus (the TNP-KR code's TNP-D): see HeteroscedasticGaussian
    scale_transform: str = "softplus"


def likelihood_head(hyper: HeadHyper, dim_y: int) -> nn.Module:
    """The Gaussian head a model's ``HeadHyper`` options describe."""
    return build_likelihood(hyper.likelihood, dim_y, hyper.min_std, hyper.scale_transform)
