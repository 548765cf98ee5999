"""Convolutional networks on 1D and 2D grids (stride 1, "same" padding): a UNet, a plain CNN
(optionally pre-activated) and a ResNet of depthwise-separable blocks with batch norm.

Several grids of different sizes can share one tensor: ``valid [batch, 1, *shape]`` marks each
grid's box, which must start at index 0 of every axis. Values outside a box are zeroed after
every layer, so a convolution sees zeros past the box edge, exactly the zero padding it would
see on the box alone; pooling windows never straddle an edge (a UNet's box lengths are
multiples of ``2^n_pool``), and up-sampling is renormalised by the up-sampled mask, which
reproduces the edge clamping of ``interpolate`` on the box alone. A grid's output therefore
does not depend on the other grids in the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..input_checks import check_option
from .batch_norm import GridBatchNorm

_CONV = {1: nn.Conv1d, 2: nn.Conv2d}
_UPSAMPLE_MODE = {1: "linear", 2: "bilinear"}


def _conv(dim: int, c_in: int, c_out: int, kernel_size: int, groups: int = 1) -> nn.Module:
    return _CONV[dim](c_in, c_out, kernel_size, padding=kernel_size // 2, groups=groups)


def _masked(z: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    return z if valid is None else z * valid


def _pool(z: torch.Tensor, dim: int) -> torch.Tensor:
    return F.avg_pool1d(z, 2) if dim == 1 else F.avg_pool2d(z, 2)


def _upsample(z: torch.Tensor, valid: torch.Tensor | None, dim: int) -> torch.Tensor:
    """Linear up-sampling by 2 of ``z [b, c, *shape]`` (zero outside ``valid``) that uses only
    values inside each box."""
    up = F.interpolate(z, scale_factor=2, mode=_UPSAMPLE_MODE[dim], align_corners=False)
    if valid is None:
        return up
    weight = F.interpolate(valid, scale_factor=2, mode=_UPSAMPLE_MODE[dim], align_corners=False)
    return up / weight.clamp_min(1e-12)


class _GridCNN(nn.Module):
    """Checks shared by the grid CNNs."""

    multiple = 1  # every grid length must be a multiple of this

    def __init__(self, dim: int, kernel_size: int):
        super().__init__()
        if dim not in _CONV:
            raise ValueError(f"grid CNNs support 1 or 2 grid dimensions, got {dim}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"kernel_size must be odd so 'same' padding is symmetric, got {kernel_size}"
            )
        self.dim = dim

    def _check(self, z: torch.Tensor) -> None:
        shape = tuple(z.shape[2:])
        if len(shape) != self.dim or any(s % self.multiple for s in shape):
            raise ValueError(
                f"expected a grid [batch, channels, *shape] with {self.dim} axes, each a multiple "
                f"of {self.multiple}, got {list(z.shape)}"
            )


class PlainCNN(_GridCNN):
    """``n_layers`` convolutions ``c_in -> channels -> ... -> channels``, ReLU between.

    ``preactivate=True``: also a ReLU on the input, so every convolution reads a ReLU
    (cambridge-mlg/tnp ``tnp/networks/cnn.py`` ``CNN``: blocks ``conv(relu(z))``)."""

    def __init__(
        self,
        dim: int,
        c_in: int,
        channels: int,
        n_layers: int,
        kernel_size: int,
        preactivate: bool = False,
    ):
        super().__init__(dim, kernel_size)
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        self.preactivate = preactivate
        self.convs = nn.ModuleList(
            _conv(dim, c_in if i == 0 else channels, channels, kernel_size) for i in range(n_layers)
        )

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z ``[batch, c_in, *shape]``, valid ``[batch, 1, *shape]`` -> ``[batch, channels,
        *shape]``."""
        self._check(z)
        z = _masked(torch.relu(z) if self.preactivate else z, valid)
        for i, conv in enumerate(self.convs):
            z = conv(z)
            z = _masked(z if i == len(self.convs) - 1 else torch.relu(z), valid)
        return z


