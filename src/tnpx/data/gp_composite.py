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
:data:`tnpx.kernels.KERNELS` (a single-kernel task has its kernel in the first slot and
variance 0 in the others), so ``Batch.info`` holds ``kernel``, ``lengthscale``, ``period`` and
``variance`` as ``[batch, N_COMPONENTS]`` and :func:`tnpx.kernels.kernel_matrix_mixed` sums
them: the ``gp-oracle`` model computes the exact posterior of every task unchanged.
``info["composite"]`` ``[batch]`` (bool) says which tasks are composites.

Why no linear trend and no periodic-times-RBF envelope: a linear kernel is not stationary and
a product is not a sum of :data:`KERNELS`; either would need its own path through the oracle.
The long-lengthscale RBF stands in for a low-order trend over the context's range.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch

from ..kernels import KERNELS, canonical_kernel
from .base import uniform
from .gp import GPConfig, GPSampler

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
        if not 0 <= config.composite_prob <= 1:
            raise ValueError(f"composite_prob must lie in [0, 1], got {config.composite_prob}")
        probs = config.component_probs
        if len(probs) != N_COMPONENTS or not all(0 <= p <= 1 for p in probs):
            raise ValueError(f"component_probs: {N_COMPONENTS} probabilities {COMPONENTS}")
        for name in ("trend_lengthscale", "periodic_period", "periodic_lengthscale"):
            self._check_range(name)
        for name in ("rough_lengthscale", "component_weight", "output_scale_range"):
            self._check_range(name)
        self._check_range("composite_noise_range")
        self.rough_ids = torch.tensor(
            [KERNELS.index(canonical_kernel(k)) for k in config.rough_kernels]
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
        variance = weight / weight.sum(1, keepdim=True) * scale[:, None].pow(2)
        noise = _log_uniform(g, (b,), c.composite_noise_range) * scale
        return {
            "kernel": kernel,
            "lengthscale": lengthscale,
            "period": period,
            "variance": variance,
            "noise_ctx": noise,
            "noise_tgt": noise.clone(),
        }

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
        for key in ("noise_ctx", "noise_tgt"):
            mixed[key] = torch.where(composite, mixed[key], single[key])
        mixed["composite"] = composite
        return mixed


def single_kernel_options(options: dict) -> dict:
    """The ``gp`` sampler's options for the single-kernel half of a ``gp-composite`` prior
    (``options``: its data options): the composite config resolved, its defaults included, then
    its :class:`GPConfig` fields alone. That sampler draws the single-kernel tasks themselves
    (the composite sampler with ``composite_prob = 0`` has the same prior but draws, then
    discards, composite hyper-parameters too, so its tasks are other draws)."""
    full = CompositeGPConfig(**options)
    return {f.name: getattr(full, f.name) for f in dataclasses.fields(GPConfig)}
