"""The ``poisson`` family with ``overdispersion: lognormal``: counts whose log rate is itself
uncertain, ``f ~ N(loc, scale²)``, ``Y | f ~ Poisson(exposure · exp(f))`` (the Poisson–log-normal
law, Aitchison and Ho 1989).

Why: given a context, the counts of a task with a log-GP rate are Poisson given the latent rate,
but the context leaves that rate uncertain, so their predictive law is a Poisson mixed over the
rate's posterior: overdispersed. A plain Poisson head (``variance = mean``) cannot spread that far
and its intervals cover too little; this head carries the rate's uncertainty as ``scale``.

Numerics (float64 inside, no closed form):

- ``log_prob(k)``: Gauss–Legendre over the window where ``log N(f; loc, scale) + log Poisson(k;
  e·exp(f))`` is within ``e^-40`` of its peak (the integrand is log-concave: Newton finds the
  peak and both ends), so a count far from the prior's bulk, or a wide ``scale``, is resolved
  (within 1e-12 of scipy's adaptive quadrature). The window is held fixed under autograd: the
  rule is a valid one for any window that holds the integrand, and its gradient is that of the
  estimate.
- ``cdf(k) = E_f[Q(k + 1, e·exp(f))]`` (``Q`` the upper regularised gamma): where ``scale`` is
  narrower than the step of ``Q`` in ``f`` (width ``1 / sqrt(k + 1)``), Gauss–Hermite over
  ``N(loc, scale²)``; where it is wider, ``Phi((c - loc) / scale)`` for the step at ``c =
  log((k + 1) / e)`` plus Gauss–Legendre on each side of ``c`` of the smooth remainder
  ``N(f) (Q - 1{f < c})``; ``cdf(0) = P(Y = 0)``.
- ``mean = e·exp(loc + scale² / 2)``, ``variance = mean + mean² (exp(scale²) - 1)``: closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.distributions import Distribution, Normal, constraints

from .counts import MAX_LOG_RATE, _Counts
from .numerics import PlainHead, positive

NODES = 64  # Gauss-Legendre nodes of log_prob; Gauss-Hermite of the cdf where scale is narrow
DROP = 40.0  # log_prob integrates where the integrand is within e^-40 of its peak
HALF_NODES = 48  # Gauss-Legendre nodes on each side of the cdf's step
STEP_WIDTHS = 16.0  # the remainder of the step is integrated over c ± 16 of its widths
NEWTON_STEPS = 60
_NO_SHAPE = torch.Size()


def _hermite(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, w = np.polynomial.hermite.hermgauss(n)
    return torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(w, dtype=torch.float64)


def _legendre(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, w = np.polynomial.legendre.leggauss(n)
    return torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(w, dtype=torch.float64)


def _nodes(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Quadrature nodes ``t [n]`` as ``[n, 1, ..., 1]`` against ``like``."""
    return t.to(like.device).view(-1, *([1] * like.dim()))


