"""Set convolutions (Gordon et al., 2020, Eq. 4-5): from points onto a uniform grid and back.

Grids live on the lattice ``h Z^dim_x`` with ``h = 1 / points_per_unit``. A grid box is given per
task by the lattice index of its first point, ``start [batch, dim_x]``; tasks in a batch share one
tensor of grid values, each task's box beginning at index 0 of every axis. Distances to grid
points are computed in lattice units relative to ``start`` (``x / h - start - i``), so a shift of
every input by a multiple of ``h`` moves ``start`` by the same number of points and leaves every
weight unchanged (exactly, when ``x / h`` is exact in floating point, as for dyadic inputs and a
power-of-two ``points_per_unit``).

The RBF weights factorise over input dimensions, ``w(x - g) = prod_d w_d(x_d - g_d)``, so a
2D grid never forms a ``[batch, n, G1, G2]`` weight tensor.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# einsum subscripts for the grid axes of a 1D and a 2D grid
_AXES = {1: "i", 2: "ij"}


def grid_box(
    x: torch.Tensor,
    mask: torch.Tensor | None,
    points_per_unit: float,
    margin: float,
    multiple: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The lattice box covering each task's points plus ``margin`` on every side.

    Args:
        x: ``[batch, n, dim_x]`` points; mask ``[batch, n]`` (True = counts) or None.
        multiple: every box length is rounded up to a multiple of this (a UNet's ``2^pools``).

    Returns:
        ``start [batch, dim_x]``: lattice index of each box's first point (``floor``-anchored,
        so the first grid point is ``start * h``); ``size [batch, dim_x]``: points per axis, 0
        for a task with no points. Both are ``long``.
    """
    b, n, dim_x = x.shape
    if n == 0:
        zeros = torch.zeros(b, dim_x, dtype=torch.long, device=x.device)
        return zeros, zeros.clone()
    if mask is None:
        mask = torch.ones(b, n, dtype=torch.bool, device=x.device)
    pad = math.ceil(round(margin * points_per_unit, 6))  # round: 0.3 * 10 is 3.0000000000000004
    has_point = mask.any(1)[:, None]  # [b, 1]
    scaled = (x * points_per_unit).detach()  # lattice units
    lo = scaled.masked_fill(~mask[..., None], math.inf).amin(1)
    hi = scaled.masked_fill(~mask[..., None], -math.inf).amax(1)
    lo = torch.where(has_point, lo, torch.zeros_like(lo))  # a task with no points: empty box
    hi = torch.where(has_point, hi, torch.zeros_like(hi))
    start = torch.floor(lo).long() - pad
    length = torch.ceil(hi).long() + pad - start + 1
    size = (length + multiple - 1) // multiple * multiple
    return start, size * has_point.long()


def rbf_axis_weights(
    x: torch.Tensor, start: torch.Tensor, n_grid: int, length_scale: torch.Tensor, ppu: float
) -> torch.Tensor:
    """``exp(-(x_d - g_d)^2 / (2 l_d^2))`` along one axis.

    Args:
        x: ``[batch, n]`` coordinates on axis ``d``; start ``[batch]`` lattice index of the
            box's first point; length_scale: scalar tensor ``l_d``.

    Returns:
        ``[batch, n, n_grid]``.
    """
    offset = x * ppu - start[:, None].to(x.dtype)  # lattice units from the box's first point
    steps = torch.arange(n_grid, device=x.device, dtype=x.dtype)
    diff = (offset[..., None] - steps) / (ppu * length_scale)
    return torch.exp(-0.5 * diff.square())


class _LatticeRBF(nn.Module):
    """An RBF with a learned length scale per input dimension on the lattice ``h Z^dim_x``."""

    def __init__(self, dim_x: int, points_per_unit: float, init_length_scale: float | None = None):
        super().__init__()
        if dim_x not in _AXES:
            raise ValueError(f"set convolutions support dim_x 1 or 2, got {dim_x}")
        self.dim_x, self.points_per_unit = dim_x, float(points_per_unit)
        init = init_length_scale or 2.0 / points_per_unit  # two grid spacings (Gordon et al.)
        self.log_length_scale = nn.Parameter(torch.full((dim_x,), math.log(init)))

    def axis_weights(self, x: torch.Tensor, start: torch.Tensor, shape) -> list[torch.Tensor]:
        """Per-axis weights ``[batch, n, shape[d]]`` for points ``x [batch, n, dim_x]``."""
        scale = self.log_length_scale.exp()
        return [
            rbf_axis_weights(x[..., d], start[:, d], shape[d], scale[d], self.points_per_unit)
            for d in range(self.dim_x)
        ]


class SetConvToGrid(_LatticeRBF):
    """Encoder set convolution with a density channel (Gordon et al., Eq. 4).

    On grid point ``g``: ``density(g) = sum_n w(g - x_n)``, ``data(g) = sum_n w(g - x_n) y_n``;
    returns ``[density, data / (density + eps)]`` so the data channel does not scale with the
    number of nearby points.
    """

    eps = 1e-8

    def forward(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        mask: torch.Tensor | None,
        start: torch.Tensor,
        shape: tuple[int, ...],
    ) -> torch.Tensor:
        """x ``[batch, n, dim_x]``, y ``[batch, n, dim_y]``, mask ``[batch, n]`` or None,
        start ``[batch, dim_x]``, shape: grid points per axis -> ``[batch, 1 + dim_y, *shape]``."""
        weights = self.axis_weights(x, start, shape)
        if mask is not None:  # a padded point adds no density
            weights[0] = weights[0] * mask[..., None].to(x.dtype)
        axes = _AXES[self.dim_x]
        ins = ",".join(f"bn{a}" for a in axes)
        ones = torch.ones_like(y[..., :1])
        channels = torch.einsum(f"{ins},bnc->bc{axes}", *weights, torch.cat([ones, y], -1))
        density, data = channels[:, :1], channels[:, 1:]
        return torch.cat([density, data / (density + self.eps)], 1)


class SetConvFromGrid(_LatticeRBF):
    """Decoder set convolution (Gordon et al., Eq. 5): ``f(x) = sum_g w(x - g) z(g)``."""

    def forward(self, x: torch.Tensor, z: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """x ``[batch, n, dim_x]``, z ``[batch, channels, *shape]``, start ``[batch, dim_x]``
        -> ``[batch, n, channels]``."""
        weights = self.axis_weights(x, start, z.shape[2:])
        axes = _AXES[self.dim_x]
        ins = ",".join(f"bn{a}" for a in axes)
        return torch.einsum(f"{ins},bc{axes}->bnc", *weights, z)
