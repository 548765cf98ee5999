"""Tasks with a known truth for each likelihood family: GP latents pushed through the family's
link (the ``gp-link`` data sampler; issue 52, item 2).

Each task draws its latent functions exactly from a zero-mean GP prior (the ``gp`` sampler's
kernels and hyper-parameter priors, :func:`tnpx.gp.prior.joint_draw`), adds ``latent_mean``, and
draws outputs from the family's observation law given the latent values
(:mod:`.link_families` states each law). The point layout is the ``gp`` sampler's ``uniform``
one: context inputs uniform on ``ctx_range``, ``n_tgt`` targets uniform on ``tgt_range``.

``Batch.info`` holds the truth (tensors with the batch first, float64):

- ``family``: the family's name (a string);
- ``latent_c`` ``[batch, n_ctx, n_latents]``, ``latent_t`` ``[batch, n_tgt, n_latents]``: the
  latent values on the link's scale (``latent_mean`` included): the log-rate per unit exposure,
  the logit, the two regimes' functions (``mixture``), the latent GPs (``lowrank-gaussian``);
- ``exposure_c`` ``[batch, n_ctx, 1]``, ``exposure_t`` ``[batch, n_tgt, 1]`` (``poisson``,
  ``negative-binomial``): each point's exposure, the factor on its rate;
- the family's parameters, ``[batch]`` each (``noise``, ``df``, ``dispersion``, ...), and
  ``mixing`` ``[batch, n_outputs, n_latents]`` (``lowrank-gaussian``);
- ``latent_kernel``, ``latent_lengthscale``, ``latent_period`` ``[batch, n_latents]``: the GP
  hyper-parameters; ``gaussian`` tasks with ``latent_mean`` 0 also carry the ``gp`` sampler's
  keys, so that ``gp-oracle`` scores them exactly.

:func:`true_predictive_log_prob` scores a batch's targets under the law that drew them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ...batch import Batch, observed_score
from ...gp.kernels import kernel_matrix_mixed
from ...gp.prior import joint_draw
from ...input_checks import check_option
from ..base import TaskSampler
from .gp import JITTER, GPConfig, GPSampler
from .link_families import FAMILIES

COUNT_FAMILIES = ("poisson", "negative-binomial")
DEFAULT_LATENT_MEAN = {"poisson": 1.0, "negative-binomial": 1.0}  # others: 0


@dataclass
class LinkPriorConfig:
    """The ``gp-link`` sampler's options. Which family's options apply is noted per option.

    ``latent_mean`` None is the family's default: 1.0 for counts (about 4.5 events per unit
    exposure on average), else 0 (a rain ``threshold`` of 0 then makes half the days dry:
    ``P(dry) = Phi((threshold - latent_mean) / sqrt(variance + rain_noise²))``).
    """

    family: str = "gaussian"
    dim_x: int = 1  # 1 or 2
    # the latent GPs: the `gp` sampler's priors (GPConfig)
    kernels: list[str] = field(default_factory=lambda: ["rbf"])
    lengthscale_prior: str = "loguniform"  # beta(a, b) | loguniform on [a, b] | fixed (= a)
    lengthscale_a: float = 0.25
    lengthscale_b: float = 1.0
    period_min: float = 0.5
    period_max: float = 2.0
    variance: float = 1.0
    latent_mean: float | None = None
    # the layout: the `gp` sampler's `uniform` layout
    ctx_range: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    tgt_range: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    n_tgt: int = 64
    min_ctx: int = 3
    max_ctx: int = 64
    ctx_size: str = "uniform"  # uniform | log-uniform on {min_ctx, ..., max_ctx}
    # the families' parameters
    noise: float = 0.1  # gaussian, student-t (its scale), mixture, lowrank-gaussian
    df: float = 3.0  # student-t (> 0; its variance is finite only above 2)
    exposure_range: list[float] = field(default_factory=lambda: [0.5, 2.0])  # counts
    dispersion: float = 2.0  # negative-binomial: variance = mean + mean² / dispersion
    concentration: float = 10.0  # beta: variance = mean (1 - mean) / (concentration + 1)
    threshold: float = 0.0  # bernoulli-gamma: dry where latent + rain_noise e <= threshold
    power: float = 2.0  # bernoulli-gamma
    amount_scale: float = 1.0  # bernoulli-gamma
    rain_noise: float = 0.5  # bernoulli-gamma
    mixture_weight: float = 0.5  # mixture: the probability of the lower regime
    mixture_offset: float = 2.0  # mixture: the distance between the regimes' means
    n_outputs: int = 2  # lowrank-gaussian (dim_y)
    n_latents: int = 2  # lowrank-gaussian


_POSITIVE = (
    "variance",
    "noise",
    "df",
    "dispersion",
    "concentration",
    "power",
    "amount_scale",
    "rain_noise",
)


def check_link_config(c: LinkPriorConfig) -> None:
    """Refuse a bad option in one line that names the valid values."""
    check_option("family", c.family, tuple(FAMILIES))
    if c.dim_x not in (1, 2):
        raise ValueError(f"dim_x must be 1 or 2 for the link prior, got {c.dim_x}")
    for name in _POSITIVE:
        value = getattr(c, name)
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value}")
    if not 0 < c.mixture_weight < 1:
        raise ValueError(f"mixture_weight must lie in (0, 1), got {c.mixture_weight}")
    bounds = list(c.exposure_range)
    if len(bounds) != 2 or not 0 < bounds[0] <= bounds[1]:
        raise ValueError(f"exposure_range must be [low, high] with 0 < low <= high, got {bounds}")
    if c.n_outputs < 2:
        raise ValueError(f"n_outputs must be >= 2 (lowrank-gaussian), got {c.n_outputs}")
    if c.n_latents < 1:
        raise ValueError(f"n_latents must be >= 1 (lowrank-gaussian), got {c.n_latents}")


class LinkPriorSampler(TaskSampler):
    """Tasks of one likelihood family drawn from GP latents; see :class:`LinkPriorConfig` and
    the module docstring. Outputs lie in the family's support (float32): whole numbers for
    counts, exactly 0.0 or 1.0 for ``bernoulli``, values strictly inside (0, 1) for ``beta``,
    zeros and positive amounts for ``bernoulli-gamma``.

    Example:
        >>> from tnpx.data import LinkPriorConfig, LinkPriorSampler, batch_at
        >>> sampler = LinkPriorSampler(LinkPriorConfig(family="poisson"), batch_size=4)
        >>> batch = batch_at(sampler, step=0)
        >>> batch.yt.shape, batch.info["exposure_t"].shape
        (torch.Size([4, 64, 1]), torch.Size([4, 64, 1]))
    """

    def __init__(self, config: LinkPriorConfig | None = None, batch_size: int = 16, seed: int = 0):
        self.config = config = config or LinkPriorConfig()
        check_link_config(config)
        self.family = FAMILIES[config.family]
        self.gp = GPSampler(self._gp_config(config), batch_size, seed)  # layout and priors
        self.dim_x = config.dim_x
        self.dim_y = config.n_outputs if config.family == "lowrank-gaussian" else 1
        self.batch_size = batch_size
        self.seed = seed

    @staticmethod
    def _gp_config(c: LinkPriorConfig) -> GPConfig:
        shared = (
            "kernels lengthscale_prior lengthscale_a lengthscale_b period_min period_max "
            "variance dim_x ctx_range tgt_range n_tgt min_ctx max_ctx ctx_size"
        ).split()
        return GPConfig(layout="uniform", **{k: getattr(c, k) for k in shared})

    @property
    def latent_mean(self) -> float:
        """The constant added to every latent GP (the family's default where not set)."""
        c = self.config
        return DEFAULT_LATENT_MEAN.get(c.family, 0.0) if c.latent_mean is None else c.latent_mean

    @property
    def exact_gp_posterior(self) -> bool:
        """``gaussian`` tasks around a zero mean are the ``gp`` sampler's: ``gp-oracle`` scores
        them exactly (its GP is zero-mean)."""
        return self.config.family == "gaussian" and self.latent_mean == 0.0

    @property
    def input_domain(self) -> tuple[float, float]:
        """The box context inputs come from: ``ctx_range``."""
        return self.gp.input_domain

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """One batch drawn with ``generator`` only: the context size, the latent GPs'
        hyper-parameters, the inputs, the latents, the family's parameters, then the outputs."""
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_latents = self.family.n_latents(c)
        n_ctx = self.gp._context_size(g)
        hyper = self.gp._hyperparameters(g, b * n_latents)  # latent q of task i at i * L + q
        xc, xt = self.gp._layout(g, b, n_ctx)
        x = torch.cat([xc, xt], 1).repeat_interleave(n_latents, 0)
        params = {k: hyper[k] for k in ("lengthscale", "period", "variance")}
        f = joint_draw(g, kernel_matrix_mixed(hyper["kernel"], x, x, **params), JITTER)
        f = f.view(b, n_latents, -1).transpose(1, 2) + self.latent_mean  # [b, n, L]
        task = self.family.task_params(g, c, b)
        yc, extras_c = self.family.observe(g, f[:, :n_ctx], task, c)
        yt, extras_t = self.family.observe(g, f[:, n_ctx:], task, c)
        info = {"family": c.family, "latent_c": f[:, :n_ctx], "latent_t": f[:, n_ctx:], **task}
        info |= {f"{k}_c": v for k, v in extras_c.items()}
        info |= {f"{k}_t": v for k, v in extras_t.items()}
        for k in ("kernel", "lengthscale", "period"):
            info[f"latent_{k}"] = hyper[k].view(b, n_latents)
        if self.exact_gp_posterior:  # the keys gp-oracle reads
            info |= {k: hyper[k] for k in ("kernel", "lengthscale", "period", "variance")}
            info |= {"noise_ctx": task["noise"], "noise_tgt": task["noise"]}
        f32 = torch.float32
        return Batch(xc.to(f32), yc.to(f32), xt.to(f32), yt.to(f32), info=info)


def true_log_density(batch: Batch) -> torch.Tensor:
    """``log p(yt | latent)`` per target and output, ``[batch, n_tgt, dim_y]`` float64, under the
    law that drew the batch (a batch of :class:`LinkPriorSampler`); see
    :func:`true_predictive_log_prob`."""
    info = batch.info
    if batch.yt is None or "family" not in info or "latent_t" not in info:
        raise ValueError(
            "true_predictive_log_prob needs a batch of the link sampler with target outputs "
            "(Batch.info 'family' and 'latent_t')"
        )
    family = FAMILIES[info["family"]]
    extras = {k[: -len("_t")]: v.double() for k, v in info.items() if k.endswith("_t")}
    params = {k: v.double() for k, v in info.items() if isinstance(v, torch.Tensor)}
    latent = info["latent_t"].double()
    return family.log_prob(batch.yt.double(), latent, params, extras)


def true_predictive_log_prob(batch: Batch) -> torch.Tensor:
    """The log-density of the targets under the law that generated them, given the latent
    function at the targets: ``[batch]`` float64, the per-target mean (summed over outputs),
    scored like a model's :meth:`~tnpx.models.base.NeuralProcess.log_likelihood` (masked
    targets and outputs count nowhere). Given the latent values the outputs of a target are
    independent (``lowrank-gaussian``'s correlation comes from the shared latents), so the sum
    over outputs is their joint log-density.

    An *upper reference*, an oracle that knows the latent function: it is not the Bayes
    predictive given the context (which also averages over the latent functions the context
    leaves possible), so a model's gap to it never closes; it measures how far a model is from
    knowing everything there is to know.
    """
    return observed_score(true_log_density(batch), batch.mask_t, batch.mask_yt)
