"""Read-out set convolution with a length scale per channel, 1D grid, without the weight tensor.

Per channel ``c`` with rate ``r_c = -1 / (2 (ppu l_c)^2)`` (lattice units), the weights are
``K[b, c, n, g] = exp(r_c (a[b, n] - g)^2)`` for a target at lattice offset ``a = x * ppu -
start`` and grid index ``g``, and the read-out (Gordon et al. 2020, Eq. 5) is

    out[b, c, n] = sum_g K[b, c, n, g] z[b, c, g].

Written as an einsum this materialises ``K`` (``[batch, n, G, C]``: 198M floats for a KR-1
batch of 32 tasks, 150 targets, 320 grid points, 129 channels) several times over in the
forward and backward passes. :class:`ChannelRBFSum` instead builds ``K`` for blocks of
(task, target) pairs of at most ``chunk_elements`` entries, contracts each block with a
batched vector-matrix product, and in the backward pass rebuilds each block to give

    dL/dz[b, c, g] = sum_n K[b, c, n, g] p[b, c, n]                  (p = dL/dout)
    dL/da[b, n]    = 2 sum_c r_c p[b, c, n] sum_g K (a - g) z[b, c, g]
    dL/dr_c        = sum_{b, n} p[b, c, n] sum_g K (a - g)^2 z[b, c, g],

each again a product of a (rescaled) block with ``z``. Gradients reach ``x`` and the length
scales through ``a`` and ``r`` by autograd outside the Function. Double backward is not
supported (``once_differentiable``). 1D grids only: a 2D per-channel read-out keeps the einsum
path of :mod:`tnpx.nn.setconv`.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.autograd.function import once_differentiable

# entries of one weight block: 2**18 float32 = 1 MiB, about one core's L2 cache, so the passes
# over a block (exponent, exp, products) mostly hit the cache
CHUNK_ELEMENTS = 2**18


def _blocks(b: int, n: int, per_pair: int, budget: int) -> Iterator[tuple[slice, slice]]:
    """(task, target) slices covering ``[b, n]`` whose blocks hold at most ``budget`` entries
    of ``per_pair`` each (at least one pair per block): whole target rows for several tasks
    when they fit, else runs of targets of one task."""
    pairs = max(1, budget // max(per_pair, 1))
    if pairs >= n:
        n_chunk, b_chunk = max(n, 1), max(1, pairs // max(n, 1))
    else:
        n_chunk, b_chunk = pairs, 1
    for b0 in range(0, b, b_chunk):
        for n0 in range(0, n, n_chunk):
            yield slice(b0, b0 + b_chunk), slice(n0, n0 + n_chunk)


def _block_weights(
    offset: torch.Tensor, rate: torch.Tensor, n_grid: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Distances ``d = a - g`` ``[bk, 1, nk, G]`` and weights ``K = exp(r_c d^2)``
    ``[bk, C, nk, G]`` for offsets ``a [bk, nk]`` and rates ``r [C]``."""
    steps = torch.arange(n_grid, dtype=offset.dtype, device=offset.device)
    d = (offset[..., None] - steps)[:, None]
    return d, torch.mul(d.square(), rate[:, None, None]).exp_()


def _contract(k: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``sum_g k[b, c, n, g] z[b, c, g]`` -> ``[bk, C, nk]``: the row ``z`` times ``k^T``
    (``k @ z[..., None]`` runs several times slower on CPU)."""
    return (z[..., None, :] @ k.mT).squeeze(-2)


class ChannelRBFSum(torch.autograd.Function):
    """``out[b, c, n] = sum_g exp(r_c (a[b, n] - g)^2) z[b, c, g]`` in bounded blocks (module
    docstring)."""

    @staticmethod
    def forward(ctx, offset, rate, z, chunk_elements):
        b, c, n_grid = z.shape
        n = offset.shape[1]
        out = z.new_empty(b, c, n)
        for bs, ns in _blocks(b, n, c * n_grid, chunk_elements):
            _, k = _block_weights(offset[bs, ns], rate, n_grid)
            out[bs, :, ns] = _contract(k, z[bs])
        ctx.save_for_backward(offset, rate, z)
        ctx.chunk_elements = chunk_elements
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        offset, rate, z = ctx.saved_tensors
        need_offset, need_rate, need_z = ctx.needs_input_grad[:3]
        b, c, n_grid = z.shape
        n = offset.shape[1]
        grad_out = grad_out.contiguous()  # often a transposed view: bmm on it is slow
        grad_offset = torch.zeros_like(offset) if need_offset else None
        grad_rate = torch.zeros_like(rate) if need_rate else None
        grad_z = torch.zeros_like(z) if need_z else None
        for bs, ns in _blocks(b, n, c * n_grid, ctx.chunk_elements):
            d, k = _block_weights(offset[bs, ns], rate, n_grid)
            p, zb = grad_out[bs, :, ns], z[bs]  # [bk, C, nk], [bk, C, G]
            if need_z:
                grad_z[bs] += (p[..., None, :] @ k).squeeze(-2)
            if not (need_offset or need_rate):
                continue
            k.mul_(d)  # K (a - g): dK/da = 2 r_c K (a - g)
            if need_offset:
                f = _contract(k, zb)  # [bk, C, nk]
                grad_offset[bs, ns] = 2 * (rate[:, None] * p * f).sum(1)
            if need_rate:
                k.mul_(d)  # K (a - g)^2 = dK/dr_c
                grad_rate += (p * _contract(k, zb)).sum((0, 2))
        return grad_offset, grad_rate, grad_z, None


def channel_rbf_sum(
    offset: torch.Tensor,
    rate: torch.Tensor,
    z: torch.Tensor,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> torch.Tensor:
    """Per-channel RBF read-out from a 1D grid (module docstring).

    Args:
        offset: ``[batch, n]`` target positions in lattice units from each task's first grid
            point (``x * ppu - start``).
        rate: ``[channels]``, ``-1 / (2 (ppu * length_scale)^2)`` (negative).
        z: ``[batch, channels, G]`` grid values.
        chunk_elements: bound on the entries of one weight block.

    Returns:
        ``[batch, channels, n]``.
    """
    return ChannelRBFSum.apply(offset, rate, z, int(chunk_elements))
