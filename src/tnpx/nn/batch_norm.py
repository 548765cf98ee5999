"""Batch normalisation of grids that share a tensor (the grid CNNs' boxes, :mod:`tnpx.nn.cnn`).

``GridBatchNorm`` normalises each channel of ``z [batch, channels, *shape]`` and keeps torch's
``BatchNorm`` parameter and buffer names (``weight``, ``bias``, ``running_mean``,
``running_var``, ``num_batches_tracked``). Two ways to get the statistics (``statistics``):

- ``"batch"`` (torch's ``BatchNorm`` semantics): in training mode the mean and biased variance
  of the batch's valid grid points (``valid [batch, 1, *shape]``; padding outside a box never
  counts), and the running estimates move towards them (``momentum``, unbiased variance); in
  eval mode the running estimates. A prediction in training mode then depends on the other
  tasks of its batch, as with any batch norm; in eval mode it does not.
- ``"frozen"``: the running estimates in training and eval mode alike, never updated, so the
  layer is a fixed per-channel affine map ``(z - mean) / sqrt(var + eps) * weight + bias``
  (``mean = 0``, ``var = 1`` unless loaded otherwise). This is what the TNP-KR code's ConvCNP
  computes: ``ConvCNP.__call__`` calls its ``ConvCNPNet`` without ``training``, so Flax's
  ``BatchNorm(use_running_average=not training)`` reads the initial statistics in every step
  (MLGlobalHealth/dl4bi @ 0205a5ca, ``dl4bi/meta_regression/convcnp.py``,
  ``dl4bi/core/conv.py``).
"""

from __future__ import annotations

import torch
from torch import nn

from ..input_checks import check_option

STATISTICS = ("batch", "frozen")


class GridBatchNorm(nn.Module):
    """Per-channel batch norm of ``[batch, channels, *shape]`` grids (module docstring)."""

    def __init__(
        self, channels: int, statistics: str = "batch", eps: float = 1e-5, momentum: float = 0.1
    ):
        super().__init__()
        check_option("batch_norm", statistics, STATISTICS)
        self.statistics, self.eps, self.momentum = statistics, eps, momentum
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z ``[batch, channels, *shape]``, valid ``[batch, 1, *shape]`` or None -> same shape
        as ``z`` (values outside ``valid`` are not meaningful)."""
        view = (1, -1) + (1,) * (z.dim() - 2)
        if self.training and self.statistics == "batch":
            mean, var = self._batch_statistics(z, valid)
        else:
            mean, var = self.running_mean, self.running_var
        scale = self.weight / torch.sqrt(var + self.eps)
        return (z - mean.view(view)) * scale.view(view) + self.bias.view(view)

    def _batch_statistics(self, z: torch.Tensor, valid: torch.Tensor | None):
        """The mean and biased variance over the valid points (``[channels]`` each); updates
        the running estimates."""
        axes = [0] + list(range(2, z.dim()))
        weight = torch.ones_like(z[:, :1]) if valid is None else valid
        count = weight.sum()
        if count < 2:
            raise ValueError("batch statistics need at least two valid grid points")
        mean = (z * weight).sum(axes) / count
        var = ((z - mean.view((1, -1) + (1,) * (z.dim() - 2))).square() * weight).sum(axes) / count
        with torch.no_grad():
            m = self.momentum
            unbiased = var * count / (count - 1)
            self.running_mean.mul_(1 - m).add_(m * mean.detach())
            self.running_var.mul_(1 - m).add_(m * unbiased.detach())
            self.num_batches_tracked.add_(1)
        return mean, var
