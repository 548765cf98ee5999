"""2-D Kolmogorov flow: the TE-3 task sampler (random (x, y, t) blocks of cached trajectories).

One job: :class:`KolmogorovConfig` / :class:`KolmogorovSampler` draw tasks from the velocity
tensors of a cache file. Simulating the trajectories (:func:`generate_trajectories`) lives in
:mod:`tnpx.data.kolmogorov.trajectories`, the cache file itself (:func:`write_cache`,
:func:`read_cache`, :func:`partial_path`, :class:`CacheNotFoundError`, :data:`CACHE_FORMAT`) in
:mod:`tnpx.data.kolmogorov.cache`, the solver (:class:`KolmogorovSolver`, ...) in
:mod:`tnpx.data.kolmogorov.solver`; their public names are re-exported here.

A cache file holds ``"train"`` and ``"test"`` velocity tensors
``[n_traj, n_snapshots, out_n, out_n, 2]`` (axes: trajectory, t, x, y, (u, v)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ...batch import Batch
from ...input_checks import check_option
from ..base import randint

# Re-exported (see __all__): the cache API (CACHE_FORMAT, CacheNotFoundError, partial_path,
# write_cache; read_cache is also used here), generate_trajectories and the solver names this
# module used to import, so `from tnpx.data.kolmogorov import ...` keeps working.
from .cache import (
    CACHE_FORMAT,
    CacheNotFoundError,
    partial_path,
    read_cache,
    write_cache,
)
from .solver import (
    KolmogorovSolver,
    coarsen,
    default_dt,
    random_initial_vorticity,
)
from .trajectories import generate_trajectories

# --- task sampler ---------------------------------------------------------------------------


@dataclass
class KolmogorovConfig:
    """TE-3 tasks: random ``block`` = (x, y, t) sub-blocks of cached Kolmogorov trajectories.

    ``cache``: the file written by :func:`write_cache`; ``subset``: which part of it
    (``train`` or ``test``) this sampler draws from. Each task picks a trajectory and a block
    (wrapping periodically in x and y, not in t); its inputs are the block's (x, y, t) grid
    coordinates mapped to ``input_range`` on each axis, its outputs the velocity (u, v).
    ``n_ctx ~ U{min_ctx, ..., max_ctx}`` once per batch; a random ``n_ctx`` of the block's
    points are the context and all the others the targets. ``max_tgt`` optionally keeps only
    the first ``max_tgt`` of those targets (a random subset; a CPU budget's cap on time and
    memory, not the paper's protocol); it draws nothing more, so the tasks are otherwise the
    same.
    """

    cache: str = "data/kolmogorov.pt"
    subset: str = "train"
    block: list[int] = field(default_factory=lambda: [16, 16, 16])
    min_ctx: int = 1
    max_ctx: int = 500
    input_range: list[float] = field(default_factory=lambda: [-3.0, 3.0])
    max_tgt: int | None = None


class KolmogorovSampler:
    """Samples TE-3 Kolmogorov-flow tasks; see :class:`KolmogorovConfig`.

    Args:
        config: the task distribution.
        batch_size: default tasks per batch.
        seed: the seed of the task stream (see :func:`tnpx.data.base.batch_at`).
        data: velocity ``[n_traj, T, nx, ny, 2]`` to sample from instead of reading
            ``config.cache`` (tests, in-memory data).

    Batches: ``xc [B, n_ctx, 3]``, ``yc [B, n_ctx, 2]``, ``xt [B, P - n_ctx, 3]``,
    ``yt [B, P - n_ctx, 2]`` with ``P = prod(block)``, float32; ``info["trajectory"] [B]`` and
    ``info["origin"] [B, 3]`` (the block's first (x, y, t) grid index) locate each task.
    """

    dim_x = 3
    dim_y = 2

    def __init__(
        self,
        config: KolmogorovConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        data: torch.Tensor | None = None,
    ):
        self.config = config = config or KolmogorovConfig()
        check_option("subset", config.subset, ("train", "test"))
        if len(config.block) != 3 or any(int(s) < 1 for s in config.block):
            raise ValueError(f"block must be three positive sizes (x, y, t), got {config.block}")
        if len(config.input_range) != 2 or not config.input_range[0] < config.input_range[1]:
            raise ValueError(
                f"input_range must be [low, high], low < high, got {config.input_range}"
            )
        n_points = math.prod(int(s) for s in config.block)
        if not 0 <= config.min_ctx <= config.max_ctx:
            raise ValueError(
                f"need 0 <= min_ctx <= max_ctx, got {config.min_ctx}, {config.max_ctx}"
            )
        if config.max_ctx >= n_points:
            raise ValueError(
                f"max_ctx={config.max_ctx} leaves no targets in a block of {n_points} points"
            )
        if config.max_tgt is not None and config.max_tgt < 1:
            raise ValueError(f"max_tgt must be None or >= 1, got {config.max_tgt}")
        if data is None:
            data = read_cache(config.cache)[config.subset]
        if data.dim() != 5 or data.shape[-1] != 2 or data.shape[0] < 1:
            raise ValueError(
                f"data must be velocity [n_traj, T, nx, ny, 2], got {tuple(data.shape)}"
            )
        bx, by, bt = (int(s) for s in config.block)
        _, nt, nx, ny, _ = data.shape
        if bx > nx or by > ny or bt > nt:
            raise ValueError(
                f"block (x, y, t) = {tuple(config.block)} is larger than the data "
                f"(x, y, t) = ({nx}, {ny}, {nt})"
            )
        self.data = data
        self.block = (bx, by, bt)
        self.batch_size = batch_size
        self.seed = seed
        lo, hi = (float(r) for r in config.input_range)
        axes = [
            torch.linspace(lo, hi, s, dtype=torch.float64)
            if s > 1
            else torch.full((1,), 0.5 * (lo + hi), dtype=torch.float64)
            for s in self.block
        ]
        # [P, 3] in the order the block is flattened: x slowest, then y, then t.
        self.inputs = torch.stack(torch.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3).float()

    @classmethod
    def from_tensor(
        cls,
        velocity: torch.Tensor,
        config: KolmogorovConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
    ) -> KolmogorovSampler:
        """A sampler over in-memory velocity ``[n_traj, T, nx, ny, 2]`` (no cache file)."""
        return cls(config, batch_size=batch_size, seed=seed, data=velocity)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_traj, nt, nx, ny, _ = self.data.shape
        bx, by, bt = self.block
        n_ctx = randint(g, c.min_ctx, c.max_ctx)
        traj = torch.randint(n_traj, (b,), generator=g)
        x0 = torch.randint(nx, (b,), generator=g)
        y0 = torch.randint(ny, (b,), generator=g)
        t0 = torch.randint(nt - bt + 1, (b,), generator=g)  # time does not wrap
        ix = (x0[:, None] + torch.arange(bx)) % nx  # periodic in x and y
        iy = (y0[:, None] + torch.arange(by)) % ny
        it = t0[:, None] + torch.arange(bt)
        # [b, bx, by, bt, 2], flattened in the order of self.inputs
        values = self.data[
            traj[:, None, None, None],
            it[:, None, None, :],
            ix[:, :, None, None],
            iy[:, None, :, None],
        ]
        values = values.reshape(b, -1, 2).float()
        order = torch.rand(b, values.shape[1], generator=g).argsort(dim=1)
        ctx, tgt = order[:, :n_ctx], order[:, n_ctx:]
        if c.max_tgt is not None:
            tgt = tgt[:, : c.max_tgt]

        def take(source: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            return torch.gather(source, 1, idx[..., None].expand(-1, -1, source.shape[-1]))

        inputs = self.inputs.expand(b, -1, -1)
        info = {"trajectory": traj, "origin": torch.stack([x0, y0, t0], dim=-1)}
        return Batch(
            take(inputs, ctx), take(values, ctx), take(inputs, tgt), take(values, tgt), info=info
        )


__all__ = [
    "CACHE_FORMAT",
    "CacheNotFoundError",
    "KolmogorovConfig",
    "KolmogorovSampler",
    "KolmogorovSolver",
    "coarsen",
    "default_dt",
    "generate_trajectories",
    "partial_path",
    "random_initial_vorticity",
    "read_cache",
    "write_cache",
]
