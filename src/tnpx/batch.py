"""The task batch passed between samplers, models, training and evaluation."""

from __future__ import annotations

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
    """

    xc: torch.Tensor
    yc: torch.Tensor
    xt: torch.Tensor
    yt: torch.Tensor | None = None
    mask_c: torch.Tensor | None = None
    info: dict = field(default_factory=dict)

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
