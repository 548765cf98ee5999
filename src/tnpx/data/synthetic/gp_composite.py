"""A broader 1D GP prior for zero-shot models: ``data.name: gp-composite``.

Each task is, with probability ``composite_prob``, a *composite* GP, else one of the single
kernels of :class:`~tnpx.data.GPSampler` drawn exactly as that sampler draws them (same
kernels, lengthscale, period and noise priors, variance 1). A composite is what measured
series tend to look like: a sum of

- a smooth **trend**: an RBF kernel with a long lengthscale (longer than the single kernels'),
- a **periodic** component: the periodic kernel with its own period and smoothness,
- **rough** variation: a Matérn-1/2 or 3/2 kernel at a short lengthscale,

each present independently with its own probability (at least one: a task that draws none
keeps the trend), with relative weights log-uniform on ``component_weight``, scaled so that
the components' variances sum to ``output_scale²`` (the task's output scale, log-uniform on
``output_scale_range``), and observation noise whose std is log-uniform on
``composite_noise_range`` *times* that output scale (a noise-to-signal ratio), on context and
targets alike. Inputs are laid out as :class:`GPSampler` lays them out (``layout="uniform"``:
``ctx_range``, ``tgt_range``, ``n_tgt``, ``min_ctx``..``max_ctx``).

Every task's kernel is written as a sum of ``N_COMPONENTS`` stationary kernels from
:data:`tnpx.gp.kernels.KERNELS` (a single-kernel task has its kernel in the first slot and
variance 0 in the others), so ``Batch.info`` holds ``kernel``, ``lengthscale``, ``period`` and
``variance`` as ``[batch, N_COMPONENTS]`` and :func:`tnpx.gp.kernels.kernel_matrix_mixed` sums
them: the ``gp-oracle`` model computes the exact posterior of every task unchanged.
``info["composite"]`` ``[batch]`` (bool) says which tasks are composites.

The v3 options, each off by default so that a v2 config draws the same
tasks bit for bit:

- ``polynomial_prob``: a composite task also holds, with this probability, a **polynomial
  trend** of degree drawn from ``polynomial_degrees`` (:data:`tnpx.gp.kernels.TREND_KERNELS`,
  Bayesian linear regression: non-stationary, carried past the data), lengthscale log-uniform
  on ``polynomial_lengthscale`` and its own weight; every task then has ``N_COMPONENTS + 1``
  slots.
- ``locally_periodic_prob``: the periodic component is, with this probability, multiplied by
  an RBF of lengthscale log-uniform on ``envelope_lengthscale`` (a **locally periodic**
  kernel); ``info["envelope"]`` ``[batch, slots]`` holds it (``inf``: no envelope).
- ``quiet_prob``: any task is, with this probability, **near noise-free**: noise std
  ``quiet_noise`` times its output scale (0 allowed); ``info["quiet"]`` ``[batch]`` marks it.
  Functions are drawn with a Cholesky jitter of :data:`tnpx.data.synthetic.gp.JITTER` on the
  diagonal, which acts as observation noise of that variance on context and targets alike,
  so a quiet task's ``noise_tgt`` is ``sqrt(noise² + JITTER)`` (on the context the oracle's
  own jitter, equal to it, plays that part): the ``gp-oracle`` stays exact.
- Wider length-scale and period ranges and 3 to a few hundred context points are options
  already (``*_lengthscale``, ``periodic_period``, ``lengthscale_a/b``, ``period_min/max``,
  ``min_ctx``/``max_ctx``).

Smooth changes of level are the long-lengthscale RBF trend (no sigmoid step: its location
would be one more hyper-parameter for the oracle, and the RBF already spans level shifts).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch

from ...gp.kernels import ALL_KERNELS, KERNELS, TREND_KERNELS, canonical_kernel
from ..base import uniform
from .gp import JITTER, GPConfig, GPSampler

N_COMPONENTS = 3  # trend, periodic, rough: the slots of a composite kernel
COMPONENTS = ("trend", "periodic", "rough")


@dataclass
class CompositeGPConfig(GPConfig):
    """:class:`GPConfig` (the single-kernel tasks and the input layout) plus the composite
    tasks' prior. Ranges ``[low, high]`` are log-uniform."""

    composite_prob: float = 0.5  # probability that a task is a composite
    component_probs: list[float] = field(default_factory=lambda: [0.8, 0.6, 0.8])  # COMPONENTS
    trend_lengthscale: list[float] = field(default_factory=lambda: [1.5, 8.0])
    periodic_period: list[float] = field(default_factory=lambda: [0.2, 2.0])
    periodic_lengthscale: list[float] = field(default_factory=lambda: [0.5, 1.5])
    rough_kernels: list[str] = field(default_factory=lambda: ["matern12", "matern32"])
    rough_lengthscale: list[float] = field(default_factory=lambda: [0.05, 0.5])
    component_weight: list[float] = field(default_factory=lambda: [0.05, 1.0])
    output_scale_range: list[float] = field(default_factory=lambda: [0.5, 2.0])  # std
    composite_noise_range: list[float] = field(default_factory=lambda: [0.01, 0.5])  # / scale
    layout: str = "uniform"
    # v3 (module docstring); the defaults draw no more than v2.
    polynomial_prob: float = 0.0  # a composite task also holds a polynomial trend
    polynomial_degrees: list[int] = field(default_factory=lambda: [1, 2, 3])
    polynomial_lengthscale: list[float] = field(default_factory=lambda: [2.0, 6.0])
    locally_periodic_prob: float = 0.0  # the periodic component times an RBF envelope
    envelope_lengthscale: list[float] = field(default_factory=lambda: [0.5, 4.0])
    quiet_prob: float = 0.0  # a task is near noise-free
    quiet_noise: float = 1.0e-3  # a quiet task's noise std / its output scale


