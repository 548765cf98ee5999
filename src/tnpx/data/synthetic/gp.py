"""Gaussian-process task samplers: KR-1 / KR-3 layouts and the TE-1 layout (PROTOCOLS.md).

Functions are sampled exactly in float64 (Cholesky with jitter), batched over tasks, and
returned in float32. Each batch carries the hyper-parameters that generated it in
``Batch.info`` so the ``gp-oracle`` model can compute the exact posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ...batch import Batch
from ...gp.kernels import KERNELS, canonical_kernel, kernel_matrix_mixed
from ...gp.prior import joint_draw
from ...input_checks import check_option
from ..base import CONTEXT_SIZE_RULES, TaskSampler, context_size, uniform
from ..context_scaling import check_probability, scale_some_like_predict
from . import draws

JITTER = 1e-6


@dataclass
class GPConfig:
    """Prior over functions and the point layout of a GP task.

    ``layout="kr"``: per batch, ``n_random`` uniform locations in ``domain`` plus a uniform grid
    of ``n_grid`` points per axis, shared by the batch's tasks; the first ``n_ctx`` random
    locations are context, all locations are targets (KR-1, KR-3).
    ``layout="uniform"``: context inputs ``U(ctx_range) + shift``, ``n_tgt`` target inputs
    ``U(tgt_range) + shift`` drawn independently per task (TE-1).
    ``n_ctx`` is drawn once per batch from ``{min_ctx, ..., max_ctx}``: uniformly
    (``ctx_size="uniform"``) or log-uniformly (``"log-uniform"``: ``P(k)`` proportional to
    ``log((k + 1) / k)``: each octave ``n..2n`` alike, so few-point contexts are common).
    """

    kernels: list[str] = field(default_factory=lambda: ["rbf"])
    dim_x: int = 1
    lengthscale_prior: str = "beta"  # beta(a, b) | loguniform on [a, b] | fixed (= a)
    lengthscale_a: float = 3.0
    lengthscale_b: float = 7.0
    period_prior: str = "uniform"  # uniform on [period_min, period_max] | lengthscale
    period_min: float = 0.5
    period_max: float = 2.0
    variance: float = 1.0
    noise_ctx: float = 0.1
    noise_tgt: float = 0.0  # 0 = targets are the noiseless function (KR protocol)
    # fixed: the two noise levels above | loguniform: each task's context noise std is
    # log-uniform on noise_range and its targets carry the same noise (a broad prior, e.g.
    # for a pretrained model that must serve data of unknown noise).
    noise_prior: str = "fixed"
    noise_range: list[float] = field(default_factory=lambda: [0.01, 0.3])
    layout: str = "kr"
    domain: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    n_random: int = 50
    n_grid: int = 100
    ctx_range: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    tgt_range: list[float] = field(default_factory=lambda: [-3.0, 3.0])
    n_tgt: int = 128
    min_ctx: int = 3
    max_ctx: int = 49
    ctx_size: str = "uniform"  # uniform | log-uniform on {min_ctx, ..., max_ctx}
    shift: float = 0.0
    input_distribution: str = "uniform"  # uniform | bimodal (uniform layout; TE Table 7)
    bimodal_ranges: list[list[float]] = field(default_factory=lambda: [[-4.0, -1.0], [1.0, 4.0]])
    # Probability that a task is mapped as tnpx.predict maps a user's task (its context's
    # range onto the input domain, outputs standardised by the context): data/context_scaling.
    # 0 draws nothing more, so the batches are those of a config without it.
    context_scaling: float = 0.0


class GPSampler(TaskSampler):
    """Samples batches of GP regression tasks. See :class:`GPConfig` for the options.

    Example:
        >>> from tnpx.data import GPSampler, GPConfig, batch_at
        >>> sampler = GPSampler(GPConfig(kernels=["rbf"]), batch_size=4, seed=0)
        >>> batch = batch_at(sampler, step=0)
        >>> batch.xt.shape
        torch.Size([4, 150, 1])
    """

    dim_y = 1

    # Batch.info holds each task's kernel and hyper-parameters: gp-oracle's exact posterior
    exact_gp_posterior = True

    def __init__(self, config: GPConfig | None = None, batch_size: int = 16, seed: int = 0):
        self.config = config = config or GPConfig()
        self.kernel_ids = torch.tensor([KERNELS.index(canonical_kernel(k)) for k in config.kernels])
        check_option("input_distribution", config.input_distribution, ("uniform", "bimodal"))
        if config.input_distribution == "bimodal" and config.layout != "uniform":
            raise ValueError("input_distribution='bimodal' needs layout='uniform'")
        check_option("layout", config.layout, ("kr", "uniform"))
        check_option("lengthscale_prior", config.lengthscale_prior, ("beta", "loguniform", "fixed"))
        check_option("period_prior", config.period_prior, ("uniform", "lengthscale"))
        check_option("noise_prior", config.noise_prior, ("fixed", "loguniform"))
        if (
            config.noise_prior == "loguniform"
            and not 0 < config.noise_range[0] <= (config.noise_range[1])
        ):
            raise ValueError(
                f"noise_prior='loguniform' needs 0 < noise_range[0] <= noise_range[1], "
                f"got {config.noise_range}"
            )
        if not 0 <= config.min_ctx <= config.max_ctx:
            raise ValueError(
                f"need 0 <= min_ctx <= max_ctx, got {config.min_ctx}, {config.max_ctx}"
            )
        check_option("ctx_size", config.ctx_size, CONTEXT_SIZE_RULES)
        if config.ctx_size == "log-uniform" and config.min_ctx < 1:
            raise ValueError(f"ctx_size='log-uniform' needs min_ctx >= 1, got {config.min_ctx}")
        check_probability(config.context_scaling)
        if config.layout == "kr" and config.max_ctx > config.n_random:
            raise ValueError(f"max_ctx={config.max_ctx} exceeds n_random={config.n_random}")
        self.dim_x = config.dim_x
        self.batch_size = batch_size
        self.seed = seed

    @property
    def input_domain(self) -> tuple[float, float]:
        """The box context inputs come from, shift included: ``domain`` (``kr`` layout), the
        span of ``bimodal_ranges`` (bimodal inputs), else ``ctx_range``."""
        c = self.config
        if c.layout == "kr":
            lo, hi = c.domain
        elif c.input_distribution == "bimodal":
            lo, hi = min(r[0] for r in c.bimodal_ranges), max(r[1] for r in c.bimodal_ranges)
        else:
            lo, hi = c.ctx_range
        return float(lo + c.shift), float(hi + c.shift)

    # -- hyper-parameters -------------------------------------------------------------
    def _hyperparameters(self, g: torch.Generator, b: int) -> dict[str, torch.Tensor]:
        c = self.config
        pick = torch.randint(len(self.kernel_ids), (b,), generator=g)
        if c.lengthscale_prior == "beta":
            # Beta(a, b) = Ga / (Ga + Gb); torch's Beta takes no generator.
            ga = _gamma(g, c.lengthscale_a, b)
            gb = _gamma(g, c.lengthscale_b, b)
            lengthscale = ga / (ga + gb)
        elif c.lengthscale_prior == "loguniform":
            lengthscale = uniform(
                g, (b,), math.log(c.lengthscale_a), math.log(c.lengthscale_b)
            ).exp()
        else:
            lengthscale = torch.full((b,), float(c.lengthscale_a), dtype=torch.float64)
        kernel = self.kernel_ids[pick]
        if c.period_prior == "uniform":
            period = uniform(g, (b,), c.period_min, c.period_max)
        else:  # TE-1: the period is the sampled lengthscale, and the periodic kernel's ℓ is 1
            period = lengthscale.clone()
            periodic = kernel == KERNELS.index("periodic")
            lengthscale = torch.where(periodic, torch.ones_like(lengthscale), lengthscale)
        if c.noise_prior == "loguniform":
            lo, hi = c.noise_range
            noise_ctx = uniform(g, (b,), math.log(lo), math.log(hi)).exp()
            noise_tgt = noise_ctx.clone()
        else:
            noise_ctx = torch.full((b,), float(c.noise_ctx), dtype=torch.float64)
            noise_tgt = torch.full((b,), float(c.noise_tgt), dtype=torch.float64)
        return {
            "kernel": kernel,
            "lengthscale": lengthscale,
            "period": period,
            "variance": torch.full((b,), float(c.variance), dtype=torch.float64),
            "noise_ctx": noise_ctx,
            "noise_tgt": noise_tgt,
        }

    # -- point layouts ----------------------------------------------------------------
    def _layout(self, g: torch.Generator, b: int, n_ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Context and target inputs, float64: ``[b, n_ctx, dim_x]``, ``[b, n_tgt, dim_x]``."""
        c, d = self.config, self.dim_x
        if c.layout == "kr":
            lo, hi = c.domain
            rand = uniform(g, (c.n_random, d), lo, hi)
            axis = torch.linspace(lo, hi, c.n_grid, dtype=torch.float64)
            grid = torch.cartesian_prod(*([axis] * d)).reshape(-1, d)
            x_all = torch.cat([rand, grid]) + c.shift
            x_all = x_all.expand(b, -1, -1)
            return x_all[:, :n_ctx], x_all
        if c.input_distribution == "bimodal":  # TE F.5 (Eq. 44): context and targets alike
            return self._bimodal(g, (b, n_ctx, d)), self._bimodal(g, (b, c.n_tgt, d))
        xc = uniform(g, (b, n_ctx, d), c.ctx_range[0], c.ctx_range[1]) + c.shift
        xt = uniform(g, (b, c.n_tgt, d), c.tgt_range[0], c.tgt_range[1]) + c.shift
        return xc, xt

    def _bimodal(self, g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        """Each input from one of two intervals with probability 1/2 (TE Eq. 44), shifted."""
        (lo0, hi0), (lo1, hi1) = self.config.bimodal_ranges
        pick = torch.rand(shape, generator=g, dtype=torch.float64) < 0.5
        first, second = uniform(g, shape, lo0, hi0), uniform(g, shape, lo1, hi1)
        return torch.where(pick, first, second) + self.config.shift

    def _context_size(self, g: torch.Generator) -> int:
        """``n_ctx`` on ``{min_ctx, ..., max_ctx}`` by the ``ctx_size`` rule
        (:func:`~tnpx.data.base.context_size`)."""
        c = self.config
        return context_size(g, c.min_ctx, c.max_ctx, c.ctx_size)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """One batch of tasks drawn with ``generator`` only.

        In the ``kr`` layout the context locations are a subset of the targets, so the
        function is drawn once at the targets and the context values are read off them.
        """
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_ctx = self._context_size(g)
        hyper = self._hyperparameters(g, b)
        xc, xt = self._layout(g, b, n_ctx)
        params = {k: hyper[k] for k in ("lengthscale", "period", "variance")}
        if c.layout == "kr":
            f_all = _sample_gp(g, hyper["kernel"], xt, params)
            f_c, f_t = f_all[:, :n_ctx], f_all
        else:
            f_all = _sample_gp(g, hyper["kernel"], torch.cat([xc, xt], 1), params)
            f_c, f_t = f_all[:, :n_ctx], f_all[:, n_ctx:]
        noise_c, noise_t = hyper["noise_ctx"][:, None, None], hyper["noise_tgt"][:, None, None]
        yc = f_c + noise_c * torch.randn(f_c.shape, generator=g, dtype=torch.float64)
        yt = f_t + noise_t * torch.randn(f_t.shape, generator=g, dtype=torch.float64)
        f32 = torch.float32
        batch = Batch(xc.to(f32), yc.to(f32), xt.to(f32), yt.to(f32), info=hyper)
        # drawn last: the tasks themselves are those drawn without the option
        return scale_some_like_predict(batch, g, c.context_scaling, self.input_domain)


def _sample_gp(
    g: torch.Generator, kernel: torch.Tensor, x: torch.Tensor, params: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Exact joint samples ``f(x)`` ``[b, n, 1]`` from zero-mean GPs, in float64."""
    return joint_draw(g, kernel_matrix_mixed(kernel, x, x, **params), JITTER)


def _gamma(g: torch.Generator, shape: float, n: int) -> torch.Tensor:
    """Gamma(shape, 1) samples drawn with ``g``, float64 ``[n]`` (:func:`.draws.gamma`)."""
    return draws.gamma(g, torch.full((n,), float(shape), dtype=torch.float64))
