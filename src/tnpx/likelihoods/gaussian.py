"""The ``gaussian`` family: decoder outputs to a predictive ``Normal`` per target and output
(heteroscedastic, or one learned noise scale per output), and the Normal's closed-form CRPS.

The heads return torch's own ``Normal`` (so the default path computes exactly what it did
before the families came); :func:`tnpx.likelihoods.crps` and :func:`tnpx.likelihoods.quantile`
score and invert it."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal

from ..input_checks import check_option

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

    family = "gaussian"

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

    family = "gaussian"

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


def normal_crps(loc: torch.Tensor, scale: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """CRPS of ``Normal(loc, scale)`` at ``y`` (Gneiting & Raftery 2007, closed form):
    ``scale * (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi))``, ``z = (y - loc) / scale``."""
    z = (y - loc) / scale
    unit = Normal(torch.zeros_like(z), torch.ones_like(z), validate_args=False)
    pdf = unit.log_prob(z).exp()
    return scale * (z * (2 * unit.cdf(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))
