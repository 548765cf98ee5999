"""nn/te_attention.py: the translation-equivariant attention's query chunks and its location
update (the TE models built on it are tested in ``tests/models/test_te.py``).

Split from ``tests/test_te.py``."""

from __future__ import annotations

import torch

from tnpx.nn import TEMultiHeadAttention


def dyadic(shape, generator):
    """Inputs on a 2^-10 grid in [-2, 2): a shift by an integer up to 10^3 is exact in float32,
    so any difference in the predictions comes from the model, not from rounding the inputs."""
    return torch.randint(-2048, 2048, shape, generator=generator).float() / 1024


def test_chunk_size_bounds_pair_features():
    attn = TEMultiHeadAttention(32, 4, 8, dim_x=1, dim_hidden=64, chunk_elements=2**20)
    size = attn.chunk_size(batch=2, n_keys=1000)
    assert size * 2 * 1000 * 64 <= 2**20 and size >= 1
    assert attn.chunk_size(batch=1, n_keys=10**9) == 1


def test_location_update_moves_queries_equivariantly():
    torch.manual_seed(0)
    attn = TEMultiHeadAttention(16, 2, 8, dim_x=2, location_update=True)
    zq, zk = torch.randn(1, 5, 16), torch.randn(1, 7, 16)
    g = torch.Generator().manual_seed(1)
    xq, xk = dyadic((1, 5, 2), g), dyadic((1, 7, 2), g)
    _, moved = attn.located(zq, zk, xq, xk)
    assert (moved - xq).abs().max() > 1e-4  # Eq. 10 does move the locations
    shift = torch.tensor([100.0, -7.0])
    _, moved_shifted = attn.located(zq, zk, xq + shift, xk + shift)
    torch.testing.assert_close(moved_shifted, moved + shift, atol=1e-4, rtol=0)
    static = TEMultiHeadAttention(16, 2, 8, dim_x=2, location_update=False)
    assert torch.equal(static.located(zq, zk, xq, xk)[1], xq)


def test_pair_mlp_is_the_mlp_with_and_without_scratch():
    """The per-pair MLP run with in-place ReLUs (and, without gradients, in reused buffers)
    gives the MLP's numbers bit for bit, its input gradient too, and a second call into the
    same buffers does not change the first call's result."""
    from tnpx.nn.mlp import MLP
    from tnpx.nn.te_attention import PairScratch, pair_mlp

    torch.manual_seed(0)
    mlp = MLP(9, 8, 32, n_hidden=2)
    x = torch.randn(2, 5, 7, 9).permute(0, 2, 1, 3)  # [b, c, n_k, 9], not contiguous
    with torch.no_grad():
        expected = mlp(x)
        scratch = PairScratch()
        first = pair_mlp(mlp, x, scratch)
        first_copy = first.clone()
        pair_mlp(mlp, torch.randn(2, 3, 7, 9), scratch)  # a smaller chunk into the same buffers
    assert torch.equal(first, expected) and torch.equal(first, first_copy)
    xg, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
    out, ref = pair_mlp(mlp, xg), mlp(xr)
    assert torch.equal(out, ref)
    grad = torch.randn_like(ref)
    out.backward(grad)
    ref.backward(grad)
    assert torch.equal(xg.grad, xr.grad)
