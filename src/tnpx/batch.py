"""The task batch passed between samplers, models, training and evaluation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch


@dataclass
class Batch:
    """A batch of meta-learning tasks.

    Attributes:
        xc: context inputs ``[batch, n_ctx, dim_x]``.
        yc: context outputs ``[batch, n_ctx, dim_y]``.
        xt: target inputs ``[batch, n_tgt, dim_x]``.
        yt: target outputs ``[batch, n_tgt, dim_y]`` (``None`` when unknown).
        mask_c: optional ``[batch, n_ctx]`` bool, True = a real observation.
        info: per-task side information, e.g. the GP hyper-parameters that generated each
            task (``kernel``, ``lengthscale``, ``period``, ``noise_ctx``, ``noise_tgt``), used
            by ``gp-oracle``. Values are tensors with the batch as first dimension, or strings.
        mask_t: optional ``[batch, n_tgt]`` bool, True = a real target (tasks with different
            numbers of targets padded to one size); scores average over real targets only.
            Last, so that positional construction without it keeps working.
    """

    xc: torch.Tensor
    yc: torch.Tensor
    xt: torch.Tensor
    yt: torch.Tensor | None = None
    mask_c: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    mask_t: torch.Tensor | None = None

    @property
    def batch_size(self) -> int:
        return self.xc.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        """Return a copy with every tensor moved to ``device``."""

        def move(v):
            return v.to(device) if isinstance(v, torch.Tensor) else v

        kwargs = {f.name: move(getattr(self, f.name)) for f in fields(self) if f.name != "info"}
        return Batch(**kwargs, info={k: move(v) for k, v in self.info.items()})

    def select(self, index: slice | torch.Tensor) -> Batch:
        """Return the tasks ``index`` (a slice or index tensor over the batch)."""

        def take(v):
            return v[index] if isinstance(v, torch.Tensor) else v

        kwargs = {f.name: take(getattr(self, f.name)) for f in fields(self) if f.name != "info"}
        return Batch(**kwargs, info={k: take(v) for k, v in self.info.items()})


def target_mean(values: torch.Tensor, mask_t: torch.Tensor | None) -> torch.Tensor:
    """Per-task mean of ``values [batch, n_tgt, ...]`` over targets (and any trailing
    dimensions), ``[batch]``: over the real targets only where ``mask_t [batch, n_tgt]`` is given.

    Raises:
        ValueError: ``mask_t`` is not bool, has the wrong shape, or leaves a task no target.
    """
    dims = tuple(range(1, values.dim()))
    if mask_t is None:
        return values.mean(dims)
    b, n_tgt = values.shape[:2]
    if not isinstance(mask_t, torch.Tensor) or mask_t.dtype != torch.bool:
        got = mask_t.dtype if isinstance(mask_t, torch.Tensor) else type(mask_t).__name__
        raise ValueError(f"mask_t: expected a bool tensor of shape [{b}, {n_tgt}], got {got}")
    if tuple(mask_t.shape) != (b, n_tgt):
        raise ValueError(f"mask_t: expected shape [{b}, {n_tgt}], got {list(mask_t.shape)}")
    real = mask_t.sum(1)
    if not bool((real > 0).all()):
        task = int((real == 0).nonzero()[0, 0])
        raise ValueError(f"mask_t: task {task} has no real target (a row of False)")
    keep = mask_t.reshape(b, n_tgt, *([1] * (values.dim() - 2)))
    # where, not a product: a padded target's value may be anything, NaN included
    total = torch.where(keep, values, torch.zeros((), dtype=values.dtype, device=values.device))
    per_target = math.prod(values.shape[2:])  # entries per target (e.g. output dims)
    return total.sum(dims) / (real * per_target).to(values.dtype)
