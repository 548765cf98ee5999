"""The ``student-t`` family: heavy tails for data with outliers.

The head predicts a location and a scale per target and output, and the degrees of freedom
``df`` either per target (``df: per-target``, from the decoder) or as one learned parameter per
output (``df: shared``). ``df = 2 + softplus(raw) + 1e-3`` stays above 2, so the variance
``scale² df / (df - 2)`` always exists (and the CRPS, which needs ``df > 1``)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import StudentT

from ..input_checks import check_option
from .numerics import Scored, betainc, log_beta, positive

DF_OPTIONS = ("per-target", "shared")
MIN_DF = 2.0


def student_t_cdf(z: torch.Tensor, df: torch.Tensor) -> torch.Tensor:
    """The standard Student-t cdf at ``z`` with ``df`` degrees of freedom (float64):
    ``1 - I_{df / (df + z²)}(df / 2, 1 / 2) / 2`` for ``z >= 0``, by symmetry below."""
    z, df = z.double(), df.double()
    tail = 0.5 * betainc(df / 2, torch.full_like(df, 0.5), df / (df + z.square()))
    return torch.where(z >= 0, 1 - tail, tail)


class StudentTPrediction(Scored, StudentT):
    """torch's ``StudentT`` with ``cdf``, ``quantile`` (bisection on the cdf) and the closed-form
    CRPS. ``variance`` is ``scale² df / (df - 2)`` (finite: the head keeps ``df > 2``; torch
    returns ``inf`` for ``1 < df <= 2`` and NaN for ``df <= 1``)."""

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        z = (value.double() - self.loc.double()) / self.scale.double()
        return student_t_cdf(z, self.df.double()).to(self.loc.dtype)

    def crps(self, y: torch.Tensor, n_samples: int = 0) -> torch.Tensor:
        """Closed form (Jordan, Krüger & Lerch 2019, ``scoringRules``; needs ``df > 1``):
        ``scale [z (2F(z) - 1) + 2 f(z) (df + z²) / (df - 1)
        - 2 sqrt(df) B(1/2, df - 1/2) / ((df - 1) B(1/2, df/2)²)]``."""
        df, loc, scale = self.df.double(), self.loc.double(), self.scale.double()
        z = (y.double() - loc) / scale
        unit = StudentT(df, validate_args=False)
        pdf = unit.log_prob(z).exp()

        half = torch.full_like(df, 0.5)
        last = (
            2 * df.sqrt() / (df - 1) * (log_beta(half, df - 0.5) - 2 * log_beta(half, df / 2)).exp()
        )
        value = z * (2 * student_t_cdf(z, df) - 1) + 2 * pdf * (df + z.square()) / (df - 1) - last
        return (scale * value).to(self.loc.dtype)


class StudentTHead(nn.Module):
    """``[b, n_tgt, n_params]`` -> ``StudentTPrediction`` ``[b, n_tgt, dim_y]``: raw =
    ``[loc, scale (softplus + min_std), df (per-target only)]``, each ``dim_y`` wide."""

    family = "student-t"

    def __init__(self, dim_y: int, min_std: float = 1e-3, df: str = "per-target"):
        super().__init__()
        check_option("student-t option df", df, DF_OPTIONS)
        self.dim_y, self.min_std, self.df_option = dim_y, min_std, df
        if df == "shared":  # starts at df = 2 + softplus(log(e^3 - 1)) = 5
            self.raw_df = nn.Parameter(torch.full((dim_y,), math.log(math.expm1(3.0))))

    @property
    def n_params(self) -> int:
        """Decoder outputs this head needs per target."""
        return (3 if self.df_option == "per-target" else 2) * self.dim_y

    def forward(self, raw: torch.Tensor) -> StudentTPrediction:
        parts = raw.split(self.dim_y, dim=-1)
        loc, scale = parts[0], positive(parts[1], self.min_std)
        raw_df = parts[2] if self.df_option == "per-target" else self.raw_df.expand_as(loc)
        df = MIN_DF + positive(raw_df, 1e-3)
        return StudentTPrediction(df, loc, scale, validate_args=False)
