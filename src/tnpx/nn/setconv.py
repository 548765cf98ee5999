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

Options (defaults: Gordon et al.'s paper and tnpx's ConvCNP): the length scale is learned per
input dimension (``n_scales=None``) or per channel (``n_scales`` channels, one scale shared by
the axes: the Euclidean RBF of the ConvDeepSet in the TNP-KR code, ``dl4bi/core/conv.py``);
it is ``exp(log_length_scale)`` (``transform="exp"``) or ``1e-5 + softplus(raw)``
(``"softplus"``, cambridge-mlg/tnp ``tnp/networks/setconv.py``), trained or fixed at its
initial value (``trainable=False``: a buffer of the same name). The encoder's density channel
is prepended and divides the data channels (``density="normalised"``, Eq. 4) or appended and
summed like them (``"appended"``, cambridge-mlg/tnp); the read-out may carry a normalising
density channel too (``SetConvFromGrid(density=True)``, the TNP-KR code's read-out).

A 1D read-out with per-channel scales would form a ``[batch, n, G, channels]`` weight tensor;
it runs through :mod:`tnpx.nn.setconv_channels` instead, which never does (``fused=False``:
the einsum, kept for comparison). The encoder's per-channel weights have ``1 + dim_y``
channels, a small fraction of that cost, and stay on the einsum.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..input_checks import check_option
from .setconv_channels import CHUNK_ELEMENTS, channel_rbf_sum

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

    A lowest or highest point within a rounding error of a lattice point counts as on it
    (:func:`_snapped`), so a task shifted by whole cells gets the same box, moved.
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
    start = torch.floor(_snapped(lo, up=True)).long() - pad
    length = torch.ceil(_snapped(hi, up=False)).long() + pad - start + 1
    size = (length + multiple - 1) // multiple * multiple
    return start, size * has_point.long()


# Lattice coordinates this close to a lattice point (in cells, plus a few float roundings of
# the coordinate) count as on it. Data on the lattice reach it a rounding either side (at 10
# points per unit, 0.3 and 3.3 in float32 scale to 3.0000001 and 32.999999): floor and ceil
# would then move a box's edge by one cell when the task is shifted by whole cells, and the
# CNN's zero padding with it (up to 2e-2 on the predictive mean of an untrained 2D model).
SNAP_CELLS = 1e-3
# ... and never more than this: the box still holds every point (far from the origin a float
# step spans many cells, where every coordinate is a lattice point already).
MAX_SNAP_CELLS = 0.25


def _snapped(scaled: torch.Tensor, up: bool) -> torch.Tensor:
    """``scaled`` (lattice units) moved toward the inside of the box by the snap tolerance
    (``up``: for ``floor``, else for ``ceil``), so a value that rounding put just outside a
    lattice point floors or ceils to that point."""
    tolerance = (SNAP_CELLS + 4 * torch.finfo(scaled.dtype).eps * scaled.abs()).clamp_max(
        MAX_SNAP_CELLS
    )
    return scaled + tolerance if up else scaled - tolerance


def lattice_offset(x: torch.Tensor, start: torch.Tensor, ppu: float) -> torch.Tensor:
    """Coordinates ``x [batch, n]`` in lattice units from each box's first point ``start
    [batch]`` -> ``[batch, n]``."""
    return x * ppu - start[:, None].to(x.dtype)


def rbf_axis_weights(
    x: torch.Tensor, start: torch.Tensor, n_grid: int, length_scale: torch.Tensor, ppu: float
) -> torch.Tensor:
    """``exp(-(x_d - g_d)^2 / (2 l^2))`` along one axis.

    Args:
        x: ``[batch, n]`` coordinates on axis ``d``; start ``[batch]`` lattice index of the
            box's first point; length_scale: scalar tensor ``l_d``, or ``[channels]`` (one
            scale per channel).

    Returns:
        ``[batch, n, n_grid]``, or ``[batch, n, n_grid, channels]`` for per-channel scales.
    """
    offset = lattice_offset(x, start, ppu)
    steps = torch.arange(n_grid, device=x.device, dtype=x.dtype)
    if length_scale.dim() == 1:  # per channel
        diff = (offset[..., None] - steps)[..., None] / (ppu * length_scale)
    else:
        diff = (offset[..., None] - steps) / (ppu * length_scale)
    return torch.exp(-0.5 * diff.square())


LENGTH_SCALE_TRANSFORMS = ("exp", "softplus")
DENSITIES = ("normalised", "appended")


class _LatticeRBF(nn.Module):
    """An RBF with a length scale per input dimension (or per channel: ``n_scales``) on the
    lattice ``h Z^dim_x``, learned unless ``trainable=False``."""

    def __init__(
        self,
        dim_x: int,
        points_per_unit: float,
        init_length_scale: float | None = None,
        n_scales: int | None = None,
        transform: str = "exp",
        trainable: bool = True,
    ):
        super().__init__()
        if dim_x not in _AXES:
            raise ValueError(f"set convolutions support dim_x 1 or 2, got {dim_x}")
        check_option("length_scale_transform", transform, LENGTH_SCALE_TRANSFORMS)
        self.dim_x, self.points_per_unit = dim_x, float(points_per_unit)
        self.per_channel, self.transform = n_scales is not None, transform
        init = init_length_scale or 2.0 / points_per_unit  # two grid spacings (Gordon et al.)
        shape = (dim_x,) if n_scales is None else (n_scales,)
        if transform == "exp":
            name, value = "log_length_scale", torch.full(shape, math.log(init))
        else:  # the inverse of softplus at the initial scale (cambridge-mlg/tnp BaseSetConv)
            name, value = "raw_length_scale", torch.full(shape, math.log(math.expm1(init)))
        if trainable:
            self.register_parameter(name, nn.Parameter(value))
        else:  # a fixed scale: a buffer under the same name, so checkpoints hold it
            self.register_buffer(name, value)

    @property
    def length_scale(self) -> torch.Tensor:
        """``[dim_x]`` or ``[n_scales]``."""
        if self.transform == "exp":
            return self.log_length_scale.exp()
        return 1e-5 + F.softplus(self.raw_length_scale)

    def rates(self) -> torch.Tensor:
        """``-1 / (2 (ppu l)^2)``: the RBF's exponent per squared lattice step, ``[dim_x]`` or
        ``[n_scales]``."""
        return -0.5 / (self.points_per_unit * self.length_scale).square()

    def axis_weights(self, x: torch.Tensor, start: torch.Tensor, shape) -> list[torch.Tensor]:
        """Per-axis weights ``[batch, n, shape[d]]`` (``[batch, n, shape[d], n_scales]`` per
        channel) for points ``x [batch, n, dim_x]``."""
        scale = self.length_scale
        return [
            rbf_axis_weights(
                x[..., d],
                start[:, d],
                shape[d],
                scale if self.per_channel else scale[d],
                self.points_per_unit,
            )
            for d in range(self.dim_x)
        ]

    def subscripts(self) -> tuple[str, str]:
        """einsum subscripts ``(weights, grid axes)``: ``"bni,bnj"`` / ``"ij"`` per input
        dimension, ``"bnic,bnjc"`` per channel."""
        axes = _AXES[self.dim_x]
        channel = "c" if self.per_channel else ""
        return ",".join(f"bn{a}{channel}" for a in axes), axes


class SetConvToGrid(_LatticeRBF):
    """Encoder set convolution with a density channel (Gordon et al., Eq. 4).

    On grid point ``g``: ``density(g) = sum_n w(g - x_n)``, ``data(g) = sum_n w(g - x_n) y_n``;
    returns ``[density, data / (density + eps)]`` so the data channel does not scale with the
    number of nearby points (``density="normalised"``), or ``[data, density]`` unnormalised
    (``"appended"``).
    """

    eps = 1e-8

    def __init__(self, *args, density: str = "normalised", **kwargs):
        super().__init__(*args, **kwargs)
        check_option("density", density, DENSITIES)
        self.density = density

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
            m = mask[..., None].to(x.dtype)
            weights[0] = weights[0] * (m[..., None] if self.per_channel else m)
        ins, axes = self.subscripts()
        ones = torch.ones_like(y[..., :1])
        if self.density == "appended":  # cambridge-mlg/tnp ConvCNPEncoder: [y, 1], summed
            return torch.einsum(f"{ins},bnc->bc{axes}", *weights, torch.cat([y, ones], -1))
        channels = torch.einsum(f"{ins},bnc->bc{axes}", *weights, torch.cat([ones, y], -1))
        density, data = channels[:, :1], channels[:, 1:]
        return torch.cat([density, data / (density + self.eps)], 1)


class SetConvFromGrid(_LatticeRBF):
    """Decoder set convolution (Gordon et al., Eq. 5): ``f(x) = sum_g w(x - g) z(g)``.

    ``density=True``: a density channel ``sum_g w(x - g) valid(g)`` is prepended and divides
    the others, ``[density, f / (density + eps)]`` (the TNP-KR code's read-out ConvDeepSet).

    ``fused`` (1D, per-channel scales): :func:`channel_rbf_sum` in blocks of at most
    ``chunk_elements`` weights instead of the einsum over ``[batch, n, G, channels]``."""

    eps = 1e-8

    def __init__(
        self,
        *args,
        density: bool = False,
        fused: bool = True,
        chunk_elements: int = CHUNK_ELEMENTS,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.density, self.fused, self.chunk_elements = density, fused, chunk_elements

    @property
    def fuses_channels(self) -> bool:
        """Whether the read-out runs through :func:`channel_rbf_sum` (which bounds its own
        memory, so callers need not chunk the targets)."""
        return self.fused and self.per_channel and self.dim_x == 1

    def _read(self, x: torch.Tensor, z: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """``sum_g w(x - g) z(g)``: x ``[batch, n, dim_x]``, z ``[batch, channels, *shape]``
        -> ``[batch, n, channels]``."""
        if self.fuses_channels:
            offset = lattice_offset(x[..., 0], start[:, 0], self.points_per_unit)
            out = channel_rbf_sum(offset, self.rates(), z, self.chunk_elements)
            return out.transpose(1, 2)
        weights = self.axis_weights(x, start, z.shape[2:])
        ins, axes = self.subscripts()
        return torch.einsum(f"{ins},bc{axes}->bnc", *weights, z)

    def forward(
        self,
        x: torch.Tensor,
        z: torch.Tensor,
        start: torch.Tensor,
        valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x ``[batch, n, dim_x]``, z ``[batch, channels, *shape]``, start ``[batch, dim_x]``,
        valid ``[batch, 1, *shape]`` (each task's box, for the density) or None -> ``[batch, n,
        channels]`` (``1 + channels`` with the density)."""
        if not self.density:
            return self._read(x, z, start)
        ones = torch.ones_like(z[:, :1]) if valid is None else valid.expand_as(z[:, :1])
        channels = self._read(x, torch.cat([ones, z], 1), start)
        density, data = channels[..., :1], channels[..., 1:]
        return torch.cat([density, data / (density + self.eps)], -1)