def _log_uniform(g: torch.Generator, shape: tuple[int, ...], bounds: list[float]):
    """Log-uniform samples on ``[low, high]``, float64."""
    return uniform(g, shape, math.log(bounds[0]), math.log(bounds[1])).exp()


class CompositeGPSampler(GPSampler):
    """Tasks from a mixture of single-kernel GPs and composite (trend + periodic + rough) GPs.
    See the module docstring and :class:`CompositeGPConfig`.

    Example:
        >>> from tnpx.data import batch_at, build_sampler
        >>> sampler = build_sampler("gp-composite", batch_size=4, composite_prob=1.0)
        >>> batch = batch_at(sampler, step=0)
        >>> batch.info["kernel"].shape, batch.xt.shape
        (torch.Size([4, 3]), torch.Size([4, 128, 1]))
    """

    def __init__(self, config: CompositeGPConfig | None = None, batch_size=16, seed=0):
        config = config or CompositeGPConfig()
        super().__init__(config, batch_size, seed)
        if config.layout != "uniform" or config.dim_x != 1:
            raise ValueError("gp-composite needs layout='uniform' and dim_x=1")
        for name in ("composite_prob", "polynomial_prob", "locally_periodic_prob", "quiet_prob"):
            if not 0 <= getattr(config, name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(config, name)}")
        if not config.polynomial_degrees or not set(config.polynomial_degrees) <= {1, 2, 3}:
            raise ValueError(f"polynomial_degrees: 1, 2 or 3, got {config.polynomial_degrees}")
        if config.quiet_noise < 0:
            raise ValueError(f"quiet_noise must be >= 0, got {config.quiet_noise}")
        probs = config.component_probs
        if len(probs) != N_COMPONENTS or not all(0 <= p <= 1 for p in probs):
            raise ValueError(f"component_probs: {N_COMPONENTS} probabilities {COMPONENTS}")
        for name in ("trend_lengthscale", "periodic_period", "periodic_lengthscale"):
            self._check_range(name)
        for name in ("rough_lengthscale", "component_weight", "output_scale_range"):
            self._check_range(name)
        for name in ("composite_noise_range", "polynomial_lengthscale", "envelope_lengthscale"):
            self._check_range(name)
        self.rough_ids = torch.tensor(
            [KERNELS.index(canonical_kernel(k)) for k in config.rough_kernels]
        )
        self.polynomial_ids = torch.tensor(
            [ALL_KERNELS.index(TREND_KERNELS[d - 1]) for d in config.polynomial_degrees]
        )

    def _check_range(self, name: str) -> None:
        bounds = getattr(self.config, name)
        if len(bounds) != 2 or not 0 < bounds[0] <= bounds[1]:
            raise ValueError(f"{name} must be [low, high] with 0 < low <= high, got {bounds}")

    def _composite(self, g: torch.Generator, b: int) -> dict[str, torch.Tensor]:
        """Composite hyper-parameters: ``[b, N_COMPONENTS]`` kernels and parameters, ``[b]``
        noise. Slots: trend (RBF), periodic, rough (one of ``rough_kernels``)."""
        c = self.config
        present = torch.rand(b, N_COMPONENTS, generator=g, dtype=torch.float64)
        present = present < torch.tensor(c.component_probs, dtype=torch.float64)
        present[:, 0] |= ~present.any(1)  # at least one component: keep the trend
        rough = self.rough_ids[torch.randint(len(self.rough_ids), (b,), generator=g)]
        kernel = torch.stack(
            [torch.full((b,), KERNELS.index("rbf")), torch.full((b,), KERNELS.index("periodic")),
             rough], 1,
        )  # fmt: skip
        lengthscale = torch.stack(
            [_log_uniform(g, (b,), c.trend_lengthscale),
             _log_uniform(g, (b,), c.periodic_lengthscale),
             _log_uniform(g, (b,), c.rough_lengthscale)], 1,
        )  # fmt: skip
        period = torch.ones(b, N_COMPONENTS, dtype=torch.float64)
        period[:, 1] = _log_uniform(g, (b,), c.periodic_period)
        weight = _log_uniform(g, (b, N_COMPONENTS), c.component_weight) * present
        scale = _log_uniform(g, (b,), c.output_scale_range)
        noise = _log_uniform(g, (b,), c.composite_noise_range) * scale
        out = {"kernel": kernel, "lengthscale": lengthscale, "period": period}
        if c.polynomial_prob > 0:  # v3 draws come after v2's, so v2 configs draw as before
            weight = self._polynomial(g, b, out, weight)
        if c.locally_periodic_prob > 0:
            envelope = torch.full_like(out["lengthscale"], math.inf)
            enveloped = torch.rand(b, generator=g, dtype=torch.float64) < c.locally_periodic_prob
            drawn = _log_uniform(g, (b,), c.envelope_lengthscale)
            envelope[:, 1] = torch.where(enveloped, drawn, math.inf)
            out["envelope"] = envelope
        out["variance"] = weight / weight.sum(1, keepdim=True) * scale[:, None].pow(2)
        return {**out, "noise_ctx": noise, "noise_tgt": noise.clone()}

    def _polynomial(
        self, g: torch.Generator, b: int, out: dict[str, torch.Tensor], weight: torch.Tensor
    ) -> torch.Tensor:
        """Append a polynomial-trend slot to ``out``'s ``[b, slots]`` parameters; returns the
        weights ``[b, slots + 1]`` (0 where a task has no polynomial trend)."""
        c = self.config
        present = torch.rand(b, generator=g, dtype=torch.float64) < c.polynomial_prob
        degree = self.polynomial_ids[torch.randint(len(self.polynomial_ids), (b,), generator=g)]
        lengthscale = _log_uniform(g, (b,), c.polynomial_lengthscale)
        extra = _log_uniform(g, (b,), c.component_weight) * present
        out["kernel"] = torch.cat([out["kernel"], degree[:, None]], 1)
        out["lengthscale"] = torch.cat([out["lengthscale"], lengthscale[:, None]], 1)
        out["period"] = torch.cat([out["period"], torch.ones(b, 1, dtype=torch.float64)], 1)
        return torch.cat([weight, extra[:, None]], 1)

    def _hyperparameters(self, g: torch.Generator, b: int) -> dict[str, torch.Tensor]:
        """Single-kernel hyper-parameters as :class:`GPSampler` draws them, moved into the
        first slot of a sum, and composite ones; each task takes one set."""
        single = super()._hyperparameters(g, b)
        mixed = self._composite(g, b)
        composite = torch.rand(b, generator=g, dtype=torch.float64) < self.config.composite_prob
        for key in ("kernel", "lengthscale", "period", "variance"):
            slots = torch.zeros_like(mixed[key])
            if key in ("lengthscale", "period"):
                slots += 1.0  # empty slots: finite parameters, variance 0
            slots[:, 0] = single[key]
            mixed[key] = torch.where(composite[:, None], mixed[key], slots)
        if "envelope" in mixed:  # a single kernel has no envelope
            mixed["envelope"] = torch.where(composite[:, None], mixed["envelope"], math.inf)
        for key in ("noise_ctx", "noise_tgt"):
            mixed[key] = torch.where(composite, mixed[key], single[key])
        mixed["composite"] = composite
        if self.config.quiet_prob > 0:
            self._quiet(g, b, mixed)
        return mixed

    def _quiet(self, g: torch.Generator, b: int, hyper: dict[str, torch.Tensor]) -> None:
        """Make a ``quiet_prob`` share of the tasks near noise-free, in place (module
        docstring: why the targets' noise adds ``JITTER``)."""
        quiet = torch.rand(b, generator=g, dtype=torch.float64) < self.config.quiet_prob
        scale = hyper["variance"].sum(1).sqrt()
        noise = self.config.quiet_noise * scale
        hyper["noise_ctx"] = torch.where(quiet, noise, hyper["noise_ctx"])
        hyper["noise_tgt"] = torch.where(quiet, (noise.pow(2) + JITTER).sqrt(), hyper["noise_tgt"])
        hyper["quiet"] = quiet


def single_kernel_options(options: dict) -> dict:
    """The ``gp`` sampler's options for the single-kernel half of a ``gp-composite`` prior
    (``options``: its data options): the composite config resolved, its defaults included, then
    its :class:`GPConfig` fields alone. That sampler draws the single-kernel tasks themselves
    (the composite sampler with ``composite_prob = 0`` has the same prior but draws, then
    discards, composite hyper-parameters too, so its tasks are other draws)."""
    full = CompositeGPConfig(**options)
    return {f.name: getattr(full, f.name) for f in dataclasses.fields(GPConfig)}
