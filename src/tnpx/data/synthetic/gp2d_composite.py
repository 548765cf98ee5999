"""A 2D composite GP prior for spatial interpolation: ``data.name: gp2d-composite``.

Each task is a zero-mean GP on 2D inputs whose kernel is a sum of ``N_COMPONENTS``
anisotropic, rotated stationary kernels (:mod:`tnpx.gp.kernels_anisotropic`):

- a **smooth** large-scale component: RBF, long lengthscale on ``smooth_lengthscale``,
- a **rough** small-scale component: a Matérn kernel of ``rough_kernels`` on
  ``rough_lengthscale``,

each present independently with probability ``component_probs`` (at least one: a task that
draws none keeps the smooth one). A component's long lengthscale ``l1`` is log-uniform on its
range, its short one ``l1 / r`` with the anisotropy ``r`` log-uniform on ``anisotropy``, and
its direction ``theta`` uniform on ``[0, pi)``. Relative weights are log-uniform on
``component_weight``, scaled so the variances sum to ``output_scale²`` (log-uniform on
``output_scale_range``); the noise std is log-uniform on ``noise_range`` times that scale (a
noise-to-signal ratio down to near noise-free), on context and targets alike.

Layout: ``n_ctx`` log-uniform on ``{min_ctx, ..., max_ctx}`` (once per batch: 10 to 10³ points
by default, as dense as a field survey or as sparse as a few stations) uniform on ``box²``;
``n_tgt`` targets uniform on ``tgt_box²`` plus, with ``n_grid > 0``, a regular
``n_grid x n_grid`` grid on ``tgt_box²``.

Shifts (BSA-TNP's suite): ``shift`` translates the whole field (every input ``+ shift`` on both
axes: the same task, moved); ``scale`` maps the inputs to ``scale * x`` and every lengthscale
to ``scale * l`` (the same function on a domain ``scale`` times wider, so with the same number
of points their density changes by ``scale²``). Both leave the function values of a seed's
tasks as they are: only where they sit changes.

``context_scaling = p``: each task is then, with probability ``p``, mapped as :func:`tnpx.predict`
maps a user's table (each input column's context range onto ``box``, the outputs standardised
by the context; :mod:`tnpx.data.context_scaling`), so that a model learns its std beyond the
context in the units ``predict`` works in. A mapped task's ``info`` is empty (the oracle's
hyper-parameters no longer describe it); ``p = 0`` draws nothing more.

``Batch.info``: ``kernel`` ``[batch, N_COMPONENTS]`` (indices into :data:`tnpx.gp.kernels.KERNELS`),
``lengthscales`` ``[batch, N_COMPONENTS, 2]`` (``l1``, ``l2``, shift and scale applied),
``angle`` ``[batch, N_COMPONENTS]``, ``transform`` ``[batch, N_COMPONENTS, 2, 2]`` (the maps
``A_c``), ``variance`` ``[batch, N_COMPONENTS]``, ``noise_ctx`` / ``noise_tgt`` ``[batch]``:
what ``gp-oracle`` needs for the exact posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ...batch import Batch
from ...gp.kernels import KERNELS, canonical_kernel
from ...gp.kernels_anisotropic import anisotropic_kernel_matrix, transform_matrix
from ...gp.prior import joint_draw
from ..base import uniform
from ..context_scaling import check_probability, scale_some_like_predict
from .gp_composite import _log_uniform

N_COMPONENTS = 2  # smooth, rough: the slots of a task's kernel
COMPONENTS = ("smooth", "rough")
JITTER = 1e-6  # relative to the task's variance


@dataclass
class GP2DCompositeConfig:
    """The prior and layout of :class:`GP2DCompositeSampler`. Ranges ``[low, high]`` are
    log-uniform; ``box`` and ``tgt_box`` are ``[low, high]`` on each axis."""

    component_probs: list[float] = field(default_factory=lambda: [0.9, 0.7])  # COMPONENTS
    smooth_lengthscale: list[float] = field(default_factory=lambda: [0.5, 4.0])
    rough_kernels: list[str] = field(default_factory=lambda: ["matern12", "matern32", "matern52"])
    rough_lengthscale: list[float] = field(default_factory=lambda: [0.1, 0.8])
    anisotropy: list[float] = field(default_factory=lambda: [1.0, 4.0])  # l1 / l2
    component_weight: list[float] = field(default_factory=lambda: [0.05, 1.0])
    output_scale_range: list[float] = field(default_factory=lambda: [0.5, 2.0])  # std
    noise_range: list[float] = field(default_factory=lambda: [0.001, 0.3])  # std / scale
    box: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    tgt_box: list[float] = field(default_factory=lambda: [-2.0, 2.0])
    n_tgt: int = 256
    n_grid: int = 0  # per axis; 0: no grid of targets
    min_ctx: int = 10
    max_ctx: int = 1000
    shift: float = 0.0
    scale: float = 1.0
    # Probability that a task is mapped as tnpx.predict maps a user's table (each input column's
    # context range onto the box, outputs standardised by the context): data/context_scaling.
    # 0 draws nothing more, so the batches are those of a config without it.
    context_scaling: float = 0.0


class GP2DCompositeSampler:
    """Tasks from the 2D composite GP prior; see the module docstring.

    Example:
        >>> from tnpx.data import batch_at, build_sampler
        >>> sampler = build_sampler("gp2d-composite", batch_size=2, max_ctx=50)
        >>> batch = batch_at(sampler, step=0)
        >>> batch.xt.shape, batch.info["transform"].shape
        (torch.Size([2, 256, 2]), torch.Size([2, 2, 2, 2]))
    """

    dim_x = 2
    dim_y = 1

    # Batch.info holds each task's kernel maps and variances: gp-oracle's exact posterior
    exact_gp_posterior = True

    def __init__(self, config: GP2DCompositeConfig | None = None, batch_size=16, seed=0):
        self.config = c = config or GP2DCompositeConfig()
        self.batch_size, self.seed = batch_size, seed
        probs = c.component_probs
        if len(probs) != N_COMPONENTS or not all(0 <= p <= 1 for p in probs):
            raise ValueError(f"component_probs: {N_COMPONENTS} probabilities {COMPONENTS}")
        positive = ("smooth_lengthscale", "rough_lengthscale", "anisotropy", "component_weight")
        for name in (*positive, "output_scale_range", "noise_range"):
            self._check_range(name)
        for name in ("box", "tgt_box"):
            bounds = getattr(c, name)
            if len(bounds) != 2 or not bounds[0] < bounds[1]:
                raise ValueError(f"{name} must be [low, high] with low < high, got {bounds}")
        if not 1 <= c.min_ctx <= c.max_ctx:
            raise ValueError(f"need 1 <= min_ctx <= max_ctx, got {c.min_ctx}, {c.max_ctx}")
        if c.n_tgt < 0 or c.n_grid < 0 or c.n_tgt + c.n_grid == 0:
            raise ValueError(f"need n_tgt, n_grid >= 0 and some targets, got {c.n_tgt}, {c.n_grid}")
        if not c.scale > 0:
            raise ValueError(f"scale must be positive, got {c.scale}")
        check_probability(c.context_scaling)
        rough = [canonical_kernel(k) for k in c.rough_kernels]
        if not rough or "periodic" in rough:
            raise ValueError(f"rough_kernels: one or more of {KERNELS[:4]}, got {c.rough_kernels}")
        self.rough_ids = torch.tensor([KERNELS.index(k) for k in rough])

    def _check_range(self, name: str) -> None:
        bounds = getattr(self.config, name)
        if len(bounds) != 2 or not 0 < bounds[0] <= bounds[1]:
            raise ValueError(f"{name} must be [low, high] with 0 < low <= high, got {bounds}")

    @property
    def input_domain(self) -> tuple[float, float]:
        """The box of the context inputs on each axis, scale and shift included."""
        lo, hi = self.config.box
        s, t = self.config.scale, self.config.shift
        return float(s * lo + t), float(s * hi + t)

    def _hyperparameters(self, g: torch.Generator, b: int) -> dict[str, torch.Tensor]:
        """Kernels ``[b, N_COMPONENTS]`` and their parameters, noise ``[b]``; unscaled."""
        c = self.config
        present = torch.rand(b, N_COMPONENTS, generator=g, dtype=torch.float64)
        present = present < torch.tensor(c.component_probs, dtype=torch.float64)
        present[:, 0] |= ~present.any(1)  # at least one component: keep the smooth one
        rough = self.rough_ids[torch.randint(len(self.rough_ids), (b,), generator=g)]
        kernel = torch.stack([torch.full((b,), KERNELS.index("rbf")), rough], 1)
        long = torch.stack(
            [
                _log_uniform(g, (b,), c.smooth_lengthscale),
                _log_uniform(g, (b,), c.rough_lengthscale),
            ],
            1,
        )
        short = long / _log_uniform(g, (b, N_COMPONENTS), c.anisotropy)
        angle = uniform(g, (b, N_COMPONENTS), 0.0, math.pi)
        weight = _log_uniform(g, (b, N_COMPONENTS), c.component_weight) * present
        scale = _log_uniform(g, (b,), c.output_scale_range)
        variance = weight / weight.sum(1, keepdim=True) * scale[:, None].pow(2)
        noise = _log_uniform(g, (b,), c.noise_range) * scale
        return {
            "kernel": kernel,
            "lengthscales": torch.stack([long, short], -1),
            "angle": angle,
            "variance": variance,
            "noise_ctx": noise,
            "noise_tgt": noise.clone(),
        }

    def _layout(self, g: torch.Generator, b: int, n_ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Unscaled context and target inputs, float64 ``[b, n_ctx, 2]``, ``[b, n_tgt, 2]``."""
        c = self.config
        xc = uniform(g, (b, n_ctx, 2), *c.box)
        xt = uniform(g, (b, c.n_tgt, 2), *c.tgt_box)
        if c.n_grid:
            axis = torch.linspace(*c.tgt_box, c.n_grid, dtype=torch.float64)
            grid = torch.cartesian_prod(axis, axis).expand(b, -1, -1)
            xt = torch.cat([xt, grid], 1)
        return xc, xt

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        """One batch of tasks drawn with ``generator`` only. ``shift`` and ``scale`` are
        applied after every draw, so they move a seed's tasks and change nothing else."""
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_ctx = round(_log_uniform(g, (1,), [c.min_ctx, c.max_ctx]).item())
        hyper = self._hyperparameters(g, b)
        xc, xt = self._layout(g, b, n_ctx)
        hyper["lengthscales"] = hyper["lengthscales"] * c.scale
        hyper["transform"] = transform_matrix(hyper["lengthscales"], hyper["angle"])
        xc, xt = c.scale * xc + c.shift, c.scale * xt + c.shift
        x_all = torch.cat([xc, xt], 1)
        f_all = _sample_field(g, hyper, x_all)
        noise = hyper["noise_ctx"][:, None, None]
        y_all = f_all + noise * torch.randn(f_all.shape, generator=g, dtype=torch.float64)
        f32 = torch.float32
        yc, yt = y_all[:, :n_ctx].to(f32), y_all[:, n_ctx:].to(f32)
        batch = Batch(xc.to(f32), yc, xt.to(f32), yt, info=hyper)
        # drawn last: the tasks themselves are those drawn without the option
        return scale_some_like_predict(batch, g, c.context_scaling, self.input_domain)


def _sample_field(g: torch.Generator, hyper: dict[str, torch.Tensor], x: torch.Tensor):
    """Exact joint samples ``f(x)`` ``[b, n, 1]`` of the tasks' GPs at ``x [b, n, 2]``, float64.

    The kernel sees differences of inputs mapped by ``A`` only, which a shift leaves alone and
    a scale (inputs and lengthscales alike) too, and ``z ~ N(0, I)`` takes the same place in
    the generator's stream: a shifted or scaled config gives the same values up to rounding."""
    k = anisotropic_kernel_matrix(hyper["kernel"], hyper["transform"], hyper["variance"], x, x)
    return joint_draw(g, k, JITTER * hyper["variance"].sum(1)[:, None, None])
