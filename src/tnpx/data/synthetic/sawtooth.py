"""Sawtooth task sampler, 1D and 2D, full and restricted (thesis, TH).

``f(x) = u - T floor(u / T) + n`` with ``u = d . x + phase`` (thesis Eq. 5.1.3, extended to
a direction of travel ``d`` in 2D), noise ``n ~ N(0, noise^2)``. The thesis leaves the period
and direction distributions out; tnpx draws ``T ~ U(period_min, period_max)``, the phase
``~ U(0, T)``, and the direction uniformly on the circle ("full") or from the diagonals
``x1 = x2`` / ``x1 = -x2`` with either sign ("restricted"). In 1D the direction is ±1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ...batch import Batch
from ...input_checks import check_option
from ..base import TaskSampler, randint, uniform


@dataclass
class SawtoothConfig:
    dim_x: int = 1
    period_min: float = 0.5
    period_max: float = 2.0
    noise: float = 0.1
    direction: str = "full"  # full | restricted (2D only)
    ctx_range: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    tgt_range: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    min_ctx: int = 1
    max_ctx: int = 64
    n_tgt: int = 128
    shift: float = 0.0


class SawtoothSampler(TaskSampler):
    """Samples batches of sawtooth tasks; see :class:`SawtoothConfig`."""

    dim_y = 1

    def __init__(self, config: SawtoothConfig | None = None, batch_size: int = 16, seed: int = 0):
        self.config = config = config or SawtoothConfig()
        if config.dim_x not in (1, 2):
            raise ValueError(f"sawtooth supports dim_x 1 or 2, got {config.dim_x}")
        check_option("direction", config.direction, ("full", "restricted"))
        if config.direction == "restricted" and config.dim_x != 2:
            raise ValueError("the restricted sawtooth is defined in 2D only (dim_x=2)")
        self.dim_x = config.dim_x
        self.batch_size = batch_size
        self.seed = seed

    @property
    def input_domain(self) -> tuple[float, float]:
        """The box context inputs come from: ``ctx_range`` plus ``shift``."""
        lo, hi = self.config.ctx_range
        return float(lo + self.config.shift), float(hi + self.config.shift)

    def _directions(self, g: torch.Generator, b: int) -> torch.Tensor:
        """Unit directions of travel ``[b, dim_x]`` (float64)."""
        if self.dim_x == 1:
            return torch.randint(0, 2, (b, 1), generator=g).double() * 2 - 1
        if self.config.direction == "full":
            angle = uniform(g, (b,), 0.0, 2 * math.pi)
        else:
            angle = (torch.randint(0, 4, (b,), generator=g).double() * 2 + 1) * math.pi / 4
        return torch.stack([angle.cos(), angle.sin()], -1)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_ctx = randint(g, c.min_ctx, c.max_ctx)
        period = uniform(g, (b, 1, 1), c.period_min, c.period_max)
        phase = uniform(g, (b, 1, 1), 0.0, 1.0) * period
        direction = self._directions(g, b)
        xc = uniform(g, (b, n_ctx, self.dim_x), *c.ctx_range) + c.shift
        xt = uniform(g, (b, c.n_tgt, self.dim_x), *c.tgt_range) + c.shift

        def f(x: torch.Tensor) -> torch.Tensor:
            u = (x * direction[:, None, :]).sum(-1, keepdim=True) + phase
            y = u - period * torch.floor(u / period)  # thesis Eq. 5.1.3
            return y + c.noise * torch.randn(y.shape, generator=g, dtype=y.dtype)

        f32 = torch.float32
        info = {"period": period.view(b), "direction": direction}
        return Batch(xc.to(f32), f(xc).to(f32), xt.to(f32), f(xt).to(f32), info=info)