class PoissonLogNormalPrediction(_Counts, Distribution):
    """``Y | f ~ Poisson(exposure · exp(f))``, ``f ~ N(loc, scale²)``; batch shape that of
    ``loc``, ``scale`` (and ``exposure``) broadcast."""

    arg_constraints: dict = {}
    support = constraints.nonnegative_integer
    has_rsample = False

    def __init__(
        self, loc: torch.Tensor, scale: torch.Tensor, exposure: torch.Tensor | None = None
    ):
        self.exposure = exposure
        log_e = torch.zeros_like(loc) if exposure is None else exposure.to(loc).log()
        self.loc, self.scale, self._log_e = torch.broadcast_tensors(loc, scale, log_e)
        super().__init__(batch_shape=self.loc.shape, validate_args=False)

    @property
    def mean(self) -> torch.Tensor:
        return (self.loc + self._log_e + self.scale.square() / 2).exp()

    @property
    def variance(self) -> torch.Tensor:
        mean = self.mean
        return mean + mean.square() * torch.expm1(self.scale.square())

    def _at(self, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``value``, ``loc``, ``scale`` and ``log e`` broadcast together (``value`` may carry
        sample dimensions in front), ``value`` in ``loc``'s dtype."""
        return torch.broadcast_tensors(value.to(self.loc), self.loc, self.scale, self._log_e)

    @staticmethod
    def _log_joint(f, k, m, s, log_e) -> torch.Tensor:
        """``log N(f; m, s) + log Poisson(k; e·exp(f))`` at nodes ``f [n, *shape]``."""
        z = (f - m) / s
        log_normal = -0.5 * z.square() - s.log() - 0.5 * math.log(2 * math.pi)
        log_rate = f + log_e
        return log_normal + k * log_rate - log_rate.exp() - torch.lgamma(k + 1)

    @staticmethod
    def _window(k, m, s, log_e) -> tuple[torch.Tensor, torch.Tensor]:
        """``[lo, hi]`` around the mode ``f*`` of :meth:`_log_joint` in ``f`` outside which it
        is ``DROP`` below its peak (float64, no gradient). ``g = log joint`` is concave with
        ``g'' <= -1 / scale²``, so Newton climbs to ``f*`` monotonically from below it, and
        reaches each end of the window monotonically from ``f* ± 9 scale``, where ``g`` is
        already ``DROP`` below its peak."""
        with torch.no_grad():
            k, m, s, log_e = (t.detach().double() for t in (k, m, s, log_e))
            s2 = s.square()

            def g(f):
                rate = (f + log_e).clamp_max(700.0).exp()
                return -(f - m).square() / (2 * s2) + k * (f + log_e) - rate, rate

            f = torch.minimum(m, torch.log(k + 1) - log_e)  # below the mode
            for _ in range(NEWTON_STEPS):
                _, rate = g(f)
                f = f + ((k - rate - (f - m) / s2) / (1 / s2 + rate)).clamp(-2.0, 2.0)
            floor = g(f)[0] - DROP
            ends = []
            for side in (-1.0, 1.0):
                x = f + side * math.sqrt(2 * DROP) * s
                for _ in range(NEWTON_STEPS):
                    value, rate = g(x)
                    x = x - (value - floor) / (k - rate - (x - m) / s2)
                ends.append(x)
            return ends[0], ends[1]

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``log P(Y = k)`` by Gauss–Legendre over the window that holds the integrand;
        ``-inf`` off the non-negative integers."""
        return self._log_prob(*self._at(value))

    @classmethod
    def _log_prob(cls, k, m, s, log_e) -> torch.Tensor:
        """:meth:`log_prob` at ``k`` for parameters ``m, s, log_e`` of ``k``'s shape."""
        lo, hi = cls._window(k.clamp_min(0), m, s, log_e)
        x, w = _legendre(NODES)
        half = (hi - lo) / 2
        f = ((lo + hi) / 2 + half * _nodes(x, lo)).to(m)  # [nodes, *shape]
        log_weight = (_nodes(w, lo).log() + half.log()).to(m)
        log_p = torch.logsumexp(log_weight + cls._log_joint(f, k.clamp_min(0), m, s, log_e), 0)
        bad = (k < 0) | (k != k.floor())
        return torch.where(bad, torch.full_like(log_p, -math.inf), log_p)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """``P(Y <= value)`` (float64 inside; the module docstring says how)."""
        k, m, s, log_e = (t.detach().double() for t in self._at(value))
        k = torch.floor(k)
        kk = k.clamp_min(0)
        step_width = (kk + 1).rsqrt()
        # Gauss-Hermite over N(m, s²): for a scale narrower than the step of Q
        x, w = _hermite(NODES)
        f = m + math.sqrt(2) * s * _nodes(x, m)
        narrow = (torch.special.gammaincc(kk + 1, (f + log_e).exp()) * _nodes(w, m)).sum(0)
        narrow = narrow / math.sqrt(math.pi)
        # the step at c, then the smooth remainder on each side of it (Gauss-Legendre)
        c = torch.log(kk + 1) - log_e
        below = Normal(m, s).cdf(c)
        x, w = _legendre(HALF_NODES)
        half = STEP_WIDTHS * step_width
        rest = torch.zeros_like(m)
        for side in (-1.0, 1.0):
            f = c + side * half * (_nodes(x, m) + 1) / 2
            q = torch.special.gammaincc(kk + 1, (f + log_e).exp()) - float(side < 0)
            density = torch.exp(Normal(m, s).log_prob(f))
            rest = rest + (q * density * _nodes(w, m)).sum(0) * half / 2
        wide = below + rest
        zero = torch.zeros_like(k)
        at_zero = self._log_prob(zero, m, s, log_e).exp()
        value_ = torch.where(s <= step_width, narrow, wide)
        value_ = torch.where(k == 0, at_zero, value_).clamp(0.0, 1.0)
        return torch.where(k < 0, torch.zeros_like(value_), value_).to(self.loc.dtype)

    def sample(self, sample_shape: torch.Size = _NO_SHAPE) -> torch.Tensor:
        """Exact draws: ``f ~ N(loc, scale²)``, then ``Y ~ Poisson(e·exp(f))``."""
        shape = torch.Size(sample_shape)
        with torch.no_grad():
            noise = torch.randn(*shape, *self.batch_shape, dtype=self.loc.dtype,
                                device=self.loc.device)  # fmt: skip
            log_rate = (self.loc + self.scale * noise + self._log_e).clamp_max(MAX_LOG_RATE)
            return torch.poisson(log_rate.exp())


class PoissonLogNormalHead(PlainHead):
    """``[b, n_tgt, 2 * dim_y]`` = ``[loc of the log rate, scale (softplus)]`` ->
    :class:`PoissonLogNormalPrediction` ``[b, n_tgt, dim_y]`` (``loc`` clamped to [-30, 30])."""

    family = "poisson"

    params_per_output = 2

    def forward(
        self, raw: torch.Tensor, exposure: torch.Tensor | None = None
    ) -> PoissonLogNormalPrediction:
        loc, raw_scale = raw.split(self.dim_y, dim=-1)
        loc = loc.clamp(-MAX_LOG_RATE, MAX_LOG_RATE)
        return PoissonLogNormalPrediction(loc, positive(raw_scale), exposure)