class UNet(_GridCNN):
    """UNet with ``n_layers`` convolutions (the TE paper's ConvCNP network).

    Down: ``n_layers - n_pool`` convolutions with ``channels`` outputs, average pooling (size
    2) after each of the first ``n_pool = (n_layers - 1) // 2``; up: ``n_pool`` steps of linear
    up-sampling, concatenation with the skip at that resolution (``2 * channels`` inputs) and a
    convolution. ReLU after every convolution but the last. 11 layers: 6 down, 5 up, 5 pools.
    """

    def __init__(self, dim: int, c_in: int, channels: int, n_layers: int, kernel_size: int):
        super().__init__(dim, kernel_size)
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        self.n_pool = (n_layers - 1) // 2
        self.multiple = 2**self.n_pool
        n_down = n_layers - self.n_pool
        self.down = nn.ModuleList(
            _conv(dim, c_in if i == 0 else channels, channels, kernel_size) for i in range(n_down)
        )
        self.up = nn.ModuleList(
            _conv(dim, 2 * channels, channels, kernel_size) for _ in range(self.n_pool)
        )

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z ``[batch, c_in, *shape]``, valid ``[batch, 1, *shape]`` -> ``[batch, channels,
        *shape]``; every length in ``shape`` must be a multiple of ``2^n_pool``."""
        self._check(z)
        z = _masked(z, valid)
        skips = []
        for i, conv in enumerate(self.down):
            if 0 < i <= self.n_pool:
                skips.append((z, valid))
                z = _pool(z, self.dim)
                valid = None if valid is None else _pool(valid, self.dim)
            z = self._layer(conv, z, valid)
        for conv in self.up:
            skip, skip_valid = skips.pop()
            z = _masked(_upsample(z, valid, self.dim), skip_valid)
            valid = skip_valid
            z = self._layer(conv, torch.cat([z, skip], 1), valid)
        return z

    def _layer(self, conv: nn.Module, z: torch.Tensor, valid: torch.Tensor | None):
        final = self.up[-1] if len(self.up) else self.down[-1]  # no ReLU on the output
        out = conv(z)
        return _masked(out if conv is final else torch.relu(out), valid)


class SeparableResBlock(nn.Module):
    """A pre-activation residual block of depthwise-separable convolutions (the TNP-KR code's
    ``ConvCNPBlock``, ``dl4bi/core/conv.py``, after Dubois et al.'s Neural Process Family):
    ``h = pw1(dw1(relu(bn1(z))))``, ``h = dw2(relu(bn2(h)))``, output ``pw2(h + z)``. The
    depthwise convolutions (``kernel_size``, one filter per channel) and pointwise ones
    (kernel 1) have biases; the block is ``c_in`` channels wide until ``pw2`` maps to
    ``c_out``."""

    def __init__(
        self, dim: int, c_in: int, c_out: int, kernel_size: int, batch_norm: str = "batch"
    ):
        super().__init__()
        self.norm1 = GridBatchNorm(c_in, batch_norm)
        self.depthwise1 = _conv(dim, c_in, c_in, kernel_size, groups=c_in)
        self.pointwise1 = _conv(dim, c_in, c_in, 1)
        self.norm2 = GridBatchNorm(c_in, batch_norm)
        self.depthwise2 = _conv(dim, c_in, c_in, kernel_size, groups=c_in)
        self.pointwise2 = _conv(dim, c_in, c_out, 1)

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z ``[batch, c_in, *shape]`` (zero outside ``valid``) -> ``[batch, c_out, *shape]``."""
        h = _masked(torch.relu(self.norm1(z, valid)), valid)  # zeros past a box for the conv
        h = self.pointwise1(self.depthwise1(h))
        h = _masked(torch.relu(self.norm2(h, valid)), valid)
        h = self.depthwise2(h)
        return _masked(self.pointwise2(h + z), valid)  # the residual joins before pw2


class ResNetCNN(_GridCNN):
    """``n_layers`` :class:`SeparableResBlock` s, ``c_in -> channels -> ... -> channels`` (the
    TNP-KR code's ``ConvCNPNet``: 5 blocks of 128 channels, kernel 19). ``batch_norm``:
    ``"batch"`` or ``"frozen"`` statistics (:class:`~tnpx.nn.batch_norm.GridBatchNorm`)."""

    def __init__(
        self,
        dim: int,
        c_in: int,
        channels: int,
        n_layers: int,
        kernel_size: int,
        batch_norm: str = "batch",
    ):
        super().__init__(dim, kernel_size)
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        self.blocks = nn.ModuleList(
            SeparableResBlock(dim, c_in if i == 0 else channels, channels, kernel_size, batch_norm)
            for i in range(n_layers)
        )

    def forward(self, z: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z ``[batch, c_in, *shape]``, valid ``[batch, 1, *shape]`` -> ``[batch, channels,
        *shape]``."""
        self._check(z)
        z = _masked(z, valid)
        for block in self.blocks:
            z = block(z, valid)
        return z


CNN_KINDS = ("unet", "plain", "preact", "resnet")


def build_grid_cnn(
    kind: str,
    dim: int,
    c_in: int,
    channels: int,
    n_layers: int,
    kernel_size: int,
    batch_norm: str = "batch",
) -> _GridCNN:
    """``"unet"``, ``"plain"``, ``"preact"`` (the plain CNN with a ReLU before every
    convolution) or ``"resnet"`` (``batch_norm`` is read by the ResNet only)."""
    check_option("cnn", kind, CNN_KINDS)
    if kind == "unet":
        return UNet(dim, c_in, channels, n_layers, kernel_size)
    if kind == "resnet":
        return ResNetCNN(dim, c_in, channels, n_layers, kernel_size, batch_norm)
    return PlainCNN(dim, c_in, channels, n_layers, kernel_size, preactivate=kind == "preact")
